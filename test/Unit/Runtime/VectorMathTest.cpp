//===- VectorMathTest.cpp - f32 array math against exact results ----------===//
//
// exp, erf, tanh and the GELU forms against double-precision libm (whose
// error is far below an f32 ulp) over a dense sweep of f32 inputs: every
// 16th bit pattern, both signs, where the function is neither trivial nor
// saturated, every 4096th elsewhere (NaNs included), plus the special
// values. Errors are in ulp of the exact result in f32 (2^-149 below
// FLT_MIN). The bounds are those VectorMath.h documents; exhaustive runs
// over all 2^32 inputs measured exp 0.880, erf 1.049, tanh 1.324 ulp,
// GELU 2.43 (erf form) and 3.49 (tanh form) ulp for x >= -1. Every clone
// (x86-64-v4, v3, baseline) rounds identically, so the one this machine
// picks stands for all three.
//
// The sums, softmax and arithmetic loops are checked against the scalar
// formulas: the arithmetic exactly, the sums within the rounding bound of
// their order (16 partials for the norms' sums, math/SoftmaxSum.h's 128
// for softmax rows, whose CUDA layout is emulated here lane by lane).
//
//===----------------------------------------------------------------------===//

#include "cpu/VectorMath.h"
#include "base/Float16.h"
#include "math/SoftmaxSum.h"
#include "math/Transcendental.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace trainc::cpu {
namespace {

using ArrayFn = void (*)(const float *, float *, int64_t);
using RefFn = double (*)(double);

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// |y - exact| in ulp of exact rounded to f32: 0 when both are NaN or y is
/// the correctly rounded infinity, +inf for a NaN or infinity that should
/// not be there.
double ulpError(float y, double exact) {
  if (std::isnan(exact) || std::isnan(y))
    return std::isnan(exact) && std::isnan(y) ? 0 : kInf;
  float rounded = float(exact);
  if (std::isinf(y) || std::isinf(rounded))
    return y == rounded ? 0 : kInf;
  int e = std::max(std::ilogb(exact), -126); // 0 has ilogb INT_MIN.
  return std::fabs(double(y) - exact) / std::ldexp(1.0, e - 23);
}

float fn1(ArrayFn fn, float x) {
  float y;
  fn(&x, &y, 1);
  return y;
}

struct Worst {
  double ulp = 0;
  float x = 0;
};

/// The largest ulpError of fn against ref over the floats +-bitsFloat(b),
/// b in [lo, hi) in steps of `stride`, counting only x >= from.
Worst sweep(ArrayFn fn, RefFn ref, uint32_t lo, uint32_t hi, uint32_t stride,
            float from = -kInf) {
  constexpr int kBatch = 4096;
  std::vector<float> x(kBatch), y(kBatch);
  Worst worst;
  for (uint32_t sign : {0u, 0x80000000u}) {
    uint64_t b = lo;
    while (b < hi) {
      int n = 0;
      for (; n < kBatch && b < hi; ++n, b += stride)
        x[n] = bitsFloat(uint32_t(b) | sign);
      fn(x.data(), y.data(), n);
      for (int i = 0; i < n; ++i) {
        if (!(x[i] >= from))
          continue;
        double e = ulpError(y[i], ref(x[i]));
        if (e > worst.ulp)
          worst = {e, x[i]};
      }
    }
  }
  return worst;
}

bool exhaustive() {
  const char *all = std::getenv("TRAINC_VECTORMATH_EXHAUSTIVE");
  return all && std::string(all) == "1";
}

/// sweep() dense (stride 16) over magnitudes [denseLo, denseHi) and coarse
/// (stride 4096) over every other bit pattern, NaNs included. With
/// TRAINC_VECTORMATH_EXHAUSTIVE=1 in the environment, every one of the 2^32
/// inputs instead (minutes per function), printing the worst: how the
/// bounds in VectorMath.h were measured.
Worst sweepAll(ArrayFn fn, RefFn ref, float denseLo, float denseHi,
               float from = -kInf) {
  if (exhaustive()) {
    Worst worst = sweep(fn, ref, 0, 0x80000000u, 1, from);
    std::printf("exhaustive: worst %.4f ulp at x = %a\n", worst.ulp,
                double(worst.x));
    return worst;
  }
  Worst dense =
      sweep(fn, ref, floatBits(denseLo), floatBits(denseHi), 16, from);
  Worst coarse = sweep(fn, ref, 0, 0x80000000u, 4096, from);
  return dense.ulp > coarse.ulp ? dense : coarse;
}

double exactExp(double x) { return std::exp(x); }
double exactErf(double x) { return std::erf(x); }
double exactTanh(double x) { return std::tanh(x); }
/// The GELUs through forms without cancellation: 1 + erf(z) = erfc(-z),
/// 1 + tanh(u) = 2 / (1 + exp(-2u)).
double exactGeluErf(double x) {
  return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}
double exactGeluTanh(double x) {
  double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1 + std::exp(-2 * u));
}

