//===- RowMath.cuh - Helpers of the row kernels (softmax, cross-entropy) --===//
//
// What the CUDA kernels that reduce rows share:
//   - the half-warp row loop and its 16 partials' pairwise sum (norms:
//     cpu/VectorMath.cpp's blockedSum with 16 partials);
//   - the row maximum taken on integer keys that order like the floats
//     (the CPU's rowMax, math::orderedKey);
//   - softmax rows, a warp per row: its max and its sum of exp(x - max) in
//     math/SoftmaxSum.h's order (lane l holds partials 4l .. 4l + 3 and
//     reads four consecutive elements at a time, in one vector load where
//     the row is aligned to it), so that both devices find the same maximum
//     and sum the same terms in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_ROWMATH_CUH
#define TRAINC_RUNTIME_CUDA_ROWMATH_CUH

#include "cuda/KernelUtil.cuh"
#include "math/SoftmaxSum.h"
#include "math/Transcendental.h"

#include <climits>

namespace trainc::cuda::row {

constexpr unsigned kFullMask = 0xffffffffu;
/// The norms' 16 partial sums (a half-warp).
constexpr int kLanes = 16;

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

//===--- Softmax rows: a warp per row
//--------------------------------------===//

/// Lanes per row, and the consecutive elements (partials) each holds.
constexpr int kRowLanes = math::kSoftmaxLanes;
constexpr int kQuad = math::kSoftmaxQuad;
/// The elements a warp reads at a time: one of each partial.
constexpr int kRowSpan = math::kSoftmaxPartials;
/// Spans a lane loads before it uses them: loads in flight together.
constexpr int kSpansAhead = 4;

/// A softmax row as a warp reads it: n elements at x[j * stride]. Packed:
/// stride 1 and x aligned to a Pack<S, 4> (then each lane's four elements
/// are one vector load).
template <typename S, bool kPacked> struct WarpRow {
  const S *x;
  int64_t stride, n;
  int lane;

  /// v[u] = element j + u (all four below n).
  __device__ __forceinline__ void loadQuad(int64_t j,
                                           Compute<S> (&v)[kQuad]) const {
    if constexpr (kPacked) {
      Pack<S, kQuad> p = *reinterpret_cast<const Pack<S, kQuad> *>(x + j);
#pragma unroll
      for (int u = 0; u < kQuad; ++u)
        v[u] = Compute<S>(load(p.v, u));
    } else {
#pragma unroll
      for (int u = 0; u < kQuad; ++u)
        v[u] = Compute<S>(load(x, (j + u) * stride));
    }
  }

  /// f(j, v, count) for each of this lane's quads in index order: v[u] is
  /// element j + u for u < count (4 but in the row's last, partial span,
  /// where count may be 1 to 3; a lane with nothing there is not called).
  template <typename F>
  __device__ __forceinline__ void forEachQuad(F &&f) const {
    using C = Compute<S>;
    int64_t whole = n / kRowSpan * kRowSpan;
    int64_t j = int64_t(lane) * kQuad;
    for (; j + (kSpansAhead - 1) * kRowSpan < whole;
         j += kSpansAhead * kRowSpan) {
      C v[kSpansAhead][kQuad];
#pragma unroll
      for (int a = 0; a < kSpansAhead; ++a)
        loadQuad(j + a * kRowSpan, v[a]);
#pragma unroll
      for (int a = 0; a < kSpansAhead; ++a)
        f(j + a * kRowSpan, v[a], kQuad);
    }
    for (; j < whole; j += kRowSpan) {
      C v[kQuad];
      loadQuad(j, v);
      f(j, v, kQuad);
    }
    if (j < n) {
      int count = n - j < kQuad ? int(n - j) : kQuad;
      C v[kQuad];
#pragma unroll
      for (int u = 0; u < kQuad; ++u)
        v[u] =
            u < count ? Compute<S>(load(x, (j + u) * stride)) : Compute<S>(0);
      f(j, v, count);
    }
  }

  /// max_j x[j], on every lane (the warp converged).
  __device__ Compute<S> maximum() const {
    using Key = decltype(keyOf(Compute<S>()));
    Key m = lowestKey(Key());
    forEachQuad([&](int64_t, const Compute<S>(&v)[kQuad], int count) {
#pragma unroll
      for (int u = 0; u < kQuad; ++u) {
        Key k = keyOf(v[u]);
        m = u < count && k > m ? k : m;
      }
    });
    for (int offset = kRowLanes / 2; offset > 0; offset /= 2) {
      Key k = __shfl_xor_sync(kFullMask, m, offset);
      m = k > m ? k : m;
    }
    return valueOf(m);
  }

  /// sum_j exp(x[j] - m) in math/SoftmaxSum.h's order, on every lane (the
  /// warp converged).
  __device__ Compute<S> sumExp(Compute<S> m) const {
    using C = Compute<S>;
    C acc[kQuad] = {};
    forEachQuad([&](int64_t, const C(&v)[kQuad], int count) {
#pragma unroll
      for (int u = 0; u < kQuad; ++u)
        if (u < count)
          acc[u] += expOf(v[u] - m);
    });
    // Partial 4l + u += partial 4(l + s) + u: the tree's steps 64 .. 4.
    for (int s = kRowLanes / 2; s > 0; s /= 2)
#pragma unroll
      for (int u = 0; u < kQuad; ++u)
        acc[u] += __shfl_down_sync(kFullMask, acc[u], s);
    return __shfl_sync(kFullMask, math::combineQuad(acc), 0);
  }
};

/// Stores v[0 .. count) at y[(j + u) * stride] (one vector store for a
/// whole quad of a packed row).
template <typename S, bool kPacked>
__device__ __forceinline__ void storeQuad(S *y, int64_t stride, int64_t j,
                                          const Compute<S> (&v)[kQuad],
                                          int count) {
  if (kPacked && count == kQuad) {
    Pack<S, kQuad> p;
#pragma unroll
    for (int u = 0; u < kQuad; ++u)
      store(p.v, u, v[u]);
    *reinterpret_cast<Pack<S, kQuad> *>(y + j) = p;
  } else {
#pragma unroll
    for (int u = 0; u < kQuad; ++u)
      if (u < count)
        store(y, (j + u) * stride, v[u]);
  }
}

/// The first warp of this thread's grid-stride loop over rows, and the
/// warps in the grid.
__device__ __forceinline__ int64_t firstWarp() {
  return (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kRowLanes;
}
__device__ __forceinline__ int64_t gridWarps() {
  return int64_t(gridDim.x) * blockDim.x / kRowLanes;
}

/// Threads per block of the warp-per-row kernels (8 rows), and the blocks
/// for `rows` rows (the kernels loop past the cap).
constexpr int kRowThreads = 256;
inline unsigned warpRowBlocks(int64_t rows) {
  int64_t perBlock = kRowThreads / kRowLanes;
  int64_t blocks = (rows + perBlock - 1) / perBlock;
  return unsigned(blocks < (1 << 20) ? blocks : (1 << 20));
}

/// Whether rows of `rowStride` elements from `base` are all aligned to a
/// Pack<S, 4> (S `size` bytes), as WarpRow's kPacked needs.
inline bool rowsPacked(const void *base, int64_t rowStride, size_t size) {
  return rowStride % kQuad == 0 && packAligned(base, size * kQuad);
}

} // namespace trainc::cuda::row

#endif // TRAINC_RUNTIME_CUDA_ROWMATH_CUH
