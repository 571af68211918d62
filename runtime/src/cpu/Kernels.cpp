//===- Kernels.cpp - Dispatch of CPU kernels by opcode --------------------===//

#include "cpu/Kernels.h"

#include <string>

namespace trainc::cpu {

const char *opcodeName(Opcode op) {
  static const char *const kNames[] = {"neg",
                                       "abs",
                                       "exp",
                                       "log",
                                       "tanh",
                                       "erf",
                                       "sqrt",
                                       "rsqrt",
                                       "add",
                                       "sub",
                                       "mul",
                                       "div",
                                       "pow",
                                       "max",
                                       "min",
                                       "compare",
                                       "select",
                                       "convert",
                                       "dot_general",
                                       "reduce_sum",
                                       "reduce_max",
                                       "reduce_mean",
                                       "broadcast_in_dim",
                                       "reshape",
                                       "transpose",
                                       "slice",
                                       "concatenate",
                                       "gather",
                                       "iota",
                                       "softmax",
                                       "gelu",
                                       "layer_norm",
                                       "rms_norm",
                                       "dropout",
                                       "attention",
                                       "softmax_cross_entropy",
                                       "scatter_add",
                                       "gelu_grad",
                                       "norm_grad",
                                       "adamw_update"};
  static_assert(sizeof kNames / sizeof kNames[0] == kNumOpcodes,
                "a name for every opcode");
  int i = static_cast<int>(op);
  return i >= 0 && i < kNumOpcodes ? kNames[i] : "unknown";
}

Status runCpuKernel(const KernelCall &call) {
  switch (call.op) {
  case Opcode::kNeg:
  case Opcode::kAbs:
  case Opcode::kExp:
  case Opcode::kLog:
  case Opcode::kTanh:
  case Opcode::kErf:
  case Opcode::kSqrt:
  case Opcode::kRsqrt:
  case Opcode::kAdd:
  case Opcode::kSub:
  case Opcode::kMul:
  case Opcode::kDiv:
  case Opcode::kPow:
  case Opcode::kMax:
  case Opcode::kMin:
  case Opcode::kCompare:
  case Opcode::kSelect:
  case Opcode::kConvert:
    return runElementwise(call);
  case Opcode::kDotGeneral:
    return runDotGeneral(call);
  case Opcode::kReduceSum:
  case Opcode::kReduceMax:
  case Opcode::kReduceMean:
    return runReduction(call);
  case Opcode::kBroadcastInDim:
  case Opcode::kReshape:
  case Opcode::kTranspose:
  case Opcode::kSlice:
  case Opcode::kConcatenate:
  case Opcode::kGather:
  case Opcode::kIota:
    return runDataMovement(call);
  case Opcode::kSoftmax:
    return runSoftmax(call);
  case Opcode::kGelu:
    return runGelu(call);
  case Opcode::kLayerNorm:
  case Opcode::kRmsNorm:
    return runNorm(call);
  case Opcode::kDropout:
    return runDropout(call);
  case Opcode::kAttention:
    return runAttention(call);
  case Opcode::kSoftmaxCrossEntropy:
    return runCrossEntropy(call);
  case Opcode::kScatterAdd:
    return runScatterAdd(call);
  case Opcode::kGeluGrad:
    return runGeluGrad(call);
  case Opcode::kNormGrad:
    return runNormGrad(call);
  case Opcode::kAdamwUpdate:
    return runAdamwUpdate(call);
  }
  return invalidArgument("unknown opcode " +
                         std::to_string(static_cast<int>(call.op)));
}

} // namespace trainc::cpu