#define EXPECT_WITHIN_ULP(worst, bound)                                        \
  EXPECT_LE((worst).ulp, bound)                                                \
      << "at x = " << (worst).x << " (" << std::hexfloat << (worst).x << ")"

//===--- exp, erf, tanh ---------------------------------------------------===//

TEST(VectorMath, ExpWithin1Ulp) {
  // Below 2^-26 in magnitude exp rounds to 1 (or 1 - 2^-24); beyond
  // [-104, 89] it is 0 or inf.
  Worst worst = sweepAll(expF32, exactExp, 0x1p-26f, 104.0f);
  EXPECT_WITHIN_ULP(worst, 1.0);
}

TEST(VectorMath, ExpSpecialValues) {
  EXPECT_EQ(fn1(expF32, 0.0f), 1.0f);
  EXPECT_EQ(fn1(expF32, -0.0f), 1.0f);
  EXPECT_EQ(fn1(expF32, kInf), kInf);
  EXPECT_EQ(fn1(expF32, -kInf), 0.0f);
  EXPECT_TRUE(std::isnan(fn1(expF32, kNaN)));
  EXPECT_TRUE(std::isnan(fn1(expF32, -kNaN)));
  EXPECT_EQ(fn1(expF32, 0x1p-149f), 1.0f);
  // Overflow: 0x1.62e42ep+6 = 88.72283 is the largest x with a finite
  // exp(x); the next float's exp is beyond FLT_MAX + ulp/2.
  float largest = fn1(expF32, 0x1.62e42ep+6f);
  EXPECT_TRUE(std::isfinite(largest));
  EXPECT_LE(ulpError(largest, std::exp(double(0x1.62e42ep+6f))), 1.0);
  EXPECT_EQ(fn1(expF32, 0x1.62e430p+6f), kInf);
  EXPECT_EQ(fn1(expF32, 1000.0f), kInf);
  // Gradual underflow: FLT_MIN near -87.34, denormals down to 2^-149 near
  // -103.28, then 0 below half of 2^-149 (near -103.97).
  for (float x : {-87.0f, -87.33654f, -87.5f, -95.0f, -100.0f, -103.0f,
                  -103.27893f, -103.9f, -103.97f})
    EXPECT_LE(ulpError(fn1(expF32, x), std::exp(double(x))), 1.0) << x;
  EXPECT_EQ(fn1(expF32, -103.98f), 0.0f);
  EXPECT_EQ(fn1(expF32, -1000.0f), 0.0f);
}

TEST(VectorMath, ErfWithin1Point5Ulp) {
  // Below 2^-12, erf(x) = 2x/sqrt(pi) to well below an ulp; from 3.92 on
  // it rounds to +-1.
  Worst worst = sweepAll(erfF32, exactErf, 0x1p-12f, 4.0f);
  EXPECT_WITHIN_ULP(worst, 1.5);
}

TEST(VectorMath, ErfSpecialValues) {
  EXPECT_EQ(floatBits(fn1(erfF32, 0.0f)), floatBits(0.0f));
  EXPECT_EQ(floatBits(fn1(erfF32, -0.0f)), floatBits(-0.0f));
  EXPECT_EQ(fn1(erfF32, kInf), 1.0f);
  EXPECT_EQ(fn1(erfF32, -kInf), -1.0f);
  EXPECT_EQ(fn1(erfF32, 4.0f), 1.0f);
  EXPECT_EQ(fn1(erfF32, -1e30f), -1.0f);
  EXPECT_TRUE(std::isnan(fn1(erfF32, kNaN)));
  // Denormal results: erf(x) ~ 1.128 x.
  for (float x : {0x1p-149f, -0x1p-140f, 0x1.234p-130f})
    EXPECT_LE(ulpError(fn1(erfF32, x), std::erf(double(x))), 1.0) << x;
}

