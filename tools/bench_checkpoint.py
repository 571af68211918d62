#!/usr/bin/env python3
"""Benchmark: what checkpoints cost training, on the benchmark GPT.

    build/venv/bin/python tools/bench_checkpoint.py [--rounds 3 --steps 30 --save-every 5]

Compiles tools/make_gpt.py's benchmark model (4 layers, d 256, seq 128,
batch 8, AdamW) and trains it on random text with trainc-run, in rounds
that interleave two contenders in one script run (this machine is shared
and noisy): without checkpoints, and with --save-state --save-every N
(written in the background). Each round prints both median step times, the
ratio, the seconds training waited per checkpoint (trainc-run's own
figure: the copy of the state, plus waiting for the previous write) and
that wait as a fraction of the median step. A first round is a warm-up and
is printed but left out of the summary. The issue's goal: the wait per
checkpoint is at most one step.
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env=None):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split('\n', 2)[2])
    parser.add_argument('--bin-dir', default=os.path.join(REPO, 'build', 'bin'),
                        help='where trainc and trainc-run are (default: build/bin)')
    parser.add_argument('--rounds', type=int, default=3, help='measured rounds (default 3)')
    parser.add_argument('--steps', type=int, default=30, help='steps per run (default 30)')
    parser.add_argument('--save-every', type=int, default=5,
                        help='checkpoint interval of the second contender (default 5)')
    parser.add_argument('--threads', type=int, default=2, help='TRAINC_NUM_THREADS (default 2)')
    args = parser.parse_args()
    trainc = os.path.join(args.bin_dir, 'trainc')
    trainc_run = os.path.join(args.bin_dir, 'trainc-run')
    env = dict(os.environ, TRAINC_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as work:
        model, exe = os.path.join(work, 'm.onnx'), os.path.join(work, 's.tcx')
        run([sys.executable, os.path.join(REPO, 'tools', 'make_gpt.py'), model, '--layers', '4',
             '--d-model', '256', '--heads', '4', '--seq', '128', '--batch', '8'])
        run([trainc, model, '--train', '--optimizer', 'adamw', '--lr', '1e-3', '-o', exe])
        text = os.path.join(work, 'text.txt')
        rng = random.Random(0)
        open(text, 'w').write(''.join(rng.choice('abcdefghijklmnopqrstuvwxyz \n')
                                      for _ in range(200000)))
        base = [trainc_run, exe, '--data', text, '--steps', str(args.steps), '--no-progress',
                '--log-every', str(args.steps)]

        def median_ms(out):
            return float(re.search(r'median step ([0-9.]+) ms', out).group(1))

        rows = []
        for r in range(args.rounds + 1):
            plain = median_ms(run(base, env))
            state = os.path.join(work, 'state')
            shutil.rmtree(state, ignore_errors=True)
            out = run(base + ['--save-state', state, '--save-every', str(args.save_every)], env)
            saved = median_ms(out)
            m = re.search(r'checkpoints: (\d+) during training, .*waited ([0-9.]+) s for them '
                          r'\(([0-9.]+) s each\)', out)
            count, each = int(m.group(1)), float(m.group(3))
            size = sum(os.path.getsize(os.path.join(dp, f))
                       for dp, _, fs in os.walk(state) for f in fs if f.endswith('.safetensors'))
            size //= max(1, len([d for d in os.listdir(state) if d.startswith('step-')]))
            tag = 'warm-up' if r == 0 else f'round {r}'
            print(f'{tag}: median step {plain:.1f} ms without checkpoints, {saved:.1f} ms with '
                  f'one every {args.save_every} steps (ratio {saved / plain:.3f}); '
                  f'{count} checkpoints of {size / 2**20:.1f} MiB, training waited '
                  f'{each * 1e3:.1f} ms each = {each * 1e3 / saved:.3f} of a step', flush=True)
            if r:
                rows.append((saved / plain, each * 1e3 / saved))
        print(f'summary over {len(rows)} rounds: step-time ratio median '
              f'{statistics.median(r[0] for r in rows):.3f}; wait per checkpoint median '
              f'{statistics.median(r[1] for r in rows):.3f} of a step (goal: at most 1)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
