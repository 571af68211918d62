"""ONNX Conv beyond patches, against onnxruntime and JAX in float64.

    convolutions.test.py DIR   writes, compiles, runs and checks under DIR;
                               exits 1 on any failure.

Forward: one model holding every case (each a Conv node on its own input,
trainable initializers W and B). Each output element must be within
depth * eps * |x| * |w| (summed over its terms) of the float64 result
(JAX's conv_general_dilated, the same cross-correlation), where
depth is the number of products in the element's sum: the classic bound
for a sum of that many rounded products in float32; plus eps * (|products'
sum| + |bias|) for rounding that sum to the type and adding the bias in it
(eps: float32's, or float16's for the f16 case, whose products trainc sums
in float32). onnxruntime's result is printed for scale. The worst
ratio to the bound is printed.

Gradients: loss = sum over cases of sum(Y * c); X, W and B are trainable
initializers, so trainc gives X.grad, W.grad and B.grad, each compared
with jax.grad in float64 within the same kind of bound: count * eps *
(the gradient of the same loss with |c|, |x|, |w|), count the number of
terms of the largest gradient sum.

Errors: bad groups, a kernel_shape that is not W's, an unknown auto_pad,
an input smaller than the kernel, negative pads; each named, exit 1.
"""
import os

import jax
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from op_harness import WeightedLoss, compile_and_run, expect_rejections, run_checks

jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp  # noqa: E402

OPSET = 18
RNG = np.random.default_rng(21)

# name: (X shape, W shape, attributes, bias)
CASES = {
    'conv1d_whisper': ((2, 4, 17), (6, 4, 3), dict(pads=[1, 1]), True),
    'conv1d_stride2': ((2, 6, 17), (5, 6, 3), dict(pads=[1, 1], strides=[2]), True),
    'conv2d_3x3': ((2, 3, 9, 11), (5, 3, 3, 3), dict(pads=[1, 1, 1, 1]), True),
    'conv2d_dilated': ((1, 3, 12, 13), (4, 3, 3, 2),
                       dict(pads=[2, 1, 0, 3], strides=[2, 3], dilations=[2, 2]), False),
    'conv2d_groups': ((2, 4, 7, 7), (6, 2, 3, 3), dict(group=2, pads=[1, 0, 1, 0]), True),
    'conv2d_depthwise': ((1, 4, 9, 9), (4, 1, 7, 7), dict(group=4, pads=[3, 3, 3, 3]), True),
    'conv2d_same_upper': ((1, 2, 9, 8), (3, 2, 4, 3), dict(auto_pad='SAME_UPPER', strides=[2, 2]), True),
    'conv2d_same_lower': ((1, 2, 9, 8), (3, 2, 4, 3), dict(auto_pad='SAME_LOWER', strides=[2, 3]), True),
    'conv2d_valid': ((1, 2, 9, 8), (3, 2, 4, 3), dict(auto_pad='VALID', strides=[2, 1]), False),
    'conv2d_1x1': ((2, 8, 5, 6), (3, 8, 1, 1), {}, True),
    'conv3d': ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), dict(pads=[1, 0, 1, 0, 1, 1], strides=[1, 2, 1]), True),
    'patch': ((2, 3, 8, 12), (6, 3, 4, 4), dict(strides=[4, 4]), True),
}
F16_CASE = 'conv2d_3x3'


def window(x_shape, w_shape, attrs):
    """(strides, padding pairs, dilations, group) as JAX takes them."""
    d = len(x_shape) - 2
    strides = attrs.get('strides', [1] * d)
    dil = attrs.get('dilations', [1] * d)
    pads = attrs.get('pads', [0] * (2 * d))
    pairs = [(pads[i], pads[d + i]) for i in range(d)]
    auto = attrs.get('auto_pad', 'NOTSET')
    if auto == 'VALID':
        pairs = [(0, 0)] * d
    elif auto.startswith('SAME'):
        pairs = []
        for i in range(d):
            out = -(-x_shape[2 + i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (w_shape[2 + i] - 1) * dil[i] + 1 - x_shape[2 + i])
            lo = total // 2 if auto == 'SAME_UPPER' else total - total // 2
            pairs.append((lo, total - lo))
    return strides, pairs, dil, attrs.get('group', 1)


def jax_conv(x, w, b, x_shape, w_shape, attrs):
    strides, pairs, dil, group = window(x_shape, w_shape, attrs)
    d = len(x_shape) - 2
    spatial = 'DHW'[-d:] if d <= 3 else None
    dn = ('NC' + spatial, 'OI' + spatial, 'NC' + spatial)
    y = jax.lax.conv_general_dilated(x, w, strides, pairs, rhs_dilation=dil,
                                     dimension_numbers=dn, feature_group_count=group,
                                     precision=jax.lax.Precision.HIGHEST)
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * d)
    return y


