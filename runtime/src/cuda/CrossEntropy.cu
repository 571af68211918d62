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
// Work split (the loss): one block per row (grid-stride over rows), up to
// 256 threads, so a 50,257-class row is spread over the block. The row's max
// is taken on ordered integers (math::orderedKey, as cpu/VectorMath.cpp's
// rowMax), then:
//   - the loss's sum of exps follows cpu/VectorMath.cpp's maxAndSumExpF32:
//     blocks of 256 classes, each summed by one half-warp in 16 partials
//     (lane l adds classes l mod 16 in index order, then the partials
//     pairwise), the block sums added in order by one thread;
//   - the gradient's softmax follows softmaxRowF32, one half-warp per row
//     (its own kernel, 8 rows a block): lane l adds the exps of classes
//     l mod 16 in index order, then the 16 partials pairwise (shuffles);
//     p = exp(x - m) / sum recomputed per element. (A block per row would
//     leave 240 of its 256 threads waiting while 16 add in this order.)
//   - softmax_cross_entropy_and_grad: the gradient's kernel, which also
//     writes each row's loss from its softmax's max and sum (the
//     gradient's order, as the CPU's fused op), then the reduction below;
//   - sum and mean reductions: the per-position losses go to scratch memory
//     and one block adds them in position order (one thread, through shared
//     memory), as the CPU does; the count of positions is exact. That is a
//     chain of R dependent adds (some 4 cycles each: ~20 us for R = 8192),
//     paid once per step for bit-identical losses.
// f32 (and 16-bit logits, widened to f32) use math::expCore, the CPU's exp:
// with -fmad=false the f32 max, sums and gradients are bit-identical to the
// CPU's.
//
// Differs from the CPU:
//   - the loss's log is CUDA's logf / log (the CPU: libm's), so a loss may
//     differ from the CPU's by an ulp;
//   - f64 uses CUDA's double exp and the f32 summation orders above (the
//     CPU: libm's exp, sums in index order): f64 results may differ in the
//     last bits;
//   - the gradient of f16/bf16 logits uses the f32 path (expCore, 16
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

/// maxAndSumExpF32's blocks of classes.
constexpr int64_t kSumBlock = 256;

//===--- Row helpers (one block per row) ----------------------------------===//

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

/// Thread 0's value `v` on every thread.
template <typename C>
__device__ __forceinline__ C broadcast(C v, RowShared<C> &sh) {
  if (threadIdx.x == 0)
    sh.sum = v;
  __syncthreads();
  C out = sh.sum;
  __syncthreads(); // sh.sum is free again.
  return out;
}

/// sum_c exp(x[c] - m) as maxAndSumExpF32 adds it (blocks of 256, each
/// in 16 partials, the block sums in order), on every thread.
template <typename S>
__device__ Compute<S> rowSumExpBlocked(const S *x, int64_t n, Compute<S> m,
                                       RowShared<Compute<S>> &sh) {
  using C = Compute<S>;
  int halves = int(blockDim.x) / kLanes;
  int half = int(threadIdx.x) / kLanes, lane = int(threadIdx.x) % kLanes;
  int64_t blocks = (n + kSumBlock - 1) / kSumBlock;
  C sum = 0; // Thread 0's.
  for (int64_t b0 = 0; b0 < blocks; b0 += halves) {
    // Half-warp `half` sums block b0 + half (nothing past the last).
    int64_t first = (b0 + half) * kSumBlock;
    C partial = 0;
    for (int k = 0; k < int(kSumBlock / kLanes); ++k) {
      int64_t j = first + k * kLanes + lane;
      if (j < n)
        partial += expOf(C(load(x, j)) - m);
    }
    for (int width = kLanes / 2; width > 0; width /= 2)
      partial += __shfl_down_sync(kFullMask, partial, width, kLanes);
    if (lane == 0)
      sh.stage[half] = partial;
    __syncthreads();
    if (threadIdx.x == 0)
      for (int h = 0; h < halves && b0 + h < blocks; ++h)
        sum += sh.stage[h];
    __syncthreads();
  }
  return broadcast(sum, sh);
}

//===--- Kernels ----------------------------------------------------------===//

