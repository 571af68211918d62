//===- VectorMath.cpp - Vectorized f32 math over arrays -------------------===//
//
// Each array function is a plain loop over a branch-free scalar formula
// (selects and bit operations instead of branches), which GCC vectorizes.
// target_clones compiles it for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 and
// FMA) and baseline x86-64 (SSE2), and an ifunc picks one by the CPU's
// features when the library loads, so the binary still runs on any x86-64.
// This file is built with -ffp-contract=off: no clone fuses a*b+c into an
// FMA by itself; the formulas' explicit fmaOf is one instruction in the v3
// and v4 clones and libm's exact fmaf in the baseline (slower, same bits).
// So all clones round identically and give bit-identical results (the
// unit test checks whichever clone its machine picks); with
// -fno-trapping-math, so that GCC may compute both sides of a select, which
// it must to vectorize the formulas; and with -fno-math-errno, so that sqrt
// is the vector instruction (the runtime never reads errno or FP flags).
//
// The per-element formulas (exp, erf, tanh, GELU) are math/Transcendental.h's,
// which the CUDA kernels call too.
//
// Sums add into P partial sums, element i into partial i mod P in index
// order, then add the partials pairwise in a fixed tree: norms' sums with
// P = 16, softmax rows' (and log-sum-exp's) with P = 128
// (math/SoftmaxSum.h, the order the CUDA kernels' warps follow). The order
// depends only on n, never on the clone or the thread count. Row maxima
// compare floats as ordered integers (rowMax).
//
//===----------------------------------------------------------------------===//

#include "cpu/VectorMath.h"

#include "math/SoftmaxSum.h"
#include "math/Transcendental.h"

#include <cmath>
#include <cstring>
#include <limits>

// The clones; "default" is the baseline the rest of the runtime is built
// for. GCC and Clang both support the attribute on ELF targets with ifunc.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define TRAINC_VM_CLONES                                                       \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TRAINC_VM_CLONES
#endif
#define TRAINC_VM_INLINE inline __attribute__((always_inline))

namespace trainc::cpu {
namespace {

using namespace trainc::math;

//===--- Sums -------------------------------------------------------------===//

/// The norms' partial sums.
constexpr int kLanes = 16;

/// Adds term(i) into partial[(first + i) % P] for i in [0, n), in index
/// order; `first` is a multiple of P.
template <int P, typename Term>
TRAINC_VM_INLINE void addToPartials(float (&partial)[P], int64_t n, Term term) {
  int64_t i = 0;
  for (; i + P <= n; i += P)
    for (int l = 0; l < P; ++l)
      partial[l] += term(i + l);
  for (int l = 0; i < n; ++i, ++l)
    partial[l] += term(i);
}

/// The partials added pairwise: partial[l] += partial[l + width] for width
/// = P/2, ..., 1.
template <int P> TRAINC_VM_INLINE float combinePartials(float (&partial)[P]) {
  for (int width = P / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l)
      partial[l] += partial[l + width];
  return partial[0];
}

/// sum_i term(i): adds term(i) into partial[i % P], then the partials
/// pairwise; the order depends only on n.
template <int P, typename Term>
TRAINC_VM_INLINE float blockedSum(int64_t n, Term term) {
  float partial[P] = {};
  addToPartials(partial, n, term);
  return combinePartials(partial);
}

/// max_i x[i] for n >= 1. A NaN may or may not win, by its sign bit; the
/// callers' results are NaN either way. The max is taken on orderedKey
/// integers because GCC vectorizes an integer max reduction but not a
/// float one (whose NaN rules it must keep without -ffinite-math-only).
TRAINC_VM_INLINE float rowMax(const float *x, int64_t n) {
  int32_t m = std::numeric_limits<int32_t>::min();
  for (int64_t i = 0; i < n; ++i) {
    int32_t key = orderedKey(int32_t(floatBits(x[i])));
    m = key > m ? key : m;
  }
  return bitsFloat(uint32_t(orderedKey(m)));
}

} // namespace

//===--- Transcendental arrays --------------------------------------------===//

TRAINC_VM_CLONES void expF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = expCore(x[i]);
}

TRAINC_VM_CLONES void erfF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = erfCore(x[i]);
}

TRAINC_VM_CLONES void tanhF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = tanhCore(x[i]);
}

TRAINC_VM_CLONES void geluErfF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = geluErf(x[i]);
}

