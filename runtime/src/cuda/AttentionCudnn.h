//===- AttentionCudnn.h - Attention through cuDNN's fused SDPA --*- C++ -*-===//
//
// The CUDA device's attention and its gradient through cuDNN's fused
// scaled-dot-product-attention graphs (flash attention: no S x S tensor,
// tensor cores, one pass), for the calls cuDNN takes; the others run
// Attention.cu's and AttentionTensorCore.cu's kernels. Which one runs is
// $TRAINC_CUDA_ATTENTION's choice (attentionEngine below). The file that
// implements it is host C++ (cuDNN's header-only frontend, libcudnn opened
// at run time), so this header names no CUDA or cuDNN type.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_ATTENTIONCUDNN_H
#define TRAINC_RUNTIME_CUDA_ATTENTIONCUDNN_H

#include "base/Status.h"
#include "device/KernelContext.h"
#include "math/AttentionLayout.h"

#include <string>

namespace trainc::cuda {

/// Which attention the CUDA device runs, by $TRAINC_CUDA_ATTENTION:
/// `auto` (unset or empty: cuDNN where it takes the call, else trainc's
/// kernels), `cudnn` (cuDNN or an error naming why not: for benchmarks and
/// the GPU checks, so that a fallback cannot hide) and `trainc` (never
/// cuDNN). Another value is an error naming the variable.
enum class AttentionEngine { kAuto, kCudnn, kTrainc };
Status attentionEngine(AttentionEngine &out);

/// One attention or attention_grad call as cuDNN needs it: the logical
/// sizes, each tensor's layout (ExecutableFormat.h's numbering: q, k, v,
/// then the result, or the cotangent, dq, dk and dv) and its storage (the
/// layout's `base` is added here).
struct CudnnAttentionCall {
  bool grad = false;
  DType dtype = DType::F32;
  int64_t batch = 0, hq = 0, hk = 0, sq = 0, sk = 0, d = 0, dv = 0;
  double scale = 1;
  /// graph.attention's soft cap, 0 for none (cuDNN's graphs have none:
  /// refused).
  double softcap = 0;
  /// graph.attention's dropout ratio, 0 for none (refused: cuDNN draws its
  /// masks with its own generator, not trainc's stream).
  double dropout = 0;
  bool causal = false, hasMask = false;
  math::HeadLayout layout[kAttentionGradTensors];
  const void *query = nullptr, *key = nullptr, *value = nullptr;
  /// The gradient's cotangent.
  const void *cotangent = nullptr;
  /// The forward's result; the gradient's results (windows of one tensor
  /// when packed).
  void *result = nullptr, *dQuery = nullptr, *dKey = nullptr, *dValue = nullptr;
  /// The softmax statistics kept (ints[5], ExecutableFormat.h): the
  /// forward writes each query row's log-sum-exp, natural log, f32 [B, Hq,
  /// Sq] contiguous, to `lse`; the gradient reads them and the forward's
  /// result (`forwardResult`, laid out as `forwardLayout`) and runs no
  /// forward of its own.
  bool stats = false;
  void *lse = nullptr;
  const void *forwardResult = nullptr;
  math::HeadLayout forwardLayout;
};

/// Why cuDNN's fused attention does not take `c` by its shape alone (the
/// dtype, a mask, head sizes, causal alignment, strides and alignment), or
/// "" when it may: cuDNN's own support check has the last word. Needs no
/// GPU and no cuDNN (AttentionCudnnTest).
std::string cudnnAttentionRefusal(const CudnnAttentionCall &c);

/// Builds `c`'s graphs (the forward; for a gradient also the backward) for
/// GPU architecture `sm` (80 is sm_80) and runs cuDNN's frontend checks on
/// them: "" when they pass, else why not. Needs libcudnn but no GPU (the
/// checks a plan build makes on a GPU go further), so the tests check on
/// every machine that the graphs built here are ones cuDNN accepts.
std::string cudnnAttentionCheck(const CudnnAttentionCall &c, int sm);

/// Queues `c` on `call`'s stream through cuDNN and sets `ran`; or, when
/// cuDNN does not take it (refused above, no libcudnn, no engine for it),
/// queues nothing and leaves `ran` false, unless the engine is kCudnn:
/// then an error naming why. The first refusal of a shape is printed once
/// to stderr under `auto`; a refused shape is not tried again.
Status runCudnnAttention(const KernelCall &call, const CudnnAttentionCall &c,
                         AttentionEngine engine, bool &ran);

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_ATTENTIONCUDNN_H
