#!/usr/bin/env python3
"""Benchmark: what activation recompute costs in step time, beside what the
cost model predicts, and what it saves in planned memory.

    build/venv/bin/python tools/bench_recompute.py [--layers 4 --d-model 256 ...]

Writes the benchmark GPT with tools/make_gpt.py (default: 4 layers, d 256,
seq 128, batch 8, vocab 256), compiles its AdamW training step with
`trainc --recompute none|selective|full --print-memory-plan`, and runs each
with `trainc-run --steps N` on one fixed random batch. The contenders are
interleaved: every round runs none, selective and full once each, in a
rotated order, after one warm-up round that is not reported. Every round is
printed, and for each mode the ratio of its round median to none's in the
same round, beside the predicted ratio (step FLOPs with recompute / without,
from the cost model that --print-memory-plan reports). The literature's rule
of thumb for full recompute is about a third more compute (one more forward
pass of the blocks, the backward being twice the forward); the GEMMs of the
head and the optimizer are not recomputed, so the prediction is lower.

Needs numpy and onnx (the project venv has both). The machine is shared and
noisy: trust ratios within a round, not absolute times.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tools'))
import make_gpt  # noqa: E402

MODES = ['none', 'selective', 'full']


def compile_mode(trainc, model, mode, out):
    result = subprocess.run([trainc, model, '--train', '--recompute', mode, '-o', out,
                             '--print-memory-plan'], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f'trainc --recompute {mode} failed: {result.stderr.strip()}')
    rows = {}
    for line in result.stdout.splitlines():
        m = re.match(r'\s+(none|selective|full)\s+([0-9.]+) MiB\s+(-?[0-9.]+)%\s+(\d+)\s+'
                     r'([0-9.]+)%', line)
        if m:
            rows[m.group(1)] = (float(m.group(2)), float(m.group(5)))
    return rows


def run_steps(trainc_run, exe, inputs, steps, env):
    result = subprocess.run([trainc_run, exe, *inputs, '--steps', str(steps)],
                            capture_output=True, text=True, env=env)
    m = re.search(r'run: median ([0-9.]+) ms', result.stdout)
    if result.returncode != 0 or not m:
        sys.exit(f'trainc-run {exe} failed: {result.stderr.strip()[:300]}')
    return float(m.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--layers', type=int, default=4)
    parser.add_argument('--d-model', type=int, default=256)
    parser.add_argument('--heads', type=int, default=4)
    parser.add_argument('--seq', type=int, default=128)
    parser.add_argument('--batch', type=int, default=8)
    parser.add_argument('--vocab', type=int, default=256)
    parser.add_argument('--steps', type=int, default=10,
                        help='steps per run; a round runs each mode once (default: %(default)s)')
    parser.add_argument('--rounds', type=int, default=5, help='(default: %(default)s)')
    parser.add_argument('--threads', type=int, default=2, help='(default: %(default)s)')
    parser.add_argument('--bin-dir', default=os.path.join(REPO, 'build', 'bin'))
    args = parser.parse_args()
    trainc = os.path.join(args.bin_dir, 'trainc')
    trainc_run = os.path.join(args.bin_dir, 'trainc-run')
    env = dict(os.environ, TRAINC_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as work:
        cfg = make_gpt.GptConfig(vocab=args.vocab, seq=args.seq, batch=args.batch,
                                 d_model=args.d_model, heads=args.heads, layers=args.layers)
        model = os.path.join(work, 'gpt.onnx')
        import onnx
        onnx.save(make_gpt.build_model(cfg), model)
        rng = np.random.default_rng(0)
        tokens = rng.integers(0, cfg.vocab, size=(cfg.batch, cfg.seq))
        inputs = []
        for name, value in (('tokens', tokens), ('targets', np.roll(tokens, -1, axis=1))):
            path = os.path.join(work, f'{name}.npy')
            np.save(path, value)
            inputs += ['--input', f'{name}={path}']
        exes, table = {}, {}
        for mode in MODES:
            exes[mode] = os.path.join(work, f'{mode}.tcx')
            table = compile_mode(trainc, model, mode, exes[mode])
        print(f'model: {args.layers} layers, d {args.d_model}, seq {args.seq}, batch '
              f'{args.batch}, vocab {args.vocab}; {args.threads} threads, {args.steps} steps '
              f'per run, median step time per run (ms)')
        print(f'{"mode":<10} {"activations":>12} {"predicted":>10}')
        for mode in MODES:
            mib, pct = table[mode]
            print(f'{mode:<10} {mib:>8.1f} MiB {1 + pct / 100:>9.3f}x')
        times = {mode: [] for mode in MODES}
        for r in range(args.rounds + 1):
            order = MODES[r % 3:] + MODES[:r % 3]
            got = {mode: run_steps(trainc_run, exes[mode], inputs, args.steps, env)
                   for mode in order}
            if r == 0:
                continue  # warm-up
            line = '  '.join(f'{mode} {got[mode]:7.2f}' for mode in MODES)
            ratios = '  '.join(f'{mode}/none {got[mode] / got["none"]:.3f}'
                               for mode in MODES[1:])
            print(f'round {r}: {line}   {ratios}')
            for mode in MODES:
                times[mode].append(got[mode])
        for mode in MODES[1:]:
            ratios = [t / n for t, n in zip(times[mode], times['none'])]
            print(f'{mode}: measured {statistics.median(ratios):.3f}x of none (median of '
                  f'{len(ratios)} rounds, range {min(ratios):.3f}-{max(ratios):.3f}); '
                  f'predicted {1 + table[mode][1] / 100:.3f}x')


if __name__ == '__main__':
    main()
