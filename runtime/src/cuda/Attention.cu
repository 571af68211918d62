//===- Attention.cu - Flash attention and its gradient --------------------===//
//
// For each batch b, query head h and query row i, with g = h / (Hq / Hk)
// the key/value head it shares (grouped-query attention), as the CPU
// (cpu/Attention.cpp):
//
//   s[j]   = scale * sum_d q[b,h,i,d] * k[b,g,j,d] + mask[b,h,i,j]
//            for the allowed keys j (all j, or j <= i + (Sk - Sq) when
//            causal); the others are -inf
//   p[j]   = exp(s[j] - max_j s[j]) / sum_j exp(s[j] - max_j s[j])
//   o[b,h,i,:] = sum_j p[j] * v[b,g,j,:]
//
// and the gradient, with g_o the result's cotangent:
//
//   dp[j] = g_o[i,:] . v[j,:],  D_i = sum_j p[j] dp[j],  ds = p (dp - D_i)
//   dq[i] = scale sum_j ds[j] k[j],  dk[j] = scale sum_(h in g, i) ds q[i],
//   dv[j] = sum_(h in g, i) p[j] g_o[i]
//
// With a soft cap c (floats[1]) the score is c tanh(scale q.k / c) + mask
// and ds is multiplied by 1 - tanh^2 (scoreOf, scoreSlope: math/Softcap.h,
// the CPU's functions); the tensor-core kernels and cuDNN do not take a
// soft cap, so these kernels run it at every dtype and head size.
//
// With dropout (floats[2]), p[j] is multiplied by dropWeight (Attention.cuh:
// math/Dropout.h's mask over the [B, Hq, Sq, Sk] index, the CPU's) where it
// meets v (o += p w v, dv += p w g_o) and dp by it (ds = p (dp w - D_i),
// D_i = sum_j p w dp); l and the log-sum-exps are the undropped sums.
// The tensor-core kernels apply the same dropWeight at the same places.
//
// A row with no allowed key, or whose allowed scores are all -inf, gives
// zeros (output and gradients), as on the CPU. The mask is additive, each
// of its dims 1 (broadcast) or the scores' size.
//
// Flash-style: no [Sq, Sk] matrix ever reaches global memory. A block of
// 256 threads owns a tile of 32 rows (query rows, or key rows for dk/dv);
// thread t works on tile row t / 8 and on the columns t % 8 + 8u (u < 4) of
// each 32-wide tile it iterates over. Every dot product runs over the
// feature dim in 32-wide chunks staged in shared memory (any D); outputs
// are accumulated in registers 128 features at a time, one pass over the
// key (or query) tiles per 128 output features (a pass recomputes the
// scores; D, Dv <= 128 take one pass). Plain FMA-free scalar arithmetic on
// shared-memory tiles: no tensor cores, correctness and clarity first.
// Static shared memory: 20.6 KB per block in f32, 41.2 KB in f64 (under
// the 48 KB that needs no opt-in); __launch_bounds__(256, 1) lets ptxas
// take up to 255 registers (about 210 at most, f64 dk/dv) without spills.
//
//   forward:  per query tile, over key tiles: scores, online softmax
//             (running max m and sum l, earlier sums rescaled by
//             exp(m_old - m_new)), o += p v; finally o / l. With ints[5]
//             (the statistics kept, ExecutableFormat.h) it also writes
//             each row's log-sum-exp LSE = m + log l (natural log, the
//             compute type; -inf for a row that sees nothing) to its
//             second result.
//   gradient (FlashAttention-2):
//     1. statistics, into Scratch memory: without ints[5], per query row,
//        LSE = m + log l and D_i = sum_j p_j dp_j (online, as the
//        forward, with dp_j in place of v_j); with it, the forward's LSE
//        operand is read in place and only D_i = g_o[i,:] . o[i,:] (the
//        same sum, as o = sum_j p_j v_j) is computed, one warp per row
//        over the forward's result. Either way also each row's factor
//        F_i (math/AttentionStats.h): 1, but for a row whose |LSE| is 64
//        or more, where exp(s - LSE) is not its p (a row a finite mask
//        hides whole: LSE rounds to m); there F_i = exp(LSE - m) / l, or,
//        given the forward's LSE, 1 / sum_j exp(s_j - LSE) from a sweep
//        of the row's keys by its warp (a scalar QK^T row), but not for a
//        row whose cotangent is 0, where p multiplies nothing (a left
//        padding's rows when their losses are ignored);
//     2. dq: per query tile, over key tiles: p = exp(s - LSE), dp, ds,
//        dq += ds k; dq times F_i;
//     3. dk, dv: per key tile, over the query heads of its group and
//        their query tiles, p = exp(s - LSE) F_i: dv += p^T g_o, dk +=
//        ds^T q.
//   Each output element is owned by one block, which adds its terms in a
//   fixed order: deterministic, no atomics. (The kept-statistics paths
//   are compiled, not yet run on a GPU.)
// Causal attention skips the key tiles past a query tile's last allowed
// key (and, for dk/dv, the query tiles before a key tile's first viewer).
//
// Numerics: f32 compute for f32, bf16 and f16 (16-bit operands widened on
// load, results rounded once to nearest even), f64 for f64; exp is
// math/Transcendental.h's expCore in f32 (the CPU's expF32), log is CUDA's.
// What differs from the CPU: sums run in another order (dot products in
// index order, row sums over 8 lanes), p is normalized at the end (o / l)
// or taken as exp(s - LSE) rather than divided by its row sum, and dk, dv
// are scaled once after summing over the group; results agree to rounding.
// With kept statistics D comes from the stored result, so it carries that
// result's rounding (bf16 and f16: one rounding of the storage type per
// element of o), where pass 1's and the CPU's sum p dp in the compute type.
//
// Shape legend: q [B, Hq, Sq, D], k [B, Hk, Sk, D], v [B, Hk, Sk, Dv],
// mask [B|1, Hq|1, Sq|1, Sk|1], o and g_o [B, Hq, Sq, Dv]; dq, dk, dv as
// q, k, v. Each tensor but the mask may be stored [B, S, H, D] instead
// (ints[2]'s bit, Attention.cuh): every tile is read and every result row
// written at its layout's offset(b, h, i), rows seqStride elements apart,
// so neither layout is copied and the arithmetic is the same for both.
// The statistics (LSE, D; Scratch memory or the kept LSE operand) are
// contiguous [B, Hq, Sq] either way; the forward's result given to the
// gradient is read through the cotangent's seq_major bit (tensor 3).
//
//===----------------------------------------------------------------------===//