TRAINC_VM_CLONES void geluTanhF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = geluTanh(x[i]);
}

TRAINC_VM_CLONES void geluErfGradF32(const float *x, const float *g, float *dx,
                                     int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dx[i] = geluErfGrad(x[i], g[i]);
}

TRAINC_VM_CLONES void geluTanhGradF32(const float *x, const float *g, float *dx,
                                      int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dx[i] = geluTanhGrad(x[i], g[i]);
}

TRAINC_VM_CLONES void softmaxRowF32(const float *x, float *y, int64_t n,
                                    float *outMax, float *outSumExp) {
  float m = rowMax(x, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = expCore(x[i] - m);
  float sum = blockedSum<kSoftmaxPartials>(n, [y](int64_t i) { return y[i]; });
  // One division, then products (PyTorch's softmax does the same): the
  // result within 2 roundings of e / sum, not 1.
  float inverse = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i)
    y[i] = y[i] * inverse;
  if (outMax) {
    *outMax = m;
    *outSumExp = sum;
  }
}

TRAINC_VM_CLONES void maxAndSumExpF32(const float *x, int64_t n, float *outMax,
                                      float *outSumExp) {
  float m = rowMax(x, n);
  // exp into a block on the stack, then into the partials (the blocks are
  // whole multiples of the partials: softmaxRowF32's sum).
  constexpr int64_t kBlock = 8 * kSoftmaxPartials;
  float block[kBlock];
  float partial[kSoftmaxPartials] = {};
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    int64_t len = n - begin < kBlock ? n - begin : kBlock;
    for (int64_t i = 0; i < len; ++i)
      block[i] = expCore(x[begin + i] - m);
    addToPartials(partial, len, [&block](int64_t i) { return block[i]; });
  }
  *outMax = m;
  *outSumExp = combinePartials(partial);
}

//===--- Norm rows
//----------------------------------------------------------===//

TRAINC_VM_CLONES float sumF32(const float *x, int64_t n) {
  return blockedSum<kLanes>(n, [x](int64_t i) { return x[i]; });
}

TRAINC_VM_CLONES float sumSquaredDeviationF32(const float *x, float c,
                                              int64_t n) {
  return blockedSum<kLanes>(
      n, [x, c](int64_t i) { return (x[i] - c) * (x[i] - c); });
}

TRAINC_VM_CLONES float dotF32(const float *x, const float *y, int64_t n) {
  return blockedSum<kLanes>(n, [x, y](int64_t i) { return x[i] * y[i]; });
}

TRAINC_VM_CLONES void normalizeF32(const float *x, float mean, float rstd,
                                   const float *scale, const float *bias,
                                   float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = (x[i] - mean) * rstd * scale[i] + bias[i];
}

//===--- Arithmetic arrays ------------------------------------------------===//

TRAINC_VM_CLONES void accumulateProductsF32(const float *x, const float *y,
                                            double *sum, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    sum[i] += double(x[i] * y[i]);
}

TRAINC_VM_CLONES void accumulateF32(const float *x, double *sum, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    sum[i] += double(x[i]);
}

TRAINC_VM_CLONES void addF32(const float *x, const float *y, float *z,
                             int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    z[i] = x[i] + y[i];
}

TRAINC_VM_CLONES void subF32(const float *x, const float *y, float *z,
                             int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    z[i] = x[i] - y[i];
}

TRAINC_VM_CLONES void mulF32(const float *x, const float *y, float *z,
                             int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    z[i] = x[i] * y[i];
}

TRAINC_VM_CLONES void divF32(const float *x, const float *y, float *z,
                             int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    z[i] = x[i] / y[i];
}

TRAINC_VM_CLONES void maxF32(const float *x, const float *y, float *z,
                             int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float u = x[i], v = y[i];
    z[i] = (u > v || u != u) ? u : v;
  }
}

TRAINC_VM_CLONES void minF32(const float *x, const float *y, float *z,
                             int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float u = x[i], v = y[i];
    z[i] = (u < v || u != u) ? u : v;
  }
}

TRAINC_VM_CLONES void negF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = -x[i];
}

TRAINC_VM_CLONES void absF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = absOf(x[i]);
}

TRAINC_VM_CLONES void sqrtF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = std::sqrt(x[i]);
}

TRAINC_VM_CLONES void rsqrtF32(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = 1.0f / std::sqrt(x[i]);
}

} // namespace trainc::cpu
