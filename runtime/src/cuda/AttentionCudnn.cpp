//===- AttentionCudnn.cpp - Attention through cuDNN's fused SDPA ----------===//
//
// cuDNN's scaled-dot-product-attention graphs, built with its header-only
// C++ frontend (the cudnn_frontend::graph API), run attention_forward and
// attention_grad where cuDNN takes the call: bf16 or f16, no additive mask
// (causal is an attribute of the graph), head sizes in 16-byte steps, the
// tensors 16-byte aligned. Every layout trainc's kernels read ([B, H, S,
// D], [B, S, H, D], windows of a fused QKV projection) is a set of strides
// for cuDNN, so nothing is copied.
//
// The forward is one graph: inference mode (no statistics), or, when the
// call keeps the softmax statistics (ints[5], ExecutableFormat.h),
// training mode, cuDNN's Stats output written straight into the call's
// log-sum-exp result ([B, Hq, Sq, 1], packed strides, f32). Stats is each
// row's max + log(sum exp) of the scaled scores, natural log (the
// frontend's softmax node adds log(sum) to the max; base 2 only when
// asked, set_stats_use_log2, which trainc never does), as trainc's
// kernels keep. A gradient given the forward's result and statistics
// hands them to cuDNN's backward, deterministic (no atomics, as trainc's
// kernels); one that is not runs the forward again first, in training
// mode, its result and statistics in stream-ordered scratch memory (a
// third of the backward's cost). (The kept-statistics graphs pass cuDNN's
// frontend validation without a GPU, AttentionCudnnTest; not yet run on
// one.)
//
// Numerics (cuDNN's flash attention, not trainc's kernels): the products
// in f32 on the tensor cores, the unnormalized probabilities rounded to
// the storage type for P V (and dS for dS K, dS^T Q): each output element
// within about one rounding of the storage type (2^-8 bf16, 2^-11 f16) of
// the sum it weights, where trainc's tensor-core kernels carry 16 bits
// (AttentionTensorCore.cu). So cuDNN's results are held to a 16-bit
// tolerance (DeviceKernels.AttentionCudnn), and `--verify-steps` to the
// 16-bit executables' limits, which both meet.
//
// Plans are cached per (device, shape, strides, scale, whether the
// statistics are kept): building one takes cuDNN's heuristics and may
// compile a kernel (tens of milliseconds to seconds, once per shape). A
// shape cuDNN refuses is remembered and runs trainc's kernels from then
// on, as does one whose plan asks for more than 2 GiB of workspace (the
// deterministic backward's grows with B H Sq Sk), and, under `auto`, a
// call whose scratch memory cannot be had.
// libcudnn.so.9 is opened the first time a call may use it
// (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: the frontend reaches every cuDNN and
// CUDA runtime function through dlsym), so no binary links cuDNN and a machine
// without it runs trainc's kernels.
//
//===----------------------------------------------------------------------===//

#include "cuda/AttentionCudnn.h"

#include "cuda/CudaDevice.h"
#include "cuda/CudaStatus.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#if TRAINC_HAVE_CUDNN_FRONTEND
#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING 1
#define CUDNN_FRONTEND_SKIP_JSON_LIB 1
#include <cudnn_frontend.h>

#include <dlfcn.h>

// The frontend's handle on libcudnn (dynamic loading): set once, below.
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend
#endif

