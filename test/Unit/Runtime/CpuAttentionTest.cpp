//===- CpuAttentionTest.cpp - Attention and its gradient on the CPU -------===//
//
// cpu/Attention.cpp against a double-precision reference written from
// graph.attention's definition, on the rounded inputs the kernel saw, and
// its variants (layouts, windows, statistics, masks that hide keys)
// against each other. Tolerances as in CpuNnTest.cpp: u is the compute
// type's unit roundoff, a term n*u bounds an n-term sum, and 16-bit
// results add one storage rounding.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "math/Dropout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace trainc::cpu {
namespace {

using testing::computeEps;
using testing::randomTensor;
using testing::runKernel;
using testing::storageEps;
using testing::TestTensor;

constexpr double kInf = std::numeric_limits<double>::infinity();

//===--- Attention --------------------------------------------------------===//

struct AttentionCase {
  DType dtype;
  int64_t b, hq, hk, sq, sk, d, dv;
  bool causal;
  std::vector<int64_t> maskDims; // Empty: no mask.
  double softcap = 0;            // 0: none.
  double dropout = 0;            // 0: none; else with seed `seed`.
  int64_t seed = 0;
};

/// The kernels' floats: [scale], [scale, softcap] or [scale, softcap or 0,
/// dropout].
std::vector<double> attentionFloats(const AttentionCase &c, double scale) {
  if (c.dropout > 0)
    return {scale, c.softcap, c.dropout};
  if (c.softcap > 0)
    return {scale, c.softcap};
  return {scale};
}

/// The kernels' ints: [causal, has_mask, seq_major 0, no qkv windows,
/// stats], then the dropout stream's seed.
std::vector<int64_t> attentionInts(const AttentionCase &c, bool hasMask,
                                   bool stats = false) {
  std::vector<int64_t> ints = {c.causal, hasMask, 0, 0, 0, stats};
  if (c.dropout > 0)
    ints.push_back(c.seed);
  return ints;
}

/// What probability (b, h, i, j) is multiplied by under `c`'s dropout at
/// step 0 (kernel tests run without a context): graph.dropout's mask of
/// the [B, Hq, Sq, Sk] probabilities, kept ones scaled by 1 / (1 - ratio).
double dropoutFactor(const AttentionCase &c, int64_t b, int64_t h, int64_t i,
                     int64_t j) {
  if (!(c.dropout > 0))
    return 1;
  uint64_t index = uint64_t(((b * c.hq + h) * c.sq + i) * c.sk + j);
  return math::dropoutKeep(math::dropoutKey(uint64_t(c.seed), 0), index,
                           c.dropout)
             ? 1 / (1 - c.dropout)
             : 0;
}

/// The scores of query row (b, h, i) over the keys it may see, in f64 by
/// graph.attention's definition.
std::vector<double> scoresRef(const AttentionCase &c, const TestTensor &q,
                              const TestTensor &k, const TestTensor *mask,
                              double scale, int64_t b, int64_t h, int64_t i) {
  int64_t g = h / (c.hq / c.hk);
  int64_t allowed = c.causal ? i + (c.sk - c.sq) + 1 : c.sk;
  allowed = std::max<int64_t>(0, std::min(allowed, c.sk));
  std::vector<double> s(allowed);
  for (int64_t j = 0; j < allowed; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < c.d; ++e)
      dot += q.get(((b * c.hq + h) * c.sq + i) * c.d + e) *
             k.get(((b * c.hk + g) * c.sk + j) * c.d + e);
    s[j] = scale * dot;
    if (c.softcap > 0)
      s[j] = c.softcap * std::tanh(s[j] / c.softcap);
    if (mask) {
      const std::vector<int64_t> &m = mask->dims();
      int64_t idx[4] = {b, h, i, j}, off = 0;
      for (int a = 0; a < 4; ++a)
        off = off * m[a] + (m[a] == 1 ? 0 : idx[a]);
      s[j] += mask->get(off);
    }
  }
  return s;
}

/// graph.attention by its definition, one (b, h, i) row at a time.
std::vector<double> attentionRef(const AttentionCase &c, const TestTensor &q,
                                 const TestTensor &k, const TestTensor &v,
                                 const TestTensor *mask, double scale) {
  std::vector<double> out(c.b * c.hq * c.sq * c.dv, 0.0);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.sq; ++i) {
        int64_t g = h / (c.hq / c.hk);
        std::vector<double> s = scoresRef(c, q, k, mask, scale, b, h, i);
        int64_t allowed = int64_t(s.size());
        double max = -kInf;
        for (double x : s)
          max = std::max(max, x);
        if (max == -kInf)
          continue; // No key to attend to: zeros.
        double sum = 0;
        for (int64_t j = 0; j < allowed; ++j)
          sum += std::exp(s[j] - max);
        for (int64_t j = 0; j < allowed; ++j)
          for (int64_t e = 0; e < c.dv; ++e)
            out[((b * c.hq + h) * c.sq + i) * c.dv + e] +=
                std::exp(s[j] - max) / sum * dropoutFactor(c, b, h, i, j) *
                v.get(((b * c.hk + g) * c.sk + j) * c.dv + e);
      }
  return out;
}

