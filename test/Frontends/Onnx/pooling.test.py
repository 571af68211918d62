"""ONNX pooling against onnxruntime and a numpy reference written loop by
loop from the operator definitions (PyTorch's for ceil_mode and ties).

    pooling.test.py DIR   writes, compiles, runs and checks under DIR;
                          exits 1 on any failure.

Forward (float32; one int8 MaxPool; two with an empty batch, which must
give empty results of the right shape; NaN, -inf and -0 windows and a
float16 pool, checked against the reference only): MaxPool must equal the
reference exactly (a maximum rounds nothing; a NaN wins, the last one as
in PyTorch's kernel; a maximum of -0 may come out +0, which == does not
tell apart); AveragePool within 2 eps
* (window sum
of |x|) / divisor (a sum of at most 27 terms in float32 and one division;
the bound holds with room: the worst ratio is printed); onnxruntime must
agree with the reference to the same tolerances, which checks the
reference's reading of the definition.

Gradients: X is a trainable initializer, loss = sum over cases of sum(Y *
c). MaxPool's gradient goes to each window's first maximum in row-major
window order (PyTorch's indices), summed over overlapping windows: exactly
as the reference sums it in float64, within 4 eps relative; one case has
tied maxima on purpose, one NaN windows (the gradient goes to the last NaN). AveragePool spreads c / divisor over each window.

Lowering: a float MaxPool reads its windows with one graph.extract_patches
(no slice per window position, no padded copy).
"""
import itertools
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from op_harness import WeightedLoss, compile_and_run, expect_rejections, run, run_checks

OPSET = 18
RNG = np.random.default_rng(41)

