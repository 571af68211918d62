#!/usr/bin/env python3
"""Checks that imported IR keeps every ONNX initializer under its name.

Usage: check_params.py MODEL.onnx IMPORTED.mlir

Float initializers must appear, in order, as `train.param = "<name>"`
function arguments with a `train.init` value of the initializer's shape;
integer initializers are constants and must not. Prints the first mismatch
and exits 1, or prints "N parameters ok".
"""
import re
import sys

import onnx
from onnx import TensorProto

FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
ARG_RE = re.compile(r'%arg\d+: tensor<([^>]*)> \{([^}]*)\}')


def main(model_path, ir_path):
    model = onnx.load(model_path, load_external_data=False)
    expected = [(init.name, list(init.dims)) for init in model.graph.initializer
                if init.data_type in FLOATS]
    ir = open(ir_path, encoding='utf-8').read()
    found = []
    for shape, attrs in ARG_RE.findall(ir):
        name = re.search(r'train\.param = "([^"]*)"', attrs)
        if not name:
            continue
        if 'train.init' not in attrs:
            print(f'parameter {name.group(1)!r} has no train.init value')
            return 1
        dims = [int(d) for d in shape.split('x')[:-1]]
        found.append((name.group(1), dims))
    if found != expected:
        for i, (want, got) in enumerate(zip(expected, found)):
            if want != got:
                print(f'parameter {i}: expected {want}, found {got}')
                return 1
        print(f'expected {len(expected)} parameters, found {len(found)}')
        return 1
    print(f'{len(found)} parameters ok')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
