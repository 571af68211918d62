#!/usr/bin/env python3
"""The JAX GPT as StableHLO and as ONNX (from PyTorch) compile to the same graph.

    build/venv/bin/python test/Models/jax_onnx_parity.py \\
        --trainc build/bin/trainc --trainc-run build/bin/trainc-run

The StableHLO side is exported here: tools/jax_export.py's export() of
jax_models.GPT with params from jax.random.key(0) and the batch from
jax.random.key(1) (the seeds of jax_training.py), into a temporary
directory. The ONNX side is the committed test/Models/jax/gpt.onnx, written
by tools/jax_models_torch_export.py (with PyTorch, which CI does not have)
from a PyTorch module equivalent to the JAX GPT with the same weights; its
batch is test/Models/jax/gpt.batch.npz and PyTorch's loss is in
test/Models/jax/gpt_torch.json.

Checks (each a failure, exit 1):

0. same inputs: the ONNX file's float initializers are the JAX parameters
   (same values; `blocks.0.attn.wqkv` is `params['blocks'][0]['attn']['wqkv']`)
   and the .npz batch is the JAX batch (int64 there, int32 here). A
   difference means gpt.onnx is stale: rerun tools/jax_models_torch_export.py;
1. composites: `trainc X --compile-to=recognize` on both; the counts of
   graph.layer_norm, rms_norm, gelu, softmax, attention,
   softmax_cross_entropy and dot_general must be equal (printed side by
   side; the counts of every other op are printed too, for information);
2. parameters: the number of @main arguments with train.param and their
   total element count must be equal;
3. forward loss: `trainc X -o fwd.tcx`, `trainc-run fwd.tcx --input ...
   --output-dir D` on the same batch (StableHLO inputs `batch['tokens']`,
   `batch['targets']`; ONNX inputs `tokens`, `targets`); the two losses
   within 1e-5 relative of each other (both are float32 evaluations of the
   same function on the same data; PyTorch, onnxruntime and JAX agree to
   the last bit on it).
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
sys.path.insert(0, HERE)

import jax  # noqa: E402

import jax_export  # noqa: E402
import jax_models  # noqa: E402

ONNX_DIR = os.path.join(HERE, 'jax')
COMPARED = ('layer_norm', 'rms_norm', 'gelu', 'softmax', 'attention',
            'softmax_cross_entropy', 'dot_general')
LOSS_RTOL = 1e-5
PARAMS_SEED, BATCH_SEED = 0, 1


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[:3])}")
    return result


def op_counts(ir):
    """graph op name -> number of ops in the printed IR."""
    return collections.Counter(re.findall(r'=\s*graph\.(\w+)\b', ir))


def parameters(ir):
    """[(name, elements)] of @main's arguments that carry train.param."""
    sig = re.search(r'func\.func @main\((.*?)\)\s*->', ir, re.S)
    if not sig:
        raise RuntimeError('no func.func @main in the recognized IR')
    out = []
    for m in re.finditer(r'%arg\d+: tensor<([^>]*)>\s*\{([^}]*)\}', sig.group(1)):
        name = re.search(r'train\.param = "((?:[^"\\]|\\.)*)"', m.group(2))
        if name:
            dims = m.group(1).split('x')[:-1]
            out.append((name.group(1), int(np.prod([int(d) for d in dims]))))
    return out


