"""ONNX Resize against onnxruntime.

    resize.test.py DIR   writes, compiles, runs and checks under DIR;
                         exits 1 on any failure.

Forward: nearest must equal onnxruntime exactly (a copy); linear within
4 eps * max|x| (two products and a sum per resized axis, in the input's
type: eps of float32, or of float16 for the f16 case). Cubic and
antialiased filters (n taps a position, weights summing to 1 with
magnitudes summing to at most S, computed by weight_magnitude from the
filter: 1 for linear, 1.375 for cubic with a = -0.75) within twice
(trainc's and onnxruntime's rounding) the bound of n products and n - 1
sums per axis: axis k adds (n_k - 1/2) eps S_k times its input's
magnitude, and scales the error before it by S_k. A filter of more than
16 taps (antialias, 40 rows to 3) is a product with its matrix, whose sum
the same bound covers. 16-bit inputs are filtered in f32 and rounded
once: within half an ulp of the exact result (onnxruntime's in f32 on the
same values, whose own error the f32 bound adds).

Gradients: Resize is linear in X, so dL/dX[i] for L = sum(Y * c) is
sum(c * Resize(e_i)); onnxruntime computes Resize(e_i) for every one-hot
e_i in one batch, which gives the reference without reimplementing the
operator. trainc's gradient (X a trainable initializer) must match within
4 eps * sum |c| (float32) for linear, and the forward's bound with
sum |c| for max|x| for the filters.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from op_harness import WeightedLoss, compile_and_run, expect_rejections, run_checks

RNG = np.random.default_rng(71)
# The gradient graph's opset: every case but half_pixel_symmetric's (19).
GRAD_OPSET = 18

# name: (X shape, attributes, scales or None, sizes or None, opset)
CASES = {
    'nearest_x2_floor': ((1, 2, 3, 4), dict(mode='nearest', coordinate_transformation_mode='asymmetric',
                                            nearest_mode='floor'), [1, 1, 2, 2], None, 13),
    'nearest_1p5_ceil': ((1, 2, 4, 5), dict(mode='nearest', nearest_mode='round_prefer_ceil'),
                         [1, 1, 1.5, 1.5], None, 13),
    'nearest_sizes_ceil_align': ((2, 1, 5, 4), dict(mode='nearest', nearest_mode='ceil',
                                                    coordinate_transformation_mode='align_corners'),
                                 None, [2, 1, 7, 3], 13),
    'linear_half_pixel_x2': ((1, 2, 3, 4), dict(mode='linear'), [1, 1, 2, 2], None, 13),
    'linear_pytorch_sizes': ((1, 3, 5, 4), dict(mode='linear',
                                                coordinate_transformation_mode='pytorch_half_pixel'),
                             None, [1, 3, 7, 1], 13),
    'linear_align_corners_1d': ((2, 3, 6), dict(mode='linear',
                                                coordinate_transformation_mode='align_corners'),
                                [1, 1, 2.5], None, 13),
    'linear_down_8_to_5': ((1, 1, 8, 6), dict(mode='linear'), None, [1, 1, 5, 4], 13),
    'linear_asymmetric': ((1, 2, 4, 4), dict(mode='linear', coordinate_transformation_mode='asymmetric'),
                          [1, 1, 1.75, 2], None, 13),
    'nearest_axes': ((1, 2, 3, 4), dict(mode='nearest', axes=[2, 3]), [3, 2], None, 18),
    'linear_symmetric': ((1, 1, 5, 3), dict(mode='linear', axes=[2, 3],
                                            coordinate_transformation_mode='half_pixel_symmetric'),
                         [1.7, 2.5], None, 19),
    # Cubic (PyTorch's bicubic is pytorch_half_pixel or align_corners,
    # a = -0.75) and antialiased filters (torchvision's resizes).
    'cubic_half_pixel_x2': ((1, 2, 4, 5), dict(mode='cubic'), [1, 1, 2, 2], None, 13),
    'cubic_pytorch_sizes': ((2, 1, 5, 4), dict(mode='cubic', coordinate_transformation_mode='pytorch_half_pixel'),
                            None, [2, 1, 9, 7], 13),
    'cubic_align_corners_down': ((1, 1, 8, 6), dict(mode='cubic', coordinate_transformation_mode='align_corners'),
                                 None, [1, 1, 5, 4], 13),
    'cubic_asymmetric_a1': ((1, 2, 4, 4), dict(mode='cubic', coordinate_transformation_mode='asymmetric',
                                               cubic_coeff_a=-1.0), [1, 1, 1.75, 2], None, 13),
    'cubic_exclude_outside': ((1, 1, 5, 6), dict(mode='cubic', cubic_coeff_a=-0.5, exclude_outside=1),
                              [1, 1, 1.5, 0.7], None, 13),
    'cubic_axes': ((1, 2, 3, 4), dict(mode='cubic', axes=[3, 2]), [2.5, 1.5], None, 18),
    'linear_antialias_down': ((1, 1, 9, 8), dict(mode='linear', antialias=1), None, [1, 1, 4, 3], 18),
    'cubic_antialias_down': ((1, 1, 12, 10), dict(mode='cubic', antialias=1), None, [1, 1, 5, 4], 18),
    'cubic_antialias_mixed': ((1, 2, 6, 4), dict(mode='cubic', antialias=1, exclude_outside=1),
                              [1, 1, 0.5, 1.5], None, 18),
    'linear_antialias_up': ((1, 1, 3, 4), dict(mode='linear', antialias=1), [1, 1, 2, 1.5], None, 18),
    'cubic_antialias_matrix': ((1, 2, 40, 5), dict(mode='cubic', antialias=1), None, [1, 2, 3, 5], 18),
}


def kernel(cubic, a, x):
    """The linear (triangle) or cubic (Keys, coefficient a) filter."""
    x = abs(x)
    if not cubic:
        return max(0.0, 1 - x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2 else 0.0


def weight_magnitude(cubic, a, widen, exclude):
    """S: the largest sum of |weights| of a position's taps, over source
    coordinates a 1/400 apart (1% added for the gaps): widened filters
    are normalized to sum 1, and with exclude_outside so are the taps left
    when those past an edge (up to half of them, on one side) are dropped."""
    n = -2 * int(np.floor(-(2 if cubic else 1) / widen))
    worst = 0.0
    for r in np.linspace(0.0025, 1.0, 400):
        w = [kernel(cubic, a, widen * (i - r)) for i in range(1 - n // 2, n // 2 + 1)]
        kept = [w] + ([w[j:] for j in range(1, n // 2 + 1)] + [w[:-j] for j in range(1, n // 2 + 1)]
                      if exclude else [])
        for taps in kept:
            total = sum(taps) if (widen < 1 or exclude) else 1.0
            if total > 0:
                worst = max(worst, sum(abs(t) for t in taps) / total)
    return worst * 1.01


def filter_bound(eps, magnitude, shape, attrs, scales, sizes):
    """The module docstring's bound for a filter (not nearest) resize."""
    cubic = attrs['mode'] == 'cubic'
    a = attrs.get('cubic_coeff_a', -0.75)
    axes = attrs.get('axes', list(range(len(shape))))
    factors = scales if scales is not None else [sizes[k] / shape[d] for k, d in enumerate(axes)]
    error, size = 0.0, magnitude
    for k, d in enumerate(axes):
        scale = factors[k]
        if scale == 1:
            continue
        widen = scale if attrs.get('antialias', 0) and scale < 1 else 1.0
        n = -2 * int(np.floor(-(2 if cubic else 1) / widen))
        s = weight_magnitude(cubic, a, widen, bool(attrs.get('exclude_outside')))
        error = error * s + (n - 0.5) * eps * s * size
        size *= s
    return 2 * error


