#!/usr/bin/env python3
"""Benchmark: the memory and time `trainc-run --data` takes on data files
of a given size, against another build of trainc in the same run.

    build/venv/bin/python tools/bench_data.py [--baseline-bin-dir OTHER/bin]

Two kinds of data (runtime/README.md, "Data larger than memory"):
- tokens: a trainc token file of --tokens random uint16 ids (below
  tinygpt's vocabulary of 128), trained on by tinygpt's step
  (shared/data/tinygpt/tied_erf) for --steps steps;
- samples: a .safetensors file of --samples images f32 [3, 32, 32] and
  int64 labels, trained on by a two-layer MLP classifier (written here
  with onnx.helper) for --steps steps;
- small: --small-samples rows of f32 [12] and labels (56 bytes a sample,
  which the runtime holds in memory rather than read with a system call
  each), an MLP of batch 4,096, for 10 x --steps steps: the wall time is
  mostly the batches' reading.

The contenders: this build reading the data through when it opens it
(`--data-cache none`, "trainc"), this build again with the data cache
filled by a run before the rounds ("cached": the opening pass's checks
and hash come from it, as at a resume), and the other build if given.
Each build compiles its own executables with its own trainc. Every round
runs each contender once on each kind, interleaved, as a fresh process
under /usr/bin/time; the report gives each run's peak RSS (what the
process held, data included) and wall time (opening the data and
training), the medians over rounds and the ratios to "trainc". The files
are written once and are warm in the page cache after the first round,
unless --cold drops the page cache before every run (root only: what a
disk adds). Losses are compared between the contenders (the same data
and executables must train alike) and a difference is an error. Exits
non-zero when a run fails.
"""
import argparse
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
SHARED = os.path.join(os.path.dirname(REPO), 'shared', 'data')


def write_tokens(path, count):
    rng = np.random.default_rng(0)
    with open(path, 'wb') as f:
        f.write(b'TRAINCTK' + struct.pack('<IIQ', 1, 2, count))
        left = count
        while left:  # in pieces: the file may be larger than this process wants to hold
            n = min(left, 1 << 26)
            rng.integers(0, 128, n, dtype=np.uint16).tofile(f)
            left -= n


def write_samples(path, count):
    from safetensors.numpy import save_file
    rng = np.random.default_rng(1)
    x = rng.standard_normal((count, 3, 32, 32), dtype=np.float32)
    labels = rng.integers(0, 10, count).astype(np.int64)
    save_file({'x': x, 'labels': labels}, path)


def write_small_samples(path, count):
    from safetensors.numpy import save_file
    rng = np.random.default_rng(3)
    save_file({'x': rng.standard_normal((count, 12), dtype=np.float32),
               'labels': rng.integers(0, 10, count).astype(np.int64)}, path)


def write_mlp(path, batch, shape=(3, 32, 32)):
    rng = np.random.default_rng(2)
    features = int(np.prod(shape))
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for a, n in (
        (rng.normal(0, 0.02, (features, 64)), 'w1'), (np.zeros(64), 'b1'),
        (rng.normal(0, 0.1, (64, 10)), 'w2'), (np.zeros(10), 'b2'))]
    nodes = [helper.make_node('Flatten', ['x'], ['xf'], axis=1),
             helper.make_node('MatMul', ['xf', 'w1'], ['a']),
             helper.make_node('Add', ['a', 'b1'], ['ab']),
             helper.make_node('Relu', ['ab'], ['h']),
             helper.make_node('MatMul', ['h', 'w2'], ['c']),
             helper.make_node('Add', ['c', 'b2'], ['logits']),
             helper.make_node('SoftmaxCrossEntropyLoss', ['logits', 'labels'], ['loss'],
                              reduction='mean')]
    inputs = [helper.make_tensor_value_info('x', TensorProto.FLOAT, [batch, *shape]),
              helper.make_tensor_value_info('labels', TensorProto.INT64, [batch])]
    graph = helper.make_graph(nodes, 'mlp', inputs,
                              [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), path)


def run(cmd, env, what):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f'{what} failed ({r.returncode}): {" ".join(cmd)}\n{r.stdout}{r.stderr}')
    return r


def drop_page_cache():
    os.sync()
    try:
        with open('/proc/sys/vm/drop_caches', 'w') as f:
            f.write('1\n')
    except OSError as e:
        sys.exit(f'--cold: cannot drop the page cache ({e}); run as root')


