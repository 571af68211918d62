//===- Float16Test.cpp - f16 and bf16 conversions -------------------------===//
//
// Exhaustive over all 65536 bit patterns where that is cheap, and against
// the rounding rule (nearest, ties to even) on the boundaries.
//
//===----------------------------------------------------------------------===//

#include "base/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
