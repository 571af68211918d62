//===- AttentionTensorCore.cu - bf16 attention on the tensor cores --------===//
//
// Attention.cu's algorithm (flash-style forward; the gradient's three
// passes: statistics, dq, dk and dv; every output owned by one block, no
// atomics) with every product of two tiles on the tensor cores, for bf16
// calls whose head sizes are at most 64 (tensorCoreAttentionFits). The
// math is Attention.cu's, and the per-element rules (which keys a query
// sees, its score, its weight) are the same functions (Attention.cuh).
//
// Softmax statistics kept (ints[5]). The forward then also writes each
// query row's log-sum-exp m + log l, natural log as everywhere here (exp
// and log, not exp2 and log2), f32; a gradient given them skips the
// statistics pass (Attention.cu computes D from the forward's result), and
// gradQKernel and gradKVKernel read the forward's log-sum-exps in place of
// statsKernel's, and each row's factor (Attention.cu's pass 1, math/
// AttentionStats.h) from Attention.cu's attentionDeltaKernel or
// statsKernel: dq's sum times it, each p of dk and dv times it. A row that sees
// nothing has -inf there and +inf from statsKernel: either way all its scores
// are -inf, which weightOf maps to 0 without reading the reference. (Compiled
// for sm_80 and sm_90a, no spills; not yet run on a GPU.)
//
// Tiles. A block of 4 warps owns 64 rows (query rows; key rows for dk and
// dv), 16 per warp, and walks over tiles of 64 columns (keys; queries).
// Every operand tile is staged in shared memory as [64][64] bf16 (rows
// past the tensor's end and features past the head size are zeros), in
// rows of 72 elements so that the fragment reads below hit 32 different
// banks. A transposed copy is staged where a product needs one (V for
// o += p v, K for dq, Q and g_o for dk and dv).
//
// Products: mma.sync m16n8k16, bf16 operands, f32 accumulators (sm_80 and
// later). Fragment layouts are PTX's: in a warp, lane = 4 g + t; the
// accumulator of a 16 x 8 tile holds (row g, cols 2t, 2t + 1) and (row
// g + 8, the same cols); the A operand (16 x 16) (rows g and g + 8, cols
// 2t, 2t + 1 and 2t + 8, 2t + 9); the B operand (16 x 8, given as its
// transpose, rows n) (row n = g, cols 2t, 2t + 1 and 2t + 8, 2t + 9). So a
// warp's scores come out row-wise: each row's max and sum combine the 4
// lanes of a group (shuffles), and a tile of probabilities in accumulator
// layout is already the A operand of the next product.
//
// Numerics. q, k, v and g_o are bf16, so their products are exact and
// summed in f32 (the scalar kernels' arithmetic, in another order). The
// probabilities and score gradients are f32 values; they enter the tensor
// cores as two bf16 terms each (x = hi + lo, hi = bf16(x), lo = bf16(x -
// hi)), 16 significant bits: within 2^-17 of each term, far inside the
// f32 tolerance the kernel tests hold both implementations to, where a
// single bf16 rounding (2^-9) fails. Results round once to bf16.
//
// Dropout (floats[2]). Each kernel has a `Dropped` instance, chosen at
// launch, that multiplies each probability by Attention.cuh's dropWeight
// (math/Dropout.h's mask, numbered as on the CPU) where the scalar
// kernels do: where p meets v (o += p w v) and g_o (dv += p w g_o), and
// dp (ds = p (dp w - D), D = sum_j p w dp); the row sums and log-sum-exps
// stay undropped. The instances without it keep their code and registers;
// the mask's hash costs a block per SM or none (kForwardDroppedBlocks).
//
// Whole tiles. A full tile with no mask whose first query row sees its
// last key (under a causal mask, every tile left of the diagonal) takes
// each score as scale * dot, without scoreOf's tests per score; the
// gradient's kernels use it (wholeKeys), the forward has no register to
// spare for it.
//
// Shape legend: Attention.cu's; D, Dv <= 64 padded to 64 in the tiles.
// Layouts: Attention.cu's too. q, k, v, g_o, the result and the
// gradients are each read or written through their own layout ([B, H, S,
// D] or [B, S, H, D], Attention.cuh), a tile's rows seqStride elements
// apart. A tile is staged with 16-byte loads where its start is 16-byte
// aligned and its width and row stride are multiples of 8 elements (a head
// size of 8k in either layout: GPT-2's 64, rows 768 apart when
// sequence-major), else 2 elements at a time; both stage the same bits,
// and results are stored an element at a time, so no layout needs the
// scalar kernels.
//
//===----------------------------------------------------------------------===//

#include "cuda/Attention.cuh"
#include "math/AttentionStats.h"

