//===- Norm.cu - Layer norm, RMS norm and their gradients -----------------===//
//
// Over each row x[r, :] of N elements (the dims axis..rank-1 flattened):
//
//   layer_norm: mean = sum_j x[j] / N
//               var  = sum_j (x[j] - mean)^2 / N          (biased)
//               y[j] = (x[j] - mean) / sqrt(var + eps) * scale[j] + bias[j]
//   rms_norm:   the same with mean = 0 and no bias
//               (f32 rows, 16 at a time where they fit in a block's
//               shared memory, by normStagedKernel; else normKernel)
//   norm_grad:  c = x - mean(x) (centered) or x; rstd = 1 / sqrt(mean(c^2)
//               + eps); xhat = c * rstd; d = g * scale;
//               dx = rstd * (d - xhat * mean(d * xhat) - mean(d)), the last
//               term only when centered; results (dx, xhat)
//   norm_grad_params: dx (with an addend: addend + dx, and a 16-bit copy
//               of it where asked, rounded as an add and a convert would),
//               and the sums over the rows of g * xhat and of g
//               in math/NormParamSums.h's order. normSegmentKernel takes a
//               segment of rows per block, staging 16 rows at a time in
//               shared memory so that x, g and the addend are read from
//               memory once (on a 227 KB H100/H200 block: 16 rows of up
//               to some 1,100 f32 elements with an addend, 1,500 without;
//               fewer rows of longer ones); where not even 4 rows fit
//               (over some 3,400 f32 elements with an addend, 4,400
//               without), normGradKernel keeps each row's
//               (mean, rstd) in scratch memory, normParamPartialsKernel
//               sums each segment of rows per column (xhat made again from
//               the statistics, as normGradKernel makes it); then
//               normParamCombineKernel adds the segments in order
//
// scale and bias have the normalized shape and default to 1 and 0 (which
// are multiplied and added, as on the CPU).
//
// Shape legend: x viewed as [R, N], R the product of dims 0..axis-1.
//
// Work split: one half-warp (16 lanes) per row, lane l taking elements
// j = l, l + 16, ...; a 256-thread block holds 16 rows. That split is the
// CPU's summation order for free, so every result is bit-identical to
// cpu/Norm.cpp and cpu/FusedGradients.cpp (with -fmad=false, IEEE sqrt and
// division):
//   - f32 (and 16-bit, computed in f32) row sums (the statistics, and
//     norm_grad's sums of d and d * xhat, cpu/FusedGradients.cpp's rowSum
//     and rowDot): cpu/VectorMath.cpp's 16 partial sums, element j into
//     partial j mod 16 in index order (lane l's running sum), then the
//     partials pairwise (8, 4, 2, 1 apart: a shuffle tree);
//   - f64 row sums: one running sum in index order; each step the 16
//     lanes compute 16 consecutive terms and all of them add those in
//     order through shuffles (addInOrder), so every lane holds the same
//     sum.
// The statistics are computed as cpu/NormStatistics.h does, so norm_grad's
// xhat is the forward's. 16-bit operands are widened to f32 and results
// rounded once to nearest even; norm_grad keeps xhat in f32 for dx and
// stores it rounded, as the CPU does.
//
// Rows are assumed short enough for 16 lanes (hidden sizes: up to some
// 10^4 elements); a much longer row is correct but slow.
//
// A row is read whole (its statistics, norm_grad's sums) before any of its
// results is written, and each element's results are written by the lane
// that reads its operands, so results may share operands' memory; not
// norm_grad_params's (it reads x and g again after writing dx), but for
// its dx, which may be its addend's (read by the lane that writes it).
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "cuda/RowMath.cuh"
#include "math/NormParamSums.h"

#include <type_traits>

