//===- DeviceKernelsCompositeTest.cpp - Composites on a device vs the CPU -===//
//
// The DeviceKernels suite (DeviceKernelsTest.cpp, which describes it and
// instantiates it for "cpu" and "cuda") for the composite and optimizer
// kernels: softmax, norms, GELU, dropout, attention, cross-entropy,
// scatter-add, adamw_update and sum_of_squares (fused_elementwise and
// convert_group: DeviceKernelsFusionTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "DeviceKernelsHarness.h"

#include <cstdlib>

namespace trainc {
namespace {

using namespace device_kernels;

//===--- Softmax, norms, GELU, dropout ------------------------------------===//

TEST_P(DeviceKernels, Softmax) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes) {
    std::vector<int64_t> dims = {3, 37, 129};
    TestTensor x = uniform(t, dims, seed++, -8, 8);
    for (int64_t dim = 0; dim < 3; ++dim)
      check(makeCall(Opcode::Softmax, {x}, {zeros(t, dims)}, {dim}),
            softmaxOf(t, dims[dim]));
    check(makeCall(Opcode::Softmax, {uniform(t, {129, 1}, seed++, -8, 8)},
                   {zeros(t, {129, 1})}, {1}),
          softmaxOf(t, 1));
    // Rows of whole spans of 128 and a partial one, read four elements to
    // a vector load (n a multiple of 4) or one at a time.
    for (int64_t n : {4099, 1024, 680, 8, 6})
      check(makeCall(Opcode::Softmax, {uniform(t, {3, n}, seed++, -20, 20)},
                     {zeros(t, {3, n})}, {1}),
            softmaxOf(t, n));
  }
}

struct NormCase {
  std::vector<int64_t> dims;
  int64_t axis;
  bool scale, bias;
  double eps;
};

const NormCase kNormCases[] = {
    {{3, 37, 129}, 2, true, true, 1e-5},
    {{3, 37, 129}, 2, false, false, 0.25},
    {{3, 37, 129}, 1, true, false, 1e-5}, // normalized shape [37, 129]
    {{37, 129}, 1, false, true, 1e-6},
    {{129, 1}, 1, true, true, 1e-5}, // rows of one element
    {{5, 4099}, 1, true, true, 1e-5},
    // GPT-2's rows: f32 norms stage them 16 at a time, 4 columns a load
    // (70 rows: the last chunk 6); rows of 129 stage an element a load, of
    // 4099 are too long to stage (normKernel).
    {{70, 768}, 1, true, true, 1e-5},
};

/// layer_norm or rms_norm of `c` on random `t` operands, the result `y`.
Call normCall(bool layer, const NormCase &c, DType t, DType y, uint32_t &seed) {
  std::vector<int64_t> normalized(c.dims.begin() + c.axis, c.dims.end());
  std::vector<TestTensor> in = {uniform(t, c.dims, seed++, -2, 2)};
  if (c.scale)
    in.push_back(uniform(t, normalized, seed++, 0.5, 2));
  if (layer && c.bias)
    in.push_back(uniform(t, normalized, seed++, -1, 1));
  std::vector<int64_t> ints = {c.axis, c.scale};
  if (layer)
    ints.push_back(c.bias);
  return makeCall(layer ? Opcode::LayerNorm : Opcode::RmsNorm, in,
                  {zeros(y, c.dims)}, ints, {c.eps});
}

/// The CUDA file (cuda/Norm.cu) states the CPU's summation order for every
/// dtype, so norms are compared bit for bit.
TEST_P(DeviceKernels, LayerNormAndRmsNorm) {
  uint32_t seed = 1;
  for (bool layer : {true, false})
    for (DType t : kFloatTypes)
      for (const NormCase &c : kNormCases)
        check(normCall(layer, c, t, t, seed));
}

/// An f32 norm narrowed to bf16 or f16 (the compiler's fusion of the
/// convert that followed it): the same rows, rounded once.
TEST_P(DeviceKernels, NarrowedNorm) {
  uint32_t seed = 50;
  for (bool layer : {true, false})
    for (DType narrow : {kBF16, kF16})
      for (const NormCase &c : kNormCases)
        check(normCall(layer, c, kF32, narrow, seed));
}

TEST_P(DeviceKernels, NormGrad) {
  uint32_t seed = 1;
  for (bool centered : {true, false})
    for (DType t : kFloatTypes)
      for (const NormCase &c : kNormCases) {
        std::vector<int64_t> normalized(c.dims.begin() + c.axis, c.dims.end());
        std::vector<TestTensor> in = {uniform(t, c.dims, seed++, -2, 2)};
        if (c.scale)
          in.push_back(uniform(t, normalized, seed++, 0.5, 2));
        in.push_back(uniform(t, c.dims, seed++));
        check(makeCall(Opcode::NormGrad, in,
                       {zeros(t, c.dims), zeros(t, c.dims)},
                       {c.axis, c.scale, centered}, {c.eps}));
      }
}

