#!/usr/bin/env python3
"""Benchmark: tinygpt's forward pass (logits and loss) on this CPU, trainc
against onnxruntime, in one script run so both see the same machine state.

    python3 tools/bench_forward.py [--build build] [--repeat 200]

Needs onnxruntime (pip install onnxruntime); uses the stored tinygpt models
and batch in ../shared/data/tinygpt. trainc's time is trainc-run's median
per-run time (process start and file loading excluded, as for onnxruntime,
whose session is created once). Prints each median and the ratio.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--build', default=os.path.join(repo, 'build'))
    parser.add_argument('--data', default=os.path.join(repo, '..', 'shared', 'data', 'tinygpt'))
    parser.add_argument('--variant', default='tied_erf')
    parser.add_argument('--repeat', type=int, default=200)
    parser.add_argument('--threads', type=int, default=os.cpu_count())
    args = parser.parse_args()
    try:
        import onnxruntime as ort
    except ImportError:
        sys.exit('bench_forward.py needs onnxruntime: pip install onnxruntime')

    model = os.path.join(args.data, args.variant, 'model_train_opset17.onnx')
    raw = os.path.join(args.data, args.variant, 'raw_f32')
    tokens = np.fromfile(os.path.join(raw, 'tokens.bin'), dtype='<i8').reshape(2, 32)
    targets = np.fromfile(os.path.join(raw, 'targets.bin'), dtype='<i8').reshape(2, 32)

    env = dict(os.environ, TRAINC_NUM_THREADS=str(args.threads))
    with tempfile.TemporaryDirectory() as work:
        exe = os.path.join(work, 'model.tcx')
        subprocess.run([os.path.join(args.build, 'bin', 'trainc'), model, '-o', exe], check=True)
        out = subprocess.run([os.path.join(args.build, 'bin', 'trainc-run'), exe,
                              '--input', f'tokens={raw}/tokens.bin',
                              '--input', f'targets={raw}/targets.bin',
                              '--output-dir', work, '--repeat', str(args.repeat)],
                             check=True, capture_output=True, text=True, env=env).stdout
        trainc_ms = float(re.search(r'median ([0-9.]+) ms', out).group(1))
        trainc_loss = float(np.load(os.path.join(work, 'loss.npy')))

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(model, options, providers=['CPUExecutionProvider'])
    feeds = {'tokens': tokens, 'targets': targets}
    for _ in range(10):
        session.run(None, feeds)
    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        logits, loss = session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    ort_ms = float(np.median(times))
    print(f'tinygpt {args.variant} forward (batch 2 x seq 32), {args.threads} threads, '
          f'median of {args.repeat}:')
    print(f'  trainc      {trainc_ms:8.3f} ms   loss {trainc_loss:.7f}')
    print(f'  onnxruntime {ort_ms:8.3f} ms   loss {float(loss):.7f}  ({ort.__version__})')
    print(f'  ratio trainc / onnxruntime = {trainc_ms / ort_ms:.2f}')


if __name__ == '__main__':
    main()
