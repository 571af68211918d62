"""stablehlo.reduce_precision on inputs (computed by the runtime, not the
folder), against a reference written from the specification rather than
from the bit manipulation trainc uses:

  round x to `mantissa` bits after the leading one, ties to even (exact:
  Python's round() of a float scaled by a power of two; with no mantissa
  bits both neighbours are even, and the tie goes to the one whose biased
  exponent is even, as the reference interpreter's); where the format
  has fewer exponent bits than the type, a rounded magnitude above the
  format's largest finite value becomes a signed infinity and one below
  its smallest normal a signed zero (no subnormals, as XLA and the
  reference interpreter); with as many exponent bits as the type, the
  type's own subnormals keep their fixed quantum. NaN stays NaN (becomes
  +inf with no mantissa bits), infinities stay.

Results must match bit for bit (NaN matches any NaN). Gradients (f32 and
f64): d sum(c * reduce_precision(w)) / dw = c at every finite w,
exactly.

    reduce_precision.test.py DIR   exits 1 on any failure.
"""
import math
import os
import sys

import ml_dtypes
import numpy as np

from numerics_harness import load_grad, run, train_gradients

NP = {'f64': np.float64, 'f32': np.float32, 'f16': np.float16, 'bf16': ml_dtypes.bfloat16}
# Each type's exponent and mantissa bits.
BITS = {'f64': (11, 52), 'f32': (8, 23), 'f16': (5, 10), 'bf16': (8, 7)}
FORMATS = [(5, 10), (8, 7), (4, 3), (5, 2), (2, 1), (5, 0), (8, 23), (11, 52), (3, 20)]


def reference(x, exponent_bits, mantissa_bits, t):
    src_e, src_m = BITS[t]
    if math.isnan(x):
        return x if mantissa_bits > 0 else math.inf
    if math.isinf(x) or x == 0:
        return x
    m = min(mantissa_bits, src_m)
    src_emin = 2 - (1 << (src_e - 1))
    _, k = math.frexp(x)  # |x| in [2^(k-1), 2^k)
    quantum_exp = max(k - 1, src_emin) - m
    scaled = math.ldexp(x, -quantum_exp)  # exact
    r = round(abs(scaled))  # ties to the even integer
    if m == 0 and k - 1 >= src_emin and abs(scaled) == 1.5:
        # No mantissa bits: both neighbours, 2^(k-1) and 2^k, have an even
        # (empty) mantissa; the tie goes to the even biased exponent.
        r = 1 if (k - 1 + (1 << (src_e - 1)) - 1) % 2 == 0 else 2
    try:
        y = math.copysign(math.ldexp(float(r), quantum_exp), x)
    except OverflowError:  # rounded past the type's largest value
        return math.copysign(math.inf, x)
    if exponent_bits < src_e:
        emax = (1 << (exponent_bits - 1)) - 1
        largest = math.ldexp(2 - math.ldexp(1, -m), emax)
        if abs(y) > largest:
            return math.copysign(math.inf, x)
        if abs(y) < math.ldexp(1, 1 - emax):
            return math.copysign(0.0, x)
    return y


def inputs(t, rng, n=400):
    dt = NP[t]
    fi = ml_dtypes.finfo(dt)
    special = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, float(fi.max), -float(fi.max),
               float(fi.smallest_normal), float(fi.smallest_subnormal),
               -3 * float(fi.smallest_subnormal), 65504.0, 65520.0, 65519.99, 3.0e38, 1e-5,
               6.1e-5, 2.0 ** -14, 2.0 ** -15, 240.0, 248.0, 57344.0, 61440.0]
    # Ties at several positions: 1 + 2^-k, (1 + 2^-k) * 3.
    special += [1 + 2.0 ** -k for k in range(1, 30)] + [3 * (1 + 2.0 ** -k) for k in range(1, 30)]
    mags = np.exp(rng.uniform(math.log(float(fi.smallest_subnormal)), math.log(float(fi.max)), n))
    with np.errstate(over='ignore'):
        x = np.array(special + list(mags * rng.choice([-1.0, 1.0], n)), np.float64).astype(dt)
    # A NaN with a payload only in the low mantissa bits.
    bits = x.view({8: np.uint64, 4: np.uint32, 2: np.uint16}[x.dtype.itemsize])
    bits[4] = {8: 0x7FF0000000000001, 4: 0x7F800001, 2: 0x7C01 if t == 'f16' else 0x7F81}[x.dtype.itemsize]
    return x