/// math/NormParamSums.h fixes the sums' order for both devices: bit for
/// bit. Shapes past one segment of rows: 111 rows (14 segments of 8, the
/// last shorter), 4224 (128 segments of 33 rows: staged 16, 16 and 1 at a
/// time), 1100 rows of GPT-2's 768. On a 227 KB block (H100, H200) rows of
/// 4099 are staged 4 or 5 at a time and rows of 4773 (f32: 3 with the bias,
/// then normGradKernel's three kernels; 4 without); 129 and 1 an element a
/// load, 40 and 768 a vector.
TEST_P(DeviceKernels, NormGradParams) {
  struct Case {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  const Case cases[] = {{{3, 37, 129}, 2}, {{3, 37, 129}, 1}, {{129, 1}, 1},
                        {{5, 4099}, 1},    {{4224, 40}, 1},   {{1100, 768}, 1}};
  uint32_t seed = 70;
  for (DType t : {kF32, kF64})
    for (const Case &c : cases)
      for (bool centered : {true, false})
        for (bool withBias : {true, false}) {
          std::vector<int64_t> normalized(c.dims.begin() + c.axis,
                                          c.dims.end());
          std::vector<TestTensor> out = {zeros(t, c.dims),
                                         zeros(t, normalized)};
          if (withBias)
            out.push_back(zeros(t, normalized));
          check(makeCall(Opcode::NormGradParams,
                         {uniform(t, c.dims, seed++, -2, 2),
                          uniform(t, normalized, seed++, 0.5, 2),
                          uniform(t, c.dims, seed++)},
                         std::move(out), {c.axis, centered, withBias, 0, 0},
                         {1e-5}));
        }
}

/// With the residual stream's gradient added (an addend) and the sum's
/// 16-bit copy (bf16, f16; f32 only), bit for bit: the add and the
/// convert round as on the CPU. Staged (on a 227 KB block) but for f32 rows
/// of 4099 with an addend (normGradKernel writing the copy); f64 rows of
/// 768 with an addend 11 at a time.
TEST_P(DeviceKernels, NormGradParamsWithAddendAndCopy) {
  struct Case {
    DType t, copy; // copy: the dtype itself for none
    std::vector<int64_t> dims;
    bool addend;
  };
  const Case cases[] = {{kF32, DType::BF16, {3, 37, 129}, true},
                        {kF32, DType::F16, {4224, 40}, true},
                        {kF32, DType::BF16, {2048, 768}, true},
                        {kF32, DType::BF16, {5, 4099}, true},
                        {kF64, kF64, {300, 768}, true},
                        {kF32, DType::BF16, {5, 4099}, false},
                        {kF32, kF32, {3, 37, 129}, true},
                        {kF64, kF64, {111, 40}, true}};
  uint32_t seed = 90;
  for (const Case &c : cases) {
    bool narrowed = c.copy != c.t;
    int64_t axis = int64_t(c.dims.size()) - 1;
    std::vector<int64_t> normalized = {c.dims.back()};
    std::vector<TestTensor> in = {uniform(c.t, c.dims, seed++, -2, 2),
                                  uniform(c.t, normalized, seed++, 0.5, 2),
                                  uniform(c.t, c.dims, seed++)};
    if (c.addend)
      in.push_back(uniform(c.t, c.dims, seed++, -3, 3));
    std::vector<TestTensor> out = {zeros(c.t, c.dims), zeros(c.t, normalized),
                                   zeros(c.t, normalized)};
    if (narrowed)
      out.push_back(zeros(c.copy, c.dims));
    check(makeCall(Opcode::NormGradParams, std::move(in), std::move(out),
                   {axis, 1, 1, c.addend, narrowed}, {1e-5}));
  }
}

TEST_P(DeviceKernels, GeluBothForms) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (int64_t approximation : {0, 1})
      for (const auto &dims : kElementwiseShapes)
        check(makeCall(Opcode::Gelu, {uniform(t, dims, seed++, -8, 8)},
                       {zeros(t, dims)}, {approximation}),
              sharedMath(t));
}

TEST_P(DeviceKernels, GeluGradBothForms) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (int64_t useTanh : {0, 1})
      for (const auto &dims : kElementwiseShapes) {
        check(makeCall(
                  Opcode::GeluGrad,
                  {uniform(t, dims, seed, -8, 8), uniform(t, dims, seed + 1)},
                  {zeros(t, dims)}, {useTanh}),
              sharedMath(t));
        seed += 2;
      }
}

/// The mask is a function of (seed, step, index): the launch carries a
/// context with the step, which the device must keep when it fills in its
/// stream (a device that dropped it would draw step 0's mask).
TEST_P(DeviceKernels, DropoutWithStep) {
  struct Case {
    int64_t seed;
    double ratio;
    int64_t step; // -1: no context at all (step 0)
  } cases[] = {{42, 0.3, 7}, {42, 0.3, -1}, {-3, 0.25, 123456789},
               {7, 0.0, 3},  {7, 0.9, 1},   {42, 0.3, 0}};
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const Case &c : cases)
      for (const auto &dims : {std::vector<int64_t>{1}, {3, 37, 129}}) {
        Call call =
            makeCall(Opcode::Dropout, {uniform(t, dims, seed++, -4, 4)},
                     {zeros(t, dims), zeros(kI1, dims)}, {c.seed}, {c.ratio});
        call.step = c.step;
        check(call);
      }
}

/// Dropout on block 0 of 2 along each dimension (no collective: coordinate
/// 0), its elements numbered in the whole: math::wholeIndex's runs.
TEST_P(DeviceKernels, DropoutOnABlock) {
  uint32_t seed = 60;
  std::vector<int64_t> dims = {4, 37, 6};
  for (DType t : kFloatTypes)
    for (int64_t dim = 0; dim < 3; ++dim)
      check(makeCall(Opcode::Dropout, {uniform(t, dims, seed++, -4, 4)},
                     {zeros(t, dims), zeros(kI1, dims)}, {42, 0, 0, 1, 2, dim},
                     {0.3}));
}

//===--- Attention --------------------------------------------------------===//

struct AttentionShape {
  DType t;
  int64_t b, hq, hk, sq, sk, d, dv;
  bool causal;
  std::vector<int64_t> mask; // Empty: no mask.
  double softcap = 0;        // 0: none.
  double dropout = 0;        // 0: none (seed 17).
  /// Dropout on block 0 of this many blocks of the heads (the tensor axis's
  /// split; no collective: coordinate 0): numbered in blocks * Hq heads.
  int64_t headBlocks = 1;
};