def depth(w_shape):
    return int(np.prod(w_shape[1:]))


def values(name, dt=np.float32):
    x_shape, w_shape, attrs, bias = CASES[name]
    x = RNG.standard_normal(x_shape).astype(dt)
    w = (RNG.standard_normal(w_shape) / np.sqrt(depth(w_shape))).astype(dt)
    b = RNG.standard_normal(w_shape[0]).astype(dt) if bias else None
    return x, w, b


def node(name, attrs, bias, prefix=''):
    ins = [f'{prefix}x_{name}', f'{prefix}w_{name}'] + ([f'{prefix}b_{name}'] if bias else [])
    return helper.make_node('Conv', ins, [f'{prefix}y_{name}'], **attrs)


def forward(work):
    nodes, inputs, outputs, inits, feeds, data = [], [], [], [], {}, {}
    names = list(CASES) + ['f16']
    for name in names:
        case = F16_CASE if name == 'f16' else name
        x_shape, w_shape, attrs, bias = CASES[case]
        dt = np.float16 if name == 'f16' else np.float32
        et = TensorProto.FLOAT16 if name == 'f16' else TensorProto.FLOAT
        x, w, b = values(case, dt)
        data[name] = (x, w, b)
        nodes.append(node(name, attrs, bias))
        inputs.append(helper.make_tensor_value_info(f'x_{name}', et, list(x_shape)))
        outputs.append(helper.make_tensor_value_info(f'y_{name}', et, None))
        inits.append(numpy_helper.from_array(w, f'w_{name}'))
        if bias:
            inits.append(numpy_helper.from_array(b, f'b_{name}'))
        feeds[f'x_{name}'] = x
    model = helper.make_model(helper.make_graph(nodes, 'convs', inputs, outputs, inits),
                              opset_imports=[helper.make_opsetid('', OPSET)])
    path = os.path.join(work, 'forward.onnx')
    onnx.save(model, path)
    out = compile_and_run(work, path, feeds)
    session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    ort_y = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    ok = True
    for name in names:
        case = F16_CASE if name == 'f16' else name
        x_shape, w_shape, attrs, bias = CASES[case]
        x, w, b = data[name]
        f64 = lambda v: None if v is None else jnp.asarray(v, jnp.float64)
        want = np.asarray(jax_conv(f64(x), f64(w), f64(b), x_shape, w_shape, attrs))
        scale = np.asarray(jax_conv(jnp.abs(f64(x)), jnp.abs(f64(w)), None, x_shape, w_shape, attrs))
        eps = float(np.finfo(np.float16 if name == 'f16' else np.float32).eps)
        # The product sums round once to the type, and adding the bias once
        # more: eps of |product| + |bias|.
        product = np.asarray(jax_conv(f64(x), f64(w), None, x_shape, w_shape, attrs))
        bias = 0 if b is None else np.abs(np.asarray(b, np.float64)).reshape((1, -1) + (1,) * (len(x_shape) - 2))
        bound = (depth(w_shape) * float(np.finfo(np.float32).eps) * scale
                 + eps * (np.abs(product) + bias) + 1e-30)
        got = np.load(os.path.join(out, f'y_{name}.npy')).astype(np.float64)
        if got.shape != want.shape:
            print(f'{name}: shape {got.shape}, want {want.shape} FAIL')
            ok = False
            continue
        ratio = float(np.max(np.abs(got - want) / bound))
        ort_err = float(np.max(np.abs(ort_y[f'y_{name}'].astype(np.float64) - want) / bound))
        line_ok = ratio <= 1.0 and bool(np.all(np.isfinite(got)))
        print(f'{name}: Y {got.shape}, worst {ratio:.3f} of the bound '
              f'(onnxruntime {ort_err:.3f}) {"ok" if line_ok else "FAIL"}')
        ok &= line_ok
    return ok