/// Runs the kernel on `c` (random q, k, v and mask unless `mask` is given)
/// and compares with attentionRef; returns the output.
TestTensor checkAttention(const AttentionCase &c,
                          const TestTensor *mask = nullptr) {
  TestTensor q = randomTensor(c.dtype, {c.b, c.hq, c.sq, c.d}, 13);
  TestTensor k = randomTensor(c.dtype, {c.b, c.hk, c.sk, c.d}, 14);
  TestTensor v = randomTensor(c.dtype, {c.b, c.hk, c.sk, c.dv}, 15);
  TestTensor randomMask = randomTensor(c.dtype, c.maskDims, 16, -2, 2);
  if (!mask && !c.maskDims.empty())
    mask = &randomMask;
  double scale = 1 / std::sqrt(double(c.d));
  std::vector<const TestTensor *> inputs = {&q, &k, &v};
  if (mask)
    inputs.push_back(mask);
  TestTensor out(c.dtype, {c.b, c.hq, c.sq, c.dv});
  Status s =
      runKernel(runAttention, Opcode::Attention, inputs, {&out},
                attentionInts(c, mask != nullptr), attentionFloats(c, scale));
  EXPECT_TRUE(s.ok()) << s.toString();
  std::vector<double> ref = attentionRef(c, q, k, v, mask, scale);
  // Scores: D-term dot products of |q|, |k| <= 1 (error D^2 scale u) plus
  // the mask; softmax: Sk-term sum; output: Sk-term sum of |v| <= 1.
  double tol = 4 * (c.d * c.d * scale + c.sk + 16) * computeEps(c.dtype);
  for (int64_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out.get(i), ref[i],
                tol + storageEps(c.dtype) * std::fabs(ref[i]))
        << "element " << i;
  return out;
}

TEST(CpuNnAttention, Plain) {
  checkAttention({DType::F32, 2, 3, 3, 5, 5, 8, 6, false, {}});
  checkAttention({DType::F32, 1, 2, 2, 3, 9, 8, 8, false, {}});
}

TEST(CpuNnAttention, CausalAlignsToTheLastKey) {
  // Sq == Sk: j <= i.
  checkAttention({DType::F32, 2, 2, 2, 6, 6, 8, 8, true, {}});
  // Sq < Sk (decoding with a KV cache): query i sees keys j <= i + 4.
  checkAttention({DType::F32, 1, 2, 2, 3, 7, 8, 4, true, {}});
  // Sq > Sk: the first two query rows see no key and give zeros.
  TestTensor out = checkAttention({DType::F32, 1, 1, 1, 5, 3, 4, 4, true, {}});
  for (int64_t e = 0; e < 8; ++e)
    EXPECT_EQ(out.get(e), 0.0);
}

TEST(CpuNnAttention, QueryTiles) {
  // More query rows than the kernel's tile of 32: causal tiles read only
  // the keys their last row may see, and the last tile is partial.
  checkAttention({DType::F32, 1, 2, 2, 70, 70, 8, 8, true, {}});
  checkAttention({DType::F32, 1, 2, 1, 40, 75, 8, 4, true, {1, 2, 40, 75}});
  TestTensor out =
      checkAttention({DType::F32, 1, 1, 1, 45, 20, 4, 4, true, {}});
  for (int64_t e = 0; e < 25 * 4; ++e) // rows 0..24 see no key
    EXPECT_EQ(out.get(e), 0.0) << "element " << e;
  checkAttention({DType::F64, 1, 1, 1, 66, 66, 8, 8, false, {1, 1, 66, 66}});
}

TEST(CpuNnAttention, BroadcastMasks) {
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, false, {1, 1, 4, 6}});
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, false, {2, 1, 1, 6}});
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, true, {2, 2, 4, 6}});
  checkAttention({DType::F32, 2, 2, 2, 4, 6, 8, 8, true, {1, 2, 1, 1}});
}

TEST(CpuNnAttention, GroupedQueryHeads) {
  // Query heads 0,1 share kv head 0 and 2,3 share kv head 1.
  checkAttention({DType::F32, 2, 4, 2, 5, 5, 8, 8, true, {}});
  checkAttention({DType::F32, 1, 4, 1, 3, 6, 8, 8, false, {1, 4, 3, 6}});
}

TEST(CpuNnAttention, OtherDTypes) {
  checkAttention({DType::F64, 2, 4, 2, 5, 7, 8, 8, true, {1, 1, 5, 7}});
  checkAttention({DType::BF16, 1, 2, 1, 4, 4, 16, 8, true, {}});
  checkAttention({DType::F16, 1, 2, 2, 4, 4, 16, 8, false, {1, 1, 1, 4}});
}

/// Soft-capped scores, c tanh(scale q.k / c) before the mask (Gemma 2's
/// logit soft cap): caps below the scores' range (|scale q.k| reaches
/// sqrt(D) = 2.8 to 4 here), where tanh is far from linear.
TEST(CpuNnAttention, SoftCap) {
  checkAttention({DType::F32, 2, 3, 3, 5, 5, 8, 6, false, {}, 0.5});
  checkAttention({DType::F32, 2, 4, 2, 70, 70, 8, 8, true, {1, 1, 70, 70}, 1});
  checkAttention({DType::F32, 1, 2, 2, 3, 9, 16, 8, true, {}, 2});
  checkAttention(
      {DType::F64, 1, 2, 1, 33, 40, 8, 8, true, {1, 2, 33, 40}, 0.3});
  checkAttention({DType::BF16, 1, 2, 1, 4, 4, 16, 8, true, {}, 1});
}

