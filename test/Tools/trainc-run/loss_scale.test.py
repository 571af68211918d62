"""Model and checks for loss_scale.test: loss = sum((x @ w) * m * s) with a
trainable matrix w and scalar s and inputs x and m. With --precision fp16 the product x @ w runs
in fp16, and its gradient is m * s * loss_scale in fp16 (s starts at 1.5):
m = 0.001 fits the initial scale 2^16 (98) and keeps fitting while s stays
below a few hundred, m = 4 overflows it (393216 > 65504, the largest fp16), so m
chooses a clean step or an overflow.

    loss_scale.test.py make DIR                  model.onnx, x.npy, ok.npy, bad.npy
    loss_scale.test.py scales LOG.jsonl          prints 'step N scale S [skipped]'
    loss_scale.test.py same A.safetensors B.safetensors
    loss_scale.test.py close MODEL A.safetensors B.safetensors  one step's changes agree
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
             helper.make_node('Mul', ['y', 'm'], ['ym']),
             helper.make_node('Mul', ['ym', 's'], ['z']),
             helper.make_node('ReduceSum', ['z'], ['loss'], keepdims=0)]
    inputs = [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 4]),
              helper.make_tensor_value_info('m', TensorProto.FLOAT, [2, 4])]
    w = numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4), 'w')
    # A 0-d parameter too (a learned temperature): its gradient has no
    # broadcast of 1 / scale, and must be unscaled exactly once.
    scale = numpy_helper.from_array(np.array(1.5, np.float32), 's')
    graph = helper.make_graph(nodes, 'loss_scale', inputs,
                              [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
                              [w, scale])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]),
              os.path.join(out, 'model.onnx'))
    np.save(os.path.join(out, 'x.npy'), np.linspace(0.5, 1.0, 8, dtype=np.float32).reshape(2, 4))
    np.save(os.path.join(out, 'ok.npy'), np.full((2, 4), 0.001, np.float32))
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


def close(model, a, b):
    """Each parameter's change from its initial value (model's initializer)
    after one step in a within 1% of its change in b (fp16 against f32)."""
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    ta, tb = load_file(a), load_file(b)
    for k in tb:
        da, db = ta[k] - init[k], tb[k] - init[k]
        err = float(np.linalg.norm(da - db) / max(np.linalg.norm(db), 1e-30))
        if err > 1e-2:
            sys.exit(f'{k}: changed by {da} in {a}, by {db} in {b} (relative {err:.2e})')
    print('close')


if __name__ == '__main__':
    {'make': make, 'scales': scales, 'same': same, 'close': close}[sys.argv[1]](*sys.argv[2:])
