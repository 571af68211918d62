"""chlo.mulhi and stablehlo.power on integers, run by trainc-run on inputs
(so that the runtime's integer kernels compute them, not the folder),
against Python's integers, exactly.

    integer_ops.test.py DIR   writes, compiles, runs and checks under DIR;
                              exits 1 on any failure.

For each of i8, i16, i32, i64, ui8, ui16, ui32, ui64:
  mulhi(a, b)   the high half of the double-width product: (a * b) >> w
                (Python's >> floors, as an arithmetic shift does);
  power(a, e)   a^e wrapped to w bits for e >= 0; for e < 0, 1 where a is
                1, (-1)^e where a is -1, 0 elsewhere (the StableHLO
                interpreter's rule); exponents span all of e's bits;
  power(a, 5)   a constant exponent, whose squaring stops at its top bit.
Inputs hold the types' extremes, 0, +-1 and random values.
"""
import os
import sys

import numpy as np

from numerics_harness import run

TYPES = {'i8': np.int8, 'i16': np.int16, 'i32': np.int32, 'i64': np.int64,
         'ui8': np.uint8, 'ui16': np.uint16, 'ui32': np.uint32, 'ui64': np.uint64}
N = 300


def wrap(v, dt):
    info = np.iinfo(dt)
    w = info.bits
    v &= (1 << w) - 1
    if info.min < 0 and v >= 1 << (w - 1):
        v -= 1 << w
    return v


def power_reference(a, e, dt):
    if e < 0:
        return 1 if a == 1 else ((-1 if e % 2 else 1) if a == -1 else 0)
    return wrap(pow(a, e, 1 << np.iinfo(dt).bits), dt)


def operands(dt, rng):
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    edges = sorted({lo, lo + 1, hi, hi - 1, 0, 1, min(hi, 2), max(lo, -1), max(lo, -2)})
    a = edges * len(edges) + [int(v) for v in rng.integers(lo, hi, N, dtype=dt, endpoint=True)]
    b = [y for y in edges for _ in edges] + [int(v) for v in rng.integers(lo, hi, N, dtype=dt, endpoint=True)]
    return np.array(a, dt), np.array(b, dt)


def exponents(dt, rng, n):
    """Exponents with every bit length up to the type's, and negatives."""
    info = np.iinfo(dt)
    bits = info.bits - (1 if info.min < 0 else 0)
    e = [0, 1, 2, 3, int(info.max)] + [(1 << (k - 1)) + int(rng.integers(0, 1 << 62)) % (1 << (k - 1))
                                        for k in range(1, bits + 1)]
    if info.min < 0:
        e += [-1, -2, -3, int(info.min)]
    e += [int(v) for v in rng.integers(0, info.max, n - len(e), dtype=dt, endpoint=True)]
    return np.array(e[:n], dt)


def main():
    work = sys.argv[1]
    rng = np.random.default_rng(5)
    args, body, results, feeds, checks = [], [], [], [], []
    for i, (t, dt) in enumerate(TYPES.items()):
        a, b = operands(dt, rng)
        n = len(a)
        ty = f'tensor<{n}x{t}>'
        base = np.concatenate([np.array([0, 1, 2, 3], dt), a[4:]])
        if np.iinfo(dt).min < 0:
            base[:4] = [-1, 1, -3, 3]
        e = exponents(dt, rng, n)
        for name, v in (('a', a), ('b', b), ('p', base), ('e', e)):
            args.append(f'%{name}{i}: {ty} loc("{name}{i}")')
            path = os.path.join(work, f'{name}{i}.npy')
            np.save(path, v)
            feeds += ['--input', f'{name}{i}={path}']
        body.append(f'    %m{i} = "chlo.mulhi"(%a{i}, %b{i}) : ({ty}, {ty}) -> {ty}')
        body.append(f'    %w{i} = stablehlo.power %p{i}, %e{i} : {ty}')
        body.append(f'    %k{i} = stablehlo.constant dense<5> : {ty}')
        body.append(f'    %c{i} = stablehlo.power %a{i}, %k{i} : {ty}')
        w = np.iinfo(dt).bits
        ai, bi, pi, ei = ([int(x) for x in v] for v in (a, b, base, e))
        checks.append((f'mulhi {t}', f'%m{i}', ty, [(x * y) >> w for x, y in zip(ai, bi)]))
        checks.append((f'power {t}', f'%w{i}', ty,
                       [power_reference(x, y, dt) for x, y in zip(pi, ei)]))
        checks.append((f'power {t} ^ 5 (constant)', f'%c{i}', ty,
                       [power_reference(x, 5, dt) for x in ai]))
    sig = ', '.join(f'{ty} {{jax.result_info = "r{j}"}}' for j, (_, _, ty, _) in enumerate(checks))
    text = (f'module @jit_f {{\n  func.func public @main({", ".join(args)}) -> ({sig}) {{\n'
            + '\n'.join(body) + '\n    return ' + ', '.join(r for _, r, _, _ in checks)
            + ' : ' + ', '.join(ty for _, _, ty, _ in checks) + '\n  }\n}\n')
    path = os.path.join(work, 'f.mlir')
    with open(path, 'w') as f:
        f.write(text)
    run(['trainc', path, '-o', os.path.join(work, 'f.tcx')])
    out = os.path.join(work, 'out')
    run(['trainc-run', os.path.join(work, 'f.tcx'), *feeds, '--output-dir', out])
    ok = True
    for j, (label, _, _, want) in enumerate(checks):
        got = np.load(os.path.join(out, f'r{j}.npy'))
        bad = [k for k, (g, x) in enumerate(zip(got.tolist(), want)) if int(g) != x]
        print(f'{label}: {len(want)} values, {len(bad)} wrong'
              + (f' (first at {bad[0]}: got {got[bad[0]]}, want {want[bad[0]]})' if bad else '')
              + (' FAIL' if bad else ' ok'))
        ok &= not bad
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
