//===- Attention.cpp - Scaled dot-product attention -----------------------===//
//
// For each batch b, query head h and query row i, with g = h / (Hq / Hk)
// the key/value head it shares (grouped-query attention):
//
//   s[j]   = scale * sum_d q[b,h,i,d] * k[b,g,j,d] + mask[b,h,i,j]
//            for the allowed keys j (all j, or j <= i + (Sk - Sq) when
//            causal: the last query row sees every key, as in KV-cached
//            decoding)
//   p[j]   = exp(s[j] - max_j s[j]) / sum_j exp(s[j] - max_j s[j])
//   o[b,h,i,:] = sum_j p[j] * v[b,g,j,:]
//
// With a soft cap c (floats[1], Gemma 2's), s[j] is c * tanh(scale * q.k / c)
// + mask[b,h,i,j] instead (math/Softcap.h). With dropout (floats[2], the
// stream's ints after ints[5]), p[j] is kept as graph.dropout keeps element
// ((b Hq + h) Sq + i) Sk + j of the [B, Hq, Sq, Sk] probabilities
// (math/Dropout.h; with head blocks, that of the whole [B, T Hq, Sq, Sk],
// math::wholeIndex of the block of heads) and scaled by 1 / (1 - ratio), or
// else 0, before the product with v; the log-sum-exp is the undropped row's.
//
// A row where no key is allowed, or every allowed score is -inf (masked),
// has no distribution to take; it gives zeros instead of NaN so that padded
// rows do not poison the rest of the batch. With ints[5] the forward also
// writes each row's log-sum-exp, max_j s[j] + log sum_j exp(s[j] - max),
// -inf for such a row, to its second result [B, Hq, Sq]. The mask is additive
// and each of its dims is 1 (broadcast) or the scores' size.
//
// Compute in f64 for f64, in f32 otherwise; 16-bit operands are widened
// once up front. (batch, head) pairs are split across threads; per pair,
// the query rows go in tiles of kQueryTile: the tile's scores are one GEMM
// (S = scale * Q K^T), then a masked softmax per row (f32: VectorMath.h's
// exp and sum), and its output a second GEMM (O = P V). A tile reads only
// the keys its last row may see (with a causal mask the earlier rows see
// fewer still, and their disallowed probabilities are zeroed): causal
// attention at Sq = Sk = 128 does 62.5% of the full products' work, each
// a GEMM at near full speed. Nor does it read the leading and trailing
// keys that an additive mask hides from all its rows (TileKeys), so the
// products of a causal mask given as a tensor read the keys the causal
// flag's do.
//
// Shape legend: q [B, Hq, Sq, D], k [B, Hk, Sk, D], v [B, Hk, Sk, Dv],
// mask [B|1, Hq|1, Sq|1, Sk|1], o [B, Hq, Sq, Dv]. Each tensor but the mask
// may be stored [B, S, H, D] instead (ints[2], math/AttentionLayout.h):
// a head's rows are then H * D elements apart, which the GEMMs take as
// their leading dimension, so neither layout is copied. q, k and v may be
// windows of one fused projection's heads (ints[3..4]): the same, rows
// (Hq + 2 Hk) D apart.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/DropoutMask.h"
#include "cpu/Gemm.h"
#include "cpu/KernelUtil.h"
#include "cpu/VectorMath.h"
#include "device/Device.h"
#include "math/AttentionLayout.h"
#include "math/AttentionStats.h"
#include "math/Dropout.h"
#include "math/Softcap.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

/// `t`'s elements as T: the tensor itself when it already holds T, else a
/// widened copy in `storage`.
template <typename T>
const T *asCompute(const TensorRef &t, std::vector<T> &storage);

/// Whether `a` and `b` are the same elements (dtypes agree: the
/// validator's rule).
bool sameElements(const TensorRef &a, const TensorRef &b) {
  return a.data == b.data && a.numElements() == b.numElements();
}

/// q, k and v as T (asCompute), widened once when they are one tensor
/// (windows of a fused projection: ints[3..4]).
template <typename T> struct QkvAsCompute {
  QkvAsCompute(const TensorRef &q, const TensorRef &k, const TensorRef &v) {
    this->q = asCompute(q, qBuf);
    this->k = sameElements(k, q) ? this->q : asCompute(k, kBuf);
    this->v = sameElements(v, q)   ? this->q
              : sameElements(v, k) ? this->k
                                   : asCompute(v, vBuf);
  }
  const T *q, *k, *v;
  std::vector<T> qBuf, kBuf, vBuf;
};

