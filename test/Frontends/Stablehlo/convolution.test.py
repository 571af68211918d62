"""stablehlo.convolution, written by JAX (jax.jit(f).lower(...).as_text()),
compiled by trainc and run on inputs, against the same function in JAX
with float64 values.

    convolution.test.py DIR   exits 1 on any failure.

Forward: each output element must be within depth * eps32 * conv(|x|, |w|)
+ eps * |y| of the float64 result: depth products summed in float32 (the
classic bound for such a sum), then one rounding to the result's type
(eps its machine epsilon: float32's, or bfloat16's for the bf16 case).
Integer convolutions (int32 and int8, with sums beyond the type) must be
exact, wrapping as JAX's do. The worst ratio to the bound is printed.

Gradients (float32): loss = sum(c * conv(x, w)) with x and w trainable
parameters, their gradients against jax.grad in float64 within count *
eps32 * (the same gradient of |c|, |x|, |w|), count the number of terms in
the largest gradient sum.
"""
import os
import re
import sys

import jax
import ml_dtypes
import numpy as np

from numerics_harness import compile_and_run_text, load_grad, train_gradients, within_bound

jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(31)
conv = jax.lax.conv_general_dilated

# name: (x shape, w shape, function of (x, w), depth of each output sum)
CASES = {
    'nhwc_dilated': ((2, 8, 7, 4), (3, 3, 4, 5),
                     lambda x, w, **k: conv(x, w, (2, 1), [(1, 1), (0, 2)], lhs_dilation=(1, 2),
                                            rhs_dilation=(2, 1),
                                            dimension_numbers=('NHWC', 'HWIO', 'NHWC'), **k), 36),
    'nch_same': ((2, 4, 9), (5, 4, 3),
                 lambda x, w, **k: conv(x, w, (1,), 'SAME', **k), 12),
    'ncdhw': ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2),
              lambda x, w, **k: conv(x, w, (1, 2, 1), [(1, 0), (0, 1), (1, 1)], **k), 24),
    'feature_groups': ((2, 7, 6, 4), (3, 3, 2, 6),
                       lambda x, w, **k: conv(x, w, (1, 1), 'SAME', feature_group_count=2,
                                              dimension_numbers=('NHWC', 'HWIO', 'NHWC'), **k), 18),
    'batch_groups': ((4, 3, 6, 5), (6, 3, 2, 2),
                     lambda x, w, **k: conv(x, w, (1, 1), 'VALID', batch_group_count=2, **k), 12),
    'negative_padding': ((1, 3, 9, 8), (2, 3, 3, 3),
                         lambda x, w, **k: conv(x, w, (1, 2), [(-1, 2), (1, -2)], **k), 27),
    'transposed': ((2, 5, 5, 3), (3, 3, 3, 4),
                   lambda x, w, **k: jax.lax.conv_transpose(
                       x, w, (2, 2), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'), **k), 27),
    'negative_padding_far': ((1, 2, 3), (3, 2, 2),
                             lambda x, w, **k: conv(x, w, (1,), [(-5, 10)], **k), 4),
    'depthwise_1d': ((2, 11, 4), (5, 1, 4),
                     lambda x, w, **k: conv(x, w, (1,), [(4, 0)], feature_group_count=4,
                                            dimension_numbers=('NWC', 'WIO', 'NWC'), **k), 5),
}


def lower(f, *args):
    return jax.jit(f).lower(*args).as_text()


def f64(v):
    return jnp.asarray(np.asarray(v, np.float64))


def forward(work):
    ok = True
    eps32 = float(np.finfo(np.float32).eps)
    for name, (xs, ws, f, depth) in CASES.items():
        x = RNG.standard_normal(xs).astype(np.float32)
        w = (RNG.standard_normal(ws) / np.sqrt(depth)).astype(np.float32)
        text = lower(lambda x, w: f(x, w, precision=jax.lax.Precision.HIGHEST), x, w)
        got = compile_and_run_text(work, name, text, {'arg0': x, 'arg1': w})
        want = np.asarray(f(f64(x), f64(w), precision=jax.lax.Precision.HIGHEST))
        scale = np.asarray(f(jnp.abs(f64(x)), jnp.abs(f64(w)), precision=jax.lax.Precision.HIGHEST))
        ok &= within_bound(name, got, want, depth * eps32 * scale + eps32 * np.abs(want) + 1e-30)
    # bf16 operands, an f32 result (preferred_element_type): summed in f32.
    xs, ws, f, depth = CASES['nhwc_dilated']
    x = RNG.standard_normal(xs).astype(ml_dtypes.bfloat16)
    w = RNG.standard_normal(ws).astype(ml_dtypes.bfloat16)
    text = lower(lambda x, w: f(x, w, preferred_element_type=jnp.float32), x, w)
    got = compile_and_run_text(work, 'bf16_to_f32', text, {'arg0': x, 'arg1': w})
    want = np.asarray(f(f64(x.astype(np.float32)), f64(w.astype(np.float32))))
    scale = np.asarray(f(jnp.abs(f64(x.astype(np.float32))), jnp.abs(f64(w.astype(np.float32)))))
    ok &= within_bound('bf16_to_f32', got, want, depth * eps32 * scale + eps32 * np.abs(want) + 1e-30)
    # Integers: exact, wrapping where a sum leaves the type (int8: products
    # up to 2^14; int32: up to 2^40, still exact in f64).
    xs, ws, f, depth = CASES['feature_groups']
    for dt, lo, hi in ((np.int32, -2 ** 20, 2 ** 20), (np.int8, -128, 128)):
        xi = RNG.integers(lo, hi, xs).astype(dt)
        wi = RNG.integers(lo, hi, ws).astype(dt)
        text = lower(lambda x, w: f(x, w), xi, wi)
        name = np.dtype(dt).name
        got = compile_and_run_text(work, name, text, {'arg0': xi, 'arg1': wi})
        want = np.asarray(f(jnp.asarray(xi), jnp.asarray(wi)))
        same = got.shape == want.shape and got.dtype == dt and np.array_equal(got, want)
        print(f'{name}: {got.shape} {got.dtype}, {"exact ok" if same else "FAIL"}')
        ok &= same
    # Integer dot_general results wrap the same way, unsigned ones too:
    # i32 operands with a ui64 result (negative sums wrap to 2^64 - k)
    # and int8 with an int8 result.
    for dt, out in ((np.int32, np.uint64), (np.int8, np.int8)):
        a = RNG.integers(-100, 100, (3, 5)).astype(dt)
        b = RNG.integers(-100, 100, (5, 4)).astype(dt)
        fd = lambda a, b, out=out: jax.lax.dot(a, b, preferred_element_type=out)
        name = f'dot_{np.dtype(dt).name}_to_{np.dtype(out).name}'
        got = compile_and_run_text(work, name, lower(fd, a, b), {'arg0': a, 'arg1': b})
        want = np.asarray(fd(jnp.asarray(a), jnp.asarray(b)))
        same = got.dtype == out and np.array_equal(got, want)
        print(f'{name}: {got.shape} {got.dtype}, {"exact ok" if same else "FAIL"}')
        ok &= same
    return ok


def gradients(work):
    ok = True
    eps32 = float(np.finfo(np.float32).eps)
    for name in ('nhwc_dilated', 'ncdhw', 'feature_groups', 'batch_groups', 'negative_padding',
                 'transposed'):
        xs, ws, f, depth = CASES[name]
        x = RNG.standard_normal(xs).astype(np.float32)
        w = (RNG.standard_normal(ws) / np.sqrt(depth)).astype(np.float32)
        fwd = lower(lambda x, w: f(x, w, precision=jax.lax.Precision.HIGHEST), x, w)
        line = next(l for l in fwd.splitlines() if 'stablehlo.convolution' in l)
        line = re.sub(r'^\s*%\w+ =', '    %y =', line).replace('%arg0', '%x').replace('%arg1', '%w')
        y_type = line.rsplit('->', 1)[1].strip()
        y_shape = np.asarray(f(f64(x), f64(w))).shape
        c = RNG.uniform(0.5, 1.0, y_shape).astype(np.float32)
        xt = 'tensor<' + 'x'.join(map(str, xs)) + 'xf32>'
        wt = 'tensor<' + 'x'.join(map(str, ws)) + 'xf32>'
        dims = ', '.join(str(k) for k in range(len(y_shape)))
        text = (f'module @jit_loss {{\n  func.func public @main(%x: {xt} loc("params[\'x\']"), '
                f'%w: {wt} loc("params[\'w\']"), %c: {y_type} loc("batch[\'c\']")) -> '
                f'(tensor<f32> {{jax.result_info = "result"}}) {{\n{line}\n'
                f'    %m = stablehlo.multiply %y, %c : {y_type}\n'
                f'    %z = stablehlo.constant dense<0.0> : tensor<f32>\n'
                f'    %l = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = '
                f'[{dims}] : ({y_type}, tensor<f32>) -> tensor<f32>\n'
                f'    return %l : tensor<f32>\n  }}\n}}\n')
        d = os.path.join(work, 'gradient_' + name)
        os.makedirs(d, exist_ok=True)
        out = train_gradients(d, text, {"params['x']": x, "params['w']": w}, c)
        cl = f64(c)
        want = jax.grad(lambda x, w: jnp.sum(cl * f(x, w)), (0, 1))(f64(x), f64(w))
        scale = jax.grad(lambda x, w: jnp.sum(jnp.abs(cl) * f(x, w)), (0, 1))(
            jnp.abs(f64(x)), jnp.abs(f64(w)))
        for k, p in enumerate(('x', 'w')):
            got = load_grad(out, p)
            terms = c.size if p == 'w' else depth * max(ws)
            ok &= within_bound(f'{name} {p}.grad', got, np.asarray(want[k]),
                        terms * eps32 * np.abs(np.asarray(scale[k])) + 1e-30)
    return ok


def main():
    work = sys.argv[1]
    ok = forward(work)
    ok &= gradients(work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
