"""chlo.erf_inv (jax.random.normal's as_text() form) through trainc's
lowering, against scipy.special.erfinv in float64; and chlo.next_after
(jax.random.truncated_normal's) against numpy's nextafter, bit for bit on
f64, f32, f16 and bf16.

For f64, f32, f16 and bf16 inputs (edges, both sides of each range of the
expansion, near +-1, random) the forward values; for f32 and f64 the
gradient of sum(erf_inv(w) * c) with respect to a parameter w.

    chlo_numerics.test.py DIR   writes, compiles, runs and checks under DIR;
                                exits 1 on any mismatch.

Tolerances (relative, against float64 erfinv of the same input):
  f64 forward   1e-15: Giles' double expansion is accurate to a few units
                in the last place (2.2e-16 each);
  f32 forward   1e-6: the single expansion's own error is about 3e-7 and
                f32 rounding of w and of the Horner steps adds a few
                units of 6e-8; JAX's float32 erfinv (the same expansion) is
                printed for scale;
  f16, bf16     one unit in the last place (2^-10 and 2^-7 of a normal
  forward       value): computed in f32 and rounded once;
  gradients     trainc differentiates the expansion (JAX uses
                sqrt(pi)/2 exp(erfinv(x)^2)). A polynomial's derivative
                is least accurate at the ends of its fitted range
                (Markov's inequality bounds it by degree^2 / half-width,
                26 for the f32 central range, times the value error), so
                the worst points sit on the seams between ranges: f32
                2.5e-5 at w = 5 (jax.grad of jax.scipy.special.erfinv,
                its analytic rule in f32, is off by 9e-7 there), f64
                2.6e-13 near x = 1 and at w = 6.25 and 16. The expansion is fixed, so these are deterministic;
                the tolerances are twice and four times them: 5e-5 (f32)
                and 1e-12 (f64). No gradient flows through erf_inv in
                jax.random.normal, whose input is random bits.
"""
import os
import sys

import ml_dtypes
import numpy as np
import scipy.special

from numerics_harness import load_grad, run, train_gradients

FORWARD_RTOL = {'f64': 1e-15, 'f32': 1e-6, 'f16': 2.0 ** -10, 'bf16': 2.0 ** -7}
GRAD_RTOL = {'f64': 1e-12, 'f32': 5e-5}
NP = {'f64': np.float64, 'f32': np.float32, 'f16': np.float16, 'bf16': ml_dtypes.bfloat16}
# Where the expansion changes range: w = -log(1 - x^2) at these values.
RANGE_STARTS = {'f64': (6.25, 16.0), 'f32': (5.0,), 'f16': (5.0,), 'bf16': (5.0,)}


def inputs(t, with_edges):
    dt = NP[t]
    one = dt(1)
    tiny = float(ml_dtypes.finfo(dt).smallest_normal)
    xs = [0.0, -0.0, 0.5, -0.5, 0.9, -0.3, tiny, -tiny]
    if with_edges:
        xs += [1.0, -1.0, 1.5, -1.5, np.inf, -np.inf, np.nan]
    xs += [np.nextafter(one, dt(0)), -np.nextafter(one, dt(0))]
    for w in RANGE_STARTS[t]:
        b = dt(np.sqrt(-np.expm1(-w)))
        xs += [b, np.nextafter(b, dt(0)), np.nextafter(b, dt(2)), -b]
    digits = int(-np.log10(float(ml_dtypes.finfo(dt).eps)))
    xs += [s * (1 - 10.0 ** -k) for k in range(1, digits + 1) for s in (1, -1)]
    rng = np.random.default_rng(5)
    xs += list(rng.uniform(-1, 1, 500))
    return np.array(xs, dt)


def mlir_type(t, n):
    return f'tensor<{n}x{t}>'


def rel_error(got, want):
    """Worst |got - want| / |want| over finite wants; NaN and infinities must
    match exactly."""
    special = ~np.isfinite(want)
    if not np.array_equal(got[special], want[special], equal_nan=True):
        bad = np.flatnonzero(special & ~((got == want) | (np.isnan(got) & np.isnan(want))))
        sys.exit(f'non-finite mismatch at {bad[:5]}: {got[bad[:5]]} vs {want[bad[:5]]}')
    g, w = got[~special].astype(np.float64), want[~special]
    scale = np.maximum(np.abs(w), np.finfo(np.float64).tiny)
    err = np.abs(g - w) / scale
    i = int(np.argmax(err))
    return float(err[i]), float(w[i])


