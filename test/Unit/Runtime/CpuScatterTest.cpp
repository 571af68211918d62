//===- CpuScatterTest.cpp - scatter_add, the transpose of gather ----------===//
//
// Exact expected values: every sum here has at most three terms of small
// integers and halves, exact in every float type.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>

namespace trainc::cpu::testing {
namespace {

TEST(CpuScatter, DuplicateIndicesAccumulateAndNegativeIndicesWrap) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    SCOPED_TRACE(dtypeName(t));
    // Rows 2, 0, 2 (as -2 of 4), 3 of a [4, 2] table receive [4, 2] updates.
    TestTensor updates(t, {4, 2}, {1, 2, 3, 4, 0.5, 0.5, 7, 8});
    TestTensor indices(DType::I64, {4}, {2, 0, -2, 3});
    TestTensor out(t, {4, 2});
    out.set(0, 99); // The kernel must start from zero.
    Status s = runKernel(runScatterAdd, Opcode::ScatterAdd,
                         {&updates, &indices}, {&out}, {0});
    ASSERT_TRUE(s.ok()) << s.toString();
    EXPECT_EQ(out.values(), (std::vector<double>{3, 4, 0, 0, 1.5, 2.5, 7, 8}));
  }
}

TEST(CpuScatter, AlongAnInnerAxisWithI32Indices) {
  // Result [2, 3], axis 1, indices [2] -> updates [2, 2].
  TestTensor updates(DType::F32, {2, 2}, {1, 2, 3, 4});
  TestTensor indices(DType::I32, {2}, {1, 1});
  TestTensor out(DType::F32, {2, 3});
  ASSERT_TRUE(runKernel(runScatterAdd, Opcode::ScatterAdd, {&updates, &indices},
                        {&out}, {1})
                  .ok());
  EXPECT_EQ(out.values(), (std::vector<double>{0, 3, 0, 0, 7, 0}));
}

/// Integers add as the type's own two's-complement addition: i32 sums
/// wrap at 2^32 (2^31 - 1 + 2 is -2^31 + 1), i64 at 2^64.
TEST(CpuScatter, IntegersWrapAround) {
  TestTensor updates(DType::I32, {4}, {INT32_MAX, 2, -7, INT32_MIN});
  TestTensor indices(DType::I64, {4}, {1, 1, 0, 0});
  TestTensor out(DType::I32, {3});
  ASSERT_TRUE(runKernel(runScatterAdd, Opcode::ScatterAdd, {&updates, &indices},
                        {&out}, {0})
                  .ok());
  const int32_t *sums = out.ref().as<int32_t>();
  EXPECT_EQ(sums[0], INT32_MAX - 6); // -7 + -2^31, wrapped
  EXPECT_EQ(sums[1], INT32_MIN + 1);
  EXPECT_EQ(sums[2], 0);

  TestTensor updates64(DType::I64, {3}, {0, 0, 5});
  updates64.ref().as<int64_t>()[0] = INT64_MAX;
  updates64.ref().as<int64_t>()[1] = 1;
  TestTensor indices32(DType::I32, {3}, {0, 0, -1});
  TestTensor out64(DType::I64, {2});
  ASSERT_TRUE(runKernel(runScatterAdd, Opcode::ScatterAdd,
                        {&updates64, &indices32}, {&out64}, {0})
                  .ok());
  EXPECT_EQ(out64.ref().as<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(out64.ref().as<int64_t>()[1], 5);
}

TEST(CpuScatter, OutOfRangeIndexIsAnError) {
  TestTensor updates(DType::F32, {2, 2}, {1, 2, 3, 4});
  TestTensor indices(DType::I64, {2}, {0, 4});
  TestTensor out(DType::F32, {4, 2});
  Status s = runKernel(runScatterAdd, Opcode::ScatterAdd, {&updates, &indices},
                       {&out}, {0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "scatter_add: index 4 at position 1 is out of range "
                         "for axis 0 of size 4");
}

} // namespace
} // namespace trainc::cpu::testing
