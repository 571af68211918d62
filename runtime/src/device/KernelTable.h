//===- KernelTable.h - Which kernel family runs an opcode -------*- C++ -*-===//
//
// The one map from opcodes to kernel families. A device lists its family
// functions in a KernelTable and looks opcodes up with kernelFor(table,
// op), so the grouping of opcodes into families is written once for every
// device (the CPU's cpu/Kernels.cpp, the GPU's cuda/Kernels.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_KERNELTABLE_H
#define TRAINC_RUNTIME_DEVICE_KERNELTABLE_H

#include "base/Status.h"
#include "device/KernelContext.h"

namespace trainc {

using KernelFn = Status (*)(const KernelCall &call);

/// A device's kernel families (null: none on that device).
struct KernelTable {
  /// Unary and binary elementwise ops, compare, select, convert.
  KernelFn elementwise;
  /// dot_general, dot_general_bias, dot_general_bias_gelu,
  /// dot_general_gelu_grad, dot_general_bias_grad.
  KernelFn dotGeneral;
  /// reduce_sum, reduce_max, reduce_mean, reduce_prod.
  KernelFn reduction;
  /// broadcast_in_dim, reshape, transpose, slice, concatenate, gather, iota.
  KernelFn dataMovement;
  KernelFn softmax, gelu;
  /// layer_norm, rms_norm.
  KernelFn norm;
  KernelFn dropout, attention, attentionGrad;
  /// crossEntropyGrad: softmax_cross_entropy_grad and
  /// softmax_cross_entropy_and_grad.
  KernelFn crossEntropy, crossEntropyGrad, scatterAdd;
  KernelFn geluGrad;
  /// norm_grad, norm_grad_params.
  KernelFn normGrad;
  /// adamw_update, sum_of_squares: the optimizer step's multi-tensor ops.
  KernelFn adamwUpdate, sumOfSquares;
  KernelFn allReduce, reduceScatter, allGather, shardSlice;
  KernelFn allReduceStart, reduceScatterStart, allGatherStart, collectiveDone;
  /// fused_elementwise: a program of elementwise steps per element.
  KernelFn fusedElementwise;
  /// convert_group: several converts of one pair of dtypes.
  KernelFn convertGroup;
  /// argsort: a stable sort's permutation along one axis.
  KernelFn argsort;
  /// and, or, xor, not, the shifts, pop_count, count_leading_zeros,
  /// bitcast: integers as bits.
  KernelFn bitwise;
  /// extract_patches, fold_patches: a convolution's im2col and col2im.
  KernelFn patches;
};

/// The function of `table` that runs `op` (null for a number outside the
/// enum, or a family the table lacks).
inline KernelFn kernelFor(const KernelTable &table, Opcode op) {
  // No default: -Werror=switch makes a new opcode without a family a build
  // error, and the vocabulary test checks every opcode at run time too.
  switch (op) {
  case Opcode::Neg:
  case Opcode::Abs:
  case Opcode::Exp:
  case Opcode::Log:
  case Opcode::Tanh:
  case Opcode::Erf:
  case Opcode::Sqrt:
  case Opcode::Rsqrt:
  case Opcode::Cos:
  case Opcode::Sin:
  case Opcode::Floor:
  case Opcode::Round:
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Pow:
  case Opcode::Remainder:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Compare:
  case Opcode::Select:
  case Opcode::Convert:
    return table.elementwise;
  case Opcode::DotGeneral:
  case Opcode::DotGeneralBias:
  case Opcode::DotGeneralBiasGelu:
  case Opcode::DotGeneralGeluGrad:
  case Opcode::DotGeneralBiasGrad:
    return table.dotGeneral;
  case Opcode::ReduceSum:
  case Opcode::ReduceMax:
  case Opcode::ReduceMean:
  case Opcode::ReduceProd:
    return table.reduction;
  case Opcode::BroadcastInDim:
  case Opcode::Reshape:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::Concatenate:
  case Opcode::Gather:
  case Opcode::Iota:
    return table.dataMovement;
  case Opcode::Softmax:
    return table.softmax;
  case Opcode::Gelu:
    return table.gelu;
  case Opcode::LayerNorm:
  case Opcode::RmsNorm:
    return table.norm;
  case Opcode::Dropout:
    return table.dropout;
  case Opcode::Attention:
    return table.attention;
  case Opcode::AttentionGrad:
    return table.attentionGrad;
  case Opcode::SoftmaxCrossEntropy:
    return table.crossEntropy;
  case Opcode::SoftmaxCrossEntropyGrad:
  case Opcode::SoftmaxCrossEntropyAndGrad:
    return table.crossEntropyGrad;
  case Opcode::ScatterAdd:
    return table.scatterAdd;
  case Opcode::GeluGrad:
    return table.geluGrad;
  case Opcode::NormGrad:
  case Opcode::NormGradParams:
    return table.normGrad;
  case Opcode::AdamwUpdate:
    return table.adamwUpdate;
  case Opcode::SumOfSquares:
    return table.sumOfSquares;
  case Opcode::AllReduce:
    return table.allReduce;
  case Opcode::ReduceScatter:
    return table.reduceScatter;
  case Opcode::AllGather:
    return table.allGather;
  case Opcode::ShardSlice:
    return table.shardSlice;
  case Opcode::AllReduceStart:
    return table.allReduceStart;
  case Opcode::ReduceScatterStart:
    return table.reduceScatterStart;
  case Opcode::AllGatherStart:
    return table.allGatherStart;
  case Opcode::CollectiveDone:
    return table.collectiveDone;
  case Opcode::FusedElementwise:
    return table.fusedElementwise;
  case Opcode::ConvertGroup:
    return table.convertGroup;
  case Opcode::Argsort:
    return table.argsort;
  case Opcode::ExtractPatches:
  case Opcode::FoldPatches:
    return table.patches;
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
  case Opcode::Not:
  case Opcode::ShiftLeft:
  case Opcode::ShiftRightLogical:
  case Opcode::ShiftRightArithmetic:
  case Opcode::PopCount:
  case Opcode::CountLeadingZeros:
  case Opcode::Bitcast:
    return table.bitwise;
  }
  return nullptr;
}

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_KERNELTABLE_H