#include "cuda/Attention.cuh"
#include "cuda/AttentionCudnn.h"
#include "math/AttentionStats.h"
#include "math/Transcendental.h"

#include <cmath>
#include <string>
#include <type_traits>

namespace trainc::cuda {
namespace {

using namespace attention;

/// Rows (and columns) of every tile.
constexpr int kTile = 32;
/// Threads per tile row, and per block.
constexpr int kRowThreads = 8;
constexpr int kAttnThreads = kTile * kRowThreads;
/// Tile columns per thread: c0 + 8u.
constexpr int kSlots = kTile / kRowThreads;
/// Output features per pass, and the accumulators per thread they take.
constexpr int kChunk = 128;
constexpr int kAcc = kChunk / kRowThreads;
/// Row pitch of the [32][32] shared tiles (padded against bank conflicts).
constexpr int kPad = kTile + 1;
/// Blocks per launch at most (the kernels loop over their tiles).
constexpr int64_t kMaxBlocks = int64_t(1) << 20;
constexpr unsigned kFullMask = 0xffffffffu;

/// A block's shared memory.
template <typename C> struct SharedTiles {
  /// Staging: dotTile's two [32][33] operand chunks, or accumulateTile's
  /// [32][128] feature chunk (never both at once).
  C stage[kTile * kChunk];
  /// The current tile's probabilities or score gradients, [32][33].
  C tile[kTile * kPad];
};

/// A thread's place in its block's tiles: tile row `row`, columns `col` +
/// 8u, output features `col` + 8w of each chunk.
struct Place {
  int row, col;
};

__device__ __forceinline__ Place placeOf() {
  return Place{int(threadIdx.x) / kRowThreads, int(threadIdx.x) % kRowThreads};
}

/// The sum of v over aligned groups of `Lanes` threads of a warp (a
/// butterfly: every thread of a group gets the same bits).
template <int Lanes, typename C> __device__ __forceinline__ C laneSum(C v) {
  for (int o = Lanes / 2; o > 0; o /= 2)
    v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

/// The max and the sum of v over the 8 threads of a tile row (butterflies:
/// every thread gets the same bits).
template <typename C> __device__ __forceinline__ C rowMax(C v) {
  for (int o = kRowThreads / 2; o > 0; o /= 2)
    v = maxOf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}
template <typename C> __device__ __forceinline__ C rowSum(C v) {
  return laneSum<kRowThreads>(v);
}

/// out[u] = x[row] . y[col + 8u]: the dot products of the block's x rows
/// (xRows of them from `x`, xStride elements apart) with the y rows of the
/// current tile (yRows from `y`, yStride apart), `width` features each,
/// summed in index order. Missing rows are zeros. Called by every thread
/// of the block.
template <typename S, typename C>
__device__ void dotTile(const S *x, int64_t xStride, int64_t xRows, const S *y,
                        int64_t yStride, int64_t yRows, int64_t width, C *stage,
                        Place p, C (&out)[kSlots]) {
  C *xs = stage, *ys = stage + kTile * kPad;
#pragma unroll
  for (int u = 0; u < kSlots; ++u)
    out[u] = 0;
  // Staging: thread t copies column t % 32 of rows t / 32 + 8n.
  const int col = int(threadIdx.x) % kTile;
  for (int64_t d0 = 0; d0 < width; d0 += kTile) {
    int64_t d = d0 + col;
    bool inWidth = d < width;
#pragma unroll 1
    for (int row = int(threadIdx.x) / kTile; row < kTile;
         row += kAttnThreads / kTile) {
      xs[row * kPad + col] =
          inWidth && row < xRows ? C(load(x, row * xStride + d)) : C(0);
      ys[row * kPad + col] =
          inWidth && row < yRows ? C(load(y, row * yStride + d)) : C(0);
    }
    __syncthreads();
#pragma unroll 8
    for (int c = 0; c < kTile; ++c) {
      C xv = xs[p.row * kPad + c];
#pragma unroll
      for (int u = 0; u < kSlots; ++u)
        out[u] += xv * ys[(p.col + kRowThreads * u) * kPad + c];
    }
    __syncthreads();
  }
}

/// acc[w] += sum_j tile[row][j] * y[j][f0 + col + 8w]: features [f0, f0 +
/// 128) of the product of the shared tile with the current tile's y rows
/// (yRows of them from `y`, yStride elements apart, `width` features each),
/// j in order. Called by every thread of the block, after the tile is
/// written.
template <typename S, typename C>
__device__ void accumulateTile(const C *tile, const S *y, int64_t yStride,
                               int64_t yRows, int64_t width, int64_t f0,
                               C *stage, Place p, C (&acc)[kAcc]) {
  // Staging: thread t copies feature t % 128 of rows t / 128 + 2n.
  const int col = int(threadIdx.x) % kChunk;
  int64_t f = f0 + col;
  bool inWidth = f < width;
#pragma unroll 1
  for (int row = int(threadIdx.x) / kChunk; row < kTile;
       row += kAttnThreads / kChunk)
    stage[row * kChunk + col] =
        inWidth && row < yRows ? C(load(y, row * yStride + f)) : C(0);
  __syncthreads();
  int64_t features = width - f0;
#pragma unroll 2
  for (int j = 0; j < kTile; ++j) {
    C t = tile[p.row * kPad + j];
#pragma unroll
    for (int w = 0; w < kAcc; ++w)
      if (p.col + kRowThreads * w < features)
        acc[w] += t * stage[j * kChunk + p.col + kRowThreads * w];
  }
  __syncthreads();
}

//===--- Forward ----------------------------------------------------------===//

template <typename S>
__global__ void __launch_bounds__(kAttnThreads, 1)
    attentionKernel(const S *q, const S *k, const S *v, const S *mask, S *out,
                    Compute<S> *lse, AttnShape a, AttnLayouts layouts,
                    AttnDropout drop) {
  using C = Compute<S>;
  __shared__ SharedTiles<C> sh;
  const Place p = placeOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &oL = layouts.of[kOut];
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    QueryTile qt = queryTileOf(a, t, kTile);
    const int64_t qi = qt.i0 + p.row; // this thread's query row
    const S *qTile = q + qL.offset(qt.b, qt.h, qt.i0);
    const S *kb = k + kL.offset(qt.b, qt.kvHead, 0),
            *vb = v + vL.offset(qt.b, qt.kvHead, 0);
    const S *maskBH = maskOf(a, mask, qt.b, qt.h);
    // One pass per 128 result features; one even when Dv is 0 if the
    // rows' log-sum-exps are wanted.
    const int64_t features = lse && a.dv == 0 ? 1 : a.dv;
    for (int64_t f0 = 0; f0 < features; f0 += kChunk) {
      C m = -infinity<C>(), l = 0, acc[kAcc];
#pragma unroll
      for (int w = 0; w < kAcc; ++w)
        acc[w] = 0;
      for (int64_t j0 = 0; j0 < qt.keyEnd; j0 += kTile) {
        int64_t keys = minOf(kTile, a.sk - j0);
        C s[kSlots];
        dotTile(qTile, qL.seqStride, qt.rows, kb + j0 * kL.seqStride,
                kL.seqStride, keys, a.d, sh.stage, p, s);
        C tileMax = -infinity<C>();
#pragma unroll
        for (int u = 0; u < kSlots; ++u) {
          s[u] = scoreOf(a, maskBH, qi, j0 + p.col + kRowThreads * u, s[u]);
          tileMax = maxOf(tileMax, s[u]);
        }
        // Online softmax: rescale what was summed against the old max.
        C mNew = maxOf(m, rowMax(tileMax));
        C alpha = m == -infinity<C>() ? C(0) : expOf(m - mNew);
        C sum = 0;
#pragma unroll
        for (int u = 0; u < kSlots; ++u) {
          C e = weightOf(s[u], mNew);
          sh.tile[p.row * kPad + p.col + kRowThreads * u] =
              e * dropWeight<C>(drop, a, qt.b, qt.h, qi,
                                j0 + p.col + kRowThreads * u);
          sum += e;
        }
        l = l * alpha + rowSum(sum);
        m = mNew;
#pragma unroll
        for (int w = 0; w < kAcc; ++w)
          acc[w] *= alpha;
        accumulateTile(sh.tile, vb + j0 * vL.seqStride, vL.seqStride, keys,
                       a.dv, f0, sh.stage, p, acc);
      }
      if (qi >= a.sq)
        continue;
      bool empty = m == -infinity<C>();
      // Every pass makes the same m and l; the first writes the
      // log-sum-exp (pass 1's, but -inf where that has +inf).
      if (lse && f0 == 0 && p.col == 0)
        lse[qt.bh * a.sq + qi] = empty ? -infinity<C>() : m + logOf(l);
      S *o = out + oL.offset(qt.b, qt.h, qi);
#pragma unroll
      for (int w = 0; w < kAcc; ++w) {
        int64_t f = f0 + p.col + kRowThreads * w;
        if (f < a.dv)
          store(o, f, empty ? C(0) : acc[w] / l);
      }
    }
  }
}

//===--- Gradient ---------------------------------------------------------===//

/// Pass 1: lse[row] = m + log l (+inf for a row that sees nothing),
/// delta[row] = sum_j p_j dp_j (0 there) and factor[row], 1 but for a row
/// whose lse math::lseIsRemade: exp(lse - m) / l, so that exp(s - lse)
/// times it is the row's p. Rows in [B, Hq, Sq] order.
template <typename S>
__global__ void __launch_bounds__(kAttnThreads, 1)
    attentionStatsKernel(const S *q, const S *k, const S *v, const S *g,
                         const S *mask, Compute<S> *lse, Compute<S> *delta,
                         Compute<S> *factor, AttnShape a, AttnLayouts layouts,
                         AttnDropout drop) {
  using C = Compute<S>;
  __shared__ SharedTiles<C> sh;
  const Place p = placeOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &gL = layouts.of[kGradOut];
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    QueryTile qt = queryTileOf(a, t, kTile);
    const int64_t qi = qt.i0 + p.row; // this thread's query row
    const S *qTile = q + qL.offset(qt.b, qt.h, qt.i0);
    const S *gTile = g + gL.offset(qt.b, qt.h, qt.i0);
    const S *kb = k + kL.offset(qt.b, qt.kvHead, 0),
            *vb = v + vL.offset(qt.b, qt.kvHead, 0);
    const S *maskBH = maskOf(a, mask, qt.b, qt.h);
    C m = -infinity<C>(), l = 0, acc = 0;
    for (int64_t j0 = 0; j0 < qt.keyEnd; j0 += kTile) {
      int64_t keys = minOf(kTile, a.sk - j0);
      C s[kSlots], dp[kSlots];
      dotTile(qTile, qL.seqStride, qt.rows, kb + j0 * kL.seqStride,
              kL.seqStride, keys, a.d, sh.stage, p, s);
      dotTile(gTile, gL.seqStride, qt.rows, vb + j0 * vL.seqStride,
              vL.seqStride, keys, a.dv, sh.stage, p, dp);
      C tileMax = -infinity<C>();
#pragma unroll
      for (int u = 0; u < kSlots; ++u) {
        s[u] = scoreOf(a, maskBH, qi, j0 + p.col + kRowThreads * u, s[u]);
        tileMax = maxOf(tileMax, s[u]);
      }
      C mNew = maxOf(m, rowMax(tileMax));
      C alpha = m == -infinity<C>() ? C(0) : expOf(m - mNew);
      C sum = 0, dot = 0;
#pragma unroll
      for (int u = 0; u < kSlots; ++u) {
        C e = weightOf(s[u], mNew);
        sum += e;
        dot += e * dp[u] *
               dropWeight<C>(drop, a, qt.b, qt.h, qi,
                             j0 + p.col + kRowThreads * u);
      }
      l = l * alpha + rowSum(sum);
      acc = acc * alpha + rowSum(dot);
      m = mNew;
    }
    if (qi < a.sq && p.col == 0) {
      bool empty = m == -infinity<C>();
      int64_t row = qt.bh * a.sq + qi;
      C rowLse = empty ? infinity<C>() : m + logOf(l);
      lse[row] = rowLse;
      delta[row] = empty ? C(0) : acc / l;
      factor[row] = math::lseIsRemade(rowLse) ? expOf(rowLse - m) / l : C(1);
    }
  }
}

/// Query rows per block of attentionDeltaKernel: a warp each.
constexpr int kDeltaRows = kAttnThreads / 32;

/// Pass 1 for a gradient given the forward's statistics: delta[row] =
/// sum_d g_o[row, d] o[row, d] (= sum_j p_j dp_j, as o = sum_j p_j v_j),
/// rows in [B, Hq, Sq] order, o the forward's result read through its own
/// layout. One warp per row: lane l sums features l + 32n in order, then a
/// butterfly (every lane the same bits; deterministic). And factor[row]
/// (attentionStatsKernel's): 1, or for a row whose lse math::lseIsRemade
/// and whose cotangent is not 0, 1 / sum_j exp(s_j - lse) over its keys,
/// each score's dot product summed as delta's (a sweep over the row's
/// keys: a left padding's rows, whose losses are usually ignored, skip
/// it).
template <typename S>
__global__ void __launch_bounds__(kAttnThreads)
    attentionDeltaKernel(const S *q, const S *k, const S *g, const S *o,
                         const S *mask, const Compute<S> *lse,
                         Compute<S> *delta, Compute<S> *factor, AttnShape a,
                         math::HeadLayout qL, math::HeadLayout kL,
                         math::HeadLayout gL, math::HeadLayout oL) {
  using C = Compute<S>;
  const int lane = int(threadIdx.x) % 32;
  const int64_t rows = a.batch * a.hq * a.sq;
  for (int64_t row = int64_t(blockIdx.x) * kDeltaRows + threadIdx.x / 32;
       row < rows; row += int64_t(gridDim.x) * kDeltaRows) {
    int64_t bh = row / a.sq, i = row % a.sq;
    int64_t b = bh / a.hq, h = bh % a.hq;
    const S *gRow = g + gL.offset(b, h, i), *oRow = o + oL.offset(b, h, i);
    C sum = 0;
    for (int64_t f = lane; f < a.dv; f += 32)
      sum += C(load(gRow, f)) * C(load(oRow, f));
    sum = laneSum<32>(sum);
    C rowLse = lse[row], rowFactor = 1;
    // A row whose cotangent is 0 (a padded query whose loss is ignored)
    // has dp = 0 and D = 0, so p, and its factor, multiply nothing.
    bool moves = false;
    if (math::lseIsRemade(rowLse)) { // one branch for the warp
      for (int64_t f = lane; f < a.dv; f += 32)
        moves |= C(load(gRow, f)) != C(0);
      moves = __any_sync(0xffffffffu, moves);
    }
    if (moves) { // one branch for the warp
      const S *qRow = q + qL.offset(b, h, i), *maskBH = maskOf(a, mask, b, h);
      C total = 0;
      for (int64_t j = 0, n = a.allowed(i); j < n; ++j) {
        const S *kRow = k + kL.offset(b, h / a.group, j);
        C dot = 0;
        for (int64_t f = lane; f < a.d; f += 32)
          dot += C(load(qRow, f)) * C(load(kRow, f));
        total += weightOf(scoreOf(a, maskBH, i, j, laneSum<32>(dot)), rowLse);
      }
      rowFactor = C(1) / total;
    }
    if (lane == 0) {
      delta[row] = sum;
      factor[row] = rowFactor;
    }
  }
}

/// Pass 2: dq = scale * sum_j p (dp - D) k, per query tile.
template <typename S>
__global__ void __launch_bounds__(kAttnThreads, 1)
    attentionGradQKernel(const S *q, const S *k, const S *v, const S *g,
                         const S *mask, const Compute<S> *lse,
                         const Compute<S> *delta, const Compute<S> *factor,
                         S *dq, AttnShape a, AttnLayouts layouts,
                         AttnDropout drop) {
  using C = Compute<S>;
  __shared__ SharedTiles<C> sh;
  const Place p = placeOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &gL = layouts.of[kGradOut],
                         &dqL = layouts.of[kDq];
  int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    QueryTile qt = queryTileOf(a, t, kTile);
    const int64_t qi = qt.i0 + p.row; // this thread's query row
    const S *qTile = q + qL.offset(qt.b, qt.h, qt.i0);
    const S *gTile = g + gL.offset(qt.b, qt.h, qt.i0);
    const S *kb = k + kL.offset(qt.b, qt.kvHead, 0),
            *vb = v + vL.offset(qt.b, qt.kvHead, 0);
    const S *maskBH = maskOf(a, mask, qt.b, qt.h);
    int64_t row = qt.bh * a.sq + qi;
    bool inside = qi < a.sq;
    C rowLse = inside ? lse[row] : C(0), rowDelta = inside ? delta[row] : C(0);
    for (int64_t f0 = 0; f0 < a.d; f0 += kChunk) {
      C acc[kAcc];
#pragma unroll
      for (int w = 0; w < kAcc; ++w)
        acc[w] = 0;
      for (int64_t j0 = 0; j0 < qt.keyEnd; j0 += kTile) {
        int64_t keys = minOf(kTile, a.sk - j0);
        C s[kSlots], dp[kSlots];
        dotTile(qTile, qL.seqStride, qt.rows, kb + j0 * kL.seqStride,
                kL.seqStride, keys, a.d, sh.stage, p, s);
        dotTile(gTile, gL.seqStride, qt.rows, vb + j0 * vL.seqStride,
                vL.seqStride, keys, a.dv, sh.stage, p, dp);
#pragma unroll
        for (int u = 0; u < kSlots; ++u) {
          int64_t j = j0 + p.col + kRowThreads * u;
          C sc = scoreOf(a, maskBH, qi, j, s[u]);
          C w = dropWeight<C>(drop, a, qt.b, qt.h, qi, j);
          sh.tile[p.row * kPad + p.col + kRowThreads * u] =
              weightOf(sc, rowLse) * (dp[u] * w - rowDelta) *
              scoreSlope(a, s[u]);
        }
        accumulateTile(sh.tile, kb + j0 * kL.seqStride, kL.seqStride, keys, a.d,
                       f0, sh.stage, p, acc);
      }
      if (!inside)
        continue;
      // p is exp(s - lse) times the row's factor (1 but for remade rows),
      // which multiplies every term of the row's sum: applied once here.
      S *dqRow = dq + dqL.offset(qt.b, qt.h, qi);
      C rowFactor = factor[row];
#pragma unroll
      for (int w = 0; w < kAcc; ++w) {
        int64_t f = f0 + p.col + kRowThreads * w;
        if (f < a.d)
          store(dqRow, f, C(a.scale) * acc[w] * rowFactor);
      }
    }
  }
}

