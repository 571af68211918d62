//===- VectorMath.h - Vectorized f32 math over arrays -----------*- C++ -*-===//
//
// Array functions the f32 kernels call in place of per-element libm calls:
// exp, erf and tanh (and the GELU, softmax and log-sum-exp loops built on
// them), plus the plain arithmetic loops of the elementwise ops. Each is a
// branch-free loop compiled three times (AVX-512, AVX2 + FMA, baseline) and
// chosen at load time for the CPU it runs on (see VectorMath.cpp); all three
// give bit-identical results.
//
// Accuracy: max error over every f32 input, in ulp of the exact result
// rounded to f32 (2^-149 below FLT_MIN), as measured over all 2^32 inputs:
// exp 0.88, erf 1.05, tanh 1.33 (test/Unit/Runtime/VectorMathTest.cpp
// checks <= 1, 1.5 and 1.5 on a dense sweep, and every input with
// TRAINC_VECTORMATH_EXHAUSTIVE=1). Special values are those of
// libm: exp(-inf) = 0, exp(+inf) = inf, erf(+-inf) = tanh(+-inf) = +-1,
// erf(+-0) = tanh(+-0) = +-0, NaN -> NaN, overflow to inf and gradual
// underflow through the denormals to 0.
//
// Unless a comment says otherwise, `y` may equal `x` (in place) but must not
// overlap it otherwise. Nothing here is threaded: callers split the work
// with parallelFor.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_VECTORMATH_H
#define TRAINC_RUNTIME_CPU_VECTORMATH_H

#include <cstdint>

namespace trainc::cpu {

/// y[i] = exp(x[i]).
void expF32(const float *x, float *y, int64_t n);
/// y[i] = erf(x[i]).
void erfF32(const float *x, float *y, int64_t n);
/// y[i] = tanh(x[i]).
void tanhF32(const float *x, float *y, int64_t n);

/// y[i] = 0.5 x (1 + erf(x / sqrt(2))), as PyTorch's gelu(approximate=
/// "none") computes it in f32. At most 2.43 ulp for x >= -1; below, 1 +
/// erf cancels and the error is absolute: at most 1.92 * 2^-24 |x|.
void geluErfF32(const float *x, float *y, int64_t n);
/// y[i] = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed
/// as x / (1 + exp(-2u)) (the same function: 1 + tanh(u) = 2 / (1 +
/// exp(-2u))), which has no cancellation for negative u. At most 3.49 ulp
/// for x >= -1 and 2.13 * 2^-24 max(1, |x|) absolute everywhere (u's own
/// rounding grows the relative error as 2|u| 2^-24 in the far tail).
void geluTanhF32(const float *x, float *y, int64_t n);

/// dx[i] = g[i] * gelu'(x[i]), erf and tanh forms (math/Transcendental.h's
/// geluErfGrad and geluTanhGrad). dx may equal x or g.
void geluErfGradF32(const float *x, const float *g, float *dx, int64_t n);
void geluTanhGradF32(const float *x, const float *g, float *dx, int64_t n);

/// y = softmax(x) over one contiguous row of n elements: exp(x - max) * (1 /
/// sum), the sum in math/SoftmaxSum.h's order (128 partials). NaN anywhere,
/// +inf, or a row of all -inf gives a row of NaN. With `outMax` and
/// `outSumExp`, also sets the max and the sum (a cross-entropy loss from its
/// gradient's softmax).
void softmaxRowF32(const float *x, float *y, int64_t n, float *outMax = nullptr,
                   float *outSumExp = nullptr);
/// max_j x[j] and sum_j exp(x[j] - max) over one row of n >= 1 elements:
/// the parts of log-sum-exp, the same bits as softmaxRowF32's. With a NaN
/// element the sum is NaN (and the max may be).
void maxAndSumExpF32(const float *x, int64_t n, float *outMax,
                     float *outSumExp);

/// sum_i x[i] and sum_i (x[i] - c)^2, added in 16 partial sums (element i
/// into partial i mod 16, then the partials pairwise): an order that
/// depends only on n.
float sumF32(const float *x, int64_t n);
float sumSquaredDeviationF32(const float *x, float c, int64_t n);
/// sum_i x[i] * y[i], in the same order.
float dotF32(const float *x, const float *y, int64_t n);
/// y[i] = (x[i] - mean) * rstd * scale[i] + bias[i], left to right: a
/// normalization row of layer and RMS norm.
void normalizeF32(const float *x, float mean, float rstd, const float *scale,
                  const float *bias, float *y, int64_t n);

/// sum[i] += double(x[i] * y[i]) (the product rounded to f32 first) and
/// sum[i] += double(x[i]): f64 column sums of f32 rows (norm_grad_params).
void accumulateProductsF32(const float *x, const float *y, double *sum,
                           int64_t n);
void accumulateF32(const float *x, double *sum, int64_t n);

/// z[i] = x[i] op y[i], each rounded once (IEEE). max/min return NaN if
/// either operand is NaN.
void addF32(const float *x, const float *y, float *z, int64_t n);
void subF32(const float *x, const float *y, float *z, int64_t n);
void mulF32(const float *x, const float *y, float *z, int64_t n);
void divF32(const float *x, const float *y, float *z, int64_t n);
void maxF32(const float *x, const float *y, float *z, int64_t n);
void minF32(const float *x, const float *y, float *z, int64_t n);
/// y[i] = -x[i], |x[i]|, sqrt(x[i]) and 1 / sqrt(x[i]) (two roundings, as
/// 1.0f / std::sqrt(x)).
void negF32(const float *x, float *y, int64_t n);
void absF32(const float *x, float *y, int64_t n);
void sqrtF32(const float *x, float *y, int64_t n);
void rsqrtF32(const float *x, float *y, int64_t n);

/// Row sums and dot products for kernels templated on their compute type:
/// f32 through the fixed-order vector sums above, f64 left to right.
inline float rowSum(const float *x, int64_t n) { return sumF32(x, n); }
inline double rowSum(const double *x, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i];
  return sum;
}
inline float rowDot(const float *x, const float *y, int64_t n) {
  return dotF32(x, y, n);
}
inline double rowDot(const double *x, const double *y, int64_t n) {
  double dot = 0;
  for (int64_t i = 0; i < n; ++i)
    dot += x[i] * y[i];
  return dot;
}

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_VECTORMATH_H
