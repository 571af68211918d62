//===- CpuAttentionHeadBlocksTest.cpp - Dropout on a block of the heads ---===//
//
// Tensor parallelism splits attention by heads; with dropout each rank's
// op numbers its heads in the whole (graph.attention's head_blocks:
// ints[6..10] = [seed, data axis, stride, tensor axis, blocks]). Block c of
// the heads, c the rank's coordinate on the tensor axis, must then give
// the whole attention's results for those heads bit for bit, forward and
// gradient: the same mask, and the same sums (a key head's gradient sums
// only its own group's query heads, all in one block).
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "cpu/Kernels.h"
#include "device/Device.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainc::cpu {
namespace {

using testing::countDifferent;
using testing::randomTensor;
using testing::runKernel;
using testing::TestTensor;

/// One rank of a mesh [data 1, tensor `blocks`] at tensor coordinate `at`:
/// the kernels ask only coordinate(); anything else is a test error.
class MeshPlace final : public Collective {
public:
  explicit MeshPlace(int at) : at(at) {}
  int rank() const override { return at; }
  int worldSize() const override { return 1; }
  Status setMesh(const std::vector<int64_t> &, uint64_t) override {
    return unused();
  }
  int coordinate(int axis) const override { return axis == 1 ? at : 0; }
  Status allReduceSum(int, void *, int64_t, DType, Stream &,
                      const CollectiveSite &) override {
    return unused();
  }
  Status reduceScatterSum(int, const void *, void *, int64_t, DType, Stream &,
                          const CollectiveSite &) override {
    return unused();
  }
  Status allGather(int, const void *, void *, int64_t, DType, Stream &,
                   const CollectiveSite &) override {
    return unused();
  }
  Status startAllReduceSum(int, void *, int64_t, DType, Stream &,
                           const CollectiveSite &, Handle &) override {
    return unused();
  }
  Status startReduceScatterSum(int, const void *, void *, int64_t, DType,
                               Stream &, const CollectiveSite &,
                               Handle &) override {
    return unused();
  }
  Status startAllGather(int, const void *, void *, int64_t, DType, Stream &,
                        const CollectiveSite &, Handle &) override {
    return unused();
  }
  Status finish(Handle, const CollectiveSite &) override { return unused(); }
  double secondsWaiting() const override { return 0; }
  void abort(int) override {}

private:
  static Status unused() {
    return internalError("attention called a collective operation");
  }
  int at;
};

/// Heads [first, first + count) of a [B, H, S, D] tensor.
TestTensor headsOf(const TestTensor &t, int64_t first, int64_t count) {
  const std::vector<int64_t> &d = t.dims();
  TestTensor r(t.dtype(), {d[0], count, d[2], d[3]});
  int64_t row = d[2] * d[3];
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t h = 0; h < count; ++h)
      for (int64_t x = 0; x < row; ++x)
        r.set((b * count + h) * row + x,
              t.get((b * d[1] + first + h) * row + x));
  return r;
}

struct Shape {
  DType dtype;
  int64_t b, hq, hk, sq, sk, d, blocks;
  bool causal;
};

