//===- Kernels.h - CUDA kernels: the executor/kernel contract ---*- C++ -*-===//
//
// The CUDA device's kernels, one op family per file as on the CPU
// (cpu/Kernels.h states the contract: opcode, TensorRefs, attribute lists
// of runtime/schema/executable.fbs). Here a TensorRef's data is device
// memory; dims stay on the host. A kernel function checks what it can on
// the host (dtypes, ranks), queues its work on the call's stream and
// returns at once; data-dependent errors are reported through the stream's
// fault record (CudaDevice.h) and surface when the stream is synchronized.
//
// Numerics follow the CPU kernels': each family's per-element or per-row
// math is a TRAINC_HD function of runtime/src/math/ (or base/Float16.h)
// that the CPU kernel calls too, compiled without FMA contraction
// (-fmad=false) so both devices round alike; what differs is written in the
// family's file (the order of long sums, cuBLASLt's GEMM accumulation).
//
// This header is plain C++: CudaDevice.cpp and the tests include it without
// the CUDA headers.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_KERNELS_H
#define TRAINC_RUNTIME_CUDA_KERNELS_H

#include "base/Status.h"
#include "device/KernelContext.h"
#include "device/KernelTable.h"

namespace trainc::cuda {

using trainc::KernelFn;
/// The kernel family that runs `op` on the CUDA device (the opcode-to-
/// family map is device/KernelTable.h's).
KernelFn kernelFor(Opcode op);

// Kernel families (one file each).
Status runElementwise(const KernelCall &call);      // Elementwise.cu
Status runReduction(const KernelCall &call);        // Reduction.cu
Status runDataMovement(const KernelCall &call);     // DataMovement.cu
Status runDotGeneral(const KernelCall &call);       // DotGeneral.cu
Status runSoftmax(const KernelCall &call);          // Softmax.cu
Status runNorm(const KernelCall &call);             // Norm.cu
Status runNormGrad(const KernelCall &call);         // Norm.cu
Status runGelu(const KernelCall &call);             // Gelu.cu
Status runGeluGrad(const KernelCall &call);         // Gelu.cu
Status runDropout(const KernelCall &call);          // Dropout.cu
Status runAttention(const KernelCall &call);        // Attention.cu
Status runAttentionGrad(const KernelCall &call);    // Attention.cu
Status runCrossEntropy(const KernelCall &call);     // CrossEntropy.cu
Status runCrossEntropyGrad(const KernelCall &call); // CrossEntropy.cu
Status runScatterAdd(const KernelCall &call);       // Scatter.cu
Status runAdamwUpdate(const KernelCall &call);      // Optimizer.cu
Status runSumOfSquares(const KernelCall &call);     // Optimizer.cu
Status runFusedElementwise(const KernelCall &call); // FusedElementwise.cu
Status runConvertGroup(const KernelCall &call);     // FusedElementwise.cu
Status runArgsort(const KernelCall &call);          // Sort.cu
Status runBitwise(const KernelCall &call);          // Bitwise.cu
Status runPatches(const KernelCall &call);          // Patches.cu
// The collective instructions only move bytes and call the Collective:
// cpu/Collectives.cpp's, which copy through the context's device.

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_KERNELS_H
