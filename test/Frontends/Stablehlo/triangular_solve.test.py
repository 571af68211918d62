"""stablehlo.triangular_solve on inputs (not folded constants) against
numpy in float64: every combination of left_side, lower, unit_diagonal and
transpose_a (NO_TRANSPOSE, TRANSPOSE, ADJOINT), on a batch of two, for n
= 1, 5 and 9 (not a power of two: a partial last block in the doubling).
The triangle trainc must not read holds values of 1e3 magnitude (and the
diagonal too where unit_diagonal says to ignore it).

Forward: the error relative to the largest |x| of each solve must be at
most 8 n eps cond(op(a)) (cond in the infinity norm, numpy): the inverse
by doubling is a product of log2 n rounds of triangular products, each
backward stable to a few n eps, and solving through an inverse costs one
factor of the condition number (the triangles here have condition numbers
below 30). The measured worst ratio to that bound is printed.

Gradients (f32 and f64) of sum(c * x) for each combination, w.r.t. a and
b: with W = op(a)^-1, x = W b or b W: db = W^T c or c W^T; d op(a) =
-W^T dW W^T with dW = c b^T or b^T c; da is d op(a) or its transpose,
kept on the triangle read (its diagonal only without unit_diagonal) and
0 elsewhere, where the entries must be exactly 0. The same relative bound,
against the largest gradient entry.

    triangular_solve.test.py DIR   exits 1 on any failure.
"""
import itertools
import os
import sys

import numpy as np

from numerics_harness import load_grad, run, train_gradients

NP = {'f64': np.float64, 'f32': np.float32}
COMBOS = list(itertools.product([True, False], [True, False], [False, True],
                                ['NO_TRANSPOSE', 'TRANSPOSE', 'ADJOINT']))
BATCH = 2


def triangle_mask(n, lower, unit):
    m = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
    if unit:
        m &= ~np.eye(n, dtype=bool)
    return m


def make_a(n, lower, unit, rng):
    """A well-conditioned triangle and garbage where it must not be read."""
    a = rng.uniform(-1e3, 1e3, (BATCH, n, n))
    off = rng.normal(0, 0.5 / np.sqrt(n), (BATCH, n, n))
    diag = rng.uniform(1, 2, (BATCH, n)) * rng.choice([-1, 1], (BATCH, n))
    keep = triangle_mask(n, lower, True)
    a = np.where(keep, off, a)
    if not unit:
        a[:, np.arange(n), np.arange(n)] = diag
    return a


def op_matrix(a, lower, unit, transpose):
    n = a.shape[-1]
    t = np.where(triangle_mask(n, lower, unit), a, 0.0)
    if unit:
        t = t + np.eye(n)
    return np.swapaxes(t, -1, -2) if transpose != 'NO_TRANSPOSE' else t


def attrs(left, lower, unit, transpose):
    b = lambda v: 'true' if v else 'false'
    return (f'{{left_side = {b(left)}, lower = {b(lower)}, unit_diagonal = {b(unit)}, '
            f'transpose_a = #stablehlo<transpose {transpose}>}}')


def eps(t):
    return float(np.finfo(NP[t]).eps)


def check(label, got, want, bound):
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / max(float(np.max(np.abs(want))), 1e-300)
    ok = bool(np.all(np.isfinite(got))) and err <= bound
    print(f'{label}: relative error {err:.2e}, {err / bound:.3f} of the bound '
          f'{bound:.1e} {"ok" if ok else "FAIL"}')
    return ok


def forward(work, t, n, rng):
    dt = NP[t]
    cases, args, body, feeds = [], [], [], []
    for i, (left, lower, unit, transpose) in enumerate(COMBOS):
        a = make_a(n, lower, unit, rng).astype(dt)
        b = rng.normal(0, 1, (BATCH, n, 3) if left else (BATCH, 3, n)).astype(dt)
        at, bt = f'tensor<{BATCH}x{n}x{n}x{t}>', 'tensor<' + 'x'.join(map(str, b.shape)) + f'x{t}>'
        args += [f'%a{i}: {at} loc("a{i}")', f'%b{i}: {bt} loc("b{i}")']
        body.append(f'    %x{i} = "stablehlo.triangular_solve"(%a{i}, %b{i}) '
                    f'{attrs(left, lower, unit, transpose)} : ({at}, {bt}) -> {bt}')
        for name, v in ((f'a{i}', a), (f'b{i}', b)):
            path = os.path.join(work, f'{name}.npy')
            np.save(path, v)
            feeds += ['--input', f'{name}={path}']
        cases.append((left, lower, unit, transpose, a, b, bt))
    sig = ', '.join(f'{c[6]} {{jax.result_info = "x{i}"}}' for i, c in enumerate(cases))
    text = (f'module @jit_f {{\n  func.func public @main({", ".join(args)}) -> ({sig}) {{\n'
            + '\n'.join(body) + '\n    return ' + ', '.join(f'%x{i}' for i in range(len(cases)))
            + ' : ' + ', '.join(c[6] for c in cases) + '\n  }\n}\n')
    path = os.path.join(work, 'f.mlir')
    with open(path, 'w') as f:
        f.write(text)
    run(['trainc', path, '-o', os.path.join(work, 'f.tcx')])
    run(['trainc-run', os.path.join(work, 'f.tcx'), *feeds, '--output-dir', os.path.join(work, 'out')])
    ok = True
    for i, (left, lower, unit, transpose, a, b, _) in enumerate(cases):
        opa = op_matrix(a.astype(np.float64), lower, unit, transpose)
        b64 = b.astype(np.float64)
        want = np.linalg.solve(opa, b64) if left else np.swapaxes(
            np.linalg.solve(np.swapaxes(opa, -1, -2), np.swapaxes(b64, -1, -2)), -1, -2)
        cond = max(np.linalg.cond(m, np.inf) for m in opa)
        got = np.load(os.path.join(work, 'out', f'x{i}.npy'))
        ok &= check(f'{t} n={n} left={left} lower={lower} unit={unit} {transpose}', got, want,
                    8 * n * eps(t) * cond)
    return ok