template <typename T>
const T *asCompute(const TensorRef &t, std::vector<T> &storage) {
  if (t.dtype == (std::is_same<T, double>::value ? DType::F64 : DType::F32))
    return t.as<T>();
  storage.resize(t.numElements());
  parallelFor(t.numElements(), int64_t(1) << 15,
              [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i)
                  storage[i] = loadAs<T>(t, i);
              });
  return storage.data();
}

/// Adds the mask row (if any) to the scores `s` of one query row.
template <typename T>
void addMaskRow(T *s, int64_t sk, const T *maskRow, int64_t maskStride) {
  if (maskRow)
    for (int64_t j = 0; j < sk; ++j)
      s[j] += maskRow[j * maskStride];
}

/// Turns the scores `s` of one query row into probabilities: adds the mask
/// row (if any), then a softmax over the `allowed` first keys; the others
/// and a row with nothing to attend to get 0. Returns the row's
/// log-sum-exp, max + log(sum), or -inf for a row with nothing to attend
/// to.
template <typename T>
T softmaxRow(T *s, int64_t sk, const T *maskRow, int64_t maskStride,
             int64_t allowed) {
  addMaskRow(s, sk, maskRow, maskStride);
  const T negInf = -std::numeric_limits<T>::infinity();
  T max = negInf;
  for (int64_t j = 0; j < allowed; ++j)
    max = std::max(max, s[j]);
  if (max == negInf) {
    std::fill(s, s + sk, T(0));
    return negInf;
  }
  T sum = 0;
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t j = 0; j < allowed; ++j)
      s[j] -= max;
    expF32(s, s, allowed);
    sum = sumF32(s, allowed);
  } else {
    for (int64_t j = 0; j < allowed; ++j) {
      s[j] = std::exp(s[j] - max);
      sum += s[j];
    }
  }
  T inv = T(1) / sum;
  for (int64_t j = 0; j < allowed; ++j)
    s[j] *= inv;
  std::fill(s + allowed, s + sk, T(0));
  return max + std::log(sum);
}

/// The probabilities of one query row from its forward's log-sum-exp
/// `lse` (softmaxRow's): exp(s - lse) over the `allowed` first keys (mask
/// added first), 0 for the others and for a row with nothing to attend to
/// (lse = -inf). The same values as softmaxRow's to rounding: one exp
/// and no division per key; softmaxRow's own where math::lseIsRemade
/// (|lse| >= 64, as a row every key of which a finite mask hides has).
template <typename T>
void probabilitiesRow(T *s, int64_t sk, const T *maskRow, int64_t maskStride,
                      int64_t allowed, T lse) {
  if (math::lseIsRemade(lse)) {
    softmaxRow(s, sk, maskRow, maskStride, allowed);
    return;
  }
  addMaskRow(s, sk, maskRow, maskStride);
  if (lse == -std::numeric_limits<T>::infinity())
    allowed = 0;
  for (int64_t j = 0; j < allowed; ++j)
    s[j] -= lse;
  if constexpr (std::is_same_v<T, float>)
    expF32(s, s, allowed);
  else
    for (int64_t j = 0; j < allowed; ++j)
      s[j] = std::exp(s[j]);
  std::fill(s + allowed, s + sk, T(0));
}

/// Soft-caps the first `n` scores of a row: s = cap * tanh(s / cap)
/// (math/Softcap.h), keeping each tanh in `tanhs` when given (the
/// gradient's slope, 1 - tanh^2).
template <typename T> void softcapRow(T *s, int64_t n, T cap, T *tanhs) {
  for (int64_t j = 0; j < n; ++j) {
    T t = math::softcapTanh(s[j], cap);
    if (tanhs)
      tanhs[j] = t;
    s[j] = cap * t;
  }
}

/// Query rows per tile: GEMMs of 32 rows still run near BLAS's full
/// speed, and causal tiles skip most of the masked half.
constexpr int64_t kQueryTile = 32;

/// A mask entry at or below this hides its key. In a row with a key it
/// does not hide whose s + m is above -2^119 (any mask entry above -2^119
/// and scores below 2^118 in magnitude), a hidden key's s + m - max is
/// below -2^118, whose exp is 0 in f32 and f64: its probability is 0.
/// Hugging Face's masks (finfo.min: -3.4e38 for f32 and bf16) and -inf
/// hide; f16's finfo.min (-65504) and -1e9 do not. (A mask with visible
/// entries in (-2^120, -2^119] is outside this.)
constexpr double kHidingMask = -0x1p120;