namespace trainc::cuda {
namespace {

using row::combinePartials;
using row::kFullMask;
using row::kLanes;
using row::RowLoop;
/// Threads per block (16 rows).
constexpr int kNormThreads = 256;

/// sum_j term(j) over j in [0, n), as cpu/VectorMath.cpp's blockedSum:
/// lane l adds the terms j = l mod 16 in index order, then the partials
/// pairwise. Called by all 16 lanes (the warp converged); every lane gets
/// the sum.
template <typename C, typename Term>
__device__ __forceinline__ C sumPartials(int lane, int64_t n, Term term) {
  C partial = 0;
  for (int64_t j = lane; j < n; j += kLanes)
    partial += term(j);
  return combinePartials(partial);
}

/// sum + the first `count` of the 16 lanes' values `v`, in lane order
/// (every lane gets the same sum).
template <typename C>
__device__ __forceinline__ C addInOrder(C sum, C v, int64_t count) {
#pragma unroll
  for (int l = 0; l < kLanes; ++l) {
    C t = __shfl_sync(kFullMask, v, l, kLanes);
    if (l < count)
      sum += t;
  }
  return sum;
}

/// sum_j term(j) over j in [0, n) in index order, from 0 (n >= 1; lanes
/// past the end evaluate term(n - 1), unused).
template <typename C, typename Term>
__device__ __forceinline__ C sumInOrder(int lane, int64_t n, Term term) {
  C sum = 0;
  for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
    int64_t j = j0 + lane;
    sum = addInOrder(sum, term(j < n ? j : n - 1), n - j0);
  }
  return sum;
}

/// A row sum in the CPU's order for C: partials for f32, in order for f64.
template <typename C, typename Term>
__device__ __forceinline__ C rowSum(int lane, int64_t n, Term term) {
  if constexpr (std::is_same_v<C, double>)
    return sumInOrder<C>(lane, n, term);
  else
    return sumPartials<C>(lane, n, term);
}

/// cpu/NormStatistics.h's normRowStatistics over the row `x` of n
/// elements: sets `mean` (0 unless centered) and returns rstd.
template <typename S>
__device__ __forceinline__ Compute<S>
rowStatistics(const S *x, int lane, int64_t n, bool centered, Compute<S> eps,
              Compute<S> &mean) {
  using C = Compute<S>;
  C m = 0;
  if (centered)
    m = rowSum<C>(lane, n, [&](int64_t j) { return C(load(x, j)); }) / C(n);
  C sumSq = rowSum<C>(lane, n, [&](int64_t j) {
    C v = load(x, j);
    return (v - m) * (v - m);
  });
  mean = m;
  return C(1) / sqrt(sumSq / C(n) + eps);
}

/// norm_grad's two row sums, sum_j d(j) and sum_j dh(j) (d = g * scale,
/// dh = d * xhat), in the CPU's order for C (rowSum's). kOnePass: f32's
/// two partials in one pass over the row (norm_grad_params's staged rows;
/// in the 16-bit kernels that spills registers, measured with -Xptxas
/// -warn-spills, so they take two). f64 always takes one (two would spill).
template <typename C, bool kOnePass, typename D, typename Dh>
__device__ __forceinline__ void gradSums(int lane, int64_t n, D dAt, Dh dhAt,
                                         C &sumD, C &sumDX) {
  if constexpr (std::is_same_v<C, double>) {
    sumD = 0;
    sumDX = 0;
    for (int64_t j0 = 0; j0 < n; j0 += kLanes) {
      // Lanes past the end compute element n - 1 again, unused (no
      // divergence before the shuffles).
      int64_t j = j0 + lane < n ? j0 + lane : n - 1;
      sumD = addInOrder(sumD, dAt(j), n - j0);
      sumDX = addInOrder(sumDX, dhAt(j), n - j0);
    }
  } else if constexpr (kOnePass) {
    C partialD = 0, partialDX = 0;
    for (int64_t j = lane; j < n; j += kLanes) {
      partialD += dAt(j);
      partialDX += dhAt(j);
    }
    sumD = combinePartials(partialD);
    sumDX = combinePartials(partialDX);
  } else {
    sumD = sumPartials<C>(lane, n, dAt);
    sumDX = sumPartials<C>(lane, n, dhAt);
  }
}

/// Y is S, or a 16-bit type for an f32 norm the compiler narrowed: the
/// row is computed in C and rounded once to Y, as a convert would.
template <typename S, typename Y = S>
__global__ void __launch_bounds__(kNormThreads)
    normKernel(const S *x, const S *scale, const S *bias, Y *y, int64_t rows,
               int64_t n, bool centered, Compute<S> eps) {
  using C = Compute<S>;
  RowLoop loop;
  for (int64_t first = loop.first(); first < rows; first += loop.halves) {
    int64_t row = first + (loop.half & 1);
    bool valid = row < rows;
    row = valid ? row : rows - 1;
    const S *xr = x + row * n;
    C mean;
    C rstd = rowStatistics(xr, loop.lane, n, centered, eps, mean);
    if (!valid)
      continue;
    Y *yr = y + row * n;
    for (int64_t j = loop.lane; j < n; j += kLanes) {
      C s = scale ? C(load(scale, j)) : C(1);
      C b = bias ? C(load(bias, j)) : C(0);
      store(yr, j, (C(load(xr, j)) - mean) * rstd * s + b);
    }
  }
}

/// norm_grad's rows: dx, and xhat in `out` (kStats false) or, for
/// norm_grad_params, each row's (mean, rstd) in `out` (kStats true: the
/// statistics normParamPartialsKernel makes xhat from). norm_grad_params
/// may give an addend (dx = addend + the norm's dx, rounded as an add) and
/// a 16-bit copy of dx in `narrowed` of storage type N (rounded as a
/// convert); both null for norm_grad.
template <typename S, bool kStats, typename N = S>
__global__ void __launch_bounds__(kNormThreads)
    normGradKernel(const S *x, const S *scale, const S *g, const S *addend,
                   S *dx, N *narrowed,
                   std::conditional_t<kStats, Compute<S>, S> *out, int64_t rows,
                   int64_t n, bool centered, Compute<S> eps) {
  using C = Compute<S>;
  RowLoop loop;
  int lane = loop.lane;
  for (int64_t first = loop.first(); first < rows; first += loop.halves) {
    int64_t row = first + (loop.half & 1);
    bool valid = row < rows;
    row = valid ? row : rows - 1;
    const S *xr = x + row * n, *gr = g + row * n;
    C mean;
    C rstd = rowStatistics(xr, lane, n, centered, eps, mean);
    // sum_j d and sum_j d * xhat, in the CPU's order for C (rowSum's).
    auto dAt = [&](int64_t j) {
      return C(load(gr, j)) * (scale ? C(load(scale, j)) : C(1));
    };
    auto dhAt = [&](int64_t j) {
      return dAt(j) * ((C(load(xr, j)) - mean) * rstd);
    };
    C sumD, sumDX;
    gradSums<C, false>(lane, n, dAt, dhAt, sumD, sumDX);
    if (!valid)
      continue;
    C meanD = centered ? sumD / C(n) : C(0), meanDX = sumDX / C(n);
    S *dxr = dx + row * n;
    for (int64_t j = lane; j < n; j += kLanes) {
      C h = (C(load(xr, j)) - mean) * rstd;
      C d = C(load(gr, j)) * (scale ? C(load(scale, j)) : C(1));
      C v = rstd * (d - h * meanDX - meanD);
      if constexpr (kStats) {
        // f32 and f64 only (C is S): v is the stored dx, to which the
        // addend's element (read just before dx's is written: dx may be
        // the addend's memory) is added as graph.add adds it.
        if (addend)
          v = C(load(addend + row * n, j)) + v;
        if (narrowed)
          store(narrowed + row * n, j, v);
      }
      store(dxr, j, v);
      if constexpr (!kStats)
        store(out + row * n, j, h);
    }
    if constexpr (kStats) {
      if (lane == 0) {
        out[2 * row] = mean;
        out[2 * row + 1] = rstd;
      }
    }
  }
}

/// Threads of normParamPartialsKernel: 32 neighbouring columns (a warp
/// reads 32 neighbouring elements of a row) by 8 segments.
constexpr int kParamColumns = 32;
constexpr int kParamSegments = 8;

/// math/NormParamSums.h's steps 1 and 2: thread (j, s) adds segment s's
/// terms of column j in row order, xhat made again from the row's
/// statistics as normGradKernel made it. partials[(s * sums + k) * n + j]
/// (k = 0 the scale's, 1 the bias's).
template <typename S>
__global__ void __launch_bounds__(kParamColumns *kParamSegments)
    normParamPartialsKernel(const S *x, const S *g, const Compute<S> *stats,
                            double *partials, int64_t rows, int64_t n,
                            bool withBias) {
  using C = Compute<S>;
  int64_t j = int64_t(blockIdx.x) * kParamColumns + threadIdx.x;
  int64_t s = int64_t(blockIdx.y) * kParamSegments + threadIdx.y;
  int64_t per = math::normSegmentRows(rows);
  if (j >= n || s * per >= rows)
    return;
  int64_t end = (s + 1) * per < rows ? (s + 1) * per : rows;
  double scaleSum = 0, biasSum = 0;
  for (int64_t r = s * per; r < end; ++r) {
    C gv = C(load(g, r * n + j));
    C h = (C(load(x, r * n + j)) - stats[2 * r]) * stats[2 * r + 1];
    scaleSum += math::scaleGradTerm(gv, h);
    biasSum += double(gv);
  }
  int64_t sums = withBias ? 2 : 1;
  partials[s * sums * n + j] = scaleSum;
  if (withBias)
    partials[(s * sums + 1) * n + j] = biasSum;
}

/// Step 3: thread (k, j) adds column j's segment sums of result k in order.
template <typename S>
__global__ void normParamCombineKernel(const double *partials, S *scaleGrad,
                                       S *biasGrad, int64_t segments, int64_t n,
                                       bool withBias) {
  int64_t sums = withBias ? 2 : 1;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= sums * n)
    return;
  int64_t k = i / n, j = i % n;
  double sum = math::combineSegments(partials + k * n + j, segments, sums * n);
  store(k == 0 ? scaleGrad : biasGrad, j, Compute<S>(sum));
}

