//===- Transcendental.h - f32 exp, erf, tanh and GELU, per element -*- C++
//-*-===//
//
// The per-element f32 formulas of the runtime's transcendental functions,
// shared kernel math (TRAINC_HD): the CPU's vectorized array loops
// (cpu/VectorMath.cpp) and the CUDA kernels call these same functions. Each
// is branch-free (selects and bit operations), so GCC vectorizes the loops
// that call it. Polynomials and the other multiply-adds are explicit fused
// multiply-adds (fmaOf: one rounding, IEEE 754 on both devices); every
// other a * b + c rounds twice, because every file that calls these is
// compiled without FMA contraction (-ffp-contract=off on the host,
// -fmad=false for nvcc). So the CPU clones and the GPU round each
// operation identically: bit-identical results (VectorMath.h lists the
// accuracy).
//
// exp(x): x = k ln2 + r, k = round(x / ln2), |r| <= ln2/2 (slightly more
//   when x / ln2 rounds to float first). ln2 is split Cody-Waite style in
//   two floats; the high part has 15 significant bits, so k * kLn2Hi is
//   exact for |k| <= 150 and x - k * kLn2Hi is exact (Sterbenz). r's one
//   rounding, c, is recovered by an FMA and added back: e^(r + c) =
//   1 + (r + (r^2 P(r) + c)), P of degree 4 fitted to (e^r - 1 - r) / r^2
//   (minimax for the relative error of e^r, about 0.06 ulp), so only the
//   last two additions round noticeably. The result is scaled by
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
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_TRANSCENDENTAL_H
#define TRAINC_RUNTIME_MATH_TRANSCENDENTAL_H

#include "base/Float16.h"
#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

