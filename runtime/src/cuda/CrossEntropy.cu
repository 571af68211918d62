//===- CrossEntropy.cu - Softmax cross-entropy and its logits gradient ----===//
//
// softmax_cross_entropy, for each position r with target t = targets[r]:
//
//   loss[r] = (m - x[r, t]) + log(sum_c exp(x[r, c] - m)),  m = max_c x[r, c]
//
// Positions whose target equals ignore_index have loss 0 and are not
// counted. Reductions, as PyTorch's cross_entropy: none (loss[r], the
// targets' shape), sum (sum_r loss[r]), mean (sum_r loss[r] / #(positions
// not ignored); NaN when that is 0). A target outside [0, C) that is not
// ignore_index reports kTargetOutOfRange (value = the target, bound = C)
// through the stream's fault record (the CPU returns an error before it
// writes anything; here the results are written, that row's loss as 0,
// and the run stops at the next synchronization). The result has the
// logits' dtype, or f32 for f16/bf16 logits: the compute type.
//
// softmax_cross_entropy_grad:
//
//   dlogits[r, c] = (p[r, c] - (c == t)) * weight[r],  p = softmax(x[r, :])
//
// computed as (p - 1) * w at the target and p * w elsewhere; a target
// outside [0, C) adds no one-hot term. The result may be the logits'
// memory: a row is read whole (max, sum) before any of it is written, and
// each element is written by the thread that reads it.
//
// Shape legend: logits [R..., P] viewed as [R, P], targets [R...] (i32 or
// i64), weight [R...] (any float dtype); the classes are the first C <= P
// entries of each row (the instruction's `classes`), the others padding
// (trainc-pad-classes): never read, and the gradient writes 0 there.
//
// Work split: one warp per row (8 a block, grid-stride over rows), the
// loss, the gradient or both in one kernel (crossEntropyRowsKernel):
//   - the row's max on ordered integers (math::orderedKey, as
//     cpu/VectorMath.cpp's rowMax), then its sum of exps in
//     math/SoftmaxSum.h's order (cuda/RowMath.cuh's WarpRow: lane l adds
//     the classes j with j mod 128 in [4l, 4l + 4) into four partials in
//     index order, then the 128 partials pairwise), which both
//     maxAndSumExpF32 (the loss) and softmaxRowF32 (the gradient) follow;
//   - the gradient: p = exp(x - m) * (1 / sum), the exp recomputed per
//     element (one division a row: an IEEE division per element is a
//     called subroutine's slow path and made this kernel spill);
//   - the loss (softmax_cross_entropy, and the fused
//     softmax_cross_entropy_and_grad) from that max and sum;
//   - sum and mean reductions: the per-position losses go to scratch memory
//     and one block adds them in position order (one thread, through shared
//     memory), as the CPU does; the count of positions is exact. That is a
//     chain of R dependent adds (some 4 cycles each: ~20 us for R = 8192),
//     paid once per step for bit-identical losses.
// Each lane reads four consecutive classes at a time, in one vector load
// (and store) where the rows are aligned to it (trainc-pad-classes pads
// GPT-2's 50,257 classes to rows of 50,304), and four spans of the row
// before it uses them: a half-warp per row reading 2 bytes a lane (the
// earlier 16 partials' order) kept too few bytes in flight, 3.3 ms of a
// GPT-2 step on an H200.
// f32 (and 16-bit logits, widened to f32) use math::expCore, the CPU's exp:
// the f32 max, sums and gradients are bit-identical to the CPU's.
//
// Differs from the CPU:
//   - the loss's log is CUDA's logf / log (the CPU: libm's), so a loss may
//     differ from the CPU's by an ulp;
//   - f64 uses CUDA's double exp and the f32 summation order above (the
//     CPU: libm's exp, sums in index order): f64 results may differ in the
//     last bits;
//   - the gradient of f16/bf16 logits uses the f32 path (expCore, 128
//     partials), as the CPU does (softmaxRowF32 on the widened row).
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "cuda/RowMath.cuh"
#include "math/Transcendental.h"

#include <climits>
#include <type_traits>

