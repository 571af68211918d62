"""The libm functions that trainc composes from graph ops (GraphMath.h),
through the StableHLO ops that name them, against long-double references.

Functions: stablehlo.atan2, cbrt, log_plus_one, exponential_minus_one,
logistic; chlo.atan, asin, acos, sinh, cosh, asinh, acosh, atanh.

    libm_compositions.test.py DIR   writes, compiles, runs and checks under
                                    DIR; exits 1 on any failure.

Forward, for f64, f32, f16 and bf16 inputs (the edges among them: signed
zeros, subnormals, infinities, NaN, the domain's ends, the largest
finite sinh and cosh, logistic's results that underflow, and the seams
between the compositions' branches):
results that are zero, subnormal or not finite must equal the reference
(numpy's long-double function, 64-bit mantissa, rounded to the type)
exactly, zeros with their sign (logistic's subnormals, which are exp's,
are measured in ulps); the others are measured in units in the last place
of that correctly rounded result. Tolerances:
  f64, f32   4 ulps: each composition chains a few correctly rounded steps
             (half an ulp each) and the runtime's exp, log, tanh and pow
             (about one ulp in f32, libm's in f64) through well-conditioned
             formulas. Measured worst (printed): 2.9 ulps (f32 asin), 2.2
             (f64 asin). JAX's float32 functions (XLA's own expansions) on
             the same inputs, where no value is subnormal (XLA flushes
             those), are printed for scale.
  f16, bf16  one ulp: computed in f32 and rounded once.

Gradients, for f64 and f32: the gradient of sum(f(w) * c) with respect to
each function's parameter w, which is c * f'(w) (both partial derivatives
for atan2), on finite derivatives up to the largest float (sinh and cosh
near their overflow, where a naive composition's intermediates overflow;
logistic at -100, -1000 and +-inf, where 1 / (1 + e^-x) gives NaN),
against the derivative's formula in long double, in ulps of
the derivative: 8 (at the ends of asin's, acos's, acosh's and atanh's
domains, where the derivative is infinite, exactly that infinity, as
JAX's). autodiff differentiates each composition, so the
derivative carries the errors of the value's steps and of its polynomials'
derivatives (atan's: 1.5 ulps, tools/fit_atan_polynomial.py), multiplied
by c. Measured worst: 3.9 ulps (f64 asin), 3.8 (f32 asin).
"""
import os
import sys

import ml_dtypes
import numpy as np

from numerics_harness import load_grad, run, train_gradients

LD = np.longdouble
NP = {'f64': np.float64, 'f32': np.float32, 'f16': np.float16, 'bf16': ml_dtypes.bfloat16}
ULP_TOLERANCE = {'f64': 4.0, 'f32': 4.0, 'f16': 1.0, 'bf16': 1.0}
GRAD_ULPS = {'f64': 8.0, 'f32': 8.0}

with np.errstate(all='ignore'):
    REFERENCE = {
        'atan2': np.arctan2, 'cbrt': np.cbrt, 'log1p': np.log1p, 'expm1': np.expm1,
        'atan': np.arctan, 'asin': np.arcsin, 'acos': np.arccos, 'sinh': np.sinh,
        'cosh': np.cosh, 'asinh': np.arcsinh, 'acosh': np.arccosh, 'atanh': np.arctanh,
        'logistic': lambda x: 1 / (1 + np.exp(-x)),
    }
# The op that computes each function and whether its file names it
# stablehlo.* or chlo.*.
OPS = {'atan2': 'stablehlo.atan2', 'cbrt': 'stablehlo.cbrt',
       'log1p': 'stablehlo.log_plus_one', 'expm1': 'stablehlo.exponential_minus_one',
       'atan': 'chlo.atan', 'asin': 'chlo.asin', 'acos': 'chlo.acos', 'sinh': 'chlo.sinh',
       'cosh': 'chlo.cosh', 'asinh': 'chlo.asinh', 'acosh': 'chlo.acosh', 'atanh': 'chlo.atanh',
       'logistic': 'stablehlo.logistic'}
