#!/usr/bin/env python3
"""Benchmark: how long trainc takes to compile a GPT-2 124M training step,
and in which part of the compilation.

    python3 tools/bench_compile.py [--rounds 5] [--baseline-bin-dir OTHER/bin]

tools/make_gpt.py writes the model once (GPT-2 124M: 12 layers, d_model 768,
12 heads, vocab 50,257, seq 1,024, batch 4; a 510 MB ONNX file), then each
round runs `trainc MODEL --train --optimizer adamw -o STEP.tcx
--time-phases` as a fresh process: cold in the compiler, warm in the page
cache after the first round. The report gives, per trainc build, the
median over rounds of the wall time, of each part --time-phases names (the
import, the passes, writing the executable) and of the slowest passes, the
peak RSS, and every round's wall time. With --baseline-bin-dir, the other
build's rounds are interleaved with these (one of each per round), so both
see the same machine state, and the ratio of their medians is printed.

Exits non-zero when a compilation fails.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS_DIR)
GPT2 = ['--vocab', '50257', '--d-model', '768', '--heads', '12', '--layers', '12',
        '--seq', '1024', '--batch', '4']
# A line of MLIR's timing tree: "    0.1060 (  5.5%)    name".
TIMING_LINE = re.compile(r'^\s+([0-9.]+) \(\s*[0-9.]+%\)(\s+)(.+?)\s*$')


def compile_once(trainc, model, output):
    """Runs trainc once; returns (wall s, peak RSS bytes, {part: s})."""
    command = [trainc, model, '--train', '--optimizer', 'adamw', '-o', output,
               '--time-phases']
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f'bench_compile.py: {" ".join(command)} failed:\n{stderr[-2000:]}')
    parts = {}
    for line in stderr.splitlines():
        m = TIMING_LINE.match(line)
        if not m:
            continue
        depth = (len(m.group(2)) - 2) // 2  # top-level entries are indented by 2
        name = m.group(3)
        if depth > 0 and (name.startswith("'") or name.startswith('(A)')):
            continue  # a nested pipeline (its passes are listed) or an analysis
        key = name if depth == 0 else f'pass {name}'
        parts[key] = parts.get(key, 0.0) + float(m.group(1))
    if 'import' not in parts:
        sys.exit(f'bench_compile.py: {trainc} printed no --time-phases tree; too old?')
    return wall, usage.ru_maxrss * 1024, parts


def report(name, rounds):
    walls = [r[0] for r in rounds]
    print(f'{name}: wall median {statistics.median(walls):.2f} s '
          f'(rounds: {" ".join(f"{w:.2f}" for w in walls)}); peak RSS median '
          f'{statistics.median(r[1] for r in rounds) / 2**30:.2f} GiB')
    keys = set().union(*(r[2] for r in rounds))
    medians = {k: statistics.median(r[2].get(k, 0.0) for r in rounds) for k in keys}
    for k in ('import', 'passes', 'write executable', 'Rest', 'Total'):
        if k in medians:
            print(f'  {k:<28}{medians[k]:8.3f} s')
    slowest = sorted((v, k) for k, v in medians.items() if k.startswith('pass '))[::-1][:6]
    print('  slowest passes: ' + ', '.join(f'{k[5:]} {v:.3f} s' for v, k in slowest))
    return statistics.median(walls)


def main():
    parser = argparse.ArgumentParser(
        description='Time the compilation of a GPT-2 124M training step, per part.',
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument('--rounds', type=int, default=5,
                        help='compilations per build (default: %(default)s)')
    parser.add_argument('--trainc-bin-dir', default=os.path.join(REPO, 'build', 'bin'),
                        help='the trainc build to time (default: %(default)s)')
    parser.add_argument('--baseline-bin-dir', default=None,
                        help='another trainc build, timed in the same rounds')
    parser.add_argument('--model', default=None,
                        help='an existing GPT-2 124M ONNX file (default: write one with '
                             'tools/make_gpt.py into a temporary directory)')
    args = parser.parse_args()
    builds = {'trainc': os.path.join(args.trainc_bin_dir, 'trainc')}
    if args.baseline_bin_dir:
        builds['baseline'] = os.path.join(args.baseline_bin_dir, 'trainc')
    for name, path in builds.items():
        if not os.access(path, os.X_OK):
            sys.exit(f'bench_compile.py: {path} not found; build it or give its bin directory')

    with tempfile.TemporaryDirectory() as work:
        model = args.model
        if not model:
            model = os.path.join(work, 'gpt2.onnx')
            print('writing GPT-2 124M with tools/make_gpt.py ...', flush=True)
            subprocess.run([sys.executable, os.path.join(TOOLS_DIR, 'make_gpt.py'), model]
                           + GPT2, check=True, stdout=subprocess.DEVNULL)
        print(f'model: {model} ({os.path.getsize(model) / 1e6:.0f} MB)')
        rounds = {name: [] for name in builds}
        for i in range(args.rounds):
            for name, trainc in builds.items():
                output = os.path.join(work, f'{name}.tcx')
                rounds[name].append(compile_once(trainc, model, output))
                os.remove(output)
                print(f'round {i + 1}/{args.rounds} {name}: {rounds[name][-1][0]:.2f} s',
                      flush=True)
        print()
        medians = {name: report(name, r) for name, r in rounds.items()}
        if 'baseline' in medians:
            print(f'baseline / trainc = {medians["baseline"] / medians["trainc"]:.2f}x '
                  '(median wall time; above 1: trainc compiles faster)')


if __name__ == '__main__':
    main()
