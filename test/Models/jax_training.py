#!/usr/bin/env python3
"""JAX models, exported as StableHLO by tools/jax_export.py, trained by trainc against JAX.

For each model of test/Models/jax_models.py (a small GPT, an MLP, a
residual MLP looping over its layers with lax.scan, the GPT as Flax and
optax write it (einsum attention, flax.linen.LayerNorm's fast variance,
optax's integer-label cross-entropy), a Llama-style decoder using
jax.nn.dot_product_attention, and a CNN of lax.conv_general_dilated
(strided, dilated, depthwise) and a max pool; plain jax.numpy), with
params from init_params(jax.random.key(0)) and the batch
from example_batch(jax.random.key(1)):

1. export: tools/jax_export.py's export() writes model.mlir,
   model.safetensors and the batch leaves as .npy; @main's argument names
   must be the pytree paths (params['wte'], batch['tokens'], ...), the
   safetensors keys exactly the parameter names, and load_params() must
   give back the initial params bit for bit. The command line
   (`tools/jax_export.py FILE:GPT.loss_fn --params-fn ... --batch-fn ...`,
   run as a subprocess with the same seeds) must write the same names,
   parameters and batch;
2. gradients: `trainc model.mlir --params model.safetensors --train
   --optimizer none`, run by trainc-run on the exported batch
   (`--input "batch['tokens']=..."`); the loss and every parameter's
   gradient (`<name>.grad.npy`) must be within 1e-4 of the norm of JAX's
   float64 value (jax.grad under jax.enable_x64 with params and batch
   floats cast to float64; JAX's own float32 error is printed for scale).
   Every parameter must have a gradient and every gradient a parameter;
3. training: 11 AdamW steps (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight
   decay 0.01 on every parameter) on the same batch; each step's loss
   within 1e-5 relative of optax.adamw's run with the same hyperparameters
   in float64 (params and batch cast; optax's float32 run's distance from
   it is printed). optax.adamw(lr, b1, b2, eps, weight_decay) is
   scale_by_adam -> add_decayed_weights -> scale(-lr):
   w -= lr * (m^/(sqrt(v^) + eps) + wd * w), bias-corrected moments from
   step 1, eps outside the square root. PyTorch's AdamW (trainc's
   semantics) first decays w *= 1 - lr * wd, then subtracts
   lr * m^/(sqrt(v^) + eps): the same update in exact arithmetic (both
   decay the weight from before the step). The reference is float64, not
   optax's float32 run, because optax computes the bias correction
   1 - b2**t in float32 from b2 rounded to float32 (0.99900001) while the
   moment update multiplies g^2 by 1 - b2 rounded from 0.001: in float32
   v^ comes out 1.3e-5 too large, every step 6.4e-6 too small, and the
   11-step curve drifts steadily away from the exact one (by 3.8e-6 on the
   GPT, 4.9e-6 on the MLP at step 11), half the tolerance. With betas
   exact in float32 (0.875, 1 - 2^-10) optax's float32 curve stays within
   2e-7 of its float64 one. trainc and PyTorch compute the bias
   corrections in float64; a float32 numpy AdamW of PyTorch's formula
   stays within 2e-7 of optax's float64 curve on these models;
4. trained weights: `trainc-run --save-safetensors` after the 11 steps,
   read back with jax_export.load_params(): the same tree, shapes and
   dtypes, finite, every leaf changed from its initial value, and the loss
   JAX computes with them (float64) within 1e-5 relative of the loss with
   optax's float64 weights after the same 11 steps;
5. forward: the executable compiled without --train gives the loss within
   1e-5 relative of JAX's float32 loss;
6. composites: `trainc --compile-to=recognize` must find the model's
   expected composites in the StableHLO import (the GPT: graph.layer_norm,
   graph.gelu, graph.attention, graph.softmax_cross_entropy), as it finds
   them in the ONNX export of the same model;
7. the as_text form: jax.jit(loss_fn).lower(...).as_text(debug_info=True)
   (the pretty form with chlo ops and arguments named by debug info)
   compiles forward with the same --params and gives JAX's float32 loss
   within 1e-5 relative.

Then, on small losses of one parameter vector: gradients that are
conventions (kinks, ties, sorts, scatters: check_gradient_conventions),
and jax.random's samplers (check_random_draws: the gradient of
sum(w * draws) is the draws, so trainc must draw JAX's values).

Prints one line per model and check; exits 1 on any failure. With
--export-only, runs step 1 and the JAX references of steps 2 to 4 and
never calls trainc (for working on the exporter without a frontend).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import safetensors.numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
sys.path.insert(0, HERE)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import jax_export  # noqa: E402
import jax_models  # noqa: E402

GRAD_RTOL = 1e-4
# A parameter whose float64 gradient is below ZERO_GRAD of the total norm
# has an exactly zero gradient; float32 round-off must keep trainc's below
# ZERO_GRAD_F32 of the total. (Neither model has one: GPT's key bias, which
# softmax cancels, is a slice of the fused bqkv.)
ZERO_GRAD = 1e-12
ZERO_GRAD_F32 = 1e-6
CURVE_RTOL = 1e-5
FORWARD_RTOL = 1e-5
STEPS = 11
LR, B1, B2, EPS, WD = 1e-3, 0.9, 0.999, 1e-8, 0.01
ADAMW = ['--optimizer', 'adamw', '--lr', str(LR), '--beta1', str(B1), '--beta2', str(B2),
         '--eps', str(EPS), '--weight-decay', str(WD), '--decay-all']
PARAMS_SEED, BATCH_SEED = 0, 1  # tools/jax_export.py's default --seed and --batch-seed
#: Composites trainc's recognizer should find in each model (printed only).
COMPOSITES = {'gpt': ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy'),
              'mlp': (), 'dropout_mlp': (), 'scan_mlp': (),
              # jax.nn.dot_product_attention: 5-D products over
              # [B, T, N, G=1, H] and a unit-dim transpose before the mask.
              'llama': ('rms_norm', 'attention', 'softmax_cross_entropy'),
              'einsum_gpt': ('layer_norm', 'gelu', 'attention', 'softmax_cross_entropy'),
              # Convolutions read their patches with graph.extract_patches.
              'cnn': ('extract_patches', 'softmax_cross_entropy')}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {' | '.join(lines[:3])}")
    return result


def rel(a, b):
    nb = float(np.linalg.norm(b))
    d = float(np.linalg.norm(np.asarray(a, np.float64) - b))
    return d / nb if nb > 0 else d


def output_file(directory, name):
    """Where trainc-run --output-dir writes output NAME (its fileNameFor)."""
    for c in '/\\:':
        name = name.replace(c, '_')
    return os.path.join(directory, name + '.npy')


def to_f64(tree):
    """tree with every float leaf cast to float64 (call under jax.enable_x64)."""
    return jax.tree_util.tree_map(
        lambda x: jnp.asarray(x, jnp.float64) if jnp.issubdtype(x.dtype, jnp.floating)
        else jnp.asarray(x), tree)


def adamw_run(model, params, batch):
    """Losses of STEPS optax.adamw steps on one batch, and the loss after them."""
    opt = optax.adamw(LR, b1=B1, b2=B2, eps=EPS, weight_decay=WD)
    value_and_grad = jax.value_and_grad(model.loss_fn)

    @jax.jit
    def step(p, state):
        loss, g = value_and_grad(p, batch)
        updates, state = opt.update(g, state, p)
        return optax.apply_updates(p, updates), state, loss

    p, state, losses = params, opt.init(params), []
    for _ in range(STEPS):
        p, state, loss = step(p, state)
        losses.append(float(loss))
    return np.array(losses), float(jax.jit(model.loss_fn)(p, batch))


def references(model, params, batch):
    """JAX's loss and gradients and optax's AdamW run, in float64 and float32."""
    with jax.enable_x64(True):
        loss64, grads64 = jax.value_and_grad(model.loss_fn)(to_f64(params), to_f64(batch))
        loss64, grads64 = float(loss64), jax.tree_util.tree_map(np.asarray, grads64)
        adamw64, final64 = adamw_run(model, to_f64(params), to_f64(batch))
    loss32, grads32 = jax.jit(jax.value_and_grad(model.loss_fn))(params, batch)
    adamw32, _ = adamw_run(model, params, batch)
    return {'loss_f64': loss64, 'grads_f64': grads64, 'loss_f32': float(loss32),
            'grads_f32': jax.tree_util.tree_map(np.asarray, grads32),
            'adamw_f64': adamw64, 'adamw_final_f64': final64,
            'adamw_f32': adamw32}


def check_export(name, model, params, batch, work):
    """Step 1. Returns (problems, Exported)."""
    problems = []
    prefix = os.path.join(work, name)
    result = jax_export.export(model.loss_fn, params, batch, prefix, save_batch=True)
    want_params = [n for n, _ in jax_export.leaf_names('params', params)]
    want_inputs = [n for n, _ in jax_export.leaf_names('batch', batch)]
    if result.param_names != want_params or result.input_names != want_inputs:
        problems.append(f'names {result.param_names + result.input_names}, '
                        f'expected {want_params + want_inputs}')
    stored = safetensors.numpy.load_file(result.safetensors_path)
    if sorted(stored) != sorted(want_params):
        problems.append(f'safetensors keys {sorted(stored)}, expected {sorted(want_params)}')
    back = jax_export.load_params(result.safetensors_path, params)
    same = jax.tree_util.tree_map(
        lambda a, b: a.dtype == b.dtype and a.shape == b.shape and bool(jnp.all(a == b)),
        back, params)
    if jax.tree_util.tree_structure(back) != jax.tree_util.tree_structure(params) or \
            not all(jax.tree_util.tree_leaves(same)):
        problems.append('load_params() does not give back the initial params')
    text = open(result.mlir_path).read()
    if 'chlo.' in text:
        problems.append('the module still has chlo ops')

    # The command line, as a user runs it, must write the same thing.
    cli_prefix = os.path.join(work, name + '_cli')
    spec = f'{os.path.join(HERE, "jax_models.py")}:{model.__name__}'
    run([sys.executable, os.path.join(ROOT, 'tools', 'jax_export.py'), f'{spec}.loss_fn',
         '--params-fn', f'{spec}.init_params', '--batch-fn', f'{spec}.example_batch',
         '--seed', str(PARAMS_SEED), '--batch-seed', str(BATCH_SEED),
         '-o', cli_prefix, '--save-batch'])
    cli_stored = safetensors.numpy.load_file(cli_prefix + '.safetensors')
    if sorted(cli_stored) != sorted(stored) or \
            any(not np.array_equal(cli_stored[k], stored[k]) for k in stored):
        problems.append('the command line wrote other parameters than export()')
    if jax_export.main_argument_names(open(cli_prefix + '.mlir').read()) != \
            result.param_names + result.input_names:
        problems.append('the command line wrote other argument names than export()')
    for n, path in result.input_files.items():
        cli_path = cli_prefix + path[len(prefix):]
        if not os.path.exists(cli_path) or not np.array_equal(np.load(cli_path), np.load(path)):
            problems.append(f"the command line wrote another {n!r} than export()")
    return problems, result


def check_trainc(args, name, result, params, ref, work):
    """Steps 2 to 5. Returns (problems, measured)."""
    problems, measured = [], {}
    model_args = [result.mlir_path, '--params', result.safetensors_path]
    inputs = []
    for n in result.input_names:
        inputs += ['--input', f'{n}={result.input_files[n]}']

    ir = run([args.trainc, *model_args, '--compile-to=recognize']).stdout
    measured['composites'] = [c for c in COMPOSITES[name] if f'graph.{c} ' in ir]

    # 2. Gradients.
    exe, out = os.path.join(work, 'grads.tcx'), os.path.join(work, 'grads')
    run([args.trainc, *model_args, '--train', '--optimizer', 'none', '-o', exe])
    run([args.trainc_run, exe, *inputs, '--output-dir', out])
    measured['loss'] = abs(float(np.load(os.path.join(out, 'loss.npy'))) -
                           ref['loss_f64']) / abs(ref['loss_f64'])
    if measured['loss'] > GRAD_RTOL:
        problems.append(f"loss off by {measured['loss']:.2e} relative")
    g64 = dict(jax_export.leaf_names('params', ref['grads_f64']))
    g32 = dict(jax_export.leaf_names('params', ref['grads_f32']))
    expected_files = {output_file(out, n + '.grad'): n for n in result.param_names}
    extra = [f for f in sorted(os.listdir(out)) if f.endswith('.grad.npy') and
             os.path.join(out, f) not in expected_files]
    if extra:
        problems.append(f'gradients of tensors that are not parameters: {", ".join(extra)}')
    total = np.sqrt(sum(float(np.sum(g ** 2)) for g in g64.values()))
    worst, worst_name, ref_noise, zero_worst = 0.0, '', 0.0, 0.0
    for path, n in expected_files.items():
        if not os.path.exists(path):
            problems.append(f"no gradient of {n!r} ({os.path.basename(path)})")
            continue
        g, exact = np.load(path), g64[n]
        if g.shape != exact.shape:
            problems.append(f"gradient of {n!r} has shape {g.shape}, JAX's {exact.shape}")
            continue
        if np.linalg.norm(exact) <= ZERO_GRAD * total:
            zero_worst = max(zero_worst, float(np.linalg.norm(g)) / total)
            continue
        e = rel(g, exact)
        ref_noise = max(ref_noise, rel(g32[n], exact))
        if e > worst:
            worst, worst_name = e, n
    if zero_worst > ZERO_GRAD_F32:
        problems.append(f'a gradient that is exactly zero is {zero_worst:.1e} of the total norm')
    measured['grad'], measured['grad_name'], measured['noise'] = worst, worst_name, ref_noise
    if worst > GRAD_RTOL:
        problems.append(f"gradient of {worst_name!r} off by {worst:.2e} of its norm")

    # 3. AdamW curve; 4. the trained weights.
    exe, log = os.path.join(work, 'adamw.tcx'), os.path.join(work, 'adamw.jsonl')
    trained = os.path.join(work, 'trained.safetensors')
    run([args.trainc, *model_args, '--train', *ADAMW, '-o', exe])
    run([args.trainc_run, exe, *inputs, '--steps', str(STEPS), '--log-jsonl', log,
         '--output-dir', os.path.join(work, 'adamw'), '--save-safetensors', trained])
    losses = [json.loads(line)['loss'] for line in open(log) if line.strip()]
    want = ref['adamw_f64']
    if len(losses) != len(want):
        problems.append(f'{len(losses)} AdamW steps logged, expected {len(want)}')
        measured['curve'] = float('inf')
    else:
        measured['curve'] = float(np.max(np.abs(np.array(losses) - want) / np.abs(want)))
        if measured['curve'] > CURVE_RTOL:
            problems.append(f"AdamW curve off by {measured['curve']:.2e} relative "
                            f"(trainc {losses}, optax float64 {want.tolist()})")
    measured['trained'] = float('inf')
    try:
        weights = jax_export.load_params(trained, params)
    except (ValueError, OSError) as e:
        problems.append(f'trained weights: {e}')
    else:
        leaves = jax.tree_util.tree_leaves(weights)
        if jax.tree_util.tree_structure(weights) != jax.tree_util.tree_structure(params):
            problems.append('trained weights: another tree than the params')
        elif not all(bool(jnp.all(jnp.isfinite(w))) for w in leaves):
            problems.append('trained weights are not all finite')
        else:
            unchanged = [n for (n, w0), w in zip(jax_export.leaf_names('params', params),
                                                  leaves) if bool(jnp.all(w == w0))]
            if unchanged:
                problems.append(f'trained weights equal to the initial ones: {unchanged}')
            with jax.enable_x64(True):
                loss = float(jax_models.MODELS[name].loss_fn(to_f64(weights),
                                                             to_f64(ref['batch'])))
            want = ref['adamw_final_f64']
            measured['trained'] = abs(loss - want) / abs(want)
            if measured['trained'] > CURVE_RTOL:
                problems.append(f"loss with the trained weights {loss}, with optax's "
                                f"{want} ({measured['trained']:.2e} relative)")

    # 5. Forward.
    exe, out = os.path.join(work, 'fwd.tcx'), os.path.join(work, 'fwd')
    run([args.trainc, *model_args, '-o', exe])
    run([args.trainc_run, exe, *inputs, '--output-dir', out])
    measured['forward'] = abs(float(np.load(os.path.join(out, 'loss.npy'))) -
                              ref['loss_f32']) / abs(ref['loss_f32'])
    if measured['forward'] > FORWARD_RTOL:
        problems.append(f"forward loss off JAX's float32 loss by {measured['forward']:.2e}")

    # 7. The other form JAX prints: jax.jit(...).lower(...).as_text(), with
    # debug info so that the arguments carry their names (chlo ops kept).
    text = jax.jit(ref['loss_fn'], keep_unused=True).lower(params, ref['batch']).as_text(
        debug_info=True)
    as_text, exe = os.path.join(work, 'as_text.mlir'), os.path.join(work, 'as_text.tcx')
    with open(as_text, 'w') as f:
        f.write(text)
    out = os.path.join(work, 'as_text')
    run([args.trainc, as_text, '--params', result.safetensors_path, '-o', exe])
    run([args.trainc_run, exe, *inputs, '--output-dir', out])
    measured['as_text'] = abs(float(np.load(os.path.join(out, 'loss.npy'))) -
                              ref['loss_f32']) / abs(ref['loss_f32'])
    if measured['as_text'] > FORWARD_RTOL:
        problems.append(f"the as_text() form's loss is off JAX's by {measured['as_text']:.2e}")
    return problems, measured


def check_model(args, name, model, work):
    """Every check of one model; prints its lines and returns whether all passed."""
    params = model.init_params(jax.random.key(PARAMS_SEED))
    batch = model.example_batch(jax.random.key(BATCH_SEED))
    problems, result = check_export(name, model, params, batch, work)
    arrays = {n: np.load(result.input_files[n]) for n in result.input_names}
    inputs = ', '.join(f'{n} {a.dtype}{list(a.shape)}' for n, a in arrays.items())
    print(f'{name} export: {len(result.param_names)} parameters, inputs {inputs} '
          f"-> {'ok' if not problems else 'FAILED'}", flush=True)
    for p in problems:
        print(f'  {name}: {p}')
    ok = not problems

    ref = references(model, params, batch)
    ref['batch'] = batch
    ref['loss_fn'] = model.loss_fn
    noise = max(rel(g, e) for g, e in zip(jax.tree_util.tree_leaves(ref['grads_f32']),
                                          jax.tree_util.tree_leaves(ref['grads_f64'])))
    curve32 = float(np.max(np.abs(ref['adamw_f32'] - ref['adamw_f64']) / ref['adamw_f64']))
    print(f"{name} references: loss f64 {ref['loss_f64']:.6f} (f32 rel "
          f"{abs(ref['loss_f32'] - ref['loss_f64']) / ref['loss_f64']:.1e}), worst JAX f32 "
          f"gradient rel {noise:.1e}; optax AdamW f64 {ref['adamw_f64'][0]:.6f} -> "
          f"{ref['adamw_f64'][-1]:.6f}, after {STEPS} steps {ref['adamw_final_f64']:.6f} "
          f"(optax f32 curve rel {curve32:.1e})", flush=True)
    if args.export_only:
        return ok

    try:
        problems, m = check_trainc(args, name, result, params, ref, work)
    except RuntimeError as e:
        print(f'{name} trainc: {e} -> FAILED', flush=True)
        return False
    verdict = 'ok' if not problems else 'MISMATCH'
    missing = [c for c in COMPOSITES[name] if c not in m['composites']]
    print(f"{name} gradients: loss rel {m['loss']:.1e}, worst gradient rel {m['grad']:.1e} "
          f"({m['grad_name']}; JAX f32 vs f64 {m['noise']:.1e})")
    print(f"{name} adamw: {STEPS}-step curve rel {m['curve']:.1e}; loss with the trained "
          f"weights vs optax's rel {m['trained']:.1e}")
    print(f"{name} forward: loss vs JAX f32 rel {m['forward']:.1e}; the as_text() "
          f"form's rel {m['as_text']:.1e}")
    print(f"{name} composites: "
          f"{', '.join(m['composites']) or 'none'} recognized"
          + (f"; not recognized: {', '.join(missing)}" if missing else ''))
    if missing:
        problems.append(f"composites not recognized: {', '.join(missing)}")
    print(f'{name}: -> {verdict}', flush=True)
    for p in problems:
        print(f'  {name}: {p}')
    return ok and not problems


def check_gradient_rules(work):
    """export() refuses what trainc cannot differentiate as JAX does: a
    jax.custom_vjp and a stop_gradient that changes the gradient; it
    accepts stop_gradients that change none (inside log_softmax and
    logsumexp, on data); a loss that returns more than a scalar is named as
    such."""
    params, batch = {'w': jnp.array([1.0, 2.0, 3.0])}, {'x': jnp.ones(3)}

    @jax.custom_vjp
    def clipped(x):
        return x
    clipped.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1, 1),))
    cases = {
        'a target held by stop_gradient': (lambda p, b: jnp.sum(
            (p['w'] * b['x'] - jax.lax.stop_gradient(3 * p['w'])) ** 2),
            "stop_gradient changes the gradient of parameter \"p['w']\""),
        'a custom_vjp': (lambda p, b: jnp.sum(clipped(p['w']) * 5), 'jax.custom_vjp'),
        'log_softmax and logsumexp': (lambda p, b: jax.nn.logsumexp(p['w'] * b['x'])
                                      - jnp.sum(jax.nn.log_softmax(p['w'])), None),
        'stop_gradient on data': (lambda p, b: jnp.sum(
            p['w'] * jax.lax.stop_gradient(2 * b['x'])), None),
        # Flax's (loss, batch_stats) with a stop_gradient inside: the
        # result's type is named before the gradient check runs (JAX's own
        # "Gradient only defined for scalar-output functions" before).
        'a loss with state beside it': (lambda p, b: (
            jnp.sum(p['w'] * b['x']),
            {'mean': jax.lax.stop_gradient(jnp.mean(p['w']))}),
            'loss_fn must return one float scalar, not float32[], float32[]'),
    }
    ok = True
    for what, (loss_fn, refusal) in cases.items():
        try:
            jax_export.export(loss_fn, params, batch, os.path.join(work, 'rules', 'm'))
            got = None
        except jax_export.ExportError as e:
            got = str(e)
        good = (got is None) if refusal is None else (got is not None and refusal in got)
        print(f"gradient rules, {what}: {'exported' if got is None else 'refused'}"
              + ('' if good else f' FAIL (expected {"export" if refusal is None else refusal}'
                 f'; got {got})'))
        ok &= good
    return ok


def check_gradient_conventions(args, work):
    """Where a gradient is a convention (kinks and ties), trainc's gradient
    of an exported JAX loss is jax.grad's: parameters on the kinks of |x|
    (0 and -0: JAX's 1, PyTorch's 0), relu (0), leaky_relu, jnp.sign, ties
    of jnp.maximum/minimum between computed values (halves) and of
    jnp.max/min (shared), a where; and through prefix scans (jnp.cumsum,
    lax.cummax/cummin, reversed; reduce_window in the export) on data
    without ties: a tie inside a cummax/cummin is split along trainc's
    scan tree (Hillis-Steele), JAX's along its associative_scan, both
    subgradients; and through jnp.argmax/argmin's choices (ties, NaNs,
    ints, bools, along an axis), whose wrong index would move the
    gradient, and windows placed at such computed starts (clamped into
    range as lax's are); exact GELU and erfc at 0, where the exported erfc
    expansion's own gradient is NaN; products (jnp.prod) of parameters
    holding no zero, one and two, and jnp.cumprod; scatters (x.at[i].add
    and .set); sorts (jnp.sort, argsort, lax.top_k, two keys); lax.cond and
    lax.switch whose choice folds in an unrolled scan; bit operations on
    the parameters' bits and on data choosing them. Not here, because the export cannot show them:
    custom_jvp rules (softplus's logaddexp at 0: JAX 0.5 x, trainc
    differentiates the decomposition) and jnp.clip at its bounds (JAX
    halves the tie of max(lo, x); trainc gives PyTorch's 0 at a tie with a
    constant, which is also jax.nn.relu's custom 0)."""
    w = jnp.array([0.0, -0.0, 1.5, -2.0, 3.0, 0.5, 3.0], jnp.float32)
    batch = {'x': jnp.array([2.0, 3.0, 5.0, 7.0, 3.0, 0.5, 11.0], jnp.float32)}
    cases = {
        'abs': lambda p, b: jnp.sum(jnp.abs(p['w']) * b['x']),
        'sqrt of abs': lambda p, b: jnp.sum(jnp.sqrt(jnp.abs(p['w']) + 1.0) * b['x']),
        'maximum': lambda p, b: jnp.sum(jnp.maximum(p['w'], b['x']) * b['x']),
        'minimum': lambda p, b: jnp.sum(jnp.minimum(p['w'], b['x']) * b['x']),
        'relu': lambda p, b: jnp.sum(jax.nn.relu(p['w']) * b['x']),
        'leaky_relu': lambda p, b: jnp.sum(jax.nn.leaky_relu(p['w'], 0.1) * b['x']),
        'max': lambda p, b: jnp.max(p['w']) * 2.0,
        'min': lambda p, b: jnp.min(p['w']) * 2.0,
        'sign': lambda p, b: jnp.sum(jnp.sign(p['w']) * p['w'] * b['x']),
        'where': lambda p, b: jnp.sum(jnp.where(p['w'] >= 0.5, p['w'] ** 2, -p['w']) * b['x']),
        # Prefix scans (reduce_window): sums, a reversed one, a maximum and
        # a minimum (offsets keep their candidates apart), and integer
        # positions from a mask indexing the parameters (a negative index
        # wraps, as in numpy).
        'cumsum': lambda p, b: jnp.sum(jnp.cumsum(p['w']) * b['x']),
        'reverse cumsum': lambda p, b: jnp.sum(jax.lax.cumsum(p['w'], reverse=True) * b['x']),
        'cummax': lambda p, b: jnp.sum(
            jax.lax.cummax(p['w'] + 0.01 * jnp.arange(7.0)) * b['x']),
        'cummin over a row': lambda p, b: jnp.sum(jax.lax.cummin(
            jnp.outer(p['w'] + 1.0 + 0.1 * jnp.arange(7.0), b['x']), axis=1)),
        'positions from a mask': lambda p, b: jnp.sum(
            p['w'][jnp.cumsum((b['x'] > 2.5).astype(jnp.int32)) - 1] * b['x']),
        # jnp.argmax/argmin (a reduce of (value, index) pairs) choosing the
        # parameter that gets the gradient: ties go to the lowest index,
        # NaN beats every number, on floats, ints, bools and along an axis
        # of a matrix; and the parameters' own argmax.
        'argmax with a tie': lambda p, b: p['w'][jnp.argmax(jnp.minimum(b['x'], 5.0))] * 3.0,
        'argmin with a tie': lambda p, b: p['w'][jnp.argmin(jnp.abs(b['x'] - 3.0))] * 3.0,
        'argmax with NaNs': lambda p, b: p['w'][
            jnp.argmax(jnp.where(b['x'] > 6.0, jnp.nan, b['x']))] * 3.0,
        'argmin of ints': lambda p, b: p['w'][
            jnp.argmin(jnp.abs((b['x'] * 2.0).astype(jnp.int32) - 8))] * 3.0,
        'argmax of bools': lambda p, b: p['w'][jnp.argmax(b['x'] > 4.0)] * 3.0,
        'argmax along rows': lambda p, b: jnp.sum(p['w'][jnp.argmax(
            jnp.outer(b['x'] - 4.0, jnp.minimum(b['x'], 5.0)), axis=1)] * b['x']),
        'argmax of the parameters': lambda p, b: jnp.max(p['w'])
        * b['x'][jnp.argmax(p['w'])],
        # Python's % on ints (remainder, then the divisor's sign) choosing
        # the parameters, negative dividends among them.
        'integer %': lambda p, b: jnp.sum(
            p['w'][(b['x'].astype(jnp.int32) * 3 - 10) % 7] * b['x']),
        # Python's % on floats (stablehlo.remainder, an exact fmod, then
        # the divisor's sign), with parameters on both sides.
        'float %': lambda p, b: jnp.sum(((p['w'] * 3.0 + 0.1) % (b['x'] - 4.5))
                                        * b['x'] + (b['x'] * 1.7) % (p['w'] + 2.5)),
        # The parameters' own bits: each float's exponent (bitcast to
        # int32, shifted and masked) scales it, and its bits carry no
        # gradient (JAX's bitcast derivative is 0); and an index hashed
        # from the data by xor and shifts choosing the parameter.
        'exponent bits': lambda p, b: jnp.sum(p['w'] * b['x'] * (
            (jax.lax.bitcast_convert_type(p['w'], jnp.int32) >> 23) & 0xff).astype(jnp.float32)),
        'hashed index': lambda p, b: jnp.sum(p['w'][(
            (b['x'].astype(jnp.uint32) * jnp.uint32(2654435761)) ^
            (b['x'].astype(jnp.uint32) << 3)) % jnp.uint32(7)] * b['x']),
        # Exact GELU and erfc, whose export spells erfc out as a select
        # with 1/z^2 in its unused branch: a gradient NaN at 0 unless
        # trainc recognizes it (w holds 0 and -0).
        'exact gelu at 0': lambda p, b: jnp.sum(
            jax.nn.gelu(p['w'], approximate=False) * b['x']),
        'erfc at 0': lambda p, b: jnp.sum(jax.lax.erfc(p['w']) * b['x']),
        # Products (a reduce of multiply) with no zero, one (-0) and two
        # zeros (0 and -0: every gradient 0), and jnp.cumprod (a prefix
        # scan of multiply).
        'prod without zeros': lambda p, b: jnp.prod(p['w'][2:] * b['x'][2:] * 0.25),
        'prod with one zero': lambda p, b: jnp.prod(p['w'][1:] + 0.5 * b['x'][1:] * 0.0),
        'prod with two zeros': lambda p, b: jnp.prod(p['w']) * 2.0,
        'cumprod': lambda p, b: jnp.sum(jnp.cumprod(p['w'] * 0.5) * b['x']),
        # Scatters (x.at[i].add and .set): repeated indices add, one past
        # the end is dropped, a negative one counts from the end; set's
        # gradient is 0 where it writes, the update's where it lands; at
        # data indices (unique_indices=True), at constant ones, with a
        # window (a row's columns 1:3).
        'scatter add': lambda p, b: jnp.sum(jnp.zeros(5).at[
            (b['x'] * 2).astype(jnp.int32) % 7 - 1].add(p['w'] * b['x']) ** 2),
        'scatter add into the parameters': lambda p, b: jnp.sum(p['w'].at[
            jnp.array([1, 1, 6])].add(b['x'][:3] * p['w'][2:5]) * b['x']),
        'scatter set': lambda p, b: jnp.sum(p['w'].at[
            jnp.arange(3) * 2 + (b['x'][0] > 1).astype(jnp.int32)].set(
                p['w'][4:] * b['x'][:3], unique_indices=True) * b['x']),
        'scatter set at constant indices': lambda p, b: jnp.sum(jnp.ones((3, 4)).at[
            jnp.array([2, 0]), 1:3].set(jnp.outer(p['w'][:2], b['x'][:2])) ** 2),
        # Sorts: each value's gradient follows it to its place (ties of 0
        # and -0 and of equal values keep index order), argsort's indices
        # choose parameters, top_k's values, a sort by two keys.
        'sort': lambda p, b: jnp.sum(jnp.sort(p['w'] * b['x']) * b['x']),
        'sort along rows': lambda p, b: jnp.sum(jnp.sort(
            jnp.outer(p['w'], b['x'][:3] - 3.0), axis=0) * b['x'][:, None]),
        'argsort': lambda p, b: jnp.sum(p['w'][jnp.argsort(b['x'])] * b['x']),
        'top_k': lambda p, b: jnp.sum(
            jax.lax.top_k(p['w'] * b['x'], 3)[0] * jnp.array([1.0, 2.0, 3.0])),
        'sort by two keys': lambda p, b: jnp.sum(jax.lax.sort(
            ((b['x'] > 3.0).astype(jnp.int32), p['w']), num_keys=2)[1] * b['x']),
        # lax.cond and lax.switch inside a scan over jnp.arange: each
        # iteration's choice folds, and only the chosen branch is lowered,
        # so the branch never taken (a log of zero) leaves no NaN in the
        # gradient as it would if both were computed and one selected.
        'cond and switch in a scan': lambda p, b: jnp.sum(jax.lax.scan(
            lambda c, i: (jax.lax.switch(i % 2, [
                lambda v: jnp.sin(v) * b['x'],
                lambda v: jax.lax.cond(i < 2, lambda u: u * u, lambda u: u + b['x'], v),
                lambda v: jnp.log(v * 0.0)], c), None),
            p['w'], jnp.arange(5))[0] * b['x']),
        # Windows at a computed start (dynamic_slice and
        # dynamic_update_slice), some clamped into range.
        'slice at a computed start': lambda p, b: jnp.sum(jax.lax.dynamic_slice(
            p['w'], (jnp.argmax(b['x']) - 4,), (3,)) * b['x'][:3]),
        'clamped slice at a computed start': lambda p, b: jnp.sum(
            jax.lax.dynamic_slice(p['w'], (jnp.argmax(b['x']) - 1,), (3,)) * b['x'][:3]),
        'update at a computed start': lambda p, b: jnp.sum(jax.lax.dynamic_update_slice(
            p['w'], p['w'][:2] * b['x'][5:], (jnp.argmax(b['x']) - 3,)) * b['x']),
        'clamped update at a computed start': lambda p, b: jnp.sum(
            jax.lax.dynamic_update_slice(jnp.outer(p['w'], b['x']), jnp.outer(
                p['w'][:2], b['x'][:3]), (jnp.argmax(b['x']), jnp.argmin(b['x']) + 3)) * 0.5),
    }
    return check_gradients_of(args, os.path.join(work, 'conventions'), 'gradient conventions',
                              cases, {'w': w}, batch)


def check_random_draws(args, work):
    """jax.random's samplers inside a loss, as a training step draws noise,
    masks, indices and permutations from a key in the batch: the gradient
    of sum(w * draws) is the draws themselves, so trainc's gradient must be
    JAX's draws (threefry's bits, the bits-to-float tricks, erf_inv,
    next_after and log transforms, sorts for permutations, argmax of
    Gumbel noise). Samplers with a rejection loop (gamma, beta, dirichlet,
    poisson) compile to a loop on data, which trainc refuses by name."""
    w = jnp.linspace(-1.0, 1.0, 12, dtype=jnp.float32)
    batch = {'key': jax.random.key_data(jax.random.key(3)),
             'x': jnp.linspace(0.5, 2.0, 12, dtype=jnp.float32)}

    def key(b):
        return jax.random.wrap_key_data(b['key'])

    def draws(sample):
        return lambda p, b: jnp.sum(p['w'] * b['x'] * sample(key(b), p['w'].shape))

    cases = {
        'uniform in a range': draws(lambda k, s: jax.random.uniform(k, s, minval=-3.0,
                                                                    maxval=5.0)),
        'normal': draws(jax.random.normal),
        'truncated normal': draws(lambda k, s: jax.random.truncated_normal(k, -2.0, 1.5, s)),
        'bernoulli': draws(lambda k, s: jax.random.bernoulli(k, 0.3, s).astype(jnp.float32)),
        'randint': draws(lambda k, s: jax.random.randint(k, s, -5, 10).astype(jnp.float32)),
        'gumbel': draws(jax.random.gumbel),
        'exponential': draws(jax.random.exponential),
        'laplace': draws(jax.random.laplace),
        'logistic': draws(jax.random.logistic),
        'rademacher': draws(lambda k, s: jax.random.rademacher(k, s).astype(jnp.float32)),
        'bits of a split and fold_in': draws(lambda k, s: (jax.random.bits(
            jax.random.fold_in(jax.random.split(k, 3)[1], 7), s) >> 20).astype(jnp.float32)),
        'categorical': lambda p, b: jnp.sum(p['w'].reshape(3, 4)[
            jnp.arange(3), jax.random.categorical(key(b), p['w'].reshape(3, 4) * 4.0)]),
        'permutation': lambda p, b: jnp.sum(p['w'][jax.random.permutation(key(b), 12)]
                                            * b['x']),
        'choice without replacement': lambda p, b: jnp.sum(
            p['w'][jax.random.choice(key(b), 12, (5,), replace=False)] * b['x'][:5]),
    }
    return check_gradients_of(args, os.path.join(work, 'random'), 'random draws', cases,
                              {'w': w}, batch)


def check_gradients_of(args, work, title, cases, params, batch):
    """Each case's loss exported, trainc's gradient of params['w'] against
    jax.grad's within 1e-6 (relative above 1); one line per case."""
    ok = True
    for what, loss_fn in cases.items():
        d = os.path.join(work, what.replace(' ', '_'))
        os.makedirs(d, exist_ok=True)
        try:
            result = jax_export.export(loss_fn, params, batch, os.path.join(d, 'm'),
                                       save_batch=True)
            inputs = [a for n in result.input_names
                      for a in ('--input', f'{n}={result.input_files[n]}')]
            exe, out = os.path.join(d, 'g.tcx'), os.path.join(d, 'out')
            run([args.trainc, result.mlir_path, '--params', result.safetensors_path,
                 '--train', '--optimizer', 'none', '-o', exe])
            run([args.trainc_run, exe, *inputs, '--output-dir', out])
            got = np.load(output_file(out, result.param_names[0] + '.grad'))
        except (RuntimeError, jax_export.ExportError, OSError) as e:
            print(f'{title}, {what}: FAIL ({e})')
            ok = False
            continue
        want = np.asarray(jax.grad(loss_fn)(params, batch)['w'])
        good = got.shape == want.shape and bool(np.all(np.abs(got - want) <= 1e-6 * np.maximum(1.0, np.abs(want))))
        print(f"{title}, {what}: {'ok' if good else 'FAIL'}"
              + ('' if good else f' (trainc {got.tolist()}, JAX {want.tolist()})'))
        ok &= good
    return ok


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog='Needs jax, optax, numpy and safetensors (the project venv).')
    parser.add_argument('--trainc', help='the trainc binary (build/bin/trainc)')
    parser.add_argument('--trainc-run', help='the trainc-run binary (build/bin/trainc-run)')
    parser.add_argument('--models', nargs='*', choices=sorted(jax_models.MODELS),
                        help='only these models (default: all)')
    parser.add_argument('--export-only', action='store_true',
                        help='only export and compute the JAX references; never run trainc')
    parser.add_argument('--keep', metavar='DIR',
                        help='write the exports, executables and outputs under DIR/<model> '
                             'and keep them (default: a temporary directory)')
    args = parser.parse_args()
    if not args.export_only and not (args.trainc and args.trainc_run):
        parser.error('--trainc and --trainc-run are required (or --export-only)')
    if jax.config.jax_enable_x64:
        parser.error('run with 64-bit JAX off (JAX_ENABLE_X64 unset): the export and the '
                     'float32 references must be float32 and int32')

    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or tmp
        for name, model in sorted(jax_models.MODELS.items()):
            if args.models and name not in args.models:
                continue
            work = os.path.join(root, name)
            os.makedirs(work, exist_ok=True)
            ok &= check_model(args, name, model, work)
        ok &= check_gradient_rules(root)
        if not args.export_only:
            ok &= check_gradient_conventions(args, root)
            ok &= check_random_draws(args, root)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
