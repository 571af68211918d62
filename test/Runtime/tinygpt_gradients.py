#!/usr/bin/env python3
"""The tinygpt gradients through trainc --train + trainc-run against PyTorch.

For both variants (tied_erf, untied_tanh) at opsets 14 and 17, compiles
model_train_opset{N}.onnx with `trainc --train` (the autodiff pass adds one
`<param>.grad` output per trainable parameter), runs it on the reference
batch (raw_f32/tokens.bin, targets.bin) and compares every gradient with
PyTorch's float32 one (meta.json 'raw_f32' entries named 'grad/<param>'):

- per parameter, ||g - g_ref|| <= 1e-4 * ||g_ref|| (the issue's bound). The
  reference's own float32-vs-float64 error is below 1e-6 relative
  (meta.json grad_maxrel_f32_vs_f64), and trainc's float32 sums differ from
  PyTorch's only in order, so a correct backward pass lands near 1e-6; a
  wrong rule (a missing term, a transposed operand, a lost accumulation of
  the tied embedding) is off by far more than 1e-4;
- every reference gradient has a `.grad` output, and every `.grad` output a
  reference.

Also prints the loss and the global gradient norm next to PyTorch's
(meta.json loss_f32, grad_norm_total_f32). Prints one line per model (the
worst parameter and its relative error) and exits 1 on any failure.
"""
import json
import os
import subprocess
import sys

import numpy as np

import tinygpt_harness

GRAD_RTOL = 1e-4


def first_lines(text, n=3):
    """The start of a tool's error output (a crash adds a long stack dump)."""
    lines = text.strip().splitlines()
    return '\n'.join(lines[:n] + (['...'] if len(lines) > n else []))


def check(trainc, trainc_run, variant_dir, opset, work):
    variant = os.path.basename(variant_dir)
    name = f'{variant}/opset{opset}'
    meta = json.load(open(os.path.join(variant_dir, 'meta.json')))
    exe = os.path.join(work, f'{variant}_{opset}.tcx')
    compile_run = subprocess.run(
        [trainc, os.path.join(variant_dir, f'model_train_opset{opset}.onnx'),
         '--train', '--optimizer', 'none', '-o', exe], capture_output=True, text=True)
    if compile_run.returncode != 0:
        print(f'{name}: trainc --train failed: {first_lines(compile_run.stderr)}')
        return False
    raw = os.path.join(variant_dir, 'raw_f32')
    out_dir = os.path.join(work, f'out_{variant}_{opset}')
    os.makedirs(out_dir, exist_ok=True)
    run = subprocess.run([trainc_run, exe,
                          '--input', f'tokens={raw}/tokens.bin',
                          '--input', f'targets={raw}/targets.bin',
                          '--output-dir', out_dir],
                         capture_output=True, text=True)
    if run.returncode != 0:
        print(f'{name}: trainc-run failed: {first_lines(run.stderr)}')
        return False

    problems = []
    worst_param, worst_rel = None, -1.0
    norm_sq = 0.0
    refs = [e for e in meta['raw_f32'] if e['name'].startswith('grad/')]
    expected_files = set()
    for entry in refs:
        param = entry['name'][len('grad/'):]
        ref = np.fromfile(os.path.join(variant_dir, entry['file']),
                          dtype='<f4').reshape(entry['shape']).astype(np.float64)
        # trainc-run names files after outputs, '/' and ':' replaced by '_'.
        out_name = (param + '.grad').replace('/', '_').replace(':', '_')
        expected_files.add(out_name + '.npy')
        path = os.path.join(out_dir, out_name + '.npy')
        if not os.path.exists(path):
            problems.append(f"no output '{param}.grad'")
            continue
        g = np.load(path).astype(np.float64)
        if g.shape != ref.shape:
            problems.append(f"'{param}.grad' has shape {g.shape}, PyTorch's {ref.shape}")
            continue
        norm_sq += float(np.sum(g * g))
        ref_norm = float(np.linalg.norm(ref))
        rel = float(np.linalg.norm(g - ref)) / ref_norm if ref_norm > 0 else float(
            np.linalg.norm(g))
        if not np.isfinite(rel):
            rel = float('inf')
        if rel > worst_rel:
            worst_param, worst_rel = param, rel
        if not rel <= GRAD_RTOL:
            problems.append(f"'{param}': ||g - g_ref|| / ||g_ref|| = {rel:.2e} "
                            f"(||g|| {np.linalg.norm(g):.6g}, ||g_ref|| {ref_norm:.6g})")
    extra = sorted(f for f in os.listdir(out_dir)
                   if f.endswith('.grad.npy') and f not in expected_files)
    if extra:
        problems.append(f'gradient outputs without a reference: {", ".join(extra)}')

    loss = float(np.load(os.path.join(out_dir, 'loss.npy')))
    ref_loss = meta['loss_f32']
    norm, ref_norm_total = norm_sq ** 0.5, meta['grad_norm_total_f32']
    ok = not problems
    print(f'{name}: worst parameter {worst_param} rel err {worst_rel:.2e} '
          f'(bound {GRAD_RTOL:g}) over {len(refs)} gradients; '
          f'grad norm {norm:.9g} vs PyTorch {ref_norm_total:.9g} '
          f'(rel {abs(norm - ref_norm_total) / ref_norm_total:.2e}); '
          f'loss {loss:.9g} vs PyTorch {ref_loss:.9g} -> {"ok" if ok else "MISMATCH"}')
    for p in problems:
        print(f'  {name}: {p}')
    return ok


def main():
    args = tinygpt_harness.parse_args(__doc__)
    return tinygpt_harness.check_every_variant(
        args, lambda d, opset, work: check(args.trainc, args.trainc_run, d, opset, work))


if __name__ == '__main__':
    sys.exit(main())
