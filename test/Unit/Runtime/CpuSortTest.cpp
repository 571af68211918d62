//===- CpuSortTest.cpp - argsort: a stable sort's permutation -------------===//
//
// The expected orders come from std::stable_sort with a comparator written
// from the op's definition (numbers ascending or descending, -0 equal to
// +0, NaN after every number or before when descending), not from
// math/SortKey.h's keys, which the kernel uses.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "math/SortKey.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>

namespace trainc::cpu::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// The stable order of `row` by the definition.
std::vector<int64_t> expectedOrder(const std::vector<double> &row,
                                   bool descending) {
  std::vector<int64_t> order(row.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
    double a = row[i], b = row[j];
    if (descending)
      return !std::isnan(b) && (std::isnan(a) || a > b);
    return !std::isnan(a) && (std::isnan(b) || a < b);
  });
  return order;
}

std::vector<int64_t> indicesOf(TestTensor &out) {
  const int64_t *p = out.ref().as<int64_t>();
  return std::vector<int64_t>(p, p + out.ref().numElements());
}

TEST(CpuSort, FloatsTiesSignedZerosInfinitiesAndNaN) {
  // -0 and +0 tie (index order), NaNs tie after +inf, 2 appears twice.
  std::vector<double> row = {2, kNaN, -0.0, -kInf, 0.0, kInf, 2, -1, kNaN};
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16})
    for (bool descending : {false, true}) {
      SCOPED_TRACE(std::string(dtypeName(t)) +
                   (descending ? " descending" : " ascending"));
      TestTensor x(t, {int64_t(row.size())}, row);
      TestTensor out(DType::I64, {int64_t(row.size())});
      Status s = runKernel(runArgsort, Opcode::Argsort, {&x}, {&out},
                           {0, descending ? 1 : 0, 0});
      ASSERT_TRUE(s.ok()) << s.toString();
      std::vector<int64_t> want =
          descending ? std::vector<int64_t>{1, 8, 5, 0, 6, 2, 4, 7, 3}
                     : std::vector<int64_t>{3, 7, 2, 4, 0, 6, 5, 1, 8};
      EXPECT_EQ(indicesOf(out), want);
      EXPECT_EQ(want, expectedOrder(row, descending));
    }
}

TEST(CpuSort, IntegersIncludingTheExtremes) {
  TestTensor x32(DType::I32, {5}, {0, 0, 0, 0, 0});
  int32_t *v32 = x32.ref().as<int32_t>();
  v32[0] = 3, v32[1] = INT32_MIN, v32[2] = -1, v32[3] = INT32_MAX, v32[4] = 3;
  TestTensor out(DType::I64, {5});
  ASSERT_TRUE(
      runKernel(runArgsort, Opcode::Argsort, {&x32}, {&out}, {0, 0, 0}).ok());
  EXPECT_EQ(indicesOf(out), (std::vector<int64_t>{1, 2, 0, 4, 3}));
  ASSERT_TRUE(
      runKernel(runArgsort, Opcode::Argsort, {&x32}, {&out}, {0, 1, 0}).ok());
  EXPECT_EQ(indicesOf(out), (std::vector<int64_t>{3, 0, 4, 2, 1}));

  TestTensor x64(DType::I64, {4}, {0, 0, 0, 0});
  int64_t *v64 = x64.ref().as<int64_t>();
  v64[0] = INT64_MAX, v64[1] = INT64_MIN, v64[2] = 0, v64[3] = -5;
  TestTensor out64(DType::I64, {4});
  ASSERT_TRUE(
      runKernel(runArgsort, Opcode::Argsort, {&x64}, {&out64}, {0, 0, 0}).ok());
  EXPECT_EQ(indicesOf(out64), (std::vector<int64_t>{1, 3, 2, 0}));
}

