"""ONNX InstanceNormalization against onnxruntime and JAX in float64.

    instance_norm.test.py DIR   exits 1 on any failure.

y = scale[c] (x - mean) / sqrt(var + epsilon) + B[c], mean and (biased)
var over each (n, c)'s spatial elements. GroupNorm as PyTorch's TorchScript
exporter writes it: X [N, C, H, W] reshaped to [N, G, C/G * H * W],
InstanceNormalization with unit scale and zero B, reshaped back, times
weight [C, 1, 1], plus bias.

Forward: within 64 eps (float32's; 4 eps16 for f16 inputs, which trainc
normalizes in float32 and rounds once) times (1 + |y|) of JAX's float64
result: mean and variance are sums of a few hundred terms, the result
centered values over a standard deviation of order 1. onnxruntime is
printed for scale.

Gradients (float32), loss = sum(Y * c), X and the affine parameters
trainable, against jax.grad in float64 within 1e-5 of the largest
gradient entry: the backward sums a few hundred products of order-1
values (a few hundred eps, 2e-5 at most; measured worst printed).
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
RNG = np.random.default_rng(61)
EPS = 1e-5


def instance_norm(x, scale, b, eps=EPS):
    axes = tuple(range(2, x.ndim))
    mean = jnp.mean(x, axes, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean) / jnp.sqrt(var + eps) * scale.reshape(shape) + b.reshape(shape)


def group_norm(x, w, b, groups):
    n, c = x.shape[:2]
    y = instance_norm(x.reshape(n, groups, -1), jnp.ones(groups, x.dtype), jnp.zeros(groups, x.dtype))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape) * w.reshape(shape) + b.reshape(shape)


def instance_nodes(name, x_shape, dtype):
    """(nodes, params) of InstanceNormalization on x_<name>."""
    c = x_shape[1]
    scale = RNG.uniform(0.5, 1.5, c).astype(dtype)
    b = RNG.standard_normal(c).astype(dtype)
    nodes = [helper.make_node('InstanceNormalization', [f'x_{name}', f's_{name}', f'b_{name}'],
                              [f'y_{name}'], epsilon=EPS)]
    return nodes, {f's_{name}': scale, f'b_{name}': b}


def group_nodes(name, x_shape, groups):
    """PyTorch's GroupNorm export: Reshape, InstanceNormalization, Reshape,
    Mul, Add."""
    n, c = x_shape[:2]
    w = RNG.uniform(0.5, 1.5, c).astype(np.float32)
    b = RNG.standard_normal(c).astype(np.float32)
    consts = {f'gshape_{name}': np.array([n, groups, -1], np.int64),
              f'xshape_{name}': np.array(x_shape, np.int64)}
    nodes = [helper.make_node('Constant', [], [k], value=numpy_helper.from_array(v, k))
             for k, v in consts.items()]
    nodes += [
        helper.make_node('Constant', [], [f'ones_{name}'],
                         value=numpy_helper.from_array(np.ones(groups, np.float32), f'ones_{name}')),
        helper.make_node('Constant', [], [f'zeros_{name}'],
                         value=numpy_helper.from_array(np.zeros(groups, np.float32), f'zeros_{name}')),
        helper.make_node('Reshape', [f'x_{name}', f'gshape_{name}'], [f'g_{name}']),
        helper.make_node('InstanceNormalization', [f'g_{name}', f'ones_{name}', f'zeros_{name}'],
                         [f'gn_{name}'], epsilon=EPS),
        helper.make_node('Reshape', [f'gn_{name}', f'xshape_{name}'], [f'r_{name}']),
        helper.make_node('Mul', [f'r_{name}', f'w_{name}'], [f'm_{name}']),
        helper.make_node('Add', [f'm_{name}', f'bias_{name}'], [f'y_{name}']),
    ]
    return nodes, {f'w_{name}': w.reshape(c, 1, 1), f'bias_{name}': b.reshape(c, 1, 1)}


CASES = [('inst_2d', (2, 3, 7, 6)), ('inst_1d', (3, 4, 11)), ('inst_3d', (1, 2, 3, 4, 5))]
GROUP = ('group_norm', (2, 8, 5, 6), 4)


def reference(name, x, params):
    f64 = lambda v: jnp.asarray(v, jnp.float64)
    if name == GROUP[0]:
        return group_norm(f64(x), f64(params[f'w_{name}']).reshape(-1),
                          f64(params[f'bias_{name}']).reshape(-1), GROUP[2])
    return instance_norm(f64(x), f64(params[f's_{name}']), f64(params[f'b_{name}']))


def build(dtype, names_shapes, with_group):
    nodes, params, xs = [], {}, {}
    for name, shape in names_shapes:
        n, p = instance_nodes(name, shape, dtype)
        nodes += n
        params.update(p)
        xs[name] = (RNG.standard_normal(shape) * 2 + 0.5).astype(dtype)
    if with_group:
        name, shape, groups = GROUP
        n, p = group_nodes(name, shape, groups)
        nodes += n
        params.update(p)
        xs[name] = (RNG.standard_normal(shape) * 2 + 0.5).astype(dtype)
    return nodes, params, xs


def forward(work):
    ok = True
    for dtype, elem, tol in ((np.float32, TensorProto.FLOAT, 64 * np.finfo(np.float32).eps),
                             (np.float16, TensorProto.FLOAT16, 4 * float(np.finfo(np.float16).eps))):
        with_group = dtype == np.float32
        nodes, params, xs = build(dtype, CASES, with_group)
        inputs = [helper.make_tensor_value_info(f'x_{k}', elem, list(v.shape)) for k, v in xs.items()]
        outputs = [helper.make_tensor_value_info(f'y_{k}', elem, None) for k in xs]
        inits = [numpy_helper.from_array(v, k) for k, v in params.items()]
        model = helper.make_model(helper.make_graph(nodes, 'norms', inputs, outputs, inits),
                                  opset_imports=[helper.make_opsetid('', OPSET)])
        path = os.path.join(work, f'forward_{np.dtype(dtype).name}.onnx')
        onnx.save(model, path)
        feeds = {f'x_{k}': v for k, v in xs.items()}
        out = compile_and_run(work, path, feeds)
        session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
        theirs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        for k, x in xs.items():
            want = np.asarray(reference(k, x, params))
            got = np.load(os.path.join(out, f'y_{k}.npy')).astype(np.float64)
            bound = tol * (1 + np.abs(want))
            ratio = float(np.max(np.abs(got - want) / bound))
            ort_ratio = float(np.max(np.abs(theirs[f'y_{k}'].astype(np.float64) - want) / bound))
            line_ok = got.shape == want.shape and ratio <= 1
            print(f'{k} {np.dtype(dtype).name}: Y {got.shape}, worst {ratio:.3f} of the bound '
                  f'(onnxruntime {ort_ratio:.3f}) {"ok" if line_ok else "FAIL"}')
            ok &= line_ok
    return ok


def gradients(work):
    nodes, params, xs = build(np.float32, CASES, True)
    loss = WeightedLoss()
    for k, x in xs.items():
        y = np.asarray(reference(k, x, params))
        loss.add(f'y_{k}', RNG.uniform(0.5, 1.0, y.shape).astype(np.float32))
    inits = [numpy_helper.from_array(v, k) for k, v in {**params, **{f'x_{k}': v for k, v in
                                                                      xs.items()}}.items()]
    out = loss.gradients(work, nodes, inits, OPSET)
    ok = True
    for k, x in xs.items():
        c = jnp.asarray(loss.feeds[f'c_y_{k}'], jnp.float64)
        names = [f'x_{k}'] + [p for p in params if p.endswith('_' + k)]

        def f(*vals):
            local = dict(zip(names, vals))
            ps = {p: local.get(p, params[p]) for p in params}
            return jnp.sum(c * reference(k, local[f'x_{k}'], ps))
        want = jax.grad(f, tuple(range(len(names))))(
            *[jnp.asarray(xs[k] if n == f'x_{k}' else params[n], jnp.float64) for n in names])
        for n, w in zip(names, want):
            got = np.load(os.path.join(out, f'{n}.grad.npy')).astype(np.float64)
            err = float(np.max(np.abs(got - np.asarray(w)))) / float(np.max(np.abs(w)))
            line_ok = err <= 1e-5
            print(f'{n}.grad: worst {err:.1e} of the largest entry {"ok" if line_ok else "FAIL"}')
            ok &= line_ok
    return ok


def errors(work):
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

    def graph(x_shape, s_shape, eps=EPS):
        s = numpy_helper.from_array(np.ones(s_shape, np.float32), 's')
        b = numpy_helper.from_array(np.zeros(s_shape, np.float32), 'b')
        return helper.make_graph([helper.make_node('InstanceNormalization', ['x', 's', 'b'], ['y'],
                                                   epsilon=eps)], 'g',
                                 [f32('x', list(x_shape))], [f32('y', None)], [s, b])
    cases = [
        ('bad_scale', graph((1, 3, 4, 4), (4,)), 'needs scale and B of shape [3]'),
        ('no_spatial', graph((2, 3), (3,)), 'with at least one spatial dimension'),
        ('bad_epsilon', graph((1, 3, 4), (3,), eps=-1.0), 'must be finite and not negative'),
    ]
    return expect_rejections(work, cases, OPSET)


def main():
    run_checks(forward, gradients, errors)


if __name__ == '__main__':
    main()