#include <cstdint>

namespace trainc::cuda {

using namespace attention;

bool tensorCoreAttentionFits(DType dtype, const AttnShape &a) {
  // A soft cap's gradient needs each score's dot product where these
  // kernels have already turned it into the score: Attention.cu runs it.
  return dtype == DType::BF16 && a.d >= 1 && a.d <= kTensorCoreMaxHead &&
         a.dv >= 1 && a.dv <= kTensorCoreMaxHead && !(a.softcap > 0);
}

namespace {

constexpr int kTile = 64;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
/// Elements (and 32-bit words) per staged row.
constexpr int kPitch = kTile + 8;
constexpr int kPitchWords = kPitch / 2;
constexpr int kTileElements = kTile * kPitch;
/// 8-wide accumulator tiles across 64 columns; 16-deep steps along 64.
constexpr int kNTiles = kTile / 8;
constexpr int kKSteps = kTile / 16;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;
/// Blocks per multiprocessor each kernel is compiled for (its register
/// budget: 65536 / (128 blocks)): as many as fit without spilling.
/// Latency, not arithmetic, limits these kernels (the forward at 2 blocks
/// per SM: 12% occupancy, 36% of the SM's throughput, on an H100).
/// (sm_80's code needs more registers than sm_90's.)
/// The `Dropped` instances (dropout) need registers for the mask's hash.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
constexpr int kForwardBlocks = 3, kStatsBlocks = 3, kGradQBlocks = 2,
              kGradKVBlocks = 2;
constexpr int kForwardDroppedBlocks = 2, kStatsDroppedBlocks = 2,
              kGradQDroppedBlocks = 2, kGradKVDroppedBlocks = 2;
#else
constexpr int kForwardBlocks = 4, kStatsBlocks = 4, kGradQBlocks = 3,
              kGradKVBlocks = 2;
constexpr int kForwardDroppedBlocks = 3, kStatsDroppedBlocks = 3,
              kGradQDroppedBlocks = 3, kGradKVDroppedBlocks = 2;
#endif

/// Accumulators of N 8-wide tiles (a warp's 16 rows by 8 N columns).
template <int N> using AccOf = float[N][4];
using Acc = AccOf<kNTiles>;
using Frag = uint32_t[4];

__device__ __forceinline__ void mma(float (&d)[4], const Frag &a, uint32_t b0,
                                    uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack(uint16_t low, uint16_t high) {
  return uint32_t(low) | (uint32_t(high) << 16);
}

/// A lane's place in its warp's fragments.
struct Lane {
  int warp, g, t;
};
__device__ __forceinline__ Lane laneOf() {
  int lane = int(threadIdx.x) % 32;
  return Lane{int(threadIdx.x) / 32, lane / 4, lane % 4};
}

//===--- Staging ----------------------------------------------------------===//

/// Whether rows of `width` elements, `stride` apart from `src`, can be
/// read 8 at a time (16-byte loads: the width and the stride multiples of
/// 8, the start aligned, so every row's start is). Either layout's stride
/// is a multiple of the width (D, or H * D), so a head size of 8k takes
/// this path wherever the tensor's start is aligned.
__device__ __forceinline__ bool wide(const Bf16 *src, int64_t stride,
                                     int64_t width) {
  return width % 8 == 0 && stride % 8 == 0 &&
         (reinterpret_cast<uintptr_t>(src) & 15) == 0;
}

/// tile[r][f] = src[r * stride + f] for r < rows and f < width, else 0,
/// over the whole [64][64] tile. Called by every thread of the block.
__device__ void stageRows(uint16_t *tile, const Bf16 *src, int64_t stride,
                          int64_t rows, int64_t width) {
  if (wide(src, stride, width)) {
    for (int e = int(threadIdx.x); e < kTile * kTile / 8; e += kThreads) {
      int r = e / (kTile / 8), f = 8 * (e % (kTile / 8));
      uint4 x = make_uint4(0, 0, 0, 0);
      if (r < rows && f < width)
        x = *reinterpret_cast<const uint4 *>(src + r * stride + f);
      *reinterpret_cast<uint4 *>(tile + r * kPitch + f) = x;
    }
    return;
  }
  for (int e = int(threadIdx.x); e < kTile * kTile / 2; e += kThreads) {
    int r = e / (kTile / 2), f = 2 * (e % (kTile / 2));
    uint16_t x0 = 0, x1 = 0;
    if (r < rows) {
      const Bf16 *p = src + r * stride + f;
      if (f < width)
        x0 = p[0].bits;
      if (f + 1 < width)
        x1 = p[1].bits;
    }
    *reinterpret_cast<uint32_t *>(tile + r * kPitch + f) = pack(x0, x1);
  }
}

/// tile[f][r] = src[r * stride + f], the transpose of stageRows's tile.
/// Neighbouring threads take neighbouring rows (conflict-free stores).
__device__ void stageColumns(uint16_t *tile, const Bf16 *src, int64_t stride,
                             int64_t rows, int64_t width) {
  if (wide(src, stride, width)) {
    for (int e = int(threadIdx.x); e < kTile * kTile / 8; e += kThreads) {
      int r = e % kTile, f = 8 * (e / kTile);
      uint4 x = make_uint4(0, 0, 0, 0);
      if (r < rows && f < width)
        x = *reinterpret_cast<const uint4 *>(src + r * stride + f);
      const uint32_t words[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        tile[(f + 2 * i) * kPitch + r] = uint16_t(words[i] & 0xffffu);
        tile[(f + 2 * i + 1) * kPitch + r] = uint16_t(words[i] >> 16);
      }
    }
    return;
  }
  for (int e = int(threadIdx.x); e < kTile * kTile; e += kThreads) {
    int r = e % kTile, f = e / kTile;
    tile[f * kPitch + r] =
        r < rows && f < width ? src[r * stride + f].bits : uint16_t(0);
  }
}

/// The A fragment of rows [row0, row0 + 16) and columns [16 kk, 16 kk + 16)
/// of a staged tile.
__device__ __forceinline__ void aFragment(const uint16_t *tile, int row0,
                                          int kk, Lane l, Frag &a) {
  const uint32_t *words = reinterpret_cast<const uint32_t *>(tile);
  const uint32_t *r0 = words + (row0 + l.g) * kPitchWords + kk * 8 + l.t;
  const uint32_t *r1 = r0 + 8 * kPitchWords;
  a[0] = r0[0];
  a[1] = r1[0];
  a[2] = r0[4];
  a[3] = r1[4];
}

/// acc[n] += a x (rows [8 (n0 + n), 8 (n0 + n) + 8) of the staged tile,
/// columns [16 kk, 16 kk + 16))^T for every n: the product of a warp's 16
/// rows with the tile's rows, one 16-deep step.
template <int N>
__device__ __forceinline__ void mmaRows(AccOf<N> &acc, const Frag &a,
                                        const uint16_t *tile, int n0, int kk,
                                        Lane l) {
  const uint32_t *words = reinterpret_cast<const uint32_t *>(tile);
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const uint32_t *row =
        words + ((n0 + n) * 8 + l.g) * kPitchWords + kk * 8 + l.t;
    mma(acc[n], a, row[0], row[4]);
  }
}

/// acc = rows [row0, row0 + 16) of `rows` x (rows [8 n0, 8 (n0 + N)) of
/// `tile`)^T, over all 64 features (the A fragments read from shared
/// memory as needed: fewer registers).
template <int N>
__device__ __forceinline__ void productOf(AccOf<N> &acc, const uint16_t *rows,
                                          int row0, const uint16_t *tile,
                                          int n0, Lane l) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc[n][e] = 0;
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk) {
    Frag a;
    aFragment(rows, row0, kk, l, a);
    mmaRows(acc, a, tile, n0, kk, l);
  }
}

