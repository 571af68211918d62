//===- AttentionLayout.h - Where attention's elements are -------*- C++ -*-===//
//
// An attention tensor (q, k, v, the result, the gradients) is, logically,
// [B, H, S, D]: batch, head, sequence position, feature. It is stored
// either so (head-major, the op's canonical layout) or as [B, S, H, D]
// (sequence-major: the layout a projection's output has after a reshape,
// before the head transpose a model writes). Opcode::Attention's ints[2]
// says which (ExecutableFormat.h); both devices' kernels read every tensor
// through a HeadLayout, so neither layout costs a copy. Features are always
// contiguous.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_ATTENTIONLAYOUT_H
#define TRAINC_RUNTIME_MATH_ATTENTIONLAYOUT_H

#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

/// A [B, H, S, D] tensor's sizes and the element strides of its first
/// three dimensions in its storage (D's stride is 1).
struct HeadLayout {
  int64_t batch = 0, heads = 0, seq = 0, features = 0;
  int64_t batchStride = 0, headStride = 0, seqStride = 0;

  /// The element offset of (b, h, i, 0).
  TRAINC_HD int64_t offset(int64_t b, int64_t h, int64_t i) const {
    return b * batchStride + h * headStride + i * seqStride;
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

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_ATTENTIONLAYOUT_H
