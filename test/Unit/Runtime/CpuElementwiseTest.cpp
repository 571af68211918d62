//===- CpuElementwiseTest.cpp - Unary, binary, compare, select, convert ---===//
//
// Every expectation is exact: the inputs are chosen so that the math is
// exact in the dtype (small integers, powers of two), or the expected value
// is computed with the same single rounding the contract prescribes (the
// float libm function for 16-bit types, VectorMath.h's array function for
// f32, the double one for f64, then one rounding to the storage type). Rounding
// cases (ties to even, double rounding) are built from their bit patterns.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "cpu/VectorMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trainc::cpu {
namespace {

using testing::randomValues;
using testing::runKernel;
using testing::TestTensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType kFloatTypes[] = {DType::F64, DType::F32, DType::F16,
                                 DType::BF16};

TestTensor vec(DType t, const std::vector<double> &values) {
  return TestTensor(t, {int64_t(values.size())}, values);
}

/// A 1-D i64 tensor with exact values (TestTensor's doubles stop at 2^53).
TestTensor i64Vec(const std::vector<int64_t> &values) {
  TestTensor t(DType::I64, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.ref().as<int64_t>()[i] = values[i];
  return t;
}

Status run(Opcode op, const std::vector<const TestTensor *> &inputs,
           TestTensor &result, std::vector<int64_t> ints = {}) {
  return runKernel(runElementwise, op, inputs, {&result}, ints);
}

/// The result of an op that must succeed, shaped like its first operand.
TestTensor eval(Opcode op, const std::vector<const TestTensor *> &inputs,
                DType resultType, std::vector<int64_t> ints = {}) {
  TestTensor result(resultType, inputs.back()->dims());
  Status s = run(op, inputs, result, ints);
  EXPECT_TRUE(s.ok()) << s.toString();
  return result;
}

/// Exact comparison in which NaN matches NaN.
void expectValues(const TestTensor &t, const std::vector<double> &expected) {
  ASSERT_EQ(t.size(), int64_t(expected.size()));
  for (int64_t i = 0; i < t.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(t.get(i))) << "element " << i;
    else
      EXPECT_EQ(t.get(i), expected[i]) << "element " << i;
  }
}

//===--- Unary ------------------------------------------------------------===//

TEST(CpuElementwiseUnary, ExactValuesInEveryFloatType) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x = vec(t, {-2.5, 0, 4, 1});
    expectValues(eval(Opcode::Neg, {&x}, t), {2.5, -0.0, -4, -1});
    expectValues(eval(Opcode::Abs, {&x}, t), {2.5, 0, 4, 1});
    expectValues(eval(Opcode::Sqrt, {&x}, t), {kNaN, 0, 2, 1});
    expectValues(eval(Opcode::Rsqrt, {&x}, t), {kNaN, kInf, 0.5, 1});
    TestTensor special = vec(t, {0, -kInf, kInf});
    expectValues(eval(Opcode::Exp, {&special}, t), {1, 0, kInf});
    expectValues(eval(Opcode::Tanh, {&special}, t), {0, -1, 1});
    expectValues(eval(Opcode::Erf, {&special}, t), {0, -1, 1});
    expectValues(eval(Opcode::Cos, {&special}, t), {1, kNaN, kNaN});
    expectValues(eval(Opcode::Sin, {&special}, t), {0, kNaN, kNaN});
    // Floor and round (ties to even) are exact in every type.
    TestTensor ties = vec(t, {0.5, 1.5, 2.5, -0.5, -2.5, -3.25, kInf});
    expectValues(eval(Opcode::Floor, {&ties}, t), {0, 1, 2, -1, -3, -4, kInf});
    expectValues(eval(Opcode::Round, {&ties}, t),
                 {0, 2, 2, -0.0, -2, -3, kInf});
    TestTensor logs = vec(t, {1, 0, -1, kInf});
    expectValues(eval(Opcode::Log, {&logs}, t), {0, -kInf, kNaN, kInf});
  }
}