/// Dropout of the probabilities: each (b, h, i, j) kept as graph.dropout
/// keeps that element of [B, Hq, Sq, Sk] (dropoutFactor). Causal tiles,
/// grouped heads, a mask, a soft cap and every dtype; the ratio 0.5 drops
/// half, so a wrong index changes most outputs.
TEST(CpuNnAttention, Dropout) {
  checkAttention({DType::F32, 2, 3, 3, 5, 5, 8, 6, false, {}, 0, 0.5, 7});
  checkAttention(
      {DType::F32, 2, 4, 2, 70, 70, 8, 8, true, {1, 1, 70, 70}, 0, 0.1, 3});
  checkAttention({DType::F32, 1, 2, 2, 3, 9, 16, 8, true, {}, 2, 0.3, -5});
  checkAttention(
      {DType::F64, 1, 2, 1, 33, 40, 8, 8, true, {1, 2, 33, 40}, 0, 0.5, 11});
  checkAttention({DType::BF16, 1, 2, 1, 4, 4, 16, 8, true, {}, 0, 0.5, 1});
}

TEST(CpuNnAttention, FullyMaskedRowGivesZeros) {
  AttentionCase c{DType::F32, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
  TestTensor mask = randomTensor(DType::F32, c.maskDims, 17, -1, 1);
  for (int64_t j = 0; j < 4; ++j)
    mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: nothing.
  mask.set((1 * 3 + 2) * 4 + 0, -kInf);   // Batch 1, query 2: key 0 only.
  TestTensor out = checkAttention(c, &mask);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(out.get(((0 * 2 + h) * 3 + 1) * 8 + e), 0.0) << "head " << h;
}

/// `t` with dims 1 and 2 swapped: [B, H, S, D] <-> [B, S, H, D].
TestTensor swapHeadsAndSeq(const TestTensor &t) {
  const std::vector<int64_t> &d = t.dims();
  TestTensor r(t.dtype(), {d[0], d[2], d[1], d[3]});
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t h = 0; h < d[1]; ++h)
      for (int64_t i = 0; i < d[2]; ++i)
        for (int64_t e = 0; e < d[3]; ++e)
          r.set(((b * d[2] + i) * d[1] + h) * d[3] + e,
                t.get(((b * d[1] + h) * d[2] + i) * d[3] + e));
  return r;
}

/// Attention (or its gradient) on `c` with the tensors whose bits are set
/// in `seqMajor` stored [B, S, H, D]; the results come back [B, H, S, D].
std::vector<TestTensor> runAttentionLayout(const AttentionCase &c, bool grad,
                                           int64_t seqMajor) {
  std::vector<TestTensor> in = {
      randomTensor(c.dtype, {c.b, c.hq, c.sq, c.d}, 21),
      randomTensor(c.dtype, {c.b, c.hk, c.sk, c.d}, 22),
      randomTensor(c.dtype, {c.b, c.hk, c.sk, c.dv}, 23)};
  std::vector<TestTensor> out = {TestTensor(c.dtype, {c.b, c.hq, c.sq, c.dv})};
  if (grad) {
    in.push_back(randomTensor(c.dtype, out[0].dims(), 24));
    out = {TestTensor(c.dtype, in[0].dims()), TestTensor(c.dtype, in[1].dims()),
           TestTensor(c.dtype, in[2].dims())};
  }
  auto stored = [&](const TestTensor &t, int i) {
    return (seqMajor >> i) & 1 ? swapHeadsAndSeq(t) : t;
  };
  std::vector<TestTensor> inStored, outStored;
  for (size_t i = 0; i < in.size(); ++i)
    inStored.push_back(stored(in[i], int(i)));
  for (size_t i = 0; i < out.size(); ++i)
    outStored.push_back(stored(out[i], int(in.size() + i)));
  TestTensor mask = randomTensor(c.dtype, c.maskDims, 25, -2, 2);
  std::vector<const TestTensor *> inputs;
  for (const TestTensor &t : inStored)
    inputs.push_back(&t);
  if (!c.maskDims.empty())
    inputs.push_back(&mask);
  std::vector<TestTensor *> outputs;
  for (TestTensor &t : outStored)
    outputs.push_back(&t);
  Status s = runKernel(grad ? runAttentionGrad : runAttention,
                       grad ? Opcode::AttentionGrad : Opcode::Attention, inputs,
                       outputs, {c.causal, !c.maskDims.empty(), seqMajor, 0, 0},
                       {1 / std::sqrt(double(c.d))});
  EXPECT_TRUE(s.ok()) << s.toString();
  std::vector<TestTensor> results;
  for (size_t i = 0; i < outStored.size(); ++i)
    results.push_back(stored(outStored[i], int(in.size() + i)));
  return results;
}