//===--- Rows staged in shared memory -------------------------------------===//

/// Rows a block stages at a time (its 16 half-warps' rows), and the
/// fewest worth staging (fewer leave most half-warps idle: the row
/// kernels above serve those rows).
constexpr int kChunkRows = kNormThreads / kLanes;
constexpr int kMinChunkRows = 4;

/// Where a staging kernel's dynamic shared memory holds what (byte
/// offsets, each 16-aligned): acc[k][j] (`sums` rows of n doubles:
/// normSegmentKernel's segment sums, k = 0 the scale's, 1 the bias's), the
/// chunk's row statistics rowStats[r][0..3] (C), `params` vectors of n
/// elements of S (the scale, and the forward's bias), and `tiles` tiles of
/// chunkRows rows of `stride` elements (x; the backward's g and addend).
struct StagedLayout {
  int64_t stride = 0, chunkRows = 0, tiles = 0;
  size_t acc = 0, rowStats = 0, params = 0, tile = 0, bytes = 0;
};

constexpr size_t roundUp16(size_t bytes) { return (bytes + 15) / 16 * 16; }

/// The layout for rows of n elements of S staged in packs of P, within
/// `budget` bytes; chunkRows below kMinChunkRows when they do not fit.
template <typename S>
StagedLayout stagedLayout(int64_t n, int P, int tiles, int64_t sums,
                          int64_t params, size_t budget) {
  StagedLayout l;
  // Packs stay aligned, and a warp's two half-warps (rows r and r + 1 at
  // the same columns) meet different banks: f32 strides are 16 mod 32
  // words (a half-warp's 16 doubles fill all 32 banks anyway).
  l.stride = (n + P - 1) / P * P;
  l.stride += (16 - l.stride % 32 + 32) % 32;
  l.tiles = tiles;
  l.acc = 0;
  l.rowStats = roundUp16(size_t(sums * n) * sizeof(double));
  l.params = l.rowStats + roundUp16(kChunkRows * 4 * sizeof(Compute<S>));
  l.tile = l.params + roundUp16(size_t(params * n) * sizeof(S));
  size_t perRow = size_t(tiles) * size_t(l.stride) * sizeof(S);
  l.chunkRows = budget > l.tile ? int64_t((budget - l.tile) / perRow) : 0;
  if (l.chunkRows > kChunkRows)
    l.chunkRows = kChunkRows;
  l.bytes = l.tile + size_t(l.chunkRows) * perRow;
  return l;
}

