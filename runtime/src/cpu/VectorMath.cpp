//===- VectorMath.cpp - Vectorized f32 math over arrays -------------------===//
//
// Each array function is a plain loop over a branch-free scalar formula
// (selects and bit operations instead of branches), which GCC vectorizes.
// target_clones compiles it for AVX-512, AVX2 and baseline x86-64 (SSE2)
// and an ifunc picks one when the library loads, so the binary still runs
// on any x86-64. This file is built with -ffp-contract=off: no clone fuses
// a*b+c into an FMA, so all clones round identically and give bit-identical
// results (the unit test checks whichever clone its machine picks); with
// -fno-trapping-math, so that GCC may compute both sides of a select, which
// it must to vectorize the formulas; and with -fno-math-errno, so that sqrt
// is the vector instruction (the runtime never reads errno or FP flags).
//
// exp(x): x = k ln2 + r, k = round(x / ln2), |r| <= ln2/2 (slightly more
//   when x / ln2 rounds to float first). ln2 is split Cody-Waite style in
//   two floats; the high part has 15 significant bits, so k * kLn2Hi is
//   exact for |k| <= 150 and x - k * kLn2Hi is exact (Sterbenz). e^r =
//   1 + r + r^2 P(r), P of degree 4 fitted to (e^r - 1 - r) / r^2 (minimax
//   for the relative error of e^r, about 0.06 ulp). The result is scaled by
//   2^k as two factors 2^(k/2) and 2^(k - k/2), each a normal float, so
//   results that overflow or fall into the denormals round once, correctly.
//   x is clamped to [-104, 89] first: beyond, exp is 0 (below half the
//   smallest denormal) or inf anyway, and k stays in [-150, 128].
// erf(x): |x| < 0.875: x + x q(x^2), q of degree 5 fitted to
//   erf(x)/x - 1 (relative error). |x| >= 0.875: sign(x) (1 - erfc(|x|)),
//   erfc(a) = exp(-a^2) g(a), g of degree 9 in (a - 2.4375) fitted to
//   erfc(a) e^(a^2) on [0.875, 4] (error weighted by e^(-a^2), i.e.
//   absolute in erf). a is clamped to 4: erf rounds to 1 from 3.92 on.
//   Both forms are computed and one selected. The rounding of a^2 shifts
//   exp(-a^2) by at most 16 * 2^-24 relative, far below an ulp of 1 - erfc.
// tanh(x) = sign(x) tanh(a), a = |x|: a < 0.625: a + a t R(t), t = a^2,
//   R of degree 4 fitted to (tanh(a)/a - 1) / a^2 (relative error).
//   a >= 0.625 (tanh >= 0.55): 1 - 2 / (exp(2a) + 1), a clamped to 9.5
//   (tanh rounds to 1 from 9.01 on).
//
// Coefficients were fitted to the exact functions (mpmath) by weighted
// least squares iterated toward minimax (Lawson), each rounded to float
// before the higher ones were refitted.
//
// Sums (softmax, norms) add into 16 partial sums, element i into partial
// i mod 16 in index order, then add the partials pairwise in a fixed tree
// (log-sum-exp sums blocks of 256 that way and adds the block sums in
// order): the order depends only on n, never on the clone or the thread
// count. Row maxima compare floats as ordered integers (rowMax).
//
//===----------------------------------------------------------------------===//

#include "cpu/VectorMath.h"

#include <cmath>
#include <cstring>
#include <limits>

// The clones; "default" is the baseline the rest of the runtime is built
// for. GCC and Clang both support the attribute on ELF targets with ifunc.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define TRAINC_VM_CLONES                                                       \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TRAINC_VM_CLONES
#endif
#define TRAINC_VM_INLINE inline __attribute__((always_inline))

