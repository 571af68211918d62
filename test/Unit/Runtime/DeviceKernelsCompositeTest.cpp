//===- DeviceKernelsCompositeTest.cpp - Composites on a device vs the CPU -===//
//
// The DeviceKernels suite (DeviceKernelsTest.cpp, which describes it and
// instantiates it for "cpu" and "cuda") for the composite and optimizer
// kernels: softmax, norms, GELU, dropout, attention, cross-entropy,
// scatter-add, adamw_update and sum_of_squares.
//
//===----------------------------------------------------------------------===//

#include "DeviceKernelsHarness.h"

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
    check(makeCall(Opcode::Softmax, {uniform(t, {2, 4099}, seed++, -20, 20)},
                   {zeros(t, {2, 4099})}, {1}),
          softmaxOf(t, 4099));
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
};

/// The CUDA file (cuda/Norm.cu) states the CPU's summation order for every
/// dtype, so norms are compared bit for bit.
TEST_P(DeviceKernels, LayerNormAndRmsNorm) {
  uint32_t seed = 1;
  for (bool layer : {true, false})
    for (DType t : kFloatTypes)
      for (const NormCase &c : kNormCases) {
        std::vector<int64_t> normalized(c.dims.begin() + c.axis, c.dims.end());
        std::vector<TestTensor> in = {uniform(t, c.dims, seed++, -2, 2)};
        if (c.scale)
          in.push_back(uniform(t, normalized, seed++, 0.5, 2));
        if (layer && c.bias)
          in.push_back(uniform(t, normalized, seed++, -1, 1));
        std::vector<int64_t> ints = {c.axis, c.scale};
        if (layer)
          ints.push_back(c.bias);
        check(makeCall(layer ? Opcode::LayerNorm : Opcode::RmsNorm, in,
                       {zeros(t, c.dims)}, ints, {c.eps}));
      }
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

//===--- Attention --------------------------------------------------------===//

struct AttentionShape {
  DType t;
  int64_t b, hq, hk, sq, sk, d, dv;
  bool causal;
  std::vector<int64_t> mask; // Empty: no mask.
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
    {kF32, 1, 2, 2, 129, 129, 64, 64, true, {}}, // whole tiles
    {kF32, 1, 1, 1, 1, 1, 1, 1, false, {}},
    {kF64, 2, 4, 2, 5, 7, 8, 8, true, {1, 1, 5, 7}},
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
};

/// attention (or attention_grad) on random q, k, v (cotangent) and mask.
Call attentionCall(const AttentionShape &a, bool grad, uint32_t seed) {
  std::vector<int64_t> qDims = {a.b, a.hq, a.sq, a.d},
                       kDims = {a.b, a.hk, a.sk, a.d},
                       vDims = {a.b, a.hk, a.sk, a.dv},
                       oDims = {a.b, a.hq, a.sq, a.dv};
  std::vector<TestTensor> in = {uniform(a.t, qDims, seed),
                                uniform(a.t, kDims, seed + 1),
                                uniform(a.t, vDims, seed + 2)};
  if (grad)
    in.push_back(uniform(a.t, oDims, seed + 3));
  if (!a.mask.empty())
    in.push_back(uniform(a.t, a.mask, seed + 4, -2, 2));
  std::vector<TestTensor> out;
  if (grad)
    out = {zeros(a.t, qDims), zeros(a.t, kDims), zeros(a.t, vDims)};
  else
    out = {zeros(a.t, oDims)};
  return makeCall(grad ? Opcode::AttentionGrad : Opcode::Attention, in, out,
                  {a.causal, !a.mask.empty()}, {1 / std::sqrt(double(a.d))});
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

TEST_P(DeviceKernels, Attention) {
  uint32_t seed = 1;
  for (const AttentionShape &a : kAttentionShapes) {
    check(attentionCall(a, false, seed), attentionOf(a, false));
    seed += 5;
  }
}

TEST_P(DeviceKernels, AttentionGrad) {
  uint32_t seed = 1;
  for (const AttentionShape &a : kAttentionShapes) {
    check(attentionCall(a, true, seed), attentionOf(a, true));
    seed += 5;
  }
}

/// A row whose every key is masked (-inf) gives zeros, forward and back.
TEST_P(DeviceKernels, AttentionFullyMaskedRows) {
  for (DType t : {kF32, kBF16})
    for (bool grad : {false, true}) {
      AttentionShape a{t, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
      Call c = attentionCall(a, grad, 1);
      TestTensor &mask = c.inputs.back();
      for (int64_t j = 0; j < 4; ++j)
        mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: no key.
      mask.set((1 * 3 + 2) * 4 + 0, -kInf);   // Batch 1, query 2: not key 0.
      check(c, attentionOf(a, grad));
    }
}

//===--- Cross-entropy ----------------------------------------------------===//

Call crossEntropyCall(DType t, const std::vector<int64_t> &logitDims,
                      DType targetType, int64_t reduction, bool hasIgnore,
                      int64_t ignoreIndex, uint32_t seed) {
  int64_t classes = logitDims.back();
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
      {reduction, hasIgnore, ignoreIndex});
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

TEST_P(DeviceKernels, SoftmaxCrossEntropyGrad) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const auto &dims : {std::vector<int64_t>{3, 37, 129}, {37, 1}})
      for (bool inPlace : {false, true}) {
        int64_t classes = dims.back();
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
                          {zeros(t, dims)});
        if (inPlace)
          c.aliases = {0}; // The result in the logits' memory.
        check(c, crossEntropyOf(t, classes, 0, t));
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