/// The 16-bit types call the float libm functions and round the float
/// result once; f32 exp, tanh and erf are VectorMath's (checked against
/// exact values in VectorMathTest.cpp); f64 calls the double ones.
TEST(CpuElementwiseUnary, ComputesInFloatOrDoubleAsTheContractSays) {
  std::vector<double> in = {0.3, -1.7, 2.2, 5.5};
  using ArrayFn = void (*)(const float *, float *, int64_t);
  struct Case {
    Opcode op;
    float (*f)(float);
    double (*d)(double);
    ArrayFn f32 = nullptr; // When f32 does not call f.
  } cases[] = {
      {Opcode::Exp, std::exp, std::exp, expF32},
      {Opcode::Log, std::log, std::log},
      {Opcode::Tanh, std::tanh, std::tanh, tanhF32},
      {Opcode::Erf, std::erf, std::erf, erfF32},
      {Opcode::Sqrt, std::sqrt, std::sqrt},
      {Opcode::Cos, std::cos, std::cos},
      {Opcode::Sin, std::sin, std::sin},
      {Opcode::Rsqrt, [](float v) { return 1.0f / std::sqrt(v); },
       [](double v) { return 1.0 / std::sqrt(v); }},
  };
  for (DType t : kFloatTypes) {
    TestTensor x = vec(t, in);
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + opcodeName(c.op));
      TestTensor y = eval(c.op, {&x}, t);
      std::vector<double> expected;
      for (int64_t i = 0; i < x.size(); ++i) {
        TestTensor rounded(t, {1});
        float v = float(x.get(i));
        if (t == DType::F64) {
          rounded.set(0, c.d(x.get(i)));
        } else if (t == DType::F32 && c.f32) {
          float result;
          c.f32(&v, &result, 1);
          rounded.set(0, result);
        } else {
          rounded.set(0, c.f(v));
        }
        expected.push_back(rounded.get(0));
      }
      expectValues(y, expected);
    }
  }
  // The f64 path really is double: exp(1) differs from expf(1).
  TestTensor one = vec(DType::F64, {1});
  EXPECT_EQ(eval(Opcode::Exp, {&one}, DType::F64).get(0), std::exp(1.0));
  EXPECT_NE(std::exp(1.0), double(std::exp(1.0f)));
}

TEST(CpuElementwiseUnary, IntegerNegAndAbsWrapAround) {
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min();
  TestTensor x = vec(DType::I32, {5, -7, kMin32, 0});
  expectValues(eval(Opcode::Neg, {&x}, DType::I32), {-5, 7, kMin32, 0});
  expectValues(eval(Opcode::Abs, {&x}, DType::I32), {5, 7, kMin32, 0});

  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  TestTensor w = i64Vec({kMin64, -(int64_t(1) << 60) - 1});
  TestTensor neg = eval(Opcode::Neg, {&w}, DType::I64);
  EXPECT_EQ(neg.ref().as<int64_t>()[0], kMin64);
  EXPECT_EQ(neg.ref().as<int64_t>()[1], (int64_t(1) << 60) + 1);
}

TEST(CpuElementwiseUnary, FloatOnlyOpsRejectIntegersAndI1) {
  TestTensor i = vec(DType::I32, {1});
  TestTensor y(DType::I32, {1});
  Status s = run(Opcode::Exp, {&i}, y);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "exp: dtype i32 is not supported");
  TestTensor b = vec(DType::I1, {1});
  TestTensor c(DType::I1, {1});
  EXPECT_EQ(run(Opcode::Neg, {&b}, c).code(), StatusCode::kUnimplemented);
}

//===--- Binary -----------------------------------------------------------===//