/// Random [3, A, 5] tensors sorted along each axis: every row (o, i) is
/// checked against the definition, with few distinct values so that ties
/// are common.
TEST(CpuSort, EveryAxisOfRandomTensorsMatchesTheDefinition) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pick(-3, 4);
  for (int64_t a : {1, 2, 7, 33})
    for (int axis = 0; axis < 3; ++axis)
      for (bool descending : {false, true}) {
        std::vector<int64_t> shape = {3, a, 5};
        std::vector<double> values(3 * a * 5);
        for (double &v : values) {
          int r = pick(rng);
          v = r == 4 ? kNaN : r == -3 ? -0.0 : r * 0.5;
        }
        TestTensor x(DType::F32, shape, values);
        TestTensor out(DType::I64, shape);
        ASSERT_TRUE(runKernel(runArgsort, Opcode::Argsort, {&x}, {&out},
                              {axis, descending ? 1 : 0, 0})
                        .ok());
        std::vector<int64_t> got = indicesOf(out);
        int64_t n = shape[axis], inner = 1, outer = 1;
        for (int d = axis + 1; d < 3; ++d)
          inner *= shape[d];
        for (int d = 0; d < axis; ++d)
          outer *= shape[d];
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            std::vector<double> row;
            std::vector<int64_t> rowGot;
            for (int64_t j = 0; j < n; ++j) {
              row.push_back(values[(o * n + j) * inner + i]);
              rowGot.push_back(got[(o * n + j) * inner + i]);
            }
            ASSERT_EQ(rowGot, expectedOrder(row, descending))
                << "A " << a << " axis " << axis << " row " << o << "," << i;
          }
      }
}

/// IEEE 754 totalOrder (chlo.top_k's): -NaN < -inf < -0 < +0 < +inf <
/// +NaN, read from the stored bits of each float type.
TEST(CpuSort, FloatsInTotalOrder) {
  std::vector<double> row = {kInf, kNaN, -kNaN, -kInf, 3, -0.0, 0.0, -0.0};
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x(t, {int64_t(row.size())}, row);
    TestTensor out(DType::I64, {int64_t(row.size())});
    ASSERT_TRUE(
        runKernel(runArgsort, Opcode::Argsort, {&x}, {&out}, {0, 0, 1}).ok());
    EXPECT_EQ(indicesOf(out), (std::vector<int64_t>{2, 3, 5, 7, 6, 4, 0, 1}));
    ASSERT_TRUE(
        runKernel(runArgsort, Opcode::Argsort, {&x}, {&out}, {0, 1, 1}).ok());
    EXPECT_EQ(indicesOf(out), (std::vector<int64_t>{1, 0, 4, 6, 5, 7, 3, 2}));
  }
}

/// The keys the CUDA kernel sorts are the CPU's: check their order
/// directly on values in ascending order of the definition.
TEST(CpuSort, KeysFollowTheOrderOfTheDefinition) {
  std::vector<double> ascending = {-kInf, -1e300,   -1.5, -4.9e-324, -0.0,
                                   0.0,   4.9e-324, 1,    1e300,     kInf};
  for (size_t i = 0; i + 1 < ascending.size(); ++i) {
    double a = ascending[i], b = ascending[i + 1];
    bool tie = a == b; // -0 and +0
    EXPECT_EQ(math::sortKeyOfFloat(a, false) == math::sortKeyOfFloat(b, false),
              tie);
    EXPECT_LE(math::sortKeyOfFloat(a, false), math::sortKeyOfFloat(b, false));
    EXPECT_GE(math::sortKeyOfFloat(a, true), math::sortKeyOfFloat(b, true));
    EXPECT_LT(math::sortKeyOfFloat(a, false),
              math::sortKeyOfFloat(kNaN, false));
    EXPECT_GT(math::sortKeyOfFloat(a, true), math::sortKeyOfFloat(-kNaN, true));
  }
  EXPECT_EQ(math::sortKeyOfFloat(kNaN, false),
            math::sortKeyOfFloat(-kNaN, false));
  EXPECT_LT(math::sortKeyOfInt(INT64_MIN, false),
            math::sortKeyOfInt(-1, false));
  EXPECT_LT(math::sortKeyOfInt(-1, false), math::sortKeyOfInt(0, false));
  EXPECT_LT(math::sortKeyOfInt(0, false), math::sortKeyOfInt(INT64_MAX, false));
  EXPECT_GT(math::sortKeyOfInt(-1, true), math::sortKeyOfInt(0, true));
  // Total order of f32 bits: -NaN, -inf, -1, -0, +0, 1, +inf, +NaN.
  std::vector<uint32_t> bits = {0xFFC00000u, 0xFF800000u, 0xBF800000u,
                                0x80000000u, 0x00000000u, 0x3F800000u,
                                0x7F800000u, 0x7FC00000u};
  for (size_t i = 0; i + 1 < bits.size(); ++i) {
    EXPECT_LT(math::sortKeyOfFloatBits(bits[i], 32, false),
              math::sortKeyOfFloatBits(bits[i + 1], 32, false));
    EXPECT_GT(math::sortKeyOfFloatBits(bits[i], 32, true),
              math::sortKeyOfFloatBits(bits[i + 1], 32, true));
  }
}

} // namespace
} // namespace trainc::cpu::testing
