"""A model as the dynamo exporter writes a module with a buffer: the
initializer `rotary.inv_freq` carries metadata_props InputSpec.kind=BUFFER
on its ValueInfoProto, `w` kind=PARAMETER; `plain` has no metadata."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KIND = 'pkg.torch.export.graph_signature.InputSpec.kind'


def info(name, kind):
    v = helper.make_tensor_value_info(name, TensorProto.FLOAT, [4])
    v.metadata_props.add(key=KIND, value=kind)
    return v


nodes = [helper.make_node('Mul', ['x', 'rotary.inv_freq'], ['a']),
         helper.make_node('Mul', ['a', 'w'], ['b']),
         helper.make_node('Mul', ['b', 'plain'], ['c']),
         helper.make_node('ReduceSum', ['c'], ['loss'], keepdims=0)]
inits = [numpy_helper.from_array(np.full(4, v, np.float32), n)
         for n, v in (('rotary.inv_freq', 0.5), ('w', 2.0), ('plain', 3.0))]
graph = helper.make_graph(nodes, 'buffers',
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info('loss', TensorProto.FLOAT, [])],
                          inits, value_info=[info('rotary.inv_freq', 'BUFFER'),
                                             info('w', 'PARAMETER')])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)])
onnx.checker.check_model(model)
onnx.save(model, os.path.join(sys.argv[1], 'buffers.onnx'))
