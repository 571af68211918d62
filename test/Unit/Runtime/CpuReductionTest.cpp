//===- CpuReductionTest.cpp - reduce_sum, _max, _mean and _prod -----------===//
//
// Expectations are exact. The inputs are multiples of 1/4 with few
// significant bits, so every partial sum is exact in double whatever the
// order, and the kernel's double accumulator and the reference's agree
// before the one rounding to the result dtype (which both do the same way:
// double -> float -> 16 bits). Max is exact in any order; products are of
// factors of a few significant bits, exact in double too.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainc::cpu {
namespace {

using testing::runKernel;
using testing::TestTensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<int64_t> keptShape(const TestTensor &x,
                               const std::vector<int64_t> &dims) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < int64_t(x.dims().size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      shape.push_back(x.dims()[d]);
  return shape;
}

TestTensor reduce(Opcode op, const TestTensor &x,
                  const std::vector<int64_t> &dims) {
  TestTensor y(x.dtype(), keptShape(x, dims));
  Status s = runKernel(runReduction, op, {&x}, {&y}, dims);
  EXPECT_TRUE(s.ok()) << s.toString();
  return y;
}

/// The reduction written from its definition: walk every element, find its
/// output, accumulate in double; then round once to x's dtype.
std::vector<double> reference(Opcode op, const TestTensor &x,
                              const std::vector<int64_t> &dims) {
  std::vector<int64_t> shape = keptShape(x, dims);
  TestTensor y(x.dtype(), shape);
  int64_t outputs = y.size();
  bool isMax = op == Opcode::ReduceMax, isProd = op == Opcode::ReduceProd;
  std::vector<double> acc(outputs, isMax ? -kInf : isProd ? 1.0 : 0.0);
  int rank = int(x.dims().size());
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t out = 0;
    for (int d = 0; d < rank; ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        out = out * x.dims()[d] + index[d];
    double v = x.get(i);
    if (isMax)
      acc[out] = std::isnan(acc[out]) || acc[out] > v ? acc[out] : v;
    else if (isProd)
      acc[out] *= v;
    else
      acc[out] += v;
    for (int d = rank - 1; d >= 0 && ++index[d] == x.dims()[d]; --d)
      index[d] = 0;
  }
  double count = double(x.size()) / double(std::max<int64_t>(outputs, 1));
  for (int64_t k = 0; k < outputs; ++k)
    y.set(k, op == Opcode::ReduceMean ? acc[k] / count : acc[k]);
  return y.values();
}

void expectValues(const TestTensor &t, const std::vector<double> &expected) {
  ASSERT_EQ(t.size(), int64_t(expected.size()));
  for (int64_t i = 0; i < t.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(t.get(i))) << "element " << i;
    else
      EXPECT_EQ(t.get(i), expected[i]) << "element " << i;
  }
}

/// -6, -5.75, ..., in a pattern that is not monotonic in any dim.
std::vector<double> quarters(int64_t n) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = double((i * 37) % 48) * 0.25 - 6;
  return v;
}

/// The 16 subsets of a rank-4 operand's dims, each in increasing order.
std::vector<std::vector<int64_t>> everySubsetOf4() {
  std::vector<std::vector<int64_t>> subsets;
  for (int mask = 0; mask < 16; ++mask) {
    subsets.emplace_back();
    for (int d = 0; d < 4; ++d)
      if (mask & (1 << d))
        subsets.back().push_back(d);
  }
  return subsets;
}

TEST(CpuReduction, EverySubsetOfDimsInEveryDType) {
  std::vector<int64_t> shape = {2, 1, 3, 4}; // The 1 tests dropped dims.
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                  DType::I32}) {
    std::vector<double> values = quarters(24);
    if (!isFloat(t))
      for (double &v : values)
        v *= 4;
    TestTensor x(t, shape, values);
    for (const std::vector<int64_t> &dims : everySubsetOf4()) {
      for (Opcode op :
           {Opcode::ReduceSum, Opcode::ReduceMax, Opcode::ReduceMean}) {
        if (op == Opcode::ReduceMean && !isFloat(t))
          continue;
        SCOPED_TRACE(std::string(dtypeName(t)) + " " + opcodeName(op) +
                     " over " + ::testing::PrintToString(dims));
        expectValues(reduce(op, x, dims), reference(op, x, dims));
      }
    }
  }
}

/// Factors of at most 2 significant bits (+-0.5, +-1, +-1.5, +-2, 0):
/// products of up to 24 of them are exact in double, so the kernel's and
/// the reference's agree before the one rounding, in any order.
std::vector<double> factors(int64_t n) {
  static const double kFactors[] = {1.5, -0.5, 2, -1, 1, -1.5, 0.5, -2};
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = kFactors[(i * 5) % 8];
  return v;
}

