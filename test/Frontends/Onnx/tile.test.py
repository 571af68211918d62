"""Writes Tile models for tile.test: a 3-D float tile repeating two dims (one
of them 1 -> many), GPT-J's rotary repeat of an int64 position table, a
trained parameter tiled, a zero repeat, and the unsupported cases."""
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


def save(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + '.onnx'))


f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
i64 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)

# f32 [2, 1, 3] tiled (2, 4, 1) -> [4, 4, 3].
save('tile3', [const('r', np.array([2, 4, 1], np.int64)),
               helper.make_node('Tile', ['x', 'r'], ['y'])],
     [f32('x', [2, 1, 3])], [f32('y', [4, 4, 3])])
np.save(os.path.join(out, 'x.npy'), rng.standard_normal((2, 1, 3)).astype(np.float32))

# int64 [1, 5] tiled (3, 2) -> [3, 10].
save('tileint', [const('r', np.array([3, 2], np.int64)),
                 helper.make_node('Tile', ['p', 'r'], ['q'])],
     [i64('p', [1, 5])], [i64('q', [3, 10])])
np.save(os.path.join(out, 'p.npy'), np.arange(5, dtype=np.int64).reshape(1, 5))

# A zero repeat: an empty output.
save('tilezero', [const('r', np.array([0, 2], np.int64)),
                  helper.make_node('Tile', ['p', 'r'], ['q'])],
     [i64('p', [1, 5])], [i64('q', [0, 10])])

# A parameter tiled then weighted: d loss / d w sums c over the copies.
w = rng.standard_normal((2, 3)).astype(np.float32)
c = rng.standard_normal((4, 6)).astype(np.float32)
np.save(os.path.join(out, 'c.npy'), c)
save('train', [const('r', np.array([2, 2], np.int64)),
               helper.make_node('Tile', ['w', 'r'], ['t']),
               helper.make_node('Mul', ['t', 'c'], ['m']),
               helper.make_node('ReduceSum', ['m'], ['loss'], keepdims=0)],
     [f32('c', [4, 6])], [f32('loss', [])], [numpy_helper.from_array(w, 'w')])

# repeats as a graph input (not a constant), and of the wrong length.
save('dynamic', [helper.make_node('Tile', ['x', 'r'], ['y'])],
     [f32('x', [2, 1, 3]), i64('r', [3])], [f32('y', [4, 4, 3])])
# A repeat whose product overflows, behind a zero (the output is empty
# but its other dimension must still be a valid size).
save('huge', [const('r', np.array([0, 2 ** 62], np.int64)),
              helper.make_node('Tile', ['p', 'r'], ['q'])],
     [i64('p', [1, 3])], [i64('q', [0, 3])])
save('negative', [const('r', np.array([1, -2], np.int64)),
                  helper.make_node('Tile', ['p', 'r'], ['q'])],
     [i64('p', [1, 3])], [i64('q', [1, 3])])
save('badcount', [const('r', np.array([2, 2], np.int64)),
                  helper.make_node('Tile', ['x', 'r'], ['y'])],
     [f32('x', [2, 1, 3])], [f32('y', [4, 1, 3])])
