#!/usr/bin/env python3
"""Fits the polynomial of GraphMath.cpp's atan: atan(u) = u + u z p(z),
z = u^2, for |u| <= tan(pi/8), and prints p's coefficients (lowest degree
first) for f32 and f64 with the worst errors of the value and of its
derivative, in ulps, over 400,001 points.

p is the Chebyshev interpolant of (atan(u) - u) / u^3 on z in
[0, tan(pi/8)^2], computed in long double (64-bit mantissa) from the
series sum_k (-1)^k z^(k-1) / (2k + 1) and rounded once: near-minimax,
and without the noise a float64 least-squares fit puts into the high
coefficients, which the derivative (the gradient autodiff takes) would
amplify near the ends of the range.

    build/venv/bin/python tools/fit_atan_polynomial.py
"""
import numpy as np

L = np.longdouble
PI = L('3.14159265358979323846264338327950288')
ZMAX = np.tan(PI / 8) ** 2


def p_true(z):
    z = np.asarray(z, L)
    s, t = np.zeros_like(z), np.ones_like(z)
    for k in range(1, 60):
        s += (-1) ** k * t / L(2 * k + 1)
        t *= z
    return s


def chebyshev_interpolant(degree):
    """Monomial coefficients (in z, long double) of the interpolant at the
    degree + 1 Chebyshev nodes of [0, ZMAX]."""
    n = degree + 1
    k = np.arange(n, dtype=L)
    theta = PI * (k + L(0.5)) / n
    f = p_true(ZMAX / 2 * (1 + np.cos(theta)))
    c = np.array([2 / L(n) * np.sum(f * np.cos(j * theta)) for j in range(n)], L)
    c[0] /= 2
    # sum_j c_j T_j(t), t = 2z / ZMAX - 1, expanded in powers of z.
    t = np.array([-1, 2 / ZMAX], L)  # t as a polynomial in z
    prev, cur = np.array([1], L), t.copy()
    result = c[0] * prev
    for j in range(1, n):
        result = np.pad(result, (0, len(cur) - len(result)))
        result = result + c[j] * cur
        nxt = 2 * np.convolve(t, cur)
        nxt[:len(prev)] -= prev
        prev, cur = cur, nxt
    return result


def errors(coef, dt):
    u = np.linspace(0, float(np.sqrt(ZMAX)), 400001).astype(dt)[1:]
    z = u * u
    p = np.zeros_like(u)
    dp = np.zeros_like(u)
    for ci in coef[::-1]:
        dp = dp * z + p
        p = p * z + dt(ci)
    value = u + u * z * p
    # d/du (u + u^3 p(z)) = 1 + 3 z p + 2 z^2 p'(z)
    slope = 1 + 3 * z * p + 2 * z * z * dp
    ul = u.astype(L)
    want = np.arctan(ul)
    want_slope = 1 / (1 + ul * ul)
    eps = float(np.finfo(dt).eps)

    def ulp(w):
        return np.exp2(np.floor(np.log2(np.abs(w.astype(np.float64))))) * eps
    return (float(np.max(np.abs(value.astype(L) - want) / ulp(want))),
            float(np.max(np.abs(slope.astype(L) - want_slope) / ulp(want_slope))))


def main():
    for name, dt, degree in (('f32', np.float32, 5), ('f64', np.float64, 12)):
        coef = chebyshev_interpolant(degree).astype(dt)
        value, slope = errors(coef, dt)
        print(f'{name}: degree {degree}, worst {value:.2f} ulp, derivative {slope:.2f} ulp')
        print('  {' + ', '.join(repr(float(c)) for c in coef) + '}')


if __name__ == '__main__':
    main()