TEST(CpuReduction, ProductsOverEverySubsetOfDimsInEveryDType) {
  std::vector<int64_t> shape = {2, 1, 3, 4};
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                  DType::I32}) {
    std::vector<double> values = factors(24);
    if (!isFloat(t))
      for (double &v : values)
        v = std::round(v * 2); // -4 .. 4: exact in i32 up to 2^31
    values[7] = 0;             // one output of each reduction is 0
    TestTensor x(t, shape, values);
    for (const std::vector<int64_t> &dims : everySubsetOf4()) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " over " +
                   ::testing::PrintToString(dims));
      expectValues(reduce(Opcode::ReduceProd, x, dims),
                   reference(Opcode::ReduceProd, x, dims));
    }
  }
  // Each layout's parallel split, bias-gradient row blocks included.
  TestTensor big(DType::F32, {3, 101, 37}, factors(3 * 101 * 37));
  for (const std::vector<int64_t> &dims :
       std::vector<std::vector<int64_t>>{{0, 1}, {2}, {1}})
    expectValues(reduce(Opcode::ReduceProd, big, dims),
                 reference(Opcode::ReduceProd, big, dims));
}

TEST(CpuReduction, ProductsOfSpecialValuesAndWrappingIntegers) {
  TestTensor x(DType::F32, {3, 2}, {kNaN, 0, kInf, 0, -kInf, -2});
  expectValues(reduce(Opcode::ReduceProd, x, {1}), {kNaN, kNaN, kInf});
  // Rounded once: (1 + 2^-12)^3 = 1 + 3 2^-12 + 1.5 2^-23 + 2^-36 rounds
  // to 1 + 3 2^-12 + 2 2^-23 in f32; an f32 accumulator, rounding
  // (1 + 2^-12)^2's tie to even first, gives 1 + 3 2^-12 + 2^-23.
  double a = 1 + 0x1p-12;
  TestTensor cube(DType::F32, {3}, {a, a, a});
  expectValues(reduce(Opcode::ReduceProd, cube, {0}),
               {1 + 3 * 0x1p-12 + 2 * 0x1p-23});
  TestTensor empty(DType::F32, {2, 0});
  expectValues(reduce(Opcode::ReduceProd, empty, {1}), {1, 1});
  // i32 products wrap around in two's complement: 2^16 * 2^16 = 2^32 = 0
  // in 32 bits, 65537^2 = 2^32 + 2^17 + 1 -> 2^17 + 1.
  TestTensor i(DType::I32, {2, 2}, {65536, 65536, 65537, 65537});
  expectValues(reduce(Opcode::ReduceProd, i, {1}), {0, 131073});
  TestTensor w(DType::I64, {2});
  w.ref().as<int64_t>()[0] = (int64_t(1) << 40) + 1;
  w.ref().as<int64_t>()[1] = (int64_t(1) << 20) + 1;
  EXPECT_EQ(reduce(Opcode::ReduceProd, w, {0}).ref().as<int64_t>()[0],
            (int64_t(1) << 60) + (int64_t(1) << 40) + (int64_t(1) << 20) + 1);
}

