//===- AttentionCudnnTest.cpp - cuDNN attention, what needs no GPU --------===//
//
// The parts of runtime/src/cuda/AttentionCudnn.cpp that run without a GPU:
// which calls it refuses by their shape, $TRAINC_CUDA_ATTENTION, and the
// cuDNN graphs it builds checked by cuDNN's frontend for sm_80 and sm_90
// (libcudnn is needed for that, a GPU is not), with and without the
// softmax statistics kept (ints[5]: the forward writes them, the gradient
// reads them and the forward's result). Running the graphs against the
// CPU is DeviceKernels.AttentionCudnn's, on a GPU.
//
//===----------------------------------------------------------------------===//

#include "cuda/AttentionCudnn.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace trainc::cuda {
namespace {

/// Stand-ins for device addresses (never dereferenced), 256-byte aligned.
void *fakeAddress(uintptr_t n) { return reinterpret_cast<void *>(n << 8); }

/// GPT-2's attention call (batch 8, 12 heads of 64, sequence 1,024,
/// causal, bf16) as trainc compiles it: q, k and v windows of the fused
/// projection [B, S, 36, 64], the result [B, S, 12, 64], and for the
/// gradient dq, dk and dv windows of one [B, S, 36, 64] result.
CudnnAttentionCall gpt2(bool grad) {
  CudnnAttentionCall c;
  c.grad = grad;
  c.dtype = DType::BF16;
  c.batch = 8;
  c.hq = c.hk = 12;
  c.sq = c.sk = 1024;
  c.d = c.dv = 64;
  c.scale = 0.125;
  c.causal = true;
  const int64_t packed[4] = {8, 1024, 36, 64}, heads[4] = {8, 1024, 12, 64};
  const math::QkvHeads qkv{12, 12};
  for (int i = 0; i < 3; ++i)
    c.layout[i] = math::attentionLayout(packed, 0x7f, qkv, i);
  c.layout[3] = math::headLayout(heads, /*seqMajor=*/true);
  for (int i = 4; i < kAttentionGradTensors; ++i)
    c.layout[i] = math::attentionLayout(packed, 0x7f, qkv, i, grad);
  c.query = c.key = c.value = fakeAddress(1);
  c.cotangent = fakeAddress(2);
  c.result = fakeAddress(3);
  if (grad)
    c.dQuery = c.dKey = c.dValue = fakeAddress(4);
  return c;
}

/// The same sizes head-major [B, H, S, D], every tensor its own, with
/// `sq` queries and `sk` keys.
CudnnAttentionCall headMajor(bool grad, int64_t sq, int64_t sk, bool causal) {
  CudnnAttentionCall c = gpt2(grad);
  c.batch = 2;
  c.sq = sq;
  c.sk = sk;
  c.causal = causal;
  const int64_t q[4] = {2, 12, sq, 64}, k[4] = {2, 12, sk, 64};
  for (int i : {0, 3, 4})
    c.layout[i] = math::headLayout(q, false);
  for (int i : {1, 2, 5, 6})
    c.layout[i] = math::headLayout(k, false);
  return c;
}

/// `c` keeping the softmax statistics: the forward writes each row's
/// log-sum-exp; the gradient reads them and the forward's result, stored
/// as the cotangent (as trainc compiles it: GPT-2's [B, S, 12, 64]).
CudnnAttentionCall withStats(CudnnAttentionCall c) {
  c.stats = true;
  c.lse = fakeAddress(5);
  if (c.grad) {
    c.forwardResult = fakeAddress(6);
    c.forwardLayout = c.layout[3];
  }
  return c;
}

TEST(AttentionCudnn, TakesGpt2sCallsByShape) {
  EXPECT_EQ(cudnnAttentionRefusal(gpt2(false)), "");
  EXPECT_EQ(cudnnAttentionRefusal(gpt2(true)), "");
  EXPECT_EQ(cudnnAttentionRefusal(headMajor(true, 100, 300, true)), "");
  EXPECT_EQ(cudnnAttentionRefusal(withStats(gpt2(false))), "");
  EXPECT_EQ(cudnnAttentionRefusal(withStats(gpt2(true))), "");
  EXPECT_EQ(cudnnAttentionRefusal(withStats(headMajor(true, 100, 300, true))),
            "");
}

TEST(AttentionCudnn, RefusesWhatItCannotTakeAndSaysWhy) {
  auto refusal = [](CudnnAttentionCall c) { return cudnnAttentionRefusal(c); };
  CudnnAttentionCall c = gpt2(true);
  c.dtype = DType::F32;
  EXPECT_NE(refusal(c).find("dtype f32"), std::string::npos) << refusal(c);
  c = gpt2(true);
  c.hasMask = true;
  EXPECT_NE(refusal(c).find("mask"), std::string::npos) << refusal(c);
  c = gpt2(false);
  c.softcap = 50;
  EXPECT_EQ(refusal(c), "a soft cap");
  c = gpt2(false);
  c.dropout = 0.1;
  EXPECT_EQ(refusal(c), "dropout (cuDNN's masks are not trainc's)");
  c = gpt2(true);
  c.dv = 60;
  EXPECT_NE(refusal(c).find("head size 60"), std::string::npos) << refusal(c);
  c = headMajor(false, 300, 100, true);
  EXPECT_NE(refusal(c).find("more queries than keys"), std::string::npos)
      << refusal(c);
  for (bool keys : {false, true}) {
    c = gpt2(true);
    (keys ? c.sk : c.sq) = 0;
    EXPECT_NE(refusal(c).find("an empty sequence"), std::string::npos)
        << refusal(c);
  }
  c = gpt2(true);
  c.dKey = nullptr;
  EXPECT_NE(refusal(c).find("leaves out"), std::string::npos) << refusal(c);
  c = gpt2(true);
  c.layout[2].seqStride += 4; // 8 bytes: not a 16-byte step
  EXPECT_NE(refusal(c).find("tensor 2 is not 16-byte aligned"),
            std::string::npos)
      << refusal(c);
  c = gpt2(false);
  c.result = static_cast<char *>(c.result) + 2;
  EXPECT_NE(refusal(c).find("tensor 3 is not 16-byte aligned"),
            std::string::npos)
      << refusal(c);
  c = withStats(gpt2(true));
  c.forwardLayout.seqStride += 4;
  EXPECT_NE(refusal(c).find("forward's result is not 16-byte aligned"),
            std::string::npos)
      << refusal(c);
  for (bool grad : {false, true}) {
    c = withStats(gpt2(grad));
    c.lse = static_cast<char *>(c.lse) + 4;
    EXPECT_NE(refusal(c).find("log-sum-exps are not 16-byte aligned"),
              std::string::npos)
        << refusal(c);
  }
}

/// A call cuDNN does not take: with TRAINC_CUDA_ATTENTION=cudnn an error
/// naming the variable and the reason; under auto nothing queued (trainc's
/// kernels run) and no error; under trainc cuDNN is never asked. Refused
/// by its shape, so no GPU, stream or libcudnn is touched.
TEST(AttentionCudnn, ACallItDoesNotTakeIsAnErrorOnlyWhenCudnnIsDemanded) {
  KernelCall call;
  call.op = Opcode::AttentionGrad;
  CudnnAttentionCall c = gpt2(true);
  c.dtype = DType::F32;
  bool ran = true;
  Status s = runCudnnAttention(call, c, AttentionEngine::kCudnn, ran);
  EXPECT_FALSE(ran);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.toString();
  for (const char *word :
       {"attention_grad", "TRAINC_CUDA_ATTENTION=cudnn", "dtype f32"})
    EXPECT_NE(s.message().find(word), std::string::npos)
        << "'" << word << "' is not in: " << s.toString();
  for (AttentionEngine engine :
       {AttentionEngine::kAuto, AttentionEngine::kTrainc}) {
    // A call cuDNN takes is never asked of it under trainc. (Under auto it
    // would be planned and queued on call.context's stream: none here.)
    if (engine == AttentionEngine::kTrainc) {
      ran = true;
      s = runCudnnAttention(call, gpt2(true), engine, ran);
      EXPECT_TRUE(s.ok()) << s.toString();
      EXPECT_FALSE(ran);
    }
    ran = true;
    s = runCudnnAttention(call, c, engine, ran);
    EXPECT_TRUE(s.ok()) << s.toString();
    EXPECT_FALSE(ran);
  }
}

TEST(AttentionCudnn, EngineComesFromTheEnvironment) {
  struct Case {
    const char *value;
    AttentionEngine engine;
  };
  for (Case k :
       {Case{"", AttentionEngine::kAuto}, Case{"auto", AttentionEngine::kAuto},
        Case{"cudnn", AttentionEngine::kCudnn},
        Case{"trainc", AttentionEngine::kTrainc}}) {
    ASSERT_EQ(setenv("TRAINC_CUDA_ATTENTION", k.value, 1), 0);
    AttentionEngine engine = AttentionEngine::kTrainc;
    Status s = attentionEngine(engine);
    EXPECT_TRUE(s.ok()) << k.value << ": " << s.toString();
    EXPECT_EQ(engine, k.engine) << k.value;
  }
  ASSERT_EQ(setenv("TRAINC_CUDA_ATTENTION", "flash", 1), 0);
  AttentionEngine engine;
  Status s = attentionEngine(engine);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("TRAINC_CUDA_ATTENTION is 'flash'"),
            std::string::npos)
      << s.toString();
  unsetenv("TRAINC_CUDA_ATTENTION");
  EXPECT_TRUE(attentionEngine(engine).ok());
  EXPECT_EQ(engine, AttentionEngine::kAuto);
}