const AttentionShape kAttentionShapes[] = {
    {kF32, 2, 3, 3, 5, 5, 8, 6, false, {}},             // plain
    {kF32, 1, 2, 2, 3, 37, 16, 8, false, {}},           // Sq < Sk
    {kF32, 2, 2, 2, 37, 37, 16, 16, true, {}},          // causal
    {kF32, 1, 2, 2, 3, 37, 8, 4, true, {}},             // causal, Sq < Sk
    {kF32, 1, 1, 1, 5, 3, 4, 4, true, {}},              // causal, Sq > Sk
    {kF32, 2, 2, 2, 4, 37, 8, 8, false, {1, 1, 4, 37}}, // masks broadcast
    {kF32, 2, 2, 2, 4, 6, 8, 8, true, {2, 1, 1, 6}},
    {kF32, 2, 2, 2, 4, 6, 8, 8, false, {2, 2, 4, 6}},
    {kF32, 2, 4, 2, 5, 5, 8, 8, true, {1, 4, 1, 1}}, // grouped-query heads
    {kF32, 1, 4, 1, 3, 129, 8, 8, false, {1, 4, 3, 129}},
    {kF32, 1, 2, 2, 129, 129, 64, 64, true, {}}, // several 32-row tiles
    {kF32, 1, 1, 1, 1, 1, 1, 1, false, {}},
    {kF64, 2, 4, 2, 5, 7, 8, 8, true, {1, 1, 5, 7}},
    // Head sizes over the scalar kernels' 128-wide chunk (Attention.cu's
    // kChunk): the result and the gradients in several passes, D > Dv
    // and Dv > D.
    {kF32, 1, 4, 2, 37, 45, 160, 136, true, {1, 1, 37, 45}},
    {kF64, 1, 2, 1, 5, 7, 8, 200, false, {}},
    {kBF16, 1, 2, 1, 37, 37, 16, 8, true, {}},
    {kF16, 1, 2, 2, 4, 37, 16, 8, false, {1, 1, 1, 37}},
    // bf16 with head sizes <= 64 runs on the tensor cores on a GPU
    // (AttentionTensorCore.cu): several 64-row tiles, grouped heads,
    // partial tiles, masks, causal with Sq > Sk (rows that see nothing).
    {kBF16, 2, 4, 2, 129, 129, 64, 64, true, {}},
    {kBF16, 1, 2, 2, 70, 150, 48, 40, false, {1, 2, 70, 150}},
    {kBF16, 1, 2, 2, 100, 37, 64, 64, true, {}},
    {kBF16, 1, 2, 1, 33, 40, 20, 12, true, {}}, // rows read 2 at a time
    {kBF16, 1, 1, 1, 3, 5, 65, 65, false, {}},  // the scalar kernels again
    // Whole tiles (wholeKeys: scores without scoreOf's tests): every tile,
    // then causal with Sq < Sk, where each query tile has some whole key
    // tiles and one partly visible.
    {kBF16, 1, 2, 2, 128, 192, 64, 64, false, {}},
    {kBF16, 2, 4, 2, 128, 200, 32, 32, true, {}},
    // Soft-capped scores (Gemma 2's), on the scalar kernels at every dtype
    // (the tensor cores and cuDNN take no soft cap): caps below the
    // scores' range, so tanh bends.
    {kF32, 2, 4, 2, 37, 45, 16, 16, true, {1, 1, 37, 45}, 0.5},
    {kF64, 1, 2, 1, 5, 7, 8, 8, false, {}, 0.3},
    {kBF16, 2, 4, 2, 129, 129, 64, 64, true, {}, 1.0},
    // Dropout of the probabilities (cuDNN takes none): the CPU's mask,
    // drawn by each element's [B, Hq, Sq, Sk] index. On the scalar
    // kernels (f32, f64, with a soft cap and a mask, a bf16 head past 64),
    // then on the tensor cores (bf16, as the tensor-core shapes above:
    // several 64-row tiles, grouped heads, a mask and partial tiles, whole
    // tiles, causal with Sq > Sk and Sq < Sk), some on block 0 of 2
    // blocks of heads.
    {kF32, 2, 4, 2, 37, 45, 16, 16, true, {1, 1, 37, 45}, 0, 0.3},
    {kF64, 1, 2, 1, 5, 7, 8, 8, false, {}, 0.3, 0.5},
    {kF32, 2, 4, 2, 37, 45, 16, 16, true, {1, 1, 37, 45}, 0, 0.3, 2},
    {kBF16, 1, 1, 1, 3, 5, 65, 65, false, {}, 0, 0.3},
    {kBF16, 2, 4, 2, 129, 129, 64, 64, true, {}, 0, 0.1},
    {kBF16, 1, 2, 2, 70, 150, 48, 40, false, {1, 2, 70, 150}, 0, 0.3},
    {kBF16, 1, 2, 2, 128, 192, 64, 64, false, {}, 0, 0.5, 2},
    {kBF16, 2, 4, 2, 100, 37, 32, 32, true, {}, 0, 0.2, 2},
    {kBF16, 2, 4, 2, 128, 200, 32, 32, true, {}, 0, 0.3},
};

/// attention (or attention_grad) on random q, k, v (cotangent) and mask;
/// the tensors whose bits are set in `seqMajor` (ExecutableFormat.h's
/// numbering) stored [B, S, H, D].
Call attentionCall(const AttentionShape &a, bool grad, uint32_t seed,
                   int64_t seqMajor = 0) {
  auto stored = [&](std::vector<int64_t> dims, int tensor) {
    if ((seqMajor >> tensor) & 1)
      std::swap(dims[1], dims[2]);
    return dims;
  };
  std::vector<int64_t> qDims = {a.b, a.hq, a.sq, a.d},
                       kDims = {a.b, a.hk, a.sk, a.d},
                       vDims = {a.b, a.hk, a.sk, a.dv},
                       oDims = {a.b, a.hq, a.sq, a.dv};
  std::vector<TestTensor> in = {uniform(a.t, stored(qDims, 0), seed),
                                uniform(a.t, stored(kDims, 1), seed + 1),
                                uniform(a.t, stored(vDims, 2), seed + 2)};
  if (grad)
    in.push_back(uniform(a.t, stored(oDims, 3), seed + 3));
  if (!a.mask.empty())
    in.push_back(uniform(a.t, a.mask, seed + 4, -2, 2));
  std::vector<TestTensor> out;
  if (grad)
    out = {zeros(a.t, stored(qDims, 4)), zeros(a.t, stored(kDims, 5)),
           zeros(a.t, stored(vDims, 6))};
  else
    out = {zeros(a.t, stored(oDims, 3))};
  std::vector<int64_t> ints = {a.causal, !a.mask.empty(), seqMajor, 0, 0, 0};
  std::vector<double> floats = {1 / std::sqrt(double(a.d))};
  if (a.softcap > 0 || a.dropout > 0)
    floats.push_back(a.softcap);
  if (a.dropout > 0) {
    floats.push_back(a.dropout);
    ints.push_back(17);
    if (a.headBlocks > 1) // [seed, data axis, stride, tensor axis, blocks]
      ints.insert(ints.end(), {0, 0, 1, a.headBlocks});
  }
  return makeCall(grad ? Opcode::AttentionGrad : Opcode::Attention, in, out,
                  ints, floats);
}

/// Scores are D-term dot products (|q|, |k| <= 1, scaled by 1 / sqrt(D):
/// error ~ D u); the softmax adds an Sk-term sum and the output an Sk-term
/// sum of p v (|v| <= 1), each summed in the GPU's own order (tiles, online
/// softmax): ~ (D + 2 Sk) u absolute, while max |o| is rarely below 0.1.
/// The gradient adds Dv-term products (dP) and, for dK and dV, sums over
/// the Sq rows of each of the `group` query heads. Hence 8 (terms) u of the
/// largest value: an f32 evaluation in numpy's order stays within 1% of it
/// on these shapes (f64 as the truth), while probabilities rounded to bf16
/// (2^-9) or a wrong index or mask exceed it.
Tolerance attentionOf(const AttentionShape &a, bool grad) {
  double terms = double(a.d + 2 * a.sk + 16) +
                 (grad ? double(a.dv + a.sq * (a.hq / a.hk)) : 0.0);
  return {8 * terms * computeEps(a.t) + oneUlp(a.t)};
}

