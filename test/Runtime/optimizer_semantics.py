#!/usr/bin/env python3
"""SGD, clipping, weight-decay masks and schedules against their formulas.

The AdamW step is compared with PyTorch in tinygpt_training.py; this test
covers the other optimizer options on tinygpt (tied_erf, opset 17) by
recomputing one step in numpy (float64) from trainc's own gradients
(`--optimizer none`) and initial parameters:

- SGD with Nesterov momentum 0.9, weight decay 0.01 and the global norm
  clipped to 0.5: g' = clip(g) + wd p (matrices that are not embeddings
  only; wte and wpe are embeddings), buf = g', p1 = p0 - lr (g' + 0.9 buf).
  Bound per element: 4 f32 ulps of the new value (the f32 update rounds a
  few times at the parameter's magnitude) plus 1e-5 of the step;
- the momentum buffer after that step equals g';
- the lr over 6 steps of a constant schedule with 4 warmup steps, the
  cosine schedule (warmup 2, total 5, min 1e-4) and wsd's, as printed by
  trainc-run, within f32 rounding of the formula.
"""
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

import tinygpt_harness


def run(trainc, trainc_run, model, raw, work, tag, flags, steps=1):
    exe = os.path.join(work, f'{tag}.tcx')
    subprocess.run([trainc, model, '--train', *flags, '-o', exe], check=True)
    state = os.path.join(work, f'state_{tag}')
    os.makedirs(state, exist_ok=True)
    out = subprocess.run([trainc_run, exe, '--input', f'tokens={raw}/tokens.bin',
                          '--input', f'targets={raw}/targets.bin', '--steps', str(steps),
                          '--output-dir', state, '--save-state', state],
                         check=True, capture_output=True, text=True).stdout
    return state, out


def main():
    args = tinygpt_harness.parse_args(__doc__)
    variant = os.path.join(args.data_dir, 'tied_erf')
    model = os.path.join(variant, 'model_train_opset17.onnx')
    raw = os.path.join(variant, 'raw_f32')
    ok = True
    with tempfile.TemporaryDirectory() as work:
        plain, _ = run(args.trainc, args.trainc_run, model, raw, work, 'grads', ['--optimizer', 'none'])
        names = sorted(f[:-len('.grad.npy')] for f in os.listdir(plain) if f.endswith('.grad.npy'))
        grads = {n: np.load(os.path.join(plain, f'{n}.grad.npy')).astype(np.float64) for n in names}
        p0 = {n: v.astype(np.float64)
              for n, v in tinygpt_harness.load_checkpoint(plain).items() if n in names}

        lr, momentum, wd, clip = 0.1, 0.9, 0.01, 0.5
        sgd, _ = run(args.trainc, args.trainc_run, model, raw, work, 'sgd',
                     ['--optimizer', 'sgd', '--lr', str(lr), '--momentum', str(momentum),
                      '--nesterov', '--weight-decay', str(wd), '--clip-grad-norm', str(clip)])
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
        factor = min(1.0, clip / (norm + 1e-6))
        worst = 0.0
        sgd_state = tinygpt_harness.load_checkpoint(sgd)
        for n in names:
            # Embeddings (wte, wpe) and vectors (biases, norms) are not decayed.
            decayed = p0[n].ndim >= 2 and n not in ('wte.weight', 'wpe.weight')
            g = grads[n] * factor + (wd * p0[n] if decayed else 0)
            expected = p0[n] - lr * (g + momentum * g)
            got = sgd_state[n].astype(np.float64)
            buf = sgd_state[f'{n}.momentum_buffer'].astype(np.float64)
            bound = 4 * np.spacing(np.abs(expected).astype(np.float32)).astype(np.float64) \
                + 1e-5 * np.abs(p0[n] - expected)
            rel = max((np.abs(got - expected) / bound).max(),
                      np.abs(buf - g).max() / (1e-6 * max(np.abs(g).max(), 1e-12)))
            worst = max(worst, rel)
            if rel > 1:
                print(f'sgd: {n}: error {rel:.2f} times the bound')
                ok = False
        print(f'sgd (nesterov, clip {clip}, decay mask): worst error {worst:.2f} of the bound')

        for schedule, flags, formula in (
                ('constant', ['--warmup-steps', '4'], lambda t: 1e-3 * min(1, t / 4)),
                ('cosine', ['--warmup-steps', '2', '--total-steps', '5', '--min-lr', '1e-4'],
                 lambda t: 1e-3 * t / 2 if t <= 2 else
                 1e-4 + 9e-4 * (1 + math.cos(math.pi * min(1, (t - 2) / 3))) / 2),
                ('wsd', ['--warmup-steps', '1', '--total-steps', '5', '--decay-steps', '2',
                         '--min-lr', '2e-4'],
                 lambda t: 1e-3 * t if t <= 1 else 1e-3 if t <= 3 else
                 (2e-4 if t >= 5 else 1e-3 + (2e-4 - 1e-3) * (t - 3) / 2))):
            _, out = run(args.trainc, args.trainc_run, model, raw, work, schedule,
                         ['--lr-schedule', schedule, *flags], steps=6)
            lrs = [float(x) for x in re.findall(r' lr (\S+)', out)]
            want = [formula(t) for t in range(1, 7)]
            err = max(abs(a - b) / b for a, b in zip(lrs, want))
            print(f'{schedule}: lr per step {["%.4g" % x for x in lrs]} (worst rel err {err:.1e})')
            if len(lrs) != 6 or err > 1e-7:
                ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