namespace trainc::cpu {
namespace {

TRAINC_VM_INLINE uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

TRAINC_VM_INLINE float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

/// |x| and `magnitude` with the sign of `sign`, by the sign bit.
TRAINC_VM_INLINE float absOf(float x) {
  return floatOf(bitsOf(x) & 0x7fffffffu);
}
TRAINC_VM_INLINE float withSignOf(float magnitude, float sign) {
  return floatOf(bitsOf(magnitude) | (bitsOf(sign) & 0x80000000u));
}

//===--- exp --------------------------------------------------------------===//

constexpr float kLog2e = 1.44269502f;
constexpr float kLn2Hi = 0.693145751953125f; // 0x3f317200
constexpr float kLn2Lo = 1.42860677e-06f;    // ln2 - kLn2Hi
/// 1.5 * 2^23: adding it rounds a float of magnitude < 2^22 to an integer
/// (to nearest even) held in the low mantissa bits.
constexpr float kRoundMagic = 12582912.0f;

/// e^r - 1 - r ~ r^2 (kE2 + r kE3 + ... + r^4 kE6) on |r| <= 0.354.
constexpr float kE2 = 0.49999994f, kE3 = 0.166665107f, kE4 = 0.0416682698f,
                kE5 = 0.00836996082f, kE6 = 0.00138232799f;

/// e^r for r = x - k ln2, and k: the reduction step shared by the exp
/// variants. x must be finite (or NaN) with |x| < 2^21.
TRAINC_VM_INLINE float expReduced(float x, int32_t &k) {
  float t = x * kLog2e + kRoundMagic;
  float kf = t - kRoundMagic;
  k = int32_t(bitsOf(t) - bitsOf(kRoundMagic));
  float r = (x - kf * kLn2Hi) - kf * kLn2Lo;
  float p = kE2 + r * (kE3 + r * (kE4 + r * (kE5 + r * kE6)));
  return 1.0f + (r + (r * r) * p);
}

/// 2^k as a float, for k in [-126, 127].
TRAINC_VM_INLINE float pow2(int32_t k) {
  return floatOf(uint32_t(k + 127) << 23);
}

/// exp(x) for any x, as std::exp.
TRAINC_VM_INLINE float expCore(float x) {
  x = x < -104.0f ? -104.0f : x; // NaN fails both tests and stays NaN.
  x = x > 89.0f ? 89.0f : x;
  int32_t k;
  float p = expReduced(x, k);
  int32_t k1 = k >> 1; // Arithmetic shift: floor(k / 2).
  return p * pow2(k1) * pow2(k - k1);
}

/// exp(x) for x in [-87, 88]: the result is normal and finite, so 2^k is
/// a single factor. For callers that know their range.
TRAINC_VM_INLINE float expNormal(float x) {
  int32_t k;
  float p = expReduced(x, k);
  return p * pow2(k);
}

//===--- erf --------------------------------------------------------------===//

/// erf(x)/x - 1 ~ q(x^2) on |x| < 0.875.
constexpr float kErfS0 = 0.128379151f, kErfS1 = -0.376125067f,
                kErfS2 = 0.112819478f, kErfS3 = -0.0267711338f,
                kErfS4 = 0.00499943504f, kErfS5 = -0.000602089858f;
/// erfc(a) e^(a^2) ~ g(a - 2.4375) on [0.875, 4].
constexpr float kErfL0 = 0.21555236f, kErfL1 = -0.0775647908f,
                kErfL2 = 0.0264842957f, kErfL3 = -0.00863880198f,
                kErfL4 = 0.0028064393f, kErfL5 = -0.000687264721f,
                kErfL6 = 0.000239162749f, kErfL7 = -0.00019941316f,
                kErfL8 = -9.30505776e-05f, kErfL9 = -3.80820202e-05f;
constexpr float kErfSplit = 0.875f, kErfMid = 2.4375f;

TRAINC_VM_INLINE float erfCore(float x) {
  float t = x * x;
  float q =
      kErfS0 +
      t * (kErfS1 + t * (kErfS2 + t * (kErfS3 + t * (kErfS4 + t * kErfS5))));
  float small = x + x * q;

  float a = absOf(x);
  a = a > 4.0f ? 4.0f : a; // Also maps inf to 4; NaN stays NaN.
  float s = a - kErfMid;
  float g = kErfL9;
  g = kErfL8 + s * g;
  g = kErfL7 + s * g;
  g = kErfL6 + s * g;
  g = kErfL5 + s * g;
  g = kErfL4 + s * g;
  g = kErfL3 + s * g;
  g = kErfL2 + s * g;
  g = kErfL1 + s * g;
  g = kErfL0 + s * g;
  // -a^2 in [-16, -0.76]: exp's result is normal.
  float large = withSignOf(1.0f - expNormal(-(a * a)) * g, x);
  return absOf(x) < kErfSplit ? small : large;
}

//===--- tanh -------------------------------------------------------------===//

/// (tanh(x)/x - 1) / x^2 ~ R(x^2) on |x| < 0.625.
constexpr float kTanh0 = -0.333332837f, kTanh1 = 0.133314863f,
                kTanh2 = -0.0537431724f, kTanh3 = 0.0206497088f,
                kTanh4 = -0.00571620278f;
constexpr float kTanhSplit = 0.625f;

TRAINC_VM_INLINE float tanhCore(float x) {
  float a = absOf(x);
  float t = a * a;
  float rt = kTanh0 + t * (kTanh1 + t * (kTanh2 + t * (kTanh3 + t * kTanh4)));
  // On |x| with x's sign put back: x + x t R(t) would turn -0 into +0.
  float small = a + a * (t * rt);

  a = a > 9.5f ? 9.5f : a; // Also maps inf to 9.5; NaN stays NaN.
  // 2a in [1.25, 19]: exp's result is normal.
  float large = 1.0f - 2.0f / (expNormal(2.0f * a) + 1.0f);
  return withSignOf(a < kTanhSplit ? small : large, x);
}

//===--- Sums -------------------------------------------------------------===//

constexpr int kLanes = 16;

/// The terms of the sums: x[i] itself, and (x[i] - c)^2.
struct Identity {
  float operator()(float v) const { return v; }
};
struct SquaredDeviation {
  float c;
  float operator()(float v) const { return (v - c) * (v - c); }
};

/// sum_i term(x[i]): adds term(x[i]) into partial[i % 16], then the
/// partials pairwise; the order depends only on n.
template <typename Term>
TRAINC_VM_INLINE float blockedSum(const float *x, int64_t n, Term term) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      partial[l] += term(x[i + l]);
  for (int l = 0; i < n; ++i, ++l)
    partial[l] += term(x[i]);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l)
      partial[l] += partial[l + width];
  return partial[0];
}

