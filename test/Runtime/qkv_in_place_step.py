#!/usr/bin/env python3
"""Attention reading a fused projection in place (trainc-read-qkv-in-place)
changes no bit of training.

For GPTs written by tools/make_gpt.py (one c_attn matmul sliced into query,
key and value) in f32, bf16 and fp16 and with `--recompute full` (the
remade forward reads in place too), and for Hugging Face GPT-2
(TorchScript export) and MPT (both exporters) from test/Models/hf,
compiles the AdamW training step with `--qkv-in-place` (the default) and
`--qkv-in-place=false` and checks:

- in place, every attention and attention_grad instruction reads qkv
  windows (ints[3..4] = [Hq, Hk] in `trainc-run --inspect`), every
  attention_grad writes one result (the projection's gradient, in
  windows), and the step has fewer slices, concatenates and instructions;
  without, none of that, so the comparison is not vacuous;
- the liveness bound of the in-place step's activations is at most the
  other's;
- 12 AdamW steps on the same batch: the JSONL's loss, gradient norm and
  loss scale bitwise equal at every step, and the checkpoint after the
  last step byte for byte the same.

The kernels read the same elements through a window's offset and row
stride instead of a copy's, so anything but bit equality is a bug (a
window at the wrong head, a wrong row stride). Prints one line per case;
exits 1 on any failure.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fused_elementwise_step import (hf_case, live_bound, make_gpt_cases,  # noqa: E402
                                    run, runs_with, step_test_main, verdict)


def inspect(args, exe):
    """(instructions, slices and concatenates, attention instructions, how
    many of them read qkv windows, (attention_grads with one result, all
    attention_grads), liveness bound) of an executable."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    if not count:
        raise RuntimeError('no instruction count in --inspect')
    attention = re.findall(r'= attention(?:_grad)?\(.*?\) ints=\[(.*?)\]', out)
    windows = sum(1 for ints in attention
                  if [int(x) for x in ints.split(',')][3:5] != [0, 0])
    copies = len(re.findall(r'= (?:slice|concatenate)\(', out))
    grads = len(re.findall(r'= attention_grad\(', out))
    packed = len(re.findall(r'^  \d+: %\d+ = attention_grad\(', out, re.M))
    return (int(count.group(1)), copies, len(attention), windows,
            (packed, grads), live_bound(out))


def check(args, name, model, inputs, extra, work):
    runs = runs_with(args, name, model, inputs, extra, work, 'qkv-in-place',
                     ('true', 'false'), inspect)
    (count, copies, attention, windows, packed, live), trained = runs['true']
    (plain_count, plain_copies, plain_attention, plain_windows, plain_packed,
     plain_live), plain_trained = runs['false']
    problems = []
    if attention == 0 or windows != attention or plain_windows != 0:
        problems.append(f'{windows} of {attention} attention instructions read qkv '
                        f'windows in place, {plain_windows} without')
    if packed[1] == 0 or packed[0] != packed[1] or plain_packed[0] != 0:
        problems.append(f'{packed[0]} of {packed[1]} attention_grads with one result, '
                        f'{plain_packed[0]} without')
    if copies >= plain_copies or count >= plain_count:
        problems.append(f'{plain_copies} -> {copies} slices and concatenates, '
                        f'{plain_count} -> {count} instructions')
    return verdict(name, problems, live, plain_live, trained, plain_trained,
                   f'{plain_count} -> {count} instructions ({plain_copies} -> {copies} '
                   f'slices and concatenates), {attention} attention instructions in '
                   f'place; most live activations {plain_live} -> {live} bytes')


def cases(args, work):
    runs, _ = make_gpt_cases(work)
    return runs + [hf_case(args.hf_dir, model, exporter, precision)
                   for model, exporter, precision in (('gpt2', 'ts17', 'f32'),
                                                      ('gpt2', 'ts17', 'bf16'),
                                                      ('mpt', 'dynamo', 'f32'),
                                                      ('mpt', 'ts17', 'bf16'))]


if __name__ == '__main__':
    sys.exit(step_test_main('qkv_in_place_step', __doc__.splitlines()[0], check, cases))
