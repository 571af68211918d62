"""ONNX EyeLike against onnxruntime: offsets k below, on and above the
diagonal (beyond the matrix too), square and oblong shapes, the input's
type and a dtype attribute.

    eyelike.test.py DIR   writes, compiles, runs and checks under DIR;
                          exits 1 on any difference.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from op_harness import compile_and_run, expect_rejections

work = sys.argv[1]
cases = [((3, 5), k, None) for k in (-2, 0, 1, 4, 7)] + [
    ((4, 4), -1, TensorProto.INT64), ((5, 2), 0, TensorProto.DOUBLE), ((2, 6), -3, None)]
nodes, inputs, outputs, feeds = [], [], [], {}
for i, (shape, k, dtype) in enumerate(cases):
    attrs = {'k': k} | ({} if dtype is None else {'dtype': dtype})
    nodes.append(helper.make_node('EyeLike', [f'x{i}'], [f'y{i}'], **attrs))
    inputs.append(helper.make_tensor_value_info(f'x{i}', TensorProto.FLOAT, list(shape)))
    outputs.append(helper.make_tensor_value_info(f'y{i}', dtype or TensorProto.FLOAT, list(shape)))
    feeds[f'x{i}'] = np.random.default_rng(i).normal(size=shape).astype(np.float32)
model = helper.make_model(helper.make_graph(nodes, 'eyelike', inputs, outputs),
                          opset_imports=[helper.make_opsetid('', 17)])
onnx.checker.check_model(model)
path = os.path.join(work, 'eyelike.onnx')
onnx.save(model, path)
out = compile_and_run(work, path, feeds)
wants = ort.InferenceSession(path, providers=['CPUExecutionProvider']).run(None, feeds)
ok = True
for i, want in enumerate(wants):
    got = np.load(os.path.join(out, f'y{i}.npy'))
    same = got.dtype == want.dtype and np.array_equal(got, want)
    print(f'EyeLike {cases[i]}: {"equal to onnxruntime" if same else f"FAIL {got} vs {want}"}')
    ok &= same
# The 8-bit floats and 2-/4-bit integers are for Cast only: a clear error.
bad = helper.make_graph([helper.make_node('EyeLike', ['x'], ['y'], dtype=23)], 'eye_f4',
                        [helper.make_tensor_value_info('x', TensorProto.FLOAT, [3, 4])],
                        [helper.make_tensor_value_info('y', 23, [3, 4])])
rank3 = helper.make_graph([helper.make_node('EyeLike', ['x'], ['y'])], 'eye_rank3',
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 3, 4])])
ok &= expect_rejections(work, [('eye_f4', bad, 'dtype FLOAT4E2M1 is not supported by EyeLike'),
                               ('eye_rank3', rank3, "the input must be a matrix, got 'tensor<2x3x4xf32>'")],
                        22)
sys.exit(0 if ok else 1)
