//===- AttentionLayout.h - Where attention's elements are -------*- C++ -*-===//
//
// An attention tensor (q, k, v, the result, the gradients) is, logically,
// [B, H, S, D]: batch, head, sequence position, feature. It is stored
// either so (head-major, the op's canonical layout) or as [B, S, H, D]
// (sequence-major: the layout a projection's output has after a reshape,
// before the head transpose a model writes). Opcode::Attention's ints[2]
// says which (ExecutableFormat.h); both devices' kernels read every tensor
// through a HeadLayout, so neither layout costs a copy. Features are always
// contiguous. With ints[3..4] = [Hq, Hk] (qkv_heads), q, k and v are each
// a window of the heads of one sequence-major [B, S, Hq + 2 Hk, D] tensor,
// a fused projection's output: its rows are (Hq + 2 Hk) D apart, and the
// window starts `base` elements in.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_ATTENTIONLAYOUT_H
#define TRAINC_RUNTIME_MATH_ATTENTIONLAYOUT_H

#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

/// A [B, H, S, D] tensor's sizes, the element strides of its first three
/// dimensions in its storage (D's stride is 1) and the offset of its
/// first element.
struct HeadLayout {
  int64_t batch = 0, heads = 0, seq = 0, features = 0;
  int64_t batchStride = 0, headStride = 0, seqStride = 0, base = 0;

  /// The element offset of (b, h, i, 0).
  TRAINC_HD int64_t offset(int64_t b, int64_t h, int64_t i) const {
    return base + b * batchStride + h * headStride + i * seqStride;
  }
};

/// The layout of a tensor whose stored dims are `dims` (rank 4), stored
/// sequence-major when `seqMajor`.
TRAINC_HD HeadLayout headLayout(const int64_t *dims, bool seqMajor) {
  HeadLayout l;
  l.batch = dims[0];
  l.heads = seqMajor ? dims[2] : dims[1];
  l.seq = seqMajor ? dims[1] : dims[2];
  l.features = dims[3];
  l.batchStride = dims[1] * dims[2] * dims[3];
  l.headStride = seqMajor ? dims[3] : dims[2] * dims[3];
  l.seqStride = seqMajor ? dims[2] * dims[3] : dims[3];
  return l;
}

/// Whether tensor `i` (ExecutableFormat.h's numbering) is sequence-major
/// in an attention instruction whose ints[2] is `bits`.
TRAINC_HD bool isSeqMajor(int64_t bits, int i) { return (bits >> i) & 1; }

/// The heads [Hq, Hk] of which q, k and v are windows: an attention
/// instruction's ints[3..4] ({0, 0}, none, when it has fewer ints).
struct QkvHeads {
  int64_t q = 0, kv = 0;
  TRAINC_HD bool any() const { return q > 0 && kv > 0; }
};
TRAINC_HD QkvHeads qkvHeadsOf(const int64_t *ints, int64_t count) {
  return count >= 5 ? QkvHeads{ints[3], ints[4]} : QkvHeads{};
}

/// The layout of tensor `i` (ExecutableFormat.h's numbering), stored as
/// `dims` (rank 4), of an attention instruction whose ints[2] is `bits`:
/// headLayout through its bit, and for q, k and v under `qkv` their window
/// of the stored heads: q the first Hq, then k's Hk, then v's. With
/// `packedGrad` (an AttentionGrad whose one result is the fused
/// projection's gradient) dq, dk and dv are the same windows of it.
TRAINC_HD HeadLayout attentionLayout(const int64_t *dims, int64_t bits,
                                     QkvHeads qkv, int i,
                                     bool packedGrad = false) {
  HeadLayout l = headLayout(dims, isSeqMajor(bits, i));
  int window = i < 3 ? i : (packedGrad && i >= 4 ? i - 4 : -1);
  if (window >= 0 && qkv.any()) {
    int64_t first = window == 0 ? 0 : qkv.q + (window - 1) * qkv.kv;
    l.heads = window == 0 ? qkv.q : qkv.kv;
    l.base = first * l.headStride;
  }
  return l;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_ATTENTIONLAYOUT_H