namespace trainc::cuda {
namespace {

using namespace row;

/// Threads of the loss reduction's block, and the losses it stages in
/// shared memory at a time.
constexpr int kReduceThreads = 256;
constexpr int kChunk = 2048;

//===--- Helpers ----------------------------------------------------------===//

/// The quiet NaN of std::numeric_limits (the CPU's mean of nothing).
__device__ __forceinline__ float quietNaN(float) {
  return bitsFloat(0x7fc00000u);
}
__device__ __forceinline__ double quietNaN(double) {
  return __longlong_as_double(0x7ff8000000000000ll);
}

/// Element i of an index tensor (i32 or i64).
__device__ __forceinline__ int64_t loadIndex(const void *p, bool is64,
                                             int64_t i) {
  return is64 ? static_cast<const int64_t *>(p)[i]
              : static_cast<const int32_t *>(p)[i];
}

/// Element i of a float tensor of dtype t, as the CPU's loadAs<double>
/// (exact; converting it to float then rounds as loadAs<float> does).
__device__ __forceinline__ double loadFloat(const void *p, DType t, int64_t i) {
  switch (t) {
  case DType::F64:
    return static_cast<const double *>(p)[i];
  case DType::F32:
    return static_cast<const float *>(p)[i];
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(p)[i]);
  default:
    return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  }
}

//===--- Kernels ----------------------------------------------------------===//

/// What crossEntropyRowsKernel computes: the gradient (grad not null), the
/// losses (loss not null), or both.
template <typename S> struct RowsCall {
  const S *logits;
  const void *targets;
  bool targets64;
  int64_t rows, classes, stride;
  /// The gradient and each position's weight.
  S *grad;
  const void *weight;
  DType weightType;
  /// The positions' losses, the ignored index, and where a target out of
  /// range is reported.
  Compute<S> *loss;
  bool hasIgnore;
  int64_t ignoreIndex;
  FaultSite site;
};

/// The rows of softmax_cross_entropy and its gradient, a warp each
/// (WarpRow): max, sum of exps, then the loss and the gradient. Without a
/// gradient, ignored positions (and targets out of range, reported) take
/// loss 0 without reading their row. (At least 2 blocks a multiprocessor:
/// with the default bounds ptxas spilled the unpacked f16 rows' registers.)
template <typename S, bool kPacked>
__global__ void __launch_bounds__(kRowThreads, 2)
    crossEntropyRowsKernel(const RowsCall<S> a) {
  using C = Compute<S>;
  int lane = int(threadIdx.x) % kRowLanes;
  for (int64_t r = firstWarp(); r < a.rows; r += gridWarps()) {
    // The branches on t are uniform over the warp (one row).
    int64_t t = loadIndex(a.targets, a.targets64, r);
    bool hit = t >= 0 && t < a.classes;
    bool ignored = a.hasIgnore && t == a.ignoreIndex;
    if (!a.grad && (ignored || !hit)) {
      if (lane == 0) {
        if (!ignored)
          reportFault(a.site, FaultKind::kTargetOutOfRange, t, a.classes);
        a.loss[r] = 0;
      }
      continue;
    }
    const S *x = a.logits + r * a.stride;
    // The target's logit, read by the lane that writes the loss before the
    // shuffles below (grad may be the logits' memory).
    C atTarget = a.loss && lane == 0 && hit ? C(load(x, t)) : C(0);
    WarpRow<S, kPacked> row{x, 1, a.classes, lane};
    C m = row.maximum();
    C sum = row.sumExp(m);
    if (a.loss && lane == 0) {
      C loss = 0;
      if (ignored)
        loss = 0;
      else if (!hit)
        reportFault(a.site, FaultKind::kTargetOutOfRange, t, a.classes);
      else
        loss = (m - atTarget) + log(sum);
      a.loss[r] = loss;
    }
    if (!a.grad)
      continue;
    // Each lane has read its classes (grad may be the logits' memory): it
    // writes only those. Lane 0 read the target's logit, which another lane
    // writes: the shuffles above order that in practice, __syncwarp in the
    // memory model.
    __syncwarp();
    C w = C(loadFloat(a.weight, a.weightType, r)), inverse = C(1) / sum;
    S *y = a.grad + r * a.stride;
    row.forEachQuad([&](int64_t j, const C(&v)[kQuad], int count) {
      C d[kQuad];
#pragma unroll
      for (int u = 0; u < kQuad; ++u) {
        C p = expOf(v[u] - m) * inverse;
        d[u] = j + u == t ? (p - C(1)) * w : p * w;
      }
      storeQuad<S, kPacked>(y, 1, j, d, count);
    });
    for (int64_t c = a.classes + lane; c < a.stride; c += kRowLanes)
      store(y, c, C(0));
  }
}

/// out[0] = the sum of loss[0..rows) in order, or that over the positions
/// not ignored (mean), rounded to O (C, or the 16-bit loss of 16-bit
/// logits). One block.
template <typename C, typename O>
__global__ void __launch_bounds__(kReduceThreads)
    lossReductionKernel(const C *loss, const void *targets, bool targets64,
                        int64_t rows, bool hasIgnore, int64_t ignoreIndex,
                        bool mean, O *out) {
  __shared__ C stage[kChunk];
  __shared__ unsigned long long counted;
  if (threadIdx.x == 0)
    counted = 0;
  __syncthreads();
  unsigned long long mine = 0;
  C total = 0; // Thread 0's.
  for (int64_t c0 = 0; c0 < rows; c0 += kChunk) {
    int len = int(rows - c0 < kChunk ? rows - c0 : kChunk);
    for (int j = threadIdx.x; j < len; j += blockDim.x) {
      stage[j] = loss[c0 + j];
      mine +=
          !(hasIgnore && loadIndex(targets, targets64, c0 + j) == ignoreIndex);
    }
    __syncthreads();
    if (threadIdx.x == 0)
      for (int j = 0; j < len; ++j)
        total += stage[j];
    __syncthreads();
  }
  atomicAdd(&counted, mine);
  __syncthreads();
  if (threadIdx.x == 0) {
    if (mean)
      total = counted ? total / C(counted) : quietNaN(C());
    store(out, 0, total);
  }
}

/// out[i] = loss[i] rounded to O, i < n: the per-position losses of a
/// 16-bit loss of 16-bit logits, computed in f32.
template <typename C, typename O>
__global__ void storeLossesKernel(const C *loss, O *out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    store(out, i, loss[i]);
}

/// Launches crossEntropyRowsKernel over a.rows > 0 rows.
template <typename S>
Status launchRows(const KernelCall &call, const RowsCall<S> &a) {
  bool packed = rowsPacked(a.logits, a.stride, sizeof(S)) &&
                (!a.grad || rowsPacked(a.grad, a.stride, sizeof(S)));
  auto kernel = packed ? crossEntropyRowsKernel<S, true>
                       : crossEntropyRowsKernel<S, false>;
  kernel<<<warpRowBlocks(a.rows), kRowThreads, 0, streamOf(call).handle()>>>(a);
  return checkLaunch(call, "crossEntropyRowsKernel");
}

/// Whether `result`, a loss of S logits, holds S (a 16-bit loss of 16-bit
/// logits) rather than the compute type.
template <typename S> bool narrowLoss(const TensorRef &result) {
  return !std::is_same_v<S, Compute<S>> && result.dtype != DType::F32;
}

/// Where the row kernels write the positions' losses (`rows` of them, in
/// the compute type): `result` itself for `none` in the compute type, else
/// scratch memory (reduced, or rounded to 16 bits afterwards).
template <typename S>
Status lossBuffer(const KernelCall &call, const TensorRef &result, int64_t rows,
                  Scratch &scratch, Compute<S> *&loss) {
  using C = Compute<S>;
  if (call.ints[0] == 0 && !narrowLoss<S>(result)) {
    loss = result.as<C>();
    return okStatus();
  }
  TRAINC_RETURN_IF_ERROR(scratch.allocate(call, uint64_t(rows) * sizeof(C)));
  loss = scratch.as<C>();
  return okStatus();
}

/// The positions' losses (lossBuffer's) into `result` as softmax_cross_
/// entropy's ints[0..2] ask: reduced (sum, mean; the 0-d result is written
/// even without positions: 0, or NaN), or each rounded to a 16-bit result;
/// nothing when the kernel wrote the result itself.
template <typename S>
Status finishLosses(const KernelCall &call, const Compute<S> *loss,
                    const TensorRef &result, const TensorRef &targets) {
  using C = Compute<S>;
  int64_t reduction = call.ints[0], rows = targets.numElements();
  cudaStream_t stream = streamOf(call).handle();
  bool narrow = narrowLoss<S>(result);
  if (reduction == 0) {
    if (!narrow || rows == 0)
      return okStatus();
    storeLossesKernel<C, S>
        <<<gridFor(rows), kThreads, 0, stream>>>(loss, result.as<S>(), rows);
    return checkLaunch(call, "storeLossesKernel");
  }
  bool targets64 = targets.dtype == DType::I64, hasIgnore = call.ints[1] != 0;
  if (narrow)
    lossReductionKernel<C, S><<<1, kReduceThreads, 0, stream>>>(
        loss, targets.data, targets64, rows, hasIgnore, call.ints[2],
        reduction == 2, result.as<S>());
  else
    lossReductionKernel<C, C><<<1, kReduceThreads, 0, stream>>>(
        loss, targets.data, targets64, rows, hasIgnore, call.ints[2],
        reduction == 2, result.as<C>());
  return checkLaunch(call, "lossReductionKernel");
}

} // namespace