/// The keys [begin, end) a query tile reads.
struct KeyRange {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
  /// How many of the range's keys a row that may see the first `allowed`
  /// keys sees.
  int64_t seen(int64_t allowed) const {
    return std::clamp<int64_t>(allowed - begin, 0, size());
  }
};

/// The sizes of one attention call (q [B, Hq, Sq, D], k [B, Hk, Sk, D],
/// v [B, Hk, Sk, Dv]), where each tensor's elements are (`layout`, by
/// ExecutableFormat.h's tensor number) and the mask's strides, 0 along
/// broadcast dims.
struct AttentionShape {
  AttentionShape(const KernelCall &call, int maskInput) {
    int64_t bits = call.ints[2];
    math::QkvHeads qkv = math::qkvHeadsOf(call.ints.data, call.ints.size);
    // A gradient with one result writes dq, dk and dv into its windows.
    packedGrad = maskInput == 4 && call.numOutputs == 1 && qkv.any();
    for (int i = 0; i < call.inputs.size && i < maskInput; ++i)
      layout[i] = math::attentionLayout(call.inputs[i].dims, bits, qkv, i);
    for (int i = 0; i < (packedGrad ? 3 : call.numOutputs); ++i)
      layout[maskInput + i] =
          math::attentionLayout(call.outputs[packedGrad ? 0 : i].dims, bits,
                                qkv, maskInput + i, packedGrad);
    batch = layout[0].batch;
    hq = layout[0].heads;
    sq = layout[0].seq;
    d = layout[0].features;
    hk = layout[1].heads;
    sk = layout[1].seq;
    dv = layout[2].features;
    group = hk > 0 ? hq / hk : 1;
    causal = call.ints[0] != 0;
    hasMask = call.ints[1] != 0;
    stats = call.ints.size > kAttentionStatsInt &&
            call.ints[kAttentionStatsInt] != 0;
    scale = call.floats[0];
    softcap = call.floats.size > 1 ? call.floats[1] : 0;
    dropout = call.floats.size > 2 ? call.floats[2] : 0;
    if (dropout > 0) {
      dropoutKey = dropoutKeyOf(call, kAttentionStatsInt + 1);
      dropoutThreshold = math::keepThreshold(dropout);
      dropoutBlock = tensorBlockOf(call, kAttentionStatsInt + 4, hq * sq * sk);
    }
    if (!hasMask)
      return;
    const TensorRef &m = call.inputs[maskInput];
    std::vector<int64_t> strides = stridesOf(m);
    for (int i = 0; i < 4; ++i)
      maskStride[i] = m.dims[i] == 1 ? 0 : strides[i];
  }
  /// The mask row of (b, h, i) from key j, or null without a mask.
  template <typename T>
  const T *maskRow(const T *mask, int64_t b, int64_t h, int64_t i,
                   int64_t j = 0) const {
    return mask ? mask + b * maskStride[0] + h * maskStride[1] +
                      i * maskStride[2] + j * maskStride[3]
                : nullptr;
  }
  /// How many keys query row i may see.
  int64_t allowed(int64_t i) const {
    return causal ? std::clamp<int64_t>(i + (sk - sq) + 1, 0, sk) : sk;
  }
  /// The query rows [i0, i0 + rows) of tile `i0` and the keys [0, kv) the
  /// tile reads: what its last row may see (allowed() grows with i).
  int64_t tileRows(int64_t i0) const { return std::min(kQueryTile, sq - i0); }
  int64_t tileKeys(int64_t i0) const { return allowed(i0 + tileRows(i0) - 1); }

  /// Tensor i's layout: q, k, v, then attention's result, or the
  /// cotangent, dq, dk and dv of the gradient (the mask has none).
  math::HeadLayout layout[kAttentionGradTensors];
  int64_t batch, hq, sq, d, hk, sk, dv, group;
  /// The forward also writes, or the gradient reads, the log-sum-exps
  /// (ints[5]).
  bool causal, hasMask, packedGrad, stats;
  double scale;
  /// The scores' soft cap (floats[1]), 0 for none.
  double softcap;
  /// The probabilities' dropout ratio (floats[2]), 0 for none, the key of
  /// its stream, its keepThreshold and the block of the heads it numbers.
  double dropout;
  uint64_t dropoutKey = 0, dropoutThreshold = 0;
  math::DropoutBlock dropoutBlock;
  int64_t maskStride[4] = {0, 0, 0, 0};