namespace trainc::cuda {

Status attentionEngine(AttentionEngine &out) {
  const char *value = std::getenv("TRAINC_CUDA_ATTENTION");
  std::string v = value ? value : "";
  if (v.empty() || v == "auto")
    out = AttentionEngine::kAuto;
  else if (v == "cudnn")
    out = AttentionEngine::kCudnn;
  else if (v == "trainc")
    out = AttentionEngine::kTrainc;
  else
    return invalidArgument("TRAINC_CUDA_ATTENTION is '" + v +
                           "'; expected auto, cudnn or trainc");
  return okStatus();
}

std::string cudnnAttentionRefusal(const CudnnAttentionCall &c) {
  if (c.dtype != DType::BF16 && c.dtype != DType::F16)
    return std::string("dtype ") + dtypeName(c.dtype) +
           " (cuDNN's fused attention takes bf16 and f16)";
  if (c.hasMask)
    return "an additive mask";
  if (c.softcap > 0)
    return "a soft cap";
  if (c.dropout > 0)
    return "dropout (cuDNN's masks are not trainc's)";
  if (c.grad && (!c.dQuery || !c.dKey || !c.dValue))
    return "a gradient that leaves out dq, dk or dv";
  for (int64_t size : {c.d, c.dv})
    if (size == 0 || size % 8 != 0 || size > 256)
      return "head size " + std::to_string(size) +
             " (cuDNN takes multiples of 8 from 8 to 256)";
  if (c.sq == 0 || c.sk == 0)
    return "an empty sequence (" + std::to_string(c.sq) + " queries, " +
           std::to_string(c.sk) + " keys)";
  if (c.causal && c.sq > c.sk)
    return "causal attention with more queries than keys (rows that see no "
           "key give zeros in trainc)";
  if (c.hk == 0 || c.hq % c.hk != 0)
    return "query heads not a multiple of key heads";
  auto aligned = [&](const void *data, const math::HeadLayout &l) {
    uintptr_t start = reinterpret_cast<uintptr_t>(data) +
                      uintptr_t(l.base) * dtypeSize(c.dtype);
    return start % 16 == 0 && l.batchStride % 8 == 0 && l.headStride % 8 == 0 &&
           l.seqStride % 8 == 0;
  };
  const void *data[kAttentionGradTensors] = {
      c.query,  c.key,  c.value, c.grad ? c.cotangent : c.result,
      c.dQuery, c.dKey, c.dValue};
  const int tensors = c.grad ? kAttentionGradTensors : kAttentionTensors;
  for (int i = 0; i < tensors; ++i)
    if (!aligned(data[i], c.layout[i]))
      return "tensor " + std::to_string(i) +
             " is not 16-byte aligned (its start or a stride)";
  if (c.grad && c.stats && !aligned(c.forwardResult, c.forwardLayout))
    return "the forward's result is not 16-byte aligned (its start or a "
           "stride)";
  if (c.stats && reinterpret_cast<uintptr_t>(c.lse) % 16 != 0)
    return "the log-sum-exps are not 16-byte aligned";
  return "";
}

#if !TRAINC_HAVE_CUDNN_FRONTEND

const char *const kNoCudnnBuild =
    "this build has no cuDNN attention (cudnn.h or cuDNN's frontend headers "
    "were not found at configure time; tools/setup.sh fetches the frontend)";

std::string cudnnAttentionCheck(const CudnnAttentionCall &, int) {
  return kNoCudnnBuild;
}

Status runCudnnAttention(const KernelCall &call, const CudnnAttentionCall &,
                         AttentionEngine engine, bool &ran) {
  ran = false;
  if (engine == AttentionEngine::kCudnn)
    return Status(StatusCode::kUnimplemented,
                  std::string(opcodeName(call.op)) +
                      ": TRAINC_CUDA_ATTENTION=cudnn, but " + kNoCudnnBuild);
  return okStatus();
}

#else

namespace {

namespace fe = cudnn_frontend;

/// Tensor ids in the graphs' variant packs.
enum Uid : int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidO,
  kUidStats,
  kUidGradO,
  kUidDq,
  kUidDk,
  kUidDv,
};

/// libcudnn.so.9, opened once: "" when loaded, else why not.
const std::string &loadCudnn() {
  static const std::string error = [] {
    // The loader's path first, then the CUDA toolkit's own directories
    // (where the toolkit's cuDNN is, and the loader does not look).
    std::string why;
    void *handle = nullptr;
    for (const char *name :
         {"libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9",
          "/usr/local/cuda/lib/libcudnn.so.9"}) {
      dlerror();
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
      const char *error = dlerror();
      if (why.empty())
        why = error ? error : "not found";
    }
    if (!handle)
      return "cannot open libcudnn.so.9 (" + why +
             "); install cuDNN 9 or put its lib directory on the loader's "
             "path";
    fe::cudnn_dlhandle = handle;
    // Where the frontend opens a CUDA runtime of its own, the one trainc
    // is built with (not a CUDA 12 one that happens to be on the path).
    setenv("CUDNN_FRONTEND_CUDART_LIB_NAME",
           ("libcudart.so." + std::to_string(CUDART_VERSION / 1000)).c_str(),
           /*overwrite=*/0);
    try {
      size_t version = fe::detail::get_backend_version();
      if (version < 90500)
        return "libcudnn " + std::to_string(version) +
               " is older than 9.5 (fused attention's backward with "
               "deterministic, bottom-right causal graphs)";
    } catch (const std::exception &e) {
      return std::string("libcudnn.so.9: ") + e.what();
    }
    return std::string();
  }();
  return error;
}

/// A cached plan: the forward graph, and for a gradient the backward's,
/// with the workspace each needs; or why cuDNN refused the shape.
struct Plan {
  std::shared_ptr<fe::graph::Graph> forward, backward;
  int64_t forwardWorkspace = 0, backwardWorkspace = 0;
  std::string refusal;
};

struct State {
  std::mutex mutex;
  /// One cuDNN handle per GPU, made on first use.
  std::map<int, cudnnHandle_t> handles;
  std::map<std::vector<int64_t>, std::shared_ptr<Plan>> plans;
  static constexpr size_t kMaxPlans = 256;
};
State &state() {
  static State *s = new State; // never destroyed: plans outlive exit order
  return *s;
}

std::vector<int64_t> keyOf(const CudnnAttentionCall &c, int device) {
  uint64_t scaleBits;
  std::memcpy(&scaleBits, &c.scale, sizeof scaleBits);
  std::vector<int64_t> key = {c.grad,   int64_t(c.dtype),
                              device,   c.batch,
                              c.hq,     c.hk,
                              c.sq,     c.sk,
                              c.d,      c.dv,
                              c.causal, int64_t(scaleBits),
                              c.stats};
  for (const math::HeadLayout &l : c.layout)
    key.insert(key.end(), {l.batchStride, l.headStride, l.seqStride});
  // The forward's result, read by the backward of a gradient that is
  // given it (its strides are in that graph).
  if (c.grad && c.stats)
    key.insert(key.end(),
               {c.forwardLayout.batchStride, c.forwardLayout.headStride,
                c.forwardLayout.seqStride});
  return key;
}

std::string describe(const fe::error_t &e) {
  return e.err_msg.empty() ? std::string("cuDNN refused the graph") : e.err_msg;
}

fe::graph::Tensor_attributes describeTensor(const char *name, Uid uid,
                                            const math::HeadLayout &l) {
  return fe::graph::Tensor_attributes()
      .set_name(name)
      .set_uid(uid)
      .set_dim({l.batch, l.heads, l.seq, l.features})
      .set_stride({l.batchStride, l.headStride, l.seqStride, 1});
}

/// Whether `c` runs cuDNN's forward: a forward does, and so does a
/// gradient not given the forward's result and statistics (it remakes
/// them); a gradient given them runs the backward alone.
bool runsForward(const CudnnAttentionCall &c) { return !c.grad || !c.stats; }

/// The layout of the forward's result that the backward reads: the one
/// given, or the remade one in scratch memory, [B, Hq, Sq, Dv] contiguous.
math::HeadLayout forwardResultLayout(const CudnnAttentionCall &c) {
  if (c.stats)
    return c.forwardLayout;
  int64_t dims[4] = {c.batch, c.hq, c.sq, c.dv};
  return math::headLayout(dims, /*seqMajor=*/false);
}

/// A graph for `c`'s dtype; for GPU `sm` (80: sm_80) when it is not 0,
/// else for the current GPU (validated without one: cudnnAttentionCheck).
std::shared_ptr<fe::graph::Graph> newGraph(const CudnnAttentionCall &c,
                                           int sm) {
  auto g = std::make_shared<fe::graph::Graph>();
  if (sm != 0)
    g->set_sm_version(sm);
  g->set_io_data_type(c.dtype == DType::BF16 ? fe::DataType_t::BFLOAT16
                                             : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

/// Causal masking in trainc's alignment: query i sees keys j <= i + (Sk -
/// Sq), the last query every key (bottom-right; top-left when Sq == Sk).
template <typename Attributes>
void setCausal(Attributes &a, const CudnnAttentionCall &c) {
  if (!c.causal)
    return;
  if (c.sq == c.sk)
    a.set_causal_mask(true);
  else
    a.set_causal_mask_bottom_right(true);
}

/// The forward graph (runsForward): the result in the call's layout (a
/// gradient's in forwardResultLayout), and each row's log-sum-exp (f32,
/// [B, Hq, Sq, 1]) when kept or remade for the backward.
std::shared_ptr<fe::graph::Graph> forwardGraph(const CudnnAttentionCall &c,
                                               int sm = 0) {
  const math::HeadLayout outLayout =
      c.grad ? forwardResultLayout(c) : c.layout[3];
  const bool stats = c.grad || c.stats;
  auto g = newGraph(c, sm);
  auto q = g->tensor(describeTensor("q", kUidQ, c.layout[0]));
  auto k = g->tensor(describeTensor("k", kUidK, c.layout[1]));
  auto v = g->tensor(describeTensor("v", kUidV, c.layout[2]));
  auto options = fe::graph::SDPA_attributes()
                     .set_name("attention")
                     .set_generate_stats(stats)
                     .set_attn_scale(float(c.scale));
  setCausal(options, c);
  auto [o, lse] = g->sdpa(q, k, v, options);
  o->set_output(true)
      .set_uid(kUidO)
      .set_dim(
          {outLayout.batch, outLayout.heads, outLayout.seq, outLayout.features})
      .set_stride({outLayout.batchStride, outLayout.headStride,
                   outLayout.seqStride, 1});
  if (stats)
    lse->set_output(true)
        .set_uid(kUidStats)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim({c.batch, c.hq, c.sq, 1})
        .set_stride({c.hq * c.sq, c.sq, 1, 1});
  return g;
}

/// The backward graph: dq, dk and dv from q, k, v, the forward's result
/// (forwardResultLayout) and statistics, and the cotangent.
std::shared_ptr<fe::graph::Graph> backwardGraph(const CudnnAttentionCall &c,
                                                int sm = 0) {
  auto g = newGraph(c, sm);
  auto q = g->tensor(describeTensor("q", kUidQ, c.layout[0]));
  auto k = g->tensor(describeTensor("k", kUidK, c.layout[1]));
  auto v = g->tensor(describeTensor("v", kUidV, c.layout[2]));
  auto o = g->tensor(describeTensor("o", kUidO, forwardResultLayout(c)));
  auto go = g->tensor(describeTensor("grad_o", kUidGradO, c.layout[3]));
  auto lse = g->tensor(fe::graph::Tensor_attributes()
                           .set_name("stats")
                           .set_uid(kUidStats)
                           .set_dim({c.batch, c.hq, c.sq, 1})
                           .set_stride({c.hq * c.sq, c.sq, 1, 1})
                           .set_data_type(fe::DataType_t::FLOAT));
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("attention_grad")
                     .set_attn_scale(float(c.scale))
                     .set_deterministic_algorithm(true);
  setCausal(options, c);
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, go, lse, options);
  const Uid uids[3] = {kUidDq, kUidDk, kUidDv};
  std::shared_ptr<fe::graph::Tensor_attributes> grads[3] = {dq, dk, dv};
  for (int i = 0; i < 3; ++i) {
    const math::HeadLayout &l = c.layout[4 + i];
    grads[i]
        ->set_output(true)
        .set_uid(uids[i])
        .set_dim({l.batch, l.heads, l.seq, l.features})
        .set_stride({l.batchStride, l.headStride, l.seqStride, 1});
  }
  return g;
}

/// Validates `g` and builds its plan for `handle`'s GPU: "" and the
/// workspace size, or why not (the failing stage named).
std::string build(fe::graph::Graph &g, cudnnHandle_t handle,
                  int64_t &workspace) {
  if (fe::error_t e = g.validate(); e.is_bad())
    return "validate: " + describe(e);
  if (fe::error_t e = g.build_operation_graph(handle); e.is_bad())
    return "operation graph: " + describe(e);
  if (fe::error_t e = g.create_execution_plans({fe::HeurMode_t::A}); e.is_bad())
    return "heuristics: " + describe(e);
  if (fe::error_t e = g.check_support(); e.is_bad())
    return "support: " + describe(e);
  if (fe::error_t e = g.build_plans(); e.is_bad())
    return "plan: " + describe(e);
  if (fe::error_t e = g.get_workspace_size(workspace); e.is_bad())
    return "workspace: " + describe(e);
  return "";
}

/// The most workspace a plan may ask for. The deterministic backward's
/// grows with B H Sq Sk (GPT-2 at batch 8: about 200 MB); past this, the
/// shape runs trainc's kernels, which need none.
constexpr int64_t kMaxWorkspaceBytes = int64_t(2) << 30;

std::shared_ptr<Plan> makePlan(const CudnnAttentionCall &c,
                               cudnnHandle_t handle, int device) {
  auto plan = std::make_shared<Plan>();
  // The architecture from trainc's own CUDA runtime, so that the frontend
  // need not open one to ask.
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                             device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                             device) != cudaSuccess) {
    cudaGetLastError();
    plan->refusal = "cudaDeviceGetAttribute failed";
    return plan;
  }
  const int sm = 10 * major + minor;
  try {
    if (runsForward(c)) {
      plan->forward = forwardGraph(c, sm);
      plan->refusal = build(*plan->forward, handle, plan->forwardWorkspace);
    }
    if (plan->refusal.empty() && c.grad) {
      plan->backward = backwardGraph(c, sm);
      plan->refusal = build(*plan->backward, handle, plan->backwardWorkspace);
      if (!plan->refusal.empty())
        plan->refusal = "backward " + plan->refusal;
    }
  } catch (const std::exception &e) {
    plan->refusal = e.what();
  }
  int64_t workspace = std::max(plan->forwardWorkspace, plan->backwardWorkspace);
  if (plan->refusal.empty() && workspace > kMaxWorkspaceBytes)
    plan->refusal = "a workspace of " + std::to_string(workspace) +
                    " bytes, above trainc's limit of " +
                    std::to_string(kMaxWorkspaceBytes);
  if (!plan->refusal.empty()) {
    plan->forward.reset();
    plan->backward.reset();
  }
  return plan;
}

