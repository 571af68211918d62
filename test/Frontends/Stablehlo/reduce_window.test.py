"""stablehlo.reduce_window windows that are not prefix scans, written by
JAX (jax.jit(f).lower(...).as_text()), compiled by trainc and run on
inputs, against the same function in JAX with float64 values.

    reduce_window.test.py DIR   exits 1 on any failure.

Forward: max and min windows must equal JAX's exactly (no rounding);
sums within positions * eps32 * (the window sum of |x|) (a float32 sum of
that many terms); integers exactly.

Gradients (float32): loss = sum(c * f(x)) with x a trainable parameter:
the max window's gradient goes to its maximum (the inputs have no ties),
the sum's to every element, against jax.grad within the same kind of
bound; not for the dilated max window, which JAX cannot differentiate
(NotImplementedError: no VJP for select_and_gather with window dilation;
test/Frontends/Onnx/pooling.test covers a dilated MaxPool's gradient).
"""
import os
import re
import sys

import jax
import numpy as np

from numerics_harness import compile_and_run_text, load_grad, train_gradients, within_bound

jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

RNG = np.random.default_rng(43)
NINF = -np.inf


def max_pool(x, window, strides, padding, base=None, dil=None):
    return lax.reduce_window(x, jnp.array(NINF, x.dtype), lax.max, window, strides, padding,
                             base_dilation=base, window_dilation=dil)


def sum_pool(x, window, strides, padding, base=None, dil=None):
    return lax.reduce_window(x, jnp.array(0.0, x.dtype), lax.add, window, strides, padding,
                             base_dilation=base, window_dilation=dil)


# name: (x shape, function, window positions, kind)
CASES = {
    'max_nhwc_same': ((2, 7, 8, 3), lambda x: max_pool(x, (1, 3, 3, 1), (1, 2, 2, 1), 'SAME'), 9, 'max'),
    'max_nchw_padded': ((2, 3, 9, 9), lambda x: max_pool(x, (1, 1, 3, 2), (1, 1, 2, 3),
                                                         ((0, 0), (0, 0), (1, 1), (2, 0))), 6, 'max'),
    'max_dilated': ((1, 2, 9, 10), lambda x: max_pool(x, (1, 1, 2, 3), (1, 1, 1, 2), 'VALID',
                                                      dil=(1, 1, 3, 2)), 6, 'max'),
    'min_1d': ((3, 11), lambda x: lax.reduce_window(x, jnp.array(np.inf, x.dtype), lax.min, (1, 4),
                                                    (1, 3), 'SAME'), 4, 'max'),
    'sum_avg': ((2, 3, 8, 7), lambda x: sum_pool(x, (1, 1, 2, 2), (1, 1, 2, 2), 'VALID') / 4, 4, 'sum'),
    'sum_base_dilated': ((2, 5, 6), lambda x: sum_pool(x, (1, 3, 2), (1, 2, 1), 'SAME',
                                                       base=(1, 2, 1)), 6, 'sum'),
    'sum_negative_pad': ((2, 3), lambda x: sum_pool(x, (1, 2), (1, 1), ((0, 0), (-5, 10))), 2, 'sum'),
    'max_empty_rows': ((0, 4), lambda x: max_pool(x, (1, 2), (1, 1), 'VALID'), 2, 'max'),
}


def forward(work):
    ok = True
    eps = float(np.finfo(np.float32).eps)
    for name, (shape, f, positions, kind) in CASES.items():
        x = RNG.standard_normal(shape).astype(np.float32)
        text = jax.jit(f).lower(x).as_text()
        got = compile_and_run_text(work, name, text, {'arg0': x})
        want = np.asarray(f(jnp.asarray(x, jnp.float64)))
        if kind == 'max':
            same = got.shape == want.shape and np.array_equal(got.astype(np.float64), want)
            print(f'{name}: {got.shape} {"equal ok" if same else "FAIL"}')
            ok &= same
        else:
            scale = np.asarray(f(jnp.abs(jnp.asarray(x, jnp.float64))))
            ok &= within_bound(name, got, want, positions * eps * np.abs(scale) + 1e-30)
    # stablehlo.pad goes through the same padding (buildPad): interior
    # padding, and a crop below that reaches into the padding above.
    xp = RNG.standard_normal((3, 4)).astype(np.float32)
    fp = lambda x: lax.pad(x, jnp.array(-1.5, x.dtype), ((-6, 10, 1), (1, -2, 2)))
    got = compile_and_run_text(work, 'pad_cross_crop', jax.jit(fp).lower(xp).as_text(), {'arg0': xp})
    want = np.asarray(fp(jnp.asarray(xp)))
    same = got.shape == want.shape and np.array_equal(got, want)
    print(f'pad_cross_crop: {got.shape} {"equal ok" if same else "FAIL"}')
    ok &= same
    xi = RNG.integers(-100, 100, (2, 6, 7)).astype(np.int32)
    fi = lambda x: lax.reduce_window(x, jnp.array(np.iinfo(np.int32).min, x.dtype), lax.max,
                                     (1, 3, 2), (1, 2, 2), 'SAME')
    got = compile_and_run_text(work, 'int32_max', jax.jit(fi).lower(xi).as_text(), {'arg0': xi})
    want = np.asarray(fi(jnp.asarray(xi)))
    same = got.dtype == np.int32 and got.shape == want.shape and np.array_equal(got, want)
    print(f'int32_max: {got.shape} {got.dtype} {"equal ok" if same else "FAIL"}')
    return ok and same


def gradients(work):
    ok = True
    eps = float(np.finfo(np.float32).eps)
    for name, (shape, f, positions, kind) in CASES.items():
        if name == 'max_dilated' or 0 in shape:
            continue
        x = RNG.standard_normal(shape).astype(np.float32)
        y_shape = np.asarray(f(jnp.asarray(x, jnp.float64))).shape
        c = RNG.uniform(0.5, 1.0, y_shape).astype(np.float32)
        text = jax.jit(lambda x, c: jnp.sum(c * f(x))).lower(x, c).as_text()
        # Name the arguments as trainc's training contract reads them.
        for arg, path in (('%arg0', "params['x']"), ('%arg1', "batch['c']")):
            text = re.sub(arg + r'(: tensor<[^>]*>(?: \{[^}]*\})?)', arg + r'\1 loc("' + path + '")',
                          text, count=1)
        d = os.path.join(work, 'gradient_' + name)
        os.makedirs(d, exist_ok=True)
        out = train_gradients(d, text, {"params['x']": x}, c)
        c64 = jnp.asarray(c, jnp.float64)
        want = np.asarray(jax.grad(lambda x: jnp.sum(c64 * f(x)))(jnp.asarray(x, jnp.float64)))
        got = load_grad(out)
        ok &= within_bound(f'{name} x.grad', got, want, positions * eps * np.abs(want) + 1e-30
                    if kind == 'max' else positions * eps * np.max(np.abs(want)) + 1e-30)
    return ok


def main():
    work = sys.argv[1]
    ok = forward(work)
    ok &= gradients(work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