/// Every tensor but the mask may be stored [B, S, H, D] (ints[2]): the
/// kernels read and write it through strides, so each layout gives the
/// canonical layout's bits, forward and back.
TEST(CpuNnAttention, SeqMajorLayoutsGiveTheSameBits) {
  const AttentionCase cases[] = {
      {DType::F32, 2, 3, 3, 37, 37, 8, 6, true, {}},
      {DType::F32, 2, 4, 2, 5, 70, 8, 8, false, {1, 4, 5, 70}},
      {DType::F64, 1, 2, 1, 33, 33, 4, 4, true, {}},
      {DType::BF16, 2, 4, 2, 40, 40, 16, 16, true, {}},
      {DType::F16, 1, 2, 2, 4, 9, 16, 8, false, {1, 1, 1, 9}},
  };
  for (const AttentionCase &c : cases)
    for (bool grad : {false, true}) {
      int tensors = grad ? kAttentionGradTensors : kAttentionTensors;
      std::vector<TestTensor> want = runAttentionLayout(c, grad, 0);
      for (int64_t bits :
           {(int64_t(1) << tensors) - 1, int64_t(0b1010101), int64_t(0b0101)}) {
        bits &= (int64_t(1) << tensors) - 1;
        std::vector<TestTensor> got = runAttentionLayout(c, grad, bits);
        for (size_t r = 0; r < want.size(); ++r)
          for (int64_t e = 0; e < want[r].size(); ++e)
            ASSERT_EQ(got[r].get(e), want[r].get(e))
                << dtypeName(c.dtype) << (grad ? " grad" : "") << " bits "
                << bits << " result " << r << " element " << e;
      }
    }
}

/// Heads [first, first + count) of a [B, S, H, D] tensor, as a tensor.
TestTensor headWindow(const TestTensor &t, int64_t first, int64_t count) {
  const std::vector<int64_t> &d = t.dims();
  TestTensor r(t.dtype(), {d[0], d[1], count, d[3]});
  for (int64_t b = 0; b < d[0]; ++b)
    for (int64_t i = 0; i < d[1]; ++i)
      for (int64_t h = 0; h < count; ++h)
        for (int64_t e = 0; e < d[3]; ++e)
          r.set(((b * d[1] + i) * count + h) * d[3] + e,
                t.get(((b * d[1] + i) * d[2] + first + h) * d[3] + e));
  return r;
}

/// q, k and v read as windows of one fused projection [B, S, Hq + 2 Hk,
/// D] (ints[3..4] = [Hq, Hk]) give the bits of the same heads copied out
/// (the slices trainc-read-qkv-in-place removes), forward and back, every
/// tensor sequence-major; and a gradient with one result writes dq, dk and
/// dv into its windows (the concatenation it removes), the same bits.
TEST(CpuNnAttention, QkvWindowsGiveTheSlicesBits) {
  const AttentionCase cases[] = {
      {DType::F32, 2, 4, 2, 37, 37, 8, 8, true, {}}, // grouped heads
      {DType::BF16, 1, 3, 3, 40, 40, 16, 16, true, {1, 1, 40, 40}},
      {DType::F64, 2, 2, 1, 5, 5, 4, 4, false, {}},
      {DType::F16, 1, 2, 2, 9, 9, 16, 16, false, {1, 2, 1, 9}},
  };
  for (const AttentionCase &c : cases) {
    SCOPED_TRACE(dtypeName(c.dtype));
    int64_t heads = c.hq + 2 * c.hk;
    TestTensor packed = randomTensor(c.dtype, {c.b, c.sq, heads, c.d}, 31);
    TestTensor q = headWindow(packed, 0, c.hq),
               k = headWindow(packed, c.hq, c.hk),
               v = headWindow(packed, c.hq + c.hk, c.hk);
    TestTensor mask = randomTensor(c.dtype, c.maskDims, 32, -2, 2);
    TestTensor g = randomTensor(c.dtype, {c.b, c.sq, c.hq, c.d}, 33);
    bool hasMask = !c.maskDims.empty();
    double scale = 1 / std::sqrt(double(c.d));
    for (bool grad : {false, true}) {
      std::vector<TestTensor> want, got;
      for (bool windows : {false, true}) {
        std::vector<const TestTensor *> inputs =
            windows ? std::vector<const TestTensor *>{&packed, &packed, &packed}
                    : std::vector<const TestTensor *>{&q, &k, &v};
        if (grad)
          inputs.push_back(&g);
        if (hasMask)
          inputs.push_back(&mask);
        std::vector<TestTensor> &out = windows ? got : want;
        if (grad)
          out = {TestTensor(c.dtype, q.dims()), TestTensor(c.dtype, k.dims()),
                 TestTensor(c.dtype, v.dims())};
        else
          out = {TestTensor(c.dtype, g.dims())};
        std::vector<TestTensor *> outputs;
        for (TestTensor &t : out)
          outputs.push_back(&t);
        int64_t bits = grad ? 0b1111111 : 0b1111;
        Status st = runKernel(
            grad ? runAttentionGrad : runAttention,
            grad ? Opcode::AttentionGrad : Opcode::Attention, inputs, outputs,
            {c.causal, hasMask, bits, windows ? c.hq : 0, windows ? c.hk : 0},
            {scale});
        ASSERT_TRUE(st.ok()) << st.toString();
      }
      for (size_t r = 0; r < want.size(); ++r)
        for (int64_t e = 0; e < want[r].size(); ++e)
          ASSERT_EQ(got[r].get(e), want[r].get(e))
              << (grad ? "grad " : "") << "result " << r << " element " << e;
      if (!grad)
        continue;
      // One result, the projection's gradient; NaN first, so that a window
      // left unwritten shows.
      TestTensor joined(c.dtype, packed.dims());
      for (int64_t e = 0; e < joined.size(); ++e)
        joined.set(e, std::nan(""));
      std::vector<const TestTensor *> inputs = {&packed, &packed, &packed, &g};
      if (hasMask)
        inputs.push_back(&mask);
      Status st =
          runKernel(runAttentionGrad, Opcode::AttentionGrad, inputs, {&joined},
                    {c.causal, hasMask, 0b1111111, c.hq, c.hk}, {scale});
      ASSERT_TRUE(st.ok()) << st.toString();
      TestTensor windows[3] = {headWindow(joined, 0, c.hq),
                               headWindow(joined, c.hq, c.hk),
                               headWindow(joined, c.hq + c.hk, c.hk)};
      for (int r = 0; r < 3; ++r)
        for (int64_t e = 0; e < want[r].size(); ++e)
          ASSERT_EQ(windows[r].get(e), want[r].get(e))
              << "window " << r << " element " << e;
    }
  }
}