TEST(CpuReduction, KnownValuesAndUnsortedDims) {
  TestTensor x(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectValues(reduce(Opcode::ReduceSum, x, {1}), {6, 15});
  expectValues(reduce(Opcode::ReduceSum, x, {0}), {5, 7, 9});
  expectValues(reduce(Opcode::ReduceMean, x, {1, 0}), {3.5});
  expectValues(reduce(Opcode::ReduceMax, x, {0}), {4, 5, 6});
  TestTensor w(DType::F64, {2, 3, 4, 5}, quarters(120));
  expectValues(reduce(Opcode::ReduceSum, w, {3, 1}),
               reference(Opcode::ReduceSum, w, {1, 3}));
}

TEST(CpuReduction, MaxPropagatesNaN) {
  for (DType t : {DType::F32, DType::BF16, DType::F64}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x(t, {2, 3}, {1, kNaN, 3, -kInf, -kInf, -kInf});
    expectValues(reduce(Opcode::ReduceMax, x, {1}), {kNaN, -kInf});
    expectValues(reduce(Opcode::ReduceMax, x, {0}), {1, kNaN, 3});
    // NaN first, so a max that only compares "v > acc" would lose it.
    TestTensor y(t, {17}, std::vector<double>(17, 1));
    y.set(0, kNaN);
    expectValues(reduce(Opcode::ReduceMax, y, {0}), {kNaN});
  }
}

TEST(CpuReduction, EmptyReductionsGiveTheIdentity) {
  TestTensor x(DType::F32, {2, 0});
  expectValues(reduce(Opcode::ReduceSum, x, {1}), {0, 0});
  expectValues(reduce(Opcode::ReduceMean, x, {1}), {kNaN, kNaN});
  expectValues(reduce(Opcode::ReduceMax, x, {1}), {-kInf, -kInf});
  TestTensor i(DType::I32, {0, 3});
  expectValues(reduce(Opcode::ReduceMax, i, {0}),
               std::vector<double>(3, std::numeric_limits<int32_t>::min()));
  expectValues(reduce(Opcode::ReduceSum, i, {0}), {0, 0, 0});
  EXPECT_EQ(reduce(Opcode::ReduceSum, i, {1}).size(), 0);
}

TEST(CpuReduction, IntegerSumsAreExactAndWrap) {
  TestTensor i(DType::I32, {2}, {2147483647, 1});
  expectValues(reduce(Opcode::ReduceSum, i, {0}), {-2147483648.0});
  // int64 sums stay exact where a double accumulator would not.
  TestTensor w(DType::I64, {2});
  w.ref().as<int64_t>()[0] = (int64_t(1) << 60) + 1;
  w.ref().as<int64_t>()[1] = int64_t(1) << 60;
  EXPECT_EQ(reduce(Opcode::ReduceSum, w, {0}).ref().as<int64_t>()[0],
            (int64_t(1) << 61) + 1);
}

TEST(CpuReduction, UnsupportedDTypes) {
  TestTensor i(DType::I32, {2}, {1, 2});
  TestTensor y(DType::I32, {});
  Status s = runKernel(runReduction, Opcode::ReduceMean, {&i}, {&y}, {0});
  EXPECT_EQ(s.message(), "reduce_mean: dtype i32 is not supported");
  TestTensor b(DType::I1, {2}, {1, 0});
  TestTensor c(DType::I1, {});
  EXPECT_EQ(runKernel(runReduction, Opcode::ReduceSum, {&b}, {&c}, {0}).code(),
            StatusCode::kUnimplemented);
}

/// 2^20 copies of 0.1f: the double accumulator gives the exact sum (each of
/// its partial sums has at most 24 + 20 significant bits) rounded once. A
/// float accumulator drifts far from it, which the last check confirms, so
/// this test tells the two apart.
TEST(CpuReduction, LongF32RowsSumAccurately) {
  constexpr int64_t n = int64_t(1) << 20;
  TestTensor x(DType::F32, {n}, std::vector<double>(n, 0.1f));
  float exact = float(double(n) * double(0.1f));
  TestTensor sum = reduce(Opcode::ReduceSum, x, {0});
  EXPECT_EQ(sum.get(0), exact);
  EXPECT_EQ(reduce(Opcode::ReduceMean, x, {0}).get(0), 0.1f);
  float naive = 0;
  for (int64_t i = 0; i < n; ++i)
    naive += 0.1f;
  EXPECT_GT(std::fabs(naive - exact), 1000 * std::fabs(sum.get(0) - exact));
}

/// 1M elements reduced along either dim and both: each layout's parallel
/// split over outputs against the serial reference.
TEST(CpuReduction, LargeReductionsMatchTheSerialReference) {
  TestTensor x(DType::F32, {1024, 1027}, quarters(1024 * 1027));
  for (const std::vector<int64_t> &dims :
       std::vector<std::vector<int64_t>>{{0}, {1}, {0, 1}}) {
    for (Opcode op :
         {Opcode::ReduceSum, Opcode::ReduceMax, Opcode::ReduceMean}) {
      SCOPED_TRACE(std::string(opcodeName(op)) + " over " +
                   std::to_string(dims.size()) + " dims");
      expectValues(reduce(op, x, dims), reference(op, x, dims));
    }
  }
}

/// Bias-gradient shapes: many rows onto one kept run, split into row
/// blocks (the last one partial) whose partials combine in order.
TEST(CpuReduction, RowBlocksMatchTheSerialReference) {
  TestTensor x(DType::F32, {3, 101, 37}, quarters(3 * 101 * 37));
  x.set(5 * 37 + 4, std::nan("")); // column 4: max is NaN
  for (Opcode op : {Opcode::ReduceSum, Opcode::ReduceMax, Opcode::ReduceMean}) {
    SCOPED_TRACE(opcodeName(op));
    expectValues(reduce(op, x, {0, 1}), reference(op, x, {0, 1}));
  }
}

/// A 16-bit sum with an f32 result (the compiler's widened sum) is the f32
/// sum of the widened operand, bit for bit (widening is exact and the
/// terms meet in the same order), not rounded to 16 bits.
TEST(CpuReduction, WidenedSumsAreTheF32SumOfTheWidenedOperand) {
  for (DType t : {DType::BF16, DType::F16})
    for (const auto &[shape, dims] :
         std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
             {{8, 128, 37}, {0, 1}}, // bias gradient: row blocks
             {{3, 101, 37}, {2}},    // reduced runs
             {{5, 7}, {0, 1}}}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " over " +
                   std::to_string(dims.size()) + " dims");
      TestTensor x = testing::randomTensor(t, shape, 3, -4, 4);
      TestTensor wide(DType::F32, shape);
      for (int64_t i = 0; i < x.size(); ++i)
        wide.set(i, x.get(i));
      TestTensor want = reduce(Opcode::ReduceSum, wide, dims);
      TestTensor got(DType::F32, keptShape(x, dims));
      Status s = runKernel(runReduction, Opcode::ReduceSum, {&x}, {&got}, dims);
      ASSERT_TRUE(s.ok()) << s.toString();
      int64_t rounded = 0; // outputs a 16-bit result would have changed
      for (int64_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got.get(i), want.get(i)) << "output " << i;
        TestTensor one(t, {1});
        one.set(0, got.get(i));
        rounded += one.get(0) != got.get(i);
      }
      EXPECT_GT(rounded, 0) << "no output tells the widened sum apart";
    }
}

} // namespace
} // namespace trainc::cpu
