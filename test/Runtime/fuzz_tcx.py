#!/usr/bin/env python3
"""Robustness of trainc-run on corrupted executables.

From a real executable (--model, with its inputs) it derives,
deterministically from --seed: the empty file, a text file, truncations
(1, 10, 100 bytes, the FlatBuffer without its constant section, one byte
short, and random lengths) and copies with 1 to 8 bits flipped, mostly in
the FlatBuffer part where a flip changes the program rather than a weight.
Each is run with `trainc-run CASE.tcx --input ...` (60 s timeout).

Whatever the bytes, trainc-run must exit 0 (a benign flip) or 1 with
"trainc-run: error:" on stderr; a signal, another exit status, a timeout or
a crash marker ("Assertion", "Stack dump", "terminate called",
"Segmentation") is a crash. The empty file, the text file and the short
truncations must be rejected. Exits 1 on any crash or broken expectation.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

TIMEOUT_S = 60
CRASH_MARKERS = ('Assertion', 'Stack dump', 'terminate called', 'Segmentation')


def flatbuffer_size(trainc_run, model):
    """Where the constant section starts, from `trainc-run --inspect`."""
    out = subprocess.run([trainc_run, model, '--inspect'], capture_output=True,
                         text=True, check=True).stdout
    return int(re.search(r'constant section: offset (\d+)', out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--model', required=True)
    parser.add_argument('--input', action='append', default=[],
                        help='NAME=FILE, passed through to trainc-run')
    parser.add_argument('--seed', type=int, default=1234)
    parser.add_argument('--count', type=int, default=120)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    data = open(args.model, 'rb').read()
    head = flatbuffer_size(args.trainc_run, args.model)
    cases = [('empty file', b'', True), ('text file', b'not a trainc executable\n' * 4, True)]
    for n in (1, 10, 100):
        cases.append((f'truncated to {n} bytes', data[:n], True))
    cases.append(('truncated to the FlatBuffer', data[:head], False))
    cases.append(('one byte short', data[:-1], False))
    for _ in range(args.count // 2 - 5):
        n = rng.randrange(1, len(data))
        cases.append((f'truncated to {n} bytes', data[:n], False))
    for _ in range(args.count // 2):
        corrupt = bytearray(data)
        flips = []
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(head) if rng.random() < 0.9 else rng.randrange(len(data))
            bit = rng.randrange(8)
            corrupt[pos] ^= 1 << bit
            flips.append(f'{pos}:{bit}')
        cases.append((f'bits flipped at {" ".join(flips)}', bytes(corrupt), False))

    crashes, accepted, rejected = [], 0, 0
    keep = tempfile.mkdtemp(prefix='trainc-fuzz-tcx-')
    with tempfile.TemporaryDirectory() as work:
        for i, (what, blob, must_reject) in enumerate(cases):
            path = os.path.join(work, f'case{i}.tcx')
            with open(path, 'wb') as f:
                f.write(blob)
            cmd = [args.trainc_run, path, '--output-dir', work]
            for spec in args.input:
                cmd += ['--input', spec]
            try:
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
                rc, err = run.returncode, run.stderr
            except subprocess.TimeoutExpired:
                rc, err = None, 'timeout'
            problem = None
            if rc not in (0, 1) or any(m in err for m in CRASH_MARKERS):
                problem = f'exit {rc}: {err.strip()[:300]}'
            elif rc == 1 and 'trainc-run: error:' not in err:
                problem = f'rejected without a diagnostic: {err.strip()[:300]}'
            elif rc == 0 and must_reject:
                problem = 'accepted but must be rejected'
            if problem:
                kept = os.path.join(keep, f'case{i}.tcx')
                with open(kept, 'wb') as f:
                    f.write(blob)
                crashes.append(f'{what}: {problem}\n  reproduce: {" ".join(cmd[:1] + [kept] + cmd[2:])}')
            elif rc == 0:
                accepted += 1
            else:
                rejected += 1
    print(f'fuzz-tcx: {len(cases)} cases, {rejected} rejected cleanly, {accepted} accepted, '
          f'{len(crashes)} crashed')
    for c in crashes:
        print('CRASH', c)
    if not crashes:
        os.rmdir(keep)
    return 1 if crashes else 0


if __name__ == '__main__':
    sys.exit(main())
