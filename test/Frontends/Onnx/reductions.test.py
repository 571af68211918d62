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
same reduction in onnx.reference, |got - want| <= GRAD_TOL * max|want|.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

RTOL = 2e-6
GRAD_TOL = 1e-5
OPSET = 18
F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
RNG = np.random.default_rng(9)
OPS = ('ReduceMin', 'ReduceL1', 'ReduceL2', 'ReduceSumSquare', 'ReduceLogSum',
       'ReduceLogSumExp')
AXES = {'a1': [1], 'neg': [-1], 'a02': [0, 2], 'all': None, 'noop': []}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr}")


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
    run(['trainc', path, '-o', path + '.tcx'])
    args = []
    for k, v in feeds.items():
        np.save(os.path.join(work, k + '.npy'), v)
        args += ['--input', f'{k}={os.path.join(work, k + ".npy")}']
    out = os.path.join(work, 'out')
    run(['trainc-run', path + '.tcx', *args, '--output-dir', out])
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


def gradients(work):
    x = float_input()
    x[3] = RNG.normal(0, 2, (5, 6)).astype(np.float32)  # signs for L1 and LogSumExp
    nodes, params, inputs, terms, feeds = [], [], [], [], {}
    cases = [(op, [1]) for op in OPS] + [('ReduceL2', [0, 2]), ('ReduceLogSumExp', [2])]
    for i, (op, axes) in enumerate(cases):
        w = np.abs(x) + 0.1 if op == 'ReduceLogSum' else x.copy()
        if op == 'ReduceMin':
            w = x + RNG.uniform(0, 1e-2, x.shape).astype(np.float32)  # no ties
            w[0, 1, :] = 0.0
        params.append(numpy_helper.from_array(w.astype(np.float32), f'w{i}'))
        params[-1].name = f'w{i}'
        nodes.append(helper.make_node('Constant', [], [f'ax{i}'],
                                      value=numpy_helper.from_array(np.array(axes, np.int64))))
        nodes.append(helper.make_node(op, [f'w{i}', f'ax{i}'], [f'r{i}'], keepdims=0))
        shape = [d for k, d in enumerate(x.shape) if k not in axes]
        c = RNG.uniform(0.5, 2.0, shape).astype(np.float32)
        inputs.append(helper.make_tensor_value_info(f'c{i}', F32, shape))
        feeds[f'c{i}'] = c
        nodes.append(helper.make_node('Mul', [f'r{i}', f'c{i}'], [f'p{i}']))
        nodes.append(helper.make_node('ReduceSum', [f'p{i}'], [f's{i}'], keepdims=0))
        terms.append(f's{i}')
    nodes.append(helper.make_node('Sum', terms, ['loss']))
    model = helper.make_model(helper.make_graph(nodes, 'grads', inputs,
                                                [helper.make_tensor_value_info('loss', F32, [])], params),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'grads.onnx')
    onnx.save(model, path)
    run(['trainc', path, '--train', '--optimizer', 'none', '-o', path + '.tcx'])
    args = []
    for k, v in feeds.items():
        np.save(os.path.join(work, k + '.npy'), v)
        args += ['--input', f'{k}={os.path.join(work, k + ".npy")}']
    out = os.path.join(work, 'gout')
    run(['trainc-run', path + '.tcx', *args, '--output-dir', out])
    ok = True
    for i, (op, axes) in enumerate(cases):
        w = numpy_helper.to_array(params[i]).astype(np.float64)
        c = feeds[f'c{i}'].astype(np.float64)
        g = helper.make_graph([helper.make_node(op, ['w', 'ax'], ['r'], keepdims=0)], 'fd',
                              [helper.make_tensor_value_info('w', TensorProto.DOUBLE, list(w.shape))],
                              [helper.make_tensor_value_info('r', TensorProto.DOUBLE, None)],
                              [numpy_helper.from_array(np.array(axes, np.int64), 'ax')])
        ev = ReferenceEvaluator(helper.make_model(g, opset_imports=[helper.make_opsetid('', OPSET)]))
        loss = lambda v: float(np.sum(c * ev.run(None, {'w': v})[0]))
        want = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            h = 1e-4 * max(1.0, abs(w[idx]))
            plus, minus = w.copy(), w.copy()
            plus[idx] += h
            minus[idx] -= h
            want[idx] = (loss(plus) - loss(minus)) / (2 * h)
        if op == 'ReduceL2':
            # The zero row has no derivative; torch (and trainc) give 0.
            zero_rows = np.all(w == 0, axis=tuple(axes), keepdims=True)
            want = np.where(np.broadcast_to(zero_rows, w.shape), 0.0, want)
        got = np.load(os.path.join(out, f'w{i}.grad.npy')).astype(np.float64)
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        good = err <= GRAD_TOL and np.all(np.isfinite(got))
        print(f'{op} over {axes} gradient: {w.size} values, worst {err:.2e} of max|grad| '
              f'(tolerance {GRAD_TOL:g}) {"ok" if good else "FAIL"}')
        ok &= bool(good)
    return ok


def errors(work):
    """Bad nodes: trainc exits 1 with an error naming the file, the node and
    the problem."""
    cases = [
        ('empty_dim', helper.make_node('ReduceMin', ['x'], ['y']), F32, [3, 0],
         "reduces dimension 1 of 'tensor<3x0xf32>', which has no elements"),
        ('argmax_bool', helper.make_node('ArgMax', ['x'], ['y']), TensorProto.BOOL, [4],
         'ArgMax/ArgMin of a boolean tensor is not supported'),
        ('l2_int', helper.make_node('ReduceL2', ['x'], ['y']), I32, [4],
         "reducing 'tensor<4xi32>' is not supported (floats only)"),
        ('argmax_axis', helper.make_node('ArgMax', ['x'], ['y'], axis=2), F32, [4, 3],
         'axis 2 is out of range for rank 2'),
    ]
    ok = True
    for name, node, elem, shape, message in cases:
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info('x', elem, shape)],
                                  [helper.make_tensor_value_info('y', TensorProto.UNDEFINED, None)])
        path = os.path.join(work, name + '.onnx')
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', OPSET)]), path)
        r = subprocess.run(['trainc', path, '-o', path + '.tcx'], capture_output=True, text=True)
        good = r.returncode == 1 and message in r.stderr and name + '.onnx' in r.stderr
        print(f'{name}: exit {r.returncode}, '
              f'{"names the problem" if good else repr(r.stderr.strip())} {"ok" if good else "FAIL"}')
        ok &= good
    return ok


def main():
    work = sys.argv[1]
    ok = forward(work)
    ok &= gradients(work)
    ok &= errors(work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
