#!/usr/bin/env python3
"""Benchmark: what activation recompute (and mixed precision) costs in step
time, beside what the cost model predicts, and what it saves in planned
memory.

    build/venv/bin/python tools/bench_recompute.py [--layers 4 --d-model 256 ...]
    build/venv/bin/python tools/bench_recompute.py --contenders f32:none,bf16:none,bf16:full

Writes the benchmark GPT with tools/make_gpt.py (default: 4 layers, d 256,
seq 128, batch 8, vocab 256), compiles its AdamW training step for each contender PRECISION:RECOMPUTE
(default f32:none, f32:selective, f32:full) with `trainc --precision P
--recompute R --print-memory-plan`, and runs each with `trainc-run --steps N`
on one fixed random batch. The contenders are interleaved: every round runs
each once, in a rotated order, after one warm-up round that is not
reported. Every round is printed, and for each contender the ratio of its
round median to the first contender's in the same round, beside the
predicted ratio (step FLOPs with recompute / without, from the cost model
that --print-memory-plan reports; precision changes no FLOP count). The literature's rule
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


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, 'tools'))
import make_gpt  # noqa: E402

def compile_contender(trainc, model, contender, out):
    precision, mode = contender.split(':')
    result = subprocess.run([trainc, model, '--train', '--precision', precision,
                             '--recompute', mode, '-o', out, '--print-memory-plan'],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f'trainc {contender} failed: {result.stderr.strip()}')
    activations = float(re.search(r'^\s+activations\s+(\d+) bytes', result.stdout,
                                  re.M).group(1)) / 1048576
    m = re.search(rf'^\s+{mode}\s+[0-9.]+ MiB\s+-?[0-9.]+%\s+\d+\s+([0-9.]+)%',
                  result.stdout, re.M)
    return activations, 1 + (float(m.group(1)) / 100 if m and mode != 'none' else 0.0)


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
    parser.add_argument('--contenders', default='f32:none,f32:selective,f32:full',
                        help='PRECISION:RECOMPUTE pairs; the first is the baseline '
                             '(default: %(default)s)')
    parser.add_argument('--bin-dir', default=os.path.join(REPO, 'build', 'bin'))
    args = parser.parse_args()
    trainc = os.path.join(args.bin_dir, 'trainc')
    trainc_run = os.path.join(args.bin_dir, 'trainc-run')
    env = dict(os.environ, TRAINC_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as work:
        cfg = make_gpt.GptConfig(vocab=args.vocab, seq=args.seq, batch=args.batch,
                                 d_model=args.d_model, heads=args.heads, layers=args.layers)
        model, inputs = make_gpt.write_model_and_batch(cfg, work)
        contenders = args.contenders.split(',')
        exes, planned = {}, {}
        for c in contenders:
            exes[c] = os.path.join(work, c.replace(':', '_') + '.tcx')
            planned[c] = compile_contender(trainc, model, c, exes[c])
        print(f'model: {args.layers} layers, d {args.d_model}, seq {args.seq}, batch '
              f'{args.batch}, vocab {args.vocab}; {args.threads} threads, {args.steps} steps '
              f'per run, median step time per run (ms)')
        print(f'{"contender":<16} {"activations":>12} {"predicted":>10}')
        for c in contenders:
            print(f'{c:<16} {planned[c][0]:>8.1f} MiB {planned[c][1]:>9.3f}x')
        base = contenders[0]
        times = {c: [] for c in contenders}
        for r in range(args.rounds + 1):
            order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
            got = {c: run_steps(trainc_run, exes[c], inputs, args.steps, env) for c in order}
            if r == 0:
                continue  # warm-up
            line = '  '.join(f'{c} {got[c]:7.2f}' for c in contenders)
            ratios = '  '.join(f'{got[c] / got[base]:.3f}' for c in contenders[1:])
            print(f'round {r}: {line}   ratios to {base}: {ratios}')
            for c in contenders:
                times[c].append(got[c])
        for c in contenders[1:]:
            ratios = [t / n for t, n in zip(times[c], times[base])]
            print(f'{c}: measured {statistics.median(ratios):.3f}x of {base} (median of '
                  f'{len(ratios)} rounds, range {min(ratios):.3f}-{max(ratios):.3f}); '
                  f'predicted {planned[c][1]:.3f}x')


if __name__ == '__main__':
    main()
