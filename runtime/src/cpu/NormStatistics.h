//===- NormStatistics.h - A norm row's mean and rstd ------------*- C++ -*-===//
//
// The statistics of one row of layer_norm (centered) and rms_norm, shared
// by their forward kernel (Norm.cpp) and norm_grad (FusedGradients.cpp) so
// the backward pass normalizes exactly as the forward did.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_NORMSTATISTICS_H
#define TRAINC_RUNTIME_CPU_NORMSTATISTICS_H

#include "cpu/VectorMath.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace trainc::cpu {

/// Sets `mean` (0 unless `centered`) and returns rstd = 1 / sqrt(mean((x -
/// mean)^2) + eps) over the n elements of `x`: the variance in a second
/// pass (no E[x^2] - E[x]^2 cancellation); f32 sums through VectorMath.h
/// (16 partial sums, an order that depends only on n), f64 in index order.
template <typename T>
T normRowStatistics(const T *x, int64_t n, bool centered, T eps, T &mean) {
  if constexpr (std::is_same_v<T, float>) {
    mean = centered ? sumF32(x, n) / float(n) : 0.0f;
    return 1.0f /
           std::sqrt(sumSquaredDeviationF32(x, mean, n) / float(n) + eps);
  } else {
    mean = 0;
    if (centered) {
      for (int64_t j = 0; j < n; ++j)
        mean += x[j];
      mean /= T(n);
    }
    T sumSq = 0;
    for (int64_t j = 0; j < n; ++j)
      sumSq += (x[j] - mean) * (x[j] - mean);
    return T(1) / std::sqrt(sumSq / T(n) + eps);
  }
}

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_NORMSTATISTICS_H
