"""ReduceMin, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
ReduceLogSumExp, ArgMax and ArgMin (ReduceOps.cpp) against onnxruntime, and
the float reductions' gradients against central differences of ONNX's
reference evaluator in float64.

    reductions.test.py DIR   writes, compiles, runs and checks under DIR;
                             exits 1 on any failure.

Forward: one model (opset 18) with every case: axes as an input (one
axis, a negative one, two, none = all, and empty with
noop_with_empty_axes), keepdims 0 and 1, float32 and int32/int64, rows with
ties, zeros, infinities and NaN. Integer results and ArgMax/ArgMin (int64)
must equal onnxruntime's; float results agree within RTOL relative (float32
sums of up to 120 terms in a different order: a few ulps of the sum's
magnitude) and NaN/inf must match. ArgMax/ArgMin on a row holding NaN
give NaN's index, as numpy (onnxruntime's Eigen reduction is unspecified
there, so those rows are checked against numpy). The edge rows: ReduceL2
of zeros is 0 and its gradient 0 (torch's norm backward); ReduceLogSumExp
of a row of -inf is -inf and of a row with +inf is +inf.

Gradients (float32): loss = sum(c * reduction(w)) for a trainable w:
w.grad against central differences (step 1e-4 relative, float64) of the
same reduction in onnx.reference, element by element |got - want| <=
GRAD_TOL * |want| + GRAD_ATOL (float32 rounding of values near 1 and of
the small softmax weights of LogSumExp). ReduceMin with ties (no
derivative there) splits c evenly among the tied minima, as reduce_max's
gradient does and JAX's.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from op_harness import WeightedLoss, compile_and_run, expect_rejections

RTOL = 2e-6
GRAD_TOL = 1e-5
GRAD_ATOL = 1e-7
OPSET = 18
F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
RNG = np.random.default_rng(9)
OPS = ('ReduceMin', 'ReduceL1', 'ReduceL2', 'ReduceSumSquare', 'ReduceLogSum',
       'ReduceLogSumExp')
AXES = {'a1': [1], 'neg': [-1], 'a02': [0, 2], 'all': None, 'noop': []}


def float_input():
    x = RNG.uniform(0.1, 3.0, (4, 5, 6)).astype(np.float32)
    x[0, 1, :] = 0.0          # a zero row (L2 = 0)
    x[1, :, 2] = 1.5          # ties along axis 1
    x[2, 3, 3] = x[2, 3, 4]   # ties along the last axis
    return x


def build_forward(work):
    x = float_input()
    signed = RNG.normal(0, 2, (4, 5, 6)).astype(np.float32)
    xi = RNG.integers(-50, 50, (4, 5, 6)).astype(np.int32)
    xi[0, 0, :2] = np.iinfo(np.int32).min
    xi[3, 2, :] = np.iinfo(np.int32).max
    edges = np.array([[-np.inf] * 4, [0.0, np.inf, 1.0, 2.0], [1.0, np.nan, 3.0, np.nan],
                      [2.0, 7.0, 7.0, -1.0]], np.float32)
    nodes, outputs, inits = [], [], []
    for key, axes in AXES.items():
        if axes is not None:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), f'axes_{key}'))
    for op in OPS:
        source = 'x' if op in ('ReduceLogSum', 'ReduceL2') else 'xs'
        for key, axes in AXES.items():
            for keep in (0, 1):
                ins = [source] + ([] if axes is None else [f'axes_{key}'])
                attrs = {'keepdims': keep}
                if key == 'noop':
                    attrs['noop_with_empty_axes'] = 1
                name = f'{op}_{key}_k{keep}'
                nodes.append(helper.make_node(op, ins, [name], **attrs))
                outputs.append(helper.make_tensor_value_info(name, F32, None))
    # The minimum and maximum int32 for ReduceMin; small values for the
    # sums, which would overflow on those.
    for op in ('ReduceMin', 'ReduceL1', 'ReduceSumSquare'):
        name = f'{op}_int'
        source = 'xi' if op == 'ReduceMin' else 'xk'
        nodes.append(helper.make_node(op, [source, 'axes_neg'], [name], keepdims=0))
        outputs.append(helper.make_tensor_value_info(name, I32, None))
    for op in ('ReduceL2', 'ReduceLogSumExp', 'ReduceMin'):
        name = f'{op}_edges'
        nodes.append(helper.make_node(op, ['edges', 'axes_neg'], [name], keepdims=0))
        outputs.append(helper.make_tensor_value_info(name, F32, None))
    for op in ('ArgMax', 'ArgMin'):
        for axis in (0, 1, -1):
            for keep in (0, 1):
                for last in (0, 1):
                    for src in ('x', 'xi'):
                        name = f'{op}_{src}_a{axis}_k{keep}_l{last}'.replace('-', 'm')
                        nodes.append(helper.make_node(op, [src], [name], axis=axis, keepdims=keep,
                                                      select_last_index=last))
                        outputs.append(helper.make_tensor_value_info(name, I64, None))
        for last in (0, 1):
            name = f'{op}_edges_l{last}'
            nodes.append(helper.make_node(op, ['edges'], [name], axis=1, keepdims=0,
                                          select_last_index=last))
            outputs.append(helper.make_tensor_value_info(name, I64, None))
    inputs = [helper.make_tensor_value_info('x', F32, [4, 5, 6]),
              helper.make_tensor_value_info('xs', F32, [4, 5, 6]),
              helper.make_tensor_value_info('xi', I32, [4, 5, 6]),
              helper.make_tensor_value_info('xk', I32, [4, 5, 6]),
              helper.make_tensor_value_info('edges', F32, [4, 4])]
    model = helper.make_model(helper.make_graph(nodes, 'reductions', inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'forward.onnx')
    onnx.save(model, path)
    xk = RNG.integers(-50, 50, (4, 5, 6)).astype(np.int32)
    feeds = {'x': x, 'xs': signed, 'xi': xi, 'xk': xk, 'edges': edges}
    return path, feeds, [o.name for o in outputs]


def forward(work):
    path, feeds, names = build_forward(work)
    out = compile_and_run(work, path, feeds)
    sess = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    wants = dict(zip(names, sess.run(names, feeds)))
    # numpy's argmax/argmin for the rows with NaN (NaN is the extreme).
    edges = feeds['edges']
    for op, f in (('ArgMax', np.argmax), ('ArgMin', np.argmin)):
        wants[f'{op}_edges_l0'] = f(edges, axis=1).astype(np.int64)
        rev = f(edges[:, ::-1], axis=1)
        wants[f'{op}_edges_l1'] = (edges.shape[1] - 1 - rev).astype(np.int64)
    ok, worst = True, 0.0
    for name in names:
        got = np.load(os.path.join(out, name + '.npy'))
        want = wants[name]
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f'{name}: {got.dtype}{got.shape}, expected {want.dtype}{want.shape} FAIL')
            ok = False
            continue
        if want.dtype.kind in 'iu':
            if not np.array_equal(got, want):
                print(f'{name}: {got.ravel()[:8]} vs {want.ravel()[:8]} FAIL')
                ok = False
            continue
        special = ~np.isfinite(want)
        same_special = np.array_equal(got[special], want[special], equal_nan=True)
        finite = ~special
        scale = np.maximum(np.abs(want[finite]), np.finfo(np.float32).tiny)
        err = float(np.max(np.abs(got[finite] - want[finite]) / scale)) if finite.any() else 0.0
        worst = max(worst, err)
        if not same_special or err > RTOL:
            print(f'{name}: relative error {err:.2e}, specials {"match" if same_special else "differ"} FAIL')
            ok = False
    print(f'forward: {len(names)} outputs against onnxruntime (ArgMax/ArgMin rows with NaN '
          f'against numpy), worst float relative error {worst:.2e} (tolerance {RTOL:g}) '
          f'{"ok" if ok else "FAIL"}')
    return ok


def extra_types(work):
    """Narrow and unsigned integers (computed in i32 or i64; against numpy in
    the type's wrapping arithmetic), float16 L2
    (computed in f32: the squares of 10s over 768 elements overflow f16,
    the norm does not), and reductions over an empty dimension (the
    identity: 0, +inf for a minimum, -inf for a log-sum-exp)."""
    cases = []  # (name, op, input name, attrs)
    types = {'i8': (TensorProto.INT8, np.int8), 'u8': (TensorProto.UINT8, np.uint8),
             'i16': (TensorProto.INT16, np.int16), 'u32': (TensorProto.UINT32, np.uint32),
             'u64': (TensorProto.UINT64, np.uint64)}
    feeds, inputs = {}, []
    for key, (proto, dt) in types.items():
        info = np.iinfo(dt)
        v = RNG.integers(int(info.min) // 2, int(info.max) // 2, (3, 7), dtype=dt, endpoint=True)
        v[0, :3] = [info.min, info.max, info.max]
        feeds[key] = v
        inputs.append(helper.make_tensor_value_info(key, proto, [3, 7]))
        ops = ['ReduceSum', 'ReduceL1', 'ReduceSumSquare', 'ReduceProd']
        if key != 'u64':
            ops += ['ReduceMin', 'ReduceMax', 'ArgMax', 'ArgMin']
        # Only the types each op's schema allows (ReduceSum takes no int8).
        type_name = f'tensor({np.dtype(dt).name})'
        ops = [op for op in ops if type_name in
               onnx.defs.get_schema(op, OPSET).type_constraints[0].allowed_type_strs]
        for op in ops:
            attrs = {'axis': 1, 'keepdims': 0} if op.startswith('Arg') else {'keepdims': 0}
            ins = [key] if op.startswith('Arg') else [key, 'axis1']
            cases.append((f'{op}_{key}', op, ins, attrs))
    half = np.full((1, 768), 10.0, np.float16)
    half[0, :5] = [300.0, -300.0, 1e-4, 0.0, 65504.0 / 256]
    feeds['half'] = half
    inputs.append(helper.make_tensor_value_info('half', TensorProto.FLOAT16, [1, 768]))
    cases.append(('ReduceL2_f16', 'ReduceL2', ['half', 'axis1'], {'keepdims': 0}))
    feeds['empty'] = np.zeros((3, 0), np.float32)
    inputs.append(helper.make_tensor_value_info('empty', F32, [3, 0]))
    for op in ('ReduceSum', 'ReduceMin', 'ReduceMax', 'ReduceProd', 'ReduceLogSumExp',
               'ReduceL2', 'ReduceSumSquare'):
        cases.append((f'{op}_empty', op, ['empty', 'axis1'], {'keepdims': 0}))
    nodes = [helper.make_node(op, ins, [name], **attrs) for name, op, ins, attrs in cases]
    proto_of = {k: v[0] for k, v in types.items()}
    proto_of.update(half=TensorProto.FLOAT16, empty=F32)
    outputs = [helper.make_tensor_value_info(
        name, I64 if op.startswith('Arg') else proto_of[ins[0]], None)
        for name, op, ins, _ in cases]
    model = helper.make_model(helper.make_graph(
        nodes, 'extra', inputs, outputs,
        [numpy_helper.from_array(np.array([1], np.int64), 'axis1')]),
        opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'extra.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds)
    names = [c[0] for c in cases]
    # The float cases through onnxruntime, as a model of their own
    # (onnxruntime has no kernels for several of the integer ones).
    float_cases = [c for c in cases if c[2][0] not in types]
    ort_model = helper.make_model(helper.make_graph(
        [helper.make_node(op, ins, [name], **attrs) for name, op, ins, attrs in float_cases],
        'extra_floats', [i for i in inputs if i.name in ('half', 'empty')],
        [o for o in outputs if o.name in {c[0] for c in float_cases}],
        [numpy_helper.from_array(np.array([1], np.int64), 'axis1')]),
        opset_imports=[helper.make_opsetid('', OPSET)])
    sess = ort.InferenceSession(ort_model.SerializeToString(), providers=['CPUExecutionProvider'])
    ort_names = [c[0] for c in float_cases]
    wants = dict(zip(ort_names, sess.run(ort_names, {k: feeds[k] for k in ('half', 'empty')})))
    # Integers against numpy, in the type's own wrapping arithmetic
    # (onnxruntime lacks several of these kernels).
    ref = {'ReduceSum': lambda v: np.sum(v, axis=1, dtype=v.dtype),
           'ReduceL1': lambda v: np.sum(np.abs(v), axis=1, dtype=v.dtype),
           'ReduceSumSquare': lambda v: np.sum(v * v, axis=1, dtype=v.dtype),
           'ReduceProd': lambda v: np.prod(v, axis=1, dtype=v.dtype),
           'ReduceMin': lambda v: np.min(v, axis=1), 'ReduceMax': lambda v: np.max(v, axis=1),
           'ArgMax': lambda v: np.argmax(v, axis=1).astype(np.int64),
           'ArgMin': lambda v: np.argmin(v, axis=1).astype(np.int64)}
    for name, op, ins, _ in cases:
        if ins[0] in types:
            with np.errstate(all='ignore'):
                wants[name] = ref[op](feeds[ins[0]])
    # onnxruntime squares float16 in float16 (inf here): the exact norm,
    # rounded to float16, is the reference.
    wants['ReduceL2_f16'] = np.sqrt(np.sum(half.astype(np.float64) ** 2, axis=1)).astype(np.float16)
    ok = True
    for name in names:
        got = np.load(os.path.join(out, name + '.npy'))
        want = wants[name]
        if got.dtype == np.dtype('<u2') and want.dtype == np.float16:
            got = got.view(np.float16)
        same = got.shape == want.shape and got.dtype == want.dtype and (
            np.array_equal(got, want) if want.dtype.kind in 'iu' else
            np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=0,
                        equal_nan=True))
        if not same:
            print(f'{name}: {got.dtype}{got.shape} {got.ravel()[:4]} vs {want.dtype}{want.shape} '
                  f'{want.ravel()[:4]} FAIL')
        ok &= bool(same)
    print(f'narrow and unsigned integers, float16 L2, empty dimensions: {len(names)} outputs '
          f'against numpy (the integers, exactly) and onnxruntime {"ok" if ok else "FAIL"}')
    return ok


def gradients(work):
    x = float_input()
    x[3] = RNG.normal(0, 2, (5, 6)).astype(np.float32)  # signs for L1 and LogSumExp
    nodes, params, loss = [], [], WeightedLoss()
    cases = [(op, [1]) for op in OPS] + [('ReduceL2', [0, 2]), ('ReduceLogSumExp', [2]),
                                         ('ReduceMin', [2])]
    for i, (op, axes) in enumerate(cases):
        w = np.abs(x) + 0.1 if op == 'ReduceLogSum' else x.copy()
        if op == 'ReduceMin' and axes == [1]:
            w = x + RNG.uniform(0, 1e-2, x.shape).astype(np.float32)  # no ties
            w[0, 1, :] = 0.0
        elif op == 'ReduceMin':
            w = np.round(x * 2) / 2  # ties along the last axis
        params.append(numpy_helper.from_array(w.astype(np.float32), f'w{i}'))
        params[-1].name = f'w{i}'
        nodes.append(helper.make_node('Constant', [], [f'ax{i}'],
                                      value=numpy_helper.from_array(np.array(axes, np.int64))))
        nodes.append(helper.make_node(op, [f'w{i}', f'ax{i}'], [f'r{i}'], keepdims=0))
        shape = [d for k, d in enumerate(x.shape) if k not in axes]
        loss.add(f'r{i}', RNG.uniform(0.5, 2.0, shape).astype(np.float32))
    out = loss.gradients(work, nodes, params, OPSET)
    ok = True
    for i, (op, axes) in enumerate(cases):
        tie_case = op == 'ReduceMin' and axes == [2]
        w = numpy_helper.to_array(params[i]).astype(np.float64)
        c = loss.feeds[f'c_r{i}'].astype(np.float64)
        g = helper.make_graph([helper.make_node(op, ['w', 'ax'], ['r'], keepdims=0)], 'fd',
                              [helper.make_tensor_value_info('w', TensorProto.DOUBLE, list(w.shape))],
                              [helper.make_tensor_value_info('r', TensorProto.DOUBLE, None)],
                              [numpy_helper.from_array(np.array(axes, np.int64), 'ax')])
        ev = ReferenceEvaluator(helper.make_model(g, opset_imports=[helper.make_opsetid('', OPSET)]))
        objective = lambda v: float(np.sum(c * ev.run(None, {'w': v})[0]))
        want = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            h = 1e-4 * max(1.0, abs(w[idx]))
            plus, minus = w.copy(), w.copy()
            plus[idx] += h
            minus[idx] -= h
            want[idx] = (objective(plus) - objective(minus)) / (2 * h)
        if op == 'ReduceMin' and tie_case:
            # Each minimum tied k ways gets c / k.
            mins = np.min(w, axis=tuple(axes), keepdims=True)
            ties = (w == mins)
            want = np.where(ties, np.expand_dims(c, tuple(axes)) / np.sum(ties, axis=tuple(axes), keepdims=True), 0.0)
        if op == 'ReduceL2':
            # The zero row has no derivative; torch (and trainc) give 0.
            zero_rows = np.all(w == 0, axis=tuple(axes), keepdims=True)
            want = np.where(np.broadcast_to(zero_rows, w.shape), 0.0, want)
        got = np.load(os.path.join(out, f'w{i}.grad.npy')).astype(np.float64)
        err = float(np.max(np.abs(got - want) / (GRAD_TOL * np.abs(want) + GRAD_ATOL)))
        good = err <= 1.0 and np.all(np.isfinite(got))
        print(f'{op} over {axes} gradient: {w.size} values, worst {err:.3f} of the tolerance '
              f'{"ok" if good else "FAIL"}')
        ok &= bool(good)
    return ok


def errors(work):
    """Bad nodes: trainc exits 1 with an error naming the file, the node and
    the problem."""
    cases = [
        ('argmax_empty', helper.make_node('ArgMax', ['x'], ['y'], axis=1), F32, [3, 0],
         "reduces dimension 1 of 'tensor<3x0xf32>', which has no elements"),
        ('max_ui64', helper.make_node('ReduceMax', ['x'], ['y']), TensorProto.UINT64, [4],
         "reducing 'ui64' by comparison is not supported"),
        ('argmax_bool', helper.make_node('ArgMax', ['x'], ['y']), TensorProto.BOOL, [4],
         'ArgMax/ArgMin of a boolean tensor is not supported'),
        ('l2_int', helper.make_node('ReduceL2', ['x'], ['y']), I32, [4],
         "reducing 'tensor<4xi32>' is not supported (floats only)"),
        ('argmax_axis', helper.make_node('ArgMax', ['x'], ['y'], axis=2), F32, [4, 3],
         'axis 2 is out of range for rank 2'),
    ]
    return expect_rejections(work, [
        (name, helper.make_graph([node], name, [helper.make_tensor_value_info('x', elem, shape)],
                                 [helper.make_tensor_value_info('y', TensorProto.UNDEFINED, None)]),
         message) for name, node, elem, shape, message in cases], OPSET)


def main():
    work = sys.argv[1]
    ok = forward(work)
    ok &= extra_types(work)
    ok &= gradients(work)
    ok &= errors(work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