/// Sets $TRAINC_CUDA_ATTENTION (runtime/src/cuda/AttentionCudnn.h) for a
/// test's lifetime: "trainc" keeps the CUDA device on trainc's own kernels
/// (whose tolerance, above, a 16-bit intermediate fails), "cudnn" demands
/// cuDNN's. The CPU device ignores it.
class ScopedAttentionEngine {
public:
  explicit ScopedAttentionEngine(const char *engine) {
    setenv("TRAINC_CUDA_ATTENTION", engine, 1);
  }
  ~ScopedAttentionEngine() { unsetenv("TRAINC_CUDA_ATTENTION"); }
};

TEST_P(DeviceKernels, Attention) {
  ScopedAttentionEngine engine("trainc");
  uint32_t seed = 1;
  for (const AttentionShape &a : kAttentionShapes) {
    check(attentionCall(a, false, seed), attentionOf(a, false));
    seed += 5;
  }
}

TEST_P(DeviceKernels, AttentionGrad) {
  ScopedAttentionEngine engine("trainc");
  uint32_t seed = 1;
  for (const AttentionShape &a : kAttentionShapes) {
    check(attentionCall(a, true, seed), attentionOf(a, true));
    seed += 5;
  }
}

/// The forward of `a` keeping each score row's log-sum-exp (ints[5]), and
/// its gradient reading them (trainc-attention-stats), fed the CPU
/// forward's result and log-sum-exps; `bits` as attentionCall's.
std::pair<Call, Call>
callsWithStatistics(const AttentionShape &a, uint32_t seed, int64_t bits,
                    void (*editMask)(TestTensor &) = nullptr) {
  Call forward = attentionCall(a, false, seed, bits & 0xf);
  if (editMask)
    editMask(forward.inputs.back());
  forward.ints[kAttentionStatsInt] = 1;
  forward.outputs.push_back(zeros(attentionLseType(a.t), {a.b, a.hq, a.sq}));
  std::vector<TestTensor> kept;
  Status s = runReference(forward, kept);
  EXPECT_TRUE(s.ok()) << s.toString();
  if (!s.ok())
    kept = forward.outputs;
  Call grad = attentionCall(a, true, seed, bits);
  if (editMask)
    editMask(grad.inputs.back());
  grad.ints[kAttentionStatsInt] = 1;
  grad.inputs.push_back(kept[0]);
  grad.inputs.push_back(kept[1]);
  return {forward, grad};
}

/// The statistics on every shape above, the bf16 ones on the tensor
/// cores, some tensors sequence-major. The log-sum-exp is m + log(l) of
/// the same scores and sums as the result: the result's tolerance, of max
/// |lse|. The GPU takes the gradient's D from dO . O, O rounded to its
/// storage type, where the CPU sums P dP: one more rounding (u of the
/// storage type) of a term of dS, hence 4 u more than the gradient's
/// tolerance for 16-bit types (f32 and f64: u is the compute type's,
/// already within it).
TEST_P(DeviceKernels, AttentionStatistics) {
  ScopedAttentionEngine engine("trainc");
  uint32_t seed = 3;
  const int64_t layouts[] = {0, 0x7f, 0b1011010};
  int n = 0;
  for (const AttentionShape &a : kAttentionShapes) {
    SCOPED_TRACE(testing::Message() << dtypeName(a.t) << " shape " << n);
    auto [forward, grad] = callsWithStatistics(a, seed, layouts[n++ % 3]);
    check(forward, attentionOf(a, false));
    Tolerance tol = attentionOf(a, true);
    if (a.t == kBF16 || a.t == kF16)
      tol.rel += 4 * storageEps(a.t);
    check(grad, tol);
    seed += 5;
  }
}

/// cuDNN's graphs with the statistics: the forward writing its Stats into
/// the log-sum-exps, the backward reading them and the result instead of
/// running the forward again; GPT-2's layout and a head-major one. The
/// same 4 u relative L2 bound as AttentionCudnn (cuDNN took D from the
/// 16-bit result before too); the log-sum-exps are f32 sums of the same
/// scores, within trainc's kernels' tolerance.
TEST_P(DeviceKernels, AttentionCudnnStatistics) {
  ScopedAttentionEngine engine("cudnn");
  const AttentionShape shapes[] = {
      {kBF16, 2, 12, 12, 129, 129, 64, 64, true, {}},
      {kBF16, 2, 4, 4, 100, 300, 64, 64, true, {}},
  };
  uint32_t seed = 31;
  for (const AttentionShape &a : shapes) {
    auto [forward, grad] = callsWithStatistics(a, seed, a.hq == 12 ? 0x7f : 0);
    Tolerance tol;
    tol.relL2 = 4 * storageEps(a.t);
    check(forward, {tol, attentionOf(a, false)});
    check(grad, tol);
    seed += 5;
  }
}

/// The gradient fed the device's own forward's result and log-sum-exps,
/// as a step runs them, with each engine making one or the other: trainc's
/// kernels both; cuDNN's forward and trainc's gradient; trainc's forward
/// and cuDNN's gradient (under `auto` a call cuDNN refuses runs trainc's
/// kernels, so a step may mix them). GPT-2's layout, where both take the
/// call. The reference reads the same inputs, so the gradient's tolerance
/// is its engine's (as above).
TEST_P(DeviceKernels, AttentionStatisticsFromTheDevicesForward) {
  const AttentionShape a{kBF16, 2, 12, 12, 129, 129, 64, 64, true, {}};
  const char *engines[][2] = {
      {"trainc", "trainc"}, {"cudnn", "trainc"}, {"trainc", "cudnn"}};
  uint32_t seed = 41;
  for (auto [forwardEngine, gradEngine] : engines) {
    SCOPED_TRACE(testing::Message()
                 << forwardEngine << " forward, " << gradEngine << " gradient");
    auto [forward, grad] = callsWithStatistics(a, seed, 0x7f);
    std::vector<TestTensor> kept, operands;
    {
      ScopedAttentionEngine engine(forwardEngine);
      Status s = runOnDevice(*device_, forward, kept, operands);
      ASSERT_TRUE(s.ok()) << s.toString();
    }
    grad.inputs[grad.inputs.size() - 2] = kept[0];
    grad.inputs.back() = kept[1];
    ScopedAttentionEngine engine(gradEngine);
    Tolerance tol = attentionOf(a, true);
    tol.rel += 4 * storageEps(a.t);
    if (std::string(gradEngine) == "cudnn")
      tol = Tolerance{0, false, 4 * storageEps(a.t)};
    check(grad, tol);
    seed += 5;
  }
}

