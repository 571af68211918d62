//===- CpuTensorBlocksTest.cpp - Masks drawn on a block of the whole ------===//
//
// Tensor parallelism splits ops over the mesh's tensor axis; an op that
// draws a dropout mask then numbers its block's elements in the whole, so
// that each rank draws its part of one device's mask:
// - graph.dropout with `blocks` (ints = [seed, data axis, stride, tensor
//   axis, blocks, dim]) on a block of any one dimension;
// - graph.attention and its gradient with `head_blocks` (ints[6..10] =
//   [seed, data axis, stride, tensor axis, blocks]) on a block of the heads.
// Block c, c the rank's coordinate on the tensor axis, must give the whole
// op's results for that block bit for bit: the same mask, and for
// attention the same sums (a key head's gradient sums only its own group's
// query heads, all in one block).
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

/// Entries [first, first + count) of dimension `dim` of `t`.
TestTensor blockOf(const TestTensor &t, int64_t dim, int64_t first,
                   int64_t count) {
  std::vector<int64_t> dims = t.dims();
  int64_t whole = dims[size_t(dim)], outer = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    (d < dim ? outer : inner) *= d == dim ? 1 : dims[size_t(d)];
  dims[size_t(dim)] = count;
  TestTensor r(t.dtype(), dims);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < count; ++k)
      for (int64_t x = 0; x < inner; ++x)
        r.set((o * count + k) * inner + x,
              t.get((o * whole + first + k) * inner + x));
  return r;
}

/// Heads [first, first + count) of a [B, H, S, D] tensor.
TestTensor headsOf(const TestTensor &t, int64_t first, int64_t count) {
  return blockOf(t, 1, first, count);
}

/// Dropout of a tensor of `dims` (each even) and of each block of 2 along
/// each dimension, in f32 and bf16: each block's result and mask are the
/// whole's. `numbered` false runs the blocks as whole tensors, the
/// control: their masks differ from the whole's.
void checkDropoutBlocks(bool numbered,
                        const std::vector<int64_t> &dims = {4, 6, 8}) {
  constexpr int64_t kSeed = 31, kStep = 5;
  const double ratio = 0.5;
  for (DType t : {DType::F32, DType::BF16}) {
    TestTensor x = randomTensor(t, dims, 51);
    auto run = [&](const TestTensor &in, const std::vector<int64_t> &ints,
                   Collective *place) {
      std::pair<TestTensor, TestTensor> out{TestTensor(t, in.dims()),
                                            TestTensor(DType::I1, in.dims())};
      Status s =
          runKernel(runDropout, Opcode::Dropout, {&in},
                    {&out.first, &out.second}, ints, {ratio}, kStep, place);
      EXPECT_TRUE(s.ok()) << s.toString();
      return out;
    };
    auto whole = run(x, {kSeed}, nullptr);
    for (int64_t dim = 0; dim < 3; ++dim) {
      int64_t half = x.dims()[size_t(dim)] / 2;
      for (int at = 0; at < 2; ++at) {
        MeshPlace place(at);
        std::vector<int64_t> ints = {kSeed};
        if (numbered)
          ints = {kSeed, 0, 0, 1, 2, dim};
        auto part = run(blockOf(x, dim, at * half, half), ints, &place);
        int64_t masks = countDifferent(
                    part.second, blockOf(whole.second, dim, at * half, half)),
                results = countDifferent(
                    part.first, blockOf(whole.first, dim, at * half, half));
        if (numbered) {
          EXPECT_EQ(masks, 0) << "block " << at << " of dimension " << dim;
          EXPECT_EQ(results, 0) << "block " << at << " of dimension " << dim;
        } else if (dim > 0 || at > 0) { // (block 0 of dim 0 is a prefix)
          EXPECT_GT(masks, x.size() / 16)
              << "block " << at << " of dimension " << dim
              << " numbered as a whole drew the whole's mask";
        }
      }
    }
  }
}

TEST(CpuTensorBlocks, DropoutBlocksDrawTheWholesMask) {
  checkDropoutBlocks(/*numbered=*/true);
}

/// The control: blocks numbered as whole tensors draw other masks.
TEST(CpuTensorBlocks, DropoutBlocksNumberedAloneDrawAnotherMask) {
  checkDropoutBlocks(/*numbered=*/false);
}

/// Blocks of 240,060 elements, which parallelFor splits into chunks
/// (16,384 or more each; 30,008 at 2 threads, 60,015 at 1) that begin and
/// end inside the block's runs (40,010 and 4,001 elements along
/// dimensions 1 and 2): the kernel draws each run's stretch in a chunk
/// from its own start.
TEST(CpuTensorBlocks, DropoutBlocksAcrossThreadChunks) {
  checkDropoutBlocks(/*numbered=*/true, {6, 10, 8002});
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
TEST(CpuTensorBlocks, AttentionHeadBlocksGiveTheWholesHeads) {
  checkBlocks({DType::F32, 2, 4, 2, 5, 7, 8, 2, true});
  checkBlocks({DType::F64, 1, 4, 4, 3, 3, 4, 4, false});
  checkBlocks({DType::BF16, 2, 4, 4, 6, 6, 8, 4, true});
  checkBlocks({DType::F32, 1, 2, 2, 70, 70, 8, 2, true});
}

/// The control: blocks that number their heads from 0 of their own count
/// draw other masks, so their results differ from the whole's.
TEST(CpuTensorBlocks, AttentionHeadBlocksNumberedFromZeroDrawAnotherMask) {
  checkBlocks({DType::F32, 2, 4, 2, 5, 7, 8, 2, true}, /*numbered=*/false);
}

} // namespace
} // namespace trainc::cpu