/// Pass 3: per key tile of (b, g), over the query heads h of group g and
/// their query tiles: dv = sum p^T g_o, dk = scale * sum (p (dp - D))^T q.
/// The block's tile rows are keys; its columns, queries.
template <typename S>
__global__ void __launch_bounds__(kAttnThreads, 1)
    attentionGradKVKernel(const S *q, const S *k, const S *v, const S *g,
                          const S *mask, const Compute<S> *lse,
                          const Compute<S> *delta, const Compute<S> *factor,
                          S *dk, S *dv, AttnShape a, AttnLayouts layouts,
                          AttnDropout drop) {
  using C = Compute<S>;
  __shared__ SharedTiles<C> sh;
  const Place p = placeOf();
  const math::HeadLayout &qL = layouts.of[kQ], &kL = layouts.of[kK],
                         &vL = layouts.of[kV], &gL = layouts.of[kGradOut],
                         &dkL = layouts.of[kDk], &dvL = layouts.of[kDv];
  int64_t keyTiles = ceilDiv(a.sk, kTile);
  int64_t tiles = a.batch * a.hk * keyTiles;
  int64_t passes = ceilDiv(a.d > a.dv ? a.d : a.dv, kChunk);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t bg = t / keyTiles, j0 = (t % keyTiles) * kTile;
    int64_t b = bg / a.hk, kvHead = bg % a.hk;
    int64_t keys = minOf(kTile, a.sk - j0), j = j0 + p.row;
    const S *keyRows = k + kL.offset(b, kvHead, j0);
    const S *valueRows = v + vL.offset(b, kvHead, j0);
    int64_t firstQueryTile = a.firstViewer(j0) / kTile * kTile;
    for (int64_t pass = 0; pass < passes; ++pass) {
      int64_t f0 = pass * kChunk;
      bool doK = f0 < a.d, doV = f0 < a.dv;
      C accK[kAcc], accV[kAcc];
#pragma unroll
      for (int w = 0; w < kAcc; ++w)
        accK[w] = accV[w] = 0;
      for (int64_t hh = 0; hh < a.group; ++hh) {
        int64_t h = kvHead * a.group + hh, bh = b * a.hq + h;
        const S *qb = q + qL.offset(b, h, 0), *gb = g + gL.offset(b, h, 0);
        const Compute<S> *lseH = lse + bh * a.sq, *deltaH = delta + bh * a.sq,
                         *factorH = factor + bh * a.sq;
        const S *maskBH = maskOf(a, mask, b, h);
        for (int64_t i0 = firstQueryTile; i0 < a.sq; i0 += kTile) {
          int64_t queries = minOf(kTile, a.sq - i0);
          C s[kSlots], pr[kSlots];
          dotTile(keyRows, kL.seqStride, keys, qb + i0 * qL.seqStride,
                  qL.seqStride, queries, a.d, sh.stage, p, s);
#pragma unroll
          for (int u = 0; u < kSlots; ++u) {
            int64_t i = i0 + p.col + kRowThreads * u;
            C sc = scoreOf(a, maskBH, i, j, s[u]);
            pr[u] =
                sc == -infinity<C>() ? C(0) : expOf(sc - lseH[i]) * factorH[i];
          }
          if (doV) {
#pragma unroll
            for (int u = 0; u < kSlots; ++u)
              sh.tile[p.row * kPad + p.col + kRowThreads * u] =
                  pr[u] *
                  dropWeight<C>(drop, a, b, h, i0 + p.col + kRowThreads * u, j);
            accumulateTile(sh.tile, gb + i0 * gL.seqStride, gL.seqStride,
                           queries, a.dv, f0, sh.stage, p, accV);
          }
          if (doK) {
            C dp[kSlots];
            dotTile(valueRows, vL.seqStride, keys, gb + i0 * gL.seqStride,
                    gL.seqStride, queries, a.dv, sh.stage, p, dp);
#pragma unroll
            for (int u = 0; u < kSlots; ++u) {
              int64_t i = i0 + p.col + kRowThreads * u;
              C rowDelta = i < a.sq ? deltaH[i] : C(0);
              C w = dropWeight<C>(drop, a, b, h, i, j);
              sh.tile[p.row * kPad + p.col + kRowThreads * u] =
                  pr[u] * (dp[u] * w - rowDelta) * scoreSlope(a, s[u]);
            }
            accumulateTile(sh.tile, qb + i0 * qL.seqStride, qL.seqStride,
                           queries, a.d, f0, sh.stage, p, accK);
          }
        }
      }
      if (j >= a.sk)
        continue;
      S *dkRow = dk + dkL.offset(b, kvHead, j),
        *dvRow = dv + dvL.offset(b, kvHead, j);
#pragma unroll
      for (int w = 0; w < kAcc; ++w) {
        int64_t f = f0 + p.col + kRowThreads * w;
        if (doK && f < a.d)
          store(dkRow, f, C(a.scale) * accK[w]);
        if (doV && f < a.dv)
          store(dvRow, f, accV[w]);
      }
    }
  }
}

