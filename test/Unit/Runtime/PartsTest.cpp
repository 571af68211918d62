//===- PartsTest.cpp - Tensors split along one dimension into parts -------===//

#include "exec/Parts.h"

#include <gtest/gtest.h>

#include <cstring>

namespace trainc {
namespace {

/// int32 elements 0, 1, 2, ... of `shape`.
std::vector<char> iota(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<char> bytes(size_t(n) * 4);
  for (int32_t i = 0; i < int32_t(n); ++i)
    std::memcpy(bytes.data() + size_t(i) * 4, &i, 4);
  return bytes;
}

std::vector<int32_t> ints(const std::vector<char> &bytes) {
  std::vector<int32_t> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// Tensor parallelism's row-parallel weights: [2, 4] split along dimension
// 1 into 2 parts of [2, 2].
TEST(Parts, SplitAlongInnerDimension) {
  SplitLayout layout{{2, 4}, /*dim=*/1, /*parts=*/2, /*elementBytes=*/4};
  std::vector<char> whole = iota({2, 4});
  EXPECT_EQ(layout.partBytes(), 16u);
  EXPECT_EQ(ints(partOf(layout, whole.data(), 0)),
            (std::vector<int32_t>{0, 1, 4, 5}));
  EXPECT_EQ(ints(partOf(layout, whole.data(), 1)),
            (std::vector<int32_t>{2, 3, 6, 7}));
  std::vector<char> parts = partOf(layout, whole.data(), 0);
  std::vector<char> second = partOf(layout, whole.data(), 1);
  parts.insert(parts.end(), second.begin(), second.end());
  EXPECT_EQ(wholeOf(layout, parts.data()), whole);
}

// ZeRO's parts: [5, 2] along dimension 0 into 3 parts of 2 rows, the last
// one padded with a zero row.
TEST(Parts, PaddedPartsAlongDimensionZero) {
  SplitLayout layout{{5, 2}, /*dim=*/0, /*parts=*/3, /*elementBytes=*/4};
  std::vector<char> whole = iota({5, 2});
  EXPECT_EQ(layout.partRows(), 2);
  EXPECT_EQ(ints(partOf(layout, whole.data(), 2)),
            (std::vector<int32_t>{8, 9, 0, 0}));
  std::vector<char> parts;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<char> part = partOf(layout, whole.data(), i);
    parts.insert(parts.end(), part.begin(), part.end());
  }
  EXPECT_EQ(wholeOf(layout, parts.data()), whole);
}

// A middle dimension of a rank-3 tensor: [2, 6, 3] into 3 parts along 1.
TEST(Parts, MiddleDimensionRoundTrips) {
  SplitLayout layout{{2, 6, 3}, /*dim=*/1, /*parts=*/3, /*elementBytes=*/4};
  std::vector<char> whole = iota({2, 6, 3});
  EXPECT_EQ(ints(partOf(layout, whole.data(), 1)),
            (std::vector<int32_t>{6, 7, 8, 9, 10, 11, 24, 25, 26, 27, 28, 29}));
  std::vector<char> parts;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<char> part = partOf(layout, whole.data(), i);
    parts.insert(parts.end(), part.begin(), part.end());
  }
  EXPECT_EQ(wholeOf(layout, parts.data()), whole);
}

} // namespace
} // namespace trainc