/// The log-sum-exp of each score row of `c` (attentionRef's scores), -inf
/// for a row with no key to attend to.
std::vector<double> logSumExpRef(const AttentionCase &c, const TestTensor &q,
                                 const TestTensor &k, const TestTensor *mask,
                                 double scale) {
  std::vector<double> lse(c.b * c.hq * c.sq, -kInf);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.hq; ++h)
      for (int64_t i = 0; i < c.sq; ++i) {
        std::vector<double> s = scoresRef(c, q, k, mask, scale, b, h, i);
        double max = -kInf;
        for (double x : s)
          max = std::max(max, x);
        if (max == -kInf)
          continue;
        double sum = 0;
        for (double x : s)
          sum += std::exp(x - max);
        lse[(b * c.hq + h) * c.sq + i] = max + std::log(sum);
      }
  return lse;
}

/// Attention's forward and its gradient on `c`, without and with the
/// forward's log-sum-exps (ints[5], trainc-attention-stats).
struct StatsRun {
  TestTensor q, k, v, g, mask, out, lse;
  std::vector<TestTensor> grads, gradsFromStats;
  double scale;
};

/// `lseShift` is added to the log-sum-exps the gradient reads.
StatsRun runWithStats(const AttentionCase &c, const TestTensor *givenMask,
                      double lseShift = 0) {
  StatsRun r{randomTensor(c.dtype, {c.b, c.hq, c.sq, c.d}, 41),
             randomTensor(c.dtype, {c.b, c.hk, c.sk, c.d}, 42),
             randomTensor(c.dtype, {c.b, c.hk, c.sk, c.dv}, 43),
             randomTensor(c.dtype, {c.b, c.hq, c.sq, c.dv}, 44),
             givenMask ? *givenMask
                       : randomTensor(c.dtype, c.maskDims, 45, -2, 2),
             TestTensor(c.dtype, {c.b, c.hq, c.sq, c.dv}),
             TestTensor(attentionLseType(c.dtype), {c.b, c.hq, c.sq}),
             {},
             {},
             1 / std::sqrt(double(c.d))};
  bool hasMask = !c.maskDims.empty();
  std::vector<const TestTensor *> in = {&r.q, &r.k, &r.v};
  if (hasMask)
    in.push_back(&r.mask);
  TestTensor plain(c.dtype, r.out.dims());
  Status s = runKernel(runAttention, Opcode::Attention, in, {&plain},
                       attentionInts(c, hasMask), attentionFloats(c, r.scale));
  EXPECT_TRUE(s.ok()) << s.toString();
  s = runKernel(runAttention, Opcode::Attention, in, {&r.out, &r.lse},
                attentionInts(c, hasMask, /*stats=*/true),
                attentionFloats(c, r.scale));
  EXPECT_TRUE(s.ok()) << s.toString();
  // Keeping the statistics changes no bit of the result.
  for (int64_t e = 0; e < plain.size(); ++e)
    EXPECT_EQ(plain.get(e), r.out.get(e)) << "result element " << e;
  TestTensor lse = r.lse;
  for (int64_t e = 0; e < lse.size(); ++e)
    lse.set(e, lse.get(e) + lseShift);
  for (bool stats : {false, true}) {
    std::vector<TestTensor> &grads = stats ? r.gradsFromStats : r.grads;
    grads = {TestTensor(c.dtype, r.q.dims()), TestTensor(c.dtype, r.k.dims()),
             TestTensor(c.dtype, r.v.dims())};
    std::vector<const TestTensor *> gin = {&r.q, &r.k, &r.v, &r.g};
    if (hasMask)
      gin.push_back(&r.mask);
    if (stats) {
      gin.push_back(&r.out);
      gin.push_back(&lse);
    }
    s = runKernel(runAttentionGrad, Opcode::AttentionGrad, gin,
                  {&grads[0], &grads[1], &grads[2]},
                  attentionInts(c, hasMask, stats),
                  attentionFloats(c, r.scale));
    EXPECT_TRUE(s.ok()) << s.toString();
  }
  return r;
}

