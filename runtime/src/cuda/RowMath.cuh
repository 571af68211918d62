//===- RowMath.cuh - Helpers of the row kernels (softmax, cross-entropy) --===//
//
// What the CUDA kernels that reduce rows share: the launch shape, the
// half-warp row loop and its 16 partials' pairwise sum (norms, the
// cross-entropy gradient), the row maximum taken on integer keys that order
// like the floats (the CPU's rowMax, math::orderedKey), and the sum of exp(x -
// max) in the CPU's 16 partial sums (cpu/VectorMath.cpp's blockedSum), so that
// both devices find the same maximum and sum the same terms in the same order.
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

/// The 16 lanes' partial sums added pairwise (8, 4, 2, 1 apart), as
/// cpu/VectorMath.cpp's blockedSum combines its partials; every lane gets
/// the sum. Called by all 16 lanes (the warp converged).
template <typename C> __device__ __forceinline__ C combinePartials(C partial) {
  for (int width = kLanes / 2; width > 0; width /= 2)
    partial += __shfl_down_sync(kFullMask, partial, width, kLanes);
  return __shfl_sync(kFullMask, partial, 0, kLanes);
}

/// The rows of a grid-stride loop over half-warps. Both halves of a warp
/// take the same number of steps (their shuffles need the whole warp): a
/// half whose row is past the end computes row `rows - 1` again and
/// stores nothing.
struct RowLoop {
  int lane;
  int64_t half, halves;
  __device__ RowLoop()
      : lane(int(threadIdx.x) & (kLanes - 1)),
        half((int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes),
        halves(int64_t(gridDim.x) * blockDim.x / kLanes) {}
  /// The first row of this warp's first step.
  __device__ int64_t first() const { return half & ~int64_t(1); }
};

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

/// The shared memory of one row's block.
template <typename C> struct RowShared {
  C stage[kChunk];
  decltype(keyOf(C())) keys[kWarps];
  C sum;
};

/// max_j x[j * stride] over the row's n elements, on every thread.
template <typename S>
__device__ Compute<S> rowMax(const S *x, int64_t stride, int64_t n,
                             RowShared<Compute<S>> &sh) {
  using Key = decltype(keyOf(Compute<S>()));
  Key m = lowestKey(Key());
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    Key k = keyOf(Compute<S>(load(x, j * stride)));
    m = k > m ? k : m;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    Key k = __shfl_xor_sync(kFullMask, m, offset);
    m = k > m ? k : m;
  }
  if (threadIdx.x % 32 == 0)
    sh.keys[threadIdx.x / 32] = m;
  __syncthreads();
  m = sh.keys[0];
  for (int w = 1; w < int(blockDim.x / 32); ++w)
    m = sh.keys[w] > m ? sh.keys[w] : m;
  __syncthreads(); // sh.keys is free again.
  return valueOf(m);
}

/// sum_j exp(x[j * stride] - m) in cpu/VectorMath.cpp's blockedSum order,
/// on every thread.
template <typename S>
__device__ Compute<S> rowSumExp(const S *x, int64_t stride, int64_t n,
                                Compute<S> m, RowShared<Compute<S>> &sh) {
  using C = Compute<S>;
  C partial = 0; // Thread l < 16: partial l.
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    int len = int(n - c0 < kChunk ? n - c0 : kChunk);
    for (int j = threadIdx.x; j < len; j += blockDim.x)
      sh.stage[j] = expOf(C(load(x, (c0 + j) * stride)) - m);
    __syncthreads();
    // c0 is a multiple of 16: element c0 + j goes to partial j mod 16.
    if (threadIdx.x < kLanes)
      for (int j = threadIdx.x; j < len; j += kLanes)
        partial += sh.stage[j];
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    for (int width = kLanes / 2; width > 0; width /= 2)
      partial += __shfl_down_sync(kFullMask, partial, width, kLanes);
    if (threadIdx.x == 0)
      sh.sum = partial;
  }
  __syncthreads();
  C sum = sh.sum;
  __syncthreads(); // sh.sum is free again.
  return sum;
}

} // namespace trainc::cuda::row

#endif // TRAINC_RUNTIME_CUDA_ROWMATH_CUH
