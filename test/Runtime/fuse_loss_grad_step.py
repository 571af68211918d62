#!/usr/bin/env python3
"""A cross-entropy loss and its logits gradient as one instruction
(trainc-fuse-loss-grad) change no bit of the training, and the logged loss
by no more than the order of one sum.

For GPTs written by tools/make_gpt.py in f32, bf16 and fp16, with
`--recompute full` and with `--grad-accum 2` (a fused pair per
micro-batch), and for Hugging Face GPT-2 and BERT from test/Models/hf
(BERT's masked positions: the ignored index), compiles the AdamW training
step with `--fuse-loss-grad` (the default) and `--fuse-loss-grad=false` and
checks:

- fused, the step has softmax_cross_entropy_and_grad instructions and
  neither softmax_cross_entropy nor softmax_cross_entropy_grad, one
  instruction fewer per pair; unfused, none, so the comparison is not
  vacuous;
- the liveness bound of the fused step's activations is at most the
  other's (the gradient still takes the logits' memory);
- 12 AdamW steps on the same batch: the gradient norm and loss scale at
  every step and the checkpoint after the last step byte for byte the
  same, and the loss within the bound below.

The fused kernel's gradient is the gradient kernel's, row by row, so the
parameters must not move by a bit. Its loss takes that softmax's max and
sum of exps, which the loss kernel adds in the same order
(math/SoftmaxSum.h's 128 partial sums), so the loss must be bit for bit
too, for any number of classes. Prints one line per case; exits 1 on any
failure.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))
sys.path.insert(0, HERE)
import make_gpt  # noqa: E402
from fused_elementwise_step import (grad_accum_case, hf_case, live_bound,  # noqa: E402
                                    make_gpt_cases, run, runs_with,
                                    step_test_main, verdict)

def inspect(args, exe):
    """(instructions, losses, gradients, fused pairs, the fused pairs'
    (classes, positions), liveness bound) of an executable."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    if not count:
        raise RuntimeError('no instruction count in --inspect')
    losses = len(re.findall(r'= softmax_cross_entropy\(', out))
    grads = len(re.findall(r'= softmax_cross_entropy_grad\(', out))
    shapes = {m.group(1): [int(d) for d in m.group(2).split(',') if d.strip()]
              for m in re.finditer(r'^\s+(%\d+) \w+\s+\w+\s+\[([\d, ]*)\]', out, re.M)}
    pairs = []
    for m in re.finditer(r'= softmax_cross_entropy_and_grad\((%\d+), (%\d+), %\d+\) '
                         r'ints=\[-?\d+, -?\d+, -?\d+, (\d+)\]', out):
        positions = 1
        for d in shapes[m.group(2)]:
            positions *= d
        pairs.append((int(m.group(3)), positions))
    return int(count.group(1)), losses, grads, pairs, live_bound(out)


def check(args, name, model, inputs, extra, work):
    runs = runs_with(args, name, model, inputs, extra, work, 'fuse-loss-grad',
                     ('true', 'false'), inspect)
    (count, losses, grads, pairs, live), trained = runs['true']
    (plain_count, plain_losses, plain_grads, plain_pairs, plain_live), plain_trained = \
        runs['false']
    problems = []
    if not pairs or losses or grads or plain_pairs or plain_losses != len(pairs) \
            or plain_grads != len(pairs) or plain_count - count != len(pairs):
        problems.append(f'{len(pairs)} fused pairs, {losses} losses and {grads} '
                        f'gradients left; unfused {plain_losses} and {plain_grads}; '
                        f'{plain_count} -> {count} instructions')
    classes = max((c for c, _ in pairs), default=0)
    worst = max((abs(a['loss'] - b['loss'])
                 for a, b in zip(trained[0], plain_trained[0])), default=0.0)
    return verdict(name, problems, live, plain_live, trained, plain_trained,
                   f'{plain_count} -> {count} instructions ({len(pairs)} fused '
                   f'pairs, {classes} classes); largest loss difference '
                   f'{worst:.3g}; most live activations {plain_live} -> {live} bytes')


def cases(args, work):
    runs, inputs = make_gpt_cases(work)
    runs.append(grad_accum_case(work, inputs))
    # 1,001 classes, padded to 1,024: rows of several spans of 128 and a
    # partial one.
    cfg = make_gpt.GptConfig(vocab=1001, seq=16, batch=2, d_model=32, heads=2, layers=2)
    path, batch = make_gpt.write_model_and_batch(cfg, work, 'gpt_v1001')
    runs += [(f'make_gpt_vocab1001_{p}', path, batch, ('--precision', p))
             for p in ('f32', 'bf16')]
    return runs + [hf_case(args.hf_dir, model, exporter, precision)
                   for model, exporter, precision in (('gpt2', 'ts17', 'f32'),
                                                      ('gpt2', 'dynamo', 'bf16'),
                                                      ('bert', 'dynamo', 'f32'))]


if __name__ == '__main__':
    sys.exit(step_test_main('fuse_loss_grad_step', __doc__.splitlines()[0], check, cases))
