"""Writes RMSNorm models in the forms HF exports produce, for rmsnorm.test."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)
w = rng.uniform(0.5, 1.5, size=(16,)).astype(np.float32)
x = rng.standard_normal((2, 4, 16)).astype(np.float32)


def model(opset, reciprocal):
    # The weight is an initializer (a parameter); the scalars are Constant
    # nodes, as the TorchScript exporter writes them.
    consts = [numpy_helper.from_array(w, 'w')]

    def constant(name, value):
        return helper.make_node('Constant', [], [name],
                                value=numpy_helper.from_array(value, name))

    scalars = [constant('two', np.array(2.0, np.float32)),
               constant('eps', np.array(1e-6, np.float32)),
               constant('one', np.array(1.0, np.float32))]
    if opset >= 18:
        scalars.append(constant('axes', np.array([-1], np.int64)))
        mean = helper.make_node('ReduceMean', ['sq', 'axes'], ['ms'], keepdims=1)
    else:
        mean = helper.make_node('ReduceMean', ['sq'], ['ms'], axes=[-1], keepdims=1)
    inv = (helper.make_node('Reciprocal', ['s'], ['r']) if reciprocal
           else helper.make_node('Div', ['one', 's'], ['r']))
    nodes = scalars + [helper.make_node('Pow', ['x', 'two'], ['sq']), mean,
             helper.make_node('Add', ['ms', 'eps'], ['ve']),
             helper.make_node('Sqrt', ['ve'], ['s']), inv,
             helper.make_node('Mul', ['x', 'r'], ['n']),
             helper.make_node('Mul', ['w', 'n'], ['y'])]
    graph = helper.make_graph(
        nodes, 'rms',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 4, 16])],
        [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 4, 16])],
        consts)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    onnx.checker.check_model(m)
    return m


onnx.save(model(17, True), os.path.join(out, 'rms_reciprocal_17.onnx'))
onnx.save(model(18, True), os.path.join(out, 'rms_reciprocal_18.onnx'))
onnx.save(model(18, False), os.path.join(out, 'rms_div_18.onnx'))
np.save(os.path.join(out, 'x.npy'), x)
np.save(os.path.join(out, 'w.npy'), w)
