#!/usr/bin/env python3
"""A padded class dimension (trainc-pad-classes) changes no bit of training.

For GPTs written by tools/make_gpt.py with a vocabulary of 1,001 (padded to
1,024) in f32, bf16 and fp16, and one with `--recompute full`, and for
Hugging Face GPT-2 (tied embedding) and Llama (untied head, RMSNorm) built
with 1,001 tokens and exported by torch's dynamo exporter
(test/Models/hf_vocab1001: `tools/hf_models/export.py OUT --models gpt2
llama --vocab 1001`, its dynamo.onnx and batch) in f32 and bf16, compiles
the AdamW training step with `--pad-classes=64` and `--pad-classes=0` and
checks:

- the padded step's loss reads 1,024-entry rows with `classes` 1,001 (the
  instruction's last int in `trainc-run --inspect`), and the unpadded one
  1,001-entry rows, so the comparison is not vacuous;
- 12 steps on the same batch: the JSONL's loss, gradient norm and loss
  scale bitwise equal at every step, and the checkpoint after the last
  step (parameters and optimizer state, the embedding at its own 1,001
  rows) byte for byte the same.

The Hugging Face models' first f32 loss is also checked against
PyTorch's float64 loss on that batch (reference_loss.json), within the
bound of the f32 loss's roundings: a mean of 24 log-sum-exps of 1,001
terms, (1,001 + 24) 2^-24 relative.

Why bit equality is expected: the padding's logits are never read, its
gradient is exactly 0, and every sum the padding reaches gets its zero
terms after its real ones (x + 0 = x); the embedding's gradient is a slice
of the padded one. A GEMM that grouped a longer contraction differently
could change the hidden states' gradient in the last bits (Passes.td says
so); on this machine's BLAS and these shapes it does not, so any
difference here is a change to investigate. Prints one line per case;
exits 1 on any failure.
"""
import argparse
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))
sys.path.insert(0, HERE)
import make_gpt  # noqa: E402
from fused_elementwise_step import STEPS, run, same_training, train  # noqa: E402

VOCAB, PADDED = 1001, 1024


def loss_rows(args, exe):
    """(row length, classes) of the executable's softmax_cross_entropy."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    m = re.search(r'^  \d+: %\d+ = softmax_cross_entropy\(%(\d+), %\d+\) '
                  r'ints=\[\d+, \d+, -?\d+, (\d+)\]', out, re.M)
    if not m:
        raise RuntimeError('no softmax_cross_entropy in --inspect')
    shape = re.search(rf'^  %{m.group(1)} \w+\s+\w+\s+\[([^\]]*)\]', out, re.M)
    return int(shape.group(1).split(',')[-1]), int(m.group(2))


def check(args, name, model, inputs, extra, work, reference=None):
    runs = {}
    for multiple in (64, 0):
        directory = os.path.join(work, f'{name}-{multiple}')
        os.makedirs(directory)
        exe = os.path.join(directory, 'step.tcx')
        run([args.trainc, model, '--train', '--lr', '1e-2', *extra,
             f'--pad-classes={multiple}', '-o', exe])
        runs[multiple] = (loss_rows(args, exe), train(args, exe, inputs, directory))
    padded_rows, (padded_log, padded_state) = runs[64]
    plain_rows, (plain_log, plain_state) = runs[0]
    problems = []
    if padded_rows != (PADDED, VOCAB) or plain_rows != (VOCAB, VOCAB):
        problems.append(f'loss rows (length, classes) {padded_rows} padded, '
                        f'{plain_rows} unpadded')
    problems += same_training(padded_log, padded_state, plain_log, plain_state)
    if reference is not None:
        first = padded_log[0]['loss'] if padded_log else float('nan')
        bound = (VOCAB + 24) * 2.0**-24 * abs(reference)
        if not abs(first - reference) <= bound:
            problems.append(f'first loss {first!r} is not within {bound:.2g} of '
                            f"PyTorch's {reference!r}")
    if problems:
        print(f'{name}: FAIL ' + '; '.join(problems[:4]))
        return False
    print(f'{name}: bitwise equal over {STEPS} steps with rows of {PADDED} '
          f'for {VOCAB} classes (loss {padded_log[0]["loss"]:.4f} -> '
          f'{padded_log[-1]["loss"]:.4f})')
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--hf-dir', required=True, help='test/Models/hf_vocab1001')
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as work:
        cfg = make_gpt.GptConfig(vocab=VOCAB, seq=16, batch=2, d_model=32, heads=2,
                                 layers=2, dropout=0.1)
        path, inputs = make_gpt.write_model_and_batch(cfg, work, 'gpt')
        cases = [(f'make_gpt_{p}', ('--precision', p)) for p in ('f32', 'bf16', 'fp16')]
        cases.append(('make_gpt_bf16_recompute_full',
                      ('--precision', 'bf16', '--recompute', 'full')))
        runs = [(name, path, inputs, extra, None) for name, extra in cases]
        for model in ('gpt2', 'llama'):
            directory = os.path.join(args.hf_dir, model)
            hf_inputs = []
            for input_name in ('input_ids', 'attention_mask', 'labels'):
                hf_inputs += ['--input',
                              f'{input_name}={os.path.join(directory, input_name + ".npy")}']
            reference = json.load(open(os.path.join(directory, 'reference_loss.json')))
            for p in ('f32', 'bf16'):
                runs.append((f'hf_{model}_dynamo_{p}', os.path.join(directory, 'dynamo.onnx'),
                             hf_inputs, ('--precision', p),
                             reference['loss_f64'] if p == 'f32' else None))
        for name, model, model_inputs, extra, reference in runs:
            try:
                ok &= check(args, name, model, model_inputs, extra, work, reference)
            except RuntimeError as e:
                print(f'{name}: FAIL {e}')
                ok = False
    print('pad_classes_step: ' + ('all bitwise equal' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