TEST(CpuElementwiseBinary, ExactArithmeticInEveryFloatType) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = vec(t, {1.5, -2, 0.25, 3});
    TestTensor b = vec(t, {0.5, 4, -0.5, 0.75});
    expectValues(eval(Opcode::Add, {&a, &b}, t), {2, 2, -0.25, 3.75});
    expectValues(eval(Opcode::Sub, {&a, &b}, t), {1, -6, 0.75, 2.25});
    expectValues(eval(Opcode::Mul, {&a, &b}, t), {0.75, -8, -0.125, 2.25});
    expectValues(eval(Opcode::Div, {&a, &b}, t), {3, -0.5, -0.5, 4});
    expectValues(eval(Opcode::Max, {&a, &b}, t), {1.5, 4, 0.25, 3});
    expectValues(eval(Opcode::Min, {&a, &b}, t), {0.5, -2, -0.5, 0.75});
    TestTensor base = vec(t, {2, 9, 4, -2});
    TestTensor exponent = vec(t, {3, 0.5, -1, 2});
    expectValues(eval(Opcode::Pow, {&base, &exponent}, t), {8, 3, 0.25, 4});
  }
}

/// The float sum is exact here, so the only rounding is the store, which
/// must break ties to even.
TEST(CpuElementwiseBinary, SixteenBitResultsRoundToNearestEven) {
  TestTensor a = vec(DType::BF16, {1, 1 + 0x1p-7});
  TestTensor b = vec(DType::BF16, {0x1p-8, 0x1p-8});
  expectValues(eval(Opcode::Add, {&a, &b}, DType::BF16), {1, 1 + 0x1p-6});
  TestTensor c = vec(DType::F16, {1, 1 + 0x1p-10});
  TestTensor d = vec(DType::F16, {0x1p-11, 0x1p-11});
  expectValues(eval(Opcode::Add, {&c, &d}, DType::F16), {1, 1 + 0x1p-9});
}

TEST(CpuElementwiseBinary, MaxAndMinPropagateNaN) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = vec(t, {kNaN, 1, kNaN, 2});
    TestTensor b = vec(t, {1, kNaN, kNaN, -kInf});
    expectValues(eval(Opcode::Max, {&a, &b}, t), {kNaN, kNaN, kNaN, 2});
    expectValues(eval(Opcode::Min, {&a, &b}, t), {kNaN, kNaN, kNaN, -kInf});
  }
}

TEST(CpuElementwiseBinary, IntegerArithmeticWrapsAround) {
  constexpr double kMax32 = std::numeric_limits<int32_t>::max();
  constexpr double kMin32 = std::numeric_limits<int32_t>::min();
  TestTensor a = vec(DType::I32, {kMax32, kMin32, 65536, -3});
  TestTensor b = vec(DType::I32, {1, 1, 65536, 5});
  expectValues(eval(Opcode::Add, {&a, &b}, DType::I32),
               {kMin32, kMin32 + 1, 131072, 2});
  expectValues(eval(Opcode::Sub, {&a, &b}, DType::I32),
               {kMax32 - 1, kMax32, 0, -8});
  expectValues(eval(Opcode::Mul, {&a, &b}, DType::I32),
               {kMax32, kMin32, 0, -15});
  expectValues(eval(Opcode::Max, {&a, &b}, DType::I32), {kMax32, 1, 65536, 5});
  expectValues(eval(Opcode::Min, {&a, &b}, DType::I32), {1, kMin32, 65536, -3});

  constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();
  TestTensor c = i64Vec({kMax64, 3});
  TestTensor d = i64Vec({1, -4});
  TestTensor sum = eval(Opcode::Add, {&c, &d}, DType::I64);
  EXPECT_EQ(sum.ref().as<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(sum.ref().as<int64_t>()[1], -1);
}

TEST(CpuElementwiseBinary, IntegerDivisionTruncatesTowardZero) {
  for (DType t : {DType::I32, DType::I64}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = vec(t, {7, -7, 7, -7, 0, 6});
    TestTensor b = vec(t, {2, 2, -2, -2, 5, 3});
    expectValues(eval(Opcode::Div, {&a, &b}, t), {3, -3, -3, 3, 0, 2});
  }
}

TEST(CpuElementwiseBinary, IntegerDivisionByZeroNamesTheElement) {
  for (DType t : {DType::I32, DType::I64}) {
    TestTensor a = vec(t, {1, 2, 3});
    TestTensor b = vec(t, {1, 1, 0});
    TestTensor y(t, {3});
    Status s = run(Opcode::Div, {&a, &b}, y);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "div: element 2: integer division by zero");
  }
}

