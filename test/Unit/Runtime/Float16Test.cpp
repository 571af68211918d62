//===- Float16Test.cpp - f16, bf16 and TF32 conversions -------------------===//
//
// Exhaustive over all 65536 bit patterns where that is cheap, and against
// the rounding rule (nearest, ties to even) on the boundaries.
//
//===----------------------------------------------------------------------===//

#include "base/Float16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace trainc {
namespace {

TEST(Float16, EveryF16RoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16ToFloat(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f)))) << std::hex << h;
      continue;
    }
    EXPECT_EQ(floatToF16(f), h) << std::hex << h << " -> " << f;
  }
}

TEST(Float16, EveryBf16RoundTripsThroughFloat) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = bf16ToFloat(uint16_t(h));
    if (std::isnan(f))
      continue;
    EXPECT_EQ(floatToBf16(f), h) << std::hex << h;
  }
}

/// roundToTf32's rule, in doubles: the nearest multiple of the TF32
/// spacing at |f| (2^(e-10) in the binade [2^e, 2^(e+1)), 2^-136 among the
/// subnormals), halfway cases away from zero; beyond the largest finite
/// TF32 value, infinity.
double tf32Reference(float f) {
  if (!std::isfinite(f))
    return f;
  double a = std::fabs(double(f));
  int e = a == 0 ? -149 : std::max(std::ilogb(a), -126);
  double spacing = std::ldexp(1.0, e - 10);
  double r = std::round(a / spacing) * spacing; // halfway: away from zero
  if (r > std::ldexp(2 - std::ldexp(1.0, -10), 127))
    r = std::numeric_limits<double>::infinity();
  return std::copysign(r, double(f));
}

TEST(Float16, Tf32RoundsToNearestTiesAway) {
  EXPECT_EQ(roundToTf32(1.0f + 0x1p-12f), 1.0f);
  EXPECT_EQ(roundToTf32(1.0f + 0x1p-11f), 1.0f + 0x1p-10f);   // tie: away
  EXPECT_EQ(roundToTf32(-1.0f - 0x1p-11f), -1.0f - 0x1p-10f); // from zero
  EXPECT_EQ(roundToTf32(1.0f + 0x1p-10f + 0x1p-11f), 1.0f + 0x1p-9f);
  EXPECT_EQ(roundToTf32(2.0f - 0x1p-23f), 2.0f); // carries into the exponent
  EXPECT_EQ(roundToTf32(std::numeric_limits<float>::max()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(roundToTf32(-std::numeric_limits<float>::infinity()),
            -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(roundToTf32(std::nanf(""))));
  EXPECT_TRUE(std::signbit(roundToTf32(-0.0f)));
  // Every pattern of the low 14 bits around a few exponents, subnormals
  // and the top binade included, then random patterns: the bits agree
  // with the rule above, and the low 13 bits are zero.
  std::vector<uint32_t> patterns;
  for (uint32_t high : {0x00000000u, 0x00800000u, 0x3f800000u, 0x7f000000u,
                        0x7f7fc000u, 0x80000000u, 0xbf800000u})
    for (uint32_t low = 0; low < (1u << 14); ++low)
      patterns.push_back(high | low);
  uint32_t x = 12345;
  for (int i = 0; i < 200000; ++i) {
    x = x * 1664525u + 1013904223u;
    patterns.push_back(x);
  }
  for (uint32_t u : patterns) {
    float f = bitsFloat(u), r = roundToTf32(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(r)) << std::hex << u;
      continue;
    }
    ASSERT_EQ(double(r), tf32Reference(f)) << std::hex << u;
    ASSERT_EQ(floatBits(r) & 0x1fffu, 0u) << std::hex << u;
  }
}

TEST(Float16, F16RoundsToNearestEven) {
  // Near 1 the f16 spacing is 2^-10: halfway cases go to the even mantissa.
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 0x1p-11f)), 1.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);
  EXPECT_EQ(f16ToFloat(floatToF16(1.0f + 0x1p-11f + 0x1p-20f)),
            1.0f + 0x1p-10f);
  // Largest finite, overflow, subnormals and underflow to zero.
  EXPECT_EQ(f16ToFloat(floatToF16(65504.0f)), 65504.0f);
  EXPECT_EQ(f16ToFloat(floatToF16(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16ToFloat(floatToF16(65520.0f))));
  EXPECT_EQ(f16ToFloat(floatToF16(0x1p-24f)), 0x1p-24f);
  EXPECT_EQ(f16ToFloat(floatToF16(0x1p-25f)), 0.0f); // Tie to even (0).
  EXPECT_EQ(f16ToFloat(floatToF16(3 * 0x1p-25f)), 0x1p-23f);
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(std::nanf("")))));
}

TEST(Float16, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f)),
            1.0f + 0x1p-7f);
  EXPECT_TRUE(
      std::isinf(bf16ToFloat(floatToBf16(std::numeric_limits<float>::max()))));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

} // namespace
} // namespace trainc