/// a * b + c with one rounding. On the GPU one FFMA; on the host one
/// instruction where the code is compiled for a CPU with FMA (the x86-64-v3
/// and v4 clones of cpu/VectorMath.cpp), else libm's fmaf, which is exact
/// too, only slower.
TRAINC_HD float fmaOf(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

/// |x| and `magnitude` with the sign of `sign`, by the sign bit.
TRAINC_HD float absOf(float x) { return bitsFloat(floatBits(x) & 0x7fffffffu); }
TRAINC_HD float withSignOf(float magnitude, float sign) {
  return bitsFloat(floatBits(magnitude) | (floatBits(sign) & 0x80000000u));
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
TRAINC_HD float expReduced(float x, int32_t &k) {
  float t = fmaOf(x, kLog2e, kRoundMagic);
  float kf = t - kRoundMagic;
  k = int32_t(floatBits(t) - floatBits(kRoundMagic));
  float rHi = fmaOf(-kf, kLn2Hi, x); // Exact.
  float r = fmaOf(-kf, kLn2Lo, rHi);
  // What r's rounding lost: e^(r + c) = e^r (1 + c) to far below an ulp.
  float c = fmaOf(-kf, kLn2Lo, rHi - r);
  float p = fmaOf(fmaOf(fmaOf(fmaOf(kE6, r, kE5), r, kE4), r, kE3), r, kE2);
  return 1.0f + (fmaOf(r * r, p, c) + r);
}

/// 2^k as a float, for k in [-126, 127].
TRAINC_HD float pow2(int32_t k) { return bitsFloat(uint32_t(k + 127) << 23); }

/// exp(x) for any x, as std::exp.
TRAINC_HD float expCore(float x) {
  x = x < -104.0f ? -104.0f : x; // NaN fails both tests and stays NaN.
  x = x > 89.0f ? 89.0f : x;
  int32_t k;
  float p = expReduced(x, k);
  int32_t k1 = k >> 1; // Arithmetic shift: floor(k / 2).
  return p * pow2(k1) * pow2(k - k1);
}

/// exp(x) for x in [-87, 88]: the result is normal and finite, so 2^k is
/// a single factor. For callers that know their range.
TRAINC_HD float expNormal(float x) {
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

/// erf(x) for |x| < 0.875: x + x q(x^2).
TRAINC_HD float erfSmall(float x) {
  float t = x * x;
  float q = fmaOf(kErfS5, t, kErfS4);
  q = fmaOf(q, t, kErfS3);
  q = fmaOf(q, t, kErfS2);
  q = fmaOf(q, t, kErfS1);
  q = fmaOf(q, t, kErfS0);
  return fmaOf(x, q, x);
}

/// erf(x) for |x| >= 0.875 from e = exp(-a^2), a = min(|x|, 4): sign(x) (1 -
/// e g(a)). Past a = 4 (erf rounds to 1 from 3.92 on) any e <= exp(-16)
/// gives 1: e g(4) < 2^-25.
TRAINC_HD float erfLarge(float x, float e) {
  float a = absOf(x);
  a = a > 4.0f ? 4.0f : a; // Also maps inf to 4; NaN stays NaN.
  float s = a - kErfMid;
  float g = fmaOf(kErfL9, s, kErfL8);
  g = fmaOf(g, s, kErfL7);
  g = fmaOf(g, s, kErfL6);
  g = fmaOf(g, s, kErfL5);
  g = fmaOf(g, s, kErfL4);
  g = fmaOf(g, s, kErfL3);
  g = fmaOf(g, s, kErfL2);
  g = fmaOf(g, s, kErfL1);
  g = fmaOf(g, s, kErfL0);
  return withSignOf(fmaOf(-e, g, 1.0f), x);
}

TRAINC_HD float erfCore(float x) {
  float a = absOf(x);
  a = a > 4.0f ? 4.0f : a;
  // -a^2 in [-16, -0.76]: exp's result is normal.
  float e = expNormal(-(a * a));
  return absOf(x) < kErfSplit ? erfSmall(x) : erfLarge(x, e);
}

//===--- tanh -------------------------------------------------------------===//

/// (tanh(x)/x - 1) / x^2 ~ R(x^2) on |x| < 0.625.
constexpr float kTanh0 = -0.333332837f, kTanh1 = 0.133314863f,
                kTanh2 = -0.0537431724f, kTanh3 = 0.0206497088f,
                kTanh4 = -0.00571620278f;
constexpr float kTanhSplit = 0.625f;

TRAINC_HD float tanhCore(float x) {
  float a = absOf(x);
  float t = a * a;
  float rt = fmaOf(fmaOf(fmaOf(fmaOf(kTanh4, t, kTanh3), t, kTanh2), t, kTanh1),
                   t, kTanh0);
  // On |x| with x's sign put back: x + x t R(t) would turn -0 into +0.
  float small = fmaOf(a, t * rt, a);

  a = a > 9.5f ? 9.5f : a; // Also maps inf to 9.5; NaN stays NaN.
  // 2a in [1.25, 19]: exp's result is normal.
  float large = 1.0f - 2.0f / (expNormal(2.0f * a) + 1.0f);
  return withSignOf(a < kTanhSplit ? small : large, x);
}

/// The float x as an int32 that orders like x: non-negative floats keep
/// their bits; negative ones flip all bits but the sign, so that larger
/// magnitudes become smaller integers. (-0 orders just below +0, NaNs
/// beyond the infinities on the side of their sign.) Its own inverse.
TRAINC_HD int32_t orderedKey(int32_t bits) {
  return bits ^ ((bits >> 31) & 0x7fffffff);
}

//===--- GELU -------------------------------------------------------------===//

constexpr float kInvSqrt2 = float(0.70710678118654752440);
constexpr float kInvSqrt2Pi = float(0.39894228040143267794);
constexpr float kSqrt2OverPi = float(0.79788456080286535588);
constexpr float kGeluCubic = float(0.044715);
constexpr float kGeluCubic3 = float(3 * 0.044715);

/// 0.5 x (1 + erf(x / sqrt(2))), as PyTorch's gelu(approximate="none").
TRAINC_HD float geluErf(float v) {
  return 0.5f * v * (1.0f + erfCore(v * kInvSqrt2));
}

/// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), as x / (1 +
/// exp(-2u)). e = exp(-2|u|) <= 1 never overflows: v / (1 + 1/e) = v e /
/// (1 + e) for u < 0 keeps the tiny results of very negative v.
TRAINC_HD float geluTanh(float v) {
  float u = kSqrt2OverPi * (v + kGeluCubic * v * v * v);
  float e = expCore(-2.0f * absOf(u));
  return (u < 0.0f ? v * e : v) / (1.0f + e);
}

/// g * gelu'(x), erf form: g (Phi(x) + x phi(x)), Phi(x) = 0.5 (1 + erf(x /
/// sqrt(2))), phi(x) = exp(-x^2 / 2) / sqrt(2 pi). One exp serves both:
/// exp(-x^2 / 2) is erf(z)'s exp(-z^2) at z = x / sqrt(2), here from x^2
/// (one rounding) rather than from z's square (two), so the tail of erf is
/// as accurate as erfCore's, or more.
TRAINC_HD float geluErfGrad(float x, float g) {
  float e = expCore(-0.5f * x * x);
  float z = x * kInvSqrt2;
  float erf = absOf(z) < kErfSplit ? erfSmall(z) : erfLarge(z, e);
  return g * (0.5f * (1.0f + erf) + x * (e * kInvSqrt2Pi));
}

/// g * gelu'(x), tanh form: t = tanh(u), g (0.5 (1 + t) + 0.5 x (1 - t^2)
/// sqrt(2/pi) (1 + 3 c x^2)).
TRAINC_HD float geluTanhGrad(float x, float g) {
  float t = tanhCore(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  float inner = kSqrt2OverPi * (1.0f + kGeluCubic3 * (x * x));
  return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * inner);
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_TRANSCENDENTAL_H