/// Tensors stored [B, S, H, D] (a GPT's projections reshaped into heads,
/// read without a transpose): every tensor, or some; on the tensor cores
/// (bf16, head size 64, rows 12 heads * 64 apart as GPT-2's) and not.
TEST_P(DeviceKernels, AttentionSeqMajor) {
  ScopedAttentionEngine engine("trainc");
  const AttentionShape shapes[] = {
      {kBF16, 2, 12, 12, 129, 129, 64, 64, true, {}},
      {kBF16, 1, 4, 2, 70, 70, 48, 48, false, {1, 4, 70, 70}},
      {kF32, 2, 3, 3, 37, 37, 16, 8, true, {}},
      {kF64, 1, 4, 2, 5, 7, 8, 8, true, {1, 1, 5, 7}},
  };
  uint32_t seed = 7;
  for (const AttentionShape &a : shapes)
    for (bool grad : {false, true})
      for (int64_t bits :
           {int64_t(0x7f), int64_t(0b0101), int64_t(0b1010010)}) {
        bits &= grad ? 0x7f : 0xf;
        check(attentionCall(a, grad, seed, bits), attentionOf(a, grad));
        seed += 5;
      }
}

/// Makes `c` read q, k and v as windows of one random fused projection
/// [B, S, Hq + 2 Hk, D] (ints[3..4]), which it returns.
TestTensor readQkvFromOneProjection(Call &c, const AttentionShape &a,
                                    uint32_t seed) {
  TestTensor packed = uniform(a.t, {a.b, a.sq, a.hq + 2 * a.hk, a.d}, seed);
  for (int i = 0; i < 3; ++i)
    c.inputs[i] = packed;
  c.ints[3] = a.hq;
  c.ints[4] = a.hk;
  return packed;
}

/// q, k and v as windows of one fused projection [B, S, Hq + 2 Hk, D]
/// (ints[3..4]; trainc-read-qkv-in-place): GPT-2's 12 + 2 * 12 heads of 64
/// on the tensor cores, grouped heads with a mask, f32; the gradient
/// also into windows of one result.
TEST_P(DeviceKernels, AttentionQkvWindows) {
  ScopedAttentionEngine engine("trainc");
  const AttentionShape shapes[] = {
      {kBF16, 2, 12, 12, 129, 129, 64, 64, true, {}},
      {kBF16, 1, 4, 2, 70, 70, 48, 48, false, {1, 4, 70, 70}},
      {kF32, 2, 4, 2, 37, 37, 16, 16, true, {}},
  };
  uint32_t seed = 11;
  for (const AttentionShape &a : shapes)
    for (bool grad : {false, true}) {
      int64_t bits = grad ? 0x7f : 0xf;
      Call c = attentionCall(a, grad, seed, bits);
      TestTensor packed = readQkvFromOneProjection(c, a, seed + 7);
      check(c, attentionOf(a, grad));
      if (grad) { // dq, dk and dv in their windows of one result
        c.outputs = {zeros(a.t, packed.dims())};
        check(c, attentionOf(a, grad));
      }
      seed += 5;
    }
}