/// acc += x x (columns [16 kk0, 16 kk0 + 8 N) of tile)^T, x an f32 16 x
/// 8N block in accumulator layout taken as hi + lo bf16 terms (the
/// header's numerics).
template <int N>
__device__ __forceinline__ void accumulateSplit(Acc &acc, const AccOf<N> &x,
                                                const uint16_t *tile, int kk0,
                                                Lane l) {
#pragma unroll
  for (int kk = 0; kk < N / 2; ++kk) {
    const float *x0 = x[2 * kk], *x1 = x[2 * kk + 1];
    const float v[8] = {x0[0], x0[1], x0[2], x0[3], x1[0], x1[1], x1[2], x1[3]};
    Frag hi, lo;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      uint16_t h0 = floatToBf16(v[2 * r]), h1 = floatToBf16(v[2 * r + 1]);
      uint16_t l0 = floatToBf16(v[2 * r] - bf16ToFloat(h0));
      uint16_t l1 = floatToBf16(v[2 * r + 1] - bf16ToFloat(h1));
      hi[r] = pack(h0, h1);
      lo[r] = pack(l0, l1);
    }
    mmaRows(acc, hi, tile, 0, kk0 + kk, l);
    mmaRows(acc, lo, tile, 0, kk0 + kk, l);
  }
}

/// The column of element e of accumulator tile n (its row: g for e < 2,
/// g + 8 after).
__device__ __forceinline__ int columnOf(int n, int e, Lane l) {
  return n * 8 + 2 * l.t + (e & 1);
}

