#!/usr/bin/env python3
"""Elementwise fusion (trainc-fuse-elementwise) changes no bit of training.

For each model and precision, compiles the AdamW training step with and
without `--fuse-elementwise` and checks:

- the fused step has fused loops (`fused_elementwise` and, with 16-bit
  precisions, `convert_group` in `trainc-run --inspect`) and fewer
  instructions, so the comparison is not vacuous;
- its activations live at once (the liveness bound of the plan) are at
  most the unfused step's;
- 12 AdamW steps on the same batch: the JSONL's loss, gradient norm and
  loss scale bitwise equal at every step, and the checkpoint after the last
  step (parameters and optimizer state) byte for byte the same.

Each step of a fused loop rounds as its op alone does, so anything but bit
equality is a bug (a wrong register, a dropped rounding, a result written
over an operand still to be read).

Models: GPTs written by tools/make_gpt.py, with dropout (masks applied by
select and multiply), in f32, bf16 and fp16 (the loss scale's checks and
the skip flag in the step), one also with `--recompute full` (clones
marked as such fuse only with each other); the tinygpt that
torch.onnx.export wrote (../shared/data/tinygpt); a Hugging Face Llama
(RMSNorm, SiLU, rotary embeddings: longer chains). Prints one line per
case; exits 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))
import make_gpt  # noqa: E402

STEPS = 12


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[-4:])}")
    return result


DTYPE_BYTES = {'f64': 8, 'f32': 4, 'f16': 2, 'bf16': 2, 'i64': 8, 'i32': 4, 'i1': 1}


def live_bound(out):
    """The most bytes of work-arena tensors live at once (from the first
    instruction writing one to the last reading it), from --inspect: the
    liveness bound any placement of the buffers must reach. The planner's
    greedy placement can land above it by a few percent either way, so this
    bound, not the planned peak, is what fusion must not raise."""
    sizes = {}
    for m in re.finditer(r'^  %(\d+) \w+\s+(\w+)\s+\[([^\]]*)\]\s+work', out, re.M):
        n = 1
        for d in m.group(3).split(','):
            n *= int(d) if d.strip() else 1
        sizes[int(m.group(1))] = n * DTYPE_BYTES[m.group(2)]
    first, last = {}, {}
    for i, m in enumerate(re.finditer(r'^  \d+: (.*?) = \w+\((.*?)\)', out, re.M)):
        for t in map(int, re.findall(r'%(\d+)', m.group(1))):
            first.setdefault(t, i)
            last[t] = max(last.get(t, i), i)
        for t in map(int, re.findall(r'%(\d+)', m.group(2))):
            last[t] = i
    events = {}
    for t, size in sizes.items():
        if t in first:
            events[first[t]] = events.get(first[t], 0) + size
            events[last[t] + 1] = events.get(last[t] + 1, 0) - size
    live = peak = 0
    for i in sorted(events):
        live += events[i]
        peak = max(peak, live)
    return peak


def inspect(args, exe):
    """(instruction count, fused loops, liveness bound, planned peak) of an
    executable."""
    out = run([args.trainc_run, exe, '--inspect']).stdout
    count = re.search(r'^instructions \((\d+)\):', out, re.M)
    peak = re.search(r'peak (\d+) bytes', out)
    if not count or not peak:
        raise RuntimeError('no instruction count or peak in --inspect')
    fused = len(re.findall(r'= (?:fused_elementwise|convert_group)\(', out))
    return int(count.group(1)), fused, live_bound(out), int(peak.group(1))


def train(args, exe, inputs, directory):
    """The JSONL records and the last checkpoint's tensor bytes."""
    log = os.path.join(directory, 'log.jsonl')
    state = os.path.join(directory, 'state')
    run([args.trainc_run, exe, *inputs, '--steps', str(STEPS), '--log-jsonl', log,
         '--save-state', state, '--output-dir', directory])
    records = [json.loads(line) for line in open(log)]
    step = sorted(d for d in os.listdir(state) if d.startswith('step-'))[-1]
    shards = sorted(f for f in os.listdir(os.path.join(state, step))
                    if f.endswith('.safetensors'))
    data = b''.join(open(os.path.join(state, step, f), 'rb').read() for f in shards)
    return records, data


def same_training(log_a, state_a, log_b, state_b):
    """What differs between two runs of `train`: their loss, gradient norm,
    loss scale and skip flag at each step, their step counts and their last
    checkpoints (bitwise); empty when nothing does."""
    problems = []
    for a, b in zip(log_a, log_b):
        for key in ('loss', 'grad_norm', 'loss_scale', 'step_skipped'):
            if a.get(key) != b.get(key):
                problems.append(f'step {a.get("step")}: {key} {a.get(key)!r} != {b.get(key)!r}')
                break
    if len(log_a) != STEPS or len(log_b) != STEPS:
        problems.append(f'{len(log_a)} and {len(log_b)} logged steps, not {STEPS}')
    if state_a != state_b:
        problems.append('the checkpoints differ')
    return problems


def make_gpt_cases(work):
    """A 2-layer make_gpt GPT with dropout and one batch of 2 sequences, as
    cases: f32, bf16, fp16 and bf16 with full recompute; and the batch's
    --input arguments."""
    cfg = make_gpt.GptConfig(vocab=64, seq=16, batch=2, d_model=32, heads=2, layers=2,
                             dropout=0.1)
    path, inputs = make_gpt.write_model_and_batch(cfg, work, 'gpt')
    cases = [(f'make_gpt_{p}', path, inputs, ('--precision', p))
             for p in ('f32', 'bf16', 'fp16')]
    cases.append(('make_gpt_bf16_recompute_full', path, inputs,
                  ('--precision', 'bf16', '--recompute', 'full')))
    return cases, inputs


