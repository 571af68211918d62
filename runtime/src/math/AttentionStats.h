//===- AttentionStats.h - Rows the log-sum-exp fails -----------*- C++ -*-===//
//
// Attention's gradient takes a query row's probabilities as exp(s - lse)
// from the row's log-sum-exp, lse = max + log(sum) rounded once. Where
// |lse| is large that rounding moves every probability: from |lse| = 64
// on by up to half its ulp, 2^-18 (64 times f32's unit roundoff, 2^-24).
// And where a finite mask hides every key of a row (Hugging Face's
// finfo.min over a padded query), max + log(sum) rounds to the max, so
// exp(s - lse) is about 1 per key, not 1 / n for the n keys the row sees:
// its gradient would be n times too large. Such rows are remade: the CPU
// recomputes their softmax (cpu/Attention.cpp); the GPU multiplies
// exp(s - lse) by the row's factor 1 / sum_j exp(s_j - lse)
// (cuda/Attention.cu, AttentionTensorCore.cu), which is 1 for every other
// row, so their bits do not change. From a row's max m and sum l of
// exp(s - m), as the first pass has them, the factor is exp(lse - m) / l
// (sum_j exp(s_j - lse) = l exp(m - lse); lse - m is exact, the
// difference of two close numbers).
//
// Shared kernel math (TRAINC_HD), as math/Softcap.h.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_ATTENTIONSTATS_H
#define TRAINC_RUNTIME_MATH_ATTENTIONSTATS_H

#include "base/HostDevice.h"

namespace trainc::math {

/// Whether the row of log-sum-exp `lse` is remade: |lse| >= 64, finite
/// (-inf: a row that sees nothing, which gives zeros; +inf: the GPU's
/// first pass's mark of the same).
template <typename C> TRAINC_HD bool lseIsRemade(C lse) {
  C magnitude = lse < C(0) ? -lse : lse;
  return magnitude >= C(64) && magnitude - magnitude == C(0);
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_ATTENTIONSTATS_H
