#!/usr/bin/env python3
"""Hugging Face models, exported by both PyTorch exporters, against PyTorch.

For each model directory of test/Models/hf (written by
tools/hf_models/export.py) and each of its exports (ts14.onnx, ts17.onnx,
dynamo.onnx), unmodified:

1. import and recognize: `trainc --compile-to=recognize` must contain every
   composite the model is expected to have (summary.json 'composites');
2. gradients: `trainc --train --optimizer none` run by trainc-run on the
   stored batch; the loss and every parameter gradient must be within 1e-4
   of the norm of PyTorch's float64 gradient (the float32 reference itself
   is within ~1e-6 of it; printed), every parameter must have a gradient
   (except one the forward never reads: no initializer in the export and
   no gradient in PyTorch) and every gradient a parameter. A gradient that
   is exactly zero (a key bias, which softmax cancels) has no relative
   error: its float32 round-off must stay below 1e-6 of the total gradient
   norm. So must one below 1e-8 of the total that float64 leaves as
   round-off of large terms (Funnel's key biases: 1.4e-10 of the norm, from
   scores masked with -1e6), which shows as PyTorch's own float32 gradient
   being more than half its norm off; such gradients are named in the
   output;
3. training: 11 AdamW steps (torch's defaults, lr 1e-3, weight decay on
   every parameter) on the same batch; each step's loss within 1e-5
   relative of PyTorch's float32 run or of its float64 run (two float32
   runs can part where AdamW normalizes the round-off of gradients that
   are zero in exact arithmetic);
   After them, a model's batch-norm running statistics (which the training
   step updates) against PyTorch's float64 run (running_f64/ in
   reference.npz; see running_errors for the bounds);
4. forward: the executable compiled without --train against onnxruntime
   running the same ONNX file (loss within 1e-5 relative).

Embedding(padding_idx=row) tables (summary.json 'padding_idx'), whose
padding row PyTorch keeps from the gradient and neither exporter writes
down, are given to trainc (--embedding-padding-index) under the name the
export holds the table as.

A model that PyTorch itself could not export (summary.json records the
exporter's error) is reported as NOT EXPORTED, never as passed; an export
missing without such a record fails. Prints one line per model and export,
and a table; exits 1 on any failure.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

GRAD_RTOL = 1e-4
# A parameter whose float64 gradient is below ZERO_GRAD of the total norm
# has an exactly zero gradient (PyTorch's float64 gives ~1e-19); float32
# round-off must keep trainc's below ZERO_GRAD_F32 of the total (PyTorch's
# own float32 gives ~3e-11).
ZERO_GRAD = 1e-12
ZERO_GRAD_F32 = 1e-6
# A gradient below NOISE_GRAD of the total norm that PyTorch's float32
# computes more than NOISE_REL of its norm off float64 is below float32
# round-off: it is held to ZERO_GRAD_F32 of the total, as an exact zero is,
# not to its own norm. (The size bound keeps a gradient that PyTorch's
# float32 merely gets wrong from being waved through.)
NOISE_REL = 0.5
NOISE_GRAD = 1e-8
CURVE_RTOL = 1e-5
FORWARD_RTOL = 1e-5
# Running statistics after 11 steps: sums over the batch of activations
# whose float32 trajectory stays within ~1e-6 of the float64 one.
RUNNING_RTOL = 1e-5
ADAMW = ['--optimizer', 'adamw', '--lr', '1e-3', '--beta1', '0.9', '--beta2', '0.999',
         '--eps', '1e-8', '--weight-decay', '0.01', '--decay-all']
EXPORTERS = ('ts14', 'ts17', 'dynamo')


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[:3])}")
    return result


def rel(a, b):
    nb = float(np.linalg.norm(b))
    d = float(np.linalg.norm(np.asarray(a, np.float64) - b))
    return d / nb if nb > 0 else d


def gradient_errors(ref, info, out, problems, initializers=None):
    """(the worst relative error of the gradients (*.grad.npy) in `out`
    against PyTorch's float64 ones in `ref`, its parameter's name, the
    float32 reference's own worst error); appends to `problems` what is missing, extra, misshapen, or a zero
    gradient above float32 round-off."""
    params = sorted(k[len('grad_f64/'):] for k in ref.files if k.startswith('grad_f64/'))
    # trainc's gradients by the reference's parameter names (a tied
    # parameter may carry another of its names in the export).
    got, extra = {}, []
    for f in sorted(os.listdir(out)):
        if f.endswith('.grad.npy'):
            name = f[:-len('.grad.npy')]
            name = info.get('aliases', {}).get(name, name)
            (got.__setitem__(name, os.path.join(out, f)) if name in params
             else extra.append(name))
    if extra:
        problems.append(f'gradients of tensors PyTorch does not train: {", ".join(extra)}')
    total = np.sqrt(sum(float(np.sum(ref[f'grad_f64/{n}'] ** 2)) for n in params))
    worst, worst_name, ref_noise, zero_worst = 0.0, '', 0.0, 0.0
    for name in params:
        if name not in got:
            # A parameter the forward never reads (XLNet's segment
            # embeddings without token types) has no gradient in PyTorch
            # (written as zeros) and no initializer in the export.
            unused = (initializers is not None and name not in initializers and
                      not np.any(ref[f'grad_f64/{name}']))
            if not unused:
                problems.append(f"no gradient of '{name}'")
            continue
        exact, g = ref[f'grad_f64/{name}'], np.load(got[name])
        if g.shape != exact.shape:
            problems.append(f"gradient of '{name}' has shape {g.shape}, PyTorch's {exact.shape}")
            continue
        noise = rel(ref[f'grad_f32/{name}'], exact)
        size = np.linalg.norm(exact) / total
        if size <= ZERO_GRAD or (size <= NOISE_GRAD and noise > NOISE_REL):
            # Exactly zero in exact arithmetic (a key bias under softmax),
            # or round-off even in float64: float32 leaves round-off, which
            # must stay at that level.
            zero_worst = max(zero_worst, float(np.linalg.norm(g - exact)) / total)
            if size > ZERO_GRAD:
                print(f"  '{name}': {size:.1e} of the norm, PyTorch's float32 "
                      f'{noise:.1e} of it off: held to round-off')
            continue
        e = rel(g, exact)
        ref_noise = max(ref_noise, noise)
        if e > worst:
            worst, worst_name = e, name
    if zero_worst > ZERO_GRAD_F32:
        problems.append(f'a gradient that is zero to round-off is {zero_worst:.1e} of the total norm off')
    return worst, worst_name, ref_noise


def running_errors(ref, weights, problems):
    """Batch norms' running statistics after the AdamW steps (the trained
    weights file holds them: trainc updates them each step) against
    PyTorch's float64 run. The error is measured on the statistic's own
    scale: a variance's largest entry, a mean's the root of its running
    variance's largest entry (of the order of the activation's standard
    deviation). It must be
    within RUNNING_RTOL; or, where PyTorch's own float32 run is further
    than that from its float64 one, of the same order as it (at most ten
    times): AdamW normalizes the float32 round-off of gradients that are
    zero in exact arithmetic (a batch norm's B whose output feeds only a
    bias-free convolution and another batch norm: MobileNetV2's
    projections) into full steps, and the statistics downstream of such a
    B move with that noise, differently in any two float32 runs. A mean
    that is zero in exact arithmetic (float64 below 1e-9 of its scale) has
    no such reference: it must stay below 1e-2 of its scale, what 11 such
    steps of lr 1e-3 can move it (one that was never updated would pass
    that; ResNet, momentum 0.1 and no exact zeros, is where a missing or
    extra update shows: 7e-3 or more against its 1e-5). Returns the text for the model's line
    ('' without batch norms)."""
    wanted = {k.split('/', 1)[1]: ref[k] for k in ref if k.startswith('running_f64/')}
    if not wanted:
        return ''
    from safetensors.numpy import load_file  # only here: as onnx above
    got = load_file(weights)
    worst, worst_noise, zeros, worst_zero, bad = 0.0, 0.0, 0, 0.0, []
    for name, want in wanted.items():
        if name not in got:
            problems.append(f"no running statistic '{name}' in the trained weights")
            continue
        var = wanted.get(name[:-len('running_mean')] + 'running_var') \
            if name.endswith('running_mean') else None
        scale = float(np.sqrt(np.max(var))) if var is not None else float(np.max(np.abs(want)))
        err = float(np.max(np.abs(got[name].astype(np.float64) - want))) / scale
        noise = float(np.max(np.abs(ref[f'running_f32/{name}'] - want))) / scale
        if var is not None and float(np.max(np.abs(want))) < 1e-9 * scale:
            zeros += 1
            worst_zero = max(worst_zero, err)
            if not err <= 1e-2:
                bad.append(f"running statistic '{name}' (zero in exact arithmetic) is "
                           f"{err:.2e} of its scale")
            continue
        if not err <= max(RUNNING_RTOL, 10 * noise):
            bad.append(f"running statistic '{name}' off by {err:.2e} of its scale "
                       f"(PyTorch's float32 run {noise:.2e})")
        if err > worst:
            worst, worst_noise = err, noise
    problems.extend(bad)
    return (f', {len(wanted)} running statistics rel {worst:.1e} (PyTorch f32 '
            f'{worst_noise:.1e}' + (f'; {zeros} zero in exact arithmetic, within '
                                    f'{worst_zero:.1e}' if zeros else '') + ')')


def unpacked(path, work):
    """`path`, or where its xz-compressed copy (`path`.xz, as export.py
    --xz stores an export) is unpacked in `work`; `path` when neither
    exists."""
    if os.path.exists(path) or not os.path.exists(path + '.xz'):
        return path
    import lzma
    out = os.path.join(work, os.path.basename(path))
    with lzma.open(path + '.xz') as f, open(out, 'wb') as g:
        g.write(f.read())
    return out


def check(args, model_dir, info, exporter, work, onnx_path):
    ref = np.load(os.path.join(model_dir, 'reference.npz'))
    inputs = []
    for name in info['inputs']:
        inputs += ['--input', f'{name}={os.path.join(model_dir, name + ".npy")}']
    tag = f'{os.path.basename(model_dir)}/{exporter}'
    problems, measured = [], {}

    # PyTorch trains parameters, not buffers. The dynamo exporter marks a
    # buffer it writes as an initializer in its value_info (trainc keeps it
    # constant, or frozen when it is a batch norm's statistic); the
    # TorchScript exporter does not (a batch norm's statistics it writes
    # are frozen by trainc itself), so the test freezes
    # those, as their user would (BART's final_logits_bias), and the
    # parameters PyTorch does not train (summary.json 'frozen': Whisper's
    # sinusoidal positions).
    import onnx  # only here: test/Runtime imports this module
    graph = onnx.load(onnx_path, load_external_data=False).graph
    marked = {v.name for v in [*graph.value_info, *graph.input] for p in v.metadata_props
              if p.key == 'pkg.torch.export.graph_signature.InputSpec.kind' and
              p.value in ('BUFFER', 'CONSTANT_TENSOR')}
    initializers = {t.name for t in graph.initializer}
    frozen = [b for b in info.get('buffers', []) + info.get('frozen', [])
              if b in initializers - marked]
    train = ['--train', *(['--freeze', ','.join(frozen)] if frozen else [])]
    # Embedding(padding_idx=row) tables (summary.json 'padding_idx'),
    # under the name this export gives the table (a tied one has several).
    for table, row in info.get('padding_idx', {}).items():
        names = [n for n in initializers if info.get('aliases', {}).get(n, n) == table]
        if not names:
            problems.append(f'padding_idx table {table} is no initializer')
        for n in names:
            train += ['--embedding-padding-index', f'{n}={row}']

    ir = run([args.trainc, onnx_path, '--compile-to=recognize']).stdout
    missing = [c for c in info['composites'] if f'graph.{c} ' not in ir]
    if missing:
        problems.append(f'not recognized: {", ".join(missing)}')

    grads_exe = os.path.join(work, f'{exporter}_grads.tcx')
    out = os.path.join(work, f'{exporter}_grads')
    run([args.trainc, onnx_path, *train, '--optimizer', 'none', '-o', grads_exe])
    run([args.trainc_run, grads_exe, *inputs, '--output-dir', out])
    measured['loss'] = abs(float(np.load(os.path.join(out, 'loss.npy'))) -
                           float(ref['loss_f64'])) / abs(float(ref['loss_f64']))
    aliased = {info.get('aliases', {}).get(n, n) for n in initializers}
    worst, worst_name, ref_noise = gradient_errors(ref, info, out, problems, aliased)
    measured['grad'] = worst
    if measured['loss'] > GRAD_RTOL:
        problems.append(f"loss off by {measured['loss']:.2e} relative")
    if worst > GRAD_RTOL:
        problems.append(f"gradient of '{worst_name}' off by {worst:.2e} of its norm")

    train_exe = os.path.join(work, f'{exporter}_adamw.tcx')
    log = os.path.join(work, f'{exporter}_adamw.jsonl')
    run([args.trainc, onnx_path, *train, *ADAMW, '-o', train_exe])
    weights = os.path.join(work, f'{exporter}_adamw.safetensors')
    run([args.trainc_run, train_exe, *inputs, '--steps', '11', '--log-jsonl', log,
         '--output-dir', os.path.join(work, f'{exporter}_adamw'), '--save-safetensors', weights])
    running = running_errors(ref, weights, problems)
    losses = [json.loads(line)['loss'] for line in open(log) if line.strip()]
    want = ref['adamw_losses_f32']
    if len(losses) != len(want):
        problems.append(f'{len(losses)} AdamW steps logged, expected {len(want)}')
        measured['curve'] = float('inf')
    else:
        # Against PyTorch's float32 run, or its float64 run (the exact
        # curve): where gradients that are zero in exact arithmetic carry
        # float32 round-off, AdamW scales that noise up to full-size steps,
        # and two float32 runs part (Whisper's: PyTorch's float32 curve is
        # 2.7e-5 from its float64 one, trainc's 1.3e-7).
        exact = ref['adamw_losses_f64']
        off = lambda w: float(np.max(np.abs(np.array(losses) - w) / np.abs(w)))
        measured['curve'] = min(off(want), off(exact)) if len(exact) == len(want) else off(want)
        if measured['curve'] > CURVE_RTOL:
            problems.append(f"AdamW curve off by {measured['curve']:.2e} relative "
                            f"(trainc {losses}, PyTorch {want.tolist()})")

    fwd_exe = os.path.join(work, f'{exporter}_fwd.tcx')
    fwd_out = os.path.join(work, f'{exporter}_fwd')
    run([args.trainc, onnx_path, '-o', fwd_exe])
    run([args.trainc_run, fwd_exe, *inputs, '--output-dir', fwd_out])
    feeds = {n: np.load(os.path.join(model_dir, n + '.npy')) for n in info['inputs']}
    import onnxruntime as ort  # only here: test/Runtime imports this module
    # Without onnxruntime's graph optimizations: they fold a training-mode
    # BatchNormalization into its convolution with the running statistics
    # (ResNet's loss 1.1% off; unoptimized it is PyTorch's).
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(onnx_path, options, providers=['CPUExecutionProvider'])
    ort_loss = float(session.run(['loss'], feeds)[0])
    measured['forward'] = abs(float(np.load(os.path.join(fwd_out, 'loss.npy'))) -
                              ort_loss) / abs(ort_loss)
    if measured['forward'] > FORWARD_RTOL:
        problems.append(f"forward loss off onnxruntime's by {measured['forward']:.2e}")

    ok = not problems
    print(f"{tag}: loss rel {measured['loss']:.1e}, worst gradient rel {worst:.1e} "
          f"({worst_name}; PyTorch f32 vs f64 {ref_noise:.1e}), AdamW curve rel "
          f"{measured['curve']:.1e}{running}, forward vs onnxruntime "
          f"{measured['forward']:.1e} -> {'ok' if ok else 'MISMATCH'}", flush=True)
    for p in problems:
        print(f'  {tag}: {p}')
    return ok, measured


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--data-dir', required=True, help='test/Models/hf')
    parser.add_argument('--models', nargs='*', help='only these models')
    args = parser.parse_args()
    summary = json.load(open(os.path.join(args.data_dir, 'summary.json')))
    ok, rows = True, []
    with tempfile.TemporaryDirectory() as work:
        for name, info in sorted(summary['models'].items()):
            if args.models and name not in args.models:
                continue
            for exporter in EXPORTERS:
                export = info['exports'].get(exporter, {})
                path = os.path.join(args.data_dir, name, f'{exporter}.onnx')
                scratch = os.path.join(work, name)
                os.makedirs(scratch, exist_ok=True)
                try:
                    path = unpacked(path, scratch)
                except (OSError, EOFError, ValueError) as e:  # lzma.LZMAError is an OSError
                    print(f'{name}/{exporter}: {path}.xz cannot be unpacked: {e}')
                    ok = False
                    continue
                if 'error' in export and os.path.exists(path):
                    print(f'{name}/{exporter}: summary.json records the export as failed, but '
                          f'{os.path.basename(path)} exists (a stale file?)')
                    ok = False
                    continue
                if 'error' in export and not os.path.exists(path):
                    print(f'{name}/{exporter}: NOT EXPORTED (PyTorch {summary["torch"]}: '
                          f'{export["error"]})')
                    rows.append((name, exporter, '-', 'PyTorch cannot export'))
                    continue
                if not os.path.exists(path):
                    print(f'{name}/{exporter}: {path} is missing')
                    ok = False
                    continue
                try:
                    good, m = check(args, os.path.join(args.data_dir, name), info,
                                    exporter, scratch, path)
                except RuntimeError as e:
                    print(f'{name}/{exporter}: {e}')
                    good, m = False, None
                ok &= good
                rows.append((name, exporter, export.get('opset', '?'),
                             'FAILED' if not m else
                             f"{m['grad']:.1e} | {m['curve']:.1e} | {m['forward']:.1e}"
                             + ('' if good else ' (FAILED)')))
    print('\n| model | exporter | opset | worst grad rel | AdamW curve rel | fwd vs ORT |')
    print('|---|---|---|---|---|---|')
    for name, exporter, opset, cells in rows:
        print(f'| {name} | {exporter} | {opset} | {cells} |')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
