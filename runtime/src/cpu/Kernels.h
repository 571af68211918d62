//===- Kernels.h - CPU kernels: the executor/kernel contract ---*- C++ -*-===//
//
// Every instruction of an executable names an Opcode, its operand and result
// tensors, and two attribute lists, `ints` and `floats`, whose layout per
// opcode is fixed in runtime/schema/executable.fbs (enum Opcode). The executor
// resolves tensors to TensorRefs (data pointers into the arena or the
// constant storage) and calls runCpuKernel. Kernels may assume what the
// compiler's verifier guarantees (shapes and dtypes consistent, as in the
// graph dialect's op constraints) but must check what depends on data
// (gather indices, cross-entropy targets) and report it as a Status.
//
// Shape legend in kernel comments: B batch, H heads, S/T sequence, D head
// dim, C classes, N normalized size, M/K/N matmul sizes.
//
// Numerics: f64 computes in f64; f32, f16 and bf16 compute in f32 (16-bit
// values are loaded with f16ToFloat/bf16ToFloat and stored rounded to
// nearest even). Float sums and means accumulate in f64 in a fixed order,
// so a reduction is the exact sum rounded once whatever the row length or
// thread count; matmuls through BLAS accumulate in the BLAS's precision
// (f32 for f32, f16 and bf16).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_KERNELS_H
#define TRAINC_RUNTIME_CPU_KERNELS_H

#include "base/DType.h"
#include "base/Status.h"
#include "device/KernelContext.h"
#include "device/KernelTable.h"

#include <cstdint>

namespace trainc::cpu {

// Opcode, kNumOpcodes and opcodeName come from the executable schema
// (trainc/schema/ExecutableFormat.h), where each opcode's attribute layout
// is documented.

// TensorRef, Span and KernelCall, the contract between a device and its
// kernels, are device/KernelContext.h's.
using trainc::KernelCall;
using trainc::Span;
using trainc::TensorRef;

using trainc::KernelFn;
/// The kernel family that runs `op` (null for a number outside the enum);
/// the opcode-to-family map is device/KernelTable.h's.
KernelFn kernelFor(Opcode op);

/// Runs one instruction. Returns an error Status (naming the op) for
/// data-dependent failures and for dtype combinations a kernel lacks.
Status runCpuKernel(const KernelCall &call);

// Kernel families (one file each), called by runCpuKernel.
Status runElementwise(const KernelCall &call);        // Elementwise.cpp
Status runReduction(const KernelCall &call);          // Reduction.cpp
Status runDataMovement(const KernelCall &call);       // DataMovement.cpp
Status runDotGeneral(const KernelCall &call);         // DotGeneral.cpp
Status runSoftmax(const KernelCall &call);            // Softmax.cpp
Status runNorm(const KernelCall &call);               // Norm.cpp (layer, rms)
Status runGelu(const KernelCall &call);               // Gelu.cpp
Status runDropout(const KernelCall &call);            // Dropout.cpp
Status runAttention(const KernelCall &call);          // Attention.cpp
Status runAttentionGrad(const KernelCall &call);      // Attention.cpp
Status runCrossEntropy(const KernelCall &call);       // CrossEntropy.cpp
Status runCrossEntropyGrad(const KernelCall &call);   // CrossEntropy.cpp
Status runScatterAdd(const KernelCall &call);         // Scatter.cpp
Status runGeluGrad(const KernelCall &call);           // FusedGradients.cpp
Status runNormGrad(const KernelCall &call);           // FusedGradients.cpp
Status runAdamwUpdate(const KernelCall &call);        // Optimizer.cpp
Status runSumOfSquares(const KernelCall &call);       // Optimizer.cpp
Status runAllReduce(const KernelCall &call);          // Collectives.cpp
Status runReduceScatter(const KernelCall &call);      // Collectives.cpp
Status runAllGather(const KernelCall &call);          // Collectives.cpp
Status runShardSlice(const KernelCall &call);         // Collectives.cpp
Status runAllReduceStart(const KernelCall &call);     // Collectives.cpp
Status runReduceScatterStart(const KernelCall &call); // Collectives.cpp
Status runAllGatherStart(const KernelCall &call);     // Collectives.cpp
Status runCollectiveDone(const KernelCall &call);     // Collectives.cpp
Status runFusedElementwise(const KernelCall &call);   // FusedElementwise.cpp
Status runConvertGroup(const KernelCall &call);       // FusedElementwise.cpp
Status runArgsort(const KernelCall &call);            // Sort.cpp
Status runBitwise(const KernelCall &call);            // Bitwise.cpp
Status runPatches(const KernelCall &call);            // Patches.cpp

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_KERNELS_H