  /// keep[j] for the `n` probabilities of row i of head (b, h) from key
  /// j0: whether the stream keeps element ((b Hq + h) Sq + i) Sk + j0 + j
  /// (of the whole's heads: math::wholeIndex).
  void drawRow(uint8_t *keep, int64_t n, int64_t b, int64_t h, int64_t i,
               int64_t j0) const {
    drawKeep(dropoutKey, dropoutThreshold,
             math::wholeIndex(dropoutBlock, b, (h * sq + i) * sk + j0), n,
             keep);
  }
  /// The kept entries' factor 1 / (1 - ratio) in T.
  template <typename T> T keptScale() const { return T(1.0 / (1.0 - dropout)); }
};

/// The keys each query tile reads: those its rows may see (tileKeys),
/// less the leading and trailing keys the mask hides (kHidingMask) from
/// every row of the tile. So a causal mask and a padding mask in one
/// [B, 1, S, S] term (Hugging Face's, whenever a model is given an
/// attention mask) read the keys causal attention does, less the
/// padding's. A row whose every key the mask hides keeps them all, so its
/// softmax over the masks' values (uniform under finfo.min, zeros under
/// -inf) is the definition's. Leaving out a hidden key changes the order
/// of the sums, not their terms (kHidingMask's conditions). But a NaN or
/// infinity in a left-out key's k or v row, which the definition makes
/// NaN in every row that reads it (0 times NaN), now reaches only the rows
/// of tiles that read the key.
template <typename T> class TileKeys {
public:
  TileKeys(const AttentionShape &a, const T *mask)
      : a(a), tiles((a.sq + kQueryTile - 1) / kQueryTile),
        batches(a.maskStride[0] ? a.batch : 1),
        heads(a.maskStride[1] ? a.hq : 1) {
    if (!mask)
      return;
    // One range per tile of each (b, h) the mask tells apart.
    ranges.resize(size_t(batches * heads * tiles));
    parallelFor(batches * heads * tiles, 1, [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e)
        ranges[e] = scan(mask, e / tiles / heads, e / tiles % heads,
                         e % tiles * kQueryTile);
    });
  }

  /// The keys that tile i0 of head (b, h) reads.
  KeyRange operator()(int64_t b, int64_t h, int64_t i0) const {
    if (ranges.empty())
      return {0, a.tileKeys(i0)};
    int64_t e = ((batches > 1 ? b : 0) * heads + (heads > 1 ? h : 0)) * tiles +
                i0 / kQueryTile;
    return ranges[e];
  }

private:
  KeyRange scan(const T *mask, int64_t b, int64_t h, int64_t i0) const {
    auto hidden = [](T m) { return m <= T(kHidingMask); };
    int64_t begin = a.sk, end = 0, stride = a.maskStride[3];
    for (int64_t i = i0; i < i0 + a.tileRows(i0); ++i) {
      const T *row = a.maskRow(mask, b, h, i);
      int64_t allowed = a.allowed(i), first = 0;
      while (first < allowed && hidden(row[first * stride]))
        ++first;
      if (first == allowed) { // all hidden (or none allowed): read them all
        if (allowed > 0)
          begin = 0, end = std::max(end, allowed);
        continue;
      }
      int64_t last = allowed - 1;
      while (hidden(row[last * stride]))
        --last;
      begin = std::min(begin, first);
      end = std::max(end, last + 1);
    }
    return begin < end ? KeyRange{begin, end} : KeyRange{0, 0};
  }

  const AttentionShape &a;
  int64_t tiles, batches, heads;
  std::vector<KeyRange> ranges;
};

/// Copies `rows` rows of `width` elements from `from` (row stride
/// `fromStride`) to tensor `to` at element `at` (row stride `toStride`).
template <typename T>
void storeRows(const T *from, int64_t fromStride, int64_t rows, int64_t width,
               const TensorRef &to, int64_t at, int64_t toStride) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = 0; e < width; ++e)
      storeAs(to, at + i * toStride + e, from[i * fromStride + e]);
}

} // namespace