# name: (op, X shape, attributes)
CASES = {
    'max_resnet_stem': ('MaxPool', (2, 3, 9, 10), dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    'max_1d': ('MaxPool', (2, 4, 9), dict(kernel_shape=[2], strides=[2])),
    'max_dilated': ('MaxPool', (1, 2, 9, 9), dict(kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 0, 0, 2])),
    'max_ceil': ('MaxPool', (1, 2, 8, 7), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    'max_same_upper': ('MaxPool', (1, 2, 7, 6), dict(kernel_shape=[2, 3], strides=[2, 2], auto_pad='SAME_UPPER')),
    'max_3d': ('MaxPool', (1, 2, 4, 5, 6), dict(kernel_shape=[2, 2, 3], strides=[1, 2, 2], pads=[0, 1, 1, 1, 0, 1])),
    'max_ties': ('MaxPool', (1, 1, 6, 6), dict(kernel_shape=[3, 3], strides=[1, 1])),
    'avg_exclude_pad': ('AveragePool', (2, 3, 7, 8), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    'avg_include_pad': ('AveragePool', (2, 3, 7, 8), dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                                                          count_include_pad=1)),
    'avg_ceil': ('AveragePool', (1, 2, 8, 7), dict(kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1,
                                                  pads=[1, 0, 0, 0], count_include_pad=1)),
    'avg_1d_same_lower': ('AveragePool', (2, 3, 9), dict(kernel_shape=[4], strides=[2],
                                                         auto_pad='SAME_LOWER')),
    'avg_3d': ('AveragePool', (1, 2, 4, 4, 5), dict(kernel_shape=[2, 3, 3], strides=[2, 1, 2])),
    'max_empty_batch': ('MaxPool', (0, 2, 5, 5), dict(kernel_shape=[2, 2])),
    'avg_empty_batch': ('AveragePool', (0, 2, 5, 5), dict(kernel_shape=[3, 2], pads=[1, 0, 1, 0])),
    'global_max': ('GlobalMaxPool', (2, 3, 5, 4), {}),
    'global_avg': ('GlobalAveragePool', (2, 3, 5, 4), {}),
}


def window_geometry(shape, attrs):
    """(kernel, strides, dilations, pads low, pads high, output sizes, the
    ceil extension) for X's spatial sizes."""
    d = len(shape) - 2
    spatial = shape[2:]
    k = attrs.get('kernel_shape', list(spatial))
    s = attrs.get('strides', [1] * d)
    dil = attrs.get('dilations', [1] * d)
    pads = attrs.get('pads', [0] * (2 * d))
    lo, hi = list(pads[:d]), list(pads[d:])
    auto = attrs.get('auto_pad', 'NOTSET')
    if auto.startswith('SAME'):
        for i in range(d):
            out = -(-spatial[i] // s[i])
            total = max(0, (out - 1) * s[i] + (k[i] - 1) * dil[i] + 1 - spatial[i])
            lo[i] = total // 2 if auto == 'SAME_UPPER' else total - total // 2
            hi[i] = total - lo[i]
    outs = []
    for i in range(d):
        span = (k[i] - 1) * dil[i] + 1
        room = spatial[i] + lo[i] + hi[i] - span
        out = room // s[i] + 1
        if attrs.get('ceil_mode', 0) and room % s[i]:
            out += 1
            if (out - 1) * s[i] >= spatial[i] + lo[i]:
                out -= 1
        outs.append(out)
    return k, s, dil, lo, hi, outs


def reference(op, x, attrs, c=None):
    """(Y, dL/dX for L = sum(Y * c)) in float64, window by window."""
    x64 = x.astype(np.float64)
    n, ch = x.shape[:2]
    if op.startswith('Global'):
        attrs = dict(kernel_shape=list(x.shape[2:]))
        op = 'MaxPool' if op == 'GlobalMaxPool' else 'AveragePool'
    k, s, dil, lo, hi, outs = window_geometry(x.shape, attrs)
    include_pad = attrs.get('count_include_pad', 0)
    y = np.zeros((n, ch, *outs))
    g = np.zeros_like(x64)
    for b, f in itertools.product(range(n), range(ch)):
        for o in itertools.product(*[range(v) for v in outs]):
            members, count = [], 0
            for t in itertools.product(*[range(v) for v in k]):
                p = [o[i] * s[i] + t[i] * dil[i] - lo[i] for i in range(len(k))]
                inside = all(0 <= p[i] < x.shape[2 + i] for i in range(len(k)))
                in_pads = all(-lo[i] <= p[i] < x.shape[2 + i] + hi[i] for i in range(len(k)))
                if inside:
                    members.append(tuple(p))
                count += inside or (include_pad and in_pads)
            cc = 1.0 if c is None else float(c[(b, f, *o)])
            if op == 'MaxPool':
                best = None
                for p in members:  # the first maximum, row-major; the last NaN
                    v = x64[(b, f, *p)]
                    if best is None or v > x64[(b, f, *best)] or np.isnan(v):
                        best = p
                y[(b, f, *o)] = x64[(b, f, *best)]
                g[(b, f, *best)] += cc
            else:
                y[(b, f, *o)] = sum(x64[(b, f, *p)] for p in members) / count
                for p in members:
                    g[(b, f, *p)] += cc / count
    return y, g


def avg_bound(op, x, attrs):
    """2 eps * window sum of |x| / divisor, elementwise: the reference on |x|."""
    y, _ = reference(op, np.abs(x), attrs)
    return 2 * float(np.finfo(np.float32).eps) * y + 1e-30


STEM = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


def make_x(name, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    if name == 'max_ties':
        x[0, 0, :3, :3] = 1.5   # a whole window tied
        x[0, 0, 3:, 3:] = 0.0   # zeros, as after a ReLU
    if name == 'max_nan':  # (1, 2, 7, 7) under STEM
        x[0, 0, 1, 1] = x[0, 0, 2, 2] = np.nan  # two NaNs in window (1, 1)
        x[0, 0, 4, 2] = np.nan
        x[0, 1, 5:, 5:] = -np.inf               # window (3, 3): -inf only
        x[0, 1, 4, 4] = -np.inf
        x[0, 1, :2, :2] = [[-0.0, 0.0], [-1.0, -2.0]]  # window (0, 0): -0 first
    return x


def forward(work):
    nodes, inputs, outputs, feeds, data = [], [], [], {}, {}
    for name, (op, shape, attrs) in CASES.items():
        x = make_x(name, shape)
        data[name] = x
        nodes.append(helper.make_node(op, [f'x_{name}'], [f'y_{name}'], **attrs))
        inputs.append(helper.make_tensor_value_info(f'x_{name}', TensorProto.FLOAT, list(shape)))
        outputs.append(helper.make_tensor_value_info(f'y_{name}', TensorProto.FLOAT, None))
        feeds[f'x_{name}'] = x
    # NaN (the first NaN of a window wins, as in numpy's max), -inf, and a
    # window of -inf only, in f32; and the ResNet stem's pool in f16. Not
    # asked of onnxruntime, whose kernels' NaN handling is their own.
    odd = {'nan': make_x('max_nan', (1, 2, 7, 7)),
           'f16': RNG.standard_normal((1, 2, 7, 7)).astype(np.float16)}
    stem = STEM
    for key, x in odd.items():
        elem = TensorProto.FLOAT if key == 'nan' else TensorProto.FLOAT16
        nodes.append(helper.make_node('MaxPool', [f'x_{key}'], [f'y_{key}'], **stem))
        inputs.append(helper.make_tensor_value_info(f'x_{key}', elem, list(x.shape)))
        outputs.append(helper.make_tensor_value_info(f'y_{key}', elem, None))
        feeds[f'x_{key}'] = x
    xi = RNG.integers(-128, 128, (1, 2, 6, 7)).astype(np.int8)
    nodes.append(helper.make_node('MaxPool', ['x_int8'], ['y_int8'], kernel_shape=[3, 2],
                                  strides=[2, 1], pads=[1, 0, 1, 1]))
    inputs.append(helper.make_tensor_value_info('x_int8', TensorProto.INT8, list(xi.shape)))
    outputs.append(helper.make_tensor_value_info('y_int8', TensorProto.INT8, None))
    feeds['x_int8'] = xi
    model = helper.make_model(helper.make_graph(nodes, 'pools', inputs, outputs),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'forward.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds)
    session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    ort_y = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    ok = True
    for name, (op, shape, attrs) in CASES.items():
        want, _ = reference(op, data[name], attrs)
        got = np.load(os.path.join(out, f'y_{name}.npy')).astype(np.float64)
        theirs = ort_y[f'y_{name}'].astype(np.float64)
        if got.shape != want.shape or theirs.shape != want.shape:
            print(f'{name}: shape {got.shape}, onnxruntime {theirs.shape}, reference {want.shape} FAIL')
            ok = False
            continue
        if 'max' in name:
            line_ok = np.array_equal(got, want) and np.array_equal(theirs, want)
            print(f'{name}: Y {got.shape} {"equal" if line_ok else "DIFFERENT"}'
                  f' (onnxruntime {"equal" if np.array_equal(theirs, want) else "different"})'
                  f' {"ok" if line_ok else "FAIL"}')
        else:
            bound = avg_bound(op, data[name], attrs)
            ratio = float(np.max(np.abs(got - want) / bound, initial=0))
            ort_ratio = float(np.max(np.abs(theirs - want) / bound, initial=0))
            line_ok = ratio <= 1 and ort_ratio <= 1
            print(f'{name}: Y {got.shape}, worst {ratio:.3f} of the bound (onnxruntime '
                  f'{ort_ratio:.3f}) {"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    got = np.load(os.path.join(out, 'y_int8.npy'))
    want, _ = reference('MaxPool', xi.astype(np.float32), dict(kernel_shape=[3, 2], strides=[2, 1],
                                                                pads=[1, 0, 1, 1]))
    same = got.dtype == np.int8 and np.array_equal(got, want) and np.array_equal(ort_y['y_int8'], want)
    print(f'max_int8: Y {got.shape} {got.dtype} {"equal ok" if same else "FAIL"}')
    for key, x in odd.items():
        got = np.load(os.path.join(out, f'y_{key}.npy'))
        want, _ = reference('MaxPool', x, stem)
        # == does not tell -0 from +0: a float max pool's -0 maximum comes
        # out +0 (GraphWindows.cpp's patchWindowMax sums from +0).
        equal = got.dtype == x.dtype and np.array_equal(got.astype(np.float64), want,
                                                         equal_nan=True)
        print(f'max_{key}: Y {got.shape} {got.dtype}, {int(np.isnan(want).sum())} NaN, '
              f'{int(np.isneginf(want).sum())} -inf and '
              f'{int(((want == 0) & np.signbit(want)).sum())} -0 windows, '
              f'{"equal ok" if equal else "FAIL"}')
        same &= equal
    return ok and same


def lowering(work):
    """A float max pool over NCHW reads its windows with one
    graph.extract_patches (no padded copy, no slice per window position),
    so that its gradient is one fold_patches."""
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 3, 9, 10])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, None)
    node = helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])
    model = helper.make_model(helper.make_graph([node], 'stem', [x], [y]),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'stem.onnx')
    onnx.save(model, path)
    ir = run(['trainc', path, '--compile-to=import']).stdout
    counts = {op: ir.count(f'graph.{op} ') for op in ('extract_patches', 'concatenate', 'slice')}
    ok = counts == {'extract_patches': 1, 'concatenate': 0, 'slice': 0}
    print(f'lowering: {counts} {"ok" if ok else "FAIL"}')
    return ok