TEST(VectorMath, TanhWithin1Point5Ulp) {
  // Below 2^-12, tanh(x) = x to well below an ulp; from 9.01 on it rounds
  // to +-1.
  Worst worst = sweepAll(tanhF32, exactTanh, 0x1p-12f, 9.5f);
  EXPECT_WITHIN_ULP(worst, 1.5);
}

TEST(VectorMath, TanhSpecialValues) {
  EXPECT_EQ(floatBits(fn1(tanhF32, 0.0f)), floatBits(0.0f));
  EXPECT_EQ(floatBits(fn1(tanhF32, -0.0f)), floatBits(-0.0f));
  EXPECT_EQ(fn1(tanhF32, kInf), 1.0f);
  EXPECT_EQ(fn1(tanhF32, -kInf), -1.0f);
  EXPECT_EQ(fn1(tanhF32, 20.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fn1(tanhF32, kNaN)));
  for (float x : {0x1p-149f, -0x1p-130f, 0x1p-20f})
    EXPECT_EQ(fn1(tanhF32, x), x);
}

//===--- GELU -------------------------------------------------------------===//

/// For x < -1, 1 + erf(x/sqrt 2) cancels (PyTorch's formula, kept): the
/// error there is absolute, checked as a multiple of 2^-24 |x|.
/// (Every input with TRAINC_VECTORMATH_EXHAUSTIVE=1, as sweepAll.)
double worstAbsoluteError(ArrayFn fn, RefFn ref, float lo, float hi) {
  double worst = 0;
  std::vector<float> x, y;
  uint32_t stride = exhaustive() ? 1 : 64;
  for (uint32_t b = floatBits(lo); b < floatBits(hi); b += stride)
    for (float v : {bitsFloat(b), -bitsFloat(b)})
      x.push_back(v);
  y.resize(x.size());
  fn(x.data(), y.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(y[i] - ref(x[i])) /
                                (0x1p-24 * std::max(1.0f, std::fabs(x[i]))));
  if (exhaustive())
    std::printf("exhaustive: worst %.4f * 2^-24 max(1, |x|) absolute\n", worst);
  return worst;
}

TEST(VectorMath, GeluErfWithin3UlpFromMinus1) {
  Worst worst = sweepAll(geluErfF32, exactGeluErf, 0x1p-12f, 6.0f, -1.0f);
  EXPECT_WITHIN_ULP(worst, 3.0);
  EXPECT_LE(worstAbsoluteError(geluErfF32, exactGeluErf, 0x1p-12f, 20.0f), 2.0);
}

TEST(VectorMath, GeluTanhWithin4UlpFromMinus1) {
  Worst worst = sweepAll(geluTanhF32, exactGeluTanh, 0x1p-12f, 12.0f, -1.0f);
  EXPECT_WITHIN_ULP(worst, 4.0);
  EXPECT_LE(worstAbsoluteError(geluTanhF32, exactGeluTanh, 0x1p-12f, 20.0f),
            2.5);
}

TEST(VectorMath, GeluSpecialValues) {
  for (ArrayFn gelu : {geluErfF32, geluTanhF32}) {
    EXPECT_EQ(fn1(gelu, 0.0f), 0.0f);
    EXPECT_EQ(fn1(gelu, kInf), kInf);
    EXPECT_EQ(fn1(gelu, 1e30f), 1e30f);
    EXPECT_EQ(fn1(gelu, -1e30f), 0.0f);
    // -inf * 0 in the formula, as in PyTorch's.
    EXPECT_TRUE(std::isnan(fn1(gelu, -kInf)));
    EXPECT_TRUE(std::isnan(fn1(gelu, kNaN)));
  }
}

//===--- Rows: softmax, log-sum-exp, sums, norms --------------------------===//

std::vector<float> randomRow(int64_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> row(n);
  for (float &v : row)
    v = dist(rng);
  return row;
}