const AttentionCase kStatsCases[] = {
    {DType::F32, 2, 3, 3, 37, 37, 8, 6, true, {}},
    {DType::F32, 2, 4, 2, 5, 70, 8, 8, false, {1, 4, 5, 70}},
    {DType::F32, 1, 2, 2, 7, 3, 8, 8, true, {}}, // rows 0-3 see no key
    {DType::F64, 1, 2, 1, 33, 33, 4, 4, true, {1, 1, 33, 33}},
    {DType::BF16, 2, 4, 2, 40, 40, 16, 16, true, {}},
    {DType::F16, 1, 2, 2, 4, 9, 16, 8, false, {1, 1, 1, 9}},
    // Soft-capped scores (Gemma 2's): the tanh remade in the gradient.
    {DType::F32, 2, 4, 2, 37, 37, 8, 8, true, {1, 1, 37, 37}, 0.5},
    {DType::BF16, 1, 2, 2, 40, 40, 16, 16, true, {}, 1.0},
    // Dropout: the mask drawn again in the gradient, with a soft cap too.
    {DType::F32, 2, 4, 2, 37, 37, 8, 8, true, {1, 1, 37, 37}, 0, 0.3, 9},
    {DType::BF16, 1, 2, 2, 40, 40, 16, 16, true, {}, 0.5, 0.5, 2},
};

/// The forward's second result is each row's log-sum-exp (-inf for a row
/// with nothing to attend to), to the rounding of its scores and sum.
TEST(CpuNnAttention, KeepsTheLogSumExps) {
  for (const AttentionCase &c : kStatsCases) {
    SCOPED_TRACE(dtypeName(c.dtype));
    StatsRun r = runWithStats(c, nullptr);
    std::vector<double> ref = logSumExpRef(
        c, r.q, r.k, c.maskDims.empty() ? nullptr : &r.mask, r.scale);
    // As checkAttention's scores, plus the log of a Sk-term sum.
    double tol = 4 * (c.d * c.d * r.scale + c.sk + 16) * computeEps(c.dtype);
    for (int64_t e = 0; e < r.lse.size(); ++e) {
      if (ref[e] == -kInf)
        EXPECT_EQ(r.lse.get(e), -kInf) << "row " << e;
      else
        EXPECT_NEAR(r.lse.get(e), ref[e], tol * (1 + std::fabs(ref[e])))
            << "row " << e;
    }
  }
}

/// The gradient from the forward's log-sum-exps (P = exp(S - lse)) is the
/// remade softmax's to rounding: the two P differ by a few units of the
/// compute type u per element (an exp and a subtraction against an exp and
/// a division), and each gradient element sums at most max(Sq, Sk) such
/// terms of values at most 1 (|dO|, |q|, |k|, |v| <= 1) after D- or
/// Dv-term products: 8 (max(Sq, Sk) + max(D, Dv)) u, of which the worst
/// element uses 0.1% to 13% here. Dropout multiplies the kept P and dP by
/// 1 / (1 - ratio), and their rounding errors with them: the bound too.
/// 16-bit results are each rounded once, so two sums that straddle a
/// rounding boundary land one unit in the last place (2 u of the storage
/// type) apart. A shifted lse (P off by 1%) exceeds the bound 40 to 10^11
/// times, so the kernel does read it.
TEST(CpuNnAttention, GradientFromTheForwardsStatistics) {
  for (const AttentionCase &c : kStatsCases) {
    SCOPED_TRACE(dtypeName(c.dtype));
    int64_t terms = std::max(c.sq, c.sk) + std::max(c.d, c.dv);
    double tol = 8 * terms * computeEps(c.dtype) / (1 - c.dropout);
    auto worst = [&](const StatsRun &r) {
      double w = 0;
      for (int t = 0; t < 3; ++t)
        for (int64_t e = 0; e < r.grads[t].size(); ++e) {
          double want = r.grads[t].get(e), got = r.gradsFromStats[t].get(e);
          w = std::max(w,
                       std::fabs(got - want) /
                           (tol + 2 * storageEps(c.dtype) * std::fabs(want)));
        }
      return w;
    };
    StatsRun r = runWithStats(c, nullptr);
    EXPECT_LE(worst(r), 1.0);
    StatsRun shifted = runWithStats(c, nullptr, 1e-2);
    EXPECT_GT(worst(shifted), 1.0);
  }
}

/// f32's finfo.min: the fill of Hugging Face's masks in f32 and under
/// autocast.
constexpr double kF32Min = -3.4028234663852886e38;

/// The fill of Hugging Face's masks of `dtype`: its finfo.min (f32's for
/// f64 too; f32's rounds to -inf in bf16).
double hfFill(DType dtype) {
  return dtype == DType::BF16 ? -3.3895313892515355e38 : kF32Min;
}

