#!/usr/bin/env python3
"""Activation recompute (trainc --recompute) changes memory, never numbers.

For each model, compiles the training step with every recompute mode and
checks, against the same step compiled with `--recompute none`:

- gradients (`--optimizer none`, one run of trainc-run on a fixed batch):
  every output file bitwise identical. A recomputed op is a clone of the
  forward op run by the same kernel on the same inputs, and dropout's mask
  is a function of (seed, step, index), so anything but bit equality is a
  bug (a clone reading a wrong operand, a redrawn mask);
- an AdamW run of 4 steps on the batch: the JSONL losses and gradient norms
  bitwise identical (dropout masks change with the step);
- the memory plan of the AdamW step: the measured arena peak equals the
  planned one; the liveness bound of full and selective (the most
  work-arena bytes live at once, which no placement can beat:
  fused_elementwise_step.live_bound) is at most none's, or above it by no
  more than the compiler's bound on what recompute can add
  (recompute.added_live_bytes: the remakes' inputs, whose lives they may
  extend, and values remade on the way that none's backward pass does not
  hold, as a CNN's ReLU output), and where it is below, so are the
  planned activations (where it is equal, the peak lies
  outside what recompute remakes, and the planner's greedy placement
  alone moves the plan a few percent either way, so the plans are not
  compared; the line says so); a budget halfway between none and full is
  met (and trains bitwise the same); a budget below what full recompute
  reaches fails, naming the smallest peak.

Models: GPTs written by tools/make_gpt.py, with and without dropout (the
masks must be replayed, not redrawn), the one with dropout also in bf16 and
fp16 (--precision); the tinygpt that torch.onnx.export
wrote (../shared/data/tinygpt); Hugging Face GPT-2 and Llama (TorchScript
and dynamo exports in test/Models/hf, made by tools/hf_models/export.py);
Hugging Face ResNet, ConvNeXt and MobileNetV2 (test/Models/hf_legacy:
blocks around convolutions, batch norms' running statistics among the
outputs).
Prints one line per model and mode; exits 1 on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))
import make_gpt  # noqa: E402
from fused_elementwise_step import live_bound  # noqa: E402

MODES = ['selective', 'full']


def run(cmd, expect_ok=True):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if expect_ok and result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[:4])}")
    return result


def options_table(stdout):
    """{option: planned activation bytes} from --print-memory-plan."""
    table = {}
    for line in stdout.splitlines():
        m = re.match(r'\s+(none|selective|full)\s+([0-9.]+) MiB', line)
        if m:
            table[m.group(1)] = float(m.group(2)) * 1048576
    return table


def planned_activations(stdout):
    m = re.search(r'^\s+activations\s+(\d+) bytes', stdout, re.M)
    return int(m.group(1))


def outputs(directory):
    return {f: open(os.path.join(directory, f), 'rb').read()
            for f in sorted(os.listdir(directory))}


def check_model(args, name, onnx_path, inputs, work, extra=()):
    problems = []
    base = {}
    stats, bounds, added = {}, {}, {}
    for mode in ['none'] + MODES:
        grads_exe = os.path.join(work, f'{name}_{mode}_grads.tcx')
        run([args.trainc, onnx_path, '--train', '--optimizer', 'none', *extra,
             '--recompute', mode, '-o', grads_exe])
        out = os.path.join(work, f'{name}_{mode}_grads')
        ran = run([args.trainc_run, grads_exe, *inputs, '--output-dir', out])
        m = re.search(r'memory peak planned (\d+), measured (\d+) bytes', ran.stdout)
        if not m or m.group(1) != m.group(2):
            problems.append(f'{mode}: measured peak differs from the plan '
                            f'({m.group(0) if m else "no memory line"})')
        got = outputs(out)
        train_exe = os.path.join(work, f'{name}_{mode}_adamw.tcx')
        compiled = run([args.trainc, onnx_path, '--train', '--lr', '1e-2', *extra,
                        '--recompute', mode, '-o', train_exe, '--print-memory-plan'])
        stats[mode] = planned_activations(compiled.stdout)
        bounds[mode] = live_bound(run([args.trainc_run, train_exe, '--inspect']).stdout)
        ir = run([args.trainc, onnx_path, '--train', '--lr', '1e-2', *extra, '--recompute', mode,
                  '--compile-to=recompute']).stdout
        m = re.search(r'recompute.added_live_bytes = (\d+)', ir)
        added[mode] = int(m.group(1)) if m else 0
        if mode == 'none':
            table = options_table(compiled.stdout)
        log = os.path.join(work, f'{name}_{mode}.jsonl')
        ran = run([args.trainc_run, train_exe, *inputs, '--steps', '4', '--log-jsonl', log])
        m = re.search(r'memory peak planned (\d+), measured (\d+) bytes', ran.stdout)
        if not m or m.group(1) != m.group(2):
            problems.append(f'{mode} (AdamW): measured peak differs from the plan '
                            f'({m.group(0) if m else "no memory line"})')
        curve = [(r['loss'], r['grad_norm'])
                 for r in map(json.loads, filter(str.strip, open(log)))]
        if mode == 'none':
            base = {'grads': got, 'curve': curve}
            continue
        differ = [f for f in base['grads'] if got.get(f) != base['grads'][f]]
        if differ or set(got) != set(base['grads']):
            problems.append(f'{mode}: outputs not bitwise equal: '
                            f'{", ".join(differ[:4]) or "different files"}')
        if curve != base['curve']:
            problems.append(f'{mode}: AdamW curve differs: {curve} vs {base["curve"]}')
        if bounds[mode] > bounds['none']:
            # Remaking a value keeps its inputs (a block's input, a
            # convolution's) until the remake, and may remake values on the
            # way that the backward pass without recompute does not hold (a
            # CNN's ReLU output): those can be live where they were not. The
            # compiler adds up their bytes (recompute.added_live_bytes); the
            # bound may rise by no more.
            rise = bounds[mode] - bounds['none']
            if rise > added[mode]:
                problems.append(f'{mode}: liveness bound {bounds[mode]} above '
                                f"none's {bounds['none']} by {rise} B, more than the "
                                f'{added[mode]} B recompute can add')
        elif bounds[mode] < bounds['none'] and not stats[mode] < stats['none']:
            problems.append(f'{mode}: planned activations {stats[mode]} not below '
                            f"none's {stats['none']} (liveness bound {bounds[mode]} "
                            f"below {bounds['none']})")
    if set(table) != {'none', 'selective', 'full'}:
        problems.append(f'--print-memory-plan lists {sorted(table)}')

    # A budget halfway between none and full is met; one below full fails.
    budget = (stats['none'] + stats['full']) // 2
    exe = os.path.join(work, f'{name}_budget.tcx')
    compiled = run([args.trainc, onnx_path, '--train', '--lr', '1e-2', *extra,
                    '--recompute', f'budget={budget}', '-o', exe, '--print-memory-plan'])
    got_budget = planned_activations(compiled.stdout)
    if got_budget > budget:
        problems.append(f'budget={budget}: planned activations {got_budget}')
    log = os.path.join(work, f'{name}_budget.jsonl')
    run([args.trainc_run, exe, *inputs, '--steps', '4', '--log-jsonl', log])
    curve = [(r['loss'], r['grad_norm']) for r in map(json.loads, filter(str.strip, open(log)))]
    if curve != base['curve']:
        problems.append(f'budget={budget}: AdamW curve differs')
    low = stats['full'] // 2
    failed = run([args.trainc, onnx_path, '--train', *extra, '--recompute', f'budget={low}',
                  '-o', os.path.join(work, 'never.tcx')], expect_ok=False)
    if failed.returncode == 0 or 'smallest planned activation peak is' not in failed.stderr:
        problems.append(f'budget={low} below full recompute: exit {failed.returncode}, '
                        f'{failed.stderr.strip()[:200]}')
    change = {m: stats[m] / stats['none'] - 1 for m in MODES}
    # Modes whose liveness bound is none's: the peak is outside what they
    # remake, and their plans were not compared.
    same = [m for m in MODES if bounds[m] == bounds['none']]
    note = f' (bound {bounds["none"]:,} B unchanged by {", ".join(same)})' if same else ''
    print(f"{name}: activations none {stats['none']:,} B, selective "
          f"{change['selective']:+.1%}, full {change['full']:+.1%}{note}, "
          f"budget={budget:,} -> {got_budget:,}: "
          f"{'FAIL ' + '; '.join(problems) if problems else 'bitwise equal, ok'}")
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--tinygpt', required=True, help='../shared/data/tinygpt')
    parser.add_argument('--hf-dir', required=True, help='test/Models/hf')
    parser.add_argument('--hf-legacy-dir', required=True, help='test/Models/hf_legacy')
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as work:
        cases = []
        for tag, dropout in (('make_gpt', 0.0), ('make_gpt_dropout', 0.1)):
            cfg = make_gpt.GptConfig(vocab=64, seq=16, batch=2, d_model=32, heads=2,
                                     layers=3, dropout=dropout)
            path, inputs = make_gpt.write_model_and_batch(cfg, work, tag)
            cases.append((tag, path, inputs, ()))
            if dropout:  # the same with mixed precision (bf16 and fp16)
                cases.append((tag + '_bf16', path, inputs, ('--precision', 'bf16')))
                cases.append((tag + '_fp16', path, inputs, ('--precision', 'fp16')))
        raw = os.path.join(args.tinygpt, 'tied_erf', 'raw_f32')
        cases.append(('tinygpt', os.path.join(args.tinygpt, 'tied_erf',
                                              'model_train_opset17.onnx'),
                      ['--input', f'tokens={raw}/tokens.bin',
                       '--input', f'targets={raw}/targets.bin'], ()))
        for model, exporter in (('gpt2', 'ts17'), ('llama', 'dynamo')):
            d = os.path.join(args.hf_dir, model)
            inputs = []
            for input_name in ('input_ids', 'attention_mask', 'labels'):
                inputs += ['--input', f'{input_name}={os.path.join(d, input_name + ".npy")}']
            cases.append((f'hf_{model}_{exporter}', os.path.join(d, f'{exporter}.onnx'),
                          inputs, ()))
        # CNNs: blocks around convolutions, whose patches selective
        # recompute remakes.
        for model in ('resnet', 'convnext', 'mobilenet_v2'):
            d = os.path.join(args.hf_legacy_dir, model)
            inputs = []
            for input_name in ('pixel_values', 'labels'):
                inputs += ['--input', f'{input_name}={os.path.join(d, input_name + ".npy")}']
            cases.append((f'hf_{model}_ts17', os.path.join(d, 'ts17.onnx'), inputs, ()))
        for name, path, inputs, extra in cases:
            try:
                ok &= check_model(args, name, path, inputs, work, extra)
            except RuntimeError as e:
                print(f'{name}: FAIL {e}')
                ok = False
    print('recompute: ' + ('all bitwise equal' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
