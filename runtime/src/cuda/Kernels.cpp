//===- Kernels.cpp - Dispatch of CUDA kernels by opcode -------------------===//

#include "cuda/Kernels.h"

#include "cpu/Kernels.h"

namespace trainc::cuda {

KernelFn kernelFor(Opcode op) {
  // No default: -Werror=switch makes a new opcode without a CUDA kernel a
  // build error, as on the CPU.
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
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Pow:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Compare:
  case Opcode::Select:
  case Opcode::Convert:
    return runElementwise;
  case Opcode::DotGeneral:
    return runDotGeneral;
  case Opcode::ReduceSum:
  case Opcode::ReduceMax:
  case Opcode::ReduceMean:
    return runReduction;
  case Opcode::BroadcastInDim:
  case Opcode::Reshape:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::Concatenate:
  case Opcode::Gather:
  case Opcode::Iota:
    return runDataMovement;
  case Opcode::Softmax:
    return runSoftmax;
  case Opcode::Gelu:
    return runGelu;
  case Opcode::LayerNorm:
  case Opcode::RmsNorm:
    return runNorm;
  case Opcode::Dropout:
    return runDropout;
  case Opcode::Attention:
    return runAttention;
  case Opcode::AttentionGrad:
    return runAttentionGrad;
  case Opcode::SoftmaxCrossEntropy:
    return runCrossEntropy;
  case Opcode::SoftmaxCrossEntropyGrad:
    return runCrossEntropyGrad;
  case Opcode::ScatterAdd:
    return runScatterAdd;
  case Opcode::GeluGrad:
    return runGeluGrad;
  case Opcode::NormGrad:
    return runNormGrad;
  case Opcode::AdamwUpdate:
    return runAdamwUpdate;
  // Collectives move bytes through the context's device and call its
  // Collective (NCCL here): the CPU's kernels serve both devices.
  case Opcode::AllReduce:
    return cpu::runAllReduce;
  case Opcode::ReduceScatter:
    return cpu::runReduceScatter;
  case Opcode::AllGather:
    return cpu::runAllGather;
  case Opcode::ShardSlice:
    return cpu::runShardSlice;
  case Opcode::AllReduceStart:
    return cpu::runAllReduceStart;
  case Opcode::ReduceScatterStart:
    return cpu::runReduceScatterStart;
  case Opcode::AllGatherStart:
    return cpu::runAllGatherStart;
  case Opcode::CollectiveDone:
    return cpu::runCollectiveDone;
  }
  return nullptr;
}

} // namespace trainc::cuda
