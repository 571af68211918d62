//===- BroadcastView.h - A smaller operand read over a loop's shape -*- C++
//-*-===//
//
// A fused loop (graph.fused_elementwise) runs over the elements of its
// results' shape, [R_0, ..., R_{n-1}] in row-major order. An operand of
// rank r reads, at result index (i_0, ..., i_{n-1}), its element
//
//   x[j_0, ..., j_{r-1}],  j_k = (x.dims[k] == 1 ? 0 : i_{dims[k]})
//
// where dims (strictly increasing, each below n) names the result
// dimension of each of its dimensions, as graph.broadcast_in_dim would
// (a full operand: dims 0..n-1; a 0-d one: no dims). The executable keeps
// dims as a mask of result dimensions (math/FusedProgram.h).
//
// makeBroadcastView checks the operand against the results and turns it
// into strides over the result's dimensions (the schema's
// fusedOperandStrides, which the compiler uses too: 0 where the operand
// does not vary, neighbours whose strides continue each other merged,
// result dimensions of size 1 dropped; the innermost stride is 0 or 1).
// So a full operand becomes one
// dimension of stride 1, a 0-d one none, a per-channel scale of NCHW
// three: [N: 0][C: 1][H*W: 0]. At most kFusedMaxViewDims remain (an
// operand of rank r needs at most 2r + 1).
//
// BroadcastCursor walks the view in row-major order: start(i) finds flat
// index i's operand offset (a division per dimension), advance(m) moves m
// elements on within the innermost dimension, carrying outward. The CPU
// (cpu/FusedElementwise.cpp: a chunk's operand copied run by run) and
// CUDA (cuda/FusedElementwise.cu: a thread's pack element by element)
// both read the operand through it, so the CPU tests check the indexing
// both devices use.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_BROADCASTVIEW_H
#define TRAINC_RUNTIME_MATH_BROADCASTVIEW_H

#include "base/HostDevice.h"
#include "trainc/schema/ExecutableFormat.h"

#include <cstdint>
#include <string>

namespace trainc::math {

/// An operand's element offsets over a loop's flat index: dimension d
/// (outermost first) has size[d] result elements, each stride[d] operand
/// elements after the one before.
struct BroadcastView {
  int rank = 0;
  int64_t size[kFusedMaxViewDims] = {};
  int64_t stride[kFusedMaxViewDims] = {};

  /// Whether the operand's offset is the flat index itself.
  TRAINC_HD bool contiguous() const {
    return rank == 0 || (rank == 1 && stride[0] == 1);
  }
  /// Whether every index reads the operand's offset 0.
  TRAINC_HD bool constant() const {
    for (int d = 0; d < rank; ++d)
      if (stride[d] != 0)
        return false;
    return true;
  }
};

/// Builds the view of an operand of `operandRank` dimensions
/// `operandDims`, its dimension k spanning result dimension number k of
/// those set in `mask`, over a result of `resultRank` dimensions
/// `resultDims`. Returns "" or what is wrong: a mask of another number of
/// dimensions than the operand has or past the result's rank, an operand
/// dimension neither 1 nor its result dimension, more than
/// kFusedMaxViewDims dimensions after merging.
inline std::string makeBroadcastView(const int64_t *resultDims, int resultRank,
                                     const int64_t *operandDims,
                                     int operandRank, uint64_t mask,
                                     BroadcastView &view) {
  if (resultRank < 0 || resultRank > 64 ||
      (resultRank < 64 && (mask >> resultRank) != 0))
    return "spans a dimension past the results' rank";
  int spanned = 0;
  for (uint64_t m = mask; m; m &= m - 1)
    ++spanned;
  if (spanned != operandRank)
    return "has " + std::to_string(operandRank) + " dimensions but spans " +
           std::to_string(spanned) + " of the results'";
  for (int d = 0, k = 0; d < resultRank; ++d)
    if (mask >> d & 1) {
      if (operandDims[k] != 1 && operandDims[k] != resultDims[d])
        return "has dimension " + std::to_string(k) + " of " +
               std::to_string(operandDims[k]) +
               ", neither 1 nor the results' dimension " + std::to_string(d) +
               " of " + std::to_string(resultDims[d]);
      ++k;
    }
  view = BroadcastView();
  view.rank = fusedOperandStrides(resultDims, resultRank, operandDims, mask,
                                  view.size, view.stride);
  if (view.rank < 0) {
    view.rank = 0;
    return "needs more than " + std::to_string(kFusedMaxViewDims) +
           " dimensions of strides over the results";
  }
  return "";
}

/// A position in a view: the index along each dimension and the operand
/// offset they make.
struct BroadcastCursor {
  int64_t index[kFusedMaxViewDims] = {};
  int64_t offset = 0;

  /// Moves to flat index `i` (below the product of the view's sizes).
  TRAINC_HD void start(const BroadcastView &v, int64_t i) {
    offset = 0;
    for (int d = v.rank - 1; d >= 0; --d) {
      index[d] = i % v.size[d];
      i /= v.size[d];
      offset += index[d] * v.stride[d];
    }
  }

  /// Elements left in the innermost dimension from here (at least 1).
  TRAINC_HD int64_t run(const BroadcastView &v) const {
    return v.rank == 0 ? INT64_MAX : v.size[v.rank - 1] - index[v.rank - 1];
  }

  /// Moves `m` elements on, m <= run(v): to the next row of the innermost
  /// dimension (and outward) when m reaches its end.
  TRAINC_HD void advance(const BroadcastView &v, int64_t m) {
    int d = v.rank - 1;
    if (d < 0)
      return;
    index[d] += m;
    offset += m * v.stride[d];
    while (d > 0 && index[d] == v.size[d]) {
      offset -= v.size[d] * v.stride[d];
      index[d] = 0;
      --d;
      ++index[d];
      offset += v.stride[d];
    }
  }
};

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_BROADCASTVIEW_H