/// The GELU gradients (g = 1) against double libm over every 256th float
/// in [-16, 16], as absolute errors in units of 2^-24 (gelu' lies in
/// [-0.17, 1.13] and crosses 0, so ulps of the result mean little near its
/// root). Over every 16th float the maxima are 2.46 (erf form, near x =
/// 0.91) and 9.39 (tanh form, near x = 4.88, where u's rounding grows);
/// the erf form's one exp serves both erf's tail and phi.
TEST(VectorMath, GeluGradsMatchDoubleReference) {
  const double k = std::sqrt(2 / M_PI), c = 0.044715;
  double worstErf = 0, worstTanh = 0;
  std::vector<float> x, ones, dErf, dTanh;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t u = 0; u < floatBits(16.0f); u += 256)
      x.push_back(bitsFloat(u | sign));
  int64_t n = int64_t(x.size());
  ones.assign(n, 1.0f);
  dErf.resize(n);
  dTanh.resize(n);
  geluErfGradF32(x.data(), ones.data(), dErf.data(), n);
  geluTanhGradF32(x.data(), ones.data(), dTanh.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    double v = x[i];
    double refErf = 0.5 * (1 + std::erf(v / std::sqrt(2.0))) +
                    v * std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
    double t = std::tanh(k * (v + c * v * v * v));
    double refTanh =
        0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * c * v * v);
    worstErf = std::max(worstErf, std::fabs(dErf[i] - refErf) / 0x1p-24);
    worstTanh = std::max(worstTanh, std::fabs(dTanh[i] - refTanh) / 0x1p-24);
  }
  EXPECT_LE(worstErf, 2.5);
  EXPECT_LE(worstTanh, 9.5);
  std::printf("gelu' within %.3f (erf form) and %.3f (tanh form) x 2^-24 "
              "over %lld inputs\n",
              worstErf, worstTanh, static_cast<long long>(n));
}

/// Lengths around the 16 and 128 partials, the vector widths and
/// maxAndSumExpF32's blocks of 1,024.
constexpr int64_t kLengths[] = {1,   2,    7,    15,   16,   17,   31,  33,
                                100, 128,  255,  256,  257,  513,  639, 640,
                                641, 1000, 1024, 1025, 4099, 50257};

/// Relative bound of a sum of n non-negative terms in `partials` partials
/// plus log2(partials) pairwise levels, with `extra` more roundings (exp,
/// division).
double sumBound(int64_t n, double extra, int partials = 16) {
  return (double((n + partials - 1) / partials) + std::log2(partials) + extra) *
         0x1p-24;
}
constexpr int kSoftmax = math::kSoftmaxPartials;

/// The exact max, exp(x[i] - max) and their sum of a row, and the
/// relative error that rounding x[i] - max to f32 alone causes in the sum:
/// exp(d) with d off by half an ulp of d is off by |d| 2^-24 relative.
struct ShiftedExps {
  double max = -INFINITY, sum = 0, sumError = 0;
  std::vector<double> exps;
};
ShiftedExps shiftedExps(const std::vector<float> &x) {
  ShiftedExps r;
  for (float v : x)
    r.max = std::max(r.max, double(v));
  for (float v : x) {
    double d = v - r.max;
    r.exps.push_back(std::exp(d));
    r.sum += r.exps.back();
    r.sumError += r.exps.back() * std::fabs(d) * 0x1p-24;
  }
  r.sumError /= r.sum;
  return r;
}

TEST(VectorMath, SoftmaxRowMatchesDoubleReference) {
  for (int64_t n : kLengths) {
    std::vector<float> x = randomRow(n, unsigned(n), -30, 30), y(n);
    softmaxRowF32(x.data(), y.data(), n);
    ShiftedExps ref = shiftedExps(x);
    for (int64_t i = 0; i < n; ++i) {
      // x[i] - max, exp (1 ulp = 2^-23 relative), the sum, the reciprocal
      // and the product.
      double d = std::fabs(x[i] - ref.max);
      double rel = sumBound(n, 5, kSoftmax) + ref.sumError + d * 0x1p-24;
      double expected = ref.exps[i] / ref.sum;
      ASSERT_NEAR(y[i], expected, rel * expected)
          << "n " << n << " element " << i;
    }
    // In place gives the same bits.
    std::vector<float> z = x;
    softmaxRowF32(z.data(), z.data(), n);
    ASSERT_EQ(y, z) << "n " << n;
  }
}