def run_chlo(work, label, op, operands):
    """`chlo.<op>` of the 1-d operands (one dtype) compiled and run by
    trainc: its result as an array of the operands' dtype."""
    t = {np.dtype(v): k for k, v in NP.items()}[operands[0].dtype]
    ty = mlir_type(t, len(operands[0]))
    d = os.path.join(work, label)
    os.makedirs(d, exist_ok=True)
    args = ', '.join(f'%arg{i}: {ty} loc("x{i}")' for i in range(len(operands)))
    names = ', '.join(f'%arg{i}' for i in range(len(operands)))
    types = ', '.join([ty] * len(operands))
    with open(os.path.join(d, 'f.mlir'), 'w') as f:
        f.write(f'''module @jit_f {{
  func.func public @main({args}) -> ({ty} {{jax.result_info = "y"}}) {{
    %0 = chlo.{op} {names} : {types} -> {ty}
    return %0 : {ty}
  }}
}}
''')
    inputs = []
    for i, x in enumerate(operands):
        # Raw little-endian bytes (numpy's .npy has no bf16); trainc-run
        # writes bf16 as its bits, '<u2'.
        path = os.path.join(d, f'x{i}.bin')
        x.astype(x.dtype.newbyteorder('<')).tofile(path)
        inputs += ['--input', f'x{i}={path}']
    run(['trainc', os.path.join(d, 'f.mlir'), '-o', os.path.join(d, 'f.tcx')])
    run(['trainc-run', os.path.join(d, 'f.tcx'), *inputs, '--output-dir', os.path.join(d, 'out')])
    got = np.load(os.path.join(d, 'out', 'y.npy'))
    if t == 'bf16' and got.dtype == np.dtype('<u2'):
        got = got.view(ml_dtypes.bfloat16)
    x = operands[0]
    if got.dtype != x.dtype or got.shape != x.shape:
        sys.exit(f'{label}: result {got.dtype}{got.shape}, expected {x.dtype}{x.shape}')
    return got


def forward(work, t):
    x = inputs(t, with_edges=True)
    got = run_chlo(work, 'erf_inv_' + t, 'erf_inv', [x])
    want = scipy.special.erfinv(x.astype(np.float64))
    err, at = rel_error(got, want)
    ok = err <= FORWARD_RTOL[t]
    print(f"erf_inv {t} forward: {len(x)} values, worst relative error {err:.2e} "
          f"(at erfinv = {at:.6g}; tolerance {FORWARD_RTOL[t]:.0e}) "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def next_after(work, t):
    """chlo.next_after (jax.random.truncated_normal's bounds) against
    numpy's (ml_dtypes' for bf16) nextafter, bit for bit: zeros of both
    signs, subnormals, the largest finite values, infinities, NaN, equal
    pairs, both directions."""
    dt = NP[t]
    finfo = ml_dtypes.finfo(dt)
    specials = [0.0, -0.0, 1.0, -1.0, float(finfo.smallest_subnormal),
                -float(finfo.smallest_subnormal), float(finfo.smallest_normal),
                float(finfo.max), -float(finfo.max), np.inf, -np.inf, np.nan, 2.0, -2.0]
    pairs = [(a, b) for a in specials for b in specials]
    rng = np.random.default_rng(7)
    x = np.array([a for a, _ in pairs] + list(rng.normal(0, 100, 200)), dt)
    y = np.array([b for _, b in pairs] + list(rng.normal(0, 100, 200)), dt)
    got = run_chlo(work, 'next_after_' + t, 'next_after', [x, y])
    with np.errstate(over='ignore'):
        want = np.nextafter(x, y)
    # C's rule where x == y is y (so nextafter(0, -0) is -0); numpy's half
    # returns x there.
    want = np.where(x == y, y, want)
    bits = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    same = (got.view(bits) == want.view(bits)) | (np.isnan(got.astype(np.float64)) &
                                                    np.isnan(want.astype(np.float64)))
    ok = bool(np.all(same))
    bad = np.flatnonzero(~same)[:3]
    print(f"next_after {t}: {len(x)} pairs bit for bit with numpy's nextafter "
          f"{'ok' if ok else f'FAIL at {[(x[i], y[i], got[i], want[i]) for i in bad]}'}")
    return ok


def gradient(work, t):
    w = inputs(t, with_edges=False)
    c = np.random.default_rng(6).uniform(0.5, 2.0, len(w)).astype(NP[t])
    ty = mlir_type(t, len(w))
    d = os.path.join(work, 'gradient_' + t)
    os.makedirs(d, exist_ok=True)
    out = train_gradients(d, f'''module @jit_loss {{
  func.func public @main(%arg0: {ty} loc("params['w']"), %arg1: {ty} loc("batch['c']")) -> (tensor<{t}> {{jax.result_info = "result"}}) {{
    %0 = chlo.erf_inv %arg0 : {ty} -> {ty}
    %1 = stablehlo.multiply %0, %arg1 : {ty}
    %cst = stablehlo.constant dense<0.0> : tensor<{t}>
    %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.add across dimensions = [0] : ({ty}, tensor<{t}>) -> tensor<{t}>
    return %2 : tensor<{t}>
  }}
}}
''', {"params['w']": w}, c)
    got = load_grad(out)
    y = scipy.special.erfinv(w.astype(np.float64))
    want = c.astype(np.float64) * np.sqrt(np.pi) / 2 * np.exp(y * y)
    err, at = rel_error(got, want)
    ok = err <= GRAD_RTOL[t]
    print(f"erf_inv {t} gradient: {len(w)} values, worst relative error {err:.2e} "
          f"(at {at:.6g}; tolerance {GRAD_RTOL[t]:.0e}) {'ok' if ok else 'FAIL'}")
    return ok


def main():
    work = sys.argv[1]
    ok = all([forward(work, t) for t in ('f64', 'f32', 'f16', 'bf16')]
             + [gradient(work, t) for t in ('f64', 'f32')]
             + [next_after(work, t) for t in ('f64', 'f32', 'f16', 'bf16')])
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