/// The plan for `c` on the current GPU (built and cached on first use)
/// and that GPU's handle, or why there is none.
std::string planFor(const CudnnAttentionCall &c, std::shared_ptr<Plan> &plan,
                    cudnnHandle_t &handle, bool &firstRefusal) {
  firstRefusal = false;
  if (const std::string &error = loadCudnn(); !error.empty()) {
    static std::once_flag once;
    std::call_once(once, [&] { firstRefusal = true; });
    return error;
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess)
    return "cudaGetDevice failed";
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto h = s.handles.find(device);
  if (h == s.handles.end()) {
    cudnnHandle_t made = nullptr;
    cudnnStatus_t status;
    try {
      status = fe::detail::create_handle(&made);
    } catch (const std::exception &e) {
      return std::string("cudnnCreate: ") + e.what();
    }
    if (status != CUDNN_STATUS_SUCCESS)
      return "cudnnCreate failed (status " + std::to_string(int(status)) + ")";
    h = s.handles.emplace(device, made).first;
  }
  handle = h->second;
  std::vector<int64_t> key = keyOf(c, device);
  auto it = s.plans.find(key);
  if (it == s.plans.end()) {
    if (s.plans.size() >= State::kMaxPlans)
      s.plans.clear();
    it = s.plans.emplace(key, makePlan(c, handle, device)).first;
    firstRefusal = !it->second->refusal.empty();
  }
  plan = it->second;
  return plan->refusal;
}

