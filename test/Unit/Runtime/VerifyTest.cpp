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

// f32 executables get f32's limits; one with a 16-bit tensor, or with a
// matmul that rounds its operands to TF32 (--precision tf32), the reduced
// ones.
TEST(Verify, LimitsFollowTheExecutablesPrecision) {
  auto tensor = [](DType dtype) {
    TensorInfo t;
    t.dtype = dtype;
    return t;
  };
  auto dot = [](OperandRounding rounding) {
    InstructionInfo inst;
    inst.op = Opcode::DotGeneral;
    inst.ints = {0, 1, 1, 0, int64_t(rounding)};
    return inst;
  };
  std::vector<TensorInfo> f32 = {tensor(DType::F32), tensor(DType::I64)};
  std::vector<TensorInfo> bf16 = {tensor(DType::F32), tensor(DType::BF16)};
  VerifyLimits exact = verifyLimits(f32, {dot(OperandRounding::Exact)});
  VerifyLimits tf32 = verifyLimits(f32, {dot(OperandRounding::Tf32)});
  VerifyLimits sixteen = verifyLimits(bf16, {dot(OperandRounding::Exact)});
  EXPECT_EQ(exact.scalars, 1e-4);
  EXPECT_EQ(exact.parameters, 2e-3);
  for (const VerifyLimits &reduced : {tf32, sixteen}) {
    EXPECT_EQ(reduced.scalars, 2e-2);
    EXPECT_EQ(reduced.state, 5e-2);
    EXPECT_EQ(reduced.parameters, 5e-2);
  }
}

TEST(Verify, KindsAreParametersAndEachOptimizerSlot) {
  // Two parameters with AdamW's moments (operands 2 and 3 of adamw_update),
  // an activation, a step counter nothing reads, and one moment read first
  // by another instruction (its kind is that reader's slot).
  auto tensor = [](TensorRole role) {
    TensorInfo t;
    t.role = role;
    return t;
  };
  std::vector<TensorInfo> tensors = {
      tensor(TensorRole::Parameter),  tensor(TensorRole::Parameter), // 0, 1
      tensor(TensorRole::State),      tensor(TensorRole::State),     // 2, 3
      tensor(TensorRole::State),      tensor(TensorRole::State),     // 4, 5
      tensor(TensorRole::Activation), tensor(TensorRole::State)};    // 6, 7
  auto adamw = [](uint32_t p, uint32_t m, uint32_t v) {
    InstructionInfo inst;
    inst.op = Opcode::AdamwUpdate;
    inst.operands = {p, 6, m, v, 6, 6, 6, 6};
    inst.results = {p, m, v};
    return inst;
  };
  InstructionInfo reader;
  reader.op = Opcode::Mul;
  reader.operands = {6, 4};
  std::vector<int> kinds =
      verifyKinds(tensors, {adamw(0, 2, 3), reader, adamw(1, 4, 5)});
  EXPECT_EQ(kinds[0], 0);
  EXPECT_EQ(kinds[1], 0);
  EXPECT_EQ(kinds[6], -1);       // not compared
  EXPECT_NE(kinds[2], kinds[3]); // first and second moments differ
  EXPECT_EQ(kinds[5], kinds[3]); // every second moment is one kind
  EXPECT_NE(kinds[4], kinds[2]); // read first as mul's operand 1
  for (int k : {kinds[2], kinds[3], kinds[4], kinds[7]})
    EXPECT_GT(k, 0);
  EXPECT_NE(kinds[7], kinds[2]); // nothing reads it: a kind of its own
  EXPECT_NE(kinds[7], kinds[3]);
  EXPECT_NE(kinds[7], kinds[4]);

  // One multi-tensor update of both parameters: each moment of the group
  // is its slot's kind, wherever it sits among the operands.
  InstructionInfo group;
  group.op = Opcode::AdamwUpdate;
  group.operands = {0, 1, 6, 6, 2, 4, 3, 5, 6, 6, 6, 6};
  group.results = {0, 1, 2, 4, 3, 5};
  kinds = verifyKinds(tensors, {group});
  EXPECT_EQ(kinds[2], kinds[4]); // first moments
  EXPECT_EQ(kinds[3], kinds[5]); // second moments
  EXPECT_NE(kinds[2], kinds[3]);
  for (int k : {kinds[2], kinds[3]})
    EXPECT_GT(k, 0);
}

} // namespace
} // namespace trainc