TEST(CpuElementwiseBinary, IntegerDivisionOverflowIsAnError) {
  TestTensor a = vec(DType::I32, {4, std::numeric_limits<int32_t>::min()});
  TestTensor b = vec(DType::I32, {-1, -1});
  TestTensor y(DType::I32, {2});
  Status s = run(Opcode::Div, {&a, &b}, y);
  EXPECT_EQ(s.message(),
            "div: element 1: integer overflow in -2147483648 / -1");
  TestTensor c = i64Vec({std::numeric_limits<int64_t>::min()});
  TestTensor d = i64Vec({-1});
  TestTensor z(DType::I64, {1});
  EXPECT_FALSE(run(Opcode::Div, {&c, &d}, z).ok());
}

/// fmod: exact, of x's sign, on every float type (16-bit ones computed in
/// float and rounded: the result is one of their values); NaN where y is 0
/// or x infinite, x where y is infinite.
TEST(CpuElementwiseBinary, RemainderIsAnExactFmod) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {5.5,  -5.5, 5.5, -5.5, 7, 0.75,
                           -0.0, 1e10, 3,   inf,  2};
  std::vector<double> y = {2, 2, -2, -2, 7, 0.25, 3, 3, 0, 1, inf};
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = vec(t, x), b = vec(t, y);
    std::vector<double> got = eval(Opcode::Remainder, {&a, &b}, t).values();
    std::vector<double> xs = a.values(), ys = b.values(); // as stored
    ASSERT_EQ(got.size(), x.size());
    for (size_t i = 0; i < got.size(); ++i) {
      double want = std::fmod(xs[i], ys[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
      } else {
        EXPECT_EQ(got[i], want) << i;
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << i;
      }
    }
  }
  TestTensor n = vec(DType::I64, {2});
  TestTensor z(DType::I64, {1});
  EXPECT_EQ(run(Opcode::Remainder, {&n, &n}, z).code(),
            StatusCode::kUnimplemented);
}

TEST(CpuElementwiseBinary, PowIsFloatOnly) {
  TestTensor a = vec(DType::I64, {2});
  TestTensor y(DType::I64, {1});
  EXPECT_EQ(run(Opcode::Pow, {&a, &a}, y).code(), StatusCode::kUnimplemented);
}

//===--- Compare and select -----------------------------------------------===//

std::vector<double> compare(const TestTensor &a, const TestTensor &b,
                            int64_t direction) {
  return eval(Opcode::Compare, {&a, &b}, DType::I1, {direction}).values();
}

TEST(CpuElementwiseCompare, FloatComparisonsAreOrdered) {
  for (DType t : kFloatTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = vec(t, {1, 2, 3, kNaN, 1, kNaN});
    TestTensor b = vec(t, {2, 2, 1, 1, kNaN, kNaN});
    using V = std::vector<double>;
    EXPECT_EQ(compare(a, b, 0), (V{0, 1, 0, 0, 0, 0})); // EQ
    EXPECT_EQ(compare(a, b, 1), (V{1, 0, 1, 1, 1, 1})); // NE
    EXPECT_EQ(compare(a, b, 2), (V{1, 0, 0, 0, 0, 0})); // LT
    EXPECT_EQ(compare(a, b, 3), (V{1, 1, 0, 0, 0, 0})); // LE
    EXPECT_EQ(compare(a, b, 4), (V{0, 0, 1, 0, 0, 0})); // GT
    EXPECT_EQ(compare(a, b, 5), (V{0, 1, 1, 0, 0, 0})); // GE
  }
}

