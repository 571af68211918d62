//===- Kernels.cpp - Dispatch of CPU kernels by opcode --------------------===//

#include "cpu/Kernels.h"

#include <string>

namespace trainc::cpu {

namespace {

const KernelTable kCpuKernels = {
    runElementwise,
    runDotGeneral,
    runReduction,
    runDataMovement,
    runSoftmax,
    runGelu,
    runNorm,
    runDropout,
    runAttention,
    runAttentionGrad,
    runCrossEntropy,
    runCrossEntropyGrad,
    runScatterAdd,
    runGeluGrad,
    runNormGrad,
    runAdamwUpdate,
    runSumOfSquares,
    runAllReduce,
    runReduceScatter,
    runAllGather,
    runShardSlice,
    runAllReduceStart,
    runReduceScatterStart,
    runAllGatherStart,
    runCollectiveDone,
    runFusedElementwise,
    runConvertGroup,
    runArgsort,
    runBitwise,
    runPatches,
};

} // namespace

KernelFn kernelFor(Opcode op) { return trainc::kernelFor(kCpuKernels, op); }

Status runCpuKernel(const KernelCall &call) {
  KernelFn kernel = kernelFor(call.op);
  if (!kernel)
    return invalidArgument("no CPU kernel for opcode " +
                           std::to_string(static_cast<int>(call.op)));
  return kernel(call);
}

} // namespace trainc::cpu