/// A row whose every key is masked (-inf) gives zeros, forward and back.
/// Also with the statistics: the row that sees no key keeps -inf, and its
/// gradient takes exp(-inf - -inf) as 0, never NaN. A row whose every key
/// a finite fill hides (the type's lowest, as Hugging Face masks a padded
/// query) has uniform probabilities; its lse rounds to the fill, so its
/// gradient takes exp(s - lse) times the row's factor (math/
/// AttentionStats.h), kept statistics or not: without it, 1 per key, 4
/// times the CPU's 1/4.
TEST_P(DeviceKernels, AttentionFullyMaskedRows) {
  ScopedAttentionEngine engine("trainc");
  auto hide = [](TestTensor &mask) {
    for (int64_t j = 0; j < 4; ++j)
      mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: no key.
    mask.set((1 * 3 + 2) * 4 + 0, -kInf);   // Batch 1, query 2: not key 0.
  };
  auto fill = [](TestTensor &mask) {
    double lowest =
        mask.dtype() == kBF16 ? -3.3895313892515355e38 : -3.4028234663852886e38;
    for (int64_t j = 0; j < 4; ++j)
      mask.set((0 * 3 + 1) * 4 + j, lowest); // Batch 0, query 1: uniform.
    mask.set((1 * 3 + 2) * 4 + 0, lowest);   // Batch 1, query 2: not key 0.
  };
  for (DType t : {kF32, kBF16})
    for (void (*edit)(TestTensor &) : {+hide, +fill}) {
      SCOPED_TRACE(testing::Message()
                   << dtypeName(t) << (edit == +hide ? " -inf" : " lowest"));
      AttentionShape a{t, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
      for (bool grad : {false, true}) {
        Call c = attentionCall(a, grad, 1);
        edit(c.inputs.back());
        check(c, attentionOf(a, grad));
      }
      SCOPED_TRACE("with statistics");
      auto [forward, grad] = callsWithStatistics(a, 1, 0, edit);
      check(forward, attentionOf(a, false));
      Tolerance tol = attentionOf(a, true);
      if (t == kBF16)
        tol.rel += 4 * storageEps(t);
      check(grad, tol);
    }
  // The factor's sweep over a row's keys with grouped heads, the causal
  // flag (query 0 sees keys 0 and 1, both hidden) and every tensor
  // sequence-major.
  auto fillQueryZero = [](TestTensor &mask) {
    double lowest =
        mask.dtype() == kBF16 ? -3.3895313892515355e38 : -3.4028234663852886e38;
    for (int64_t j = 0; j < mask.dims()[3]; ++j)
      mask.set(j, lowest); // Batch 0, query 0.
  };
  for (DType t : {kF32, kBF16}) {
    SCOPED_TRACE(testing::Message() << dtypeName(t) << " grouped, causal");
    AttentionShape a{t, 2, 4, 2, 5, 6, 8, 8, true, {2, 1, 5, 6}};
    for (int64_t bits : {int64_t(0), int64_t(0x7f)}) {
      auto [forward, grad] = callsWithStatistics(a, 7, bits, +fillQueryZero);
      check(forward, attentionOf(a, false));
      Tolerance tol = attentionOf(a, true);
      if (t == kBF16)
        tol.rel += 4 * storageEps(t);
      check(grad, tol);
      Call plain = attentionCall(a, true, 7, bits);
      fillQueryZero(plain.inputs.back());
      check(plain, attentionOf(a, true));
    }
  }
}

/// cuDNN's fused attention (AttentionCudnn.cpp; TRAINC_CUDA_ATTENTION=cudnn,
/// so a call cuDNN refuses fails here rather than falling back): GPT-2's
/// layout (windows of one fused projection, 12 heads of 64, causal), the
/// same head-major with Sq < Sk (a bottom-right causal mask), grouped
/// heads, and f16. cuDNN rounds the probabilities to the storage type for
/// P V and dS for dS K and dS^T Q, and takes the gradient's D from the
/// 16-bit result. Each is one rounding (unit roundoff u) of a term whose
/// weights are positive and sum to one, or a relative error of at most 2u
/// in D; with the result's own rounding, the relative L2 error of each
/// output against the f32 reference is below 3u when nothing else is
/// wrong (tools/attention_rounding.py, an emulation of exactly these
/// roundings in numpy, measures 0.5u to 0.7u on these shapes), so 4u: 1.6%
/// in bf16, 0.2% in f16. A wrong
/// mask, index, stride or scale is an error of order one.
TEST_P(DeviceKernels, AttentionCudnn) {
  ScopedAttentionEngine engine("cudnn");
  struct Case {
    AttentionShape shape;
    int64_t seqMajor;
    bool packed;
  };
  const Case cases[] = {
      {{kBF16, 2, 12, 12, 129, 129, 64, 64, true, {}}, 0x7f, true},
      {{kBF16, 2, 4, 4, 100, 300, 64, 64, true, {}}, 0, false},
      {{kBF16, 1, 8, 2, 77, 77, 32, 32, false, {}}, 0b0101, false},
      {{kF16, 2, 4, 4, 64, 64, 128, 128, true, {}}, 0, false},
  };
  uint32_t seed = 21;
  for (const Case &k : cases)
    for (bool grad : {false, true}) {
      const AttentionShape &a = k.shape;
      int64_t bits = k.seqMajor & (grad ? 0x7f : 0xf);
      Call c = attentionCall(a, grad, seed, bits);
      if (k.packed) {
        TestTensor qkv = readQkvFromOneProjection(c, a, seed + 7);
        if (grad)
          c.outputs = {zeros(a.t, qkv.dims())};
      }
      Tolerance tol;
      tol.relL2 = 4 * storageEps(a.t);
      check(c, tol);
      seed += 5;
    }
}

//===--- Cross-entropy ----------------------------------------------------===//

/// `classes` 0: every entry of the last dimension; else the first
/// `classes` (the rest padding, trainc-pad-classes).
Call crossEntropyCall(DType t, const std::vector<int64_t> &logitDims,
                      DType targetType, int64_t reduction, bool hasIgnore,
                      int64_t ignoreIndex, uint32_t seed, int64_t classes = 0) {
  if (classes == 0)
    classes = logitDims.back();
  std::vector<int64_t> positions(logitDims.begin(), logitDims.end() - 1);
  TestTensor targets =
      uniform(targetType, positions, seed + 1, 0, double(classes));
  if (hasIgnore)
    for (int64_t r = 0; r < targets.size(); r += 3)
      targets.set(r, double(ignoreIndex));
  DType resultType = t == kF16 || t == kBF16 ? kF32 : t;
  return makeCall(
      Opcode::SoftmaxCrossEntropy,
      {uniform(t, logitDims, seed, -5, 5), targets},
      {zeros(resultType, reduction == 0 ? positions : std::vector<int64_t>{})},
      {reduction, hasIgnore, ignoreIndex, classes});
}

TEST_P(DeviceKernels, SoftmaxCrossEntropyReductionsAndIgnoreIndex) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const auto &dims :
         {std::vector<int64_t>{3, 37, 129}, {37, 1}, {1, 4099}})
      for (int64_t reduction : {0, 1, 2})
        for (auto [hasIgnore, ignoreIndex] :
             {std::pair<bool, int64_t>{false, 0}, {true, -100}, {true, 0}}) {
          DType targetType = seed % 2 ? kI64 : kI32;
          Call c = crossEntropyCall(t, dims, targetType, reduction, hasIgnore,
                                    ignoreIndex, seed++);
          int64_t rows = count(dims) / dims.back();
          check(c, crossEntropyOf(t, dims.back(), reduction ? rows : 0,
                                  c.outputs[0].dtype()));
        }
}

/// A padded class dimension: 1,001 classes in rows of 1,024, 37 in 40.
TEST_P(DeviceKernels, SoftmaxCrossEntropyPaddedClasses) {
  uint32_t seed = 400;
  for (DType t : kFloatTypes)
    for (auto [dims, classes] :
         {std::pair<std::vector<int64_t>, int64_t>{{7, 1024}, 1001},
          {{3, 5, 40}, 37}})
      for (int64_t reduction : {0, 2}) {
        Call c = crossEntropyCall(t, dims, kI64, reduction, true, -100, seed++,
                                  classes);
        int64_t rows = count(dims) / dims.back();
        check(c, crossEntropyOf(t, classes, reduction ? rows : 0,
                                c.outputs[0].dtype()));
      }
}

/// With padding (129 classes of 136; 1 of 8): the padding's gradient is 0.
TEST_P(DeviceKernels, SoftmaxCrossEntropyGrad) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (auto [dims, classes] :
         {std::pair<std::vector<int64_t>, int64_t>{{3, 37, 129}, 129},
          {{37, 1}, 1},
          {{3, 37, 136}, 129},
          {{37, 8}, 1}})
      for (bool inPlace : {false, true}) {
        std::vector<int64_t> positions(dims.begin(), dims.end() - 1);
        TestTensor targets = uniform(inPlace ? kI32 : kI64, positions, seed + 1,
                                     0, double(classes));
        // An ignored position (out of range): no one-hot term, weight 0.
        TestTensor weight =
            uniform(t == kBF16 ? kF32 : t, positions, seed + 2, 0, 1);
        for (int64_t r = 0; r < targets.size(); r += 4) {
          targets.set(r, -100);
          weight.set(r, 0);
        }
        Call c = makeCall(Opcode::SoftmaxCrossEntropyGrad,
                          {uniform(t, dims, seed, -5, 5), targets, weight},
                          {zeros(t, dims)}, {classes});
        if (inPlace)
          c.aliases = {0}; // The result in the logits' memory.
        check(c, crossEntropyOf(t, classes, 0, t));
        seed += 3;
      }
}