/// Copies rows [0, count) of `tiles` arrays of rows of n elements (src[t]
/// + 0 ..) into the tiles' padded rows, P elements a load, kAhead loads of
/// each array in flight per thread before their stores.
template <typename S, int P>
__device__ __forceinline__ void stageRows(const S *const (&src)[3], S *tile,
                                          int tiles, int64_t count, int64_t n,
                                          int64_t stride, int64_t chunkRows) {
  constexpr int kAhead = 4;
  using V = Pack<S, P>;
  int packsPerRow = int(n / P), total = int(count) * packsPerRow;
  for (int i0 = threadIdx.x; i0 < total; i0 += kAhead * kNormThreads) {
    V v[3][kAhead];
#pragma unroll
    for (int t = 0; t < 3; ++t)
#pragma unroll
      for (int a = 0; a < kAhead; ++a) {
        int i = i0 + a * kNormThreads;
        if (t < tiles && i < total)
          v[t][a] = reinterpret_cast<const V *>(src[t])[i];
      }
#pragma unroll
    for (int t = 0; t < 3; ++t)
#pragma unroll
      for (int a = 0; a < kAhead; ++a) {
        int i = i0 + a * kNormThreads;
        if (t < tiles && i < total) {
          int r = i / packsPerRow, c = i - r * packsPerRow;
          *reinterpret_cast<V *>(tile + (t * chunkRows + r) * stride + c * P) =
              v[t][a];
        }
      }
  }
}

