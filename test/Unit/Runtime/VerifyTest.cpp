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

} // namespace
} // namespace trainc