Status runAttention(const KernelCall &call) {
  const TensorRef &qRef = call.inputs[0], &kRef = call.inputs[1],
                  &vRef = call.inputs[2];
  const TensorRef &out = call.outputs[0];
  if (!isFloat(qRef.dtype))
    return unsupportedDType(call, qRef.dtype);
  AttentionShape a(call, /*maskInput=*/3);
  withFloatCompute(qRef.dtype, [&](auto zero) {
    using T = decltype(zero);
    QkvAsCompute<T> qkv(qRef, kRef, vRef);
    const T *q = qkv.q, *k = qkv.k, *v = qkv.v;
    std::vector<T> maskBuf;
    const T *mask = a.hasMask ? asCompute(call.inputs[3], maskBuf) : nullptr;
    bool nativeOut = out.dtype == qRef.dtype &&
                     (out.dtype == DType::F32 || out.dtype == DType::F64);
    // The log-sum-exps, [B, Hq, Sq] in T (the validator's rule).
    T *lse = a.stats ? call.outputs[1].as<T>() : nullptr;
    int64_t sq = a.sq, sk = a.sk, dv = a.dv;
    const math::HeadLayout &qL = a.layout[0], &kL = a.layout[1],
                           &vL = a.layout[2], &oL = a.layout[3];
    TileKeys<T> keys(a, mask);
    parallelFor(a.batch * a.hq, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> scores(size_t(kQueryTile * sk)),
          wide(nativeOut ? 0 : sq * dv);
      std::vector<uint8_t> keep(a.dropout > 0 ? size_t(sk) : 0);
      for (int64_t bh = begin; bh < end; ++bh) {
        int64_t b = bh / a.hq, h = bh % a.hq;
        const T *qb = q + qL.offset(b, h, 0);
        const T *kb = k + kL.offset(b, h / a.group, 0);
        const T *vb = v + vL.offset(b, h / a.group, 0);
        T *o = nativeOut ? out.as<T>() + oL.offset(b, h, 0) : wide.data();
        int64_t ldo = nativeOut ? oL.seqStride : dv;
        for (int64_t i0 = 0; i0 < sq; i0 += kQueryTile) {
          KeyRange r = keys(b, h, i0);
          int64_t rows = a.tileRows(i0), kv = r.size();
          gemm(false, /*tb=*/true, rows, kv, a.d, T(a.scale),
               qb + i0 * qL.seqStride, qL.seqStride,
               kb + r.begin * kL.seqStride, kL.seqStride, scores.data(), kv);
          for (int64_t i = 0; i < rows; ++i) {
            T *row = scores.data() + i * kv;
            int64_t seen = r.seen(a.allowed(i0 + i));
            if (a.softcap > 0)
              softcapRow(row, seen, T(a.softcap), static_cast<T *>(nullptr));
            T rowLse =
                softmaxRow(row, kv, a.maskRow(mask, b, h, i0 + i, r.begin),
                           a.maskStride[3], seen);
            if (lse)
              lse[bh * sq + i0 + i] = rowLse;
            if (a.dropout > 0) {
              a.drawRow(keep.data(), kv, b, h, i0 + i, r.begin);
              applyKeep(row, row, keep.data(), kv, a.keptScale<T>());
            }
          }
          gemm(false, false, rows, dv, kv, T(1), scores.data(), kv,
               vb + r.begin * vL.seqStride, vL.seqStride, o + i0 * ldo, ldo);
        }
        if (!nativeOut)
          storeRows(wide.data(), dv, sq, dv, out, oL.offset(b, h, 0),
                    oL.seqStride);
      }
    });
  });
  return okStatus();
}

} // namespace trainc::cpu

//===--- The gradient
//-----------------------------------------------------------===//
//
// For each batch b and key/value head g, for each of its query heads h
// (h / group == g), with P the forward's probabilities remade as above, or,
// given the forward's log-sum-exps (ints[5]: trainc-attention-stats), as
// P = exp(S - lse), which skips each row's max and sum:
//
//   dP = dO V^T,  D_i = sum_j P_ij dP_ij,  dS = P * (dP - D)
//   dQ_h = scale * dS K,  dK_g += scale * dS^T Q_h,  dV_g += P^T dO
//
// With a soft cap, each dS_ij is multiplied by 1 - t_ij^2 first, t_ij the
// tanh its remade score kept (a third [kQueryTile, Sk] buffer). With
// dropout, Z = P dropped out as the forward did (a fourth buffer) takes
// P's place in dV += Z^T dO, and dO V^T is dropped out the same way to
// become dP: D_i = sum_j P_ij dP_ij is sum_j Z_ij (dO V^T)_ij.
//
// A task owns one (b, g): its dK and dV accumulate over the group's heads
// and their query tiles in order, and the dQ of its query heads are its
// own, so the result does not depend on the thread count. Query rows go in
// the forward's tiles, each reading only the keys it may see. Per task,
// two [kQueryTile, Sk] buffers; no [B, H, Sq, Sk] tensor exists. Compute as
// the forward: f64 for f64, else f32 with 16-bit operands widened once and
// the results rounded once.

