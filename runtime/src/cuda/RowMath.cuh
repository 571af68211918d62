//===- RowMath.cuh - Helpers of the row kernels (softmax, cross-entropy) --===//
//
// What the CUDA kernels that reduce one row per block share: the launch
// shape, the CPU's 16 partial sums (cpu/VectorMath.cpp's blockedSum), and
// the row maximum taken on integer keys that order like the floats (the
// CPU's rowMax, math::orderedKey), so that both devices find the same
// maximum and sum the same terms in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_ROWMATH_CUH
#define TRAINC_RUNTIME_CUDA_ROWMATH_CUH

#include "cuda/KernelUtil.cuh"
#include "math/Transcendental.h"

#include <climits>

namespace trainc::cuda::row {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kMaxThreads = 256;
constexpr int kWarps = kMaxThreads / 32;
/// The CPU's 16 partial sums.
constexpr int kLanes = 16;
/// Elements staged in shared memory at a time (a multiple of 16).
constexpr int kChunk = 2048;

/// x as an integer that orders like x (cpu/VectorMath.cpp's rowMax key).
__device__ __forceinline__ int32_t keyOf(float x) {
  return math::orderedKey(int32_t(floatBits(x)));
}
__device__ __forceinline__ float valueOf(int32_t key) {
  return bitsFloat(uint32_t(math::orderedKey(key)));
}
__device__ __forceinline__ int64_t keyOf(double x) {
  int64_t bits = __double_as_longlong(x);
  return bits ^ ((bits >> 63) & LLONG_MAX);
}
__device__ __forceinline__ double valueOf(int64_t key) {
  return __longlong_as_double(key ^ ((key >> 63) & LLONG_MAX));
}
/// The smallest key (a negative NaN with every payload bit set).
__device__ __forceinline__ int32_t lowestKey(int32_t) { return INT_MIN; }
__device__ __forceinline__ int64_t lowestKey(int64_t) { return LLONG_MIN; }

/// exp in the compute type: f32 through the CPU's expCore, f64 CUDA's.
__device__ __forceinline__ float expOf(float x) { return math::expCore(x); }
__device__ __forceinline__ double expOf(double x) { return exp(x); }

} // namespace trainc::cuda::row

#endif // TRAINC_RUNTIME_CUDA_ROWMATH_CUH
