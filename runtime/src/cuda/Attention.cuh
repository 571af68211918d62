//===- Attention.cuh - What the attention kernels share ---------*- CUDA
//-*-===//
//
// The shape of an attention call and the per-element rules both attention
// implementations follow (Attention.cu: any dtype and size, scalar
// arithmetic; AttentionTensorCore.cu: bf16 with head size <= 64 on the
// tensor cores): which keys a query sees, its score, its weight, and
// where each tensor's rows are. Every tensor but the mask is read or
// written through its math::HeadLayout ([B, H, S, D] or, by ints[2]'s bit,
// [B, S, H, D]): a (b, h) pair's rows are seqStride elements apart, their
// features contiguous; the kernels never assume a row stride of D. The
// softmax statistics (each query row's log-sum-exp, natural log, and the
// gradient's D) are contiguous [B, Hq, Sq] in the compute type, row (b *
// Hq + h) * Sq + i, whether a kernel made them or the forward kept them
// (ints[5], ExecutableFormat.h), so either is read the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_ATTENTION_CUH
#define TRAINC_RUNTIME_CUDA_ATTENTION_CUH

#include "cuda/KernelUtil.cuh"
#include "math/AttentionLayout.h"
#include "math/Dropout.h"
#include "math/Softcap.h"
#include "math/Transcendental.h"

#include <cmath>

