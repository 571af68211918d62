#!/usr/bin/env python3
"""A BERT-base-sized JAX encoder, exported as StableHLO, compiled and run forward by trainc.

    build/venv/bin/python test/Models/jax_bert_forward.py \\
        --trainc build/bin/trainc --trainc-run build/bin/trainc-run [--layers 12]

jax_models.BertEncoder (12 layers, d_model 768, 12 heads, FFN 3072, vocab
30522, post-LayerNorm, padding mask, tied masked-LM head: 109.5M float32
parameters with 12 layers) with params from jax.random.key(0) and a batch of
2 x 128 tokens from jax.random.key(1):

1. export: tools/jax_export.py's export() writes model.mlir,
   model.safetensors and the batch (tokens, targets, mask) as .npy;
2. compile: `trainc model.mlir --params model.safetensors -o fwd.tcx`
   (forward only: no --train), timed by the wall clock; prints
   "compile: X s for N parameters" and the executable's size;
3. run: `trainc-run fwd.tcx --input "batch['tokens']=..." ... --repeat 3`,
   timed (the process, and the median forward pass trainc-run reports);
   its loss must be within 1e-4 relative of JAX's float32 loss (jax.jit on
   the CPU).

Why 1e-4: both are float32 evaluations of the same ~57 GFLOP function with
different summation orders (OpenBLAS vs XLA's GEMMs, reductions over 768 and
3072 features, a log-sum-exp over 30522 logits), so they may differ by
float32 round-off, which nothing here amplifies much: each post-LayerNorm
layer renormalizes its input. Measured with 12 layers: JAX float32 is 1.0e-7
off JAX float64 (--f64) and trainc's loss equals JAX's float32 one to the
last bit, so 1e-4 leaves three orders of magnitude for other BLAS builds and
thread counts. It is still below what real errors give with
BertEncoder.init_params's sizes (on 2 layers: attention ignoring the padding
mask 2.3e-4, every attention output 1% off 1.1e-4, every LayerNorm output
0.1% off 9.7e-4); the tanh GELU in place of the exact one (<3e-6) is below
any loss-only check.

The recognized composites (`trainc --compile-to=recognize`: layer_norm,
gelu, attention, softmax_cross_entropy, ...) are printed for information,
not checked.

--layers N makes a shallower encoder of the same width (the default is 12);
--f64 also computes JAX's float64 loss to show the float32 round-off.
Exits 1 on a failure.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jax_export  # noqa: E402
import jax_models  # noqa: E402

RTOL = 1e-4
REPEAT = 3
COMPOSITES = ('layer_norm', 'rms_norm', 'gelu', 'softmax', 'attention',
              'softmax_cross_entropy')
PARAMS_SEED, BATCH_SEED = 0, 1


def timed(cmd):
    """Run cmd; (seconds of wall clock, CompletedProcess). Raises on failure."""
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[:5])}")
    return seconds, result


def mib(n):
    return f'{n / 2**20:.1f} MiB'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trainc', required=True, help='the trainc binary')
    parser.add_argument('--trainc-run', required=True, help='the trainc-run binary')
    parser.add_argument('--layers', type=int, default=12, help='encoder layers (default 12)')
    parser.add_argument('--f64', action='store_true',
                        help="also compute JAX's float64 loss (prints float32's round-off)")
    parser.add_argument('--keep', metavar='DIR', help='work in DIR and keep the files')
    args = parser.parse_args()
    if jax.config.jax_enable_x64:
        parser.error('run with 64-bit JAX off (JAX_ENABLE_X64 unset)')
    if args.layers < 1:
        parser.error('--layers must be at least 1')
    total_start = time.perf_counter()

    model = jax_models.BertEncoder(layers=args.layers)
    params = model.init_params(jax.random.key(PARAMS_SEED))
    batch = model.example_batch(jax.random.key(BATCH_SEED))
    n_values = sum(int(np.prod(leaf.shape)) for leaf in jax.tree_util.tree_leaves(params))
    n_tensors = len(jax.tree_util.tree_leaves(params))
    print(f'BertEncoder: {args.layers} layers, d_model {model.d_model}, {model.heads} heads, '
          f'FFN {model.ffn}, vocab {model.vocab}; batch {model.batch} x {model.seq} '
          f"({int(batch['mask'].sum())} real tokens); {n_values:,} parameters in "
          f'{n_tensors} tensors', flush=True)

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        prefix = os.path.join(work, 'bert')

        start = time.perf_counter()
        exp = jax_export.export(model.loss_fn, params, batch, prefix, save_batch=True)
        export_s = time.perf_counter() - start
        print(f'export: {export_s:.2f} s (StableHLO {mib(os.path.getsize(exp.mlir_path))}, '
              f'safetensors {mib(os.path.getsize(exp.safetensors_path))})', flush=True)

        start = time.perf_counter()
        jax_loss = float(jax.jit(model.loss_fn)(params, batch))
        jax_s = time.perf_counter() - start
        print(f'JAX float32 loss {jax_loss!r} ({jax_s:.2f} s with jit)', flush=True)
        if args.f64:
            with jax.enable_x64(True):
                p64 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float64), params)
                loss64 = float(jax.jit(model.loss_fn)(p64, batch))
            print(f'JAX float64 loss {loss64:.10f}; JAX float32 off it by '
                  f'{abs(jax_loss - loss64) / abs(loss64):.1e} relative', flush=True)

        exe, out = os.path.join(work, 'fwd.tcx'), os.path.join(work, 'out')
        try:
            compile_s, _ = timed([args.trainc, exp.mlir_path, '--params',
                                  exp.safetensors_path, '-o', exe])
            print(f'compile: {compile_s:.2f} s for {n_values:,} parameters '
                  f'(executable {mib(os.path.getsize(exe))})', flush=True)
            inputs = [a for n in exp.input_names
                      for a in ('--input', f'{n}={exp.input_files[n]}')]
            run_s, res = timed([args.trainc_run, exe, *inputs, '--output-dir', out,
                                '--repeat', str(REPEAT)])
            _, rec = timed([args.trainc, exp.mlir_path, '--params', exp.safetensors_path,
                            '--compile-to=recognize'])
        except RuntimeError as e:
            print(f'FAILED: {e}')
            return 1
        median = re.search(r'median ([0-9.]+) ms', res.stdout)
        peak = re.search(r'memory peak planned (\d+)', res.stdout)
        print(f'run: {run_s:.2f} s for trainc-run with {REPEAT} runs (loading the executable '
              f"included); median forward {median.group(1) if median else '?'} ms, planned "
              f"peak memory {mib(int(peak.group(1))) if peak else '?'}")
        ops = collections.Counter(re.findall(r'=\s*graph\.(\w+)\b', rec.stdout))
        print('composites (information): ' + ', '.join(f'{c} {ops[c]}' for c in COMPOSITES)
              + f"; dot_general {ops['dot_general']}")
        loss = float(np.load(os.path.join(out, 'loss.npy')))
        r = abs(loss - jax_loss) / abs(jax_loss)
        print(f'loss: trainc {loss!r}, JAX float32 {jax_loss!r}, relative {r:.1e} '
              f'(bound {RTOL:.0e})')
        if not np.isfinite(loss) or r > RTOL:
            print(f"MISMATCH: trainc's loss is off JAX's by {r:.1e} relative")
            ok = False
    print(f'total: {time.perf_counter() - total_start:.1f} s')
    print('jax_bert_forward: ' + ('ok' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