/// norm_grad_params with one block per segment of rows (math/
/// NormParamSums.h's steps 1 and 2 without a second reading of x and g):
/// the block stages kChunkRows rows at a time in shared memory (x, g and
/// the addend, stageRows' 12 loads of a thread in flight at once); each
/// half-warp takes a row's statistics and sums as normGradKernel does
/// (the same functions, reading the staged row); then each thread takes P
/// columns through the chunk's rows in order, writing dx (and its copy)
/// and adding the rows' terms to its columns' segment sums, which stay in
/// shared memory until the segment's last chunk. Writes partials as
/// normParamPartialsKernel does. P: elements per load (1, or 16 bytes of
/// them where every row and pointer is aligned to that).
template <typename S, typename N, int P>
__global__ void __launch_bounds__(kNormThreads, 1)
    normSegmentKernel(const S *x, const S *scale, const S *g, const S *addend,
                      S *dx, N *narrowed, double *partials, int64_t rows,
                      int64_t n, bool centered, bool withBias, S eps,
                      StagedLayout l) {
  static_assert(std::is_same_v<S, Compute<S>>, "f32 and f64 only");
  extern __shared__ __align__(16) unsigned char normShared[];
  double *acc = reinterpret_cast<double *>(normShared + l.acc);
  S(*rowStats)[4] = reinterpret_cast<S(*)[4]>(normShared + l.rowStats);
  S *scaleShared = reinterpret_cast<S *>(normShared + l.params);
  S *tile = reinterpret_cast<S *>(normShared + l.tile);
  int64_t sums = withBias ? 2 : 1;
  int64_t per = math::normSegmentRows(rows);
  int64_t begin = int64_t(blockIdx.x) * per;
  int64_t end = begin + per < rows ? begin + per : rows;
  for (int64_t j = threadIdx.x; j < n; j += kNormThreads)
    scaleShared[j] = scale[j];
  for (int64_t i = threadIdx.x; i < sums * n; i += kNormThreads)
    acc[i] = 0;
  int half = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  for (int64_t first = begin; first < end; first += l.chunkRows) {
    int64_t count = end - first < l.chunkRows ? end - first : l.chunkRows;
    const S *src[3] = {x + first * n, g + first * n,
                       addend ? addend + first * n : nullptr};
    __syncthreads(); // the previous chunk's tiles are read
    stageRows<S, P>(src, tile, addend ? 3 : 2, count, n, l.stride, l.chunkRows);
    __syncthreads();
    // Each half-warp a row's statistics and sums; a half-warp past the
    // chunk's rows whose warp has a row reads row 0 again (the warp's
    // shuffles need it) and keeps nothing; a warp without rows waits.
    if (half / 2 * 2 < count) {
      bool valid = half < count;
      const S *xr = tile + (valid ? half : 0) * l.stride;
      const S *gr = xr + l.chunkRows * l.stride;
      S mean;
      S rstd = rowStatistics(xr, lane, n, centered, eps, mean);
      auto dAt = [&](int64_t j) { return gr[j] * scaleShared[j]; };
      auto dhAt = [&](int64_t j) { return dAt(j) * ((xr[j] - mean) * rstd); };
      S sumD, sumDX;
      gradSums<S, true>(lane, n, dAt, dhAt, sumD, sumDX);
      if (valid && lane == 0) {
        rowStats[half][0] = mean;
        rowStats[half][1] = rstd;
        rowStats[half][2] = centered ? sumD / S(n) : S(0);
        rowStats[half][3] = sumDX / S(n);
      }
    }
    __syncthreads();
    // Each thread P columns through the rows in order: dx as normGradKernel
    // writes it, and the segment sums' terms as normParamPartialsKernel
    // adds them.
    for (int64_t j = int64_t(threadIdx.x) * P; j < n;
         j += int64_t(kNormThreads) * P) {
      double scaleSum[P], biasSum[P];
      S s[P];
#pragma unroll
      for (int u = 0; u < P; ++u) {
        scaleSum[u] = acc[j + u];
        biasSum[u] = withBias ? acc[n + j + u] : 0.0;
        s[u] = scaleShared[j + u];
      }
#pragma unroll 2
      for (int64_t r = 0; r < count; ++r) {
        // One vector load from each tile (P words a thread: scalar loads
        // of 4t + u would meet 4 threads in each bank).
        const S *at = tile + r * l.stride + j;
        Pack<S, P> xv = *reinterpret_cast<const Pack<S, P> *>(at);
        at += l.chunkRows * l.stride;
        Pack<S, P> gv = *reinterpret_cast<const Pack<S, P> *>(at);
        Pack<S, P> av;
        if (addend)
          av = *reinterpret_cast<const Pack<S, P> *>(at +
                                                     l.chunkRows * l.stride);
        S mean = rowStats[r][0], rstd = rowStats[r][1];
        S meanD = rowStats[r][2], meanDX = rowStats[r][3];
        Pack<S, P> out;
        Pack<N, P> copy;
#pragma unroll
        for (int u = 0; u < P; ++u) {
          S h = (xv.v[u] - mean) * rstd;
          S v = rstd * (gv.v[u] * s[u] - h * meanDX - meanD);
          if (addend)
            v = av.v[u] + v; // graph.add's rounding
          out.v[u] = v;
          store(copy.v, u, v);
          scaleSum[u] += math::scaleGradTerm(gv.v[u], h);
          biasSum[u] += double(gv.v[u]);
        }
        *reinterpret_cast<Pack<S, P> *>(dx + (first + r) * n + j) = out;
        if (narrowed)
          *reinterpret_cast<Pack<N, P> *>(narrowed + (first + r) * n + j) =
              copy;
      }
#pragma unroll
      for (int u = 0; u < P; ++u) {
        acc[j + u] = scaleSum[u];
        if (withBias)
          acc[n + j + u] = biasSum[u];
      }
    }
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < sums * n; i += kNormThreads)
    partials[int64_t(blockIdx.x) * sums * n + i] = acc[i];
}

