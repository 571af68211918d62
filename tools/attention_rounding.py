#!/usr/bin/env python3
"""The error cuDNN's fused attention adds by its 16-bit intermediates,
emulated in numpy on DeviceKernels.AttentionCudnn's shapes: the tolerance
that test holds cuDNN to (relative L2 error of 4 unit roundoffs u of the
storage type against the f32 reference) comes from these numbers.

The emulation rounds what cuDNN's flash attention rounds beyond trainc's
own kernels: the unnormalized probabilities to the storage type for P V,
the result to the storage type, D = rowsum(dO * O) from that rounded
result, dS to the storage type for dS K and dS^T Q, P for P^T dO, and every
output once. Everything else is f64. It prints each output's relative L2
error against the f64 truth, in units of u, and exits 1 if one is above
the test's 4 u.

Run with the project venv (numpy, ml_dtypes):
  build/venv/bin/python tools/attention_rounding.py
"""
import sys

import ml_dtypes
import numpy as np

BOUND_IN_U = 4  # DeviceKernels.AttentionCudnn's tolerance


def rounded(x, dtype):
    return x.astype(dtype).astype(np.float64)


def errors(b, hq, hk, sq, sk, d, causal, dtype, seed=0):
    """Relative L2 errors of o, dq, dk, dv in units of u."""
    rng = np.random.default_rng(seed)
    def uniform(*shape):
        return rounded(rng.uniform(-1, 1, shape), dtype)
    q, k, v, g = uniform(b, hq, sq, d), uniform(b, hk, sk, d), uniform(b, hk, sk, d), \
        uniform(b, hq, sq, d)
    group = hq // hk
    k, v = np.repeat(k, group, 1), np.repeat(v, group, 1)
    scale = 1 / np.sqrt(d)
    s = scale * q @ k.transpose(0, 1, 3, 2)
    if causal:  # trainc's alignment: query i sees keys j <= i + (Sk - Sq)
        i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
        s = np.where(j <= i + (sk - sq), s, -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    l = e.sum(-1, keepdims=True)
    p = e / l
    # The truth.
    o = p @ v
    dp = g @ v.transpose(0, 1, 3, 2)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq, dk, dv = scale * ds @ k, scale * ds.transpose(0, 1, 3, 2) @ q, \
        p.transpose(0, 1, 3, 2) @ g
    # cuDNN's roundings.
    o16 = rounded((rounded(e, dtype) @ v) / l, dtype)
    ds16 = rounded(p * (dp - (g * o16).sum(-1, keepdims=True)), dtype)
    dq16 = rounded(scale * ds16 @ k, dtype)
    dk16 = rounded(scale * ds16.transpose(0, 1, 3, 2) @ q, dtype)
    dv16 = rounded(rounded(p, dtype).transpose(0, 1, 3, 2) @ g, dtype)
    def by_kv_head(x):  # dk and dv sum over a group's query heads
        return x.reshape(b, hk, group, sk, -1).sum(2)
    u = {ml_dtypes.bfloat16: 2.0**-8, np.float16: 2.0**-11}[dtype]
    pairs = [(o16, o), (dq16, dq), (by_kv_head(dk16), by_kv_head(dk)),
             (by_kv_head(dv16), by_kv_head(dv))]
    return [np.linalg.norm(x - t) / np.linalg.norm(t) / u for x, t in pairs]


def main():
    cases = [  # DeviceKernels.AttentionCudnn's: B, Hq, Hk, Sq, Sk, D, causal, dtype
        (2, 12, 12, 129, 129, 64, True, ml_dtypes.bfloat16),
        (2, 4, 4, 100, 300, 64, True, ml_dtypes.bfloat16),
        (1, 8, 2, 77, 77, 32, False, ml_dtypes.bfloat16),
        (2, 4, 4, 64, 64, 128, True, np.float16),
    ]
    worst = 0.0
    for case in cases:
        errs = errors(*case)
        worst = max(worst, *errs)
        print(f'{np.dtype(case[-1]).name} B {case[0]} H {case[1]}/{case[2]} '
              f'S {case[3]}/{case[4]} D {case[5]} causal {case[6]}: o, dq, dk, dv '
              + ', '.join(f'{x:.2f}' for x in errs) + ' u')
    print(f'worst {worst:.2f} u; the test allows {BOUND_IN_U} u')
    return 0 if worst <= BOUND_IN_U else 1


if __name__ == '__main__':
    sys.exit(main())