TEST(VectorMath, SoftmaxRowSpecialValues) {
  auto softmax = [](std::vector<float> x) {
    softmaxRowF32(x.data(), x.data(), int64_t(x.size()));
    return x;
  };
  for (const std::vector<float> &x : {std::vector<float>{-kInf, -kInf, -kInf},
                                      {1, kNaN, 2},
                                      {1, -kNaN, 2},
                                      {1, kInf, 2}})
    for (float v : softmax(x))
      EXPECT_TRUE(std::isnan(v));
  std::vector<float> y = softmax({-kInf, 0, -kInf, 0});
  EXPECT_EQ(y, (std::vector<float>{0, 0.5f, 0, 0.5f}));
  // Shifting by the max: huge inputs are as good as small ones.
  EXPECT_EQ(softmax({1000, 1001, 1002}), softmax({0, 1, 2}));
}

TEST(VectorMath, MaxAndSumExpMatchesDoubleReference) {
  for (int64_t n : kLengths) {
    std::vector<float> x = randomRow(n, unsigned(n) + 7, -20, 20);
    float max, sum;
    maxAndSumExpF32(x.data(), n, &max, &sum);
    ShiftedExps ref = shiftedExps(x);
    EXPECT_EQ(max, ref.max) << "n " << n;
    EXPECT_NEAR(sum, ref.sum,
                (sumBound(n, 2, kSoftmax) + ref.sumError) * ref.sum)
        << "n " << n;
    // softmaxRowF32's max and sum, bit for bit (a loss is the same with or
    // without its gradient).
    std::vector<float> y(n);
    float rowMax, rowSum;
    softmaxRowF32(x.data(), y.data(), n, &rowMax, &rowSum);
    EXPECT_EQ(floatBits(max), floatBits(rowMax)) << "n " << n;
    EXPECT_EQ(floatBits(sum), floatBits(rowSum)) << "n " << n;
  }
  float max, sum;
  std::vector<float> x = {-3, kNaN, 5};
  maxAndSumExpF32(x.data(), 3, &max, &sum);
  EXPECT_TRUE(std::isnan(sum));
}

/// The CUDA kernels' layout of math/SoftmaxSum.h's order (cuda/RowMath.cuh's
/// WarpRow), run here lane by lane: lane l adds the terms of elements
/// 128 k + 4l + u into its partial u in index order; then, as the shuffles
/// do, partial u of lanes l < 32 - s gets lane l + s's for s = 16 .. 1
/// (a lane past the end keeps its own), and lane 0 combines its four
/// (combineQuad). That must be the CPU's sum bit for bit.
float warpLayoutSum(const std::vector<float> &terms) {
  constexpr int kLanes = math::kSoftmaxLanes, kQuad = math::kSoftmaxQuad;
  int64_t n = int64_t(terms.size());
  float acc[kLanes][kQuad] = {};
  for (int lane = 0; lane < kLanes; ++lane)
    for (int64_t j = int64_t(lane) * kQuad; j < n; j += kSoftmax)
      for (int u = 0; u < kQuad && j + u < n; ++u)
        acc[lane][u] += terms[j + u];
  for (int s = kLanes / 2; s > 0; s /= 2) {
    float next[kLanes][kQuad];
    for (int lane = 0; lane < kLanes; ++lane)
      for (int u = 0; u < kQuad; ++u)
        next[lane][u] = acc[lane][u] +
                        (lane + s < kLanes ? acc[lane + s][u] : acc[lane][u]);
    std::memcpy(acc, next, sizeof(acc));
  }
  return math::combineQuad(acc[0]);
}

TEST(VectorMath, SoftmaxSumFollowsTheWarpLayout) {
  for (int64_t n : kLengths) {
    std::vector<float> x = randomRow(n, unsigned(n) + 3, -12, 12), y(n);
    float max, sum;
    softmaxRowF32(x.data(), y.data(), n, &max, &sum);
    std::vector<float> terms(n);
    for (int64_t i = 0; i < n; ++i)
      terms[i] = math::expCore(x[i] - max);
    EXPECT_EQ(floatBits(warpLayoutSum(terms)), floatBits(sum)) << "n " << n;
  }
}