/// An f32 norm's forward with its rows staged (normKernel's results; Y:
/// f32, or the 16-bit type of a narrowed norm): each block stages 16 rows
/// at a time in shared memory (stageRows' 4 loads of a thread in flight
/// at once),
/// each half-warp takes a row's statistics from there (rowStatistics,
/// as normKernel), then each thread writes P columns of the rows (one
/// vector store of P where P > 1).
template <typename Y, int P>
__global__ void __launch_bounds__(kNormThreads)
    normStagedKernel(const float *x, const float *scale, const float *bias,
                     Y *y, int64_t rows, int64_t n, bool centered, float eps,
                     StagedLayout l) {
  extern __shared__ __align__(16) unsigned char normShared[];
  float(*rowStats)[4] = reinterpret_cast<float(*)[4]>(normShared + l.rowStats);
  float *scaleShared = reinterpret_cast<float *>(normShared + l.params);
  float *biasShared = scaleShared + n;
  float *tile = reinterpret_cast<float *>(normShared + l.tile);
  // The defaults normKernel multiplies and adds.
  for (int64_t j = threadIdx.x; j < n; j += kNormThreads) {
    scaleShared[j] = scale ? scale[j] : 1.0f;
    biasShared[j] = bias ? bias[j] : 0.0f;
  }
  int half = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  for (int64_t first = int64_t(blockIdx.x) * l.chunkRows; first < rows;
       first += int64_t(gridDim.x) * l.chunkRows) {
    int64_t count = rows - first < l.chunkRows ? rows - first : l.chunkRows;
    const float *src[3] = {x + first * n, nullptr, nullptr};
    __syncthreads(); // the previous chunk's tile is read
    stageRows<float, P>(src, tile, 1, count, n, l.stride, l.chunkRows);
    __syncthreads();
    if (half / 2 * 2 < count) {
      // A half-warp past the chunk's rows (in a warp with one) reads row
      // 0 again (the warp's shuffles need it) and keeps nothing.
      bool valid = half < count;
      float mean;
      float rstd = rowStatistics(tile + (valid ? half : 0) * l.stride, lane, n,
                                 centered, eps, mean);
      if (valid && lane == 0) {
        rowStats[half][0] = mean;
        rowStats[half][1] = rstd;
      }
    }
    __syncthreads();
    for (int64_t j = int64_t(threadIdx.x) * P; j < n;
         j += int64_t(kNormThreads) * P) {
      // Vector loads from shared memory (see normSegmentKernel).
      using V = Pack<float, P>;
      V s = *reinterpret_cast<const V *>(scaleShared + j);
      V b = *reinterpret_cast<const V *>(biasShared + j);
#pragma unroll 2
      for (int64_t r = 0; r < count; ++r) {
        V xv = *reinterpret_cast<const V *>(tile + r * l.stride + j);
        float mean = rowStats[r][0], rstd = rowStats[r][1];
        Pack<Y, P> out;
#pragma unroll
        for (int u = 0; u < P; ++u)
          store(out.v, u, (xv.v[u] - mean) * rstd * s.v[u] + b.v[u]);
        *reinterpret_cast<Pack<Y, P> *>(y + (first + r) * n + j) = out;
      }
    }
  }
}

/// The shared memory a block may opt into on the current device (0 if
/// unknown: then no kernel stages rows).
size_t sharedMemoryOptIn() {
  int device = 0, bytes = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                             device) != cudaSuccess) {
    (void)cudaGetLastError(); // not left for the next launch's check
    return 0;
  }
  return size_t(bytes);
}

/// Launches `kernel` on `blocks` blocks of kNormThreads with `l`'s shared
/// memory, the kernel opted into the device's whole `budget` (above the
/// default 48 KB; always the same value, so that threads launching the
/// kernel with different layouts cannot lower it under one another).
template <typename... Params, typename... Args>
Status launchStaged(const KernelCall &call, const char *name,
                    void (*kernel)(Params...), unsigned blocks,
                    const StagedLayout &l, size_t budget, cudaStream_t stream,
                    Args... args) {
  cudaError_t opted = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(budget));
  if (opted != cudaSuccess) {
    (void)cudaGetLastError(); // not left for the next launch's check
    std::string what = std::string(opcodeName(call.op)) +
                       ": cudaFuncSetAttribute(" + name + ")";
    return fromCudaError(int(opted), what.c_str());
  }
  kernel<<<blocks, kNormThreads, l.bytes, stream>>>(args...);
  return checkLaunch(call, name);
}

