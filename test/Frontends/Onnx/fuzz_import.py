#!/usr/bin/env python3
"""Robustness of trainc's ONNX importer on corrupted model files.

From the bytes of a real model (--model) it derives, deterministically from
--seed:
  - the empty file;
  - a plain-text file that is not ONNX;
  - --count/2 truncated copies: lengths 1, 10, 100 and len-1, then random
    lengths;
  - --count/2 copies with 1 to 8 random bits flipped;
and imports each (`trainc CASE.onnx --compile-to=import -o /dev/null`, 60 s
timeout). Whatever the bytes, trainc must either accept the file (exit 0) or
reject it with a diagnostic (exit 1, stderr holding "trainc: error:"). Anything
else is a crash: a signal, another exit status, a timeout, or a rejection
whose stderr lacks "trainc: error:" or shows an assertion, a stack dump,
"LLVM ERROR" or an uncaught C++ exception ("terminate called"). Besides, the
empty file must be rejected with a message mentioning "empty", and the text
file and the truncations to 1, 10 and 100 bytes must be rejected.

Prints `fuzz: N cases, A rejected cleanly, B accepted, C crashed`, then each
crash and each broken expectation with its case and a reproduction command;
crashing inputs are kept in a directory that the output names. Exits 1 on any
crash or broken expectation, 0 otherwise.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

TIMEOUT_S = 60
CRASH_MARKERS = ('Assertion', 'Stack dump', 'LLVM ERROR', 'terminate called')
TEXT = b'This is not an ONNX model.\nJust some plain text, 42 and 3.14.\n'
FIXED_TRUNCATIONS = (1, 10, 100)


class Case:
    """One input file: what it is, its bytes, and what trainc must do."""

    def __init__(self, name, description, data, must_fail=False,
                 must_mention=None):
        self.name = name
        self.description = description
        self.data = data
        self.must_fail = must_fail
        self.must_mention = must_mention


def make_cases(model, seed, count):
    rng = random.Random(seed)
    cases = [Case('empty', 'empty file', b'', must_fail=True,
                  must_mention='empty'),
             Case('text', 'plain text file', TEXT, must_fail=True)]

    lengths = [n for n in FIXED_TRUNCATIONS + (len(model) - 1,)
               if 0 < n < len(model)]
    while len(lengths) < count // 2:
        lengths.append(rng.randrange(1, len(model)))
    for i, n in enumerate(lengths[:count // 2]):
        cases.append(Case(f'trunc{i:03d}', f'truncated to {n} of {len(model)} bytes',
                          model[:n], must_fail=n in FIXED_TRUNCATIONS))

    for i in range(count - count // 2):
        data = bytearray(model)
        bits = sorted(rng.sample(range(len(model) * 8), rng.randint(1, 8)))
        for bit in bits:
            data[bit // 8] ^= 1 << (bit % 8)
        where = ', '.join(f'{bit // 8}:{bit % 8}' for bit in bits)
        cases.append(Case(f'flip{i:03d}', f'bits flipped at byte:bit {where}',
                          bytes(data)))
    return cases


def run_case(trainc, path):
    """Returns (kind, why, stderr): kind is rejected, accepted or crashed, and
    why says what made a run a crash."""
    try:
        proc = subprocess.run([trainc, path, '--compile-to=import', '-o', os.devnull],
                              capture_output=True, text=True, errors='replace',
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 'crashed', f'timed out after {TIMEOUT_S} s', ''
    if proc.returncode == 0:
        return 'accepted', None, proc.stderr
    if proc.returncode != 1:
        return 'crashed', f'exit status {proc.returncode}', proc.stderr
    marker = next((m for m in CRASH_MARKERS if m in proc.stderr), None)
    if marker:
        return 'crashed', f'exit status 1, stderr shows {marker!r}', proc.stderr
    if 'trainc: error:' not in proc.stderr:
        return 'crashed', "exit status 1 without 'trainc: error:'", proc.stderr
    return 'rejected', None, proc.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--model', required=True, help='a valid ONNX model')
    parser.add_argument('--seed', type=int, default=1234)
    parser.add_argument('--count', type=int, default=120,
                        help='truncated plus bit-flipped cases (default 120)')
    args = parser.parse_args()

    with open(args.model, 'rb') as f:
        model = f.read()
    if len(model) < 2:
        sys.exit(f'{args.model}: too small to fuzz')
    trainc = os.path.abspath(args.trainc)

    counts = {'rejected': 0, 'accepted': 0, 'crashed': 0}
    reports = []
    kept_dir = None
    with tempfile.TemporaryDirectory(prefix='trainc-fuzz-') as work_dir:
        for case in make_cases(model, args.seed, args.count):
            path = os.path.join(work_dir, case.name + '.onnx')
            with open(path, 'wb') as f:
                f.write(case.data)
            kind, why, stderr = run_case(trainc, path)
            counts[kind] += 1

            problems = []
            if kind == 'crashed':
                problems.append(f'CRASH ({why})')
            elif case.must_fail and kind == 'accepted':
                problems.append('accepted, but must be rejected')
            elif case.must_mention and case.must_mention not in stderr:
                problems.append(f'rejected without mentioning {case.must_mention!r}')
            if not problems:
                continue
            if kept_dir is None:
                kept_dir = tempfile.mkdtemp(prefix='trainc-fuzz-kept-')
            kept = os.path.join(kept_dir, case.name + '.onnx')
            shutil.copyfile(path, kept)
            reports.append(f'{case.name} ({case.description}): {"; ".join(problems)}\n'
                           f'  reproduce: {trainc} {kept} --compile-to=import -o /dev/null\n'
                           + ''.join(f'  | {line}\n' for line in stderr.splitlines()))

    print(f'fuzz: {sum(counts.values())} cases, {counts["rejected"]} rejected '
          f'cleanly, {counts["accepted"]} accepted, {counts["crashed"]} crashed')
    if kept_dir:
        print(f'failing inputs kept in {kept_dir}')
    for report in reports:
        print(report, end='')
    return 1 if reports else 0


if __name__ == '__main__':
    sys.exit(main())