def measured(bin_dir, extra, exe, data, steps, env, what, cold):
    """Peak RSS (MB), wall seconds, the logged losses and the data line of
    one run."""
    if cold:
        drop_page_cache()
    r = run(['/usr/bin/time', '-f', 'PEAK %M WALL %e',
             os.path.join(bin_dir, 'trainc-run'), exe, '--data', data,
             '--steps', str(steps), '--log-every', '1'] + extra, env, what)
    m = re.search(r'PEAK (\d+) WALL ([\d.]+)', r.stderr)
    if not m:
        sys.exit(f'{what}: no /usr/bin/time line in\n{r.stderr}')
    losses = re.findall(r'^step \d+: loss (\S+)', r.stdout, re.M)
    if len(losses) != steps:
        sys.exit(f'{what}: {len(losses)} step lines, not {steps}, in\n{r.stdout}')
    line = re.search(r'^data: .*$', r.stdout, re.M)
    return int(m.group(1)) / 1024.0, float(m.group(2)), losses, line.group(0) if line else ''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument('--trainc-bin-dir', default=os.path.join(REPO, 'build', 'bin'),
                    help='the build of trainc to measure')
    ap.add_argument('--baseline-bin-dir',
                    help='another build (its bin directory: trainc and trainc-run) to '
                         'run beside it, e.g. a worktree of an earlier commit')
    ap.add_argument('--tokens', type=int, default=500_000_000,
                    help='uint16 token ids in the token file (2 bytes each)')
    ap.add_argument('--samples', type=int, default=40_000,
                    help='images in the sample file (12,296 bytes each)')
    ap.add_argument('--small-samples', type=int, default=4_000_000,
                    help='rows in the small-sample file (56 bytes each)')
    ap.add_argument('--steps', type=int, default=20, help='steps per run')
    ap.add_argument('--rounds', type=int, default=3, help='interleaved rounds')
    ap.add_argument('--threads', type=int, default=2, help='TRAINC_NUM_THREADS')
    ap.add_argument('--work', help='where to write the data (default: a temporary '
                                   'directory, removed at the end)')
    ap.add_argument('--cold', action='store_true',
                    help='drop the page cache before every run (root only)')
    args = ap.parse_args()

    builds = [('trainc', args.trainc_bin_dir)]
    if args.baseline_bin_dir:
        builds.append(('baseline', args.baseline_bin_dir))
    env = dict(os.environ, TRAINC_NUM_THREADS=str(args.threads),
               OPENBLAS_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as temp:
        work = args.work or temp
        os.makedirs(work, exist_ok=True)
        tokens = os.path.join(work, 'tokens.tok')
        samples = os.path.join(work, 'images.safetensors')
        small = os.path.join(work, 'small.safetensors')
        print(f'writing {args.tokens:,} tokens, {args.samples:,} images and '
              f'{args.small_samples:,} small samples to {work}', flush=True)
        write_tokens(tokens, args.tokens)
        write_samples(samples, args.samples)
        write_small_samples(small, args.small_samples)
        write_mlp(os.path.join(work, 'mlp.onnx'), 32)
        write_mlp(os.path.join(work, 'small.onnx'), 4096, (12,))
        exes = {}
        for name, bin_dir in builds:
            for kind, model in (('tokens', os.path.join(SHARED, 'tinygpt', 'tied_erf',
                                                        'model_train_opset17.onnx')),
                                ('samples', os.path.join(work, 'mlp.onnx')),
                                ('small', os.path.join(work, 'small.onnx'))):
                exe = os.path.join(work, f'{name}-{kind}.tcx')
                run([os.path.join(bin_dir, 'trainc'), model, '--train', '-o', exe], env,
                    f'{name}: trainc {kind}')
                exes[name, kind] = exe
        data = {'tokens': tokens, 'samples': samples, 'small': small}
        steps = {'tokens': args.steps, 'samples': args.steps, 'small': 10 * args.steps}
        sizes = {k: os.path.getsize(p) / 1e6 for k, p in data.items()}
        # (name, bin directory, executables' build, trainc-run's extra flags)
        cache = os.path.join(work, 'cache')
        contenders = [('trainc', args.trainc_bin_dir, 'trainc', ['--data-cache', 'none']),
                      ('cached', args.trainc_bin_dir, 'trainc', ['--data-cache', cache])]
        if args.baseline_bin_dir:
            contenders.append(('baseline', args.baseline_bin_dir, 'baseline', []))
        # The cache stores no file changed in the second before its read.
        time.sleep(1.5)
        for kind in data:
            measured(args.trainc_bin_dir, contenders[1][3], exes['trainc', kind],
                     data[kind], 1, env, f'filling the data cache for {kind}', False)
        results = {}
        for r in range(args.rounds):
            for kind in data:
                for name, bin_dir, build, extra in contenders:
                    peak, wall, losses, line = measured(
                        bin_dir, extra, exes[build, kind], data[kind], steps[kind], env,
                        f'{name} on {kind}', args.cold)
                    if name == 'cached' and 'from the data cache' not in line:
                        sys.exit(f'cached on {kind}: the data cache was not used: {line}')
                    results.setdefault((name, kind), []).append((peak, wall, losses))
                    print(f'round {r + 1}: {kind:8s} {name:9s} peak RSS {peak:8.1f} MB  '
                          f'wall {wall:6.2f} s', flush=True)
        failed = False
        print()
        for kind in data:
            print(f'{kind} ({sizes[kind]:,.0f} MB of data, {steps[kind]} steps'
                  f'{", page cache dropped before each run" if args.cold else ""}):')
            base = results['trainc', kind]
            for name, _, _, _ in contenders:
                runs = results[name, kind]
                peak = statistics.median(p for p, _, _ in runs)
                wall = statistics.median(w for _, w, _ in runs)
                ratio = ''
                if name != 'trainc':
                    ratio = (f'  ({peak / statistics.median(p for p, _, _ in base):.2f}x '
                             f'the RSS, {wall / statistics.median(w for _, w, _ in base):.2f}x '
                             f'the wall time of trainc)')
                    if runs[0][2] != base[0][2]:
                        print(f'  {name}: losses differ from trainc\'s: {runs[0][2][:3]} ... '
                              f'against {base[0][2][:3]} ...')
                        failed = True
                print(f'  {name:9s} median peak RSS {peak:8.1f} MB, wall {wall:6.2f} s{ratio}')
        sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
