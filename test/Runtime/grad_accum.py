#!/usr/bin/env python3
"""Gradient accumulation (--grad-accum 2) on tinygpt against single batches.

Compiles tinygpt (tied_erf, opset 17) twice with --optimizer none: for one
micro-batch of 2 sequences, and with --grad-accum 2 for 4 sequences. With
batches A and B (B is A's tokens rotated by 7 in the vocabulary, targets
likewise), the accumulated step must give

- loss = (loss_A + loss_B) / 2 within 1e-6 relative (one f32 add and
  divide apart);
- every gradient = (g_A + g_B) / 2 within 1e-5 of its norm (the two
  micro-batches' gradients are summed in another order);
- with A twice, PyTorch's reference gradients within 1e-4 of their norm;
- planned activations at K=8 at most those at K=1 plus the logits output
  of 8 micro-batches, its concatenation and one gradient-sized running sum
  (the step runs one micro-batch at a time; before, every micro-batch's
  activations were alive at once: at K=100, 60 MiB planned against 6.8 MiB
  now).

Exits 1 on any mismatch.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

import tinygpt_harness


def step(trainc_run, exe, tokens, targets, work, tag):
    out = os.path.join(work, tag)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, 'tokens.npy'), tokens)
    np.save(os.path.join(out, 'targets.npy'), targets)
    subprocess.run([trainc_run, exe, '--input', f'tokens={out}/tokens.npy',
                    '--input', f'targets={out}/targets.npy', '--output-dir', out],
                   check=True, capture_output=True)
    grads = {f[:-len('.grad.npy')]: np.load(os.path.join(out, f))
             for f in os.listdir(out) if f.endswith('.grad.npy')}
    return float(np.load(os.path.join(out, 'loss.npy'))), grads


def main():
    args = tinygpt_harness.parse_args(__doc__)
    variant = os.path.join(args.data_dir, 'tied_erf')
    model = os.path.join(variant, 'model_train_opset17.onnx')
    raw = os.path.join(variant, 'raw_f32')
    tokens = np.fromfile(os.path.join(raw, 'tokens.bin'), dtype='<i8').reshape(2, 32)
    targets = np.fromfile(os.path.join(raw, 'targets.bin'), dtype='<i8').reshape(2, 32)
    tokens_b, targets_b = (tokens + 7) % 128, (targets + 7) % 128
    ok = True
    with tempfile.TemporaryDirectory() as work:
        single = os.path.join(work, 'single.tcx')
        accum = os.path.join(work, 'accum.tcx')
        base = [args.trainc, model, '--train', '--optimizer', 'none']
        subprocess.run(base + ['-o', single], check=True)
        subprocess.run(base + ['--grad-accum', '2', '-o', accum], check=True)
        loss_a, g_a = step(args.trainc_run, single, tokens, targets, work, 'a')
        loss_b, g_b = step(args.trainc_run, single, tokens_b, targets_b, work, 'b')
        loss, g = step(args.trainc_run, accum, np.concatenate([tokens, tokens_b]),
                       np.concatenate([targets, targets_b]), work, 'ab')
        loss_rel = abs(loss - (loss_a + loss_b) / 2) / abs(loss)
        worst = max(np.linalg.norm(g[n] - (g_a[n] + g_b[n]) / 2) /
                    np.linalg.norm((g_a[n] + g_b[n]) / 2) for n in g_a)
        ok &= loss_rel <= 1e-6 and worst <= 1e-5 and set(g) == set(g_a)
        print(f'two micro-batches: loss {loss:.7f} vs mean {(loss_a + loss_b) / 2:.7f} '
              f'(rel {loss_rel:.1e}); gradients vs mean, worst rel {worst:.1e}')
        _, g_aa = step(args.trainc_run, accum, np.concatenate([tokens, tokens]),
                       np.concatenate([targets, targets]), work, 'aa')
        worst_ref = max(np.linalg.norm(g_aa[n].ravel() - np.fromfile(
            os.path.join(raw, f'grad__{n}.bin'), dtype='<f4')) /
            np.linalg.norm(np.fromfile(os.path.join(raw, f'grad__{n}.bin'), dtype='<f4'))
            for n in g_aa)
        ok &= worst_ref <= 1e-4
        print(f'the same batch twice vs PyTorch: worst rel {worst_ref:.1e}')
        # Memory: the step runs one micro-batch at a time, so the planned
        # activations do not grow with K (only the batched logits output,
        # 32 KiB per micro-batch, does; the AdamW step returns none).
        planned = {}
        for k in (1, 8):
            out = subprocess.run([args.trainc, model, '--train', '--grad-accum', str(k),
                                  '-o', os.path.join(work, f'k{k}.tcx'),
                                  '--print-memory-plan'],
                                 check=True, capture_output=True, text=True).stdout
            rows = {f[0]: int(f[1]) for f in map(str.split, out.splitlines())
                    if len(f) > 2 and f[0] in ('activations', 'parameters')
                    and f[2] == 'bytes'}
            planned[k] = rows
        # What may grow: the logits of 8 micro-batches and their
        # concatenation, and the running sum of the gradients beside the
        # current micro-batch's (one more gradient-sized set).
        allowed = 2 * 8 * (2 * 32 * 128 * 4) + planned[1]['parameters']
        growth = planned[8]['activations'] - planned[1]['activations']
        ok &= growth <= allowed
        print(f"planned activations: K=1 {planned[1]['activations']:,} B, K=8 "
              f"{planned[8]['activations']:,} B (grew {growth:,} B; allowed "
              f"{allowed:,}: the logits outputs and one more set of gradients)")
    print('ok' if ok else 'MISMATCH')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
