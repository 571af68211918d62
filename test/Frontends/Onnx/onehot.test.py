"""ONNX OneHot against onnxruntime: along a new class axis of `depth`,
values[1] where the class is the index (a negative index counts from the
end), values[0] elsewhere, a row of values[0] for an index outside
[-depth, depth); float indices and depth are cast to int64 first.

    onehot.test.py DIR   writes, compiles, runs and checks under DIR;
                         exits 1 on any difference.

Then a training step whose loss is label-smoothed cross-entropy built on
OneHot (targets = OneHot(labels) * (1 - e) + e / C, loss = mean of
-sum(targets * LogSoftmax(logits))) trains, its gradient of the logits
against the formula in float64.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from op_harness import compile_and_run, expect_rejections, run

work = sys.argv[1]
rng = np.random.default_rng(5)
# (indices, depth, depth's type, values, axis), in the type combinations
# onnxruntime implements.
cases = [
    (rng.integers(-6, 9, (3, 4)).astype(np.int64), 5, np.int64,
     np.array([0, 1], np.float32), -1),
    (rng.integers(-4, 4, (2, 3)).astype(np.int32), 3, np.int32,
     np.array([-2, 7], np.float32), 0),
    (rng.integers(-1, 5, (2, 3, 2)).astype(np.int64), 4, np.int64,
     np.array([3, -5], np.int64), 1),
    (np.array([0.7, -1.2, 2.9, 3.0, -3.5], np.float32), 3.8, np.float32,
     np.array([0.25, 3.5], np.float32), -1),
    (np.array([[1.9, -0.5], [4.0, 2.0]], np.float32), 3, np.int64,
     np.array([0, 1], np.int64), 0),
    (np.array([2], np.int64), 4, np.int64, np.array([1, 0], np.float32), 0),
]
nodes, inputs, outputs, inits, feeds = [], [], [], [], {}
elem = {np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
        np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE}
for i, (indices, depth, depth_type, values, axis) in enumerate(cases):
    # depth a Constant node (a float initializer would be a weight).
    nodes.append(helper.make_node('Constant', [], [f'd{i}'], value=numpy_helper.from_array(
        np.array(depth, depth_type), f'd{i}')))
    nodes.append(helper.make_node('OneHot', [f'i{i}', f'd{i}', f'v{i}'], [f'y{i}'], axis=axis))
    inputs.append(helper.make_tensor_value_info(f'i{i}', elem[indices.dtype],
                                                list(indices.shape)))
    inits.append(numpy_helper.from_array(values, f'v{i}'))
    shape = list(indices.shape)
    shape.insert(axis % (indices.ndim + 1), int(depth))
    outputs.append(helper.make_tensor_value_info(f'y{i}', elem[values.dtype], shape))
    feeds[f'i{i}'] = indices
model = helper.make_model(helper.make_graph(nodes, 'onehot', inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid('', 17)])
onnx.checker.check_model(model)
path = os.path.join(work, 'onehot.onnx')
onnx.save(model, path)
out = compile_and_run(work, path, feeds)
wants = ort.InferenceSession(path, providers=['CPUExecutionProvider']).run(None, feeds)
ok = True
for i, want in enumerate(wants):
    got = np.load(os.path.join(out, f'y{i}.npy'))
    same = got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    print(f'OneHot {cases[i][0].shape} depth {cases[i][1]} axis {cases[i][4]}: '
          f'{"equal to onnxruntime" if same else f"FAIL {got} vs {want}"}')
    ok &= same

# Label smoothing on OneHot: the logits' gradient against the formula.
N, C, E = 4, 5, 0.1
logits = rng.normal(size=(N, C)).astype(np.float32)
labels = rng.integers(0, C, N).astype(np.int64)
smooth = helper.make_graph(
    [helper.make_node('Mul', ['x', 'w'], ['z']),
     helper.make_node('OneHot', ['labels', 'depth', 'values'], ['hot']),
     helper.make_node('Mul', ['hot', 'keep'], ['kept']),
     helper.make_node('Add', ['kept', 'spread'], ['targets']),
     helper.make_node('LogSoftmax', ['z'], ['logp'], axis=-1),
     helper.make_node('Mul', ['targets', 'logp'], ['terms']),
     helper.make_node('ReduceSum', ['terms', 'last'], ['rows'], keepdims=0),
     helper.make_node('ReduceMean', ['rows'], ['mean'], keepdims=0),
     helper.make_node('Neg', ['mean'], ['loss'])],
    'smooth',
    [helper.make_tensor_value_info('x', TensorProto.FLOAT, [N, C]),
     helper.make_tensor_value_info('labels', TensorProto.INT64, [N])],
    [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
    [numpy_helper.from_array(np.ones((N, C), np.float32), 'w'),
     numpy_helper.from_array(np.array(C, np.int64), 'depth'),
     numpy_helper.from_array(np.array([0, 1], np.float32), 'values'),
     numpy_helper.from_array(np.array(1 - E, np.float32), 'keep'),
     numpy_helper.from_array(np.array(E / C, np.float32), 'spread'),
     numpy_helper.from_array(np.array([-1], np.int64), 'last')])
spath = os.path.join(work, 'smooth.onnx')
onnx.save(helper.make_model(smooth, opset_imports=[helper.make_opsetid('', 17)]), spath)
out = compile_and_run(work, spath, {'x': logits, 'labels': labels},
                      ['--train', '--optimizer', 'none'], out=os.path.join(work, 'smooth.out'))
# (Float initializers are weights: w, and OneHot's values too.)
grad = np.load(os.path.join(out, 'w.grad.npy'))
z = logits.astype(np.float64)
p = np.exp(z - z.max(1, keepdims=True))
p /= p.sum(1, keepdims=True)
t = np.full((N, C), E / C)
hot = np.zeros((N, C), bool)
hot[np.arange(N), labels] = True
t[hot] += 1 - E
want = (p - t) / N * z  # d loss / d w = (p - t) / N * x, x = logits (w = 1)
worst = float(np.max(np.abs(grad - want)))
good = grad.shape == want.shape and worst <= 1e-6
print(f'label smoothing on OneHot: gradient within 1e-6 of the formula (worst {worst:.2e})'
      + ('' if good else ' FAIL'))
ok &= good
# values [off, on]: each gets keep * -log p / N summed where it was chosen.
logp = z - np.log(np.exp(z).sum(1, keepdims=True))
want_values = np.array([np.sum(-logp[~hot]), np.sum(-logp[hot])]) * (1 - E) / N
got_values = np.load(os.path.join(out, 'values.grad.npy'))
worst = float(np.max(np.abs(got_values - want_values)))
good = worst <= 1e-6
print(f'OneHot values\' gradient within 1e-6 of the formula (worst {worst:.2e})'
      + ('' if good else ' FAIL'))
ok &= good

# Errors: scalar indices (the specification's shape inference refuses
# them), depth not a constant or below 1, values not two elements.
dyn = helper.make_graph([helper.make_node('OneHot', ['i', 'd', 'v'], ['y'])], 'onehot_depth',
                        [helper.make_tensor_value_info('i', TensorProto.INT64, [3]),
                         helper.make_tensor_value_info('d', TensorProto.INT64, [])],
                        [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                        [numpy_helper.from_array(np.array([0, 1], np.float32), 'v')])
three = helper.make_graph([helper.make_node('OneHot', ['i', 'd', 'v'], ['y'])], 'onehot_values',
                          [helper.make_tensor_value_info('i', TensorProto.INT64, [3])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(4, np.int64), 'd'),
                           numpy_helper.from_array(np.array([0, 1, 2], np.float32), 'v')])
zero = helper.make_graph([helper.make_node('OneHot', ['i', 'd', 'v'], ['y'])], 'onehot_zero',
                         [helper.make_tensor_value_info('i', TensorProto.INT64, [3])],
                         [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                         [numpy_helper.from_array(np.array(0, np.int64), 'd'),
                          numpy_helper.from_array(np.array([0, 1], np.float32), 'v')])
scalar = helper.make_graph([helper.make_node('OneHot', ['i', 'd', 'v'], ['y'])],
                          'onehot_scalar',
                          [helper.make_tensor_value_info('i', TensorProto.INT64, [])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(4, np.int64), 'd'),
                           numpy_helper.from_array(np.array([0, 1], np.float32), 'v')])
ok &= expect_rejections(work, [
    ('onehot_scalar', scalar, 'indices must have rank 1 or more'),
    ('onehot_depth', dyn, 'depth (the number of classes)'),
    ('onehot_values', three, "values must be [off_value, on_value], got 'tensor<3xf32>'"),
    ('onehot_zero', zero, 'depth 0 is not a class count of at least 1')], 17)
sys.exit(0 if ok else 1)
