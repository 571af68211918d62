#!/usr/bin/env python3
"""Bias gradients summed by their weight gradients' matmuls
(trainc-fuse-bias-grad) change no bit of training on the CPU.

For GPTs written by tools/make_gpt.py (x @ w^T + b: the output's gradient
is the weight gradient's lhs) in f32, bf16 (the sums widened to f32) and
fp16, with `--recompute full` and with `--grad-accum 2`, and for Hugging
Face GPT-2 (Conv1D,
x @ w + b: the gradient is the rhs) and BERT from test/Models/hf, compiles
the AdamW training step with `--fuse-bias-grad` (the default) and
`--fuse-bias-grad=false` and checks:

- fused, the step has dot_general_bias_grad instructions and as many
  fewer reduce_sum instructions and instructions in all; unfused, none,
  so the comparison is not vacuous;
- the liveness bound of the fused step's activations is at most the
  other's;
- 12 AdamW steps on the same batch: the JSONL's loss, gradient norm and
  loss scale bitwise equal at every step, and the checkpoint after the
  last step byte for byte the same.

The CPU kernel runs the same GEMM and the same reduction as the two
instructions it replaces, so anything but bit equality is a bug (a sum
of the wrong operand or over the wrong dims, a widened sum rounded to 16
bits). Prints one line per case; exits 1 on any failure.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fused_elementwise_step import (live_bound, lowering_cases, run,  # noqa: E402
                                    runs_with, step_test_main, verdict)


def inspect(args, exe):
    """(instructions, reduce_sums, dot_general_bias_grads, liveness bound)
    of an executable."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    if not count:
        raise RuntimeError('no instruction count in --inspect')
    sums = len(re.findall(r'= reduce_sum\(', out))
    fused = len(re.findall(r'= dot_general_bias_grad\(', out))
    return int(count.group(1)), sums, fused, live_bound(out)


def check(args, name, model, inputs, extra, work):
    runs = runs_with(args, name, model, inputs, extra, work, 'fuse-bias-grad',
                     ('true', 'false'), inspect)
    (count, sums, fused, live), trained = runs['true']
    (plain_count, plain_sums, plain_fused, plain_live), plain_trained = runs['false']
    problems = []
    if fused == 0 or plain_fused != 0:
        problems.append(f'{fused} dot_general_bias_grad instructions fused, '
                        f'{plain_fused} unfused')
    if plain_sums - sums != fused or plain_count - count != fused:
        problems.append(f'{plain_sums} -> {sums} reduce_sums and {plain_count} -> '
                        f'{count} instructions for {fused} fused')
    return verdict(name, problems, live, plain_live, trained, plain_trained,
                   f'{plain_count} -> {count} instructions ({fused} bias gradients '
                   f'in their matmuls); most live activations {plain_live} -> '
                   f'{live} bytes')


if __name__ == '__main__':
    sys.exit(step_test_main('fuse_bias_grad_step', __doc__.splitlines()[0], check,
                           lowering_cases))