/// The float x as an int32 that orders like x: non-negative floats keep
/// their bits; negative ones flip all bits but the sign, so that larger
/// magnitudes become smaller integers. (-0 orders just below +0, NaNs
/// beyond the infinities on the side of their sign.) Its own inverse.
TRAINC_VM_INLINE int32_t orderedKey(int32_t bits) {
  return bits ^ ((bits >> 31) & 0x7fffffff);
}

/// max_i x[i] for n >= 1. A NaN may or may not win, by its sign bit; the
/// callers' results are NaN either way. The max is taken on orderedKey
/// integers because GCC vectorizes an integer max reduction but not a
/// float one (whose NaN rules it must keep without -ffinite-math-only).
TRAINC_VM_INLINE float rowMax(const float *x, int64_t n) {
  int32_t m = std::numeric_limits<int32_t>::min();
  for (int64_t i = 0; i < n; ++i) {
    int32_t key = orderedKey(int32_t(bitsOf(x[i])));
    m = key > m ? key : m;
  }
  return floatOf(uint32_t(orderedKey(m)));
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
  constexpr float kInvSqrt2 = 0.707106781f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erfCore(v * kInvSqrt2));
  }
}

TRAINC_VM_CLONES void geluTanhF32(const float *x, float *y, int64_t n) {
  constexpr float kSqrt2OverPi = 0.797884561f, kCubic = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float u = kSqrt2OverPi * (v + kCubic * v * v * v);
    // e = exp(-2|u|) <= 1 never overflows: v / (1 + 1/e) = v e / (1 + e)
    // for u < 0 keeps the tiny results of very negative v.
    float e = expCore(-2.0f * absOf(u));
    y[i] = (u < 0.0f ? v * e : v) / (1.0f + e);
  }
}

TRAINC_VM_CLONES void softmaxRowF32(const float *x, float *y, int64_t n) {
  float m = rowMax(x, n);
  for (int64_t i = 0; i < n; ++i)
    y[i] = expCore(x[i] - m);
  float sum = blockedSum(y, n, Identity());
  for (int64_t i = 0; i < n; ++i)
    y[i] = y[i] / sum;
}

TRAINC_VM_CLONES void maxAndSumExpF32(const float *x, int64_t n, float *outMax,
                                      float *outSumExp) {
  float m = rowMax(x, n);
  // exp into a block on the stack, then the block's blocked sum: the
  // partial sums of consecutive blocks are added in order.
  constexpr int64_t kBlock = 256;
  float block[kBlock];
  float sum = 0;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    int64_t len = n - begin < kBlock ? n - begin : kBlock;
    for (int64_t i = 0; i < len; ++i)
      block[i] = expCore(x[begin + i] - m);
    sum += blockedSum(block, len, Identity());
  }
  *outMax = m;
  *outSumExp = sum;
}

//===--- Norm rows
//----------------------------------------------------------===//

TRAINC_VM_CLONES float sumF32(const float *x, int64_t n) {
  return blockedSum(x, n, Identity());
}

TRAINC_VM_CLONES float sumSquaredDeviationF32(const float *x, float c,
                                              int64_t n) {
  return blockedSum(x, n, SquaredDeviation{c});
}

TRAINC_VM_CLONES void normalizeF32(const float *x, float mean, float rstd,
                                   const float *scale, const float *bias,
                                   float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = (x[i] - mean) * rstd * scale[i] + bias[i];
}

//===--- Arithmetic arrays ------------------------------------------------===//

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
