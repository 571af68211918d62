"""Writes Pad models for pad.test: HF's label shift (int64, -100), float
padding with a crop, opset 18's axes input, a trained parameter padded, and
the unsupported cases."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(0)


def const(name, value):
    return helper.make_node('Constant', [], [name],
                            value=numpy_helper.from_array(np.asarray(value), name))


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + '.onnx'))


i64 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)
f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

# labels [2, 5] -> pad one -100 at the end of axis 1 -> drop the first.
save('shift', [const('pads', np.array([0, 0, 0, 1], np.int64)),
               const('fill', np.array(-100, np.int64)),
               helper.make_node('Pad', ['labels', 'pads', 'fill'], ['padded']),
               const('starts', np.array([1], np.int64)),
               const('ends', np.array([6], np.int64)),
               const('axes', np.array([1], np.int64)),
               helper.make_node('Slice', ['padded', 'starts', 'ends', 'axes'],
                                ['shifted'])],
     [i64('labels', [2, 5])], [i64('shifted', [2, 5])])
np.save(os.path.join(out, 'labels.npy'),
        rng.integers(0, 50, size=(2, 5)).astype(np.int64))

# f32 [3, 4]: one row before, one column cropped at the start, two after.
save('crop', [const('pads', np.array([1, -1, 0, 2], np.int64)),
              const('fill', np.array(0.5, np.float32)),
              helper.make_node('Pad', ['x', 'pads', 'fill'], ['y'])],
     [f32('x', [3, 4])], [f32('y', [4, 5])])
np.save(os.path.join(out, 'x.npy'), rng.standard_normal((3, 4)).astype(np.float32))

# opset 18: only axis 1, padded by 2 before and 1 after.
save('axes18', [const('pads', np.array([2, 1], np.int64)),
                const('axes', np.array([-1], np.int64)),
                helper.make_node('Pad', ['x', 'pads', '', 'axes'], ['y'])],
     [f32('x', [3, 4])], [f32('y', [3, 7])], opset=18)

# A parameter padded then weighted: d loss / d w = c on w's cells.
w = rng.standard_normal((2, 3)).astype(np.float32)
np.save(os.path.join(out, 'w.npy'), w)
save('train', [const('pads', np.array([1, 0, 0, 2], np.int64)),
               helper.make_node('Pad', ['w', 'pads'], ['p']),
               helper.make_node('Mul', ['p', 'c'], ['pc']),
               helper.make_node('ReduceSum', ['pc'], ['loss'], keepdims=0)],
     [f32('c', [3, 5])], [f32('loss', [])], [numpy_helper.from_array(w, 'w')])
np.save(os.path.join(out, 'c.npy'), rng.standard_normal((3, 5)).astype(np.float32))

# Unsupported: reflect mode; pads that are not constant.
save('reflect', [const('pads', np.array([1, 0, 1, 0], np.int64)),
                 helper.make_node('Pad', ['x', 'pads'], ['y'], mode='reflect')],
     [f32('x', [3, 4])], [f32('y', [5, 4])])
save('dynamic', [helper.make_node('Pad', ['x', 'pads'], ['y'])],
     [f32('x', [3, 4]), i64('pads', [4])], [f32('y', [4, 5])])
# pads of the wrong length; a crop larger than the axis.
save('badcount', [const('pads', np.array([1, 0, 0], np.int64)),
                  helper.make_node('Pad', ['x', 'pads'], ['y'])],
     [f32('x', [3, 4])], [f32('y', [4, 5])])
save('overcrop', [const('pads', np.array([0, -3, 0, -2], np.int64)),
                  helper.make_node('Pad', ['x', 'pads'], ['y'])],
     [f32('x', [3, 4])], [f32('y', [3, 0])])
# ... unless bound to a constant with --bind (an ONNX TensorProto file).
for name, value in [('pads', np.array([1, 0, 0, 1], np.int64)),
                    ('pads_f32', np.array([1, 0, 0, 1], np.float32)),
                    ('pads_short', np.array([1, 0], np.int64))]:
    with open(os.path.join(out, name + '.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(value).SerializeToString())
