//===- VerifyTest.cpp - The comparison behind --verify-steps --------------===//

#include "train/Verify.h"
#include "base/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace trainc {
namespace {

TEST(Verify, RelativeL2ErrorIsTheNormOfTheDifferenceOverTheReferences) {
  std::vector<float> ref = {3, 4, 0}, same = ref, off = {3, 4, 0.05f};
  EXPECT_EQ(relativeL2Error(same.data(), ref.data(), 3, DType::F32), 0);
  // ||(0, 0, 0.05)|| / ||(3, 4, 0)|| = 0.05 / 5.
  EXPECT_NEAR(relativeL2Error(off.data(), ref.data(), 3, DType::F32), 0.01,
              1e-8);
  std::vector<double> d = {1, -2}, e = {1, -2.002};
  EXPECT_NEAR(relativeL2Error(e.data(), d.data(), 2, DType::F64),
              0.002 / std::sqrt(5.0), 1e-12);
}

TEST(Verify, SixteenBitAndIntegerTensorsCompareByValue) {
  std::vector<uint16_t> a = {floatToBf16(1.0f), floatToBf16(2.0f)};
  std::vector<uint16_t> b = {floatToBf16(1.0f), floatToBf16(2.5f)};
  EXPECT_NEAR(relativeL2Error(a.data(), b.data(), 2, DType::BF16),
              0.5 / std::sqrt(1 + 6.25), 1e-12);
  std::vector<int64_t> i = {5, 7}, j = {5, 7};
  EXPECT_EQ(relativeL2Error(i.data(), j.data(), 2, DType::I64), 0);
}

TEST(Verify, ZerosAndNonFiniteValuesMustAgreeExactly) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<float> zeros = {0, 0}, small = {0, 1e-30f};
  EXPECT_EQ(relativeL2Error(zeros.data(), zeros.data(), 2, DType::F32), 0);
  EXPECT_EQ(relativeL2Error(small.data(), zeros.data(), 2, DType::F32), inf);
  float nan = std::nanf("");
  std::vector<float> withNan = {1, nan}, otherNan = {1, nan}, finite = {1, 2};
  EXPECT_EQ(relativeL2Error(withNan.data(), otherNan.data(), 2, DType::F32), 0);
  EXPECT_EQ(relativeL2Error(withNan.data(), finite.data(), 2, DType::F32), inf);
  EXPECT_EQ(relativeL2Error(finite.data(), withNan.data(), 2, DType::F32), inf);
}

TEST(Verify, AFloorMeasuresNoiseAgainstItsKindsScale) {
  // A tensor of rounding noise (AdamW's +-lr updates of a zero gradient):
  // half the signs differ, an error of 1.4 against its own norm.
  std::vector<float> gpu = {1e-3f, -1e-3f, 1e-3f, -1e-3f};
  std::vector<float> cpu = {1e-3f, 1e-3f, 1e-3f, 1e-3f};
  L2Sums sums = l2Sums(gpu.data(), cpu.data(), 4, DType::F32);
  EXPECT_EQ(sums.count, 4);
  EXPECT_NEAR(relativeL2Error(sums), std::sqrt(2.0), 1e-6);
  // Against peers of RMS 0.02 (share sqrt(4) * 0.02): 2.8e-3 / 0.04.
  // (1e-3f is 1e-3 within 5e-8 relative.)
  EXPECT_NEAR(relativeL2Error(sums, 0.04), std::sqrt(8e-6) / 0.04, 1e-8);
  // A floor below the tensor's own norm changes nothing.
  EXPECT_NEAR(relativeL2Error(sums, 1e-9), std::sqrt(2.0), 1e-6);
  // Non-finite disagreements stay infinite whatever the floor.
  float nan = std::nanf("");
  std::vector<float> withNan = {nan, 0, 0, 0};
  EXPECT_EQ(
      relativeL2Error(l2Sums(withNan.data(), cpu.data(), 4, DType::F32), 1.0),
      std::numeric_limits<double>::infinity());
}

} // namespace
} // namespace trainc