def gradients(work):
    loss = WeightedLoss()
    nodes, params, data = [], [], {}
    for name, (x_shape, w_shape, attrs, bias) in CASES.items():
        x, w, b = values(name)
        data[name] = (x, w, b)
        nodes.append(node(name, attrs, bias))
        params.append(numpy_helper.from_array(x, f'x_{name}'))
        params.append(numpy_helper.from_array(w, f'w_{name}'))
        if bias:
            params.append(numpy_helper.from_array(b, f'b_{name}'))
        f64 = lambda v: None if v is None else jnp.asarray(v, jnp.float64)
        y_shape = jax_conv(f64(x), f64(w), f64(b), x_shape, w_shape, attrs).shape
        loss.add(f'y_{name}', RNG.uniform(0.5, 1.0, y_shape).astype(np.float32))
    out = loss.gradients(work, nodes, params, OPSET)
    eps = float(np.finfo(np.float32).eps)
    ok = True
    for name, (x_shape, w_shape, attrs, bias) in CASES.items():
        x, w, b = (None if v is None else jnp.asarray(v, jnp.float64) for v in data[name])
        c = jnp.asarray(loss.feeds[f'c_y_{name}'], jnp.float64)

        def f(x, w, b, c=c):
            return jnp.sum(c * jax_conv(x, w, b, x_shape, w_shape, attrs))
        argnums = (0, 1, 2) if bias else (0, 1)
        want = jax.grad(f, argnums)(x, w, b)
        scale = jax.grad(lambda x, w, b: jnp.sum(jnp.abs(c) * jax_conv(x, w, b, x_shape, w_shape, attrs)),
                         argnums)(jnp.abs(x), jnp.abs(w), None if b is None else jnp.abs(b))
        y_size = int(np.prod(c.shape))
        for k, pname in enumerate(['x', 'w', 'b'][:len(argnums)]):
            got = np.load(os.path.join(out, f'{pname}_{name}.grad.npy')).astype(np.float64)
            terms = y_size if pname != 'x' else depth(w_shape) * w_shape[0]
            bound = terms * eps * np.abs(np.asarray(scale[k])) + 1e-30
            ratio = float(np.max(np.abs(got - np.asarray(want[k])) / bound))
            line_ok = ratio <= 1.0
            print(f'{name}: {pname}.grad worst {ratio:.3f} of the bound {"ok" if line_ok else "FAIL"}')
            ok &= line_ok
    return ok


def errors(work):
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

    def graph(attrs, x_shape, w_shape, name):
        w = numpy_helper.from_array(np.ones(w_shape, np.float32), 'w')
        return helper.make_graph([helper.make_node('Conv', ['x', 'w'], ['y'], **attrs)], name,
                                 [f32('x', list(x_shape))], [f32('y', None)], [w])
    cases = [
        ('bad_group', graph(dict(group=3), (1, 4, 5, 5), (6, 2, 3, 3), 'g'),
         "group 3 must divide X's channels (4) and W's outputs (6)"),
        ('bad_kernel_shape', graph(dict(kernel_shape=[2, 2]), (1, 2, 5, 5), (3, 2, 3, 3), 'k'),
         "kernel_shape differs from W's spatial shape"),
        ('bad_auto_pad', graph(dict(auto_pad='SAME'), (1, 2, 5, 5), (3, 2, 3, 3), 'a'),
         "auto_pad 'SAME' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"),
        ('too_small', graph({}, (1, 2, 2, 5), (3, 2, 3, 3), 's'),
         'smaller than the dilated window'),
        ('negative_pads', graph(dict(pads=[-1, 0, 0, 0]), (1, 2, 5, 5), (3, 2, 3, 3), 'p'),
         'pads of at least 0'),
        ('rank6', graph({}, (1, 2, 3, 3, 3, 3), (3, 2, 1, 1, 1, 1), 'r'),
         'with 1 to 3 spatial dimensions'),
    ]
    return expect_rejections(work, cases, OPSET)


def main():
    run_checks(forward, gradients, errors)


if __name__ == '__main__':
    main()
