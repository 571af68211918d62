//===- CpuBitwiseTest.cpp - Bitwise ops on integers, and bitcast ----------===//
//
// The expected values come from the ops' definitions written bit by bit
// (a shift as repeated doubling or halving of the value, the counts by
// testing each bit), not from math/Bits.h's formulas, which the kernel
// uses; every integer dtype, shifts at and beyond the width and negative
// ones, in place and out of place.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

namespace trainc::cpu::testing {
namespace {

/// The w-bit pattern of v (the low w bits of its two's complement).
template <typename T> uint64_t bitsOf(T v) {
  using U = std::make_unsigned_t<T>;
  return uint64_t(U(v));
}

/// The definition of each op on w-bit patterns a and b (y read unsigned).
uint64_t reference(Opcode op, uint64_t a, uint64_t b, int w) {
  uint64_t top = uint64_t(1) << (w - 1);
  uint64_t mask = top | (top - 1);
  switch (op) {
  case Opcode::And:
    return a & b;
  case Opcode::Or:
    return a | b;
  case Opcode::Xor:
    return a ^ b;
  case Opcode::Not:
    return ~a & mask;
  case Opcode::ShiftLeft: {
    uint64_t r = a;
    for (uint64_t k = 0; k < b && k < uint64_t(w); ++k)
      r = (r * 2) & mask; // doubling, modulo 2^w
    return r;
  }
  case Opcode::ShiftRightLogical:
  case Opcode::ShiftRightArithmetic: {
    bool fill = op == Opcode::ShiftRightArithmetic && (a & top);
    uint64_t r = a;
    for (uint64_t k = 0; k < b && k < uint64_t(w); ++k)
      r = r / 2 + (fill ? top : 0); // halving, the top bit refilled
    return r;
  }
  case Opcode::PopCount: {
    uint64_t n = 0;
    for (int i = 0; i < w; ++i)
      n += (a >> i) & 1;
    return n;
  }
  case Opcode::CountLeadingZeros: {
    int i = w - 1;
    while (i >= 0 && !((a >> i) & 1))
      --i;
    return uint64_t(w - 1 - i);
  }
  default:
    ADD_FAILURE() << "not a bitwise opcode";
    return 0;
  }
}

bool isBinary(Opcode op) {
  return op != Opcode::Not && op != Opcode::PopCount &&
         op != Opcode::CountLeadingZeros;
}

constexpr Opcode kOps[] = {Opcode::And,
                           Opcode::Or,
                           Opcode::Xor,
                           Opcode::Not,
                           Opcode::ShiftLeft,
                           Opcode::ShiftRightLogical,
                           Opcode::ShiftRightArithmetic,
                           Opcode::PopCount,
                           Opcode::CountLeadingZeros};

/// Every op on T against reference(): edge values paired with shift
/// amounts 0, 1, w - 1, w, w + 1, 100, all ones (a negative shift of a
/// signed type) and random ones, then random pairs; each op run out of
/// place and in place (the result over the first operand).
template <typename T> void checkType(DType dtype) {
  constexpr int w = int(sizeof(T) * 8);
  using L = std::numeric_limits<T>;
  std::vector<T> values = {T(0),
                           T(1),
                           T(2),
                           T(-1),
                           L::min(),
                           L::max(),
                           T(L::min() + 1),
                           T(0x55),
                           T(0x80),
                           T(L::max() / 3)};
  std::vector<T> shifts = {T(0),     T(1),   T(w - 1), T(w),
                           T(w + 1), T(100), T(-1),    T(w / 2)};
  std::vector<T> a, b;
  for (T v : values)
    for (T s : shifts)
      a.push_back(v), b.push_back(s);
  std::mt19937_64 rng(uint64_t(w) * 7919u + L::is_signed);
  for (int i = 0; i < 64; ++i) {
    a.push_back(T(rng()));
    b.push_back(i % 2 ? T(rng() % (2 * w)) : T(rng()));
  }
  int64_t n = int64_t(a.size());
  for (Opcode op : kOps) {
    SCOPED_TRACE(std::string(opcodeName(op)) + " on " + dtypeName(dtype));
    for (bool inPlace : {false, true}) {
      TestTensor x(dtype, {n}), y(dtype, {n}), out(dtype, {n});
      std::memcpy(x.ref().data, a.data(), a.size() * sizeof(T));
      std::memcpy(y.ref().data, b.data(), b.size() * sizeof(T));
      std::vector<const TestTensor *> inputs = {&x};
      if (isBinary(op))
        inputs.push_back(&y);
      TestTensor &result = inPlace ? x : out;
      Status s = runKernel(runBitwise, op, inputs, {&result}, {});
      ASSERT_TRUE(s.ok()) << s.toString();
      const T *got = result.ref().as<T>();
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(bitsOf(got[i]), reference(op, bitsOf(a[i]), bitsOf(b[i]), w))
            << "x = " << +a[i] << ", y = " << +b[i]
            << (inPlace ? " (in place)" : "");
    }
  }
}

TEST(CpuBitwise, EveryOpOnEveryIntegerTypeByItsDefinition) {
  checkType<int8_t>(DType::I8);
  checkType<int16_t>(DType::I16);
  checkType<int32_t>(DType::I32);
  checkType<int64_t>(DType::I64);
  checkType<uint8_t>(DType::U8);
  checkType<uint16_t>(DType::U16);
  checkType<uint32_t>(DType::U32);
  checkType<uint64_t>(DType::U64);
}

TEST(CpuBitwise, JaxUniformBitsThroughBitcast) {
  // jax.random.uniform's floats: (bits >> 9) | 0x3f800000 read as f32 is
  // 1 + bits' top 23 bits / 2^23, in [1, 2).
  TestTensor bits(DType::U32, {3}), one(DType::U32, {3}), nine(DType::U32, {3});
  uint32_t *b = bits.ref().as<uint32_t>();
  b[0] = 0, b[1] = 0xffffffffu, b[2] = 0x80000000u;
  for (int i = 0; i < 3; ++i)
    one.ref().as<uint32_t>()[i] = 0x3f800000u, nine.ref().as<uint32_t>()[i] = 9;
  TestTensor shifted(DType::U32, {3}), mantissa(DType::U32, {3}),
      floats(DType::F32, {3});
  ASSERT_TRUE(runKernel(runBitwise, Opcode::ShiftRightLogical, {&bits, &nine},
                        {&shifted}, {})
                  .ok());
  ASSERT_TRUE(
      runKernel(runBitwise, Opcode::Or, {&shifted, &one}, {&mantissa}, {})
          .ok());
  ASSERT_TRUE(
      runKernel(runBitwise, Opcode::Bitcast, {&mantissa}, {&floats}, {}).ok());
  EXPECT_EQ(floats.get(0), 1.0);
  EXPECT_EQ(floats.get(1), 2.0 - std::ldexp(1.0, -23));
  EXPECT_EQ(floats.get(2), 1.5);
}

TEST(CpuBitwise, BitcastKeepsEveryBitAndRefusesAnotherSize) {
  // Signed zero, a NaN payload and a subnormal survive f32 -> i32 -> f32
  // (a convert would change each).
  uint32_t patterns[] = {0x80000000u, 0x7fc01234u, 0x00000001u, 0xff800000u};
  TestTensor f(DType::F32, {4}), i(DType::I32, {4}), back(DType::F32, {4});
  std::memcpy(f.ref().data, patterns, sizeof(patterns));
  ASSERT_TRUE(runKernel(runBitwise, Opcode::Bitcast, {&f}, {&i}, {}).ok());
  ASSERT_TRUE(runKernel(runBitwise, Opcode::Bitcast, {&i}, {&back}, {}).ok());
  EXPECT_EQ(std::memcmp(i.ref().data, patterns, sizeof(patterns)), 0);
  EXPECT_EQ(std::memcmp(back.ref().data, patterns, sizeof(patterns)), 0);

  TestTensor wide(DType::I64, {4});
  Status s = runKernel(runBitwise, Opcode::Bitcast, {&f}, {&wide}, {});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.toString().find("element sizes differ"), std::string::npos)
      << s.toString();
}

TEST(CpuBitwise, FloatsAreRefused) {
  TestTensor x(DType::F32, {2}, {1, 2}), out(DType::F32, {2});
  Status s = runKernel(runBitwise, Opcode::Xor, {&x, &x}, {&out}, {});
  EXPECT_FALSE(s.ok());
}

} // namespace
} // namespace trainc::cpu::testing
