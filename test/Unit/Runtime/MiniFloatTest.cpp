//===- MiniFloatTest.cpp - 8- and 4-bit floats, sub-byte integers ---------===//
//
// Exhaustive over every bit pattern of each storage format: decoding and
// re-encoding gives the pattern back (but for the redundant encodings: -0
// of FNUZ, NaN payloads); midpoints between neighbours round to the even
// one; and the ranges are the formats' published ones.
//
//===----------------------------------------------------------------------===//

#include "base/MiniFloat.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainc {
namespace {

struct Named {
  const char *name;
  MiniFloatFormat format;
  double max;
};
const Named kFormats[] = {{"E4M3FN", kF8E4M3FN, 448},
                          {"E4M3FNUZ", kF8E4M3FNUZ, 240},
                          {"E5M2", kF8E5M2, 57344},
                          {"E5M2FNUZ", kF8E5M2FNUZ, 57344}};

TEST(MiniFloat, EveryPatternRoundTrips) {
  for (const Named &f : kFormats) {
    EXPECT_EQ(maxMiniFloat(f.format), f.max) << f.name;
    for (int b = 0; b < 256; ++b) {
      double v = decodeMiniFloat(f.format, uint8_t(b));
      if (std::isnan(v)) {
        EXPECT_TRUE(
            std::isnan(decodeMiniFloat(f.format, encodeMiniFloat(f.format, v))))
            << f.name << " " << b;
        continue;
      }
      EXPECT_EQ(encodeMiniFloat(f.format, v), uint8_t(b))
          << f.name << " pattern " << b << " value " << v;
    }
  }
}

TEST(MiniFloat, MidpointsRoundToEven) {
  for (const Named &f : kFormats) {
    // Between each pair of neighbouring positive finite values.
    for (int b = 0; b < 0x7F; ++b) {
      double lo = decodeMiniFloat(f.format, uint8_t(b));
      double hi = decodeMiniFloat(f.format, uint8_t(b + 1));
      if (std::isnan(lo) || std::isnan(hi) || std::isinf(hi))
        continue;
      uint8_t even = (b % 2 == 0) ? uint8_t(b) : uint8_t(b + 1);
      EXPECT_EQ(encodeMiniFloat(f.format, (lo + hi) / 2), even)
          << f.name << " between " << lo << " and " << hi;
    }
  }
}

TEST(MiniFloat, OverflowAndSpecials) {
  // E5M2 has infinities; the others overflow to NaN.
  EXPECT_TRUE(
      std::isinf(decodeMiniFloat(kF8E5M2, encodeMiniFloat(kF8E5M2, 1e6))));
  EXPECT_TRUE(
      std::isnan(decodeMiniFloat(kF8E4M3FN, encodeMiniFloat(kF8E4M3FN, 470))));
  EXPECT_EQ(encodeMiniFloat(kF8E4M3FN, 464), encodeMiniFloat(kF8E4M3FN, 448));
  // FNUZ has no -0: it is the NaN pattern, and -0 encodes as +0.
  EXPECT_EQ(encodeMiniFloat(kF8E4M3FNUZ, -0.0), 0);
  EXPECT_EQ(encodeMiniFloat(kF8E4M3FNUZ, NAN), 0x80);
  EXPECT_EQ(encodeMiniFloat(kF8E4M3FN, -0.0), 0x80);
}

TEST(MiniFloat, F4E2M1) {
  const double values[] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (int b = 0; b < 16; ++b) {
    double v = decodeF4E2M1(uint8_t(b));
    EXPECT_EQ(std::fabs(v), values[b & 7]);
    EXPECT_EQ(std::signbit(v), (b & 8) != 0);
    EXPECT_EQ(encodeF4E2M1(v), b);
  }
  EXPECT_EQ(decodeF4E2M1(encodeF4E2M1(0.25)), 0); // tie to even (0)
  EXPECT_EQ(decodeF4E2M1(encodeF4E2M1(0.75)), 1); // tie to even (1)
  EXPECT_EQ(decodeF4E2M1(encodeF4E2M1(5)), 4);    // tie to even (4)
  EXPECT_EQ(decodeF4E2M1(encodeF4E2M1(1e9)), 6);  // saturates
  EXPECT_EQ(decodeF4E2M1(encodeF4E2M1(-INFINITY)), -6);
  EXPECT_EQ(encodeF4E2M1(NAN), 0x8);
}

TEST(MiniFloat, E8M0RoundsUp) {
  // 2^-127 (pattern 0) is a float subnormal, whose fraction bits ONNX's
  // bit-level rule rounds up to 2^-126; every other power round-trips.
  for (int b = 1; b < 255; ++b)
    EXPECT_EQ(encodeE8M0(decodeE8M0(uint8_t(b))), b);
  EXPECT_EQ(encodeE8M0(decodeE8M0(0)), 1);
  EXPECT_EQ(decodeE8M0(encodeE8M0(1.1)), 2);
  EXPECT_EQ(decodeE8M0(encodeE8M0(0.124)), 0.125);
  EXPECT_EQ(encodeE8M0(0.0), 0);     // 2^-127
  EXPECT_EQ(encodeE8M0(3e38), 0xFE); // saturates below NaN
  EXPECT_EQ(encodeE8M0(NAN), 0xFF);
}

TEST(MiniFloat, WrapToBits) {
  EXPECT_EQ(wrapToBits(-9, 4, true), 7);
  EXPECT_EQ(wrapToBits(8, 4, true), -8);
  EXPECT_EQ(wrapToBits(-1, 4, false), 15);
  EXPECT_EQ(wrapToBits(-3, 2, false), 1);
  EXPECT_EQ(wrapToBits(2, 2, true), -2);
}

} // namespace
} // namespace trainc