/// Runs `g` on `stream` with `pointers` and `workspace`.
Status execute(const KernelCall &call, const fe::graph::Graph &g,
               cudnnHandle_t handle, cudaStream_t stream, void *workspace,
               std::unordered_map<int64_t, void *> &pointers) {
  fe::error_t e;
  try {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (fe::detail::set_stream(handle, stream) != CUDNN_STATUS_SUCCESS)
      e = fe::error_t{fe::error_code_t::CUDNN_BACKEND_API_FAILED,
                      "cudnnSetStream failed"};
    else
      e = g.execute(handle, pointers, workspace);
  } catch (const std::exception &x) {
    e = fe::error_t{fe::error_code_t::GRAPH_EXECUTION_FAILED, x.what()};
  }
  if (e.is_bad())
    return internalError(std::string(opcodeName(call.op)) +
                         ": cuDNN attention: " + describe(e));
  return okStatus();
}

/// Element (0, 0, 0, 0) of a tensor of `c` stored at `data` with layout `l`.
void *at(const CudnnAttentionCall &c, const void *data,
         const math::HeadLayout &l) {
  return const_cast<char *>(static_cast<const char *>(data)) +
         l.base * int64_t(dtypeSize(c.dtype));
}

} // namespace

std::string cudnnAttentionCheck(const CudnnAttentionCall &c, int sm) {
  if (const std::string &error = loadCudnn(); !error.empty())
    return error;
  try {
    if (runsForward(c))
      if (fe::error_t e = forwardGraph(c, sm)->validate(); e.is_bad())
        return "forward: " + describe(e);
    if (c.grad)
      if (fe::error_t e = backwardGraph(c, sm)->validate(); e.is_bad())
        return "backward: " + describe(e);
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

Status runCudnnAttention(const KernelCall &call, const CudnnAttentionCall &c,
                         AttentionEngine engine, bool &ran) {
  ran = false;
  if (engine == AttentionEngine::kTrainc)
    return okStatus();
  std::string refusal = cudnnAttentionRefusal(c);
  std::shared_ptr<Plan> plan;
  cudnnHandle_t handle = nullptr;
  bool firstRefusal = false;
  if (refusal.empty())
    refusal = planFor(c, plan, handle, firstRefusal);
  if (!refusal.empty()) {
    if (engine == AttentionEngine::kCudnn)
      return Status(StatusCode::kUnimplemented,
                    std::string(opcodeName(call.op)) +
                        ": TRAINC_CUDA_ATTENTION=cudnn, but cuDNN does not "
                        "take this call: " +
                        refusal);
    if (firstRefusal)
      std::fprintf(stderr,
                   "trainc: %s [B %lld, H %lld/%lld, S %lld/%lld, D %lld/%lld]"
                   " runs trainc's attention kernels, not cuDNN's: %s\n",
                   opcodeName(call.op), (long long)c.batch, (long long)c.hq,
                   (long long)c.hk, (long long)c.sq, (long long)c.sk,
                   (long long)c.d, (long long)c.dv, refusal.c_str());
    return okStatus();
  }
  // CudaDevice::launch gives every call a context with one of its streams.
  if (!call.context || !call.context->stream)
    return internalError(std::string(opcodeName(call.op)) +
                         ": cuDNN attention needs a stream (a call from "
                         "CudaDevice::launch)");
  auto &onStream = static_cast<CudaStream &>(*call.context->stream);
  cudaStream_t stream = onStream.handle();
  std::unordered_map<int64_t, void *> pointers = {
      {kUidQ, at(c, c.query, c.layout[0])},
      {kUidK, at(c, c.key, c.layout[1])},
      {kUidV, at(c, c.value, c.layout[2])}};
  // Stream-ordered scratch, one allocation: the workspace (the graphs run
  // one after the other on this stream and share it), then for a gradient
  // that remakes them the forward's result and its statistics. Out of
  // memory under `auto` runs trainc's kernels (nothing is queued yet).
  int64_t workspace =
      (std::max(plan->forwardWorkspace, plan->backwardWorkspace) + 255) / 256 *
      256;
  const bool remakes = c.grad && runsForward(c);
  int64_t outBytes = remakes ? c.batch * c.hq * c.sq * c.dv *
                                   int64_t(dtypeSize(c.dtype))
                             : 0,
          statsBytes =
              remakes ? c.batch * c.hq * c.sq * int64_t(sizeof(float)) : 0;
  int64_t bytes = workspace + outBytes + statsBytes;
  void *scratch = nullptr;
  if (bytes > 0) {
    cudaError_t err = onStream.tryAllocateScratch(uint64_t(bytes), scratch);
    if (err != cudaSuccess) {
      if (err == cudaErrorMemoryAllocation && engine == AttentionEngine::kAuto)
        return okStatus();
      return fromCudaError(int(err), (std::string(opcodeName(call.op)) +
                                      ": cuDNN attention's scratch memory (" +
                                      std::to_string(bytes) + " bytes)")
                                         .c_str());
    }
  }
  char *space = static_cast<char *>(scratch);
  void *workspacePtr = workspace > 0 ? space : nullptr;
  Status status;
  if (c.stats)
    pointers[kUidStats] = c.lse;
  if (!c.grad) {
    pointers[kUidO] = at(c, c.result, c.layout[3]);
    status =
        execute(call, *plan->forward, handle, stream, workspacePtr, pointers);
  } else {
    // The forward's result and statistics, given or remade; then the
    // backward.
    if (c.stats) {
      pointers[kUidO] = at(c, c.forwardResult, c.forwardLayout);
    } else {
      pointers[kUidO] = space + workspace;
      pointers[kUidStats] = space + workspace + outBytes;
      status =
          execute(call, *plan->forward, handle, stream, workspacePtr, pointers);
    }
    if (status.ok()) {
      pointers[kUidGradO] = at(c, c.cotangent, c.layout[3]);
      pointers[kUidDq] = at(c, c.dQuery, c.layout[4]);
      pointers[kUidDk] = at(c, c.dKey, c.layout[5]);
      pointers[kUidDv] = at(c, c.dValue, c.layout[6]);
      status = execute(call, *plan->backward, handle, stream, workspacePtr,
                       pointers);
    }
  }
  if (scratch)
    onStream.freeScratch(scratch);
  TRAINC_RETURN_IF_ERROR(status);
  ran = true;
  return okStatus();
}

#endif // TRAINC_HAVE_CUDNN_FRONTEND

} // namespace trainc::cuda