def same(got, want):
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


def forward(work, t, rng):
    dt = NP[t]
    x = inputs(t, rng)
    n = len(x)
    ty = f'tensor<{n}x{t}>'
    body = [f'    %r{i} = stablehlo.reduce_precision %x, format = e{e}m{m} : {ty}'
            for i, (e, m) in enumerate(FORMATS)]
    sig = ', '.join(f'{ty} {{jax.result_info = "r{i}"}}' for i in range(len(FORMATS)))
    text = (f'module @jit_f {{\n  func.func public @main(%x: {ty} loc("x")) -> ({sig}) {{\n'
            + '\n'.join(body) + '\n    return ' + ', '.join(f'%r{i}' for i in range(len(FORMATS)))
            + ' : ' + ', '.join([ty] * len(FORMATS)) + '\n  }\n}\n')
    d = os.path.join(work, t)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'f.mlir'), 'w') as f:
        f.write(text)
    path = os.path.join(d, 'x.bin')
    x.astype(x.dtype.newbyteorder('<')).tofile(path)
    run(['trainc', os.path.join(d, 'f.mlir'), '-o', os.path.join(d, 'f.tcx')])
    run(['trainc-run', os.path.join(d, 'f.tcx'), '--input', f'x={path}', '--output-dir',
         os.path.join(d, 'out')])
    ok = True
    for i, (e, m) in enumerate(FORMATS):
        got = np.load(os.path.join(d, 'out', f'r{i}.npy'))
        if t == 'bf16' and got.dtype == np.dtype('<u2'):
            got = got.view(ml_dtypes.bfloat16)
        with np.errstate(all='ignore'):
            g = [float(v) for v in got.astype(np.float64)]
            want = [float(np.array(reference(float(v), e, m, t)).astype(dt))
                    for v in x.astype(np.float64)]
        bad = [j for j in range(n) if not same(g[j], want[j])]
        print(f'{t} e{e}m{m}: {n} values, {len(bad)} differ'
              + (f' (first: x = {float(x[bad[0]])!r}, got {g[bad[0]]!r}, want {want[bad[0]]!r})'
                 if bad else '') + (' FAIL' if bad else ' ok'))
        ok &= not bad
    return ok


def gradient(work, t, rng):
    dt = NP[t]
    n = 200
    w = inputs(t, rng, n)
    w = w[np.isfinite(w)][:n]
    n = len(w)
    c = rng.uniform(0.5, 2.0, n).astype(dt)
    ty = f'tensor<{n}x{t}>'
    text = (f'module @jit_loss {{\n  func.func public @main(%w: {ty} loc("params[\'w\']"), '
            f'%c: {ty} loc("batch[\'c\']")) -> (tensor<{t}> {{jax.result_info = "result"}}) {{\n'
            f'    %r = stablehlo.reduce_precision %w, format = e5m10 : {ty}\n'
            f'    %m = stablehlo.multiply %r, %c : {ty}\n'
            f'    %z = stablehlo.constant dense<0.0> : tensor<{t}>\n'
            f'    %l = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [0] '
            f': ({ty}, tensor<{t}>) -> tensor<{t}>\n    return %l : tensor<{t}>\n  }}\n}}\n')
    d = os.path.join(work, 'gradient_' + t)
    os.makedirs(d, exist_ok=True)
    out = train_gradients(d, text, {"params['w']": w}, c)
    got = load_grad(out)
    bad = np.flatnonzero(got != c)
    print(f'{t} gradient: {n} values, {len(bad)} differ from c'
          + (f' (first: w = {w[bad[0]]}, got {got[bad[0]]}, want {c[bad[0]]})' if len(bad) else '')
          + (' FAIL' if len(bad) else ' ok'))
    return len(bad) == 0


def main():
    work = sys.argv[1]
    rng = np.random.default_rng(9)
    ok = True
    for t in NP:
        ok &= forward(work, t, rng)
    for t in ('f64', 'f32'):
        ok &= gradient(work, t, rng)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