/// A row that a mask leaves nothing to attend to has lse -inf and zero
/// gradients, from the statistics as from the remade softmax. A row whose
/// keys a finite mask all hides (-1e9, or finfo.min as Hugging Face's
/// models write it) has a log-sum-exp that rounds to its max, log(Sk)
/// lost, so exp(S - lse) would be about 1 per key, not 1 / Sk: the kernel
/// remakes such a row's softmax (|lse| >= 64), and its gradient is the
/// remade softmax's, cotangent and all (not only where the cotangent is
/// 0, as for padding whose losses are ignored). The bug it guards against
/// is a factor of Sk = 4 on P, far beyond the 1e-5 allowed for rounding.
TEST(CpuNnAttention, FullyMaskedRowFromTheStatistics) {
  AttentionCase c{DType::F32, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
  TestTensor mask = randomTensor(DType::F32, c.maskDims, 17, -1, 1);
  for (int64_t j = 0; j < 4; ++j)
    mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: nothing.
  StatsRun r = runWithStats(c, &mask);
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(r.lse.get((0 * 2 + h) * 3 + 1), -kInf);
    for (int64_t e = 0; e < 8; ++e)
      EXPECT_EQ(r.gradsFromStats[0].get(((0 * 2 + h) * 3 + 1) * 8 + e), 0.0);
  }
  // Batch 0, query 1 hidden by a finite fill instead.
  for (DType dtype : {DType::F32, DType::F64})
    for (double fill : {-1e9, kF32Min}) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " " + std::to_string(fill));
      c.dtype = dtype;
      TestTensor filled(dtype, c.maskDims);
      for (int64_t e = 0; e < mask.size(); ++e)
        filled.set(e, e / 4 == 1 ? fill : mask.get(e));
      StatsRun finite = runWithStats(c, &filled);
      for (int t = 0; t < 3; ++t)
        for (int64_t e = 0; e < finite.grads[t].size(); ++e)
          EXPECT_NEAR(finite.gradsFromStats[t].get(e), finite.grads[t].get(e),
                      1e-5)
              << "gradient " << t << " element " << e;
    }
}

/// A padding mask of `dims` [B, H|1, Sq|1, Sk] (so, with Sq rows,
/// Hugging Face's attention mask when a model is given one: causal and
/// padding in one term): 0 where query i may see key j and `fill`
/// elsewhere. Key j is among (b, h)'s tokens from left[e] and before Sk -
/// right[e], e = b H + h; with `causal`, query i also sees only j <= i +
/// Sk - Sq.
TestTensor paddingMask(DType dtype, std::vector<int64_t> dims,
                       const std::vector<int64_t> &left,
                       const std::vector<int64_t> &right, double fill,
                       bool causal = true) {
  TestTensor mask(dtype, dims);
  int64_t sq = dims[2], sk = dims[3];
  for (int64_t e = 0; e < dims[0] * dims[1]; ++e)
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j) {
        bool seen =
            (!causal || j <= i + sk - sq) && j >= left[e] && j < sk - right[e];
        mask.set((e * sq + i) * sk + j, seen ? 0.0 : fill);
      }
  return mask;
}

/// Masks that hide keys (entries at or below -2^120) from query tiles.
struct HidingCase {
  AttentionCase c; // its maskDims: the mask's
  std::vector<int64_t> left, right;
  bool causalMask = true; // the mask's own causal part (not c.causal)
  double fill = 0;        // 0: hfFill(c.dtype)
  TestTensor mask(double fillOverride = 0) const {
    double f = fillOverride != 0 ? fillOverride
               : fill != 0       ? fill
                                 : hfFill(c.dtype);
    return paddingMask(c.dtype, c.maskDims, left, right, f, causalMask);
  }
};

const HidingCase kHidingCases[] = {
    // Right padding: the tiles' last keys left out.
    {{DType::F32, 2, 4, 2, 70, 70, 8, 8, false, {2, 1, 70, 70}},
     {0, 10},
     {25, 0}},
    // Rows that see only padding (each keeps its keys: uniform under
    // finfo.min), beside tiles that start past the left padding.
    {{DType::F32, 2, 2, 2, 70, 70, 8, 8, false, {2, 1, 70, 70}, 1},
     {40, 3},
     {0, 20}},
    // Dropout, drawn by each key's own index.
    {{DType::F32, 2, 2, 1, 70, 70, 8, 8, false, {2, 1, 70, 70}, 0, 0.3, 5},
     {10, 37},
     {7, 0}},
    // Sq < Sk.
    {{DType::F64, 1, 2, 2, 40, 75, 8, 8, false, {1, 1, 40, 75}}, {12}, {9}},
    {{DType::BF16, 2, 2, 2, 40, 40, 16, 8, false, {2, 1, 40, 40}},
     {5, 0},
     {0, 11}},
    // Each head its own padding.
    {{DType::F32, 1, 4, 2, 70, 70, 8, 8, false, {1, 4, 70, 70}},
     {0, 33, 5, 0},
     {0, 0, 30, 64}},
    // The causal flag, and padding over the keys alone ([B, 1, 1, Sk]):
    // every tile starts past the left padding.
    {{DType::F32, 2, 2, 2, 70, 70, 8, 8, true, {2, 1, 1, 70}},
     {35, 0},
     {0, 20},
     false},
    // -inf: no row sees padding alone.
    {{DType::F32, 2, 2, 2, 70, 70, 8, 8, false, {2, 1, 1, 70}},
     {12, 0},
     {0, 40},
     false,
     -kInf},
};

