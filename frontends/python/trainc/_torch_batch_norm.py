"""Batch norms in training mode through torch.export's ONNX exporter.

torch.export records a training-mode batch norm as
aten._native_batch_norm_legit_functional(x, weight, bias, running_mean,
running_var, training, momentum, eps) -> (y, mean, rstd, new_running_mean,
new_running_var). The exporter's own translation (onnxscript's torchlib,
0.7) writes it as an inference-mode BatchNormalization, normalized by the
running statistics. TABLE, given to torch.onnx.export as
`custom_translation_table`, writes BatchNormalization(training_mode=1)
instead: normalized by the batch, and its running outputs, which trainc
makes the step's updates of the buffers the node reads (inputs 3 and 4).

(No `from __future__ import annotations` here: onnxscript reads the
annotations to tell the op's tensor inputs from its attributes.)
"""
from typing import Optional

import torch
from onnxscript import opset18 as op
from onnxscript.function_libs.torch_lib.tensor_typing import TFloat

OP = torch.ops.aten._native_batch_norm_legit_functional.default


def _per_channel(input, value: float):
    """[C] filled with `value`, in input's type (affine=False's scale and
    bias)."""
    return op.Expand(op.CastLike(op.Constant(value_floats=[value]), input),
                     op.Shape(input, start=1, end=2))


def batch_norm(input: TFloat, weight: Optional[TFloat] = None,
               bias: Optional[TFloat] = None,
               running_mean: Optional[TFloat] = None,
               running_var: Optional[TFloat] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """The aten op as ONNX BatchNormalization. ONNX's momentum is the
    weight of the running value, PyTorch's that of the batch's."""
    if weight is None:
        weight = _per_channel(input, 1.0)
    if bias is None:
        bias = _per_channel(input, 0.0)
    # The batch's mean and 1 / std, the op's outputs 1 and 2, which only
    # PyTorch's own backward reads (unused in the file).
    axes = op.Constant(value_ints=[d for d in range(len(input.shape)) if d != 1])
    mean = op.ReduceMean(input, axes, keepdims=0)
    centered = op.Sub(input, op.ReduceMean(input, axes))
    var = op.ReduceMean(op.Mul(centered, centered), axes, keepdims=0)
    rstd = op.Reciprocal(op.Sqrt(op.Add(var, op.CastLike(eps, var))))
    if not training:
        y = op.BatchNormalization(input, weight, bias, running_mean, running_var,
                                  epsilon=eps, momentum=1.0 - momentum,
                                  training_mode=0)
        return y, mean, rstd, running_mean, running_var
    y, new_mean, new_var = op.BatchNormalization(
        input, weight, bias, running_mean, running_var, epsilon=eps,
        momentum=1.0 - momentum, training_mode=1)
    return y, mean, rstd, new_mean, new_var


TABLE = {OP: batch_norm}


def training_batch_norms(program) -> int:
    """How many training-mode batch norms an ONNXProgram's exported
    program holds (None when it has no exported program to count)."""
    exported = getattr(program, 'exported_program', None)
    if exported is None:
        return None
    return sum(1 for node in exported.graph.nodes
               if node.target is OP and len(node.args) > 5 and node.args[5])
