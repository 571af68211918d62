#!/usr/bin/env python3
"""Checks trainc-run's first training step against a PyTorch reference.

Usage: trainc-run ... --steps 1 | check_first_step.py REFERENCE.json CASE

REFERENCE.json maps CASE to PyTorch's {"loss", "grad_norm"} on the same
batch (tools/hf_models/export_causal.py and export_padding.py: the model
in float64, its loss float32 as Hugging Face's causal-LM loss takes the
logits to float32, the gradient norm float64). Both must agree to 1e-5
relative: trainc's float32 step of these 2-layer models agrees to 4e-8
(measured), and float32 roundings about ten deep stay near 1e-6, while a
causal mask shifted by one key (the diagonal hidden, or one later key
shown) moves GPT-2's loss on hf_causal's batch by 4.2e-4 and 2.1e-4
relative, and hf_padding's rows of padding alone taken 1 per key (a
log-sum-exp taken as it is) move its gradient norm by 30%. The loss is
the executable's output named `loss`. Prints both and exits 1 on a
mismatch or when no step line is found.
"""
import json
import re
import sys

TOLERANCE = 1e-5


def main(reference_path, case):
    with open(reference_path, encoding='utf-8') as f:
        want = json.load(f)[case]
    text = sys.stdin.read()
    step = re.search(r'^step 1: loss (\S+) grad_norm (\S+)', text, re.M)
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