namespace trainc::cuda {
namespace attention {

__host__ __device__ __forceinline__ int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
__host__ __device__ __forceinline__ int64_t minOf(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/// Tensor numbers (ExecutableFormat.h's): q, k, v, then the forward's
/// result, or the gradient's cotangent, dq, dk and dv.
constexpr int kQ = 0, kK = 1, kV = 2, kOut = 3, kGradOut = 3, kDq = 4, kDk = 5,
              kDv = 6;

/// The sizes of one call and the mask's strides (0 along broadcast dims),
/// passed to the kernels by value.
struct AttnShape {
  int64_t batch, hq, hk, sq, sk, d, dv, group;
  int64_t maskStride[4];
  double scale;
  /// The scores' soft cap (floats[1]: graph.attention's softcap), 0 for
  /// none.
  double softcap;
  bool causal;

  /// How many keys query row i may see (the first ones).
  __host__ __device__ int64_t allowed(int64_t i) const {
    if (!causal)
      return sk;
    int64_t n = i + (sk - sq) + 1;
    return n < 0 ? 0 : (n > sk ? sk : n);
  }
  /// The first query row that sees key j.
  __host__ __device__ int64_t firstViewer(int64_t j) const {
    if (!causal)
      return 0;
    int64_t i = j - (sk - sq);
    return i < 0 ? 0 : (i > sq ? sq : i);
  }
};

/// Where each tensor's rows are, by tensor number (those a call does not
/// have are unused), passed to the kernels by value beside AttnShape
/// rather than in it: nvcc 13 copies a struct parameter of at most 128
/// bytes (AttnShape alone) into registers but reads a larger one in place,
/// and with the layouts inside, the scalar dq kernel took 28 more registers
/// on sm_90a and the tensor-core statsKernel spilled.
struct AttnLayouts {
  math::HeadLayout of[kAttentionGradTensors];
};

__device__ __forceinline__ float expOf(float x) { return math::expCore(x); }
__device__ __forceinline__ double expOf(double x) { return exp(x); }
__device__ __forceinline__ float logOf(float x) { return logf(x); }
__device__ __forceinline__ double logOf(double x) { return log(x); }
__device__ __forceinline__ float maxOf(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double maxOf(double a, double b) {
  return fmax(a, b);
}
template <typename C> __device__ __forceinline__ C infinity() {
  return C(INFINITY);
}

/// The score of query i and key j from their dot product: scale * dot
/// (soft-capped: softcap * tanh(scale * dot / softcap)) + mask, or -inf
/// where i may not see j (either past its end, or causal).
/// `maskBH` is the mask of (b, h), or null. With `MayCap` false the cap
/// is not looked at: the tensor-core kernels, which take no soft cap
/// (tensorCoreAttentionFits), would spill the registers its code takes.
template <bool MayCap = true, typename S, typename C>
__device__ __forceinline__ C scoreOf(const AttnShape &a, const S *maskBH,
                                     int64_t i, int64_t j, C dot) {
  if (i >= a.sq || j >= a.allowed(i))
    return -infinity<C>();
  C s = C(a.scale) * dot;
  if (MayCap && a.softcap > 0)
    s = C(a.softcap) * math::softcapTanh(s, C(a.softcap));
  if (maskBH)
    s += C(load(maskBH, i * a.maskStride[2] + j * a.maskStride[3]));
  return s;
}

/// What the gradient of a score made by scoreOf from `dot` is multiplied
/// by to become its dot product's, over the scale: 1 - tanh^2 under a soft
/// cap (math/Softcap.h), else 1.
template <typename C>
__device__ __forceinline__ C scoreSlope(const AttnShape &a, C dot) {
  if (!(a.softcap > 0))
    return C(1);
  return math::softcapSlope(math::softcapTanh(C(a.scale) * dot, C(a.softcap)));
}

/// The probabilities' dropout (floats[2] and the stream after ints[5]:
/// graph.attention's `dropout`), passed to the kernels (scalar and tensor
/// core) beside AttnShape (which it would push past 128 bytes, see
/// AttnLayouts): the ratio (0 for none), the stream's key and the ratio's
/// keepThreshold (math/Dropout.h), and the kept probabilities' factor
/// 1 / (1 - ratio).
struct AttnDropout {
  double ratio = 0, scale = 1;
  uint64_t key = 0, threshold = 0;
  /// The block of the heads (the [B, Hq, Sq, Sk] probabilities' runs).
  math::DropoutBlock block;
};

/// What probability (b, h, i, j) is multiplied by: 1 without dropout;
/// with it, the factor when element ((b Hq + h) Sq + i) Sk + j of the
/// stream is kept (as graph.dropout keeps that element of the [B, Hq, Sq,
/// Sk] probabilities, and the CPU's kernel; with head blocks, h and Hq
/// those of the whole: math::wholeIndex), else 0. Past the
/// scores' ends (where p is 0) it is 1.
template <typename C>
__device__ __forceinline__ C dropWeight(const AttnDropout &drop,
                                        const AttnShape &a, int64_t b,
                                        int64_t h, int64_t i, int64_t j) {
  if (!(drop.ratio > 0) || i >= a.sq || j >= a.sk)
    return C(1);
  uint64_t index = math::wholeIndex(drop.block, b, (h * a.sq + i) * a.sk + j);
  return math::dropoutKept(drop.key, index, drop.threshold) ? C(drop.scale)
                                                            : C(0);
}

/// exp(s - reference), 0 for an excluded (-inf) score.
template <typename C> __device__ __forceinline__ C weightOf(C s, C reference) {
  return s == -infinity<C>() ? C(0) : expOf(s - reference);
}

/// A query tile: (b, h) and its index b * Hq + h (the statistics' row
/// block), the kv head it reads, its first row, its rows, and the keys its
/// rows may see.
struct QueryTile {
  int64_t bh, b, h, kvHead, i0, rows, keyEnd;
};

/// Query tile `t` of B * Hq * ceil(Sq / tileRows); under causal masking a
/// head's last tiles, which see the most keys, come first.
__device__ __forceinline__ QueryTile queryTileOf(const AttnShape &a, int64_t t,
                                                 int64_t tileRows) {
  int64_t queryTiles = ceilDiv(a.sq, tileRows);
  QueryTile q;
  q.bh = t / queryTiles;
  int64_t qt = t % queryTiles;
  if (a.causal)
    qt = queryTiles - 1 - qt;
  q.b = q.bh / a.hq;
  q.h = q.bh % a.hq;
  q.kvHead = q.h / a.group;
  q.i0 = qt * tileRows;
  q.rows = minOf(tileRows, a.sq - q.i0);
  q.keyEnd = a.allowed(q.i0 + q.rows - 1);
  return q;
}

template <typename S>
__device__ __forceinline__ const S *maskOf(const AttnShape &a, const S *mask,
                                           int64_t b, int64_t h) {
  return mask ? mask + b * a.maskStride[0] + h * a.maskStride[1] : nullptr;
}

} // namespace attention

/// The tensor-core attention (AttentionTensorCore.cu) takes bf16 calls
/// whose head sizes (query-key D and value Dv, which may differ) are at
/// most kTensorCoreMaxHead, without a soft cap; with or without dropout
/// (dropWeight, as the scalar kernels).
constexpr int64_t kTensorCoreMaxHead = 64;
bool tensorCoreAttentionFits(DType dtype, const attention::AttnShape &a);

/// The forward pass: out = softmax(scale q k^T + mask) v, and when `lse` is
/// not null each query row's log-sum-exp ([B, Hq, Sq], -inf for a row that
/// sees nothing).
Status runTensorCoreAttention(const KernelCall &call,
                              const attention::AttnShape &a,
                              const attention::AttnLayouts &layouts,
                              const attention::AttnDropout &drop, const Bf16 *q,
                              const Bf16 *k, const Bf16 *v, const Bf16 *mask,
                              Bf16 *out, float *lse);
/// The gradient's first pass (Attention.cu's, same Scratch statistics):
/// lse, delta and the factor (math/AttentionStats.h) per query row, for a
/// gradient not given the forward's.
Status runTensorCoreAttentionStats(const KernelCall &call,
                                   const attention::AttnShape &a,
                                   const attention::AttnLayouts &layouts,
                                   const attention::AttnDropout &drop,
                                   const Bf16 *q, const Bf16 *k, const Bf16 *v,
                                   const Bf16 *g, const Bf16 *mask, float *lse,
                                   float *delta, float *factor);
/// The gradient's other two passes, from the rows' lse, delta and factor:
/// dq, then dk and dv (either may be null when not wanted). The factors
/// are the [B, Hq, Sq] after the deltas (`factor` == `delta` + B Hq Sq;
/// else an internal error).
Status runTensorCoreAttentionGrad(
    const KernelCall &call, const attention::AttnShape &a,
    const attention::AttnLayouts &layouts, const attention::AttnDropout &drop,
    const Bf16 *q, const Bf16 *k, const Bf16 *v, const Bf16 *g,
    const Bf16 *mask, const float *lse, const float *delta, const float *factor,
    Bf16 *dq, Bf16 *dk, Bf16 *dv);

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_ATTENTION_CUH
