#!/usr/bin/env python3
"""A GELU and its gradient computed in the matmul instructions around them
(trainc-fuse-gelu) change no bit of training on the CPU.

For GPTs written by tools/make_gpt.py (erf GELU) in f32, bf16 and fp16,
with `--recompute full` and with `--grad-accum 2`, one with `--gelu tanh`
(GPT-2's form, which tools/bench_gpu.py trains: its GELU must be recognized
as graph.gelu for the fusion to happen) in bf16, and for Hugging Face
GPT-2 (TorchScript and dynamo exports: tanh GELU) and BERT (erf GELU)
from test/Models/hf, compiles the AdamW training step with
`--fuse-gelu` (the default) and `--fuse-gelu=false` and checks:

- fused, the step has a dot_general_bias_gelu instruction per GELU and a
  dot_general_gelu_grad per GELU gradient of a product, as many fewer gelu and
  dot_general_bias instructions, and one instruction fewer in all for
  each fused op (the gradient's dot_general and its gelu_grad, or the
  loop holding it under mixed precision, become one); unfused, none, so
  the comparison is not vacuous;
- the liveness bound of the fused step's activations is at most the
  other's (the pre-activation is live for the gradient either way);
- 12 AdamW steps on the same batch: the JSONL's loss, gradient norm and
  loss scale bitwise equal at every step, and the checkpoint after the
  last step byte for byte the same.

The CPU kernels run the same GEMM and the same GELU (or GELU gradient) as
the instructions they replace, so anything but bit equality is a bug (the
results swapped, the gradient reading the GELU for the pre-activation, a
16-bit product widened before the gradient, the wrong approximation). Prints one line per case; exits 1 on any
failure.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fused_elementwise_step import (live_bound, lowering_cases, run,  # noqa: E402
                                    runs_with, step_test_main, verdict)
import make_gpt  # noqa: E402  (tools/, which fused_elementwise_step puts on the path)


def inspect(args, exe):
    """(instructions, gelus, dot_general_biases, dot_general_bias_gelus,
    dot_general_gelu_grads, liveness bound) of an executable."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    if not count:
        raise RuntimeError('no instruction count in --inspect')
    gelus = len(re.findall(r'= gelu\(', out))
    biases = len(re.findall(r'= dot_general_bias\(', out))
    fused = len(re.findall(r'= dot_general_bias_gelu\(', out))
    grads = len(re.findall(r'= dot_general_gelu_grad\(', out))
    return int(count.group(1)), gelus, biases, fused, grads, live_bound(out)


def check(args, name, model, inputs, extra, work):
    runs = runs_with(args, name, model, inputs, extra, work, 'fuse-gelu',
                     ('true', 'false'), inspect)
    (count, gelus, biases, fused, grads, live), trained = runs['true']
    (plain_count, plain_gelus, plain_biases, plain_fused, plain_grads,
     plain_live), plain_trained = runs['false']
    problems = []
    # A gradient fuses where its cotangent is a product (not BERT's head,
    # whose GELU feeds a norm), and under full recompute the forward's
    # clones fuse too: 0 < gradients <= GELUs.
    if fused == 0 or not 0 < grads <= fused or plain_fused + plain_grads != 0:
        problems.append(f'{fused} dot_general_bias_gelu and {grads} '
                        f'dot_general_gelu_grad instructions fused, '
                        f'{plain_fused + plain_grads} unfused')
    if (plain_gelus - gelus != fused or plain_biases - biases != fused or
            plain_count - count != fused + grads):
        problems.append(f'{plain_gelus} -> {gelus} gelus, {plain_biases} -> '
                        f'{biases} dot_general_biases and {plain_count} -> '
                        f'{count} instructions for {fused} + {grads} fused')
    return verdict(name, problems, live, plain_live, trained, plain_trained,
                   f'{plain_count} -> {count} instructions ({fused} GELUs and '
                   f'{grads} gradients in their matmuls); most live activations '
                   f'{plain_live} -> {live} bytes')


def cases(args, work):
    """lowering_cases and a make_gpt GPT with GPT-2's tanh GELU, bf16."""
    cfg = make_gpt.GptConfig(vocab=64, seq=16, batch=2, d_model=32, heads=2, layers=2,
                             gelu='tanh')
    path, inputs = make_gpt.write_model_and_batch(cfg, work, 'gpt_tanh')
    return lowering_cases(args, work) + [
        ('make_gpt_tanh_bf16', path, inputs, ('--precision', 'bf16'))]


if __name__ == '__main__':
    sys.exit(step_test_main('fuse_gelu_step', __doc__.splitlines()[0], check,
                           cases))
