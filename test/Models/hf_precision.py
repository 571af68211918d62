#!/usr/bin/env python3
"""Mixed precision (trainc --precision bf16|fp16|tf32) against float64 and against
PyTorch's CPU autocast, on the Hugging Face model suite, tinygpt and the
4-layer benchmark GPT (tf32, which autocast lacks: that GPT only).

For each model (test/Models/hf, the TorchScript opset-17 export) and each
16-bit type, compiles the gradient step (`--train --optimizer none`), runs
it on the committed batch and measures, against PyTorch's float64 loss and
gradients (reference.npz):

- the loss's relative error;
- the gradients' error, ||g - g64|| / ||g64|| over all parameters together.

Beside them, the same two numbers for PyTorch's autocast on the same batch
and weights (autocast.npz, made by tools/hf_models/autocast_reference.py).

Bounds, in units of the 16-bit unit roundoff u (2^-8 for bf16, 2^-11 for
fp16). Every GEMM input and every 16-bit activation is rounded once to
relative error u/2 (round to nearest even), so the loss, a mean over many
positions of values that passed through a few such roundings, stays within
2u. The gradients pass through the forward's roundings and the backward's
own, and how much they grow depends on the model's conditioning: PyTorch's
autocast, which rounds at the same places (and at a few more: trainc keeps
a 16-bit product that is only widened, such as a weight gradient, in f32),
measures 0.7u-1.6u on the
decoder and encoder models, 7.9u on OPT and 8.8u on T5 (bf16). So the tight check is
against autocast itself, on the same weights and batch: trainc's gradient
error at most 2x autocast's plus u/2. The absolute bound, 16u (6.3% for
bf16, 0.8% for fp16), catches what is grossly wrong even where autocast is
loose (gradients still multiplied by the fp16 loss scale were off by 10^8 u).
With fp16, the initial loss scale 2^16 may overflow the scaled backward
pass (ViT's does, in PyTorch too): then trainc's gradients must be
non-finite exactly when autocast's are (GradScaler and trainc both skip such
a step and halve the scale; loss_scale.test checks that).
Prints one line per model and type; exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

from hf_models import unpacked

UNIT_ROUNDOFF = {'bf16': 2.0 ** -8, 'fp16': 2.0 ** -11}
# --precision tf32 rounds only the matmuls' operands, to 11 significant bits
# (PyTorch's CPU autocast has no TF32, so only the benchmark GPT's check,
# against float32, covers it; the same bounds in its u).
BENCHMARK_UNIT_ROUNDOFF = {**UNIT_ROUNDOFF, 'tf32': 2.0 ** -11}
LOSS_BOUND_U = 2.0
GRAD_BOUND_U = 16.0
MODELS = ('gpt2', 'llama', 'mistral', 'qwen2', 'gpt_neox', 'gptj', 'falcon', 'phi3', 'qwen3',
          'opt', 'gemma', 'bert', 'roberta', 'vit', 't5', 'bart', 'bloom', 'mpt',
          'gpt_bigcode', 'albert')


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[:3])}")
    return result


def grad_error(grads, ref, prefix, aliases):
    """||g - g64|| / ||g64|| over the parameters the reference has."""
    num = den = 0.0
    for key in ref.files:
        if not key.startswith('grad_f64/'):
            continue
        name = key[len('grad_f64/'):]
        exact = ref[key].astype(np.float64)
        got = grads.get(name)
        if got is None:
            raise RuntimeError(f"no gradient of '{name}' ({prefix})")
        num += float(np.sum((got.astype(np.float64) - exact) ** 2))
        den += float(np.sum(exact ** 2))
    return np.sqrt(num / den)


def check(args, model, work):
    import json
    d = os.path.join(args.data_dir, model)
    info = json.load(open(os.path.join(args.data_dir, 'summary.json')))['models'][model]
    aliases = info.get('aliases', {})
    ref = np.load(os.path.join(d, 'reference.npz'))
    torch_ref = np.load(os.path.join(d, 'autocast.npz'))
    inputs = []
    for name in info['inputs']:
        inputs += ['--input', f'{name}={os.path.join(d, name + ".npy")}']
    ok = True
    loss64 = float(ref['loss_f64'])
    os.makedirs(os.path.join(work, model), exist_ok=True)
    model_path = unpacked(os.path.join(d, 'ts17.onnx'), os.path.join(work, model))
    for precision, u in UNIT_ROUNDOFF.items():
        exe = os.path.join(work, f'{model}_{precision}.tcx')
        out = os.path.join(work, f'{model}_{precision}')
        run([args.trainc, model_path,
             '--train',
             '--optimizer', 'none',
             '--precision', precision, '-o', exe])
        run([args.trainc_run, exe, *inputs, '--output-dir', out])
        grads = {}
        for f in os.listdir(out):
            if f.endswith('.grad.npy'):
                name = f[:-len('.grad.npy')]
                grads[aliases.get(name, name)] = np.load(os.path.join(out, f))
        loss_err = abs(float(np.load(os.path.join(out, 'loss.npy'))) - loss64) / abs(loss64)
        g_err = grad_error(grads, ref, 'trainc', aliases)
        torch_grads = {k[len(f'grad_{precision}/'):]: torch_ref[k] for k in torch_ref.files
                       if k.startswith(f'grad_{precision}/')}
        t_loss_err = abs(float(torch_ref[f'loss_{precision}']) - loss64) / abs(loss64)
        t_g_err = grad_error(torch_grads, ref, 'autocast', aliases)
        problems = []
        if not np.isfinite(t_g_err) or not np.isfinite(g_err):
            same = np.isfinite(t_g_err) == np.isfinite(g_err)
            print(f'{model} {precision}: the scaled backward pass overflows at 2^16 in '
                  f'autocast: {"yes" if not np.isfinite(t_g_err) else "no"}, trainc: '
                  f'{"yes" if not np.isfinite(g_err) else "no"}'
                  f'{"" if same else ": FAIL (they differ)"}')
            ok &= same
            continue
        if loss_err > LOSS_BOUND_U * u:
            problems.append(f'loss error {loss_err / u:.2f}u > {LOSS_BOUND_U}u')
        if g_err > GRAD_BOUND_U * u:
            problems.append(f'gradient error {g_err / u:.2f}u > {GRAD_BOUND_U}u')
        if g_err > 2 * t_g_err + u / 2:
            problems.append(f'gradient error {g_err / u:.2f}u > 2 x autocast '
                            f'({t_g_err / u:.2f}u) + u/2')
        print(f'{model} {precision}: loss error trainc {loss_err:.2e} ({loss_err / u:.2f}u), '
              f'autocast {t_loss_err:.2e} ({t_loss_err / u:.2f}u); gradient error trainc '
              f'{g_err:.2e} ({g_err / u:.2f}u), autocast {t_g_err:.2e} ({t_g_err / u:.2f}u)'
              f'{": FAIL " + "; ".join(problems) if problems else ""}')
        ok &= not problems
    return ok


def check_tinygpt(args, work):
    """tinygpt (../shared/data, torch.onnx.export's graph) against its float64
    reference; there is no autocast reference for it, so the absolute bounds
    alone."""
    import json
    d = os.path.join(args.tinygpt, 'tied_erf')
    meta = json.load(open(os.path.join(d, 'meta.json')))
    exact = {e['name'][len('grad/'):]: np.fromfile(os.path.join(d, e['file']), '<f8')
             for e in meta['raw_f64'] if e['name'].startswith('grad/')}
    loss64 = float(meta['loss_f64'])
    raw = os.path.join(d, 'raw_f32')
    ok = True
    for precision, u in UNIT_ROUNDOFF.items():
        exe = os.path.join(work, f'tinygpt_{precision}.tcx')
        out = os.path.join(work, f'tinygpt_{precision}')
        run([args.trainc, os.path.join(d, 'model_train_opset17.onnx'), '--train',
             '--optimizer', 'none', '--precision', precision, '-o', exe])
        run([args.trainc_run, exe, '--input', f'tokens={raw}/tokens.bin',
             '--input', f'targets={raw}/targets.bin', '--output-dir', out])
        loss_err = abs(float(np.load(os.path.join(out, 'loss.npy'))) - loss64) / abs(loss64)
        num = den = 0.0
        for name, g64 in exact.items():
            g = np.load(os.path.join(out, name.replace('/', '_') + '.grad.npy'))
            num += float(np.sum((g.reshape(-1).astype(np.float64) - g64) ** 2))
            den += float(np.sum(g64 ** 2))
        g_err = np.sqrt(num / den)
        problems = []
        if loss_err > LOSS_BOUND_U * u:
            problems.append(f'loss error {loss_err / u:.2f}u > {LOSS_BOUND_U}u')
        if g_err > GRAD_BOUND_U * u:
            problems.append(f'gradient error {g_err / u:.2f}u > {GRAD_BOUND_U}u')
        print(f'tinygpt {precision}: loss error {loss_err:.2e} ({loss_err / u:.2f}u); '
              f'gradient error {g_err:.2e} ({g_err / u:.2f}u)'
              f'{": FAIL " + "; ".join(problems) if problems else ""}')
        ok &= not problems
    return ok


def check_benchmark_gpt(args, work):
    """The 4-layer benchmark GPT (tools/make_gpt.py: d 256, seq 128, batch 8)
    against trainc's own float32 step: float32's error (about 1e-6 relative
    on tinygpt, meta.json grad_maxrel_f32_vs_f64) is three orders of
    magnitude below u, so it stands in for float64 here."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                                    'tools'))
    import make_gpt
    cfg = make_gpt.GptConfig(vocab=256, seq=128, batch=8, d_model=256, heads=4, layers=4)
    model, inputs = make_gpt.write_model_and_batch(cfg, work, 'bench_gpt')
    results = {}
    for precision in ('f32', *BENCHMARK_UNIT_ROUNDOFF):
        exe = os.path.join(work, f'bench_{precision}.tcx')
        out = os.path.join(work, f'bench_{precision}')
        run([args.trainc, model, '--train', '--optimizer', 'none', '--precision', precision,
             '-o', exe])
        run([args.trainc_run, exe, *inputs, '--output-dir', out])
        results[precision] = {f: np.load(os.path.join(out, f)).astype(np.float64)
                              for f in os.listdir(out)}
    ok = True
    ref = results['f32']
    for precision, u in BENCHMARK_UNIT_ROUNDOFF.items():
        got = results[precision]
        loss_err = abs(float(got['loss.npy']) - float(ref['loss.npy'])) / abs(float(ref['loss.npy']))
        grads = [f for f in ref if f.endswith('.grad.npy')]
        num = sum(float(np.sum((got[f] - ref[f]) ** 2)) for f in grads)
        den = sum(float(np.sum(ref[f] ** 2)) for f in grads)
        g_err = np.sqrt(num / den)
        problems = []
        if loss_err > LOSS_BOUND_U * u:
            problems.append(f'loss error {loss_err / u:.2f}u > {LOSS_BOUND_U}u')
        if not g_err <= GRAD_BOUND_U * u:
            problems.append(f'gradient error {g_err / u:.2f}u > {GRAD_BOUND_U}u')
        print(f'benchmark GPT {precision}: loss error {loss_err:.2e} ({loss_err / u:.2f}u); '
              f'gradient error {g_err:.2e} ({g_err / u:.2f}u) against float32'
              f'{": FAIL " + "; ".join(problems) if problems else ""}')
        ok &= not problems
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True)
    parser.add_argument('--trainc-run', required=True)
    parser.add_argument('--data-dir', required=True, help='test/Models/hf')
    parser.add_argument('--tinygpt', required=True, help='../shared/data/tinygpt')
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as work:
        ok &= check_tinygpt(args, work)
        ok &= check_benchmark_gpt(args, work)
        for model in MODELS:
            try:
                ok &= check(args, model, work)
            except RuntimeError as e:
                print(f'{model}: FAIL {e}')
                ok = False
    print('hf_precision: ' + ('all within bounds' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
