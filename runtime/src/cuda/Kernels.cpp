//===- Kernels.cpp - Dispatch of CUDA kernels by opcode -------------------===//

#include "cuda/Kernels.h"

#include "cpu/Kernels.h"

namespace trainc::cuda {

namespace {

// Collectives move bytes through the context's device and call its
// Collective (NCCL here): the CPU's kernels serve both devices.
const KernelTable kCudaKernels = {
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
    cpu::runAllReduce,
    cpu::runReduceScatter,
    cpu::runAllGather,
    cpu::runShardSlice,
    cpu::runAllReduceStart,
    cpu::runReduceScatterStart,
    cpu::runAllGatherStart,
    cpu::runCollectiveDone,
    runFusedElementwise,
    runConvertGroup,
    runArgsort,
    runBitwise,
    runPatches,
};

} // namespace

KernelFn kernelFor(Opcode op) { return trainc::kernelFor(kCudaKernels, op); }

} // namespace trainc::cuda