//===--- Host side --------------------------------------------------------===//

unsigned blocksFor(int64_t tiles) {
  return unsigned(tiles < kMaxBlocks ? (tiles < 1 ? 1 : tiles) : kMaxBlocks);
}

/// "[b, h, s, d]", for messages.
std::string sizesOf(int64_t b, int64_t h, int64_t s, int64_t d) {
  return "[" + std::to_string(b) + ", " + std::to_string(h) + ", " +
         std::to_string(s) + ", " + std::to_string(d) + "]";
}

/// Whether `call` keeps the softmax statistics: ints[5]
/// (ExecutableFormat.h's kAttentionStatsInt), read only where present.
bool keepsStats(const KernelCall &call) {
  return call.ints.size > kAttentionStatsInt &&
         call.ints[kAttentionStatsInt] != 0;
}

/// The softmax statistics a call keeps (keepsStats): the forward's
/// log-sum-exps, its second result; or the gradient's last two operands,
/// the forward's result (stored as the cotangent, read through
/// `resultLayout`) and its log-sum-exps. Null when not kept.
struct KeptStats {
  const TensorRef *result = nullptr, *lse = nullptr;
  math::HeadLayout resultLayout;
};

/// The call's shape and its tensors' layouts: operands q, k, v (and the
/// cotangent for the gradient) up to `maskInput`, then the mask when
/// ints[1] says there is one, then, for a gradient that keeps the
/// statistics, the forward's result and log-sum-exps; the results follow
/// the operands in the tensor numbering (ints[2]'s bits:
/// ExecutableFormat.h), and a forward that keeps the statistics has the
/// log-sum-exps as a second result. Every operand and result but the
/// log-sum-exps must be rank 4 of q's dtype, and every tensor's logical
/// sizes must be those its role implies (the validator's rule, checked
/// again because each kernel indexes a tensor by its own layout and would
/// read or write past a smaller one); the log-sum-exps are [B, Hq, Sq] of
/// the compute type (f64 for f64, else f32).
Status shapeOf(const KernelCall &call, int maskInput, AttnShape &a,
               AttnLayouts &layouts, KeptStats &kept) {
  // Attention numbers q, k, v and its result; the gradient q, k, v, the
  // cotangent and three results.
  const bool grad = maskInput == 4;
  const int numTensors = grad ? kAttentionGradTensors : kAttentionTensors;
  const int numResults = numTensors - maskInput;
  math::QkvHeads qkv = math::qkvHeadsOf(call.ints.data, call.ints.size);
  // A gradient with one result writes dq, dk and dv into its windows.
  const bool packedGrad = grad && call.numOutputs == 1 && qkv.any();
  const bool hasMask = call.ints[1] != 0, stats = keepsStats(call);
  const int operands = maskInput + (grad && stats ? 2 : 0);
  const int results = numResults + (!grad && stats ? 1 : 0);
  if (call.inputs.size < operands ||
      (call.numOutputs != results && !packedGrad))
    return kernelError(call, "expects " + std::to_string(operands) +
                                 " operands besides the mask and " +
                                 std::to_string(results) +
                                 (results == 1 ? " result" : " results"));
  if (hasMask && call.inputs.size <= operands)
    return kernelError(call, "has_mask is set but the mask operand is missing");
  // Where the log-sum-exps are, by which list they are in.
  const int lseInput = grad && stats ? operands + (hasMask ? 1 : 0) - 1 : -1;
  const int lseOutput = !grad && stats ? 1 : -1;
  const TensorRef &q = call.inputs[0];
  for (int64_t i = 0; i < call.inputs.size; ++i) {
    const TensorRef &t = call.inputs[i];
    if (i == lseInput)
      continue;
    if (t.rank != 4)
      return kernelError(call, "operand " + std::to_string(i) + " has rank " +
                                   std::to_string(t.rank) + ", expected 4");
    if (t.dtype != q.dtype)
      return kernelError(call, "operand " + std::to_string(i) + " is " +
                                   dtypeName(t.dtype) + ", not " +
                                   dtypeName(q.dtype) + " as the query");
  }
  for (int i = 0; i < call.numOutputs; ++i) {
    const TensorRef &t = call.outputs[i];
    if (i == lseOutput)
      continue;
    if (t.rank != 4)
      return kernelError(call, "result " + std::to_string(i) + " has rank " +
                                   std::to_string(t.rank) + ", expected 4");
    if (t.dtype != q.dtype)
      return kernelError(call, "result " + std::to_string(i) + " is " +
                                   dtypeName(t.dtype) + ", not " +
                                   dtypeName(q.dtype) + " as the query");
  }
  int64_t bits = call.ints[2]; // seq_major (the validator checked 6 ints)
  // Windows read (and a packed gradient writes) [B, S, Hq + 2 Hk, D]
  // tensors: their stored heads, checked as the validator does.
  if (qkv.any())
    for (int i = 0; i < numTensors; ++i) {
      bool windowed = i < 3 || (packedGrad && i >= maskInput);
      const TensorRef &t = i < maskInput
                               ? call.inputs[i]
                               : call.outputs[packedGrad ? 0 : i - maskInput];
      if (windowed && (!math::isSeqMajor(bits, i) || qkv.q > t.dims[2] ||
                       qkv.kv > t.dims[2] || t.dims[2] != qkv.q + 2 * qkv.kv))
        return kernelError(call, "tensor " + std::to_string(i) +
                                     " is not a sequence-major [B, S, Hq + "
                                     "2 Hk, D] tensor of the qkv heads");
    }
  for (int i = 0; i < numTensors; ++i) {
    const TensorRef &t = i < maskInput
                             ? call.inputs[i]
                             : call.outputs[packedGrad ? 0 : i - maskInput];
    layouts.of[i] = math::attentionLayout(t.dims, bits, qkv, i, packedGrad);
  }
  kept = KeptStats();
  if (lseInput >= 0) {
    kept.result = &call.inputs[lseInput - 1];
    kept.lse = &call.inputs[lseInput];
    // The forward's result is stored as the cotangent: its bit is tensor
    // 3's.
    kept.resultLayout =
        math::attentionLayout(kept.result->dims, bits, qkv, kGradOut);
  } else if (lseOutput >= 0) {
    kept.lse = &call.outputs[lseOutput];
  }
  const math::HeadLayout &ql = layouts.of[kQ], &kl = layouts.of[kK],
                         &vl = layouts.of[kV];
  if (kl.heads == 0 ? ql.heads != 0 : ql.heads % kl.heads != 0)
    return kernelError(call, std::to_string(ql.heads) +
                                 " query heads are not a multiple of " +
                                 std::to_string(kl.heads) + " key heads");
  a.batch = ql.batch;
  a.hq = ql.heads;
  a.sq = ql.seq;
  a.d = ql.features;
  a.hk = kl.heads;
  a.sk = kl.seq;
  a.dv = vl.features;
  a.group = a.hk > 0 ? a.hq / a.hk : 1;
  // Each tensor's logical sizes by its number: q's, k's, v's, then the
  // result's (or the cotangent's) and the gradients', their operands'.
  const int64_t want[kAttentionGradTensors][4] = {
      {a.batch, a.hq, a.sq, a.d},  {a.batch, a.hk, a.sk, a.d},
      {a.batch, a.hk, a.sk, a.dv}, {a.batch, a.hq, a.sq, a.dv},
      {a.batch, a.hq, a.sq, a.d},  {a.batch, a.hk, a.sk, a.d},
      {a.batch, a.hk, a.sk, a.dv}};
  auto checkSizes = [&](const char *name, const math::HeadLayout &l,
                        const int64_t(&w)[4]) -> Status {
    if (l.batch != w[0] || l.heads != w[1] || l.seq != w[2] ||
        l.features != w[3])
      return kernelError(call,
                         std::string(name) + " is " +
                             sizesOf(l.batch, l.heads, l.seq, l.features) +
                             " as [B, H, S, D], expected " +
                             sizesOf(w[0], w[1], w[2], w[3]));
    return okStatus();
  };
  const char *names[kAttentionGradTensors] = {
      "q",  "k",  "v", numResults == 1 ? "the result" : "the cotangent",
      "dq", "dk", "dv"};
  for (int i = 0; i < numTensors; ++i)
    TRAINC_RETURN_IF_ERROR(checkSizes(names[i], layouts.of[i], want[i]));
  if (kept.result)
    TRAINC_RETURN_IF_ERROR(
        checkSizes("the forward's result", kept.resultLayout, want[kGradOut]));
  if (kept.lse) {
    const TensorRef &lse = *kept.lse;
    const DType lseType = attentionLseType(q.dtype);
    if (lse.rank != 3)
      return kernelError(call, "the log-sum-exps have rank " +
                                   std::to_string(lse.rank) + ", expected 3");
    if (lse.dtype != lseType)
      return kernelError(call, std::string("the log-sum-exps are ") +
                                   dtypeName(lse.dtype) + ", not " +
                                   dtypeName(lseType));
    if (lse.dims[0] != a.batch || lse.dims[1] != a.hq || lse.dims[2] != a.sq)
      return kernelError(
          call,
          "the log-sum-exps are [" + std::to_string(lse.dims[0]) + ", " +
              std::to_string(lse.dims[1]) + ", " + std::to_string(lse.dims[2]) +
              "], expected [B, Hq, Sq] = [" + std::to_string(a.batch) + ", " +
              std::to_string(a.hq) + ", " + std::to_string(a.sq) + "]");
  }
  a.scale = call.floats[0];
  a.softcap = call.floats.size > 1 ? call.floats[1] : 0;
  a.causal = call.ints[0] != 0;
  for (int i = 0; i < 4; ++i)
    a.maskStride[i] = 0;
  if (hasMask) {
    const TensorRef &m = call.inputs[maskInput];
    int64_t stride = 1;
    for (int i = 3; i >= 0; --i) {
      a.maskStride[i] = m.dims[i] == 1 ? 0 : stride;
      stride *= m.dims[i];
    }
  }
  return okStatus();
}