/// The loss and the gradient in one call (trainc-fuse-loss-grad), for
/// every reduction, ignored positions (a third) and padded classes, the
/// gradient in fresh memory or over the logits, i32 or i64 targets.
TEST_P(DeviceKernels, SoftmaxCrossEntropyAndGrad) {
  uint32_t seed = 700;
  for (DType t : kFloatTypes)
    for (auto [dims, classes] :
         {std::pair<std::vector<int64_t>, int64_t>{{3, 37, 129}, 129},
          {{7, 1024}, 1001},
          {{37, 1}, 1}})
      for (int64_t reduction : {0, 1, 2})
        for (bool inPlace : {false, true}) {
          Call loss = crossEntropyCall(t, dims, seed % 2 ? kI32 : kI64,
                                       reduction, true, -100, seed, classes);
          std::vector<int64_t> positions(dims.begin(), dims.end() - 1);
          TestTensor weight = uniform(t == kBF16 || t == kF16 ? kF32 : t,
                                      positions, seed + 2, 0, 1);
          Call c = makeCall(Opcode::SoftmaxCrossEntropyAndGrad,
                            {loss.inputs[0], loss.inputs[1], weight},
                            {loss.outputs[0], zeros(t, dims)}, loss.ints);
          if (inPlace)
            c.aliases = {-1, 0}; // The gradient in the logits' memory.
          int64_t rows = count(positions);
          DType lossType = c.outputs[0].dtype();
          check(c, {crossEntropyOf(t, classes, reduction ? rows : 0, lossType),
                    crossEntropyOf(t, classes, 0, t)});
          seed += 3;
        }
}

/// A 16-bit loss of 16-bit logits (the dialect's inferred type; the
/// precision pass gives f32): computed in f32 and rounded once, for the
/// loss alone and with its gradient, every reduction.
TEST_P(DeviceKernels, SoftmaxCrossEntropySixteenBitLoss) {
  uint32_t seed = 900;
  for (DType t : {kBF16, kF16})
    for (int64_t reduction : {0, 1, 2})
      for (bool withGrad : {false, true}) {
        std::vector<int64_t> dims = {5, 7, 300}, positions = {5, 7};
        Call loss =
            crossEntropyCall(t, dims, kI64, reduction, true, -100, seed, 0);
        loss.outputs[0] =
            zeros(t, reduction == 0 ? positions : std::vector<int64_t>{});
        Tolerance tol = crossEntropyOf(t, 300, reduction ? 35 : 0, t);
        if (withGrad) {
          Call c = makeCall(Opcode::SoftmaxCrossEntropyAndGrad,
                            {loss.inputs[0], loss.inputs[1],
                             uniform(kF32, positions, seed + 2)},
                            {loss.outputs[0], zeros(t, dims)}, loss.ints);
          check(c, {tol, crossEntropyOf(t, 300, 0, t)});
        } else {
          check(loss, tol);
        }
        seed += 3;
      }
}

//===--- ScatterAdd -------------------------------------------------------===//

/// The CUDA file (cuda/Scatter.cu) adds each row's updates in index order
/// into 0, as the CPU does: bit for bit, repeated indices included.
TEST_P(DeviceKernels, ScatterAddWithRepeatedIndices) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes) {
    // 129 updates into 4 rows: each row gets ~32, from negative and
    // non-negative indices.
    check(makeCall(
        Opcode::ScatterAdd,
        {uniform(t, {129, 5}, seed), uniform(kI64, {129}, seed + 1, -4, 4)},
        {zeros(t, {4, 5})}, {0}));
    // Axis 1 with rank-2 i32 indices: result [3, 7, 2], indices [2, 3].
    check(makeCall(Opcode::ScatterAdd,
                   {uniform(t, {3, 2, 3, 2}, seed + 2),
                    uniform(kI32, {2, 3}, seed + 3, -7, 7)},
                   {zeros(t, {3, 7, 2})}, {1}));
    // The innermost axis, and rows that receive nothing.
    check(makeCall(Opcode::ScatterAdd,
                   {uniform(t, {5, 37}, seed + 4),
                    uniform(kI64, {37}, seed + 5, -129, 64)},
                   {zeros(t, {5, 129})}, {1}));
    seed += 6;
  }
  // Integers (StableHLO's scatter with an add) wrap as on the CPU.
  for (DType t : {kI32, kI64})
    check(makeCall(
        Opcode::ScatterAdd,
        {randomBits(t, {129, 5}, seed++), uniform(kI64, {129}, seed++, -4, 4)},
        {zeros(t, {4, 5})}, {0}));
}

//===--- Argsort ----------------------------------------------------------===//

/// The CUDA file (cuda/Sort.cu) sorts math/SortKey.h's keys with CUB's
/// stable segmented sort, the CPU with std::stable_sort: the same indices,
/// ties included (16-bit floats and small integer ranges repeat values).
TEST_P(DeviceKernels, ArgsortAlongEveryAxis) {
  uint32_t seed = 1;
  for (DType t : {kF64, kF32, kF16, kBF16, kI32, kI64})
    for (int64_t descending : {0, 1})
      for (int64_t total : {0, 1}) {
        bool integer = t == kI32 || t == kI64;
        double lo = integer ? -5 : -2, hi = integer ? 5 : 2;
        check(makeCall(Opcode::Argsort, {uniform(t, {1000}, seed, lo, hi)},
                       {zeros(kI64, {1000})}, {0, descending, total}));
        check(makeCall(Opcode::Argsort,
                       {uniform(t, {3, 37, 5}, seed + 1, lo, hi)},
                       {zeros(kI64, {3, 37, 5})}, {1, descending, total}));
        check(makeCall(Opcode::Argsort,
                       {uniform(t, {6, 129}, seed + 2, lo, hi)},
                       {zeros(kI64, {6, 129})}, {1, descending, total}));
        seed += 3;
      }
  // Every bit pattern (signed zeros, infinities, NaNs of both signs), in
  // both orders.
  for (DType t : {kF64, kF32, kF16, kBF16})
    for (int64_t descending : {0, 1})
      for (int64_t total : {0, 1})
        check(makeCall(Opcode::Argsort, {randomBits(t, {7, 300}, seed++)},
                       {zeros(kI64, {7, 300})}, {1, descending, total}));
}

//===--- ExtractPatches, FoldPatches
//---------------------------------------===//

