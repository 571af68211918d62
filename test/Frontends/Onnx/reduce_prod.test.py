"""Writes the models and inputs of reduce_prod.test (prod18.onnx: ReduceProd
at opset 18 of an f32 x over axis 1 and over every axis, of an i32 i over
axis 0; prod13.onnx: over axis 0 at opset 13; train.onnx: a loss sum over
rows of prod(w * x) of a trainable w); with --check / --check13, compares
the outputs with numpy bit for bit; with --check-grad, w's gradient with
x times the product of the row's other factors."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else ''
load = lambda *p: np.load(os.path.join(out, *p))

# Factors of at most 2 significant bits: each product is exact in f64.
x = np.array([[1.5, -0.5, 2.0, -1.0],
              [0.5, 0.0, -2.0, 1.5],
              [np.inf, 0.5, -1.0, 2.0],
              [1.0, np.nan, 0.5, 2.0]], np.float32)
# 65536^2 wraps to 0 in i32; 65537 * 65537 to 2^17 + 1; -3 * 7 = -21.
i = np.array([[65536, 65537, -3], [65536, 65537, 7]], np.int32)
# Rows of the trained product w * x: no zero, one zero, two zeros, in w (a
# zero in x would hide the product's gradient behind d(w x)/dw = x = 0).
rng = np.random.default_rng(7)
xt = rng.uniform(0.5, 1.5, (3, 4)).astype(np.float32) * np.float32([1, -1, 1, -1])
w = rng.uniform(0.7, 1.3, (3, 4)).astype(np.float32)
w[1, 2] = 0
w[2, 0] = w[2, 3] = 0


def same_bits(name, got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, \
        (name, got.dtype, got.shape, want.dtype, want.shape)
    ok = (got == want) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), (name, got, want)


if mode == '--check':
    x64 = x.astype(np.float64)
    same_bits('rows', load('rows.npy'),
              np.prod(x64, axis=1, keepdims=True).astype(np.float32))
    same_bits('all', load('all.npy'), np.float32(np.prod(x64)).reshape(()))
    wrapped = (np.prod(i.astype(np.int64), axis=0) & 0xffffffff).astype(np.uint32)
    same_bits('wrapped', load('wrapped.npy'), wrapped.view(np.int32))
    sys.exit(0)
if mode == '--check13':
    same_bits('columns', load('13', 'columns.npy'),
              np.prod(x.astype(np.float64), axis=0).astype(np.float32))
    sys.exit(0)
if mode == '--check-grad':
    g = load('g', 'w.grad.npy')
    f = (w * xt).astype(np.float64)
    want = np.empty_like(f)
    for r in range(3):
        for c in range(4):
            want[r, c] = xt[r, c] * np.prod(np.delete(f[r], c))
    # g * p / x rounds a few times where the product of the others rounds
    # once per factor: (4 + 3) f32 roundings at most, 2^-24 each.
    assert np.allclose(g, want, rtol=7 * 2.0 ** -24, atol=0), (g, want)
    assert (g[1] != 0).sum() == 1 and g[1, 2] != 0 and not g[2].any(), g
    sys.exit(0)


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name))


f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
save(helper.make_model(helper.make_graph(
    [helper.make_node('ReduceProd', ['x', 'axis1'], ['rows']),
     helper.make_node('ReduceProd', ['x', 'none'], ['all'], keepdims=0),
     helper.make_node('ReduceProd', ['i', 'axis0'], ['wrapped'], keepdims=0)],
    'prod18',
    [f32('x', [4, 4]), helper.make_tensor_value_info('i', TensorProto.INT32, [2, 3])],
    [f32('rows', [4, 1]), f32('all', []),
     helper.make_tensor_value_info('wrapped', TensorProto.INT32, [3])],
    [numpy_helper.from_array(np.array([1], np.int64), 'axis1'),
     numpy_helper.from_array(np.array([0], np.int64), 'axis0'),
     numpy_helper.from_array(np.array([], np.int64), 'none')]),
    opset_imports=[helper.make_opsetid('', 18)]), 'prod18.onnx')
save(helper.make_model(helper.make_graph(
    [helper.make_node('ReduceProd', ['x'], ['columns'], axes=[0], keepdims=0)],
    'prod13', [f32('x', [4, 4])], [f32('columns', [4])]),
    opset_imports=[helper.make_opsetid('', 13)]), 'prod13.onnx')
save(helper.make_model(helper.make_graph(
    [helper.make_node('Mul', ['w', 'x'], ['wx']),
     helper.make_node('ReduceProd', ['wx', 'axis1'], ['p'], keepdims=0),
     helper.make_node('ReduceSum', ['p'], ['loss'], keepdims=0)],
    'train', [f32('x', [3, 4])], [f32('loss', [])],
    [numpy_helper.from_array(w, 'w'),
     numpy_helper.from_array(np.array([1], np.int64), 'axis1')]),
    opset_imports=[helper.make_opsetid('', 18)]), 'train.onnx')
np.save(os.path.join(out, 'x.npy'), x)
np.save(os.path.join(out, 'i.npy'), i)
np.save(os.path.join(out, 'xt.npy'), xt)
