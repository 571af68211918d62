"""ONNX DepthToSpace and SpaceToDepth against onnxruntime.

    depth_to_space.test.py DIR   exits 1 on any failure.

Both move elements without arithmetic, so Y must equal onnxruntime's
exactly (int32 too, against onnxruntime's float32 result on the same
integers: it has no int32 kernels for these ops). The gradient of sum(Y * c) is c moved back: feeding
onnxruntime X = 0, 1, 2, ... gives, for every output position, the input
position it reads, and dL/dX[that position] must equal c there exactly.
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from op_harness import WeightedLoss, compile_and_run, expect_rejections, run_checks

OPSET = 18
RNG = np.random.default_rng(81)

CASES = {
    'd2s_dcr': ('DepthToSpace', (2, 8, 3, 2), dict(blocksize=2)),
    'd2s_crd': ('DepthToSpace', (1, 18, 2, 3), dict(blocksize=3, mode='CRD')),
    's2d': ('SpaceToDepth', (2, 3, 4, 6), dict(blocksize=2)),
}


def onnxruntime(op, attrs, x, elem):
    model = helper.make_model(helper.make_graph(
        [helper.make_node(op, ['x'], ['y'], **attrs)], 'g',
        [helper.make_tensor_value_info('x', elem, list(x.shape))],
        [helper.make_tensor_value_info('y', elem, None)]),
        opset_imports=[helper.make_opsetid('', OPSET)])
    session = ort.InferenceSession(model.SerializeToString(), providers=['CPUExecutionProvider'])
    return session.run(None, {'x': x})[0]


def forward(work):
    ok = True
    for name, (op, shape, attrs) in CASES.items():
        for dt, elem in ((np.float32, TensorProto.FLOAT), (np.int32, TensorProto.INT32)):
            x = (RNG.standard_normal(shape) * 100).astype(dt)
            model = helper.make_model(helper.make_graph(
                [helper.make_node(op, ['x'], ['y'], **attrs)], name,
                [helper.make_tensor_value_info('x', elem, list(shape))],
                [helper.make_tensor_value_info('y', elem, None)]),
                opset_imports=[helper.make_opsetid('', OPSET)])
            path = os.path.join(work, f'{name}_{np.dtype(dt).name}.onnx')
            onnx.save(model, path)
            got = np.load(os.path.join(compile_and_run(work, path, {'x': x}), 'y.npy'))
            # onnxruntime has no int32 kernels for these: its float32 result
            # on the same (exactly representable) values.
            want = onnxruntime(op, attrs, x.astype(np.float32), TensorProto.FLOAT).astype(dt)
            same = got.dtype == want.dtype and np.array_equal(got, want)
            print(f'{name} {np.dtype(dt).name}: Y {got.shape} {"equal ok" if same else "FAIL"}')
            ok &= same
    return ok


def gradients(work):
    loss = WeightedLoss()
    nodes, params = [], []
    for name, (op, shape, attrs) in CASES.items():
        x = RNG.standard_normal(shape).astype(np.float32)
        nodes.append(helper.make_node(op, [f'x_{name}'], [f'y_{name}'], **attrs))
        params.append(numpy_helper.from_array(x, f'x_{name}'))
        y_shape = onnxruntime(op, attrs, x, TensorProto.FLOAT).shape
        loss.add(f'y_{name}', RNG.uniform(0.5, 1.0, y_shape).astype(np.float32))
    out = loss.gradients(work, nodes, params, OPSET)
    ok = True
    for name, (op, shape, attrs) in CASES.items():
        index = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        source = onnxruntime(op, attrs, index, TensorProto.FLOAT).astype(np.int64)
        want = np.zeros(int(np.prod(shape)), np.float32)
        want[source.reshape(-1)] = loss.feeds[f'c_y_{name}'].reshape(-1)
        got = np.load(os.path.join(out, f'x_{name}.grad.npy'))
        same = np.array_equal(got, want.reshape(shape))
        print(f'{name}: X.grad {"equal ok" if same else "FAIL"}')
        ok &= same
    return ok


def errors(work):
    f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)

    def graph(op, attrs, shape):
        return helper.make_graph([helper.make_node(op, ['x'], ['y'], **attrs)], 'g',
                                 [f32('x', list(shape))], [f32('y', None)])
    cases = [
        ('channels', graph('DepthToSpace', dict(blocksize=2), (1, 6, 2, 2)),
         'divisible by blocksize^2 (4)'),
        ('mode', graph('DepthToSpace', dict(blocksize=2, mode='XYZ'), (1, 8, 2, 2)),
         "mode 'XYZ' is not DCR or CRD"),
        ('spatial', graph('SpaceToDepth', dict(blocksize=2), (1, 2, 3, 4)),
         'divisible by the blocksize 2'),
        ('rank', graph('SpaceToDepth', dict(blocksize=2), (2, 4, 4)), 'needs X [N, C, H, W]'),
    ]
    return expect_rejections(work, cases, OPSET)


def main():
    run_checks(forward, gradients, errors)


if __name__ == '__main__':
    main()
