"""Writes the models and inputs of topk.test (topk.onnx: TopK of an f32 x,
largest 3 along the last axis, and of an int64 i, smallest 2 along axis 0;
train.onnx: a loss sum(TopK(w * x, 2) * c) of a trainable w; two models
whose K is data or too large); with --check, compares the outputs with
onnxruntime's bit for bit (and a TopK of bools, which trainc refuses);
with --check-grad, w's gradient with x * c at
the chosen elements and 0 elsewhere."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else ''
load = lambda *p: np.load(os.path.join(out, *p))

x = np.array([[1.5, -0.5, 2.0, 2.0, -1.0, 0.25],
              [0.0, -0.0, -1.0, np.inf, -np.inf, 0.0],
              [3.0, 3.0, 3.0, 3.0, 3.0, 3.0],
              [-2.0, -3.0, -1.0, -4.0, -5.0, -6.0]], np.float32)
i = np.array([[7, -2, 5], [7, 9, -9], [-3, -2, 5], [2, 9, 0]], np.int64)
rng = np.random.default_rng(11)
xt = rng.uniform(0.5, 1.5, (3, 6)).astype(np.float32)
w = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
c = np.array([2.0, -3.0], np.float32)
f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
i64 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)
opset = [helper.make_opsetid('', 18)]


def model(nodes, inputs, outputs, inits):
    return helper.make_model(helper.make_graph(nodes, 'topk', inputs, outputs,
                                               inits), opset_imports=opset)


fwd = model([helper.make_node('TopK', ['x', 'k3'], ['values', 'indices']),
             helper.make_node('TopK', ['i', 'k2'], ['small', 'small_at'],
                              axis=0, largest=0)],
            [f32('x', [4, 6]), i64('i', [4, 3])],
            [f32('values', [4, 3]), i64('indices', [4, 3]),
             i64('small', [2, 3]), i64('small_at', [2, 3])],
            [numpy_helper.from_array(np.array([3], np.int64), 'k3'),
             numpy_helper.from_array(np.array([2], np.int64), 'k2')])

if mode == '--check':
    import onnxruntime as ort
    session = ort.InferenceSession(fwd.SerializeToString(),
                                   providers=['CPUExecutionProvider'])
    want = session.run(None, {'x': x, 'i': i})
    for name, ref in zip(['values', 'indices', 'small', 'small_at'], want):
        got = load(name + '.npy')
        assert got.dtype == ref.dtype and got.shape == ref.shape, (name, got, ref)
        # Bit for bit: -0 and +0 told apart.
        assert got.tobytes() == ref.tobytes(), (name, got, ref)
    sys.exit(0)
if mode == '--check-grad':
    g = load('g', 'w.grad.npy')
    f = w * xt
    want = np.zeros_like(w)
    for r in range(3):
        top = np.argsort(-f[r], kind='stable')[:2]
        want[r, top] = xt[r, top] * c
    assert np.array_equal(g, want), (g, want)
    sys.exit(0)


def save(m, name):
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name))


save(fwd, 'topk.onnx')
save(model([helper.make_node('Mul', ['w', 'x'], ['wx']),
            helper.make_node('TopK', ['wx', 'k2'], ['top', 'at']),
            helper.make_node('Mul', ['top', 'c'], ['tc']),
            helper.make_node('ReduceSum', ['tc'], ['loss'], keepdims=0)],
           [f32('x', [3, 6])], [f32('loss', [])],
           [numpy_helper.from_array(w, 'w'), numpy_helper.from_array(c, 'c'),
            numpy_helper.from_array(np.array([2], np.int64), 'k2')]),
     'train.onnx')
save(model([helper.make_node('TopK', ['x', 'k'], ['v', 'at'])],
           [f32('x', [4, 6]), i64('k', [1])], [f32('v', [4, 3]), i64('at', [4, 3])],
           []), 'k_input.onnx')
save(model([helper.make_node('TopK', ['x', 'k'], ['v', 'at'])],
           [f32('x', [4, 6])], [f32('v', [4, 7]), i64('at', [4, 7])],
           [numpy_helper.from_array(np.array([7], np.int64), 'k')]), 'k_big.onnx')
save(model([helper.make_node('TopK', ['b', 'k'], ['v', 'at'])],
           [helper.make_tensor_value_info('b', TensorProto.BOOL, [4])],
           [helper.make_tensor_value_info('v', TensorProto.BOOL, [2]),
            i64('at', [2])],
           [numpy_helper.from_array(np.array([2], np.int64), 'k')]), 'bool.onnx')
np.save(os.path.join(out, 'x.npy'), x)
np.save(os.path.join(out, 'i.npy'), i)
np.save(os.path.join(out, 'xt.npy'), xt)