/// cuda/Patches.cu: extract_patches copies bytes (the same bytes, NaN
/// payloads included); fold_patches is math::foldPatchesAt per element of
/// x, the sum the CPU forms row by row in the same order: the same bits.
TEST_P(DeviceKernels, PatchesExtractAndFold) {
  struct Geometry {
    std::vector<int64_t> x, patches, ints; // ints: kernel, strides, dil, low
  };
  const std::vector<Geometry> geometries = {
      // 3x3, stride 1, padding 1 (a ResNet block's), odd sizes.
      {{3, 5, 9, 7}, {5, 3, 3, 3, 9, 7}, {3, 3, 1, 1, 1, 1, 1, 1}},
      // 7x7 on 2x2 with padding 3 (ConvNeXt's depthwise, late stage).
      {{2, 4, 2, 2}, {4, 7, 7, 2, 2, 2}, {7, 7, 1, 1, 1, 1, 3, 3}},
      // Stride 2, dilation 2, uneven padding.
      {{2, 3, 11, 6}, {3, 2, 3, 2, 6, 3}, {2, 3, 2, 2, 2, 2, 1, 0}},
      // 1-D (Whisper's front end) and 3-D.
      {{2, 6, 33}, {6, 3, 2, 17}, {3, 2, 1, 1}},
      {{1, 2, 4, 5, 3},
       {2, 2, 2, 2, 1, 3, 4, 2},
       {2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0}},
  };
  uint32_t seed = 1;
  for (const Geometry &g : geometries) {
    for (DType t : {kF64, kF32, kF16, kBF16, kI64})
      check(makeCall(Opcode::ExtractPatches, {randomBits(t, g.x, seed++)},
                     {zeros(t, g.patches)}, g.ints),
            kSameBytes);
    for (DType t : {kF64, kF32, kF16, kBF16})
      check(makeCall(Opcode::FoldPatches,
                     {uniform(t, g.patches, seed++, -1, 1)}, {zeros(t, g.x)},
                     g.ints));
  }
}

//===--- AdamwUpdate ------------------------------------------------------===//

/// One AdamW step on n elements; `skip` -1: no skip flag, else its value;
/// `inPlace`: the results are the memory of param, exp_avg, exp_avg_sq.
Call adamwCall(DType t, int64_t n, int skip, bool inPlace, uint32_t seed) {
  std::vector<TestTensor> in = {
      uniform(t, {n}, seed, -1, 1),         // param
      uniform(t, {n}, seed + 1, -1, 1),     // grad
      uniform(t, {n}, seed + 2, -0.1, 0.1), // exp_avg
      uniform(t, {n}, seed + 3, 0, 0.01),   // exp_avg_sq
      scalar(t, -1e-3),                     // neg_step_size
      scalar(t, 0.3),                       // bias_correction2_sqrt
      scalar(t, 0.9999),                    // decay_factor
      scalar(t, 0.5)};                      // grad_scale
  if (skip >= 0)
    in.push_back(scalar(kI1, skip));
  Call c = makeCall(Opcode::AdamwUpdate, in,
                    {zeros(t, {n}), zeros(t, {n}), zeros(t, {n})}, {},
                    {0.9, 0.999, 1e-8});
  if (inPlace)
    c.aliases = {0, 2, 3};
  return c;
}

/// math/AdamW.h's element update on both devices: bit for bit.
TEST_P(DeviceKernels, AdamwUpdateInPlaceAndSkipped) {
  uint32_t seed = 1;
  for (DType t : {kF32, kF64})
    for (int64_t n : {1, 37, 4099})
      for (int skip : {-1, 0, 1})
        for (bool inPlace : {true, false}) {
          check(adamwCall(t, n, skip, inPlace, seed));
          seed += 4;
        }
}

/// A multi-tensor update: `sizes.size()` parameters of those element
/// counts (0 included), more than the CUDA kernel takes per launch.
Call adamwGroupCall(DType t, const std::vector<int64_t> &sizes, int skip,
                    bool inPlace, uint32_t seed) {
  size_t n = sizes.size();
  std::vector<TestTensor> in(4 * n, zeros(t, {0})), out(3 * n, zeros(t, {0}));
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> shape = {sizes[i]};
    in[i] = uniform(t, shape, seed + 4 * i, -1, 1);
    in[n + i] = uniform(t, shape, seed + 4 * i + 1, -1, 1);
    in[2 * n + i] = uniform(t, shape, seed + 4 * i + 2, -0.1, 0.1);
    in[3 * n + i] = uniform(t, shape, seed + 4 * i + 3, 0, 0.01);
    for (size_t k = 0; k < 3; ++k)
      out[k * n + i] = zeros(t, shape);
  }
  for (double v : {-1e-3, 0.3, 0.9999, 0.5})
    in.push_back(scalar(t, v));
  if (skip >= 0)
    in.push_back(scalar(kI1, skip));
  Call c = makeCall(Opcode::AdamwUpdate, in, out, {}, {0.9, 0.999, 1e-8});
  if (inPlace)
    for (size_t k : {0, 2, 3})
      for (size_t i = 0; i < n; ++i)
        c.aliases.push_back(int(k * n + i));
  return c;
}

/// 40 parameters: two launches of the CUDA kernel, empty ones among them.
TEST_P(DeviceKernels, AdamwUpdateGroup) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 40; ++i)
    sizes.push_back(i % 7 == 3 ? 0 : (i * 611) % 3001 + 1);
  uint32_t seed = 1;
  for (DType t : {kF32, kF64})
    for (int skip : {-1, 0, 1})
      for (bool inPlace : {true, false}) {
        check(adamwGroupCall(t, sizes, skip, inPlace, seed));
        seed += 200;
      }
}

//===--- SumOfSquares -----------------------------------------------------===//

/// math/SumOfSquares.h's order on both devices: bit for bit. Sizes around
/// the chunk (2,048) and the 1,024 accumulators (3,000,000 elements make
/// 1,465 chunks), 0 included, and 40 operands (two CUDA launches).
TEST_P(DeviceKernels, SumOfSquares) {
  uint32_t seed = 1;
  for (DType t : {kF32, kF64, kBF16, kF16}) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{1},
                                       {0, 7},
                                       {2047, 2048, 2049},
                                       {3000000, 129}}) {
      std::vector<TestTensor> in;
      for (int64_t n : sizes)
        in.push_back(uniform(t, {n}, seed++, -2, 2));
      check(makeCall(Opcode::SumOfSquares, in, {zeros(kF64, {})}));
    }
    std::vector<TestTensor> many;
    for (int i = 0; i < 40; ++i)
      many.push_back(uniform(t, {i % 5 == 0 ? 0 : i * 97 + 5, 3}, seed++));
    check(makeCall(Opcode::SumOfSquares, many, {zeros(kF64, {})}));
  }
}

} // namespace
} // namespace trainc