def gradients(work):
    loss = WeightedLoss()
    nodes, params, data = [], [], {}
    # NaN windows too: the gradient goes to the last NaN (the loss is NaN,
    # its gradient finite).
    cases = dict(CASES, max_nan=('MaxPool', (1, 2, 7, 7), STEM))
    for name, (op, shape, attrs) in cases.items():
        if 0 in shape:
            continue  # nothing to differentiate
        x = make_x(name, shape)
        data[name] = x
        nodes.append(helper.make_node(op, [f'x_{name}'], [f'y_{name}'], **attrs))
        params.append(numpy_helper.from_array(x, f'x_{name}'))
        y, _ = reference(op, x, attrs)
        loss.add(f'y_{name}', RNG.uniform(0.5, 1.0, y.shape).astype(np.float32))
    out = loss.gradients(work, nodes, params, OPSET)
    ok = True
    for name, (op, shape, attrs) in cases.items():
        if name not in data:
            continue
        _, want = reference(op, data[name], attrs, loss.feeds[f'c_y_{name}'])
        got = np.load(os.path.join(out, f'x_{name}.grad.npy')).astype(np.float64)
        err = float(np.max(np.abs(got - want) / (np.abs(want) * 4 * np.finfo(np.float32).eps + 1e-30)))
        line_ok = err <= 1
        print(f'{name}: X.grad worst {err:.3f} of 4 eps relative {"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    return ok


def errors(work):
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

    def graph(op, attrs, x_shape, outs=('y',), elem=TensorProto.FLOAT):
        return helper.make_graph([helper.make_node(op, ['x'], list(outs), **attrs)], 'g',
                                 [helper.make_tensor_value_info('x', elem, list(x_shape))],
                                 [f32(o, None) for o in outs])
    cases = [
        ('indices', graph('MaxPool', dict(kernel_shape=[2, 2]), (1, 1, 4, 4), ('y', 'i')),
         'asks for the Indices output'),
        ('storage_order', graph('MaxPool', dict(kernel_shape=[2, 2], storage_order=1), (1, 1, 4, 4)),
         'storage_order 1'),
        ('no_kernel', graph('MaxPool', {}, (1, 1, 4, 4)), 'needs kernel_shape'),
        ('avg_int', graph('AveragePool', dict(kernel_shape=[2, 2]), (1, 1, 4, 4),
                          elem=TensorProto.INT32), 'expects X of a float type'),
        ('too_small', graph('MaxPool', dict(kernel_shape=[5, 2]), (1, 1, 4, 4)),
         'smaller than the dilated window'),
        ('rank2', graph('GlobalAveragePool', {}, (3, 4)), 'with 1 to 3 spatial dimensions'),
        ('global_max_int8', graph('GlobalMaxPool', {}, (1, 2, 3, 3), elem=TensorProto.INT8),
         'expects X of a float type'),
    ]
    return expect_rejections(work, cases, OPSET)


def main():
    run_checks(forward, lowering, gradients, errors)


if __name__ == '__main__':
    main()