TEST(CpuElementwiseCompare, IntegersAreSignedAndI1IsUnsigned) {
  using V = std::vector<double>;
  TestTensor a = vec(DType::I32, {-1, 5, 7});
  TestTensor b = vec(DType::I32, {0, 5, -7});
  EXPECT_EQ(compare(a, b, 2), (V{1, 0, 0}));
  EXPECT_EQ(compare(a, b, 5), (V{0, 1, 1}));
  // Values that a double would merge: 2^62 + 1 vs 2^62.
  TestTensor c =
      i64Vec({(int64_t(1) << 62) + 1, std::numeric_limits<int64_t>::min()});
  TestTensor d =
      i64Vec({int64_t(1) << 62, std::numeric_limits<int64_t>::max()});
  EXPECT_EQ(compare(c, d, 4), (V{1, 0}));
  TestTensor p = vec(DType::I1, {1, 0, 1, 0});
  TestTensor q = vec(DType::I1, {0, 1, 1, 0});
  EXPECT_EQ(compare(p, q, 4), (V{1, 0, 0, 0})); // true > false
  EXPECT_EQ(compare(p, q, 2), (V{0, 1, 0, 0}));
  EXPECT_EQ(compare(p, q, 0), (V{0, 0, 1, 1}));
}

TEST(CpuElementwiseCompare, UnknownDirectionIsAnError) {
  TestTensor a = vec(DType::F32, {1});
  TestTensor y(DType::I1, {1});
  Status s = run(Opcode::Compare, {&a, &a}, y, {6});
  EXPECT_EQ(s.message(), "compare: unknown comparison direction 6");
}

TEST(CpuElementwiseSelect, PicksPerElementInEveryDType) {
  TestTensor pred = vec(DType::I1, {1, 0, 0, 1});
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                  DType::I32}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = vec(t, {1, 2, 3, 4});
    TestTensor b = vec(t, {-1, -2, -3, -4});
    expectValues(eval(Opcode::Select, {&pred, &a, &b}, t), {1, -2, -3, 4});
  }
  TestTensor a = vec(DType::I1, {1, 1, 1, 1});
  TestTensor b = vec(DType::I1, {0, 0, 0, 0});
  expectValues(eval(Opcode::Select, {&pred, &a, &b}, DType::I1), {1, 0, 0, 1});
}

//===--- Convert ----------------------------------------------------------===//

std::vector<double> convert(const TestTensor &x, DType to) {
  return eval(Opcode::Convert, {&x}, to).values();
}

TEST(CpuElementwiseConvert, FloatToFloatRoundsToNearestEven) {
  using V = std::vector<double>;
  // Halfway cases tie to the even neighbour; just above rounds up.
  TestTensor x =
      vec(DType::F32, {1 + 0x1p-8, 1 + 3 * 0x1p-8, 1 + 0x1p-8 + 0x1p-20});
  EXPECT_EQ(convert(x, DType::BF16), (V{1, 1 + 0x1p-6, 1 + 0x1p-7}));
  TestTensor h = vec(DType::F32, {1 + 0x1p-11, 1 + 3 * 0x1p-11, 65520});
  EXPECT_EQ(convert(h, DType::F16), (V{1, 1 + 0x1p-9, kInf}));
  TestTensor d = vec(DType::F64, {1 + 0x1p-24, 1 + 3 * 0x1p-24, 1e300});
  EXPECT_EQ(convert(d, DType::F32), (V{1, 1 + 0x1p-22, kInf}));
  // Widening is exact, f16 -> bf16 rounds once.
  TestTensor w = vec(DType::BF16, {1 + 0x1p-7, -kInf});
  EXPECT_EQ(convert(w, DType::F64), (V{1 + 0x1p-7, -kInf}));
  TestTensor f = vec(DType::F16, {1 + 0x1p-8 + 0x1p-10});
  EXPECT_EQ(convert(f, DType::BF16), (V{1 + 0x1p-7}));
  EXPECT_TRUE(std::isnan(convert(vec(DType::F64, {kNaN}), DType::BF16)[0]));
}

