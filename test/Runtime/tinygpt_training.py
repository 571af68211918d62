#!/usr/bin/env python3
"""tinygpt trained by trainc (AdamW) against PyTorch's reference run.

For both variants at opsets 14 and 17, compiles the training step with
PyTorch's AdamW settings (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay
0.01 on every parameter: --decay-all) and checks, against
../shared/data/tinygpt/<variant>/raw_f32:

- after one step, the AdamW moments of every parameter: exp_avg and
  exp_avg_sq within 1e-4 of the reference's norm (they are 0.1 g and
  0.001 g^2, so they inherit the gradients' bound);
- after one step, the parameters. The first AdamW step moves each weight
  by lr * g / (|g| + eps'), i.e. about lr * sign(g): where the reference
  gradient is clearly non-zero (|g| > 1e-5 max|g|) the new weight must
  agree within 1e-3 * lr; where it is round-off noise (e.g. the attention
  key bias, whose exact gradient is zero) its sign is arbitrary and only a
  full step, |difference| <= 2 lr, is required;
- the 11-step loss curve (the same batch each step) within 1e-5 relative
  per step;
- --save-safetensors: the file loads with the safetensors library and holds
  exactly the parameters, bit-equal to --save-state's, in their model shapes.

Prints one line per model; exits 1 on any mismatch.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file

import tinygpt_harness

LR = 1e-3
ADAMW = ['--train', '--optimizer', 'adamw', '--lr', '1e-3', '--beta1', '0.9',
         '--beta2', '0.999', '--eps', '1e-8', '--weight-decay', '0.01', '--decay-all']


def reference(raw, prefix, name):
    return np.fromfile(os.path.join(raw, f'{prefix}__{name}.bin'), dtype='<f4')


def check(args, variant_dir, opset, work):
    tag = f'{os.path.basename(variant_dir)}/opset{opset}'
    raw = os.path.join(variant_dir, 'raw_f32')
    meta = json.load(open(os.path.join(variant_dir, 'meta.json')))
    exe = os.path.join(work, f'{os.path.basename(variant_dir)}{opset}.tcx')
    subprocess.run([args.trainc, os.path.join(variant_dir, f'model_train_opset{opset}.onnx'),
                    *ADAMW, '-o', exe], check=True)
    inputs = ['--input', f'tokens={raw}/tokens.bin', '--input', f'targets={raw}/targets.bin']
    state = os.path.join(work, f'state_{os.path.basename(variant_dir)}{opset}')
    os.makedirs(state, exist_ok=True)
    weights_file = os.path.join(work, f'{os.path.basename(variant_dir)}{opset}.safetensors')
    one = subprocess.run([args.trainc_run, exe, *inputs, '--steps', '1', '--output-dir', work,
                          '--save-state', state, '--save-safetensors', weights_file],
                         capture_output=True, text=True)
    if one.returncode != 0:
        print(f'{tag}: trainc-run failed: {one.stderr.strip()}')
        return False
    names = [e['name'][len('grad/'):] for e in meta['raw_f32'] if e['name'].startswith('grad/')]
    worst = (0.0, '')
    ok = True
    exported = load_file(weights_file)
    checkpoint = tinygpt_harness.load_checkpoint(state)
    if sorted(exported) != sorted(names):
        print(f'{tag}: safetensors export holds {sorted(exported)}, expected {sorted(names)}')
        ok = False
    for name in set(exported) & set(names):
        saved = checkpoint[name]
        if exported[name].dtype != saved.dtype or exported[name].shape != saved.shape or \
                not np.array_equal(exported[name], saved):
            print(f'{tag}: safetensors tensor {name} differs from --save-state')
            ok = False
    for name in names:
        for kind, prefix in (('exp_avg', 'adam_m_after_step1'), ('exp_avg_sq', 'adam_v_after_step1')):
            got = checkpoint[f'{name}.{kind}'].ravel()
            ref = reference(raw, prefix, name)
            rel = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
            worst = max(worst, (rel, f'{name}.{kind}'))
            ok &= rel <= 1e-4
        p1 = checkpoint[name].ravel()
        p1_ref = reference(raw, 'param_after_step1', name)
        g_ref = np.fromfile(os.path.join(raw, f'grad__{name}.bin'), dtype='<f4')
        clear = np.abs(g_ref) > 1e-5 * np.abs(g_ref).max()
        diff = np.abs(p1 - p1_ref)
        if diff[clear].max(initial=0) > 1e-3 * LR or diff.max() > 2 * LR:
            print(f'{tag}: parameter {name} after one step differs by '
                  f'{diff[clear].max(initial=0):.3e} (clear gradients) / {diff.max():.3e} (all)')
            ok = False
    steps = subprocess.run([args.trainc_run, exe, *inputs, '--steps', '11', '--output-dir', work],
                           capture_output=True, text=True)
    losses = [float(x) for x in re.findall(r'^step \d+: loss (\S+)', steps.stdout, re.M)]
    ref_curve = meta['loss_trajectory_f32']
    if len(losses) != len(ref_curve):
        print(f'{tag}: expected {len(ref_curve)} losses, got {len(losses)}: {steps.stderr.strip()}')
        return False
    curve_rel = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_curve))
    ok &= curve_rel <= 1e-5
    print(f'{tag}: AdamW moments worst rel err {worst[0]:.2e} ({worst[1]}); '
          f'loss after 10 steps {losses[-1]:.7f} vs PyTorch {ref_curve[-1]:.7f}, '
          f'curve worst rel err {curve_rel:.2e} -> {"ok" if ok else "MISMATCH"}')
    return ok


def main():
    args = tinygpt_harness.parse_args(__doc__)
    return tinygpt_harness.check_every_variant(
        args, lambda d, opset, work: check(args, d, opset, work))


if __name__ == '__main__':
    sys.exit(main())
