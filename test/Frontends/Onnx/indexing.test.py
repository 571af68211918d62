"""Models for indexing.test: GatherElements, GatherND, ScatterND,
SplitToSequence/SequenceAt, CumSum, IsNaN/IsInf as PyTorch's exporters emit them,
with onnxruntime's outputs as the reference, a gradient through
GatherElements, and the unsupported forms.

    indexing.test.py make DIR     writes DIR/<model>.onnx, inputs, expected
    indexing.test.py check DIR M  compares DIR/<output>.npy with onnxruntime
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

i64 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)
f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
b1 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.BOOL, s)
rng = np.random.default_rng(0)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


# name: (nodes, inputs {name: array}, outputs [value infos], initializers)
MODELS = {
    # axis 1 with negative indices, indices narrower than the data.
    'gather_elements': (
        [helper.make_node('GatherElements', ['data', 'idx'], ['y'], axis=1)],
        {'data': rng.standard_normal((3, 4)).astype(np.float32),
         'idx': np.array([[0, -1], [3, 1], [-4, 2]], np.int64)},
        [f32('y', [3, 2])], []),
    # axis 0 with constant (initializer) int32 indices, as BERT's token types.
    'gather_elements_const': (
        [helper.make_node('GatherElements', ['data', 'idx'], ['y'], axis=0)],
        {'data': rng.standard_normal((3, 4)).astype(np.float32)},
        [f32('y', [2, 4])], [init('idx', np.array([[2, 0, 1, 2], [0, 0, -1, 1]], np.int32))]),
    # K = 2 of rank-3 data: rows of the last dimension; negative indices.
    'gather_nd': (
        [helper.make_node('GatherND', ['data', 'idx'], ['y'])],
        {'data': rng.standard_normal((2, 3, 4)).astype(np.float32),
         'idx': np.array([[0, 0], [1, 2], [-1, -3], [0, 1], [1, 0]], np.int64)},
        [f32('y', [5, 4])], []),
    # K = rank: single elements, of a bool tensor (the dynamo exporter's
    # padding mask lookup).
    'gather_nd_bool': (
        [helper.make_node('GatherND', ['data', 'idx'], ['y'])],
        {'data': rng.random((2, 5)) > 0.5,
         'idx': np.array([[[0, 4], [1, 1]], [[1, 0], [0, 2]]], np.int64)},
        [b1('y', [2, 2])], []),
    # T5's _shift_right: ids[:, 1:] = ids[:, :-1] written with ScatterND.
    'scatter_nd_shift': (
        [helper.make_node('ScatterND', ['data', 'idx', 'upd'], ['y'])],
        {'data': np.zeros((2, 6), np.int64),
         'upd': rng.integers(0, 50, (2, 5)).astype(np.int64)},
        [i64('y', [2, 6])],
        [init('idx', np.array([[[b, j + 1] for j in range(5)] for b in range(2)], np.int64))]),
    # Whole rows (K = 1 of rank 2), a negative index, floats.
    'scatter_nd_rows': (
        [helper.make_node('ScatterND', ['data', 'idx', 'upd'], ['y'])],
        {'data': rng.standard_normal((4, 3)).astype(np.float32),
         'upd': rng.standard_normal((2, 3)).astype(np.float32)},
        [f32('y', [4, 3])], [init('idx', np.array([[-1], [1]], np.int64))]),
    # BART's shift_tokens_right as the dynamo exporter writes it
    # (select_scatter: column 0 of every row set to the start token).
    'scatter_elements_column': (
        [helper.make_node('ScatterElements', ['data', 'idx', 'upd'], ['y'], axis=1)],
        {'data': rng.integers(0, 50, (2, 6)).astype(np.int64),
         'upd': np.array([[2], [2]], np.int64)},
        [i64('y', [2, 6])], [init('idx', np.array([[0], [0]], np.int64))]),
    # Axis 0 of floats: negative indices, a partial index tensor (fewer
    # columns than the data), and a repeated target (the last update wins,
    # as in onnxruntime).
    'scatter_elements_rows': (
        [helper.make_node('ScatterElements', ['data', 'idx', 'upd'], ['y'], axis=0)],
        {'data': rng.standard_normal((4, 3)).astype(np.float32),
         'upd': rng.standard_normal((3, 2)).astype(np.float32)},
        [f32('y', [4, 3])],
        [init('idx', np.array([[-1, 0], [1, 2], [1, 3]], np.int64))]),
    # GPT-2's dynamo export splits c_attn into q, k, v through a sequence.
    'sequence': (
        [helper.make_node('SplitToSequence', ['x', 'sizes'], ['s'], axis=1),
         helper.make_node('SequenceAt', ['s', 'one'], ['a']),
         helper.make_node('SplitToSequence', ['x'], ['rows'], axis=0, keepdims=0),
         helper.make_node('SequenceAt', ['rows', 'last'], ['b']),
         helper.make_node('SplitToSequence', ['x', 'chunk'], ['c'], axis=1),
         helper.make_node('SequenceAt', ['c', 'one'], ['c1'])],
        {'x': rng.standard_normal((4, 6)).astype(np.float32)},
        [f32('a', [4, 4]), f32('b', [6]), f32('c1', [4, 2])],
        [init('sizes', np.array([2, 4], np.int64)), init('one', np.array(1, np.int64)),
         init('last', np.array(-1, np.int64)), init('chunk', np.array(4, np.int64))]),
    # Position ids from an attention mask (cumsum - 1), and a float running
    # sum in reverse, exclusive, over an axis that is not a power of two.
    'cumsum': (
        [helper.make_node('CumSum', ['mask', 'last'], ['pos']),
         helper.make_node('CumSum', ['x', 'first'], ['rx'], reverse=1, exclusive=1)],
        {'mask': np.array([[1, 1, 1, 1, 1, 0, 0], [0, 1, 1, 1, 1, 1, 1]], np.int64),
         'x': rng.integers(-8, 8, (5, 3)).astype(np.float32)},
        [i64('pos', [2, 7]), f32('rx', [5, 3])],
        [init('last', np.array(-1, np.int64)), init('first', np.array(0, np.int32))]),
    'isnan_isinf': (
        [helper.make_node('IsNaN', ['x'], ['nan']),
         helper.make_node('IsInf', ['x'], ['inf']),
         helper.make_node('IsInf', ['x'], ['posinf'], detect_negative=0),
         helper.make_node('IsInf', ['x'], ['neginf'], detect_positive=0)],
        {'x': np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -2.5], np.float32)},
        [b1('nan', [6]), b1('inf', [6]), b1('posinf', [6]), b1('neginf', [6])], []),
}


def save(out, name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, name + '.onnx'))


def value_info(name, array):
    kind = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
            np.dtype(bool): TensorProto.BOOL}[array.dtype]
    return helper.make_tensor_value_info(name, kind, list(array.shape))


def make(out):
    for name, (nodes, inputs, outputs, inits) in MODELS.items():
        save(out, name, nodes, [value_info(k, v) for k, v in inputs.items()], outputs, inits)
        for k, v in inputs.items():
            np.save(os.path.join(out, f'{name}.{k}.npy'), v)
        session = ort.InferenceSession(os.path.join(out, name + '.onnx'),
                                       providers=['CPUExecutionProvider'])
        for info, value in zip(outputs, session.run(None, inputs)):
            np.save(os.path.join(out, f'{name}.{info.name}.expected.npy'), value)

    # A gradient through GatherElements: loss = sum(c * w[idx, :]) by
    # GatherElements on axis 0, so d loss / d w accumulates c into the rows
    # the indices pick (twice for a repeated index).
    w = rng.standard_normal((3, 4)).astype(np.float32)
    idx = np.array([[2, 0, 1, 2], [2, 1, 1, 0]], np.int64)
    save(out, 'train', [helper.make_node('GatherElements', ['w', 'idx'], ['g'], axis=0),
                        helper.make_node('Mul', ['g', 'c'], ['gc']),
                        helper.make_node('ReduceSum', ['gc'], ['loss'], keepdims=0)],
         [f32('c', [2, 4])], [f32('loss', [])], [init('w', w), init('idx', idx)])
    c = rng.standard_normal((2, 4)).astype(np.float32)
    np.save(os.path.join(out, 'train.c.npy'), c)
    grad = np.zeros_like(w)
    for i in range(2):
        for j in range(4):
            grad[idx[i, j], j] += c[i, j]
    np.save(os.path.join(out, 'train.w.grad.expected.npy'), grad)

    # Unsupported forms.
    x = f32('x', [3, 4])
    save(out, 'batch_dims', [helper.make_node('GatherND', ['x', 'i'], ['y'], batch_dims=1)],
         [x, i64('i', [3, 1])], [f32('y', [3])])
    save(out, 'scatter_dynamic', [helper.make_node('ScatterND', ['x', 'i', 'u'], ['y'])],
         [x, i64('i', [1, 1]), f32('u', [1, 4])], [f32('y', [3, 4])])
    save(out, 'scatter_add', [helper.make_node('ScatterND', ['x', 'i', 'u'], ['y'],
                                               reduction='add')],
         [x, f32('u', [1, 4])], [f32('y', [3, 4])], [init('i', np.array([[0]], np.int64))])
    save(out, 'scatter_elements_dynamic',
         [helper.make_node('ScatterElements', ['x', 'i', 'u'], ['y'], axis=1)],
         [x, i64('i', [3, 1]), f32('u', [3, 1])], [f32('y', [3, 4])])
    save(out, 'scatter_elements_max',
         [helper.make_node('ScatterElements', ['x', 'i', 'u'], ['y'], axis=1,
                           reduction='max')],
         [x, f32('u', [3, 1])], [f32('y', [3, 4])],
         [init('i', np.array([[0], [1], [2]], np.int64))], opset=18)
    save(out, 'scatter_elements_shape',
         [helper.make_node('ScatterElements', ['x', 'i', 'u'], ['y'], axis=1)],
         [x, f32('u', [3, 2])], [f32('y', [3, 4])],
         [init('i', np.array([[0], [1], [2]], np.int64))])
    save(out, 'scatter_elements_types',
         [helper.make_node('ScatterElements', ['x', 'i', 'u'], ['y'], axis=1)],
         [x, i64('u', [3, 1])], [f32('y', [3, 4])],
         [init('i', np.array([[0], [1], [2]], np.int64))])
    save(out, 'scatter_elements_range',
         [helper.make_node('ScatterElements', ['x', 'i', 'u'], ['y'], axis=1)],
         [x, f32('u', [3, 1])], [f32('y', [3, 4])],
         [init('i', np.array([[0], [-5], [2]], np.int64))])
    save(out, 'out_of_range', [helper.make_node('GatherElements', ['x', 'i'], ['y'], axis=1)],
         [x], [f32('y', [3, 1])], [init('i', np.array([[0], [4], [1]], np.int64))])
    save(out, 'bad_position', [helper.make_node('SplitToSequence', ['x'], ['s'], axis=0),
                               helper.make_node('SequenceAt', ['s', 'p'], ['y'])],
         [x], [f32('y', [1, 4])], [init('p', np.array(3, np.int64))])
    save(out, 'sequence_use', [helper.make_node('SplitToSequence', ['x'], ['s'], axis=0),
                               helper.make_node('Identity', ['s'], ['y'])],
         [x], [f32('y', [1, 4])])


def check(out, name):
    outputs = MODELS[name][2] if name in MODELS else [f32('w.grad', [3, 4])]
    for info in outputs:
        got = np.load(os.path.join(out, f'{info.name}.npy'))
        want = np.load(os.path.join(out, f'{name}.{info.name}.expected.npy'))
        assert got.dtype == want.dtype and got.shape == want.shape, \
            (name, info.name, got.dtype, got.shape, want.dtype, want.shape)
        # Data movement is exact; the gradient sums at most two terms.
        ok = np.array_equal(got, want) if name != 'train' else np.allclose(got, want, 1e-6, 1e-6)
        assert ok, (name, info.name, got, want)
    print(f'{name}: ok')


if __name__ == '__main__':
    make(sys.argv[2]) if sys.argv[1] == 'make' else check(sys.argv[2], sys.argv[3])