/// The max and the sum over a row's 4 lanes.
__device__ __forceinline__ float groupMax(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float groupSum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

/// The keys [0, end) that a tile of query rows [i0, i0 + rows) sees whole:
/// each of their 64-key tiles has every score scale * dot alone (a full
/// query tile, no mask, and, causal, its first row already sees the
/// tile's last key, as every row after it does; under a causal mask that
/// is every tile left of the diagonal). Those tiles skip scoreOf's tests
/// per score (which row, which key, the mask) and give the same bits.
__device__ __forceinline__ int64_t wholeKeys(const AttnShape &a,
                                             const Bf16 *maskBH, int64_t i0,
                                             int64_t rows) {
  return maskBH || rows < kTile ? 0 : a.allowed(i0) / kTile * kTile;
}

/// s, a warp's raw dot products of its rows `row` with keys [j0, j0 + 64),
/// becomes their scores (scoreOf; scale * dot for a whole tile).
__device__ __forceinline__ void scoresOf(Acc &s, const AttnShape &a,
                                         const Bf16 *maskBH,
                                         const int64_t (&row)[2], int64_t j0,
                                         bool whole, Lane l) {
  if (whole) {
    float scale = float(a.scale);
#pragma unroll
    for (int n = 0; n < kNTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        s[n][e] = scale * s[n][e];
    return;
  }
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[n][e] = scoreOf</*MayCap=*/false>(a, maskBH, row[e >> 1],
                                          j0 + columnOf(n, e, l), s[n][e]);
}

/// One step of the online softmax over key tile j0 for a warp's rows
/// `row` (Attention.cu's forward): s, the tile's raw dot products, becomes
/// the weights exp(score - m) with m each row's running max, updated here;
/// alpha is exp(m_old - m_new), the factor for what was summed before.
__device__ __forceinline__ void
onlineSoftmaxStep(Acc &s, const AttnShape &a, const Bf16 *maskBH,
                  const int64_t (&row)[2], int64_t j0, bool whole, Lane l,
                  float (&m)[2], float (&alpha)[2]) {
  scoresOf(s, a, maskBH, row, j0, whole, l);
  float tileMax[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      tileMax[e >> 1] = fmaxf(tileMax[e >> 1], s[n][e]);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mNew = fmaxf(m[r], groupMax(tileMax[r]));
    alpha[r] = m[r] == -INFINITY ? 0.0f : expOf(m[r] - mNew);
    m[r] = mNew;
  }
#pragma unroll
  for (int n = 0; n < kNTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[n][e] = weightOf(s[n][e], m[e >> 1]);
}

//===--- Forward ----------------------------------------------------------===//

// `a` is __grid_constant__ (read in place, not copied into registers)
// here only: without it this kernel spills 72 bytes on sm_90a, and
// statsKernel spills with it (nvcc 13; AttnLayouts's comment). The price:
// the compiler no longer keeps one copy of the key loop per value of
// `causal`, reading it per score instead.
template <bool Dropped>
__global__ void __launch_bounds__(kThreads, Dropped ? kForwardDroppedBlocks
                                                    : kForwardBlocks)
    forwardKernel(const Bf16 *q, const Bf16 *k, const Bf16 *v, const Bf16 *mask,
                  Bf16 *out, float *lse, const __grid_constant__ AttnShape a,
                  AttnLayouts layouts,
                  const __grid_constant__ AttnDropout drop) {
  extern __shared__ __align__(16) uint16_t shared[];
  uint16_t *qs = shared, *ks = qs + kTileElements, *vt = ks + kTileElements;
  const Lane l = laneOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &oL = layouts.of[kOut];
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    QueryTile qt = queryTileOf(a, tile, kTile);
    const Bf16 *maskBH = maskOf(a, mask, qt.b, qt.h);
    const int64_t row[2] = {qt.i0 + 16 * l.warp + l.g,
                            qt.i0 + 16 * l.warp + l.g + 8};
    __syncthreads();
    stageRows(qs, q + qL.offset(qt.b, qt.h, qt.i0), qL.seqStride, qt.rows, a.d);
    Acc o = {};
    float m[2] = {-INFINITY, -INFINITY}, sum[2] = {0, 0};
    for (int64_t j0 = 0; j0 < qt.keyEnd; j0 += kTile) {
      int64_t keys = minOf(kTile, a.sk - j0);
      __syncthreads();
      stageRows(ks, k + kL.offset(qt.b, qt.kvHead, j0), kL.seqStride, keys,
                a.d);
      stageColumns(vt, v + vL.offset(qt.b, qt.kvHead, j0), vL.seqStride, keys,
                   a.dv);
      __syncthreads();
      Acc s;
      productOf(s, qs, 16 * l.warp, ks, 0, l);
      float alpha[2], partial[2] = {0, 0};
      // Every score through scoreOf: this kernel has no register to spare
      // for the whole tiles' shortcut (it spills on sm_90a).
      onlineSoftmaxStep(s, a, maskBH, row, j0, /*whole=*/false, l, m, alpha);
#pragma unroll
      for (int n = 0; n < kNTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          partial[e >> 1] += s[n][e];
          o[n][e] *= alpha[e >> 1];
          if constexpr (Dropped)
            s[n][e] *= dropWeight<float>(drop, a, qt.b, qt.h, row[e >> 1],
                                         j0 + columnOf(n, e, l));
        }
      // Each lane's share of its rows' sums; the lanes meet at the end.
      sum[0] = sum[0] * alpha[0] + partial[0];
      sum[1] = sum[1] * alpha[1] + partial[1];
      accumulateSplit(o, s, vt, 0, l);
    }
    float total[2] = {groupSum(sum[0]), groupSum(sum[1])};
    // The rows' log-sum-exps when kept: statsKernel's bits (the same sums
    // in the same order), but -inf, not +inf, for a row that sees nothing.
    // The 4 lanes of a row hold the same m and total (butterflies) and all
    // store them: picking one lane costs this kernel spills on sm_80.
    if (lse)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (row[r] < a.sq)
          lse[qt.bh * a.sq + row[r]] =
              m[r] == -INFINITY ? -INFINITY : m[r] + logOf(total[r]);
#pragma unroll
    for (int n = 0; n < kNTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r = e >> 1;
        int64_t f = columnOf(n, e, l);
        if (row[r] < a.sq && f < a.dv)
          store(out, oL.offset(qt.b, qt.h, row[r]) + f,
                m[r] == -INFINITY ? 0.0f : o[n][e] / total[r]);
      }
  }
}

//===--- Gradient ---------------------------------------------------------===//

/// Pass 1: lse = m + log l (+inf for a row that sees nothing), delta =
/// sum_j p_j dp_j (0 there) and the row's factor (Attention.cu's
/// attentionStatsKernel's), per query row.
template <bool Dropped>
__global__ void __launch_bounds__(kThreads,
                                  Dropped ? kStatsDroppedBlocks : kStatsBlocks)
    statsKernel(const Bf16 *q, const Bf16 *k, const Bf16 *v, const Bf16 *g,
                const Bf16 *mask, float *lse, float *delta, float *factor,
                AttnShape a, AttnLayouts layouts,
                const __grid_constant__ AttnDropout drop) {
  extern __shared__ __align__(16) uint16_t shared[];
  uint16_t *qs = shared, *gs = qs + kTileElements, *ks = gs + kTileElements,
           *vs = ks + kTileElements;
  const Lane l = laneOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &gL = layouts.of[kGradOut];
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    QueryTile qt = queryTileOf(a, tile, kTile);
    const Bf16 *maskBH = maskOf(a, mask, qt.b, qt.h);
    const int64_t wholeEnd = wholeKeys(a, maskBH, qt.i0, qt.rows);
    const int64_t row[2] = {qt.i0 + 16 * l.warp + l.g,
                            qt.i0 + 16 * l.warp + l.g + 8};
    __syncthreads();
    stageRows(qs, q + qL.offset(qt.b, qt.h, qt.i0), qL.seqStride, qt.rows, a.d);
    stageRows(gs, g + gL.offset(qt.b, qt.h, qt.i0), gL.seqStride, qt.rows,
              a.dv);
    float m[2] = {-INFINITY, -INFINITY}, sum[2] = {0, 0}, dot[2] = {0, 0};
    for (int64_t j0 = 0; j0 < qt.keyEnd; j0 += kTile) {
      int64_t keys = minOf(kTile, a.sk - j0);
      __syncthreads();
      stageRows(ks, k + kL.offset(qt.b, qt.kvHead, j0), kL.seqStride, keys,
                a.d);
      stageRows(vs, v + vL.offset(qt.b, qt.kvHead, j0), vL.seqStride, keys,
                a.dv);
      __syncthreads();
      Acc s, dp;
      productOf(s, qs, 16 * l.warp, ks, 0, l);
      productOf(dp, gs, 16 * l.warp, vs, 0, l);
      float alpha[2], partialSum[2] = {0, 0}, partialDot[2] = {0, 0};
      onlineSoftmaxStep(s, a, maskBH, row, j0, j0 < wholeEnd, l, m, alpha);
#pragma unroll
      for (int n = 0; n < kNTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          partialSum[e >> 1] += s[n][e];
          float w = 1;
          if constexpr (Dropped)
            w = dropWeight<float>(drop, a, qt.b, qt.h, row[e >> 1],
                                  j0 + columnOf(n, e, l));
          partialDot[e >> 1] += s[n][e] * (dp[n][e] * w);
        }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        sum[r] = sum[r] * alpha[r] + partialSum[r];
        dot[r] = dot[r] * alpha[r] + partialDot[r];
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float total = groupSum(sum[r]), totalDot = groupSum(dot[r]);
      if (row[r] < a.sq && l.t == 0) {
        bool empty = m[r] == -INFINITY;
        int64_t at = qt.bh * a.sq + row[r];
        float rowLse = empty ? INFINITY : m[r] + logOf(total);
        lse[at] = rowLse;
        delta[at] = empty ? 0.0f : totalDot / total;
        factor[at] =
            math::lseIsRemade(rowLse) ? expOf(rowLse - m[r]) / total : 1.0f;
      }
    }
  }
}

/// Pass 2: dq = scale * sum_j p (dp - delta) k, per query tile, with p =
/// exp(s - lse) times the row's factor (1 but for remade rows), applied
/// to the row's sum once. The factors follow the deltas in memory
/// (Attention.cu's Scratch): a pointer more spills 8 bytes on sm_80 here.
template <bool Dropped>
__global__ void __launch_bounds__(kThreads,
                                  Dropped ? kGradQDroppedBlocks : kGradQBlocks)
    gradQKernel(const Bf16 *q, const Bf16 *k, const Bf16 *v, const Bf16 *g,
                const Bf16 *mask, const float *lse, const float *delta,
                Bf16 *dq, AttnShape a, AttnLayouts layouts,
                const __grid_constant__ AttnDropout drop) {
  extern __shared__ __align__(16) uint16_t shared[];
  uint16_t *qs = shared, *gs = qs + kTileElements, *ks = gs + kTileElements,
           *kt = ks + kTileElements, *vs = kt + kTileElements;
  const Lane l = laneOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &gL = layouts.of[kGradOut],
                         &dqL = layouts.of[kDq];
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    QueryTile qt = queryTileOf(a, tile, kTile);
    const Bf16 *maskBH = maskOf(a, mask, qt.b, qt.h);
    const int64_t wholeEnd = wholeKeys(a, maskBH, qt.i0, qt.rows);
    const int64_t row[2] = {qt.i0 + 16 * l.warp + l.g,
                            qt.i0 + 16 * l.warp + l.g + 8};
    float rowLse[2], rowDelta[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      bool inside = row[r] < a.sq;
      rowLse[r] = inside ? lse[qt.bh * a.sq + row[r]] : 0.0f;
      rowDelta[r] = inside ? delta[qt.bh * a.sq + row[r]] : 0.0f;
    }
    __syncthreads();
    stageRows(qs, q + qL.offset(qt.b, qt.h, qt.i0), qL.seqStride, qt.rows, a.d);
    stageRows(gs, g + gL.offset(qt.b, qt.h, qt.i0), gL.seqStride, qt.rows,
              a.dv);
    Acc acc = {};
    for (int64_t j0 = 0; j0 < qt.keyEnd; j0 += kTile) {
      int64_t keys = minOf(kTile, a.sk - j0);
      const Bf16 *keyRows = k + kL.offset(qt.b, qt.kvHead, j0);
      __syncthreads();
      stageRows(ks, keyRows, kL.seqStride, keys, a.d);
      stageColumns(kt, keyRows, kL.seqStride, keys, a.d);
      stageRows(vs, v + vL.offset(qt.b, qt.kvHead, j0), vL.seqStride, keys,
                a.dv);
      __syncthreads();
      Acc s, dp;
      productOf(s, qs, 16 * l.warp, ks, 0, l);
      productOf(dp, gs, 16 * l.warp, vs, 0, l);
      scoresOf(s, a, maskBH, row, j0, j0 < wholeEnd, l);
#pragma unroll
      for (int n = 0; n < kNTiles; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          int r = e >> 1;
          float w = 1;
          if constexpr (Dropped)
            w = dropWeight<float>(drop, a, qt.b, qt.h, row[r],
                                  j0 + columnOf(n, e, l));
          s[n][e] = weightOf(s[n][e], rowLse[r]) * (dp[n][e] * w - rowDelta[r]);
        }
      accumulateSplit(acc, s, kt, 0, l);
    }
    float scale = float(a.scale);
#pragma unroll
    for (int n = 0; n < kNTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int r = e >> 1;
        int64_t f = columnOf(n, e, l);
        if (row[r] < a.sq && f < a.d)
          store(
              dq, dqL.offset(qt.b, qt.h, row[r]) + f,
              scale * acc[n][e] *
                  delta[(a.batch + qt.b) * a.hq * a.sq + qt.h * a.sq + row[r]]);
      }
  }
}

