//===- NormParamSums.h - The order of norm_grad_params's sums --*- C++ -*-===//
//
// graph.norm_grad_params gives, beside the norms' input gradient, the
// gradients of their scale and bias: over the leading dims (the rows r of
// x viewed as [R, N]),
//
//   scale_grad[j] = sum_r T(g[r, j] * xhat[r, j])     (the product rounded
//   bias_grad[j]  = sum_r g[r, j]                      to the type T first)
//
// accumulated in f64 (as graph.reduce_sum accumulates) and rounded to T
// once. Its order is fixed here, and both devices follow it, so they give
// the same bits:
//
// 1. The rows are cut into segments of normSegmentRows(R) consecutive rows
//    (the last may be shorter): at least kNormSegmentMinRows, and at most
//    kNormMaxSegments segments.
// 2. A segment's sum for column j adds its rows' terms in row order, from 0.
// 3. Column j's result adds the segments' sums in segment order, from 0.
//
// xhat is norm_grad's: (x - mean) * rstd in T, from the row statistics of
// cpu/NormStatistics.h (which the GPU's Norm.cu reproduces bit for bit).
// The CPU (cpu/FusedGradients.cpp) runs segments in parallel; the GPU
// (cuda/Norm.cu) gives each (segment, column) a thread, then each column a
// thread for step 3. Shared kernel math (TRAINC_HD), as math/AdamW.h.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_NORMPARAMSUMS_H
#define TRAINC_RUNTIME_MATH_NORMPARAMSUMS_H

#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

constexpr int64_t kNormSegmentMinRows = 8;
constexpr int64_t kNormMaxSegments = 128;

/// Rows per segment for `rows` rows (at least 1).
TRAINC_HD int64_t normSegmentRows(int64_t rows) {
  int64_t even = (rows + kNormMaxSegments - 1) / kNormMaxSegments;
  return even > kNormSegmentMinRows ? even : kNormSegmentMinRows;
}

/// Segments of `rows` rows (0 for none).
TRAINC_HD int64_t normSegments(int64_t rows) {
  int64_t per = normSegmentRows(rows);
  return (rows + per - 1) / per;
}

/// The scale gradient's term: the product rounded to T, then widened.
template <typename T> TRAINC_HD double scaleGradTerm(T g, T xhat) {
  T product = g * xhat;
  return double(product);
}

/// Step 3: the sum of `segments` partial sums `stride` apart, in order.
/// The loads go kCombineAhead at a time before their adds, so that a GPU
/// thread has that many in flight instead of waiting on each in turn; the
/// additions keep their order.
constexpr int kCombineAhead = 16;
TRAINC_HD double combineSegments(const double *partials, int64_t segments,
                                 int64_t stride) {
  double sum = 0;
  int64_t s = 0;
  for (; s + kCombineAhead <= segments; s += kCombineAhead) {
    double ahead[kCombineAhead];
    for (int u = 0; u < kCombineAhead; ++u)
      ahead[u] = partials[(s + u) * stride];
    for (int u = 0; u < kCombineAhead; ++u)
      sum += ahead[u];
  }
  for (; s < segments; ++s)
    sum += partials[s * stride];
  return sum;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_NORMPARAMSUMS_H