def gradients(work, t, n, rng):
    dt = NP[t]
    params, args, body, terms, cases = {}, [], [], [], []
    ty = f'tensor<{BATCH}x{n}x{n}x{t}>'
    for i, (left, lower, unit, transpose) in enumerate(COMBOS):
        a = make_a(n, lower, unit, rng).astype(dt)
        b = rng.normal(0, 1, (BATCH, n, n)).astype(dt)
        params[f'a{i}'], params[f'b{i}'] = a, b
        args += [f'%a{i}: {ty} loc("params[\'a{i}\']")', f'%b{i}: {ty} loc("params[\'b{i}\']")']
        body.append(f'    %x{i} = "stablehlo.triangular_solve"(%a{i}, %b{i}) '
                    f'{attrs(left, lower, unit, transpose)} : ({ty}, {ty}) -> {ty}')
        terms.append(f'%x{i}')
        cases.append((left, lower, unit, transpose))
    acc = terms[0]
    for k, term in enumerate(terms[1:]):
        body.append(f'    %s{k} = stablehlo.add {acc}, {term} : {ty}')
        acc = f'%s{k}'
    c = rng.uniform(0.5, 1.0, (BATCH, n, n)).astype(dt)
    body.append(f'    %m = stablehlo.multiply {acc}, %c : {ty}')
    body.append(f'    %z = stablehlo.constant dense<0.0> : tensor<{t}>')
    body.append(f'    %l = stablehlo.reduce(%m init: %z) applies stablehlo.add across '
                f'dimensions = [0, 1, 2] : ({ty}, tensor<{t}>) -> tensor<{t}>')
    args.append(f'%c: {ty} loc("batch[\'c\']")')
    text = (f'module @jit_loss {{\n  func.func public @main({", ".join(args)}) -> '
            f'(tensor<{t}> {{jax.result_info = "result"}}) {{\n' + '\n'.join(body)
            + f'\n    return %l : tensor<{t}>\n  }}\n}}\n')
    d = os.path.join(work, f'gradient_{t}_{n}')
    os.makedirs(d, exist_ok=True)
    out = train_gradients(d, text, {f"params['{k}']": v for k, v in params.items()}, c)
    c64 = c.astype(np.float64)
    ok = True
    for i, (left, lower, unit, transpose) in enumerate(cases):
        a, b = params[f'a{i}'].astype(np.float64), params[f'b{i}'].astype(np.float64)
        opa = op_matrix(a, lower, unit, transpose)
        w = np.linalg.inv(opa)
        wt = np.swapaxes(w, -1, -2)
        if left:
            db = wt @ c64
            dw = c64 @ np.swapaxes(b, -1, -2)
        else:
            db = c64 @ wt
            dw = np.swapaxes(b, -1, -2) @ c64
        dopa = -wt @ dw @ wt
        da = np.swapaxes(dopa, -1, -2) if transpose != 'NO_TRANSPOSE' else dopa
        mask = triangle_mask(n, lower, unit)
        da = np.where(mask, da, 0.0)
        got = {}
        for name in ('a', 'b'):
            got[name] = load_grad(out, f'{name}{i}')
        cond = max(np.linalg.cond(m, np.inf) for m in opa)
        bound = 8 * n * eps(t) * cond * cond
        label = f'{t} n={n} gradient left={left} lower={lower} unit={unit} {transpose}'
        outside = np.count_nonzero(got['a'][:, ~mask])
        if outside:
            print(f'{label}: {outside} gradient entries outside the triangle read are not 0 FAIL')
            ok = False
        ok &= check(label + ' da', got['a'], da, bound)
        ok &= check(label + ' db', got['b'], db, bound)
    return ok


def main():
    work = sys.argv[1]
    rng = np.random.default_rng(17)
    ok = True
    for t in NP:
        for n in (1, 5, 9):
            d = os.path.join(work, f'{t}_{n}')
            os.makedirs(d, exist_ok=True)
            ok &= forward(d, t, n, rng)
    for t in NP:
        ok &= gradients(work, t, 5, rng)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
