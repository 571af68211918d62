"""Model and checks for loss_scale.test: loss = sum((x @ w) * m) with a
trainable w and inputs x and m. With --precision fp16 the product x @ w runs
in fp16, and its gradient is m * loss_scale in fp16: m = 0.25 fits the
initial scale 2^16 (16384), m = 4 overflows it (262144 > 65504, the largest
fp16), so m chooses a clean step or an overflow.

    loss_scale.test.py make DIR                  model.onnx, x.npy, ok.npy, bad.npy
    loss_scale.test.py scales LOG.jsonl          prints 'step N scale S [skipped]'
    loss_scale.test.py same A.safetensors B.safetensors
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import load_file


def make(out):
    nodes = [helper.make_node('MatMul', ['x', 'w'], ['y']),
             helper.make_node('Mul', ['y', 'm'], ['z']),
             helper.make_node('ReduceSum', ['z'], ['loss'], keepdims=0)]
    inputs = [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 4]),
              helper.make_tensor_value_info('m', TensorProto.FLOAT, [2, 4])]
    w = numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4), 'w')
    graph = helper.make_graph(nodes, 'loss_scale', inputs,
                              [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
                              [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]),
              os.path.join(out, 'model.onnx'))
    np.save(os.path.join(out, 'x.npy'), np.linspace(0.5, 1.0, 8, dtype=np.float32).reshape(2, 4))
    np.save(os.path.join(out, 'ok.npy'), np.full((2, 4), 0.25, np.float32))
    np.save(os.path.join(out, 'bad.npy'), np.full((2, 4), 4.0, np.float32))


def scales(log):
    for line in open(log):
        r = json.loads(line)
        print(f"step {r['step']} scale {r['loss_scale']:g}" +
              (' skipped' if r.get('skipped') else ''))


def same(a, b):
    ta, tb = load_file(a), load_file(b)
    if ta.keys() != tb.keys() or any(not np.array_equal(ta[k], tb[k]) for k in ta):
        sys.exit(f'{a} and {b} differ')
    print('same')


if __name__ == '__main__':
    {'make': make, 'scales': scales, 'same': same}[sys.argv[1]](*sys.argv[2:])