/// Pass 3: per key tile of (b, kv head), over the query heads of its group
/// and their query tiles: dv = sum p^T g_o, dk = scale * sum (p (dp -
/// delta))^T q. The warps' rows are keys; the tiles' columns, queries.
template <bool Dropped>
__global__ void __launch_bounds__(kThreads, Dropped ? kGradKVDroppedBlocks
                                                    : kGradKVBlocks)
    gradKVKernel(const Bf16 *q, const Bf16 *k, const Bf16 *v, const Bf16 *g,
                 const Bf16 *mask, const float *lse, const float *delta,
                 const float *factor, Bf16 *dk, Bf16 *dv, AttnShape a,
                 AttnLayouts layouts,
                 const __grid_constant__ AttnDropout drop) {
  extern __shared__ __align__(16) uint16_t shared[];
  uint16_t *ks = shared, *vs = ks + kTileElements, *qs = vs + kTileElements,
           *gs = qs + kTileElements, *qt = gs + kTileElements,
           *gt = qt + kTileElements;
  float *lseTile = reinterpret_cast<float *>(gt + kTileElements);
  float *deltaTile = lseTile + kTile, *factorTile = deltaTile + kTile;
  const Lane l = laneOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &gL = layouts.of[kGradOut],
                         &dkL = layouts.of[kDk], &dvL = layouts.of[kDv];
  int64_t keyTiles = ceilDiv(a.sk, kTile);
  int64_t tiles = a.batch * a.hk * keyTiles;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int64_t bg = tile / keyTiles, j0 = (tile % keyTiles) * kTile;
    int64_t b = bg / a.hk, kvHead = bg % a.hk;
    int64_t keys = minOf(kTile, a.sk - j0);
    const int64_t key[2] = {j0 + 16 * l.warp + l.g, j0 + 16 * l.warp + l.g + 8};
    __syncthreads();
    stageRows(ks, k + kL.offset(b, kvHead, j0), kL.seqStride, keys, a.d);
    stageRows(vs, v + vL.offset(b, kvHead, j0), vL.seqStride, keys, a.dv);
    Acc accK = {}, accV = {};
    const float scale = float(a.scale);
    int64_t firstQuery = a.firstViewer(j0) / kTile * kTile;
    for (int64_t hh = 0; hh < a.group; ++hh) {
      int64_t h = kvHead * a.group + hh, bh = b * a.hq + h;
      const Bf16 *maskBH = maskOf(a, mask, b, h);
      for (int64_t i0 = firstQuery; i0 < a.sq; i0 += kTile) {
        int64_t queries = minOf(kTile, a.sq - i0);
        const Bf16 *queryRows = q + qL.offset(b, h, i0);
        const Bf16 *gradRows = g + gL.offset(b, h, i0);
        __syncthreads();
        stageRows(qs, queryRows, qL.seqStride, queries, a.d);
        stageColumns(qt, queryRows, qL.seqStride, queries, a.d);
        stageRows(gs, gradRows, gL.seqStride, queries, a.dv);
        stageColumns(gt, gradRows, gL.seqStride, queries, a.dv);
        for (int i = int(threadIdx.x); i < kTile; i += kThreads) {
          bool inside = i < queries;
          lseTile[i] = inside ? lse[bh * a.sq + i0 + i] : 0.0f;
          deltaTile[i] = inside ? delta[bh * a.sq + i0 + i] : 0.0f;
          factorTile[i] = inside ? factor[bh * a.sq + i0 + i] : 1.0f;
        }
        __syncthreads();
        bool whole = j0 < wholeKeys(a, maskBH, i0, queries);
        // Half the tile's queries at a time (fewer registers).
        for (int half = 0; half < 2; ++half) {
          AccOf<kNTiles / 2> s, dp;
          productOf(s, ks, 16 * l.warp, qs, half * kNTiles / 2, l);
          productOf(dp, vs, 16 * l.warp, gs, half * kNTiles / 2, l);
#pragma unroll
          for (int n = 0; n < kNTiles / 2; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              int c = columnOf(half * kNTiles / 2 + n, e, l);
              float sc = whole ? scale * s[n][e]
                               : scoreOf</*MayCap=*/false>(
                                     a, maskBH, i0 + c, key[e >> 1], s[n][e]);
              float p = weightOf(sc, lseTile[c]) * factorTile[c], w = 1;
              if constexpr (Dropped)
                w = dropWeight<float>(drop, a, b, h, i0 + c, key[e >> 1]);
              s[n][e] = p * w;
              dp[n][e] = p * (dp[n][e] * w - deltaTile[c]);
            }
          accumulateSplit(accV, s, gt, half * kKSteps / 2, l);
          accumulateSplit(accK, dp, qt, half * kKSteps / 2, l);
        }
      }
    }
#pragma unroll
    for (int n = 0; n < kNTiles; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        int64_t j = key[e >> 1], f = columnOf(n, e, l);
        if (j >= a.sk)
          continue;
        if (dk && f < a.d)
          store(dk, dkL.offset(b, kvHead, j) + f, scale * accK[n][e]);
        if (dv && f < a.dv)
          store(dv, dvL.offset(b, kvHead, j) + f, accV[n][e]);
      }
  }
}

