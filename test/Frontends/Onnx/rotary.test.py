"""Writes rotary.onnx (Cos and Sin of trainable frequencies times positions)
and its inputs for rotary.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)
f = rng.uniform(0.1, 1.0, size=(8,)).astype(np.float32)
x = rng.standard_normal((4, 8)).astype(np.float32)
t = np.arange(4, dtype=np.float32).reshape(4, 1) * np.ones((1, 8), np.float32)
nodes = [
    helper.make_node('Mul', ['t', 'f'], ['a']),
    helper.make_node('Cos', ['a'], ['c']),
    helper.make_node('Sin', ['a'], ['s']),
    helper.make_node('Mul', ['x', 'c'], ['xc']),
    helper.make_node('Mul', ['x', 's'], ['xs']),
    helper.make_node('Add', ['xc', 'xs'], ['y']),
    helper.make_node('ReduceSum', ['y'], ['loss'], keepdims=0),
]
graph = helper.make_graph(
    nodes, 'rotary',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4, 8]),
     helper.make_tensor_value_info('t', TensorProto.FLOAT, [4, 8])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 8]),
     helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
    [numpy_helper.from_array(f, 'f')])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, 'rotary.onnx'))
np.save(os.path.join(out, 'x.npy'), x)
np.save(os.path.join(out, 't.npy'), t)
np.save(os.path.join(out, 'f.npy'), f)
