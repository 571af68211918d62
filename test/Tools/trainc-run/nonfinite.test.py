"""Models and checks for nonfinite.test: loss = sum(w * x) + sum(w * w) with
a trainable w and an input x, so an infinite x makes the step's loss and
gradient infinite.

    nonfinite.test.py make DIR             model.onnx, ok.npy, bad.npy
    nonfinite.test.py make16 DIR           model16.onnx, big16.npy (f16)
    nonfinite.test.py same A.safetensors B.safetensors
    nonfinite.test.py state-same DIR1 DIR2 the newest checkpoints' tensors
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file


def save_model(path, dtype):
    """loss = sum(w * x + w * w), w = [0.5, -1, 2, 0.25] and x of `dtype`
    (np.float32 or np.float16)."""
    elem = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}[dtype]
    nodes = [helper.make_node('Mul', ['w', 'x'], ['wx']),
             helper.make_node('Mul', ['w', 'w'], ['ww']),
             helper.make_node('Add', ['wx', 'ww'], ['s']),
             helper.make_node('ReduceSum', ['s'], ['loss'], keepdims=0)]
    graph = helper.make_graph(
        nodes, 'nonfinite', [helper.make_tensor_value_info('x', elem, [4])],
        [helper.make_tensor_value_info('loss', elem, [])],
        [numpy_helper.from_array(np.array([0.5, -1.0, 2.0, 0.25], dtype), 'w')])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), path)


def make16(out):
    """The loss in f16, with an x whose gradient x + 2 w has an element of
    298: its square (88,804) is beyond f16's range, but the gradient and
    its norm are finite."""
    save_model(os.path.join(out, 'model16.onnx'), np.float16)
    np.save(os.path.join(out, 'big16.npy'), np.array([1.0, 300.0, -1.0, 0.5], np.float16))


def make(out):
    save_model(os.path.join(out, 'model.onnx'), np.float32)
    np.save(os.path.join(out, 'ok.npy'), np.array([1.0, 2.0, -1.0, 0.5], np.float32))
    np.save(os.path.join(out, 'bad.npy'), np.array([1.0, np.inf, -1.0, 0.5], np.float32))


def newest(state):
    name = open(os.path.join(state, 'latest')).read().strip()
    return load_file(os.path.join(state, name, 'rank-00000-of-00001.safetensors'))


def same(a, b):
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    for k in a:
        assert a[k].tobytes() == b[k].tobytes(), (k, a[k], b[k])
    print(f'same: {sorted(a)}')


if __name__ == '__main__':
    if sys.argv[1] == 'make':
        make(sys.argv[2])
    elif sys.argv[1] == 'make16':
        make16(sys.argv[2])
    elif sys.argv[1] == 'same':
        same(load_file(sys.argv[2]), load_file(sys.argv[3]))
    else:
        same(newest(sys.argv[2]), newest(sys.argv[3]))