//===--- Host side --------------------------------------------------------===//

unsigned blocksFor(int64_t tiles) {
  return unsigned(tiles < kMaxBlocks ? (tiles < 1 ? 1 : tiles) : kMaxBlocks);
}

/// Launches `kernel` with `tilesStaged` staged tiles (plus `extra` bytes)
/// of dynamic shared memory, opting in above the default 48 KB.
template <typename Kernel, typename... Args>
Status launch(const KernelCall &call, const char *name, Kernel kernel,
              int64_t tiles, int tilesStaged, size_t extra, Args... args) {
  size_t bytes = size_t(tilesStaged) * kTileElements * sizeof(uint16_t) + extra;
  cudaError_t opted = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
  if (opted != cudaSuccess) {
    // Not left as the thread's last error for the next launch's check.
    (void)cudaGetLastError();
    return fromCudaError(int(opted), name);
  }
  kernel<<<blocksFor(tiles), kThreads, bytes, streamOf(call).handle()>>>(
      args...);
  return checkLaunch(call, name);
}

} // namespace

Status runTensorCoreAttention(const KernelCall &call, const AttnShape &a,
                              const AttnLayouts &layouts,
                              const AttnDropout &drop, const Bf16 *q,
                              const Bf16 *k, const Bf16 *v, const Bf16 *mask,
                              Bf16 *out, float *lse) {
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  return launch(call, "attention forwardKernel (tensor cores)",
                drop.ratio > 0 ? forwardKernel<true> : forwardKernel<false>,
                tiles, 3, 0, q, k, v, mask, out, lse, a, layouts, drop);
}