/// The dropout of `call` of shape `a` (floats[2], the stream after
/// ints[5]), none when it has none.
AttnDropout dropoutOf(const KernelCall &call, const AttnShape &a) {
  AttnDropout drop;
  if (call.floats.size > 2 && call.floats[2] > 0) {
    drop.ratio = call.floats[2];
    drop.scale = 1.0 / (1.0 - drop.ratio);
    drop.key = dropoutKeyOf(call, kAttentionStatsInt + 1);
    drop.threshold = math::keepThreshold(drop.ratio);
    drop.block =
        tensorBlockOf(call, kAttentionStatsInt + 4, a.hq * a.sq * a.sk);
  }
  return drop;
}

/// Runs `call` through cuDNN (AttentionCudnn.h) when the engine
/// ($TRAINC_CUDA_ATTENTION) allows it and cuDNN takes it: `ran` says
/// whether it did. Operands q, k, v (and the gradient's cotangent, and
/// the kept statistics); the forward's result, or the gradients (null
/// where not wanted).
Status runThroughCudnn(const KernelCall &call, const AttnShape &a,
                       const AttnLayouts &layouts, const KeptStats &kept,
                       bool grad, void *result, void *dq, void *dk, void *dv,
                       bool &ran) {
  ran = false;
  AttentionEngine engine;
  TRAINC_RETURN_IF_ERROR(attentionEngine(engine));
  CudnnAttentionCall c;
  c.grad = grad;
  c.dtype = call.inputs[0].dtype;
  c.batch = a.batch;
  c.hq = a.hq;
  c.hk = a.hk;
  c.sq = a.sq;
  c.sk = a.sk;
  c.d = a.d;
  c.dv = a.dv;
  c.scale = a.scale;
  c.softcap = a.softcap;
  c.dropout = dropoutOf(call, a).ratio;
  c.causal = a.causal;
  c.hasMask = call.ints[1] != 0;
  for (int i = 0; i < kAttentionGradTensors; ++i)
    c.layout[i] = layouts.of[i];
  c.query = call.inputs[0].data;
  c.key = call.inputs[1].data;
  c.value = call.inputs[2].data;
  if (grad)
    c.cotangent = call.inputs[3].data;
  c.stats = kept.lse != nullptr;
  if (c.stats)
    c.lse = kept.lse->data;
  if (kept.result) {
    c.forwardResult = kept.result->data;
    c.forwardLayout = kept.resultLayout;
  }
  c.result = result;
  c.dQuery = dq;
  c.dKey = dk;
  c.dValue = dv;
  return runCudnnAttention(call, c, engine, ran);
}

} // namespace

