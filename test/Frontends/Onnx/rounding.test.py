"""Writes rounding.onnx (Floor, Ceil and Round of x, Round of an f64 d, and
a loss sum(w * floor(w * x)) of a trainable w) and its inputs for
rounding.test; with --check, compares the outputs with numpy bit for bit;
with --check-grad, w's gradient with floor(w * x)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, 0.49999997, -0.49999997,
          3.7, -3.7, 8388607.5, -8388609.0, 1e30, np.inf, -np.inf, np.nan]
x = np.array(values, np.float32)
d = np.array(values, np.float64)
w = np.linspace(0.3, 2.1, len(values)).astype(np.float32)
mode = sys.argv[2] if len(sys.argv) > 2 else ''

if mode == '--check':
    load = lambda k: np.load(os.path.join(out, k + '.npy'))
    for name, got, want in [('floor', load('floor'), np.floor(x)),
                            ('ceil', load('ceil'), np.ceil(x)),
                            ('round', load('round'), np.round(x)),
                            ('round64', load('round64'), np.round(d))]:
        assert got.dtype == want.dtype, (name, got.dtype)
        same = (got.view(np.uint32 if got.dtype == np.float32 else np.uint64)
                == want.view(np.uint32 if want.dtype == np.float32 else np.uint64))
        same |= np.isnan(got) & np.isnan(want)
        assert same.all(), (name, got[~same], want[~same], x[~same])
    sys.exit(0)
if mode == '--check-grad':
    g = np.load(os.path.join(out, 'w.grad.npy'))
    finite = np.isfinite(x) & (np.abs(x) < 1e6)
    want = np.floor(w * x)
    assert np.array_equal(g[finite], want[finite]), (g, want)
    sys.exit(0)

nodes = [
    helper.make_node('Floor', ['x'], ['floor']),
    helper.make_node('Ceil', ['x'], ['ceil']),
    helper.make_node('Round', ['x'], ['round']),
    helper.make_node('Round', ['d'], ['round64']),
    helper.make_node('Mul', ['w', 'x'], ['wx']),
    helper.make_node('Floor', ['wx'], ['fwx']),
    helper.make_node('Mul', ['w', 'fwx'], ['term']),
    # Only the finite, moderate entries enter the loss (the rest would make
    # it inf or NaN): the first 13.
    helper.make_node('Slice', ['term', 'starts', 'ends'], ['kept']),
    helper.make_node('ReduceSum', ['kept'], ['loss'], keepdims=0),
]
graph = helper.make_graph(
    nodes, 'rounding',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [len(values)]),
     helper.make_tensor_value_info('d', TensorProto.DOUBLE, [len(values)])],
    [helper.make_tensor_value_info(n, TensorProto.FLOAT, [len(values)])
     for n in ('floor', 'ceil', 'round')]
    + [helper.make_tensor_value_info('round64', TensorProto.DOUBLE, [len(values)]),
       helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
    [numpy_helper.from_array(w, 'w'),
     numpy_helper.from_array(np.array([0], np.int64), 'starts'),
     numpy_helper.from_array(np.array([13], np.int64), 'ends')])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, 'rounding.onnx'))
np.save(os.path.join(out, 'x.npy'), x)
np.save(os.path.join(out, 'd.npy'), d)