/// normStagedKernel for an f32 norm writing Y, where 16 rows can be
/// staged; `launched` false (nothing queued) where they cannot.
template <typename Y>
Status runStagedNorm(const KernelCall &call, cudaStream_t stream,
                     const float *x, const float *scale, const float *bias,
                     Y *y, int64_t rows, int64_t n, bool centered, float eps,
                     bool &launched) {
  constexpr int kVector = 4; // 16 bytes of f32
  bool vector = n % kVector == 0 && packAligned(x, 16) &&
                packAligned(y, kVector * sizeof(Y));
  size_t budget = sharedMemoryOptIn();
  StagedLayout layout =
      stagedLayout<float>(n, vector ? kVector : 1, 1, 0, 2, budget);
  launched = layout.chunkRows == kChunkRows;
  if (!launched)
    return okStatus();
  int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  return launchStaged(
      call, "normStagedKernel",
      vector ? normStagedKernel<Y, kVector> : normStagedKernel<Y, 1>,
      unsigned(chunks < 65536 ? chunks : 65536), layout, budget, stream, x,
      scale, bias, y, rows, n, centered, eps, layout);
}

/// Blocks for `rows` rows, 16 per block (the kernels loop past the cap).
unsigned normGrid(int64_t rows) {
  int64_t perBlock = kNormThreads / kLanes;
  int64_t blocks = (rows + perBlock - 1) / perBlock;
  return unsigned(blocks < 65536 ? blocks : 65536);
}

} // namespace

Status runNorm(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  bool layer = call.op == Opcode::LayerNorm;
  int axis = int(call.ints[0]);
  bool hasScale = call.ints[1] != 0;
  bool hasBias = layer && call.ints[2] != 0;
  const void *scale = hasScale ? call.inputs[1].data : nullptr;
  const void *bias = hasBias ? call.inputs[hasScale ? 2 : 1].data : nullptr;
  int64_t rows = x.product(0, axis), n = x.product(axis, x.rank);
  if (rows == 0 || n == 0)
    return okStatus();
  cudaStream_t stream = streamOf(call).handle();
  if (y.dtype != x.dtype) { // an f32 norm narrowed to 16 bits
    if (x.dtype != DType::F32 ||
        (y.dtype != DType::BF16 && y.dtype != DType::F16))
      return kernelError(call, std::string("a ") + dtypeName(x.dtype) +
                                   " norm cannot write " + dtypeName(y.dtype));
    const float *xs = x.as<const float>();
    auto *sc = static_cast<const float *>(scale);
    auto *bi = static_cast<const float *>(bias);
    float eps = float(call.floats[0]);
    bool launched = false;
    Status staged = y.dtype == DType::BF16
                        ? runStagedNorm(call, stream, xs, sc, bi, y.as<Bf16>(),
                                        rows, n, layer, eps, launched)
                        : runStagedNorm(call, stream, xs, sc, bi, y.as<Half>(),
                                        rows, n, layer, eps, launched);
    if (launched || !staged.ok())
      return staged;
    if (y.dtype == DType::BF16)
      normKernel<float, Bf16><<<normGrid(rows), kNormThreads, 0, stream>>>(
          xs, sc, bi, y.as<Bf16>(), rows, n, layer, eps);
    else
      normKernel<float, Half><<<normGrid(rows), kNormThreads, 0, stream>>>(
          xs, sc, bi, y.as<Half>(), rows, n, layer, eps);
    return checkLaunch(call, "normKernel");
  }
  if (x.dtype == DType::F32) {
    bool launched = false;
    Status staged = runStagedNorm(
        call, stream, x.as<const float>(), static_cast<const float *>(scale),
        static_cast<const float *>(bias), y.as<float>(), rows, n, layer,
        float(call.floats[0]), launched);
    if (launched || !staged.ok())
      return staged;
  }
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    normKernel<S><<<normGrid(rows), kNormThreads, 0, stream>>>(
        x.as<const S>(), static_cast<const S *>(scale),
        static_cast<const S *>(bias), y.as<S>(), rows, n, layer,
        C(call.floats[0]));
    return checkLaunch(call, "normKernel");
  });
}

