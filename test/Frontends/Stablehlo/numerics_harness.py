"""Helpers shared by the StableHLO numerics tests (chlo_numerics,
libm_compositions, convolution, reduce_window): run trainc and
trainc-run, write parameters as safetensors for `trainc --params`, and
compare within an elementwise bound."""
import json
import os
import struct
import subprocess
import sys

import numpy as np


def run(cmd):
    """Runs `cmd`; exits the test with its stderr if it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")
    return r


def write_safetensors(path, tensors):
    """A safetensors file of the float32/float64 arrays `tensors` (name ->
    array), little-endian, in order."""
    header, raw = {}, b''
    for name, a in tensors.items():
        b = a.astype(a.dtype.newbyteorder('<')).tobytes()
        header[name] = {'dtype': {np.dtype(np.float32): 'F32', np.dtype(np.float64): 'F64'}[a.dtype],
                        'shape': list(a.shape), 'data_offsets': [len(raw), len(raw) + len(b)]}
        raw += b
    h = json.dumps(header).encode()
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + raw)


def train_gradients(d, mlir_text, params, c):
    """Writes `mlir_text` (a loss of the parameters `params`, name -> array,
    and the data input batch['c'] = `c`) under `d`, compiles it with
    --train --optimizer none and runs it: the output directory, holding
    one <param>.grad.npy per parameter."""
    with open(os.path.join(d, 'g.mlir'), 'w') as f:
        f.write(mlir_text)
    write_safetensors(os.path.join(d, 'w.safetensors'), params)
    np.save(os.path.join(d, 'c.npy'), c)
    run(['trainc', os.path.join(d, 'g.mlir'), '--params', os.path.join(d, 'w.safetensors'),
         '--train', '--optimizer', 'none', '-o', os.path.join(d, 'g.tcx')])
    out = os.path.join(d, 'out')
    run(['trainc-run', os.path.join(d, 'g.tcx'), '--input', "batch['c']=" + os.path.join(d, 'c.npy'),
         '--output-dir', out])
    return out


def load_grad(out, param=''):
    """The gradient train_gradients wrote into `out` for the parameter
    whose name holds 'param' in quotes (params['x'] for 'x'), or the only
    one when `param` is empty; exits the test unless exactly one matches."""
    files = [f for f in os.listdir(out) if f.endswith('.grad.npy') and
             (not param or f"'{param}'" in f)]
    if len(files) != 1:
        sys.exit(f"{param or 'the parameter'}: expected one gradient file in {out}, "
                 f"found {files}")
    return np.load(os.path.join(out, files[0]))


def compile_and_run_text(work, name, text, feeds):
    """Writes `text` as WORK/NAME/f.mlir, compiles it, runs it on `feeds`
    (input name -> array, passed as raw little-endian bytes) and returns
    its one output."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, 'f.mlir')
    with open(path, 'w') as f:
        f.write(text)
    run(['trainc', path, '-o', os.path.join(d, 'f.tcx')])
    args = []
    for k, v in feeds.items():
        p = os.path.join(d, k + '.bin')
        v.astype(v.dtype.newbyteorder('<')).tofile(p)
        args += ['--input', f'{k}={p}']
    run(['trainc-run', os.path.join(d, 'f.tcx'), *args, '--output-dir', os.path.join(d, 'out')])
    outputs = os.listdir(os.path.join(d, 'out'))
    assert len(outputs) == 1, outputs
    return np.load(os.path.join(d, 'out', outputs[0]))


def within_bound(label, got, want, bound):
    """Whether got has want's shape, is finite and is within `bound` of want
    elementwise; prints one line with the worst ratio to the bound."""
    if got.shape != want.shape:
        print(f'{label}: shape {got.shape}, want {want.shape} FAIL')
        return False
    ratio = float(np.max(np.abs(got.astype(np.float64) - want) / bound, initial=0))
    ok = ratio <= 1.0 and bool(np.all(np.isfinite(got)))
    print(f'{label}: {got.shape}, worst {ratio:.3f} of the bound {"ok" if ok else "FAIL"}')
    return ok