/// The definition's results (each row's keys weighed with their mask), for
/// right padding (the tiles' last keys left out), left padding past a
/// tile's first rows (its first keys left out), rows that see only
/// padding, grouped heads, per-head masks, a soft cap, dropout, f64 and
/// bf16, the causal flag, -inf fills and Sq < Sk.
TEST(CpuNnAttention, MasksThatHideKeys) {
  for (const HidingCase &k : kHidingCases) {
    SCOPED_TRACE(dtypeName(k.c.dtype));
    TestTensor mask = k.mask();
    checkAttention(k.c, &mask);
  }
}

/// Leaving keys out changes only the order of the sums: the same calls
/// with the mask's hidden entries at -2^119, which hides nothing (every key
/// read) and still gives those keys probability 0, have the same results,
/// log-sum-exps (but for rows that see only padding, whose are the
/// fill's) and gradients, from the statistics or not, to
/// GradientFromTheForwardsStatistics' bound.
TEST(CpuNnAttention, HidingKeysChangesOnlyTheSumsOrder) {
  for (const HidingCase &k : kHidingCases) {
    const AttentionCase &c = k.c;
    SCOPED_TRACE(dtypeName(c.dtype));
    if (k.fill == -kInf) // -inf and -2^119 differ where a row sees nothing
      continue;
    TestTensor hiding = k.mask(), showing = k.mask(-0x1p119);
    StatsRun skipped = runWithStats(c, &hiding),
             read = runWithStats(c, &showing);
    int64_t terms = std::max(c.sq, c.sk) + std::max(c.d, c.dv);
    double tol = 8 * terms * computeEps(c.dtype) / (1 - c.dropout);
    auto near = [&](const TestTensor &got, const TestTensor &want,
                    const char *what, bool skipFilled = false) {
      for (int64_t e = 0; e < want.size(); ++e) {
        if (skipFilled && want.get(e) <= -1e30)
          continue;
        ASSERT_NEAR(got.get(e), want.get(e),
                    tol + 2 * storageEps(c.dtype) * std::fabs(want.get(e)))
            << what << " element " << e;
      }
    };
    near(skipped.out, read.out, "result");
    near(skipped.lse, read.lse, "log-sum-exp", /*skipFilled=*/true);
    for (int t = 0; t < 3; ++t) {
      near(skipped.grads[t], read.grads[t], "gradient");
      near(skipped.gradsFromStats[t], read.gradsFromStats[t],
           "gradient from the statistics");
    }
  }
}

/// A key the mask hides from every row of a tile is not read: NaN in its
/// key and value rows reaches neither the result nor the gradient, and
/// the gradients of those rows are 0 (read, the NaN would make the rows
/// that read it NaN). Batch 0's keys 0-9 and 60-69, hidden from all its
/// rows, with and without the causal flag (then with Sq = 40 < Sk, so
/// that query 0 sees keys 0-30, not the padding alone).
TEST(CpuNnAttention, KeysHiddenFromATileAreNotRead) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "not causal");
    int64_t sq = causal ? 40 : 70;
    AttentionCase c{DType::F32, 2, 4, 2, sq, 70, 8, 8, causal, {2, 1, 1, 70}};
    TestTensor mask = paddingMask(c.dtype, c.maskDims, {10, 0}, {10, 30},
                                  kF32Min, /*causal=*/false);
    StatsRun clean = runWithStats(c, &mask);
    auto hidden = [](int64_t j) { return j < 10 || j >= 60; };
    TestTensor q = clean.q, k = clean.k, v = clean.v, g = clean.g;
    for (int64_t h = 0; h < c.hk; ++h)
      for (int64_t j = 0; j < 70; ++j)
        for (int64_t e = 0; e < 8 && hidden(j); ++e) {
          k.set((h * 70 + j) * 8 + e, std::nan(""));
          v.set((h * 70 + j) * 8 + e, std::nan(""));
        }
    TestTensor out(c.dtype, clean.out.dims());
    std::vector<int64_t> ints = attentionInts(c, true);
    Status s = runKernel(runAttention, Opcode::Attention, {&q, &k, &v, &mask},
                         {&out}, ints, {clean.scale});
    ASSERT_TRUE(s.ok()) << s.toString();
    for (int64_t e = 0; e < out.size(); ++e)
      ASSERT_EQ(out.get(e), clean.out.get(e)) << "result element " << e;
    std::vector<TestTensor> grads = {TestTensor(c.dtype, q.dims()),
                                     TestTensor(c.dtype, k.dims()),
                                     TestTensor(c.dtype, v.dims())};
    s = runKernel(runAttentionGrad, Opcode::AttentionGrad,
                  {&q, &k, &v, &g, &mask}, {&grads[0], &grads[1], &grads[2]},
                  ints, {clean.scale});
    ASSERT_TRUE(s.ok()) << s.toString();
    for (int t = 0; t < 3; ++t)
      for (int64_t e = 0; e < grads[t].size(); ++e) {
        bool hiddenKey = t > 0 && e < c.hk * 70 * 8 && hidden(e / 8 % 70);
        ASSERT_EQ(grads[t].get(e), hiddenKey ? 0.0 : clean.grads[t].get(e))
            << "gradient " << t << " element " << e;
      }
  }
}

} // namespace
} // namespace trainc::cpu