namespace {

/// norm_grad_params: the parameters' sums in math/NormParamSums.h's order
/// (the CPU's bits), and dx. Where a segment's rows can be staged in
/// shared memory kChunkRows (at least kMinChunkRows) at a time,
/// normSegmentKernel reads x, g and the addend once; else normGradKernel's
/// dx with each row's statistics kept in scratch, then the sums from x, g
/// and the statistics. f32 and f64 only.
Status runNormGradParams(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  int axis = int(call.ints[0]);
  bool centered = call.ints[1] != 0, withBias = call.ints[2] != 0;
  int64_t rows = x.product(0, axis), n = x.product(axis, x.rank);
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    if constexpr (!std::is_same_v<S, C>) {
      return unsupported(call, x.dtype); // 16-bit: f32 and f64 only
    } else {
      if (n == 0)
        return okStatus();
      cudaStream_t stream = streamOf(call).handle();
      int64_t segments = math::normSegments(rows);
      int64_t sums = withBias ? 2 : 1;
      S *scaleGrad = call.outputs[1].as<S>();
      S *biasGrad = withBias ? call.outputs[2].as<S>() : nullptr;
      // partials (f64) first, then the statistics (C), both aligned.
      uint64_t partialBytes = uint64_t(segments * sums * n) * sizeof(double);
      Scratch scratch;
      TRAINC_RETURN_IF_ERROR(scratch.allocate(
          call, partialBytes + uint64_t(2 * rows) * sizeof(C) + 8));
      double *partials = scratch.as<double>();
      C *stats = reinterpret_cast<C *>(scratch.as<char>() + partialBytes);
      if (rows > 0) {
        const S *xs = x.as<const S>(), *scale = call.inputs[1].as<const S>();
        const S *g = call.inputs[2].as<const S>();
        const S *addend = call.ints[3] != 0 ? call.inputs[3].as<S>() : nullptr;
        S *dx = call.outputs[0].as<S>();
        C eps = C(call.floats[0]);
        const TensorRef *narrowed =
            call.ints[4] != 0 ? &call.outputs[call.numOutputs - 1] : nullptr;
        // Rows staged 16 bytes a load where every row and pointer allows.
        constexpr int kVector = 16 / sizeof(S);
        bool vector = n % kVector == 0;
        for (const void *p :
             {static_cast<const void *>(xs), static_cast<const void *>(g),
              static_cast<const void *>(addend), static_cast<const void *>(dx)})
          vector = vector && packAligned(p, 16);
        if (narrowed) // its packs of kVector 16-bit elements
          vector = vector && packAligned(narrowed->data, kVector * 2);
        size_t budget = sharedMemoryOptIn();
        StagedLayout layout = stagedLayout<S>(n, vector ? kVector : 1,
                                              addend ? 3 : 2, sums, 1, budget);
        bool staged = layout.chunkRows >= kMinChunkRows;
        auto launch = [&](auto *copy) -> Status {
          using N = std::remove_pointer_t<decltype(copy)>;
          if (staged)
            return launchStaged(call, "normSegmentKernel",
                                vector ? normSegmentKernel<S, N, kVector>
                                       : normSegmentKernel<S, N, 1>,
                                unsigned(segments), layout, budget, stream, xs,
                                scale, g, addend, dx, copy, partials, rows, n,
                                centered, withBias, eps, layout);
          normGradKernel<S, true, N>
              <<<normGrid(rows), kNormThreads, 0, stream>>>(
                  xs, scale, g, addend, dx, copy, stats, rows, n, centered,
                  eps);
          TRAINC_RETURN_IF_ERROR(checkLaunch(call, "normGradKernel"));
          dim3 grid(unsigned((n + kParamColumns - 1) / kParamColumns),
                    unsigned((segments + kParamSegments - 1) / kParamSegments));
          normParamPartialsKernel<S>
              <<<grid, dim3(kParamColumns, kParamSegments), 0, stream>>>(
                  xs, g, stats, partials, rows, n, withBias);
          return checkLaunch(call, "normParamPartialsKernel");
        };
        if (!narrowed) {
          TRAINC_RETURN_IF_ERROR(launch(static_cast<S *>(nullptr)));
        } else if constexpr (std::is_same_v<S, float>) {
          if (narrowed->dtype == DType::BF16)
            TRAINC_RETURN_IF_ERROR(launch(narrowed->as<Bf16>()));
          else if (narrowed->dtype == DType::F16)
            TRAINC_RETURN_IF_ERROR(launch(narrowed->as<Half>()));
          else
            return unsupported(call, narrowed->dtype);
        } else {
          return unsupported(call, narrowed->dtype); // f32 only (C9)
        }
      }
      int64_t outputs = sums * n;
      normParamCombineKernel<S>
          <<<unsigned((outputs + 255) / 256), 256, 0, stream>>>(
              partials, scaleGrad, biasGrad, segments, n, withBias);
      return checkLaunch(call, "normParamCombineKernel");
    }
  });
}

} // namespace

Status runNormGrad(const KernelCall &call) {
  if (call.op == Opcode::NormGradParams)
    return runNormGradParams(call);
  const TensorRef &x = call.inputs[0];
  int axis = int(call.ints[0]);
  bool hasScale = call.ints[1] != 0, centered = call.ints[2] != 0;
  const void *scale = hasScale ? call.inputs[1].data : nullptr;
  const TensorRef &g = call.inputs[hasScale ? 2 : 1];
  const TensorRef &dx = call.outputs[0], &xhat = call.outputs[1];
  int64_t rows = x.product(0, axis), n = x.product(axis, x.rank);
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    if (rows == 0 || n == 0)
      return okStatus();
    normGradKernel<S, false>
        <<<normGrid(rows), kNormThreads, 0, streamOf(call).handle()>>>(
            x.as<const S>(), static_cast<const S *>(scale), g.as<const S>(),
            static_cast<const S *>(nullptr), dx.as<S>(),
            static_cast<S *>(nullptr), xhat.as<S>(), rows, n, centered,
            C(call.floats[0]));
    return checkLaunch(call, "normGradKernel");
  });
}

} // namespace trainc::cuda
