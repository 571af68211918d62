"""Conv models for conv.test: ViT's patch embedding (stride = kernel), with
and without bias and trailing pixels, and trained.

    conv.test.py make DIR          writes the models and inputs
    conv.test.py check DIR CASE    compares trainc-run's outputs in DIR with
                                   numpy (CASE: patch, ragged or train)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

mode, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
load = lambda name: np.load(os.path.join(out, name + '.npy'))


def conv(x, w, b):
    """The reference: each output pixel is one kh x kw patch times w."""
    n, c, h, v = x.shape
    o, _, k, l = w.shape
    hp, wp = h // k, v // l
    p = x[:, :, :hp * k, :wp * l].reshape(n, c, hp, k, wp, l)
    return np.einsum('ncikjl,ockl->noij', p, w) + b.reshape(1, -1, 1, 1)


def close(got, want, what):
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (
        what, float(np.abs(got - want).max()))


if mode == 'check':
    case = sys.argv[3]
    if case == 'patch':
        close(load('y'), conv(load('x'), load('patch_w'), load('patch_b')), 'y')
    elif case == 'ragged':
        close(load('y'), conv(load('xr'), load('ragged_w'), np.zeros(6, 'f4')), 'y')
    else:  # d(sum(y * g)) / dw[o, c, a, b] = sum g[n, o, i, j] x[n, c, 4i + a, 4j + b]
        p = load('x').reshape(2, 3, 2, 4, 3, 4)
        close(load('w.grad'), np.einsum('noij,ncikjl->ockl', load('g'), p), 'w.grad')
        close(load('b.grad'), load('g').sum((0, 2, 3)), 'b.grad')
    sys.exit(0)
f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)


def save(name, node_attrs, x_shape, y_shape, bias=True, train=False):
    w = rng.standard_normal((6, 3, 4, 4)).astype(np.float32) * 0.1
    b = rng.standard_normal((6,)).astype(np.float32)
    np.save(os.path.join(out, name + '_w.npy'), w)
    np.save(os.path.join(out, name + '_b.npy'), b)
    inits = [numpy_helper.from_array(w, 'w')]
    ins = ['x', 'w']
    if bias:
        inits.append(numpy_helper.from_array(b, 'b'))
        ins.append('b')
    nodes = [helper.make_node('Conv', ins, ['y'], **node_attrs)]
    outputs = [f32('y', y_shape)]
    inputs = [f32('x', x_shape)]
    if train:
        nodes += [helper.make_node('Mul', ['y', 'g'], ['yg']),
                  helper.make_node('ReduceSum', ['yg'], ['loss'], keepdims=0)]
        inputs.append(f32('g', y_shape))
        outputs = [f32('loss', [])]
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + '.onnx'))


patch = dict(kernel_shape=[4, 4], strides=[4, 4])
save('patch', patch, [2, 3, 8, 12], [2, 6, 2, 3])
save('ragged', dict(strides=[4, 4]), [2, 3, 10, 13], [2, 6, 2, 3], bias=False)
save('train', patch, [2, 3, 8, 12], [2, 6, 2, 3], train=True)
np.save(os.path.join(out, 'x.npy'), rng.standard_normal((2, 3, 8, 12)).astype(np.float32))
np.save(os.path.join(out, 'xr.npy'), rng.standard_normal((2, 3, 10, 13)).astype(np.float32))
np.save(os.path.join(out, 'g.npy'), rng.standard_normal((2, 6, 2, 3)).astype(np.float32))
