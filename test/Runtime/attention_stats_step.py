#!/usr/bin/env python3
"""Attention's gradient reading its forward's log-sum-exps
(trainc-attention-stats) trains as the gradient that remakes them.

For GPTs written by tools/make_gpt.py in f32, bf16 and fp16, with
`--recompute full` (the gradient reads the recomputed forward's) and with
`--grad-accum 2` (a pair per micro-batch), and for Hugging Face GPT-2 and
BERT from test/Models/hf (BERT's padding mask), compiles the AdamW training
step with `--attention-stats` (the default) and `--attention-stats=false`
and checks:

- with it, every attention_grad instruction reads statistics (ints[5] = 1)
  and as many attentions keep them; without it, none; the instruction
  counts are the same;
- the planned activations grow by at most the log-sum-exps' bytes (the
  forward's result is live until the gradient anyway: its output
  projection's weight gradient reads it), and under `--recompute full` by
  one attention result more: the remade forward's result, which died at
  that weight gradient, lives on until the attention's gradient (the
  liveness bound of the 2-layer bf16 case grows by 2,304 bytes, a
  2,048-byte result and a layer's 256 bytes of log-sum-exps, with
  trainc-fuse-gelu or without; the planner's placement hid it until that
  fusion moved the plan);
- 12 AdamW steps on the same batch: the first step's loss bit for bit the
  same (the forward computes the same bits, keeping its statistics or
  not), and every step's loss and gradient norm within the bounds below.

The gradient's probabilities are exp(S - lse) instead of exp(S - max) /
sum: a few units in the last place of the compute type apart per element,
which the gradients pass on. So every step's loss and gradient norm must
agree to a relative REL[precision]: in f32 1e-5, about a hundred f32
roundings (the largest difference seen is 5e-7, after 12 AdamW steps have
carried the gradients' differences into the parameters); in bf16 and fp16
2^-7, two 16-bit roundings tipped the other way (the largest seen is
1e-3: a few-ulp difference in f32 tips some 16-bit roundings of the
activations and gradients). A log-sum-exp off by 1% (the probabilities
1% off) moves them by far more: with the CPU kernel's log-sum-exps
shifted by 0.01 by hand, every case failed (losses 4e-5 to 4e-3 and
gradient norms 1e-3 to 4e-2 apart). Prints one line per case, with the
largest differences seen; exits 1 on any failure.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fused_elementwise_step import (DTYPE_BYTES, lowering_cases, run,  # noqa: E402
                                    runs_with, step_test_main)


def inspect(args, exe):
    """(instructions, attentions keeping statistics, gradients reading
    them, gradients in all, the statistics' bytes, the largest attention
    result's bytes, planned activations)."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    planned = re.search(r'^memory plan: .*activations (\d+),', out, re.M)
    if not count or not planned:
        raise RuntimeError('no instruction count or memory plan in --inspect')
    types = {m.group(1): (m.group(2), [int(d) for d in m.group(3).split(',') if d.strip()])
             for m in re.finditer(r'^\s+(%\d+) \w+\s+(\w+)\s+\[([\d, ]*)\]', out, re.M)}
    keeping = reading = grads = lse_bytes = result_bytes = 0

    def size(tensor):
        dtype, dims = types[tensor]
        n = DTYPE_BYTES[dtype]
        for d in dims:
            n *= d
        return n
    for m in re.finditer(r'^\s+\d+: (.*?) = (attention|attention_grad)\(.*?\) '
                         r'ints=\[(-?\d+(?:, -?\d+)*)\]', out, re.M):
        stats = [int(x) for x in m.group(3).split(',')][5] == 1
        if m.group(2) == 'attention_grad':
            grads += 1
            reading += stats
        elif stats:
            keeping += 1
            results = m.group(1).split(', ')
            lse_bytes += size(results[1])
            result_bytes = max(result_bytes, size(results[0]))
    return (int(count.group(1)), keeping, reading, grads, lse_bytes, result_bytes,
            int(planned.group(1)))


REL = {'f32': 1e-5, 'bf16': 2.0 ** -7, 'fp16': 2.0 ** -7}


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def check(args, name, model, inputs, extra, work):
    precision = extra[extra.index('--precision') + 1]
    runs = runs_with(args, name, model, inputs, extra, work, 'attention-stats',
                     ('true', 'false'), inspect)
    (count, keeping, reading, grads, lse_bytes, result_bytes, live), (log, _) = \
        runs['true']
    (plain_count, plain_keeping, plain_reading, plain_grads, _, _, plain_live), \
        (plain_log, _) = runs['false']
    problems = []
    if not grads or reading != grads or keeping != grads or plain_keeping \
            or plain_reading or plain_grads != grads or count != plain_count:
        problems.append(f'{keeping} attentions keep and {reading} of {grads} gradients '
                        f'read statistics; without: {plain_keeping} and {plain_reading} '
                        f'of {plain_grads}; {plain_count} -> {count} instructions')
    remade = result_bytes if 'full' in extra else 0
    if live > plain_live + lse_bytes + remade:
        problems.append(f'planned activations {plain_live} -> {live} bytes, more than '
                        f'the {lse_bytes} bytes of log-sum-exps'
                        + (f' and a remade result\'s {remade}' if remade else ''))
    if len(log) != len(plain_log) or not log:
        problems.append(f'{len(log)} and {len(plain_log)} logged steps')
    elif log[0]['loss'] != plain_log[0]['loss']:
        problems.append(f'step 1 loss {log[0]["loss"]!r} != {plain_log[0]["loss"]!r}')
    worst_loss = worst_norm = 0.0
    for a, b in zip(log, plain_log):
        worst_loss = max(worst_loss, relative(a['loss'], b['loss']))
        worst_norm = max(worst_norm, relative(a['grad_norm'], b['grad_norm']))
    if max(worst_loss, worst_norm) > REL[precision]:
        problems.append(f'losses {worst_loss:.3g} and gradient norms {worst_norm:.3g} '
                        f'apart relatively, above {REL[precision]:.3g}')
    if problems:
        print(f'{name}: FAIL ' + '; '.join(problems[:4]))
        return False
    print(f'{name}: {grads} gradients read their forwards\' statistics; step 1 loss '
          f'bitwise equal; over {len(log)} steps '
          f'losses {worst_loss:.2g}, gradient norms {worst_norm:.2g} apart (relative); '
          f'planned activations {plain_live} -> {live} bytes '
          f'(+{lse_bytes} of log-sum-exps)')
    return True


if __name__ == '__main__':
    sys.exit(step_test_main('attention_stats_step', __doc__.splitlines()[0], check,
                           lowering_cases))