TEST(VectorMath, SumsMatchDoubleReference) {
  for (int64_t n : kLengths) {
    std::vector<float> x = randomRow(n, unsigned(n) + 11, -4, 6);
    double sum = 0, abs = 0, sq = 0;
    const float c = 0.75f;
    for (float v : x) {
      sum += v;
      abs += std::fabs(v);
      sq += (double(v) - c) * (double(v) - c);
    }
    EXPECT_NEAR(sumF32(x.data(), n), sum, sumBound(n, 0) * abs) << n;
    // Each term (v - c)^2 adds two roundings.
    EXPECT_NEAR(sumSquaredDeviationF32(x.data(), c, n), sq, sumBound(n, 2) * sq)
        << n;
  }
  EXPECT_EQ(sumF32(nullptr, 0), 0.0f);
}

/// norm_grad_params's f64 column sums: each product rounded to f32, then
/// widened, bit for bit the scalar formula, at every tail length of the
/// vector clones (the machine's clone: x86-64-v4, v3 or baseline).
TEST(VectorMath, AccumulateIsTheScalarFormula) {
  for (int64_t n : {1, 3, 7, 8, 15, 16, 17, 31, 33, 1001}) {
    std::vector<float> x = randomRow(n, 4, -3, 3), y = randomRow(n, 5, -3, 3);
    std::vector<double> products(n, 0.25), sums(n, -0.5);
    accumulateProductsF32(x.data(), y.data(), products.data(), n);
    accumulateF32(x.data(), sums.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      float product = x[i] * y[i];
      ASSERT_EQ(products[i], 0.25 + double(product)) << n << " " << i;
      ASSERT_EQ(sums[i], -0.5 + double(x[i])) << n << " " << i;
    }
  }
}

TEST(VectorMath, NormalizeIsTheScalarFormula) {
  int64_t n = 1000;
  std::vector<float> x = randomRow(n, 1, -3, 3), scale = randomRow(n, 2, 0, 2),
                     bias = randomRow(n, 3, -1, 1), y(n);
  float mean = 0.125f, rstd = 1.7f;
  normalizeF32(x.data(), mean, rstd, scale.data(), bias.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], (x[i] - mean) * rstd * scale[i] + bias[i]) << i;
}

//===--- Arithmetic -------------------------------------------------------===//

TEST(VectorMath, ArithmeticIsExactIeee) {
  // Every length up to 70 at every offset up to 3, so that the vector body,
  // the remainder and unaligned starts all run.
  std::vector<float> a = randomRow(80, 4, -10, 10), b = randomRow(80, 5, -3, 3);
  a[5] = kNaN;
  b[9] = kNaN;
  a[12] = -0.0f;
  b[13] = kInf;
  b[20] = 0.0f;
  a[30] = -4.0f;
  struct Case {
    void (*fn)(const float *, const float *, float *, int64_t);
    float (*ref)(float, float);
  } binary[] = {
      {addF32, [](float u, float v) { return u + v; }},
      {subF32, [](float u, float v) { return u - v; }},
      {mulF32, [](float u, float v) { return u * v; }},
      {divF32, [](float u, float v) { return u / v; }},
      // NaN if either operand is NaN (the comparisons fail then).
      {maxF32, [](float u, float v) { return u > v || u != u ? u : v; }},
      {minF32, [](float u, float v) { return u < v || u != u ? u : v; }},
  };
  struct UnaryCase {
    ArrayFn fn;
    float (*ref)(float);
  } unary[] = {
      {negF32, [](float v) { return -v; }},
      {absF32, [](float v) { return std::fabs(v); }},
      {sqrtF32, [](float v) { return std::sqrt(v); }},
      {rsqrtF32, [](float v) { return 1.0f / std::sqrt(v); }},
  };
  auto same = [](float u, float v) {
    return floatBits(u) == floatBits(v) || (std::isnan(u) && std::isnan(v));
  };
  std::vector<float> z(80);
  for (int64_t offset = 0; offset < 4; ++offset) {
    for (int64_t n = 0; n <= 70; ++n) {
      const float *x = a.data() + offset, *y = b.data() + offset;
      for (const Case &c : binary) {
        c.fn(x, y, z.data(), n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_TRUE(same(z[i], c.ref(x[i], y[i])))
              << x[i] << ", " << y[i] << " -> " << z[i];
      }
      for (const UnaryCase &c : unary) {
        c.fn(x, z.data(), n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_TRUE(same(z[i], c.ref(x[i]))) << x[i] << " -> " << z[i];
      }
    }
  }
}

} // namespace
} // namespace trainc::cpu
