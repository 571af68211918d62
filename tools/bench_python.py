#!/usr/bin/env python3
"""Benchmark: the cost of stepping from Python (trainc.Trainer.step) against
trainc-run, on the benchmark GPT (tools/make_gpt.py; default 4 layers,
d 256, seq 128, batch 8), in one run so both see the same machine state.

    python tools/bench_python.py [--build-dir build] [--steps 20 --rounds 3]

Both run the same executable (compiled once: --train, AdamW) on the same
batch. Per round, interleaved: trainc-run --steps N (its printed median run
time), then a fresh trainc.Trainer stepping N times from Python, timed
around each step() call (the batch dict of NumPy arrays passed each time,
as a user would). Printed per round: both medians, their ratio, and the
Python overhead per step: step() wall time minus the runtime's own step
time (the metrics' step_seconds), median over the steps.

The package is the installed one, or the checkout's frontends/python with
the tools and libtrainc.so of --build-dir.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--build-dir', default=os.path.join(REPO, 'build'),
                        help='where trainc, trainc-run and libtrainc.so are, when '
                             'the package is not installed (default: build)')
    parser.add_argument('--layers', type=int, default=4)
    parser.add_argument('--d-model', type=int, default=256)
    parser.add_argument('--seq', type=int, default=128)
    parser.add_argument('--batch', type=int, default=8)
    parser.add_argument('--vocab', type=int, default=256)
    parser.add_argument('--steps', type=int, default=20, help='steps per round')
    parser.add_argument('--rounds', type=int, default=3,
                        help='interleaved rounds of each (default 3)')
    args = parser.parse_args()

    try:
        import trainc
        trainc.tool_path('trainc')
    except Exception:
        build = os.path.abspath(args.build_dir)
        os.environ.setdefault('TRAINC_BIN_DIR', os.path.join(build, 'bin'))
        os.environ.setdefault('TRAINC_LIBRARY',
                              os.path.join(build, 'runtime', 'libtrainc.so'))
        sys.path.insert(0, os.path.join(REPO, 'frontends', 'python'))
        sys.modules.pop('trainc', None)
        import trainc
    sys.path.insert(0, os.path.join(REPO, 'tools'))
    import make_gpt

    cfg = make_gpt.GptConfig(vocab=args.vocab, seq=args.seq, batch=args.batch,
                             d_model=args.d_model, layers=args.layers,
                             heads=max(1, args.d_model // 64))
    with tempfile.TemporaryDirectory(prefix='bench-python-') as work:
        model, inputs = make_gpt.write_model_and_batch(cfg, work)
        exe = trainc.compile(model, os.path.join(work, 'step.tcx'), train=True,
                             optimizer='adamw', lr=1e-3, decay_all=True)
        batch = {spec.split('=', 1)[0]: np.load(spec.split('=', 1)[1])
                 for spec in inputs[1::2]}
        print(f'model: {args.layers} layers, d {args.d_model}, seq {args.seq}, '
              f'batch {args.batch}; {exe.parameter_count} parameter tensors; '
              f'{args.steps} steps per round')
        print(f"{'round':>5}  {'trainc-run ms':>13}  {'Python ms':>9}  "
              f"{'ratio':>6}  {'overhead ms':>11}")
        for r in range(1, args.rounds + 1):
            out = subprocess.run(
                [trainc.tool_path('trainc-run'), exe.path, *inputs,
                 '--steps', str(args.steps), '--output-dir',
                 os.path.join(work, 'out')],
                check=True, capture_output=True, text=True).stdout
            cli = float(re.search(r'run: median ([0-9.]+) ms', out).group(1))
            trainer = trainc.Trainer(exe)
            walls, overheads = [], []
            for _ in range(args.steps):
                start = time.perf_counter()
                metrics = trainer.step(batch)
                wall = time.perf_counter() - start
                walls.append(wall * 1e3)
                overheads.append((wall - metrics['step_seconds']) * 1e3)
            trainer.close()
            py = median(walls)
            print(f'{r:>5}  {cli:>13.2f}  {py:>9.2f}  {py / cli:>6.3f}  '
                  f'{median(overheads):>11.3f}')
        exe.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
