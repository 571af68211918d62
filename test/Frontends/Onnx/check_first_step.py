#!/usr/bin/env python3
"""Checks trainc-run's first training step against a PyTorch reference.

Usage: trainc-run ... --steps 1 | check_first_step.py REFERENCE.json CASE

REFERENCE.json maps CASE to PyTorch's {"loss", "grad_norm"} on the same
batch (tools/hf_models/export_causal.py). Both must agree to 1e-5
relative: a float32 step of these 2-layer models is within about 1e-6 of
float64 (about ten roundings deep), while a causal mask shifted by one key
(the diagonal hidden, or one later key shown) moves GPT-2's loss on this
batch by 4.2e-4 and 2.1e-4 relative. Prints both and exits 1 on a mismatch
or when no step line is found.
"""
import json
import re
import sys

TOLERANCE = 1e-5


def main(reference_path, case):
    want = json.load(open(reference_path, encoding='utf-8'))[case]
    text = sys.stdin.read()
    step = re.search(r'^step 1: \S+ ([0-9.eE+-]+) grad_norm ([0-9.eE+-]+)', text, re.M)
    if not step:
        print(f'{case}: no "step 1:" line in trainc-run\'s output:\n{text}')
        return 1
    got = {'loss': float(step.group(1)), 'grad_norm': float(step.group(2))}
    bad = False
    for key in ('loss', 'grad_norm'):
        error = abs(got[key] - want[key]) / abs(want[key])
        print(f'{case}: {key} {got[key]!r} against PyTorch {want[key]!r}: relative {error:.1e}')
        bad |= not error <= TOLERANCE
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
