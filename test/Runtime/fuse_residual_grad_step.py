#!/usr/bin/env python3
"""A residual stream's gradient added, and its 16-bit copy made, inside the
norms' backward instructions (trainc-fuse-norm-grad's residual-grad,
`--fuse-residual-grad`) change no bit of training on the CPU.

For GPTs written by tools/make_gpt.py (pre-norm blocks) in f32, bf16 and
fp16, with `--recompute full` and with `--grad-accum 2`, and for Hugging
Face GPT-2 (pre-norm) and BERT in f32 and bf16 (post-norm: the residual's
add comes after the norm's gradient is used, so only copies fold) from
test/Models/hf, compiles the AdamW training
step with `--fuse-residual-grad` (the default) and
`--fuse-residual-grad=false` and checks:

- fused, in the pre-norm models some norm_grad_params instructions take
  an addend (ints[3]) and, in 16 bits, write a narrowed copy (ints[4]);
  unfused, none take either, so the comparison is not vacuous;
- the step has no more instructions, and at most one fewer per addend and
  per copy (an add or a convert of their own gone; where a loop also held
  other ops, dropout's gradient, the loop stays, reading the sum or its
  copy instead of the add's operands);
- the liveness bound of the fused step's activations is at most the
  other's;
- 12 AdamW steps on the same batch: the JSONL's loss, gradient norm and
  loss scale bitwise equal at every step, and the checkpoint after the
  last step byte for byte the same.

The CPU kernel rounds the sum and the copy as the add and the convert it
replaces do, so anything but bit equality is a bug (the addend added to
the wrong tensor, a copy of the unsummed gradient, an in-place sum that
overwrote an addend still to be read). Prints one line per case; exits 1
on any failure.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fused_elementwise_step import (hf_case, live_bound, lowering_cases,  # noqa: E402
                                    run, runs_with, step_test_main, verdict)


def inspect(args, exe):
    """(instructions, norm_grad_params with an addend, with a narrowed copy,
    a 16-bit float in the step, liveness bound) of an executable."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    if not count:
        raise RuntimeError('no instruction count in --inspect')
    flags = [(int(a), int(b)) for a, b in re.findall(
        r'= norm_grad_params\(.*?\) ints=\[-?\d+, \d+, \d+, (\d+), (\d+)\]', out)]
    if not flags:
        raise RuntimeError('no norm_grad_params instruction')
    addends = sum(a for a, _ in flags)
    copies = sum(b for _, b in flags)
    narrow = re.search(r'^\s+%\d+ \w+\s+(bf16|f16) ', out, re.M) is not None
    return int(count.group(1)), addends, copies, narrow, live_bound(out)


def check(args, name, model, inputs, extra, work):
    runs = runs_with(args, name, model, inputs, extra, work, 'fuse-residual-grad',
                     ('true', 'false'), inspect)
    (count, addends, copies, narrow, live), trained = runs['true']
    (plain_count, plain_addends, plain_copies, _, plain_live), plain_trained = \
        runs['false']
    problems = []
    pre_norm = 'bert' not in name  # BERT adds the residual before its norm
    if pre_norm and (addends == 0 or (narrow and copies == 0)):
        problems.append(f'{addends} addends and {copies} copies fused')
    if plain_addends or plain_copies:
        problems.append(f'{plain_addends} addends and {plain_copies} copies unfused')
    if not 0 <= plain_count - count <= addends + copies:
        problems.append(f'{plain_count} -> {count} instructions for {addends} '
                        f'addends and {copies} copies')
    return verdict(name, problems, live, plain_live, trained, plain_trained,
                   f'{plain_count} -> {count} instructions ({addends} residual '
                   f'gradients and {copies} 16-bit copies in norm gradients); '
                   f'most live activations {plain_live} -> {live} bytes')


def cases(args, work):
    """The lowering cases and BERT in bf16, where only 16-bit copies fold."""
    return lowering_cases(args, work) + [hf_case(args.hf_dir, 'bert', 'dynamo', 'bf16')]


if __name__ == '__main__':
    sys.exit(step_test_main('fuse_residual_grad_step', __doc__.splitlines()[0], check,
                           cases))