def jax_name(onnx_name):
    """blocks.0.attn.wqkv -> params['blocks'][0]['attn']['wqkv']."""
    return 'params' + ''.join(f'[{p}]' if p.isdigit() else f"['{p}']"
                              for p in onnx_name.split('.'))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--trainc-run', required=True, help='the trainc-run binary')
    parser.add_argument('--onnx', default=os.path.join(ONNX_DIR, 'gpt.onnx'),
                        help='the ONNX export (default test/Models/jax/gpt.onnx)')
    parser.add_argument('--keep', metavar='DIR', help='work in DIR and keep the files')
    args = parser.parse_args()
    if jax.config.jax_enable_x64:
        parser.error('run with 64-bit JAX off (JAX_ENABLE_X64 unset)')
    onnx_batch = os.path.join(os.path.dirname(args.onnx), 'gpt.batch.npz')
    torch_json = os.path.join(os.path.dirname(args.onnx), 'gpt_torch.json')

    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        gpt = jax_models.GPT
        params = gpt.init_params(jax.random.key(PARAMS_SEED))
        batch = gpt.example_batch(jax.random.key(BATCH_SEED))
        exp = jax_export.export(gpt.loss_fn, params, batch, os.path.join(work, 'gpt'),
                                save_batch=True)
        jax_loss = float(jax.jit(gpt.loss_fn)(params, batch))

        # 0. The ONNX file holds the same weights and batch.
        model = onnx.load(args.onnx)
        inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer
                 if i.data_type == onnx.TensorProto.FLOAT}
        named = dict(jax_export.leaf_names('params', params))
        if sorted(jax_name(n) for n in inits) != sorted(named):
            problems.append(f'ONNX parameters {sorted(inits)} are not the JAX parameters '
                            f'{sorted(named)}')
        else:
            differ = [n for n, a in inits.items() if not np.array_equal(a, np.asarray(named[jax_name(n)]))]
            if differ:
                problems.append(f'ONNX parameters differ from the JAX init: {differ[:4]} '
                                '(rerun tools/jax_models_torch_export.py)')
        onnx_inputs = {}
        with np.load(onnx_batch) as npz:
            for key in ('tokens', 'targets'):
                path = os.path.join(work, f'onnx.{key}.npy')
                np.save(path, npz[key])
                onnx_inputs[key] = path
                if not np.array_equal(npz[key], np.asarray(batch[key])):
                    problems.append(f'{os.path.basename(onnx_batch)}[{key!r}] is not the JAX '
                                    'batch (rerun tools/jax_models_torch_export.py)')

        sides = {
            'StableHLO': ([exp.mlir_path, '--params', exp.safetensors_path],
                          {n: exp.input_files[n] for n in exp.input_names}),
            'ONNX': ([args.onnx], onnx_inputs),
        }
        counts, params_of, losses, irs = {}, {}, {}, {}
        for side, (model_args, inputs) in sides.items():
            ir = run([args.trainc, *model_args, '--compile-to=recognize']).stdout
            irs[side] = ir
            with open(os.path.join(work, f'{side}.recognize.mlir'), 'w') as f:
                f.write(ir)
            counts[side] = op_counts(ir)
            params_of[side] = parameters(ir)
            exe, out = os.path.join(work, f'{side}.fwd.tcx'), os.path.join(work, f'{side}.fwd')
            run([args.trainc, *model_args, '-o', exe])
            flags = [a for n, p in inputs.items() for a in ('--input', f'{n}={p}')]
            run([args.trainc_run, exe, *flags, '--output-dir', out])
            losses[side] = float(np.load(os.path.join(out, 'loss.npy')))

    # 1. Composites, side by side.
    print(f"{'op':<28}{'StableHLO':>10}{'ONNX':>8}")
    for op in COMPARED:
        a, b = counts['StableHLO'][op], counts['ONNX'][op]
        print(f"{'graph.' + op:<28}{a:>10}{b:>8}{'' if a == b else '   <- differs'}")
        if a != b:
            problems.append(f'graph.{op}: {a} in the StableHLO import, {b} in the ONNX one')
    others = sorted((set(counts['StableHLO']) | set(counts['ONNX'])) - set(COMPARED))
    print('other ops (not compared): ' + ', '.join(
        f"{op} {counts['StableHLO'][op]}/{counts['ONNX'][op]}" for op in others))

    # 2. Parameters.
    (na, ea), (nb, eb) = [(len(params_of[s]), sum(e for _, e in params_of[s]))
                          for s in ('StableHLO', 'ONNX')]
    print(f'parameters: StableHLO {na} ({ea} elements), ONNX {nb} ({eb} elements)')
    if (na, ea) != (nb, eb):
        problems.append(f'parameters: {na} ({ea} elements) vs {nb} ({eb} elements)')

    # 3. Forward loss.
    a, b = losses['StableHLO'], losses['ONNX']
    r = abs(a - b) / abs(b)
    ref = json.load(open(torch_json)) if os.path.exists(torch_json) else {}
    print(f'forward loss: StableHLO {a:.8f}, ONNX {b:.8f} (rel {r:.1e}); JAX f32 '
          f"{jax_loss:.8f}, PyTorch f32 {ref.get('loss_torch_f32', float('nan')):.8f}")
    if r > LOSS_RTOL:
        problems.append(f'forward losses differ by {r:.1e} relative (bound {LOSS_RTOL})')

    for p in problems:
        print(f'MISMATCH: {p}')
    print('jax_onnx_parity: ' + ('ok' if not problems else 'FAILED'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
