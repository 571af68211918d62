//===- CpuDataMovementTest.cpp - broadcast, transpose, slice, gather... ---===//
//
// These ops only move elements, so every expectation is exact. Inputs hold
// distinct values (their flat index, or its parity for i1) so a misplaced
// element shows, and the tests run one dtype of each element size (8, 4, 2
// and 1 bytes) because the kernels work on bytes, not values.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace trainc::cpu {
namespace {

using testing::runKernel;
using testing::TestTensor;

constexpr DType kAllTypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16,
                               DType::I64, DType::I32, DType::I1};

/// Element i holds i (exact in every dtype for i < 256), or i % 2 for i1.
double valueAt(DType t, int64_t i) {
  return t == DType::I1 ? double(i % 2) : double(i % 256);
}

TestTensor numbered(DType t, std::vector<int64_t> dims) {
  TestTensor x(t, std::move(dims));
  for (int64_t i = 0; i < x.size(); ++i)
    x.set(i, valueAt(t, i));
  return x;
}

TestTensor run(Opcode op, const std::vector<const TestTensor *> &inputs,
               DType t, std::vector<int64_t> resultDims,
               const std::vector<int64_t> &ints) {
  TestTensor y(t, std::move(resultDims));
  Status s = runKernel(runDataMovement, op, inputs, {&y}, ints);
  EXPECT_TRUE(s.ok()) << s.toString();
  return y;
}

/// Row-major multi-index of flat position i.
std::vector<int64_t> unflatten(int64_t i, const std::vector<int64_t> &dims) {
  std::vector<int64_t> index(dims.size());
  for (int d = int(dims.size()) - 1; d >= 0; --d) {
    index[d] = i % dims[d];
    i /= dims[d];
  }
  return index;
}

int64_t flatten(const std::vector<int64_t> &index,
                const std::vector<int64_t> &dims) {
  int64_t i = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    i = i * dims[d] + index[d];
  return i;
}

TEST(CpuDataMovement, BroadcastInDimRepeatsSizeOneAndNewDims) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x = numbered(t, {2, 1, 3});
    // [2, 1, 3] -> [2, 4, 5, 3] with dims [0, 1, 3]: dim 1 repeats, dim 2 new.
    TestTensor y =
        run(Opcode::BroadcastInDim, {&x}, t, {2, 4, 5, 3}, {0, 1, 3});
    for (int64_t i = 0; i < y.size(); ++i) {
      std::vector<int64_t> idx = unflatten(i, y.dims());
      ASSERT_EQ(y.get(i), x.get(flatten({idx[0], 0, idx[3]}, x.dims())))
          << "element " << i;
    }
  }
  TestTensor scalar(DType::F32, {}, {7});
  EXPECT_EQ(
      run(Opcode::BroadcastInDim, {&scalar}, DType::F32, {2, 2}, {}).values(),
      (std::vector<double>{7, 7, 7, 7}));
  TestTensor row(DType::I32, {3}, {1, 2, 3});
  EXPECT_EQ(
      run(Opcode::BroadcastInDim, {&row}, DType::I32, {2, 3}, {1}).values(),
      (std::vector<double>{1, 2, 3, 1, 2, 3}));
}

TEST(CpuDataMovement, ReshapeKeepsRowMajorOrder) {
  for (DType t : kAllTypes) {
    TestTensor x = numbered(t, {2, 3});
    EXPECT_EQ(run(Opcode::Reshape, {&x}, t, {3, 1, 2}, {}).values(), x.values())
        << dtypeName(t);
  }
}

