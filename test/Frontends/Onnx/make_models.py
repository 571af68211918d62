#!/usr/bin/env python3
"""Writes small ONNX models for the importer's error-path lit tests.

Usage: make_models.py OUTPUT_DIR

Each model isolates one thing the importer must diagnose or handle (opset 17
and IR version 8 unless noted):

  unsupported_op.onnx          an LpPool node 'pool0': an op trainc does not read
  value_shaped_op.onnx         a NonZero node 'nz': an op whose output's shape
                               depends on its input's values
  custom_domain.onnx           FusedMatMul 'fmm' of domain com.microsoft
  symbolic_batch.onnx          Gather of an initializer by int64 tokens
                               ["batch", 16]: needs --input-shape
  opset_too_old.onnx           a valid Add model at opset 9
  complex_input.onnx           a COMPLEX64 graph input through Identity
  undefined_input.onnx         an Add whose second input 'missing' is
                               never defined
  external_data/model.onnx     MatMul x[2,4] @ 'proj.weight'[4,3], the weight
                               in external data file weights.bin
  external_missing/model.onnx  the same with weights.bin deleted
  bad_reshape.onnx             Reshape of a [2,3] input to the constant shape
                               [4,2] (element counts differ)
  matrix_repeats.onnx          Tile 'tile' whose repeats are [[1, 2]] (2-D), as
                               the TorchScript exporter wrote in Mamba
  gather_out_of_range.onnx     Gather 'gather' of row 3 of a [3, 2] input
  non_utf8_name.onnx           the projection's weight named with a Latin-1
                               byte ('proj.w\\xe9ight'), not UTF-8

The output is deterministic and nothing is printed on success.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def make_model(nodes, inputs, outputs, initializers=(), opset=OPSET,
               extra_opsets=()):
    graph = helper.make_graph(nodes, 'g', inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid('', opset)] + list(extra_opsets)
    return helper.make_model(graph, opset_imports=opsets, ir_version=IR_VERSION,
                             producer_name='make_models.py')


def float_input(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def ramp(name, shape):
    """A float32 initializer holding 0, 0.1, 0.2, ... in row-major order."""
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10
    return numpy_helper.from_array(values, name)


def value_shaped_op():
    return make_model(
        [helper.make_node('NonZero', ['X'], ['Y'], name='nz')],
        [float_input('X', [2, 3])],
        [helper.make_tensor_value_info('Y', TensorProto.INT64, [2, None])])


def unsupported_op():
    return make_model(
        [helper.make_node('LpPool', ['X'], ['Y'], name='pool0',
                          kernel_shape=[2, 2], strides=[2, 2])],
        [float_input('X', [1, 1, 4, 4])], [float_input('Y', [1, 1, 2, 2])])


def custom_domain():
    return make_model(
        [helper.make_node('FusedMatMul', ['A', 'B'], ['Y'], name='fmm',
                          domain='com.microsoft')],
        [float_input('A', [2, 3]), float_input('B', [3, 4])],
        [float_input('Y', [2, 4])],
        extra_opsets=[helper.make_opsetid('com.microsoft', 1)])


def symbolic_batch():
    tokens = helper.make_tensor_value_info('tokens', TensorProto.INT64,
                                           ['batch', 16])
    return make_model(
        [helper.make_node('Gather', ['wte', 'tokens'], ['emb'], name='embed')],
        [tokens], [float_input('emb', ['batch', 16, 8])], [ramp('wte', [32, 8])])


def opset_too_old():
    return make_model(
        [helper.make_node('Add', ['a', 'b'], ['sum'], name='add')],
        [float_input('a', [4]), float_input('b', [4])], [float_input('sum', [4])],
        opset=9)


def complex_input():
    return make_model(
        [helper.make_node('Identity', ['x'], ['y'], name='id')],
        [helper.make_tensor_value_info('x', TensorProto.COMPLEX64, [4])],
        [helper.make_tensor_value_info('y', TensorProto.COMPLEX64, [4])])


def undefined_input():
    return make_model(
        [helper.make_node('Add', ['x', 'missing'], ['y'], name='add')],
        [float_input('x', [4])], [float_input('y', [4])])


def projection():
    return make_model(
        [helper.make_node('MatMul', ['x', 'proj.weight'], ['y'], name='proj')],
        [float_input('x', [2, 4])], [float_input('y', [2, 3])],
        [ramp('proj.weight', [4, 3])])


def bad_reshape():
    shape = helper.make_node(
        'Constant', [], ['shape'], name='shape',
        value=numpy_helper.from_array(np.array([4, 2], dtype=np.int64)))
    return make_model(
        [shape, helper.make_node('Reshape', ['x', 'shape'], ['y'], name='reshape')],
        [float_input('x', [2, 3])], [float_input('y', [4, 2])])


def matrix_repeats():
    repeats = helper.make_node(
        'Constant', [], ['rep'], name='rep',
        value=numpy_helper.from_array(np.array([[1, 2]], dtype=np.int64)))
    return make_model(
        [repeats, helper.make_node('Tile', ['x', 'rep'], ['y'], name='tile')],
        [float_input('x', [2, 3])], [float_input('y', [2, 6])])


def gather_out_of_range():
    rows = helper.make_node(
        'Constant', [], ['rows'], name='rows',
        value=numpy_helper.from_array(np.array([0, 3], dtype=np.int64)))
    return make_model(
        [rows, helper.make_node('Gather', ['x', 'rows'], ['y'], name='gather')],
        [float_input('x', [3, 2])], [float_input('y', [2, 2])])


def dropout_model(training_mode):
    """MatMul, a Dropout of ratio 0.1 and the sum as the loss; the Dropout
    has a training_mode input when `training_mode` is not None (as PyTorch
    writes nn.Dropout), else none (as both PyTorch exporters write
    scaled_dot_product_attention's dropout_p)."""
    def constant(name, value):
        return helper.make_node('Constant', [], [name], name=name,
                                value=numpy_helper.from_array(value, name))
    nodes = [helper.make_node('MatMul', ['x', 'proj.weight'], ['y'], name='proj'),
             constant('ratio', np.array(0.1, np.float32))]
    inputs = ['y', 'ratio']
    if training_mode is not None:
        nodes.append(constant('mode', np.array(training_mode)))
        inputs.append('mode')
    nodes += [helper.make_node('Dropout', inputs, ['d'], name='attn_drop'),
              helper.make_node('ReduceSum', ['d'], ['loss'], name='sum', keepdims=0)]
    return make_model(nodes, [float_input('x', [2, 4])], [float_input('loss', [])],
                      [ramp('proj.weight', [4, 3])])


def save_with_external_weights(model, directory):
    """Saves directory/model.onnx with every initializer in weights.bin."""
    os.makedirs(directory, exist_ok=True)
    weights = os.path.join(directory, 'weights.bin')
    # onnx appends to an existing data file: start from none.
    if os.path.exists(weights):
        os.remove(weights)
    onnx.save_model(model, os.path.join(directory, 'model.onnx'),
                    save_as_external_data=True, all_tensors_to_one_file=True,
                    location='weights.bin', size_threshold=0)
    return weights


def bad_class_weights():
    """SoftmaxCrossEntropyLoss with 3 class weights for 4 classes."""
    labels = helper.make_tensor_value_info('labels', TensorProto.INT64, [2])
    return make_model(
        [helper.make_node('SoftmaxCrossEntropyLoss', ['scores', 'labels', 'w'],
                          ['loss'], name='sce')],
        [float_input('scores', [2, 4]), labels, float_input('w', [3])],
        [float_input('loss', [])])


def non_utf8_name():
    """projection() with its weight named 'proj.w\\xe9ight' (Latin-1, not
    UTF-8), as serialized bytes: Python's protobuf writes only str names."""
    model = projection()
    model.graph.initializer[0].name = 'proj.wXight'
    model.graph.node[0].input[1] = 'proj.wXight'
    return model.SerializeToString().replace(b'proj.wXight', b'proj.w\xe9ight')


def main():
    if len(sys.argv) != 2:
        sys.exit(f'usage: {sys.argv[0]} OUTPUT_DIR')
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    for name, build in [('unsupported_op', unsupported_op),
                        ('value_shaped_op', value_shaped_op),
                        ('custom_domain', custom_domain),
                        ('symbolic_batch', symbolic_batch),
                        ('opset_too_old', opset_too_old),
                        ('complex_input', complex_input),
                        ('undefined_input', undefined_input),
                        ('bad_reshape', bad_reshape),
                        ('matrix_repeats', matrix_repeats),
                        ('gather_out_of_range', gather_out_of_range),
                        ('bad_class_weights', bad_class_weights),
                        ('modeless_dropout', lambda: dropout_model(None)),
                        ('training_dropout', lambda: dropout_model(True))]:
        onnx.save_model(build(), os.path.join(out, name + '.onnx'))

    with open(os.path.join(out, 'non_utf8_name.onnx'), 'wb') as f:
        f.write(non_utf8_name())
    save_with_external_weights(projection(), os.path.join(out, 'external_data'))
    os.remove(save_with_external_weights(projection(),
                                         os.path.join(out, 'external_missing')))


if __name__ == '__main__':
    main()