Status runAttention(const KernelCall &call) {
  const TensorRef &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  const TensorRef &out = call.outputs[0];
  AttnShape a;
  AttnLayouts layouts;
  KeptStats kept;
  TRAINC_RETURN_IF_ERROR(shapeOf(call, /*maskInput=*/3, a, layouts, kept));
  const void *mask = call.ints[1] != 0 ? call.inputs[3].data : nullptr;
  if (out.numElements() == 0 && (!kept.lse || kept.lse->numElements() == 0))
    return okStatus();
  bool ran = false;
  TRAINC_RETURN_IF_ERROR(runThroughCudnn(call, a, layouts, kept,
                                         /*grad=*/false, out.data, nullptr,
                                         nullptr, nullptr, ran));
  if (ran)
    return okStatus();
  AttnDropout drop = dropoutOf(call, a);
  return withFloatStorage(call, q.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    C *lse = kept.lse ? kept.lse->as<C>() : nullptr;
    if constexpr (std::is_same_v<S, Bf16>)
      if (tensorCoreAttentionFits(q.dtype, a))
        return runTensorCoreAttention(
            call, a, layouts, drop, q.as<const S>(), k.as<const S>(),
            v.as<const S>(), static_cast<const S *>(mask), out.as<S>(), lse);
    int64_t tiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
    attentionKernel<S>
        <<<blocksFor(tiles), kAttnThreads, 0, streamOf(call).handle()>>>(
            q.as<const S>(), k.as<const S>(), v.as<const S>(),
            static_cast<const S *>(mask), out.as<S>(), lse, a, layouts, drop);
    return checkLaunch(call, "attentionKernel");
  });
}