Status runCrossEntropy(const KernelCall &call) {
  const TensorRef &logits = call.inputs[0], &targets = call.inputs[1];
  const TensorRef &out = call.outputs[0];
  if (targets.dtype != DType::I32 && targets.dtype != DType::I64)
    return unsupported(call, targets.dtype);
  bool hasIgnore = call.ints[1] != 0;
  int64_t ignoreIndex = call.ints[2];
  int64_t classes = call.ints[3], stride = logits.dims[logits.rank - 1];
  int64_t rows = targets.numElements();
  bool targets64 = targets.dtype == DType::I64;
  return withFloatStorage(call, logits.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    Scratch scratch;
    C *loss = nullptr;
    TRAINC_RETURN_IF_ERROR(lossBuffer<S>(call, out, rows, scratch, loss));
    if (rows > 0)
      TRAINC_RETURN_IF_ERROR(launchRows<S>(
          call, {logits.as<const S>(), targets.data, targets64, rows, classes,
                 stride, nullptr, nullptr, DType::F32, loss, hasIgnore,
                 ignoreIndex, faultSiteOf(call)}));
    return finishLosses<S>(call, loss, out, targets);
  });
}

/// softmax_cross_entropy_grad, and softmax_cross_entropy_and_grad (ints as
/// softmax_cross_entropy's; results the loss and the gradient).
Status runCrossEntropyGrad(const KernelCall &call) {
  bool withLoss = call.op == Opcode::SoftmaxCrossEntropyAndGrad;
  const TensorRef &logits = call.inputs[0], &targets = call.inputs[1],
                  &weight = call.inputs[2];
  const TensorRef &out = call.outputs[withLoss ? 1 : 0];
  if (targets.dtype != DType::I32 && targets.dtype != DType::I64)
    return unsupported(call, targets.dtype);
  if (!isFloat(weight.dtype))
    return unsupported(call, weight.dtype);
  int64_t classes = call.ints[withLoss ? 3 : 0];
  int64_t stride = logits.dims[logits.rank - 1];
  int64_t rows = targets.numElements();
  return withFloatStorage(call, logits.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    RowsCall<S> a{logits.as<const S>(),
                  targets.data,
                  targets.dtype == DType::I64,
                  rows,
                  classes,
                  stride,
                  out.as<S>(),
                  weight.data,
                  weight.dtype,
                  nullptr,
                  false,
                  0,
                  faultSiteOf(call)};
    Scratch scratch;
    if (withLoss) {
      a.hasIgnore = call.ints[1] != 0;
      a.ignoreIndex = call.ints[2];
      TRAINC_RETURN_IF_ERROR(
          lossBuffer<S>(call, call.outputs[0], rows, scratch, a.loss));
    }
    // (The validator admits no classes only with an empty class dimension.)
    if (rows > 0)
      TRAINC_RETURN_IF_ERROR(launchRows(call, a));
    if (!withLoss)
      return okStatus();
    return finishLosses<S>(call, a.loss, call.outputs[0], targets);
  });
}

} // namespace trainc::cuda
