"""Models for narrow_ints.test: unsigned and narrow integer arithmetic,
comparisons and casts (also to 8-bit floats and INT4), each built twice: on graph inputs (the runtime's
kernels) and on Constant nodes (the graph dialect's folders), against
onnxruntime and, where ONNX leaves a cast undefined, against trainc's
documented saturation.

    narrow_ints.test.py make DIR      writes the models, inputs, expectations
    narrow_ints.test.py check DIR M   compares DIR/<output>.npy
"""
import os
import sys

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

NP_TO_ONNX = {np.dtype(t): helper.np_dtype_to_tensor_dtype(np.dtype(t))
              for t in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.uint64,
                        np.int64, np.float32, bool)}

# Values around the 8-bit formats' ranges and rounding ties.
F8_IN = np.array([0.4789, 1e6, -500.0, 1e-7, 0.0, -0.0, 17.0, 2.25, 464.0, 470.0, 60000.0,
                  np.inf, -np.inf, np.nan], np.float32)

# name: (op, attributes, inputs, output dtype, expected or None for onnxruntime)
CASES = {
    # 200 / 3 = 66 unsigned (a signed division of the byte would give -18).
    'div_u8': ('Div', {}, [np.array([200, 255, 7], np.uint8), np.array([3, 2, 7], np.uint8)],
               np.uint8, None),
    'div_i8': ('Div', {}, [np.array([-128, -7, 100], np.int8), np.array([3, 2, -7], np.int8)],
               np.int8, None),
    'less_u8': ('Less', {}, [np.array([200, 1, 128], np.uint8), np.array([100, 255, 127], np.uint8)],
                bool, None),
    'max_u64': ('Max', {}, [np.array([2**63 + 5, 1], np.uint64), np.array([7, 2**64 - 1], np.uint64)],
                np.uint64, None),
    'sub_u16': ('Sub', {}, [np.array([1, 65535], np.uint16), np.array([2, 1], np.uint16)],
                np.uint16, None),
    'mul_i16': ('Mul', {}, [np.array([300, -300], np.int16), np.array([300, 2], np.int16)],
                np.int16, None),
    # Widening: int8 sign-extends, uint8 and uint32 zero-extend.
    'cast_i8_i64': ('Cast', {'to': onnx.TensorProto.INT64},
                    [np.array([-5, 127, -128], np.int8)], np.int64, None),
    'cast_u8_i64': ('Cast', {'to': onnx.TensorProto.INT64},
                    [np.array([200, 0, 255], np.uint8)], np.int64, None),
    'cast_u32_f32': ('Cast', {'to': onnx.TensorProto.FLOAT},
                     [np.array([4000000000, 3], np.uint32)], np.float32, None),
    'cast_u64_f32': ('Cast', {'to': onnx.TensorProto.FLOAT},
                     [np.array([2**64 - 1, 2**63], np.uint64)], np.float32, None),
    'cast_f32_u8': ('Cast', {'to': onnx.TensorProto.UINT8},
                    [np.array([3.7, 0.0, 254.9], np.float32)], np.uint8, None),
    # Out of range: undefined in ONNX; trainc truncates and saturates.
    'cast_f32_u8_saturate': ('Cast', {'to': onnx.TensorProto.UINT8},
                             [np.array([-5.0, 300.0, np.nan, -0.5], np.float32)], np.uint8,
                             np.array([0, 255, 0, 0], np.uint8)),
    'cast_f32_u64_saturate': ('Cast', {'to': onnx.TensorProto.UINT64},
                              [np.array([1e30, -1.0, 1.5e19], np.float32)], np.uint64,
                              np.array([2**64 - 1, 0, int(np.float32(1.5e19))], np.uint64)),
    # Storage-only types: the bit patterns ml_dtypes gives (round to nearest
    # even), after ONNX's saturation to the largest finite value.
    'cast_f32_f8e4m3fn': ('Cast', {'to': onnx.TensorProto.FLOAT8E4M3FN},
                          [F8_IN], np.uint8,
                          np.clip(F8_IN, -448, 448).astype(ml_dtypes.float8_e4m3fn)
                          .view(np.uint8)),
    'cast_f32_f8e5m2_no_saturate': ('Cast', {'to': onnx.TensorProto.FLOAT8E5M2, 'saturate': 0},
                                    [F8_IN], np.uint8,
                                    F8_IN.astype(ml_dtypes.float8_e5m2).view(np.uint8)),
    'cast_f32_f8e4m3fnuz': ('Cast', {'to': onnx.TensorProto.FLOAT8E4M3FNUZ},
                            [F8_IN], np.uint8,
                            np.clip(F8_IN, -240, 240).astype(ml_dtypes.float8_e4m3fnuz)
                            .view(np.uint8)),
    # -9 wraps to 7, as ONNX's reference does.
    'cast_f32_i4': ('Cast', {'to': onnx.TensorProto.INT4},
                    [np.array([-9.0, -8.0, 7.9, 3.0], np.float32)], np.int8,
                    np.array([7, -8, 7, 3], np.int8)),
}


def build(name, folded):
    op, attrs, inputs, out_dtype, _ = CASES[name]
    names = [f'x{i}' for i in range(len(inputs))]
    nodes, graph_inputs = [], []
    for n, v in zip(names, inputs):
        if folded:
            nodes.append(helper.make_node('Constant', [], [n], value=numpy_helper.from_array(v, n)))
        else:
            graph_inputs.append(helper.make_tensor_value_info(n, NP_TO_ONNX[v.dtype], list(v.shape)))
    nodes.append(helper.make_node(op, names, ['y'], **attrs))
    out_type = attrs.get('to', NP_TO_ONNX[np.dtype(out_dtype)])
    graph = helper.make_graph(nodes, name, graph_inputs, [
        helper.make_tensor_value_info('y', out_type, list(inputs[0].shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 21)])
    onnx.checker.check_model(model)
    return model


def make(out):
    for name, (_, _, inputs, _, expected) in CASES.items():
        for folded in (False, True):
            tag = name + ('_folded' if folded else '')
            onnx.save(build(name, folded), os.path.join(out, tag + '.onnx'))
        for i, v in enumerate(inputs):
            np.save(os.path.join(out, f'{name}.x{i}.npy'), v)
        if expected is None:
            session = ort.InferenceSession(os.path.join(out, name + '.onnx'),
                                           providers=['CPUExecutionProvider'])
            expected = session.run(None, {f'x{i}': v for i, v in enumerate(inputs)})[0]
        np.save(os.path.join(out, f'{name}.expected.npy'), expected)


def check(out, tag):
    name = tag.removesuffix('_folded')
    got = np.load(os.path.join(out, tag, 'y.npy'))
    want = np.load(os.path.join(out, f'{name}.expected.npy'))
    assert got.dtype == want.dtype, (tag, got.dtype, want.dtype)
    float8 = {onnx.TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
              onnx.TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
              onnx.TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2}.get(CASES[name][1].get('to'))
    if float8:  # bit patterns, but NaN has several
        g, w = got.view(float8).astype(np.float32), want.view(float8).astype(np.float32)
        assert np.array_equal(g, w, equal_nan=True), (tag, got, want)
    else:
        assert np.array_equal(got, want), (tag, got, want)
    print(f'{tag}: ok {got.tolist()}')


if __name__ == '__main__':
    if sys.argv[1] == 'make':
        make(sys.argv[2])
    elif sys.argv[1] == 'list':
        print(' '.join(CASES))
    else:
        check(sys.argv[2], sys.argv[3])