Status runAttentionGrad(const KernelCall &call) {
  const TensorRef &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2],
                  &g = call.inputs[3];
  // dq, dk and dv: three results, or windows of one (shapeOf's packedGrad).
  const bool packed = call.numOutputs == 1;
  const TensorRef &dq = call.outputs[0], &dk = call.outputs[packed ? 0 : 1],
                  &dv = call.outputs[packed ? 0 : 2];
  AttnShape a;
  AttnLayouts layouts;
  KeptStats kept;
  TRAINC_RETURN_IF_ERROR(shapeOf(call, /*maskInput=*/4, a, layouts, kept));
  const void *mask = call.ints[1] != 0 ? call.inputs[4].data : nullptr;
  bool needQ = dq.numElements() > 0;
  bool needKV = dk.numElements() > 0 || dv.numElements() > 0;
  if (!needQ && !needKV)
    return okStatus();
  bool ran = false;
  TRAINC_RETURN_IF_ERROR(runThroughCudnn(
      call, a, layouts, kept, /*grad=*/true, nullptr, needQ ? dq.data : nullptr,
      dk.numElements() > 0 ? dk.data : nullptr,
      dv.numElements() > 0 ? dv.data : nullptr, ran));
  if (ran)
    return okStatus();
  AttnDropout drop = dropoutOf(call, a);
  return withFloatStorage(call, q.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    cudaStream_t stream = streamOf(call).handle();
    const S *qs = q.as<const S>(), *ks = k.as<const S>(), *vs = v.as<const S>(),
            *gs = g.as<const S>(), *maskS = static_cast<const S *>(mask);
    bool tensorCores = false;
    if constexpr (std::is_same_v<S, Bf16>)
      tensorCores = tensorCoreAttentionFits(q.dtype, a);

    // The rows' log-sum-exps, D and factors (math/AttentionStats.h): the
    // forward's log-sum-exps, read in place, and D from its result; or
    // pass 1's; all but the kept lse in Scratch memory.
    int64_t rows = a.batch * a.hq * a.sq;
    int64_t queryTiles = a.batch * a.hq * ceilDiv(a.sq, kTile);
    Scratch stats;
    TRAINC_RETURN_IF_ERROR(
        stats.allocate(call, (kept.lse ? 2 : 3) * uint64_t(rows) * sizeof(C)));
    C *delta = stats.as<C>(), *factor = delta + rows,
      *madeLse = kept.lse ? nullptr : factor + rows;
    const C *lse = kept.lse ? kept.lse->as<const C>() : madeLse;
    if (kept.lse) {
      if (rows > 0) {
        attentionDeltaKernel<S>
            <<<blocksFor(ceilDiv(rows, kDeltaRows)), kAttnThreads, 0, stream>>>(
                qs, ks, gs, kept.result->as<const S>(), maskS, lse, delta,
                factor, a, layouts.of[kQ], layouts.of[kK], layouts.of[kGradOut],
                kept.resultLayout);
        TRAINC_RETURN_IF_ERROR(checkLaunch(call, "attentionDeltaKernel"));
      }
    } else if (tensorCores) {
      if constexpr (std::is_same_v<S, Bf16>)
        TRAINC_RETURN_IF_ERROR(
            runTensorCoreAttentionStats(call, a, layouts, drop, qs, ks, vs, gs,
                                        maskS, madeLse, delta, factor));
    } else if (rows > 0) {
      // Pass 1.
      attentionStatsKernel<S>
          <<<blocksFor(queryTiles), kAttnThreads, 0, stream>>>(
              qs, ks, vs, gs, maskS, madeLse, delta, factor, a, layouts, drop);
      TRAINC_RETURN_IF_ERROR(checkLaunch(call, "attentionStatsKernel"));
    }
    if constexpr (std::is_same_v<S, Bf16>)
      if (tensorCores)
        return runTensorCoreAttentionGrad(
            call, a, layouts, drop, qs, ks, vs, gs, maskS, lse, delta, factor,
            needQ ? dq.as<S>() : nullptr, needKV ? dk.as<S>() : nullptr,
            needKV ? dv.as<S>() : nullptr);
    // Pass 2: dq.
    if (needQ) {
      attentionGradQKernel<S>
          <<<blocksFor(queryTiles), kAttnThreads, 0, stream>>>(
              qs, ks, vs, gs, maskS, lse, delta, factor, dq.as<S>(), a, layouts,
              drop);
      TRAINC_RETURN_IF_ERROR(checkLaunch(call, "attentionGradQKernel"));
    }
    // Pass 3: dk and dv (zeros when the group has no query head).
    if (needKV) {
      int64_t keyTiles = a.batch * a.hk * ceilDiv(a.sk, kTile);
      attentionGradKVKernel<S>
          <<<blocksFor(keyTiles), kAttnThreads, 0, stream>>>(
              qs, ks, vs, gs, maskS, lse, delta, factor, dk.as<S>(), dv.as<S>(),
              a, layouts, drop);
      TRAINC_RETURN_IF_ERROR(checkLaunch(call, "attentionGradKVKernel"));
    }
    return okStatus();
  });
}

} // namespace trainc::cuda