Status runTensorCoreAttentionStats(const KernelCall &call, const AttnShape &a,
                                   const AttnLayouts &layouts,
                                   const AttnDropout &drop, const Bf16 *q,
                                   const Bf16 *k, const Bf16 *v, const Bf16 *g,
                                   const Bf16 *mask, float *lse, float *delta,
                                   float *factor) {
  int64_t queryTiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  if (queryTiles == 0)
    return okStatus();
  return launch(call, "attention statsKernel (tensor cores)",
                drop.ratio > 0 ? statsKernel<true> : statsKernel<false>,
                queryTiles, 4, 0, q, k, v, g, mask, lse, delta, factor, a,
                layouts, drop);
}

Status runTensorCoreAttentionGrad(const KernelCall &call, const AttnShape &a,
                                  const AttnLayouts &layouts,
                                  const AttnDropout &drop, const Bf16 *q,
                                  const Bf16 *k, const Bf16 *v, const Bf16 *g,
                                  const Bf16 *mask, const float *lse,
                                  const float *delta, const float *factor,
                                  Bf16 *dq, Bf16 *dk, Bf16 *dv) {
  const bool dropped = drop.ratio > 0;
  int64_t queryTiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  if (factor != delta + a.batch * a.hq * a.sq) // gradQKernel's reading
    return internalError("attention's gradient (tensor cores): the rows' "
                         "factors must follow their deltas");
  if (dq && queryTiles > 0)
    TRAINC_RETURN_IF_ERROR(
        launch(call, "attention gradQKernel (tensor cores)",
               dropped ? gradQKernel<true> : gradQKernel<false>, queryTiles, 5,
               0, q, k, v, g, mask, lse, delta, dq, a, layouts, drop));
  if (dk || dv) {
    int64_t keyTiles = a.batch * a.hk * ceilDiv(a.sk, kTile);
    TRAINC_RETURN_IF_ERROR(
        launch(call, "attention gradKVKernel (tensor cores)",
               dropped ? gradKVKernel<true> : gradKVKernel<false>, keyTiles, 6,
               3 * kTile * sizeof(float), q, k, v, g, mask, lse, delta, factor,
               dk, dv, a, layouts, drop));
  }
  return okStatus();
}

} // namespace trainc::cuda
