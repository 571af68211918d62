"""The activations (Sigmoid among them), Sign, Clip, Mod and the trigonometric and hyperbolic
functions of trainc's ONNX frontend (ActivationOps.cpp) against
onnxruntime, and their gradients against central differences of ONNX's
own reference evaluator in float64.

    activations.test.py DIR   writes, compiles, runs and checks under DIR;
                              exits 1 on any failure.

Forward (float32 unless named): one model holding every case, each a
node on its own input, run by trainc + trainc-run and by onnxruntime.
Floats must be within FORWARD_ULPS units in the last place of the op's
definition evaluated in long double by numpy, and within twice that of
onnxruntime's value wherever onnxruntime is itself that close to it (its Elu, Selu and Celu compute
exp(x) - 1, millions of ulps off near 0; its distance is printed). Both
compute in float32 with their own exp, log, tanh, sin and cos, each
within about an ulp, through compositions of a few steps; Tan is sin /
cos, whose rounding is amplified by tan's condition number
|x (1 + tan^2) / tan|, so its inputs stay below 1.4 in magnitude where that
is at most 3. Integers must be equal, NaN must meet NaN. Float Mod with
fmod = 0 (Python's %, defined by opset 28, which onnxruntime does not
run) is checked against numpy.mod instead, exactly (fmod is exact).

Gradients: the float ops again, each on a trainable initializer w, loss
sum(y * c): w.grad = c * f'(w) against central differences (step 1e-6
relative) of the same single-node model in float64 by
onnx.reference.ReferenceEvaluator, away from kinks: |got - want| <=
GRAD_RTOL * |want| + GRAD_ATOL, element by element (float32 values and
derivatives: a few ulps, 1e-5 relative; 1e-7 absolute where a derivative
crosses 0, as HardSwish's and Mish's do; the differences themselves are
good to ~1e-9).
At the kinks the derivative is PyTorch's convention, checked exactly:
LeakyRelu, PRelu, Elu, Selu take their negative side at 0 (alpha, the
slope, alpha * gamma), Celu gives 1 and Softplus 1/2 at 0, HardSwish 1.5
and -0.5 at +-3, Clip 0 at its bounds (hardtanh's) and Sign 0 at 0;
PRelu's slope gets sum(c * min(x, 0)) over the broadcast dimension; Clip's
bounds as trainable initializers get the sums of c where x reaches them.
At +-inf, where the ops have limits, the gradient is the limit's slope
(INFINITE_GRADIENT), never NaN.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from op_harness import compile_and_run, expect_rejections

FORWARD_ULPS = 4
GRAD_RTOL = 1e-5
GRAD_ATOL = 1e-7
OPSET = 18
F32 = TensorProto.FLOAT
RNG = np.random.default_rng(3)


def vals(*specials, lo=-6.0, hi=6.0, n=200):
    return np.array(list(specials) + list(RNG.uniform(lo, hi, n)), np.float32)


# name: (op, attributes, input values, kinks)
FLOAT_CASES = {
    'atan': ('Atan', {}, vals(0.0, -0.0, 1.0, -1.0, 0.4142136, 2.4142137, 1e30, -1e30, lo=-50, hi=50), ()),
    'asin': ('Asin', {}, vals(0.0, 1.0, -1.0, 0.9999999, lo=-1, hi=1), ()),
    'acos': ('Acos', {}, vals(0.0, 1.0, -1.0, -0.9999999, lo=-1, hi=1), ()),
    'tan': ('Tan', {}, vals(0.0, -0.0, 1.0, lo=-1.4, hi=1.4), ()),
    'sinh': ('Sinh', {}, vals(0.0, 1e-6, -20.0, 30.0, lo=-40, hi=40), ()),
    'cosh': ('Cosh', {}, vals(0.0, 1e-6, -20.0, 30.0, lo=-40, hi=40), ()),
    'asinh': ('Asinh', {}, vals(0.0, 1e-6, -1e6, 1e20, lo=-100, hi=100), ()),
    'acosh': ('Acosh', {}, vals(1.0, 1.0001, 1e20, lo=1, hi=100), ()),
    'atanh': ('Atanh', {}, vals(0.0, 1e-6, 0.999, -0.999, lo=-1, hi=1), ()),
    'softplus': ('Softplus', {}, vals(0.0, 30.0, -30.0, 80.0, -80.0, lo=-20, hi=20), (0.0,)),
    'softsign': ('Softsign', {}, vals(0.0, 1e30, -1e30), ()),
    'sigmoid': ('Sigmoid', {}, vals(0.0, -0.0, 30.0, -30.0, -88.0, -100.0, lo=-20, hi=20), ()),
    'mish': ('Mish', {}, vals(0.0, 30.0, -30.0, lo=-20, hi=20), ()),
    'leaky_relu': ('LeakyRelu', {'alpha': 0.1}, vals(0.0, -0.0, 1e30, -1e30), (0.0,)),
    'elu': ('Elu', {'alpha': 0.7}, vals(0.0, -100.0, 100.0, -1e-7), (0.0,)),
    'selu': ('Selu', {}, vals(0.0, -100.0, 100.0, -1e-7), (0.0,)),
    'celu': ('Celu', {'alpha': 2.0}, vals(0.0, -100.0, 100.0, -1e-7), (0.0,)),
    'hard_sigmoid': ('HardSigmoid', {'alpha': 0.3, 'beta': 0.4}, vals(0.0, 2.0, -4.0 / 3), (2.0, -4.0 / 3)),
    'hard_swish': ('HardSwish', {}, vals(0.0, 3.0, -3.0), (3.0, -3.0)),
    'thresholded_relu': ('ThresholdedRelu', {'alpha': 0.5}, vals(0.5, 0.0), (0.5,)),
    'shrink': ('Shrink', {'bias': 0.2, 'lambd': 0.6}, vals(0.6, -0.6, 0.0), (0.6, -0.6)),
    'sign': ('Sign', {}, vals(0.0, -0.0, np.nan, np.inf, -np.inf), (0.0,)),
    'clip': ('Clip', {}, vals(-1.0, 2.0, np.nan), (-1.0, 2.0)),
}
# Clip's bounds: constants (Constant nodes, not trainable initializers).
CLIP_MIN, CLIP_MAX = -1.0, 2.0
# PyTorch's derivative at each kink (times c), where it is not 0.
KINK_GRADIENT = {
    'leaky_relu': {0.0: 0.1}, 'elu': {0.0: 0.7},
    'selu': {0.0: 1.67326319217681884765625 * 1.05070102214813232421875},
    'celu': {0.0: 1.0}, 'softplus': {0.0: 0.5},
    'hard_swish': {3.0: 1.5, -3.0: -0.5},
}
# The gradient at the infinities (c times), where the op has a limit.
INF = float('inf')
INFINITE_GRADIENT = {
    'hard_swish': (1.0, 0.0), 'softsign': (0.0, 0.0), 'sign': (0.0, 0.0),
    'leaky_relu': (1.0, 0.1), 'elu': (1.0, 0.0), 'celu': (1.0, 0.0),
    'thresholded_relu': (1.0, 0.0), 'shrink': (1.0, 1.0), 'clip': (0.0, 0.0),
    'softplus': (1.0, 0.0), 'sigmoid': (0.0, 0.0),
}
LD = np.longdouble
F = lambda v: LD(np.float32(v))  # an ONNX float attribute, as stored
SELU_ALPHA, SELU_GAMMA = F(1.67326319217681884765625), F(1.05070102214813232421875)
# Each op's definition in long double (numpy), the forward reference.
# HardSigmoid and HardSwish are not here: alpha * x + beta rounds in float32
# near their ends (63 ulps from the exact value for both trainc and
# onnxruntime), which is the op's own arithmetic; they are compared with
# onnxruntime alone.
EXACT = {
    'atan': np.arctan, 'asin': np.arcsin, 'acos': np.arccos, 'tan': np.tan,
    'sinh': np.sinh, 'cosh': np.cosh, 'asinh': np.arcsinh, 'acosh': np.arccosh,
    'atanh': np.arctanh, 'softplus': lambda x: np.logaddexp(LD(0), x),
    'softsign': lambda x: x / (1 + np.abs(x)),
    'sigmoid': lambda x: 1 / (1 + np.exp(-x)),
    'mish': lambda x: x * np.tanh(np.logaddexp(LD(0), x)),
    'leaky_relu': lambda x: np.where(x > 0, x, F(0.1) * x),
    'elu': lambda x: np.where(x > 0, x, F(0.7) * np.expm1(np.minimum(x, 0))),
    'selu': lambda x: SELU_GAMMA * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0))),
    'celu': lambda x: np.where(x > 0, x, 2 * np.expm1(np.minimum(x, 0) / 2)),
    'thresholded_relu': lambda x: np.where(x > F(0.5), x, 0),
    'shrink': lambda x: np.where(x < -F(0.6), x + F(0.2), np.where(x > F(0.6), x - F(0.2), 0)),
    'sign': np.sign,
    'clip': lambda x: np.clip(x, CLIP_MIN, CLIP_MAX),
}
CLIP_X = np.array([-1.0, 2.0, -3.0, 0.5, 5.0, 1.9999, -0.9999, -1.5], np.float32)
PRELU_X = RNG.uniform(-3, 3, (6, 5)).astype(np.float32)
PRELU_X[0, :] = 0.0
PRELU_SLOPE = np.array([0.25, -0.5, 1.5, 0.0, 0.1], np.float32)


def nodes_for(name, op, attrs, x, y):
    if op == 'Clip':
        return [helper.make_node('Constant', [], [f'{name}_lo'],
                                 value=numpy_helper.from_array(np.array(CLIP_MIN, np.float32))),
                helper.make_node('Constant', [], [f'{name}_hi'],
                                 value=numpy_helper.from_array(np.array(CLIP_MAX, np.float32))),
                helper.make_node('Clip', [x, f'{name}_lo', f'{name}_hi'], [y])]
    return [helper.make_node(op, [x], [y], **attrs)]


def ulps32(got, want):
    w = np.abs(want.astype(np.float64))
    e = np.floor(np.log2(np.maximum(w, np.finfo(np.float32).tiny)))
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / (np.exp2(e) * 2.0 ** -23)


def forward(work):
    nodes, inputs, outputs, feeds = [], [], [], {}
    for name, (op, attrs, x, _) in FLOAT_CASES.items():
        nodes += nodes_for(name, op, attrs, f'x_{name}', f'y_{name}')
        inputs.append(helper.make_tensor_value_info(f'x_{name}', F32, [len(x)]))
        outputs.append(helper.make_tensor_value_info(f'y_{name}', F32, [len(x)]))
        feeds[f'x_{name}'] = x
    # PRelu with a slope broadcast over rows; Sign and Clip on integers;
    # Mod on integers (both fmod) and floats (fmod = 1).
    nodes.append(helper.make_node('PRelu', ['x_prelu', 'slope'], ['y_prelu']))
    inputs += [helper.make_tensor_value_info('x_prelu', F32, list(PRELU_X.shape)),
               helper.make_tensor_value_info('slope', F32, [5])]
    outputs.append(helper.make_tensor_value_info('y_prelu', F32, list(PRELU_X.shape)))
    feeds['x_prelu'], feeds['slope'] = PRELU_X, PRELU_SLOPE
    ints = np.array([0, 1, -1, 7, -7, 2**31 - 1, -2**31, 13, -13, 5], np.int32)
    nodes.append(helper.make_node('Sign', ['i'], ['sign_i']))
    nodes.append(helper.make_node('Constant', [], ['ilo'], value=numpy_helper.from_array(np.array(-8, np.int64))))
    nodes.append(helper.make_node('Clip', ['l', 'ilo'], ['clip_l']))
    a = np.array([7, -7, 7, -7, 0, 6, -6, 2**31 - 1, -2**31 + 1, 5], np.int32)
    b = np.array([3, 3, -3, -3, 5, 3, -3, 2, 7, 1], np.int32)
    nodes.append(helper.make_node('Mod', ['a', 'b'], ['mod_a'], fmod=0))
    nodes.append(helper.make_node('Mod', ['a', 'b'], ['fmod_a'], fmod=1))
    fa = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 1e10, 3.0, np.inf, 1.0], np.float32)
    fb = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, np.inf, 2.0, 0.0], np.float32)
    nodes.append(helper.make_node('Mod', ['fa', 'fb'], ['fmod_f'], fmod=1))
    ua = np.array([7, 0, 4294967295, 12, 5], np.uint32)
    ub = np.array([3, 5, 7, 4294967295, 1], np.uint32)
    nodes.append(helper.make_node('Mod', ['ua', 'ub'], ['mod_u'], fmod=0))
    # Clip without bounds clips the infinities to the largest float; with
    # only max, to the lowest below.
    nodes.append(helper.make_node('Clip', ['inf'], ['clip_none']))
    nodes.append(helper.make_node('Constant', [], ['hi1'], value=numpy_helper.from_array(np.array(1.0, np.float32))))
    nodes.append(helper.make_node('Clip', ['inf', '', 'hi1'], ['clip_max']))
    inputs += [helper.make_tensor_value_info('i', TensorProto.INT32, [len(ints)]),
               helper.make_tensor_value_info('l', TensorProto.INT64, [len(ints)]),
               helper.make_tensor_value_info('a', TensorProto.INT32, [len(a)]),
               helper.make_tensor_value_info('b', TensorProto.INT32, [len(b)]),
               helper.make_tensor_value_info('fa', F32, [len(fa)]),
               helper.make_tensor_value_info('fb', F32, [len(fb)]),
               helper.make_tensor_value_info('ua', TensorProto.UINT32, [len(ua)]),
               helper.make_tensor_value_info('ub', TensorProto.UINT32, [len(ub)]),
               helper.make_tensor_value_info('inf', F32, [4])]
    outputs += [helper.make_tensor_value_info('sign_i', TensorProto.INT32, [len(ints)]),
                helper.make_tensor_value_info('clip_l', TensorProto.INT64, [len(ints)]),
                helper.make_tensor_value_info('mod_a', TensorProto.INT32, [len(a)]),
                helper.make_tensor_value_info('fmod_a', TensorProto.INT32, [len(a)]),
                helper.make_tensor_value_info('fmod_f', F32, [len(fa)]),
                helper.make_tensor_value_info('mod_u', TensorProto.UINT32, [len(ua)]),
                helper.make_tensor_value_info('clip_none', F32, [4]),
                helper.make_tensor_value_info('clip_max', F32, [4])]
    feeds.update(i=ints, l=ints.astype(np.int64) * 3, a=a, b=b, fa=fa, fb=fb, ua=ua, ub=ub,
                 inf=np.array([np.inf, -np.inf, 3e38, -5.0], np.float32))
    model = helper.make_model(helper.make_graph(nodes, 'activations', inputs, outputs),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    onnx.checker.check_model(model)
    path = os.path.join(work, 'forward.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds)
    sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    names = [o.name for o in outputs]
    wants = dict(zip(names, sess.run(names, feeds)))
    ok = True
    for name in names:
        got = np.load(os.path.join(out, name + '.npy'))
        want = wants[name]
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f'{name}: {got.dtype}{got.shape}, onnxruntime {want.dtype}{want.shape} FAIL')
            ok = False
            continue
        if want.dtype.kind in 'iu':
            good = np.array_equal(got, want)
            print(f'{name}: {got.size} values {"equal" if good else f"differ: {got} vs {want}"}'
                  f' {"ok" if good else "FAIL"}')
            ok &= good
            continue
        nan = np.isnan(want)
        inf = np.isinf(want)
        bad_special = np.flatnonzero((nan & ~np.isnan(got)) | (inf & (got != want)))
        finite = ~nan & ~inf
        # Against the definition in long double, and against onnxruntime
        # where onnxruntime itself is within the tolerance of it (its Elu,
        # Selu and Celu compute exp(x) - 1, which cancels near 0).
        err = ulps32(got[finite], want[finite])
        case = name[2:]
        if case in EXACT:
            with np.errstate(all='ignore'):
                exact = EXACT[case](feeds['x_' + case].astype(LD))
            exact_err = ulps32(got[finite], exact[finite])
            ort_err = ulps32(want[finite], exact[finite])
            # Two values within FORWARD_ULPS of the exact one are within
            # twice that of each other.
            err = np.maximum(exact_err, np.where(ort_err <= FORWARD_ULPS, err / 2, 0))
            scale = f'; onnxruntime {float(np.max(ort_err)):.2f} ulp from it'
        else:
            scale = ''
        j = int(np.argmax(err))
        good = err[j] <= FORWARD_ULPS and bad_special.size == 0
        print(f'{name}: {got.size} values, worst {err[j]:.2f} ulp (tolerance {FORWARD_ULPS}{scale})'
              f'{"" if bad_special.size == 0 else f", specials differ at {bad_special}"}'
              f' {"ok" if good else "FAIL"}')
        ok &= bool(good)
    # Python's % on floats (Mod, fmod = 0, opset 28) against numpy.mod.
    ok &= float_python_mod(work)
    ok &= numpy_only(work)
    return ok


def numpy_only(work):
    """Cases onnxruntime cannot serve as the reference for: the minimum
    integer modulo -1 (C's % faults there; the remainder is 0), and float16
    inputs against the long-double definition: the GraphMath functions
    compute in float32 and round once (one float16 ulp); the others run
    their two or three steps in float16 (Elu: expm1, then times alpha), each
    rounded (two ulps)."""
    a = np.array([-2**31, -2**31, 5, -9, 2**31 - 1, -2**31], np.int32)
    b = np.array([-1, 7, -1, -1, -1, 2**31 - 1], np.int32)
    f16_ulps = {'atan': 1, 'sinh': 1, 'asinh': 1, 'softplus': 1, 'mish': 1, 'elu': 2,
                'selu': 2, 'celu': 2, 'leaky_relu': 2, 'softsign': 2}
    f16_cases = tuple(f16_ulps)
    nodes = [helper.make_node('Mod', ['a', 'b'], ['mod0'], fmod=0),
             helper.make_node('Mod', ['a', 'b'], ['mod1'], fmod=1)]
    inputs = [helper.make_tensor_value_info('a', TensorProto.INT32, [len(a)]),
              helper.make_tensor_value_info('b', TensorProto.INT32, [len(b)])]
    outputs = [helper.make_tensor_value_info('mod0', TensorProto.INT32, [len(a)]),
               helper.make_tensor_value_info('mod1', TensorProto.INT32, [len(a)])]
    feeds = {'a': a, 'b': b}
    for name in f16_cases:
        op, attrs, x, _ = FLOAT_CASES[name]
        x16 = x[np.isfinite(x) & (np.abs(x) < 60000)].astype(np.float16)
        nodes += nodes_for(name, op, attrs, f'h_{name}', f'g_{name}')
        inputs.append(helper.make_tensor_value_info(f'h_{name}', TensorProto.FLOAT16, [len(x16)]))
        outputs.append(helper.make_tensor_value_info(f'g_{name}', TensorProto.FLOAT16, [len(x16)]))
        feeds[f'h_{name}'] = x16
    model = helper.make_model(helper.make_graph(nodes, 'numpy_only', inputs, outputs),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'numpy_only.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds)
    ok = True
    for name, want in (('mod0', np.mod(a.astype(np.int64), b).astype(np.int32)),
                       ('mod1', np.fmod(a.astype(np.int64), b).astype(np.int32))):
        got = np.load(os.path.join(out, name + '.npy'))
        good = np.array_equal(got, want)
        print(f'{name} int32 with the minimum modulo -1: {got.tolist()} '
              f'{"ok" if good else f"FAIL, expected {want.tolist()}"}')
        ok &= good
    for name in f16_cases:
        x16 = feeds[f'h_{name}']
        got = np.load(os.path.join(out, f'g_{name}.npy')).astype(np.float64)
        with np.errstate(all='ignore'):
            want = EXACT[name](x16.astype(LD)).astype(np.float64)
            w16 = want.astype(np.float16).astype(np.float64)
        # Beyond float16's range both must be the infinity.
        overflow = ~np.isfinite(w16)
        same_overflow = np.array_equal(got[overflow], w16[overflow])
        e = np.floor(np.log2(np.maximum(np.abs(w16[~overflow]), 2.0 ** -14)))
        err = np.abs(got[~overflow] - want[~overflow]) / (np.exp2(e) * 2.0 ** -10)
        good = bool(np.all(err <= f16_ulps[name])) and same_overflow
        print(f'{name} f16: {len(x16)} values, worst {float(np.max(err)):.2f} ulp of float16 '
              f'(tolerance {f16_ulps[name]}){"" if same_overflow else ", overflow differs"} '
              f'{"ok" if good else "FAIL"}')
        ok &= good
    return ok


def float_python_mod(work):
    x = np.array([5.5, -5.5, 5.5, -5.5, 0.0, -0.0, 0.0, -0.0, 3.0, -3.0, 6.0, -6.0, 1e10,
                  np.inf, 1.0, np.nan] + list(RNG.uniform(-50, 50, 40)), np.float32)
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, -3.0, -3.0, np.inf, np.inf, 3.0, 3.0, 3.0,
                  2.0, 0.0, 1.0] + list(RNG.uniform(-9, 9, 40)), np.float32)
    graph = helper.make_graph([helper.make_node('Mod', ['x', 'y'], ['z'], fmod=0)], 'pymod',
                              [helper.make_tensor_value_info('x', F32, [len(x)]),
                               helper.make_tensor_value_info('y', F32, [len(y)])],
                              [helper.make_tensor_value_info('z', F32, [len(x)])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 28)])
    path = os.path.join(work, 'pymod.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, {'x': x, 'y': y})
    got = np.load(os.path.join(out, 'z.npy'))
    with np.errstate(all='ignore'):
        want = np.mod(x, y)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    good = bool(same.all())
    bad = np.flatnonzero(~same)[:4]
    print(f'Mod fmod=0 f32 (opset 28): {len(x)} values bit for bit numpy.mod '
          f'{"ok" if good else f"FAIL at {[(x[k], y[k], got[k], want[k]) for k in bad]}"}')
    return good


def derivative_fd(op, attrs, name, x):
    """Central differences of the op in float64 by ONNX's reference
    evaluator."""
    nodes = nodes_for(name, op, attrs, 'x', 'y')
    if op == 'Clip':
        for n in nodes[:2]:
            v = numpy_helper.to_array(n.attribute[0].t).astype(np.float64)
            n.attribute[0].t.CopyFrom(numpy_helper.from_array(v))
    graph = helper.make_graph(nodes, 'fd', [helper.make_tensor_value_info('x', TensorProto.DOUBLE, [len(x)])],
                              [helper.make_tensor_value_info('y', TensorProto.DOUBLE, [len(x)])])
    ev = ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)]))
    x = x.astype(np.float64)
    h = 1e-6 * np.maximum(1.0, np.abs(x))
    f = lambda v: ev.run(None, {'x': v})[0]
    return (f(x + h) - f(x - h)) / (2 * h)


def gradients(work):
    nodes, params, terms = [], [], []
    inputs, feeds = [], {}
    grad_cases = dict(FLOAT_CASES)
    for name, (op, attrs, x, kinks) in grad_cases.items():
        x = x[np.isfinite(x)]
        if name in ('asin', 'acos', 'atanh'):
            x = x[np.abs(x) < 0.99]
        if name == 'acosh':
            x = x[x > 1.01]
        if name in ('sinh', 'cosh', 'mish', 'softplus', 'elu', 'selu', 'celu'):
            x = x[np.abs(x) < 50]
        params.append(numpy_helper.from_array(x, f'w_{name}'))
        nodes += nodes_for(name, op, attrs, f'w_{name}', f'y_{name}')
        nodes.append(helper.make_node('Mul', [f'y_{name}', f'c_{name}'], [f'p_{name}']))
        nodes.append(helper.make_node('ReduceSum', [f'p_{name}'], [f's_{name}'], keepdims=0))
        c = RNG.uniform(0.5, 2.0, len(x)).astype(np.float32)
        inputs.append(helper.make_tensor_value_info(f'c_{name}', F32, [len(x)]))
        feeds[f'c_{name}'] = c
        terms.append(f's_{name}')
    params.append(numpy_helper.from_array(PRELU_X, 'w_prelu'))
    params.append(numpy_helper.from_array(PRELU_SLOPE, 'slope'))
    nodes.append(helper.make_node('PRelu', ['w_prelu', 'slope'], ['y_prelu']))
    nodes.append(helper.make_node('ReduceSum', ['y_prelu'], ['s_prelu'], keepdims=0))
    terms.append('s_prelu')
    # Clip with its bounds as trainable initializers, as exporters store
    # them: x's gradient is still clamp's, each bound gets the sum of c
    # where it is taken.
    params.append(numpy_helper.from_array(CLIP_X, 'w_clip_init'))
    params.append(numpy_helper.from_array(np.array(CLIP_MIN, np.float32), 'clip_init_lo'))
    params.append(numpy_helper.from_array(np.array(CLIP_MAX, np.float32), 'clip_init_hi'))
    nodes.append(helper.make_node('Clip', ['w_clip_init', 'clip_init_lo', 'clip_init_hi'],
                                  ['y_clip_init']))
    nodes.append(helper.make_node('Mul', ['y_clip_init', 'c_clip_init'], ['p_clip_init']))
    nodes.append(helper.make_node('ReduceSum', ['p_clip_init'], ['s_clip_init'], keepdims=0))
    inputs.append(helper.make_tensor_value_info('c_clip_init', F32, [len(CLIP_X)]))
    feeds['c_clip_init'] = RNG.uniform(0.5, 2.0, len(CLIP_X)).astype(np.float32)
    terms.append('s_clip_init')
    nodes.append(helper.make_node('Sum', terms, ['loss']))
    graph = helper.make_graph(nodes, 'grads', inputs, [helper.make_tensor_value_info('loss', F32, [])], params)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)])
    onnx.checker.check_model(model)
    path = os.path.join(work, 'grads.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds, ['--train', '--optimizer', 'none'])
    ok = True
    for name, (op, attrs, _, kinks) in grad_cases.items():
        x = numpy_helper.to_array(next(p for p in params if p.name == f'w_{name}'))
        c = feeds[f'c_{name}'].astype(np.float64)
        got = np.load(os.path.join(out, f'w_{name}.grad.npy')).astype(np.float64)
        want = c * derivative_fd(op, attrs, name, x)
        near_kink = np.zeros(len(x), bool)
        for k in kinks:
            near_kink |= np.abs(x - np.float32(k)) < 1e-3
        smooth = ~near_kink
        err = np.abs(got - want)[smooth]
        bound = GRAD_RTOL * np.abs(want[smooth]) + GRAD_ATOL
        worst = float(np.max(err / bound))
        good = worst <= 1.0 and np.all(np.isfinite(got))
        # At the kinks themselves: PyTorch's derivative, exactly.
        kink_bad = []
        for k in kinks:
            at = np.flatnonzero(x == np.float32(k))
            expected = KINK_GRADIENT.get(name, {}).get(k, 0.0)
            for i in at:
                if abs(got[i] - c[i] * expected) > 1e-6 * abs(c[i] * expected) + 1e-12:
                    kink_bad.append((float(x[i]), got[i] / c[i], expected))
        good = good and not kink_bad
        print(f'{name} gradient: {int(smooth.sum())} smooth points, worst {worst:.3f} of the '
              f'tolerance; {len(x) - int(smooth.sum())} at kinks'
              f'{"" if not kink_bad else f" differ: {kink_bad[:3]}"} {"ok" if good else "FAIL"}')
        ok &= bool(good)
    gx = np.load(os.path.join(out, 'w_prelu.grad.npy'))
    gs = np.load(os.path.join(out, 'slope.grad.npy'))
    want_x = np.where(PRELU_X > 0, 1.0, PRELU_SLOPE[None, :])
    want_s = np.minimum(PRELU_X, 0).astype(np.float64).sum(axis=0)
    good = np.allclose(gx, want_x, rtol=1e-6, atol=0) and np.allclose(gs, want_s, rtol=1e-5, atol=1e-6)
    print(f'prelu gradient: x (slope at 0, as torch) and slope {"ok" if good else f"FAIL {gx} {gs} {want_s}"}')
    ok &= bool(good)
    c = feeds['c_clip_init'].astype(np.float64)
    got = [np.load(os.path.join(out, f'{n}.grad.npy')).astype(np.float64)
           for n in ('w_clip_init', 'clip_init_lo', 'clip_init_hi')]
    inside = (CLIP_X > CLIP_MIN) & (CLIP_X < CLIP_MAX)
    want = [np.where(inside, c, 0.0), np.sum(c[CLIP_X <= CLIP_MIN]), np.sum(c[CLIP_X >= CLIP_MAX])]
    good = (np.allclose(got[0], want[0], rtol=1e-6, atol=0)
            and all(abs(float(g) - w) <= 1e-5 * abs(w) for g, w in zip(got[1:], want[1:])))
    print(f'clip with trainable bounds gradient: x (0 at the bounds) and both bounds '
          f'{"ok" if good else f"FAIL {got} {want}"}')
    return ok and bool(good) and infinite_gradients(work)


def infinite_gradients(work):
    nodes, params, inputs, terms, feeds = [], [], [], [], {}
    for name in INFINITE_GRADIENT:
        op, attrs, _, _ = FLOAT_CASES[name]
        params.append(numpy_helper.from_array(np.array([INF, -INF], np.float32), f'w_{name}'))
        nodes += nodes_for(name, op, attrs, f'w_{name}', f'y_{name}')
        nodes.append(helper.make_node('Mul', [f'y_{name}', f'c_{name}'], [f'p_{name}']))
        nodes.append(helper.make_node('ReduceSum', [f'p_{name}'], [f's_{name}'], keepdims=0))
        inputs.append(helper.make_tensor_value_info(f'c_{name}', F32, [2]))
        feeds[f'c_{name}'] = np.array([0.75, 1.5], np.float32)
        terms.append(f's_{name}')
    nodes.append(helper.make_node('Sum', terms, ['loss']))
    model = helper.make_model(helper.make_graph(nodes, 'infinite', inputs,
                                                [helper.make_tensor_value_info('loss', F32, [])], params),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'infinite.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds, ['--train', '--optimizer', 'none'])
    ok = True
    for name, (at_inf, at_minus_inf) in INFINITE_GRADIENT.items():
        got = np.load(os.path.join(out, f'w_{name}.grad.npy'))
        want = feeds[f'c_{name}'] * np.array([at_inf, at_minus_inf], np.float32)
        good = bool(np.allclose(got, want, rtol=1e-6, atol=0))
        print(f'{name} gradient at +inf and -inf: {got.tolist()} '
              f'{"ok" if good else f"FAIL, expected {want.tolist()}"}')
        ok &= good
    return ok


def errors(work):
    """Bad nodes: trainc exits 1 with an error naming the node and the
    problem."""
    def graph(node, inputs, name):
        return helper.make_graph([node], name,
                                 [helper.make_tensor_value_info(n, t, sh) for n, t, sh in inputs],
                                 [helper.make_tensor_value_info('y', TensorProto.UNDEFINED, None)])
    cases = [
        ('bad_prelu', graph(helper.make_node('PRelu', ['x', 's'], ['y']),
                            [('x', F32, [4, 3]), ('s', F32, [4])], 'bad_prelu'),
         "slope of type 'tensor<4xf32>' does not broadcast to X's shape"),
        ('prelu_rank', graph(helper.make_node('PRelu', ['x', 's'], ['y']),
                             [('x', F32, [4, 3]), ('s', F32, [4, 3, 2])], 'prelu_rank'),
         "does not broadcast to X's shape"),
        ('clip_vector', graph(helper.make_node('Clip', ['x', 'lo'], ['y']),
                              [('x', F32, [4]), ('lo', F32, [2])], 'clip_vector'),
         "min must be a scalar, got 'tensor<2xf32>'"),
        ('clip_type', graph(helper.make_node('Clip', ['x', '', 'hi'], ['y']),
                            [('x', F32, [4]), ('hi', TensorProto.DOUBLE, [])], 'clip_type'),
         "max has element type 'f64' but the input has 'f32'"),
        ('celu_zero', graph(helper.make_node('Celu', ['x'], ['y'], alpha=0.0),
                            [('x', F32, [4])], 'celu_zero'),
         'alpha is 0'),
        ('mod_types', graph(helper.make_node('Mod', ['a', 'b'], ['y']),
                            [('a', TensorProto.INT32, [4]), ('b', TensorProto.INT64, [4])],
                            'mod_types'),
         'inputs have different element types'),
        ('sign_bool', graph(helper.make_node('Sign', ['x'], ['y']),
                            [('x', TensorProto.BOOL, [4])], 'sign_bool'),
         'Sign of a boolean tensor'),
        ('elu_int', graph(helper.make_node('Elu', ['x'], ['y']),
                          [('x', TensorProto.INT32, [4])], 'elu_int'),
         'the input must be a float tensor'),
        ('clip_bool', graph(helper.make_node('Clip', ['x'], ['y']),
                            [('x', TensorProto.BOOL, [4])], 'clip_bool'),
         'Clip of a boolean tensor is not supported'),
        ('mod_bool', graph(helper.make_node('Mod', ['a', 'b'], ['y']),
                           [('a', TensorProto.BOOL, [4]), ('b', TensorProto.BOOL, [4])],
                           'mod_bool'),
         'Mod of boolean tensors is not defined'),
    ]
    return expect_rejections(work, cases, OPSET)


def main():
    work = sys.argv[1]
    ok = forward(work)
    ok &= gradients(work)
    ok &= errors(work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