/// Attention, then its gradient, on the whole heads and on each block;
/// each block's results against the whole's heads. `numbered` false runs
/// the blocks without head blocks (each numbering its heads from 0 of its
/// own count), the control: its results must differ.
void checkBlocks(const Shape &s, bool numbered = true) {
  constexpr int64_t kSeed = 29, kStep = 3;
  const double ratio = 0.5, scale = 1 / std::sqrt(double(s.d));
  TestTensor q = randomTensor(s.dtype, {s.b, s.hq, s.sq, s.d}, 41);
  TestTensor k = randomTensor(s.dtype, {s.b, s.hk, s.sk, s.d}, 42);
  TestTensor v = randomTensor(s.dtype, {s.b, s.hk, s.sk, s.d}, 43);
  TestTensor g = randomTensor(s.dtype, {s.b, s.hq, s.sq, s.d}, 44);
  TestTensor mask = randomTensor(s.dtype, {s.b, s.hq, s.sq, s.sk}, 45, -1, 1);
  std::vector<double> floats = {scale, 0, ratio};
  auto run = [&](const std::vector<const TestTensor *> &in, int64_t hq,
                 int64_t hk, const std::vector<int64_t> &stream,
                 Collective *place) {
    std::vector<TestTensor> out = {TestTensor(s.dtype, {s.b, hq, s.sq, s.d}),
                                   TestTensor(s.dtype, {s.b, hq, s.sq, s.d}),
                                   TestTensor(s.dtype, {s.b, hk, s.sk, s.d}),
                                   TestTensor(s.dtype, {s.b, hk, s.sk, s.d})};
    std::vector<int64_t> ints = {s.causal, 1, 0, 0, 0, 0};
    ints.insert(ints.end(), stream.begin(), stream.end());
    Status forward =
        runKernel(runAttention, Opcode::Attention, {in[0], in[1], in[2], in[4]},
                  {&out[0]}, ints, floats, kStep, place);
    EXPECT_TRUE(forward.ok()) << forward.toString();
    Status grad =
        runKernel(runAttentionGrad, Opcode::AttentionGrad, in,
                  {&out[1], &out[2], &out[3]}, ints, floats, kStep, place);
    EXPECT_TRUE(grad.ok()) << grad.toString();
    return out;
  };
  std::vector<TestTensor> whole =
      run({&q, &k, &v, &g, &mask}, s.hq, s.hk, {kSeed}, nullptr);
  int64_t hq = s.hq / s.blocks, hk = s.hk / s.blocks;
  const char *names[] = {"result", "dq", "dk", "dv"};
  for (int at = 0; at < s.blocks; ++at) {
    MeshPlace place(at);
    TestTensor qb = headsOf(q, at * hq, hq), kb = headsOf(k, at * hk, hk),
               vb = headsOf(v, at * hk, hk), gb = headsOf(g, at * hq, hq),
               mb = headsOf(mask, at * hq, hq);
    std::vector<int64_t> stream = {kSeed};
    if (numbered)
      stream = {kSeed, 0, 0, 1, s.blocks};
    std::vector<TestTensor> part =
        run({&qb, &kb, &vb, &gb, &mb}, hq, hk, stream, &place);
    for (int i = 0; i < 4; ++i) {
      bool query = i < 2;
      TestTensor expected =
          headsOf(whole[size_t(i)], at * (query ? hq : hk), query ? hq : hk);
      int64_t off = countDifferent(part[size_t(i)], expected);
      if (numbered)
        EXPECT_EQ(off, 0) << names[i] << " of block " << at;
      else // (block 0 differs too, from batch 1 on)
        EXPECT_GT(off, expected.size() / 8)
            << names[i] << " of block " << at
            << " numbered from 0 drew the whole's mask";
    }
  }
}

/// Two blocks of grouped heads (2 query heads per key head), causal; four
/// blocks of one head each, in f64 and bf16; query tiles of several rows.
TEST(CpuAttentionHeadBlocks, GiveTheWholesHeads) {
  checkBlocks({DType::F32, 2, 4, 2, 5, 7, 8, 2, true});
  checkBlocks({DType::F64, 1, 4, 4, 3, 3, 4, 4, false});
  checkBlocks({DType::BF16, 2, 4, 4, 6, 6, 8, 4, true});
  checkBlocks({DType::F32, 1, 2, 2, 70, 70, 8, 2, true});
}

/// The control: blocks that number their heads from 0 of their own count
/// draw other masks, so their results differ from the whole's.
TEST(CpuAttentionHeadBlocks, NumberedFromZeroDrawAnotherMask) {
  checkBlocks({DType::F32, 2, 4, 2, 5, 7, 8, 2, true}, /*numbered=*/false);
}

} // namespace
} // namespace trainc::cpu