namespace trainc::cpu {

Status runAttentionGrad(const KernelCall &call) {
  const TensorRef &qRef = call.inputs[0], &kRef = call.inputs[1],
                  &vRef = call.inputs[2], &gRef = call.inputs[3];
  if (!isFloat(qRef.dtype))
    return unsupportedDType(call, qRef.dtype);
  AttentionShape a(call, /*maskInput=*/4);
  // dq, dk and dv: three results, or windows of one (a.packedGrad).
  const TensorRef &dqOut = call.outputs[0],
                  &dkOut = call.outputs[a.packedGrad ? 0 : 1],
                  &dvOut = call.outputs[a.packedGrad ? 0 : 2];
  withFloatCompute(qRef.dtype, [&](auto zero) {
    using T = decltype(zero);
    QkvAsCompute<T> qkv(qRef, kRef, vRef);
    std::vector<T> gBuf, maskBuf;
    const T *q = qkv.q, *k = qkv.k, *v = qkv.v, *g = asCompute(gRef, gBuf);
    const T *mask = a.hasMask ? asCompute(call.inputs[4], maskBuf) : nullptr;
    // The forward's log-sum-exps, the input after its result (which the
    // GPU's kernels read for D; the CPU takes D from its P and dP).
    const T *lse = a.stats ? call.inputs[5 + a.hasMask].as<T>() : nullptr;
    bool native = qRef.dtype == DType::F32 || qRef.dtype == DType::F64;
    const T scale = T(a.scale);
    int64_t hk = a.hk, sq = a.sq, sk = a.sk, d = a.d, dv = a.dv,
            group = a.group;
    const math::HeadLayout &qL = a.layout[0], &kL = a.layout[1],
                           &vL = a.layout[2], &gL = a.layout[3],
                           &dqL = a.layout[4], &dkL = a.layout[5],
                           &dvL = a.layout[6];
    TileKeys<T> keys(a, mask);
    if (group == 0 && !a.packedGrad) // no query heads: dk = dv = 0
      for (const TensorRef *t : {&dkOut, &dvOut})
        for (int64_t e = 0, n = t->numElements(); e < n; ++e)
          storeAs(*t, e, 0.0);
    parallelFor(a.batch * hk, 1, [&](int64_t begin, int64_t end) {
      std::vector<T> p(size_t(kQueryTile * sk)), dp(size_t(kQueryTile * sk)),
          tanhs(a.softcap > 0 ? size_t(kQueryTile * sk) : 0),
          z(a.dropout > 0 ? size_t(kQueryTile * sk) : 0);
      std::vector<uint8_t> keep(a.dropout > 0 ? size_t(kQueryTile * sk) : 0);
      std::vector<T> dqWide(native ? 0 : sq * d), dkWide(native ? 0 : sk * d),
          dvWide(native ? 0 : sk * dv);
      for (int64_t bg = begin; bg < end; ++bg) {
        int64_t b = bg / hk, kvHead = bg % hk;
        const T *kb = k + kL.offset(b, kvHead, 0),
                *vb = v + vL.offset(b, kvHead, 0);
        // Native results are written in place (their own row strides);
        // 16-bit ones go through contiguous f32 rows, rounded once.
        T *dk =
            native ? dkOut.as<T>() + dkL.offset(b, kvHead, 0) : dkWide.data();
        T *dvg =
            native ? dvOut.as<T>() + dvL.offset(b, kvHead, 0) : dvWide.data();
        int64_t ldk = native ? dkL.seqStride : d,
                ldv = native ? dvL.seqStride : dv;
        if (group > 0) // each tile adds to the keys it reads
          for (int64_t j = 0; j < sk; ++j) {
            std::fill(dk + j * ldk, dk + j * ldk + d, T(0));
            std::fill(dvg + j * ldv, dvg + j * ldv + dv, T(0));
          }
        for (int64_t j = 0; j < group; ++j) {
          int64_t h = kvHead * group + j;
          T *dq = native ? dqOut.as<T>() + dqL.offset(b, h, 0) : dqWide.data();
          int64_t ldq = native ? dqL.seqStride : d;
          for (int64_t i0 = 0; i0 < sq; i0 += kQueryTile) {
            KeyRange r = keys(b, h, i0);
            int64_t rows = a.tileRows(i0), kv = r.size();
            const T *qt = q + qL.offset(b, h, i0),
                    *gt = g + gL.offset(b, h, i0);
            // The range's keys and values, and their gradients' rows.
            const T *kr = kb + r.begin * kL.seqStride,
                    *vr = vb + r.begin * vL.seqStride;
            T *dkr = dk + r.begin * ldk, *dvr = dvg + r.begin * ldv;
            gemm(false, /*tb=*/true, rows, kv, d, scale, qt, qL.seqStride, kr,
                 kL.seqStride, p.data(), kv);
            for (int64_t i = 0; i < rows; ++i) {
              T *row = p.data() + i * kv;
              const T *maskRow = a.maskRow(mask, b, h, i0 + i, r.begin);
              int64_t seen = r.seen(a.allowed(i0 + i));
              if (a.softcap > 0)
                softcapRow(row, seen, T(a.softcap), tanhs.data() + i * kv);
              if (lse)
                probabilitiesRow(row, kv, maskRow, a.maskStride[3], seen,
                                 lse[(b * a.hq + h) * sq + i0 + i]);
              else
                softmaxRow(row, kv, maskRow, a.maskStride[3], seen);
            }
            // dV += P^T dO (Z^T dO); dP = dO V^T (dropped out by the same
            // bits, drawn once).
            const T *pv = p.data();
            if (a.dropout > 0) {
              for (int64_t i = 0; i < rows; ++i) {
                a.drawRow(keep.data() + i * kv, kv, b, h, i0 + i, r.begin);
                applyKeep(p.data() + i * kv, z.data() + i * kv,
                          keep.data() + i * kv, kv, a.keptScale<T>());
              }
              pv = z.data();
            }
            gemm(/*ta=*/true, false, kv, dv, rows, T(1), pv, kv, gt,
                 gL.seqStride, dvr, ldv, T(1));
            gemm(false, /*tb=*/true, rows, kv, dv, T(1), gt, gL.seqStride, vr,
                 vL.seqStride, dp.data(), kv);
            if (a.dropout > 0)
              applyKeep(dp.data(), dp.data(), keep.data(), rows * kv,
                        a.keptScale<T>());
            // dS = P * (dP - rowsum(P * dP)), in place of dP; soft-capped,
            // times 1 - t^2 (the keys past the allowed ones have P = 0).
            for (int64_t i = 0; i < rows; ++i) {
              T *pr = p.data() + i * kv, *dr = dp.data() + i * kv;
              T dot = rowDot(pr, dr, kv);
              for (int64_t c = 0; c < kv; ++c)
                dr[c] = pr[c] * (dr[c] - dot);
              if (a.softcap > 0) {
                const T *tr = tanhs.data() + i * kv;
                for (int64_t c = 0, n = r.seen(a.allowed(i0 + i)); c < n; ++c)
                  dr[c] *= math::softcapSlope(tr[c]);
              }
            }
            // dQ = scale dS K; dK += scale dS^T Q.
            gemm(false, false, rows, d, kv, scale, dp.data(), kv, kr,
                 kL.seqStride, dq + i0 * ldq, ldq);
            gemm(/*ta=*/true, false, kv, d, rows, scale, dp.data(), kv, qt,
                 qL.seqStride, dkr, ldk, T(1));
          }
          if (!native)
            storeRows(dqWide.data(), d, sq, d, dqOut, dqL.offset(b, h, 0),
                      dqL.seqStride);
        }
        if (!native) {
          storeRows(dkWide.data(), d, sk, d, dkOut, dkL.offset(b, kvHead, 0),
                    dkL.seqStride);
          storeRows(dvWide.data(), dv, sk, dv, dvOut, dvL.offset(b, kvHead, 0),
                    dvL.seqStride);
        }
      }
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