/// loss[r] for every position (0 where ignored or out of range).
template <typename S>
__global__ void __launch_bounds__(kMaxThreads)
    crossEntropyKernel(const S *logits, const void *targets, bool targets64,
                       int64_t rows, int64_t classes, int64_t stride,
                       bool hasIgnore, int64_t ignoreIndex, Compute<S> *loss,
                       FaultSite site) {
  using C = Compute<S>;
  __shared__ RowShared<C> sh;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    // The branches below are uniform over the block (one row).
    int64_t t = loadIndex(targets, targets64, r);
    if (hasIgnore && t == ignoreIndex) {
      if (threadIdx.x == 0)
        loss[r] = 0;
      continue;
    }
    if (t < 0 || t >= classes) {
      if (threadIdx.x == 0) {
        reportFault(site, FaultKind::kTargetOutOfRange, t, classes);
        loss[r] = 0;
      }
      continue;
    }
    const S *x = logits + r * stride;
    C m = rowMax(x, 1, classes, sh);
    C sum = rowSumExpBlocked(x, classes, m, sh);
    if (threadIdx.x == 0)
      loss[r] = (m - C(load(x, t))) + log(sum);
  }
}

/// out[0] = the sum of loss[0..rows) in order, or that over the positions
/// not ignored (mean), rounded to O (C, or the 16-bit loss of 16-bit
/// logits). One block.
template <typename C, typename O>
__global__ void __launch_bounds__(kMaxThreads)
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

/// Where crossEntropyGradKernel writes each row's loss (the fused op), or
/// nothing (loss null).
template <typename C> struct RowLossOut {
  C *loss;
  bool hasIgnore;
  int64_t ignoreIndex;
  FaultSite site;
};

/// Threads per block of crossEntropyGradKernel: 8 rows, a half-warp each.
constexpr int kGradThreads = 128;
/// Classes a lane loads (and takes the exps of) before it adds them in
/// order: loads in flight together, the adds' order unchanged.
constexpr int kGradAhead = 8;

/// The gradient's rows, one half-warp (16 lanes) per row: the row's max,
/// then lane l's partial sum of exps over the classes j = l mod 16 in index
/// order and the partials pairwise (8, 4, 2, 1 apart), softmaxRowF32's
/// order; then dlogits. RowMath.cuh's RowLoop: a half past the last row
/// computes row rows - 1 again and writes nothing.
template <typename S>
__global__ void __launch_bounds__(kGradThreads)
    crossEntropyGradKernel(const S *logits, const void *targets, bool targets64,
                           const void *weight, DType weightType, int64_t rows,
                           int64_t classes, int64_t stride, S *out,
                           RowLossOut<Compute<S>> lossOut) {
  using C = Compute<S>;
  using Key = decltype(keyOf(C()));
  RowLoop loop;
  int lane = loop.lane;
  for (int64_t first = loop.first(); first < rows; first += loop.halves) {
    int64_t r = first + (loop.half & 1);
    bool valid = r < rows;
    r = valid ? r : rows - 1;
    const S *x = logits + r * stride;
    int64_t t = loadIndex(targets, targets64, r);
    bool hit = t >= 0 && t < classes;
    // The target's logit, read by the lane that writes the loss before the
    // shuffles below (out may be the logits' memory).
    C atTarget = lossOut.loss && lane == 0 && hit ? C(load(x, t)) : C(0);
    Key maxKey = lowestKey(Key());
    for (int64_t j = lane; j < classes; j += kLanes) {
      Key k = keyOf(C(load(x, j)));
      maxKey = k > maxKey ? k : maxKey;
    }
    for (int offset = kLanes / 2; offset > 0; offset /= 2) {
      Key k = __shfl_xor_sync(kFullMask, maxKey, offset, kLanes);
      maxKey = k > maxKey ? k : maxKey;
    }
    C m = valueOf(maxKey);
    C partial = 0;
    int64_t j = lane;
    for (; j + (kGradAhead - 1) * kLanes < classes; j += kGradAhead * kLanes) {
      C e[kGradAhead];
#pragma unroll
      for (int u = 0; u < kGradAhead; ++u)
        e[u] = expOf(C(load(x, j + u * kLanes)) - m);
#pragma unroll
      for (int u = 0; u < kGradAhead; ++u)
        partial += e[u];
    }
    for (; j < classes; j += kLanes)
      partial += expOf(C(load(x, j)) - m);
    // Every lane of the row has read it whole (the shuffles wait for them
    // all): out may be the logits' memory.
    C sum = combinePartials(partial);
    if (!valid)
      continue;
    if (lossOut.loss && lane == 0) {
      C loss = 0;
      if (lossOut.hasIgnore && t == lossOut.ignoreIndex)
        loss = 0;
      else if (!hit)
        reportFault(lossOut.site, FaultKind::kTargetOutOfRange, t, classes);
      else
        loss = (m - atTarget) + log(sum);
      lossOut.loss[r] = loss;
    }
    C w = C(loadFloat(weight, weightType, r));
    S *y = out + r * stride;
    for (int64_t c = lane; c < classes; c += kLanes) {
      C p = expOf(C(load(x, c)) - m) / sum;
      store(y, c, c == t ? (p - C(1)) * w : p * w);
    }
    for (int64_t c = classes + lane; c < stride; c += kLanes)
      store(y, c, C(0));
  }
}