DERIVATIVE = {
    'cbrt': lambda x: 1 / (3 * np.cbrt(x) ** 2),
    'log1p': lambda x: 1 / (1 + x),
    'expm1': np.exp,
    'atan': lambda x: 1 / (1 + x * x),
    'asin': lambda x: 1 / np.sqrt((1 - x) * (1 + x)),
    'acos': lambda x: -1 / np.sqrt((1 - x) * (1 + x)),
    'sinh': np.cosh,
    'cosh': np.sinh,
    'asinh': lambda x: 1 / np.sqrt(x * x + 1),
    'acosh': lambda x: 1 / np.sqrt((x - 1) * (x + 1)),
    'atanh': lambda x: 1 / ((1 - x) * (1 + x)),
    'logistic': lambda x: np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))) ** 2,
}


def log_uniform(rng, lo, hi, n, signed):
    m = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    return m * rng.choice([-1.0, 1.0], n) if signed else m


def domain(name, t, rng, n=600, edges=True):
    """Inputs of `name` in type t: edges (if asked) and n random values."""
    dt = NP[t]
    fi = ml_dtypes.finfo(dt)
    big = float(fi.max)
    tiny = float(fi.smallest_normal)
    # Largest argument whose exp is finite in t, and beyond.
    exp_max = float(np.log(LD(big)))
    e = []
    sub = float(fi.smallest_subnormal)
    if edges:
        e = [0.0, -0.0, np.inf, -np.inf, np.nan]
        if name in ('log1p', 'expm1', 'sinh', 'asinh', 'atanh', 'atan', 'asin', 'cbrt',
                    'logistic'):
            e += [sub, -sub, 3 * sub, -7 * sub, tiny / 3]
    if name == 'cbrt':
        e += [1.0, -1.0, 8.0, -27.0, tiny, -tiny, float(fi.smallest_subnormal), big, -big]
        r = log_uniform(rng, tiny, big, n, True)
    elif name == 'log1p':
        e += [-1.0, -0.75, -0.2928932, -0.2929, 0.4142135, 0.4143, 1.0, tiny, -tiny, big]
        r = np.concatenate([log_uniform(rng, tiny, big, n // 2, False),
                            -log_uniform(rng, tiny, 1.0, n // 2, False)])
    elif name == 'expm1':
        e += [0.5, -0.5, 0.4999, -0.4999, 1.0, -1.0, tiny, -tiny, exp_max * 0.999, -exp_max]
        r = log_uniform(rng, tiny, exp_max, n, True)
    elif name in ('sinh', 'cosh'):
        # Up to the largest finite sinh, ln 2 beyond the largest exp.
        e += [20.0, -20.0, 20.01, tiny, -tiny, exp_max + 0.5, -exp_max - 0.5,
              exp_max + 0.69, -exp_max - 0.69]
        r = log_uniform(rng, tiny, exp_max + 0.6, n, True)
    elif name == 'atan':
        e += [1.0, -1.0, 0.41421356, -0.41421356, 0.4142136, 2.41421356, -2.41421356,
              tiny, -tiny, big, -big]
        r = log_uniform(rng, tiny, big, n, True)
    elif name in ('asin', 'acos'):
        e += [1.0, -1.0, 1.5, -1.5, 0.5, -0.5, tiny, -tiny]
        e += [s * (1 - 10.0 ** -k) for k in range(1, 8) for s in (1, -1)]
        r = np.concatenate([rng.uniform(-1, 1, n // 2), log_uniform(rng, tiny, 1.0, n // 2, True)])
    elif name == 'asinh':
        e += [tiny, -tiny, big, -big, 2.0 ** 12, 2.0 ** 26, 1.0, -1.0]
        r = log_uniform(rng, tiny, big, n, True)
    elif name == 'acosh':
        e += [1.0, 0.5, -1.0, 2.0 ** 12, 2.0 ** 26, big]
        r = 1 + log_uniform(rng, 1e-7 if t != 'f64' else 1e-15, big / 2, n, False)
    elif name == 'atanh':
        e += [1.0, -1.0, 1.5, -1.5, 0.5, tiny, -tiny]
        e += [s * (1 - 10.0 ** -k) for k in range(1, 8) for s in (1, -1)]
        r = np.concatenate([rng.uniform(-1, 1, n // 2), log_uniform(rng, tiny, 1.0, n // 2, True)])
    elif name == 'logistic':
        # Results down to the type's smallest subnormal and below; e^-x
        # overflows below -exp_max.
        e += [1.0, -1.0, tiny, -tiny, exp_max, -exp_max, -exp_max - 1, -exp_max - 20,
              big, -big]
        r = log_uniform(rng, tiny, big, n, True)
    with np.errstate(over='ignore'):
        return np.array(e + list(r), dt)


def atan2_pairs(t, rng, n=600):
    dt = NP[t]
    fi = ml_dtypes.finfo(dt)
    s = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, float(fi.smallest_normal), float(fi.max),
         -float(fi.max), np.inf, -np.inf, np.nan]
    y = [a for a in s for _ in s] + list(rng.normal(0, 1, n)) + list(log_uniform(rng, 1e-3, 1e3, n, True))
    x = [b for _ in s for b in s] + list(rng.normal(0, 1, n)) + list(log_uniform(rng, 1e-3, 1e3, n, True))
    # Ratios right at the reduction's seams, tan(pi/8) and 1.
    y += [0.41421356, -0.41421356, 1.0, 2.41421356]
    x += [1.0, 1.0, 1.0, 1.0]
    return np.array(y, dt), np.array(x, dt)


def ulps(got, want_ld, dt):
    """|got - want| in units in the last place of want rounded to dt."""
    w = want_ld.astype(dt)
    fi = ml_dtypes.finfo(dt)
    # The ulp of |w|: the power of two at or below it times eps.
    with np.errstate(divide='ignore'):
        e = np.floor(np.log2(np.abs(w.astype(np.float64))))
    spacing = np.maximum(np.exp2(e) * float(fi.eps), float(fi.smallest_subnormal))
    return np.abs(got.astype(LD) - want_ld) / spacing.astype(LD)


def write_raw(path, a):
    a.astype(a.dtype.newbyteorder('<')).tofile(path)


def forward_module(t, cases):
    """A module whose i-th argument feeds case i's op; results in order."""
    args, body, results, names = [], [], [], []
    arg = 0
    for i, (name, operands) in enumerate(cases):
        ty = f'tensor<{len(operands[0])}x{t}>'
        refs = []
        for _ in operands:
            args.append(f'%arg{arg}: {ty} loc("x{arg}")')
            refs.append(f'%arg{arg}')
            arg += 1
        op = OPS[name]
        if op.startswith('chlo.'):
            body.append(f'    %r{i} = {op} {refs[0]} : {ty} -> {ty}')
        else:
            body.append(f'    %r{i} = {op} {", ".join(refs)} : {ty}')
        results.append((f'%r{i}', ty, f'y{i}'))
    sig = ', '.join(f'{ty} {{jax.result_info = "{n}"}}' for _, ty, n in results)
    return (f'module @jit_f {{\n  func.func public @main({", ".join(args)}) -> ({sig}) {{\n'
            + '\n'.join(body) + '\n    return ' + ', '.join(r for r, _, _ in results)
            + ' : ' + ', '.join(ty for _, ty, _ in results) + '\n  }\n}\n')


def jax_f32_ulps(name, operands, want):
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    f = {'atan2': jnp.arctan2, 'cbrt': jnp.cbrt, 'log1p': jnp.log1p, 'expm1': jnp.expm1,
         'atan': jnp.arctan, 'asin': jnp.arcsin, 'acos': jnp.arccos, 'sinh': jnp.sinh,
         'cosh': jnp.cosh, 'asinh': jnp.arcsinh, 'acosh': jnp.arccosh,
         'atanh': jnp.arctanh, 'logistic': jax.nn.sigmoid}[name]
    got = np.asarray(jax.jit(f)(*[jnp.asarray(o) for o in operands]))
    # XLA's CPU code flushes subnormal inputs and results to zero: compare
    # where none is subnormal.
    tiny = float(np.finfo(np.float32).tiny)
    normal = np.isfinite(want) & (np.abs(want) >= tiny)
    for o in operands:
        normal &= (np.abs(o) >= tiny) | (o == 0) | ~np.isfinite(o)
    return float(np.max(ulps(got[normal], want[normal], np.float32)))


def forward(work, t, rng):
    dt = NP[t]
    cases = []
    for name in OPS:
        if name == 'atan2':
            cases.append((name, list(atan2_pairs(t, rng))))
        else:
            cases.append((name, [domain(name, t, rng)]))
    d = os.path.join(work, 'forward_' + t)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'f.mlir'), 'w') as f:
        f.write(forward_module(t, cases))
    inputs, arg = [], 0
    for _, operands in cases:
        for x in operands:
            path = os.path.join(d, f'x{arg}.bin')
            write_raw(path, x)
            inputs += ['--input', f'x{arg}={path}']
            arg += 1
    run(['trainc', os.path.join(d, 'f.mlir'), '-o', os.path.join(d, 'f.tcx')])
    run(['trainc-run', os.path.join(d, 'f.tcx'), *inputs, '--output-dir', os.path.join(d, 'out')])
    ok = True
    for i, (name, operands) in enumerate(cases):
        got = np.load(os.path.join(d, 'out', f'y{i}.npy'))
        if t == 'bf16' and got.dtype == np.dtype('<u2'):
            got = got.view(ml_dtypes.bfloat16)
        if got.dtype != dt:
            sys.exit(f'{name} {t}: result type {got.dtype}')
        with np.errstate(all='ignore'):
            want = REFERENCE[name](*[o.astype(LD) for o in operands])
            w = want.astype(dt).astype(np.float64)
        g = got.astype(np.float64)
        # Exact where the reference is not finite or zero (with its sign),
        # or where the rounded reference overflows.
        exact = ~np.isfinite(w) | (np.abs(w) < float(ml_dtypes.finfo(dt).smallest_normal))
        if name == 'logistic':
            # Its subnormal results are e^x's, which the runtime's f32 exp
            # rounds twice (its 24-bit e^r, then the scaling into the
            # subnormals): measured in subnormal ulps, as the rest.
            exact = ~np.isfinite(w) | (w == 0)
        same = (g == w) & (np.signbit(g) == np.signbit(w)) | (np.isnan(g) & np.isnan(w))
        bad_exact = np.flatnonzero(exact & ~same)
        err = ulps(got[~exact], want[~exact], dt)
        worst = float(np.max(err)) if err.size else 0.0
        j = int(np.argmax(err)) if err.size else 0
        where = [o[~exact][j] for o in operands] if err.size else []
        line_ok = worst <= ULP_TOLERANCE[t] and bad_exact.size == 0
        scale = ''
        if t == 'f32':
            jax_worst = jax_f32_ulps(name, operands, want)
            if jax_worst is not None:
                scale = f'; JAX f32, normal values: {jax_worst:.2f} ulp'
        print(f'{name} {t}: {len(operands[0])} values, worst {worst:.2f} ulp at '
              f'{", ".join(f"{float(v):.9g}" for v in where)} (tolerance '
              f'{ULP_TOLERANCE[t]:g}{scale}); {int(exact.sum())} edges exact'
              f'{"" if bad_exact.size == 0 else f" except {[(float(operands[0][k]), g[k], w[k]) for k in bad_exact[:4]]}"}'
              f' {"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    return ok


def gradient(work, t, rng):
    """loss = sum over functions of sum(f(w_f) * c); each w_f.grad is
    c * f'(w_f)."""
    dt = NP[t]
    n = 400
    params = {}
    for name in DERIVATIVE:
        x = domain(name, t, rng, n=n + 40, edges=False)
        x = x[np.isfinite(x)]
        with np.errstate(all='ignore'):
            d = DERIVATIVE[name](x.astype(LD))
        # Finite, moderate derivatives (off the domain's ends and the
        # overflowing tails), and the point 0 where the function is odd.
        keep = np.isfinite(d) & (np.abs(d) < float(ml_dtypes.finfo(dt).max) / 1.01)
        x = x[keep][:n]
        if name in ('atan', 'asin', 'asinh', 'atanh', 'sinh', 'log1p', 'expm1'):
            x[0] = 0.0
        if name in ('sinh', 'cosh'):
            # The last half of the range, where e^|x| / 2 is finite but
            # (e^(|x|/2))^2 is not.
            top = float(np.log(LD(ml_dtypes.finfo(dt).max)))
            x[1:4] = [top + 0.3, -(top + 0.6), top - 0.01]
        if name == 'logistic':
            # Where e^-x overflows (f32 and f64) and the limits.
            x[1:5] = [-100.0, -1000.0, -np.inf, np.inf]
        if name in ('asin', 'acos', 'atanh'):
            # The domain's ends, where the derivative is infinite.
            x[1:3] = [1.0, -1.0]
        if name == 'acosh':
            x[1] = 1.0
        assert len(x) == n, (name, len(x))
        params[name] = x
    y, x = atan2_pairs(t, rng, n=n)
    keep = np.isfinite(y) & np.isfinite(x) & ((y != 0) | (x != 0))
    y, x = y[keep][:n], x[keep][:n]
    y[:3], x[:3] = [0.0, 1.0, -0.0], [1.0, 0.0, -1.0]  # on both axes
    params['atan2_y'], params['atan2_x'] = y, x
    # c <= 1, so that c f'(w) stays finite up to the largest f'.
    c = rng.uniform(0.5, 1.0, n).astype(dt)
    ty = f'tensor<{n}x{t}>'
    names = list(params)
    args = [f'%w{i}: {ty} loc("params[\'{p}\']")' for i, p in enumerate(names)]
    args.append(f'%c: {ty} loc("batch[\'c\']")')
    body, terms = [], []
    for i, name in enumerate(DERIVATIVE):
        op = OPS[name]
        if op.startswith('chlo.'):
            body.append(f'    %f{i} = {op} %w{i} : {ty} -> {ty}')
        else:
            body.append(f'    %f{i} = {op} %w{i} : {ty}')
        terms.append(f'%f{i}')
    yi, xi = names.index('atan2_y'), names.index('atan2_x')
    body.append(f'    %fa = stablehlo.atan2 %w{yi}, %w{xi} : {ty}')
    terms.append('%fa')
    acc = terms[0]
    for k, term in enumerate(terms[1:]):
        body.append(f'    %s{k} = stablehlo.add {acc}, {term} : {ty}')
        acc = f'%s{k}'
    body.append(f'    %m = stablehlo.multiply {acc}, %c : {ty}')
    body.append(f'    %z = stablehlo.constant dense<0.0> : tensor<{t}>')
    body.append(f'    %l = stablehlo.reduce(%m init: %z) applies stablehlo.add across '
                f'dimensions = [0] : ({ty}, tensor<{t}>) -> tensor<{t}>')
    text = (f'module @jit_loss {{\n  func.func public @main({", ".join(args)}) -> '
            f'(tensor<{t}> {{jax.result_info = "result"}}) {{\n' + '\n'.join(body)
            + f'\n    return %l : tensor<{t}>\n  }}\n}}\n')
    d = os.path.join(work, 'gradient_' + t)
    os.makedirs(d, exist_ok=True)
    out = train_gradients(d, text, {f"params['{p}']": v for p, v in params.items()}, c)
    ok = True
    cl = c.astype(LD)
    for p, v in params.items():
        got = load_grad(out, p)
        x = v.astype(LD)
        if p == 'atan2_y':
            want = cl * params['atan2_x'].astype(LD) / (x * x + params['atan2_x'].astype(LD) ** 2)
        elif p == 'atan2_x':
            yy = params['atan2_y'].astype(LD)
            want = -cl * yy / (x * x + yy * yy)
        else:
            want = cl * DERIVATIVE[p](x)
        # An infinite derivative (the domain's ends) must be that infinity.
        infinite = ~np.isfinite(want)
        ends_ok = bool(np.all(got[infinite] == want[infinite].astype(dt)))
        err = np.where(infinite, 0, ulps(got, np.where(infinite, 1, want), dt))
        j = int(np.argmax(err))
        line_ok = (bool(np.all(np.isfinite(got[~infinite]))) and float(err[j]) <= GRAD_ULPS[t]
                   and ends_ok)
        if infinite.any():
            print(f'{p} {t} gradient at the domain\'s ends {v[infinite].tolist()}: '
                  f'{got[infinite].tolist()} {"ok" if ends_ok else "FAIL"}')
        print(f'{p} {t} gradient: {n} values, worst {float(err[j]):.2f} ulp of the derivative '
              f'at {float(v[j]):.9g} (tolerance {GRAD_ULPS[t]:g}) {"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    return ok


def main():
    work = sys.argv[1]
    ok = True
    for t in ('f64', 'f32', 'f16', 'bf16'):
        ok &= forward(work, t, np.random.default_rng(11))
    for t in ('f64', 'f32'):
        ok &= gradient(work, t, np.random.default_rng(12))
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