def hf_case(hf_dir, model, exporter, precision):
    """A Hugging Face export of test/Models/hf as a case: (name, the export,
    trainc-run's --input arguments for every batch file beside it, the
    precision flags)."""
    directory = os.path.join(hf_dir, model)
    inputs = []
    for f in sorted(os.listdir(directory)):
        if f.endswith('.npy'):
            inputs += ['--input', f'{f[:-4]}={os.path.join(directory, f)}']
    return (f'hf_{model}_{exporter}_{precision}',
            os.path.join(directory, f'{exporter}.onnx'), inputs, ('--precision', precision))


def grad_accum_case(work, inputs):
    """make_gpt_cases' batch as two micro-batches of one sequence, bf16,
    `--grad-accum 2`, as a case."""
    cfg = make_gpt.GptConfig(vocab=64, seq=16, batch=1, d_model=32, heads=2, layers=2,
                             dropout=0.1)
    path, _ = make_gpt.write_model_and_batch(cfg, work, 'gpt1')
    return ('make_gpt_bf16_grad_accum_2', path, inputs,
            ('--precision', 'bf16', '--grad-accum', '2'))


def lowering_cases(args, work):
    """The cases of the lower-phase pair fusions' step tests: make_gpt_cases,
    grad_accum_case, and Hugging Face GPT-2 (TorchScript f32, dynamo bf16)
    and BERT (dynamo f32)."""
    runs, inputs = make_gpt_cases(work)
    runs.append(grad_accum_case(work, inputs))
    return runs + [hf_case(args.hf_dir, model, exporter, precision)
                   for model, exporter, precision in (('gpt2', 'ts17', 'f32'),
                                                      ('gpt2', 'dynamo', 'bf16'),
                                                      ('bert', 'dynamo', 'f32'))]


def step_test_main(name, description, check_case, cases):
    """The main of a step test run on Hugging Face exports: parses
    --trainc, --trainc-run and --hf-dir, runs check_case over
    `cases(args, work)` in a scratch folder, prints the verdict line and
    returns the exit status."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--hf-dir', required=True, help='test/Models/hf')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        ok = run_cases(check_case, args, cases(args, work), work)
    print(f'{name}: ' + ('all as expected' if ok else 'FAILED'))
    return 0 if ok else 1


def run_cases(check_case, args, cases, work):
    """check_case(args, name, model, inputs, extra, work) for each case;
    whether all passed (a RuntimeError is that case's failure)."""
    ok = True
    for name, model, inputs, extra in cases:
        try:
            ok &= check_case(args, name, model, inputs, extra, work)
        except RuntimeError as e:
            print(f'{name}: FAIL {e}')
            ok = False
    return ok


def runs_with(args, name, model, inputs, extra, work, flag, values, look):
    """For each of `values`: the AdamW step compiled with `--flag=value`
    (and `extra`), as (`look(args, exe)`, `train`'s records and last
    checkpoint), by value."""
    runs = {}
    for value in values:
        directory = os.path.join(work, f'{name}-{value}')
        os.makedirs(directory)
        exe = os.path.join(directory, 'step.tcx')
        run([args.trainc, model, '--train', '--lr', '1e-2', *extra,
             f'--{flag}={value}', '-o', exe])
        runs[value] = (look(args, exe), train(args, exe, inputs, directory))
    return runs


def verdict(name, problems, live, plain_live, trained, plain_trained, summary):
    """How every step test of a lowering ends: no more live activations
    than without it and the same training bit for bit (`trained` and
    `plain_trained`: `train`'s records and last checkpoint), added to the
    test's own `problems`; then one line, FAIL and the problems, or
    `summary`. Returns whether it passed."""
    if live > plain_live:
        problems.append(f'live activations {live} above {plain_live} bytes')
    problems += same_training(*trained, *plain_trained)
    if problems:
        print(f'{name}: FAIL ' + '; '.join(problems[:4]))
        return False
    print(f'{name}: bitwise equal over {STEPS} steps; {summary}')
    return True


def check(args, name, model, inputs, extra, work):
    runs = runs_with(args, name, model, inputs, extra, work, 'fuse-elementwise',
                     ('true', 'false'), inspect)
    (fused_count, loops, fused_live, fused_peak), trained = runs['true']
    (plain_count, plain_loops, plain_live, plain_peak), plain_trained = runs['false']
    problems = []
    if loops == 0 or plain_loops != 0 or fused_count >= plain_count:
        problems.append(f'{loops} fused loops, {fused_count} against {plain_count} '
                        f'instructions ({plain_loops} loops unfused)')
    return verdict(name, problems, fused_live, plain_live, trained, plain_trained,
                   f'{plain_count} -> {fused_count} instructions ({loops} fused loops '
                   f'and cast groups); most live activations {plain_live} -> '
                   f'{fused_live} bytes, planned peak {plain_peak} -> {fused_peak}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--tinygpt', required=True, help='../shared/data/tinygpt')
    parser.add_argument('--hf-dir', required=True, help='test/Models/hf')
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as work:
        cases, _ = make_gpt_cases(work)
        raw = os.path.join(args.tinygpt, 'tied_erf', 'raw_f32')
        cases.append(('tinygpt', os.path.join(args.tinygpt, 'tied_erf',
                                              'model_train_opset17.onnx'),
                      ['--input', f'tokens={raw}/tokens.bin',
                       '--input', f'targets={raw}/targets.bin'], ()))
        cases += [hf_case(args.hf_dir, 'llama', 'dynamo', p) for p in ('f32', 'bf16')]
        ok = run_cases(check, args, cases, work)
    print('fused_elementwise_step: ' + ('all bitwise equal' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