TEST(CpuDataMovement, TransposeMatchesTheDefinition) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor x = numbered(t, {2, 3, 4});
    std::vector<int64_t> perm = {2, 0, 1};
    TestTensor y = run(Opcode::Transpose, {&x}, t, {4, 2, 3}, perm);
    for (int64_t i = 0; i < y.size(); ++i) {
      std::vector<int64_t> idx = unflatten(i, y.dims()), from(3);
      for (int d = 0; d < 3; ++d)
        from[perm[d]] = idx[d];
      ASSERT_EQ(y.get(i), x.get(flatten(from, x.dims()))) << "element " << i;
    }
  }
  TestTensor m(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(run(Opcode::Transpose, {&m}, DType::F32, {3, 2}, {1, 0}).values(),
            (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

/// Every permutation of a shape whose dims are not multiples of the
/// kernel's 32-element tiles, with distinct values (i32: the flat index).
TEST(CpuDataMovement, TransposeEveryPermutationWithPartialTiles) {
  std::vector<int64_t> dims = {3, 37, 45};
  TestTensor x(DType::I32, dims);
  for (int64_t i = 0; i < x.size(); ++i)
    x.ref().as<int32_t>()[i] = int32_t(i);
  std::vector<int64_t> perm = {0, 1, 2};
  do {
    SCOPED_TRACE(::testing::PrintToString(perm));
    std::vector<int64_t> shape = {dims[perm[0]], dims[perm[1]], dims[perm[2]]};
    TestTensor y = run(Opcode::Transpose, {&x}, DType::I32, shape, perm);
    for (int64_t i = 0; i < y.size(); ++i) {
      std::vector<int64_t> idx = unflatten(i, shape), from(3);
      for (int d = 0; d < 3; ++d)
        from[perm[d]] = idx[d];
      ASSERT_EQ(y.ref().as<int32_t>()[i], flatten(from, dims)) << i;
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(CpuDataMovement, SliceTakesStridedWindows) {
  TestTensor x = numbered(DType::F32, {4, 8});
  // start [0, 2], limit [4, 8], strides [1, 2]: columns 2, 4, 6.
  TestTensor y =
      run(Opcode::Slice, {&x}, DType::F32, {4, 3}, {0, 2, 4, 8, 1, 2});
  EXPECT_EQ(y.values(),
            (std::vector<double>{2, 4, 6, 10, 12, 14, 18, 20, 22, 26, 28, 30}));
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor z = numbered(t, {5, 4, 6});
    // start [1, 0, 5], limit [5, 4, 6], strides [3, 1, 1] -> [2, 4, 1].
    TestTensor s =
        run(Opcode::Slice, {&z}, t, {2, 4, 1}, {1, 0, 5, 5, 4, 6, 3, 1, 1});
    for (int64_t i = 0; i < s.size(); ++i) {
      std::vector<int64_t> idx = unflatten(i, s.dims());
      ASSERT_EQ(s.get(i), z.get(flatten({1 + 3 * idx[0], idx[1], 5}, z.dims())))
          << "element " << i;
    }
  }
}

TEST(CpuDataMovement, ConcatenatePlacesOperandsInOrder) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = numbered(t, {2, 1, 2});
    TestTensor b = numbered(t, {2, 3, 2});
    TestTensor c = numbered(t, {2, 2, 2});
    TestTensor y = run(Opcode::Concatenate, {&a, &b, &c}, t, {2, 6, 2}, {1});
    for (int64_t i = 0; i < y.size(); ++i) {
      std::vector<int64_t> idx = unflatten(i, y.dims());
      const TestTensor &src = idx[1] < 1 ? a : idx[1] < 4 ? b : c;
      int64_t row = idx[1] < 1 ? idx[1] : idx[1] < 4 ? idx[1] - 1 : idx[1] - 4;
      ASSERT_EQ(y.get(i), src.get(flatten({idx[0], row, idx[2]}, src.dims())))
          << "element " << i;
    }
  }
  TestTensor p(DType::I64, {1, 2}, {1, 2});
  TestTensor q(DType::I64, {2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(
      run(Opcode::Concatenate, {&p, &q}, DType::I64, {3, 2}, {0}).values(),
      (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

// Pieces of a few elements per row (a strided slice's gradient interleaves
// values with zeros; a padded row is one element, the row, one element):
// the kernel copies them element by element rather than by memcpy.
TEST(CpuDataMovement, ConcatenateOfShortPiecesInterleaves) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor a = numbered(t, {3, 5, 1});
    TestTensor z(t, {3, 5, 1});
    TestTensor y = run(Opcode::Concatenate, {&a, &z}, t, {3, 5, 2}, {2});
    for (int64_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y.get(i), i % 2 ? 0.0 : a.get(i / 2)) << "element " << i;
    // Uneven pieces: 1, 2 and 1 elements of each row.
    TestTensor p = numbered(t, {15, 1}), q = numbered(t, {15, 2});
    TestTensor r(t, {15, 1});
    TestTensor v = run(Opcode::Concatenate, {&p, &q, &r}, t, {15, 4}, {1});
    for (int64_t row = 0; row < 15; ++row) {
      ASSERT_EQ(v.get(4 * row), p.get(row));
      ASSERT_EQ(v.get(4 * row + 1), q.get(2 * row));
      ASSERT_EQ(v.get(4 * row + 2), q.get(2 * row + 1));
      ASSERT_EQ(v.get(4 * row + 3), 0.0);
    }
  }
}

TEST(CpuDataMovement, GatherLooksUpRowsAndWrapsNegativeIndices) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor table = numbered(t, {4, 3});
    TestTensor indices(DType::I64, {2, 2}, {3, -1, 0, -4});
    TestTensor y = run(Opcode::Gather, {&table, &indices}, t, {2, 2, 3}, {0});
    std::vector<double> expected;
    for (int64_t row : {3, 3, 0, 0})
      for (int64_t col = 0; col < 3; ++col)
        expected.push_back(valueAt(t, row * 3 + col));
    EXPECT_EQ(y.values(), expected);
  }
  // Axis 1 with i32 indices: [2, 3, 2] -> [2, 2, 2].
  TestTensor table = numbered(DType::F32, {2, 3, 2});
  TestTensor indices(DType::I32, {2}, {2, -3});
  EXPECT_EQ(run(Opcode::Gather, {&table, &indices}, DType::F32, {2, 2, 2}, {1})
                .values(),
            (std::vector<double>{4, 5, 0, 1, 10, 11, 6, 7}));
}

TEST(CpuDataMovement, GatherOutOfRangeNamesTheIndexAndPosition) {
  TestTensor table = numbered(DType::F32, {4, 3});
  struct Case {
    double index;
    const char *message;
  } cases[] = {
      {4, "gather: index 4 at position [1, 0] of the indices is out of range "
          "for axis 0 of size 4 (valid: [-4, 4))"},
      {-5, "gather: index -5 at position [1, 0] of the indices is out of "
           "range for axis 0 of size 4 (valid: [-4, 4))"},
  };
  for (const Case &c : cases) {
    TestTensor indices(DType::I64, {2, 2}, {0, 1, c.index, 2});
    TestTensor y(DType::F32, {2, 2, 3});
    Status s = runKernel(runDataMovement, Opcode::Gather, {&table, &indices},
                         {&y}, {0});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.message);
  }
  TestTensor floats(DType::F32, {1}, {0});
  TestTensor y(DType::F32, {1, 3});
  EXPECT_EQ(
      runKernel(runDataMovement, Opcode::Gather, {&table, &floats}, {&y}, {0})
          .code(),
      StatusCode::kUnimplemented);
}

TEST(CpuDataMovement, IotaCountsAlongItsDim) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                  DType::I32}) {
    SCOPED_TRACE(dtypeName(t));
    TestTensor y0 = run(Opcode::Iota, {}, t, {2, 3}, {0});
    EXPECT_EQ(y0.values(), (std::vector<double>{0, 0, 0, 1, 1, 1}));
    TestTensor y1 = run(Opcode::Iota, {}, t, {2, 3}, {1});
    EXPECT_EQ(y1.values(), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  }
  // Past 2^11 f16 rounds to even: 2049 -> 2048, 2051 -> 2052.
  TestTensor h = run(Opcode::Iota, {}, DType::F16, {2052}, {0});
  EXPECT_EQ(h.get(2049), 2048);
  EXPECT_EQ(h.get(2051), 2052);
  TestTensor b(DType::I1, {2});
  EXPECT_EQ(runKernel(runDataMovement, Opcode::Iota, {}, {&b}, {0}).code(),
            StatusCode::kUnimplemented);
}

/// Big enough to split over threads; checked against the definitions.
TEST(CpuDataMovement, LargeCopiesMatchTheDefinitions) {
  std::vector<int64_t> dims = {1000, 1031};
  TestTensor x(DType::I32, dims);
  for (int64_t i = 0; i < x.size(); ++i)
    x.ref().as<int32_t>()[i] = int32_t(i);
  const int32_t *in = x.ref().as<int32_t>();

  TestTensor t = run(Opcode::Transpose, {&x}, DType::I32, {1031, 1000}, {1, 0});
  const int32_t *tp = t.ref().as<int32_t>();
  for (int64_t i = 0; i < 1031; ++i)
    for (int64_t j = 0; j < 1000; ++j)
      ASSERT_EQ(tp[i * 1000 + j], in[j * 1031 + i]);

  TestTensor b =
      run(Opcode::BroadcastInDim, {&x}, DType::I32, {2, 1000, 1031}, {1, 2});
  const int32_t *bp = b.ref().as<int32_t>();
  for (int64_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(bp[i], in[i % x.size()]);

  TestTensor c =
      run(Opcode::Concatenate, {&x, &x}, DType::I32, {1000, 2062}, {1});
  const int32_t *cp = c.ref().as<int32_t>();
  for (int64_t i = 0; i < 1000; ++i)
    for (int64_t j = 0; j < 2062; ++j)
      ASSERT_EQ(cp[i * 2062 + j], in[i * 1031 + j % 1031]);

  TestTensor r = run(Opcode::Reshape, {&x}, DType::I32, {1031000}, {});
  EXPECT_EQ(std::memcmp(r.ref().data, in, 4 * r.size()), 0);
}

} // namespace
} // namespace trainc::cpu
