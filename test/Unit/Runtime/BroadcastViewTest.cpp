//===- BroadcastViewTest.cpp - How a fused loop reads a broadcast operand -===//
//
// math/BroadcastView.h, which the CPU and CUDA fused loops both read
// broadcast operands through, against its definition (broadcast_in_dim's
// element for each result index):
// - the merged views of the common cases (a full operand, a 0-d one, a
//   per-channel scale of NCHW, dimensions of size 1);
// - on random shapes, spans and size-1 dimensions, the cursor's offset at
//   every index, reached by start() at random places and advance() by
//   random runs, equals the definition's;
// - the errors: spans that do not match the operand's rank or lie past
//   the results', a dimension neither 1 nor the results', and a view of
//   more than kFusedMaxViewDims dimensions.
//
//===----------------------------------------------------------------------===//

#include "math/BroadcastView.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace trainc::math {
namespace {

/// The operand offset at result index i by the definition.
int64_t definedOffset(const std::vector<int64_t> &result,
                      const std::vector<int64_t> &operand,
                      const std::vector<int> &spans, int64_t i) {
  std::vector<int64_t> index(result.size());
  for (size_t d = result.size(); d-- > 0;) {
    index[d] = i % result[d];
    i /= result[d];
  }
  int64_t offset = 0;
  for (size_t k = 0; k < operand.size(); ++k)
    offset =
        offset * operand[k] + (operand[k] == 1 ? 0 : index[size_t(spans[k])]);
  return offset;
}

uint64_t maskOf(const std::vector<int> &spans) {
  uint64_t mask = 0;
  for (int d : spans)
    mask |= uint64_t(1) << d;
  return mask;
}

BroadcastView viewOf(const std::vector<int64_t> &result,
                     const std::vector<int64_t> &operand,
                     const std::vector<int> &spans, std::string *error) {
  BroadcastView view;
  *error = makeBroadcastView(result.data(), int(result.size()), operand.data(),
                             int(operand.size()), maskOf(spans), view);
  return view;
}

TEST(BroadcastView, MergesWhatItReadsAlike) {
  std::string error;
  BroadcastView full =
      viewOf({16, 32, 8, 8}, {16, 32, 8, 8}, {0, 1, 2, 3}, &error);
  ASSERT_EQ(error, "");
  EXPECT_TRUE(full.contiguous());
  EXPECT_EQ(full.rank, 1);
  EXPECT_EQ(full.size[0], 16 * 32 * 8 * 8);

  BroadcastView scalar = viewOf({16, 32, 8, 8}, {}, {}, &error);
  ASSERT_EQ(error, "");
  EXPECT_TRUE(scalar.constant());
  EXPECT_EQ(scalar.rank, 1); // All of it, stride 0.

  BroadcastView channel = viewOf({16, 32, 8, 8}, {32}, {1}, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(channel.rank, 3);
  EXPECT_EQ(channel.size[0], 16);
  EXPECT_EQ(channel.stride[0], 0);
  EXPECT_EQ(channel.size[1], 32);
  EXPECT_EQ(channel.stride[1], 1);
  EXPECT_EQ(channel.size[2], 64);
  EXPECT_EQ(channel.stride[2], 0);
  EXPECT_FALSE(channel.contiguous() || channel.constant());

  // [16, 256, 1, 1] over [16, 256, 2, 2]: rows of 4 of one value.
  BroadcastView ones =
      viewOf({16, 256, 2, 2}, {16, 256, 1, 1}, {0, 1, 2, 3}, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(ones.rank, 2);
  EXPECT_EQ(ones.size[0], 16 * 256);
  EXPECT_EQ(ones.stride[0], 1);
  EXPECT_EQ(ones.size[1], 4);
  EXPECT_EQ(ones.stride[1], 0);

  // Results of one element: no dimensions left.
  BroadcastView one = viewOf({1, 1}, {1}, {1}, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(one.rank, 0);
  EXPECT_TRUE(one.contiguous() && one.constant());
}

TEST(BroadcastView, CursorFollowsTheDefinition) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int views = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int64_t> result(size_t(pick(0, 5)));
    for (int64_t &d : result)
      d = pick(1, 5);
    std::vector<int> spans;
    std::vector<int64_t> operand;
    for (int d = 0; d < int(result.size()); ++d)
      if (pick(0, 1)) {
        spans.push_back(d);
        operand.push_back(pick(0, 3) == 0 ? 1 : result[size_t(d)]);
      }
    std::string error;
    BroadcastView view = viewOf(result, operand, spans, &error);
    if (!error.empty()) {
      // Only the dimension limit may refuse these.
      EXPECT_NE(error.find("more than"), std::string::npos) << error;
      continue;
    }
    ++views;
    // The kernels fill or copy runs of the innermost dimension.
    if (view.rank > 0) {
      ASSERT_TRUE(view.stride[view.rank - 1] == 0 ||
                  view.stride[view.rank - 1] == 1);
    }
    int64_t n = 1;
    for (int64_t d : result)
      n *= d;
    // Walk from a random start in random runs, restarting now and then.
    BroadcastCursor cursor;
    int64_t i = pick(0, int(n) - 1);
    cursor.start(view, i);
    while (i < n) {
      ASSERT_EQ(cursor.offset, definedOffset(result, operand, spans, i))
          << "trial " << trial << " index " << i;
      int64_t run = cursor.run(view);
      ASSERT_GE(run, 1);
      int64_t m = std::min<int64_t>(run, pick(1, 3));
      // Inside the run the offset moves by the innermost stride.
      for (int64_t j = 1; j < m && i + j < n; ++j)
        ASSERT_EQ(cursor.offset + j * view.stride[view.rank - 1],
                  definedOffset(result, operand, spans, i + j));
      cursor.advance(view, m);
      i += m;
      if (pick(0, 9) == 0 && i < n)
        cursor.start(view, i);
    }
  }
  EXPECT_GT(views, 300);
}

TEST(BroadcastView, RefusesWhatDoesNotFit) {
  std::string error;
  viewOf({4, 6}, {6}, {0, 1}, &error);
  EXPECT_NE(error.find("has 1 dimensions but spans 2"), std::string::npos)
      << error;
  viewOf({4, 6}, {5}, {1}, &error);
  EXPECT_NE(error.find("dimension 0 of 5, neither 1 nor the results' "
                       "dimension 1 of 6"),
            std::string::npos)
      << error;
  viewOf({4, 6}, {6}, {2}, &error);
  EXPECT_NE(error.find("past the results' rank"), std::string::npos) << error;
  // Spanning every other dimension of seven alternates seven times.
  viewOf({2, 2, 2, 2, 2, 2, 2}, {2, 2, 2}, {1, 3, 5}, &error);
  EXPECT_NE(error.find("more than 6 dimensions"), std::string::npos) << error;
  // Three spans that merge fit.
  viewOf({2, 2, 2, 2, 2, 2, 2}, {2, 2, 2}, {1, 2, 3}, &error);
  EXPECT_EQ(error, "");
}

} // namespace
} // namespace trainc::math