/// Blocks of crossEntropyGradKernel for `rows` rows (it loops past the
/// cap).
unsigned gradBlocks(int64_t rows) {
  int64_t perBlock = kGradThreads / kLanes;
  int64_t blocks = (rows + perBlock - 1) / perBlock;
  return unsigned(blocks < (1 << 20) ? blocks : (1 << 20));
}

/// Threads per row block: enough for the row, at least a warp.
int rowThreads(int64_t classes) {
  return classes >= 256 ? 256 : classes >= 128 ? 128 : classes >= 64 ? 64 : 32;
}

/// Blocks for `rows` rows (the kernels loop past the cap).
unsigned rowBlocks(int64_t rows) {
  return unsigned(rows < (1 << 20) ? rows : (1 << 20));
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
    lossReductionKernel<C, S><<<1, kMaxThreads, 0, stream>>>(
        loss, targets.data, targets64, rows, hasIgnore, call.ints[2],
        reduction == 2, result.as<S>());
  else
    lossReductionKernel<C, C><<<1, kMaxThreads, 0, stream>>>(
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
  cudaStream_t stream = streamOf(call).handle();
  return withFloatStorage(call, logits.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    Scratch scratch;
    C *loss = nullptr;
    TRAINC_RETURN_IF_ERROR(lossBuffer<S>(call, out, rows, scratch, loss));
    if (rows > 0) {
      crossEntropyKernel<S>
          <<<rowBlocks(rows), rowThreads(classes), 0, stream>>>(
              logits.as<const S>(), targets.data, targets64, rows, classes,
              stride, hasIgnore, ignoreIndex, loss, faultSiteOf(call));
      TRAINC_RETURN_IF_ERROR(checkLaunch(call, "crossEntropyKernel"));
    }
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
  cudaStream_t stream = streamOf(call).handle();
  return withFloatStorage(call, logits.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    RowLossOut<C> lossOut{nullptr, false, 0, faultSiteOf(call)};
    Scratch scratch;
    if (withLoss) {
      lossOut.hasIgnore = call.ints[1] != 0;
      lossOut.ignoreIndex = call.ints[2];
      TRAINC_RETURN_IF_ERROR(
          lossBuffer<S>(call, call.outputs[0], rows, scratch, lossOut.loss));
    }
    // (The validator admits no classes only with an empty class dimension.)
    if (rows > 0) {
      crossEntropyGradKernel<S><<<gradBlocks(rows), kGradThreads, 0, stream>>>(
          logits.as<const S>(), targets.data, targets.dtype == DType::I64,
          weight.data, weight.dtype, rows, classes, stride, out.as<S>(),
          lossOut);
      TRAINC_RETURN_IF_ERROR(checkLaunch(call, "crossEntropyGradKernel"));
    }
    if (!withLoss)
      return okStatus();
    return finishLosses<S>(call, lossOut.loss, call.outputs[0], targets);
  });
}

} // namespace trainc::cuda