/// Just above a 16-bit halfway point, by less than float can hold: rounding
/// to float first would land on the tie and then round down to even.
TEST(CpuElementwiseConvert, F64ToSixteenBitRoundsOnce) {
  TestTensor b = vec(DType::F64,
                     {1 + 0x1p-8 + 0x1p-40, -(1 + 0x1p-8 + 0x1p-40), 0x1p-140});
  EXPECT_EQ(convert(b, DType::BF16),
            (std::vector<double>{1 + 0x1p-7, -(1 + 0x1p-7), 0}));
  TestTensor h = vec(DType::F64, {1 + 0x1p-11 + 0x1p-40, 65519.99, 1e300});
  EXPECT_EQ(convert(h, DType::F16),
            (std::vector<double>{1 + 0x1p-10, 65504, kInf}));
}

/// 2^24 + 2^16 + 1 is just above the bf16 tie 2^24 + 2^16 (bf16 spacing
/// there is 2^17); via float (spacing 2) it would land on the tie.
TEST(CpuElementwiseConvert, IntToSixteenBitRoundsOnce) {
  double v = 0x1p24 + 0x1p16 + 1;
  TestTensor i = vec(DType::I32, {v, -v, 0x1p24 + 0x1p16});
  EXPECT_EQ(convert(i, DType::BF16),
            (std::vector<double>{0x1p24 + 0x1p17, -(0x1p24 + 0x1p17), 0x1p24}));
  // Above 2^53 as well, where double is not exact either.
  TestTensor w = i64Vec({(int64_t(1) << 60) + (int64_t(1) << 52) + 1,
                         std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(convert(w, DType::BF16),
            (std::vector<double>{0x1p60 + 0x1p53, -0x1p63}));
  // f16: spacing 2 at 2048 (ties to even), largest finite 65504.
  TestTensor h = vec(DType::I64, {2049, 2051, 65519, 65520, -70000});
  EXPECT_EQ(convert(h, DType::F16),
            (std::vector<double>{2048, 2052, 65504, kInf, -kInf}));
}

TEST(CpuElementwiseConvert, IntToFloatRoundsToNearestEven) {
  TestTensor i = vec(DType::I32, {16777217, 16777219, -16777217});
  EXPECT_EQ(convert(i, DType::F32),
            (std::vector<double>{16777216, 16777220, -16777216}));
  TestTensor w =
      i64Vec({(int64_t(1) << 53) + 1, std::numeric_limits<int64_t>::max()});
  EXPECT_EQ(convert(w, DType::F64), (std::vector<double>{0x1p53, 0x1p63}));
  EXPECT_EQ(convert(w, DType::F32), (std::vector<double>{0x1p53, 0x1p63}));
}

TEST(CpuElementwiseConvert, FloatToIntTruncatesTowardZero) {
  for (DType from : kFloatTypes)
    for (DType to : {DType::I32, DType::I64}) {
      SCOPED_TRACE(std::string(dtypeName(from)) + " -> " + dtypeName(to));
      TestTensor x = vec(from, {2.75, -2.75, -0.5, 0.5, -0.0, 100});
      EXPECT_EQ(convert(x, to), (std::vector<double>{2, -2, 0, 0, 0, 100}));
    }
}

TEST(CpuElementwiseConvert, FloatToIntSaturatesAndNaNGivesZero) {
  // The representable range converts exactly...
  TestTensor ok = vec(DType::F64, {-2147483648.9, 2147483647.9});
  EXPECT_EQ(convert(ok, DType::I32),
            (std::vector<double>{-2147483648.0, 2147483647.0}));
  TestTensor ok64 = vec(DType::F64, {-0x1p63});
  EXPECT_EQ(eval(Opcode::Convert, {&ok64}, DType::I64).ref().as<int64_t>()[0],
            std::numeric_limits<int64_t>::min());
  // ... and beyond it the nearest bound; NaN is 0 (T5 casts log(0)).
  for (DType from : kFloatTypes) {
    SCOPED_TRACE(dtypeName(from));
    TestTensor x = vec(from, {kInf, -kInf, kNaN, 3e9, -3e9});
    TestTensor y32 = eval(Opcode::Convert, {&x}, DType::I32);
    const int32_t *p32 = y32.ref().as<int32_t>();
    bool wide = from == DType::F64 || from == DType::F32;
    EXPECT_EQ(p32[0], std::numeric_limits<int32_t>::max());
    EXPECT_EQ(p32[1], std::numeric_limits<int32_t>::min());
    EXPECT_EQ(p32[2], 0);
    if (wide) { // 3e9 is inf in f16 and finite in bf16: both saturate.
      EXPECT_EQ(p32[3], std::numeric_limits<int32_t>::max());
      EXPECT_EQ(p32[4], std::numeric_limits<int32_t>::min());
    }
    TestTensor y64 = eval(Opcode::Convert, {&x}, DType::I64);
    const int64_t *p64 = y64.ref().as<int64_t>();
    EXPECT_EQ(p64[0], std::numeric_limits<int64_t>::max());
    EXPECT_EQ(p64[1], std::numeric_limits<int64_t>::min());
    EXPECT_EQ(p64[2], 0);
  }
  TestTensor edge = vec(DType::F64, {0x1p63, 2147483648.0});
  EXPECT_EQ(eval(Opcode::Convert, {&edge}, DType::I64).ref().as<int64_t>()[0],
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(eval(Opcode::Convert, {&edge}, DType::I32).ref().as<int32_t>()[1],
            std::numeric_limits<int32_t>::max());
}

TEST(CpuElementwiseConvert, ToI1TestsNonZeroAndFromI1GivesZeroOrOne) {
  using V = std::vector<double>;
  TestTensor f = vec(DType::F32, {0, -0.0, 0.5, kNaN, -kInf});
  EXPECT_EQ(convert(f, DType::I1), (V{0, 0, 1, 1, 1}));
  TestTensor i = vec(DType::I64, {0, 5, -1});
  EXPECT_EQ(convert(i, DType::I1), (V{0, 1, 1}));
  TestTensor b = vec(DType::I1, {1, 0});
  for (DType to : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                   DType::I32})
    EXPECT_EQ(convert(b, to), (V{1, 0})) << dtypeName(to);
}

TEST(CpuElementwiseConvert, IntToIntWrapsOrSignExtends) {
  TestTensor w = i64Vec({(int64_t(1) << 32) + 5, -1, int64_t(1) << 31});
  EXPECT_EQ(convert(w, DType::I32),
            (std::vector<double>{5, -1, -2147483648.0}));
  TestTensor i = vec(DType::I32, {-1, 2147483647});
  EXPECT_EQ(convert(i, DType::I64), (std::vector<double>{-1, 2147483647}));
}

//===--- Large tensors (the parallel paths) -------------------------------===//

constexpr int64_t kLarge = (int64_t(1) << 20) + 3; // Not a multiple of chunks.

TEST(CpuElementwiseLarge, AddMatchesASerialLoop) {
  TestTensor a(DType::F32, {kLarge}, randomValues(kLarge, 1));
  TestTensor b(DType::F32, {kLarge}, randomValues(kLarge, 2));
  TestTensor y = eval(Opcode::Add, {&a, &b}, DType::F32);
  const float *pa = a.ref().as<float>(), *pb = b.ref().as<float>();
  const float *py = y.ref().as<float>();
  for (int64_t i = 0; i < kLarge; ++i)
    ASSERT_EQ(py[i], pa[i] + pb[i]) << "element " << i;
}

TEST(CpuElementwiseLarge, ErrorsNameTheFirstFailingElement) {
  // Failures in two different chunks: the later chunk may fail first.
  TestTensor a(DType::I32, {kLarge}, std::vector<double>(kLarge, 1));
  TestTensor b(DType::I32, {kLarge}, std::vector<double>(kLarge, 1));
  b.set(900000, 0);
  b.set(300001, 0);
  TestTensor y(DType::I32, {kLarge});
  EXPECT_EQ(run(Opcode::Div, {&a, &b}, y).message(),
            "div: element 300001: integer division by zero");
}

} // namespace
} // namespace trainc::cpu