def node_io(name, attrs, scales, sizes):
    """The Resize node and the Constant node of its scales or sizes (as
    PyTorch exports them: a float initializer would be a trainable
    parameter to trainc)."""
    ins = [f'x_{name}', '']
    if scales is not None:
        value = numpy_helper.from_array(np.array(scales, np.float32), f'scales_{name}')
        ins.append(f'scales_{name}')
    else:
        value = numpy_helper.from_array(np.array(sizes, np.int64), f'sizes_{name}')
        ins += ['', f'sizes_{name}']
    const = helper.make_node('Constant', [], [value.name], value=value)
    return [const, helper.make_node('Resize', ins, [f'y_{name}'], **attrs)]


def model(name, shape, attrs, scales, sizes, opset, elem=TensorProto.FLOAT):
    return helper.make_model(helper.make_graph(
        node_io(name, attrs, scales, sizes), name,
        [helper.make_tensor_value_info(f'x_{name}', elem, list(shape))],
        [helper.make_tensor_value_info(f'y_{name}', elem, None)]),
        opset_imports=[helper.make_opsetid('', opset)])


def ort_run(path, feeds):
    session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    return session.run(None, feeds)[0]


def forward(work):
    ok = True
    runs = [(name, *case, np.float32, TensorProto.FLOAT) for name, case in CASES.items()]
    runs.append(('linear_f16', (1, 2, 3, 4), dict(mode='linear'), [1, 1, 2, 2], None, 13, np.float16,
                 TensorProto.FLOAT16))
    runs.append(('cubic_f16', (1, 2, 5, 6), dict(mode='cubic'), [1, 1, 2, 1.5], None, 13, np.float16,
                 TensorProto.FLOAT16))
    runs.append(('cubic_antialias_f16', (1, 2, 24, 6), dict(mode='cubic', antialias=1), None,
                 [1, 2, 5, 6], 18, np.float16, TensorProto.FLOAT16))
    runs.append(('nearest_int32', (1, 2, 3, 4), dict(mode='nearest'), [1, 1, 2, 1.5], None, 13,
                 np.int32, TensorProto.INT32))
    for name, shape, attrs, scales, sizes, opset, dt, elem in runs:
        x = (RNG.standard_normal(shape) * 10).astype(dt)
        path = os.path.join(work, f'{name}.onnx')
        onnx.save(model(name, shape, attrs, scales, sizes, opset, elem), path)
        out = compile_and_run(work, path, {f'x_{name}': x})
        got = np.load(os.path.join(out, f'y_{name}.npy'))
        if dt == np.float16:
            # The exact result, as onnxruntime's f32 filter of the same
            # values approximates it.
            ref = os.path.join(work, f'{name}_f32.onnx')
            onnx.save(model(name, shape, attrs, scales, sizes, opset), ref)
            want = ort_run(ref, {f'x_{name}': x.astype(np.float32)})
            f32 = bound_of(float(np.finfo(np.float32).eps),
                           float(np.max(np.abs(x.astype(np.float64)))), shape, attrs, scales,
                           sizes)
            half_ulp = np.abs(want.astype(np.float64)) * 2.0 ** -11 + f32
            err = np.abs(got.astype(np.float64) - want.astype(np.float64))
            line_ok = got.shape == want.shape and got.dtype == dt and bool(np.all(err <= half_ulp))
            print(f'{name}: Y {got.shape} {got.dtype}, worst {float(np.max(err / half_ulp)):.3f} '
                  f'of half an ulp of the f32 result {"ok" if line_ok else "FAIL"}')
            ok &= line_ok
            continue
        want = ort_run(path, {f'x_{name}': x})
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f'{name}: Y {got.shape} {got.dtype}, onnxruntime {want.shape} {want.dtype} FAIL')
            ok = False
            continue
        if attrs['mode'] == 'nearest':
            line_ok = np.array_equal(got, want)
            print(f'{name}: Y {got.shape} {"equal ok" if line_ok else "DIFFERENT FAIL"}')
        else:
            eps = float(np.finfo(dt).eps)
            err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
            bound = bound_of(eps, float(np.max(np.abs(x.astype(np.float64)))),
                             shape, attrs, scales, sizes)
            line_ok = err <= bound
            print(f'{name}: Y {got.shape}, worst {err / bound:.3f} of the bound '
                  f'{"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    return ok


def bound_of(eps, magnitude, shape, attrs, scales, sizes):
    """Linear's 4 eps * magnitude, else the filter's bound."""
    if attrs['mode'] == 'linear' and not attrs.get('antialias') and not attrs.get('exclude_outside'):
        return 4 * eps * magnitude
    return filter_bound(eps, magnitude, shape, attrs, scales, sizes)


def gradients(work):
    loss = WeightedLoss()
    nodes, params, data = [], [], {}
    for name, (shape, attrs, scales, sizes, opset) in CASES.items():
        if opset > GRAD_OPSET:
            continue
        x = RNG.standard_normal(shape).astype(np.float32)
        data[name] = x
        nodes += node_io(name, attrs, scales, sizes)
        params.append(numpy_helper.from_array(x, f'x_{name}'))
        y = ort_run_model(work, name, shape, attrs, scales, sizes, x)
        loss.add(f'y_{name}', RNG.uniform(0.5, 1.0, y.shape).astype(np.float32))
    out = loss.gradients(work, nodes, params, GRAD_OPSET)
    eps = float(np.finfo(np.float32).eps)
    ok = True
    for name, x in data.items():
        shape, attrs, scales, sizes, _ = CASES[name]
        c = loss.feeds[f'c_y_{name}'].astype(np.float64)
        want = grad_by_samples(work, name, x, attrs, scales, sizes, c)
        got = np.load(os.path.join(out, f'x_{name}.grad.npy')).astype(np.float64)
        bound = bound_of(eps, float(np.sum(np.abs(c))), shape, attrs, scales, sizes)
        err = float(np.max(np.abs(got - want)))
        line_ok = got.shape == want.shape and err <= bound
        print(f'{name}: X.grad worst {err / bound:.3f} of the bound {"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    return ok


def grad_by_samples(work, name, x, attrs, scales, sizes, c):
    """dL/dX: for each sample b, onnxruntime resizes every one-hot input
    e_i (as one batch) and dL/dX[b, i] = sum(c[b] * Resize(e_i))."""
    want = np.zeros(x.shape)
    per = int(np.prod(x.shape[1:]))
    for b in range(x.shape[0]):
        basis = np.eye(per, dtype=np.float32).reshape((per,) + x.shape[1:])
        batch_sizes = None if sizes is None else [per] + list(sizes[1:])
        ys = ort_run_model(work, f'{name}_basis{b}', basis.shape, attrs, scales, batch_sizes, basis)
        want[b] = np.array([np.sum(c[b] * ys[i]) for i in range(per)]).reshape(x.shape[1:])
    return want


def ort_run_model(work, name, shape, attrs, scales, sizes, x):
    path = os.path.join(work, f'ref_{name}.onnx')
    onnx.save(model(name, shape, attrs, scales, sizes, GRAD_OPSET), path)
    return ort_run(path, {f'x_{name}': x}).astype(np.float64)


def errors(work):
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

    def graph(attrs, scales=(1, 1, 2, 2)):
        s = numpy_helper.from_array(np.array(scales, np.float32), 's')
        return helper.make_graph([helper.make_node('Constant', [], ['s'], value=s),
                                  helper.make_node('Resize', ['x', '', 's'], ['y'], **attrs)], 'g',
                                 [f32('x', [1, 1, 4, 4])], [f32('y', None)])
    cases = [
        ('area', graph(dict(mode='area')), "mode 'area' is not known (nearest, linear or cubic)"),
        ('crop', graph(dict(coordinate_transformation_mode='tf_crop_and_resize')),
         "coordinate_transformation_mode 'tf_crop_and_resize' is not supported"),
        ('zero_scale', graph({}, (1, 1, 0, 2)), 'scales must be positive'),
        ('scale_count', graph({}, (2, 2)), 'has 2 scales or sizes for 4 axes'),
        ('duplicate_axes', graph(dict(axes=[2, -2]), (2, 2)), 'names axis 2 twice in axes'),
        ('nearest_mode', graph(dict(nearest_mode='nearest')), "nearest_mode 'nearest' is not known"),
        ('aspect_ratio', graph(dict(keep_aspect_ratio_policy='not_larger'), (2, 2)),
         'keep_aspect_ratio_policy other than stretch'),
        ('no_scales', helper.make_graph([helper.make_node('Resize', ['x'], ['y'])], 'g',
                                        [f32('x', [1, 1, 4, 4])], [f32('y', None)]),
         'needs constant scales or sizes'),
        ('linear_int', helper.make_graph(
            [helper.make_node('Constant', [], ['s'], value=numpy_helper.from_array(
                np.array([1, 1, 2, 2], np.float32), 's')),
             helper.make_node('Resize', ['x', '', 's'], ['y'], mode='linear')], 'g',
            [helper.make_tensor_value_info('x', TensorProto.INT32, [1, 1, 4, 4])],
            [helper.make_tensor_value_info('y', TensorProto.INT32, None)]), 'X must be a float tensor'),
    ]
    return expect_rejections(work, cases, 18)


def main():
    run_checks(forward, gradients, errors)


if __name__ == '__main__':
    main()
