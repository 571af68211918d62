//===- Kernels.cpp - Dispatch of CPU kernels by opcode --------------------===//

#include "cpu/Kernels.h"

#include <string>

namespace trainc::cpu {

KernelFn kernelFor(Opcode op) {
  // No default: -Werror=switch makes a new opcode without a kernel a build
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
  case Opcode::AllReduce:
    return runAllReduce;
  case Opcode::ReduceScatter:
    return runReduceScatter;
  case Opcode::AllGather:
    return runAllGather;
  case Opcode::ShardSlice:
    return runShardSlice;
  case Opcode::AllReduceStart:
    return runAllReduceStart;
  case Opcode::ReduceScatterStart:
    return runReduceScatterStart;
  case Opcode::AllGatherStart:
    return runAllGatherStart;
  case Opcode::CollectiveDone:
    return runCollectiveDone;
  }
  return nullptr;
}

Status runCpuKernel(const KernelCall &call) {
  KernelFn kernel = kernelFor(call.op);
  if (!kernel)
    return invalidArgument("no CPU kernel for opcode " +
                           std::to_string(static_cast<int>(call.op)));
  return kernel(call);
}

} // namespace trainc::cpu