/// The graphs for GPT-2's calls, and for Sq < Sk under a bottom-right
/// causal mask, with and without the statistics kept (the training-mode
/// forward writing them; the backward alone reading them and the
/// forward's result in the cotangent's layout), pass cuDNN's frontend
/// checks for both architectures trainc's CUDA code is built for; a head
/// size cuDNN's backward does not take fails them, so the check is not
/// empty.
TEST(AttentionCudnn, GraphsPassCudnnsChecks) {
  std::string probe = cudnnAttentionCheck(gpt2(false), 90);
  if (probe.find("this build has no cuDNN attention") != std::string::npos ||
      probe.find("cannot open libcudnn") != std::string::npos)
    GTEST_SKIP() << probe;
  for (int sm : {80, 90})
    for (bool grad : {false, true})
      for (bool stats : {false, true}) {
        auto keep = [&](CudnnAttentionCall c) {
          return stats ? withStats(c) : c;
        };
        EXPECT_EQ(cudnnAttentionCheck(keep(gpt2(grad)), sm), "")
            << "sm " << sm << " grad " << grad << " stats " << stats;
        EXPECT_EQ(
            cudnnAttentionCheck(keep(headMajor(grad, 100, 300, true)), sm), "")
            << "sm " << sm << " grad " << grad << " stats " << stats;
        EXPECT_EQ(cudnnAttentionCheck(keep(headMajor(grad, 77, 77, false)), sm),
                  "")
            << "sm " << sm << " grad " << grad << " stats " << stats;
      }
  for (bool stats : {false, true}) {
    CudnnAttentionCall wide = headMajor(true, 64, 64, false);
    wide.d = wide.dv = 512;
    for (int i = 0; i < kAttentionGradTensors; ++i)
      wide.layout[i].features = 512;
    if (stats)
      wide = withStats(wide);
    std::string refusal = cudnnAttentionCheck(wide, 90);
    EXPECT_NE(refusal.find("backward"), std::string::npos)
        << "stats " << stats << ": " << refusal;
  }
}

} // namespace
} // namespace trainc::cuda
