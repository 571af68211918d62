#!/usr/bin/env python3
"""bf16 and fp16 training follow the f32 loss curve.

Writes a small GPT with tools/make_gpt.py (2 layers, d 64, seq 32, batch 8,
byte vocabulary), compiles its AdamW step and its forward pass with
`trainc --precision f32|bf16|fp16`, and trains each for 200 steps with
`trainc-run --data` on the same bytes (this repository's README and
compiler sources, a 10% held-out split), evaluating the held-out loss every
50 steps. At every evaluation the 16-bit runs' held-out loss must be within
2% of the f32 run's; the fp16 run reports its loss scale. The curves fall
from ln 256 = 5.5 to about 3.1 here, and the three runs see the same batches,
so they differ only by rounding: bf16's 3-digit mantissa moves the loss by
a fraction of a percent, a wrong cast or an unscaled fp16 gradient by far
more (or diverges).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, 'tools'))
import make_gpt  # noqa: E402

STEPS, EVAL_EVERY, BOUND = 200, 50, 0.02


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{os.path.basename(cmd[0])} failed: {result.stderr.strip()[:400]}")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        import onnx
        cfg = make_gpt.GptConfig(vocab=256, seq=32, batch=8, d_model=64, heads=4, layers=2)
        model = os.path.join(work, 'gpt.onnx')
        onnx.save(make_gpt.build_model(cfg), model)
        data = os.path.join(work, 'text.txt')
        with open(data, 'wb') as out:
            for root, _, files in sorted(os.walk(os.path.join(REPO, 'compiler'))):
                for f in sorted(files):
                    if f.endswith(('.cpp', '.h', '.td', '.md')):
                        out.write(open(os.path.join(root, f), 'rb').read())
            out.write(open(os.path.join(REPO, 'README.md'), 'rb').read())
        curves = {}
        for precision in ('f32', 'bf16', 'fp16'):
            step = os.path.join(work, f'{precision}_step.tcx')
            fwd = os.path.join(work, f'{precision}_fwd.tcx')
            run([args.trainc, model, '--train', '--precision', precision, '--lr', '3e-3',
                 '--lr-schedule', 'cosine', '--warmup-steps', '20', '--total-steps',
                 str(STEPS), '--min-lr', '3e-4', '-o', step])
            run([args.trainc, model, '--precision', precision, '-o', fwd])
            log = os.path.join(work, f'{precision}.jsonl')
            run([args.trainc_run, step, '--data', data, '--steps', str(STEPS),
                 '--eval-executable', fwd, '--eval-every', str(EVAL_EVERY),
                 '--log-jsonl', log])
            records = [json.loads(line) for line in open(log)]
            curves[precision] = {r['step']: r for r in records if 'eval_loss' in r}
        ok = True
        for step in sorted(curves['f32']):
            base = curves['f32'][step]['eval_loss']
            line = f'step {step}: held-out loss f32 {base:.4f}'
            for precision in ('bf16', 'fp16'):
                r = curves[precision].get(step)
                if r is None:
                    print(f'{precision}: no evaluation at step {step}')
                    ok = False
                    continue
                rel = abs(r['eval_loss'] - base) / base
                ok &= rel <= BOUND
                line += f", {precision} {r['eval_loss']:.4f} ({rel:+.2%})"
                if 'loss_scale' in r:
                    line += f" scale {r['loss_scale']:g}"
            print(line)
        if len(curves['f32']) != STEPS // EVAL_EVERY:
            print(f"expected {STEPS // EVAL_EVERY} evaluations, got {len(curves['f32'])}")
            ok = False
        print('precision_curve: ' + (f'within {BOUND:.0%} of f32 at every evaluation'
                                     if ok else 'FAILED'))
        return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
