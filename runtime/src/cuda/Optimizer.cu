//===- Optimizer.cu - adamw_update, sum_of_squares ------------------------===//
//
// The optimizer step's multi-tensor ops, each one launch per 32 tensors
// (their pointers travel in the kernel's parameters, read in place as
// __grid_constant__; which tensors a launch takes and which a block works
// on is math/TensorGroups.h's arithmetic, tested on the CPU).
//
// adamw_update: one AdamW step of N parameters, elementwise:
// math/AdamW.h's adamwElement, the formula cpu/Optimizer.cpp calls,
// compiled here with -fmad=false and IEEE sqrt and division, so both
// devices produce the same bits. f32 and f64 only, as on the CPU (the
// optimizer pass keeps the decomposed update for 16-bit parameters). Each
// block updates kAdamwBlock elements of one parameter, each thread
// kAdamwPack consecutive ones at a time by vector loads and stores where
// the tensors are aligned to them.
//
// Operands: N params, grads, exp_avgs and exp_avg_sqs, then the 0-d
// neg_step_size, bias_correction2_sqrt, decay_factor and grad_scale, which
// live in device memory: each thread reads them in the kernel (they are
// computed by earlier kernels of the step), never the host. The optional
// last operand, a 0-d i1 skip flag, is device memory too: when it is set,
// the kernel copies the old params and moments to the results that are
// not their memory and computes nothing. The results may be the memory of
// the matching operands (the executable updates in place): each thread
// reads an element's inputs before it writes that element's results.
//
// sum_of_squares: math/SumOfSquares.h's order, the CPU's: a thread per
// lane of a chunk (eight lanes, combined by shuffles in combineLanes'
// order), the chunk sums in stream-ordered scratch memory, then one block
// whose thread t sums chunks t, t + 1024, ... and whose threads combine
// pairwise as combinePartials does. So both devices give the same bits.
//
// Differs from the CPU: a 16-bit parameter with the skip flag set is an
// unsupported-dtype error here (the host cannot read the flag), where the
// CPU copies; the compiler never emits adamw_update for 16-bit parameters.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "math/AdamW.h"
#include "math/SumOfSquares.h"
#include "math/TensorGroups.h"

#include <cstdint>
#include <string>

namespace trainc::cuda {
namespace {

using math::GroupLaunch;
using math::kGroupTensors;

/// Consecutive elements a thread of the update takes at a time (one
/// vector load or store of each of the seven tensors where all are aligned
/// to it: the loads of a pack are in flight together, where one element
/// at a time left the next element's loads behind the stores, which may
/// be the same memory), and elements of one parameter a block takes.
constexpr int kAdamwPack = 4;
constexpr int64_t kAdamwBlock = kAdamwPack * kThreads;

/// The parameters of one launch of the update, as kernel arguments.
template <typename T> struct AdamwArgs {
  const T *p[kGroupTensors], *g[kGroupTensors], *m[kGroupTensors],
      *v[kGroupTensors];
  T *newP[kGroupTensors], *newM[kGroupTensors], *newV[kGroupTensors];
  int64_t n[kGroupTensors];
  /// Whether all seven tensors of member k are aligned to a Pack of
  /// kAdamwPack elements.
  bool packed[kGroupTensors];
  /// The launch's members and their blocks (math/TensorGroups.h).
  GroupLaunch launch;
  /// The 0-d operands 4N..4N+3 (device memory).
  const T *negStep, *biasCorrection2Sqrt, *decay, *gradScale;
  /// The skip flag, or null.
  const Bool *skip;
  /// The attributes, rounded to T on the host as the CPU does.
  T beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps;
};

template <typename T>
__global__ void adamwKernel(const __grid_constant__ AdamwArgs<T> a) {
  int k = math::memberOfUnit(a.launch, blockIdx.x);
  int64_t begin = (int64_t(blockIdx.x) - a.launch.firstUnit[k]) * kAdamwBlock;
  int64_t end = begin + kAdamwBlock < a.n[k] ? begin + kAdamwBlock : a.n[k];
  const T *p = a.p[k], *g = a.g[k], *m = a.m[k], *v = a.v[k];
  T *newP = a.newP[k], *newM = a.newM[k], *newV = a.newV[k];
  if (a.skip && load(a.skip, 0)) {
    // The results keep the old values.
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      if (newP != p)
        newP[i] = p[i];
      if (newM != m)
        newM[i] = m[i];
      if (newV != v)
        newV[i] = v[i];
    }
    return;
  }
  const math::AdamwScalars<T> c = {
      *a.negStep, *a.biasCorrection2Sqrt, *a.decay, *a.gradScale,
      a.beta1,    a.oneMinusBeta1,        a.beta2,  a.oneMinusBeta2,
      a.eps};
  // Whole packs (begin is a multiple of kAdamwPack), then the tail.
  using V = Pack<T, kAdamwPack>;
  int64_t packedEnd =
      a.packed[k] ? begin + (end - begin) / kAdamwPack * kAdamwPack : begin;
  for (int64_t i = begin + int64_t(threadIdx.x) * kAdamwPack; i < packedEnd;
       i += int64_t(blockDim.x) * kAdamwPack) {
    V pv = *reinterpret_cast<const V *>(p + i);
    V gv = *reinterpret_cast<const V *>(g + i);
    V mv = *reinterpret_cast<const V *>(m + i);
    V vv = *reinterpret_cast<const V *>(v + i);
    V p1, m1, v1;
#pragma unroll
    for (int j = 0; j < kAdamwPack; ++j)
      math::adamwElement(c, pv.v[j], gv.v[j], mv.v[j], vv.v[j], p1.v[j],
                         m1.v[j], v1.v[j]);
    *reinterpret_cast<V *>(newP + i) = p1;
    *reinterpret_cast<V *>(newM + i) = m1;
    *reinterpret_cast<V *>(newV + i) = v1;
  }
  for (int64_t i = packedEnd + threadIdx.x; i < end; i += blockDim.x) {
    T p1, m1, v1;
    math::adamwElement(c, p[i], g[i], m[i], v[i], p1, m1, v1);
    newP[i] = p1;
    newM[i] = m1;
    newV[i] = v1;
  }
}

template <typename T> Status adamw(const KernelCall &call) {
  const Span<TensorRef> &in = call.inputs;
  size_t n = size_t(call.numOutputs) / 3;
  AdamwArgs<T> a;
  a.negStep = in[4 * n].as<const T>();
  a.biasCorrection2Sqrt = in[4 * n + 1].as<const T>();
  a.decay = in[4 * n + 2].as<const T>();
  a.gradScale = in[4 * n + 3].as<const T>();
  a.skip =
      size_t(in.size) == 4 * n + 5 ? in[4 * n + 4].as<const Bool>() : nullptr;
  a.beta1 = T(call.floats[0]);
  a.oneMinusBeta1 = T(1 - call.floats[0]);
  a.beta2 = T(call.floats[1]);
  a.oneMinusBeta2 = T(1 - call.floats[1]);
  a.eps = T(call.floats[2]);
  size_t next = 0;
  auto blocksOf = [&](size_t i) {
    return (in[i].numElements() + kAdamwBlock - 1) / kAdamwBlock;
  };
  while (math::nextLaunch(n, next, blocksOf, a.launch)) {
    for (int k = 0; k < a.launch.count; ++k) {
      size_t i = size_t(a.launch.tensor[k]);
      a.p[k] = in[i].as<const T>();
      a.g[k] = in[n + i].as<const T>();
      a.m[k] = in[2 * n + i].as<const T>();
      a.v[k] = in[3 * n + i].as<const T>();
      a.newP[k] = call.outputs[i].as<T>();
      a.newM[k] = call.outputs[n + i].as<T>();
      a.newV[k] = call.outputs[2 * n + i].as<T>();
      a.n[k] = in[i].numElements();
      a.packed[k] = true;
      for (const void *t :
           {(const void *)a.p[k], (const void *)a.g[k], (const void *)a.m[k],
            (const void *)a.v[k], (const void *)a.newP[k],
            (const void *)a.newM[k], (const void *)a.newV[k]})
        a.packed[k] =
            a.packed[k] && packAligned(t, sizeof(Pack<T, kAdamwPack>));
    }
    int64_t blocks = a.launch.firstUnit[a.launch.count];
    if (blocks > INT32_MAX)
      return kernelError(call, "a parameter group of " +
                                   std::to_string(blocks) +
                                   " blocks is too large for one launch");
    adamwKernel<T>
        <<<unsigned(blocks), kThreads, 0, streamOf(call).handle()>>>(a);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "adamwKernel"));
  }
  return okStatus();
}

/// x[i] squared, rounded to storage type S (to f32 for 16-bit ones), as
/// f64 (math/SumOfSquares.h).
__device__ __forceinline__ double squareAt(const float *x, int64_t i) {
  return math::squareF32(x[i]);
}
__device__ __forceinline__ double squareAt(const double *x, int64_t i) {
  return math::squareF64(x[i]);
}
__device__ __forceinline__ double squareAt(const Bf16 *x, int64_t i) {
  return math::square16(load(x, i));
}
__device__ __forceinline__ double squareAt(const Half *x, int64_t i) {
  return math::square16(load(x, i));
}

/// The operands of one launch of the chunk sums, as kernel arguments.
template <typename S> struct SquaresArgs {
  const S *x[kGroupTensors];
  int64_t n[kGroupTensors];
  /// The launch's members and their chunks (math/TensorGroups.h), whose
  /// first is chunk `base` of the op's.
  GroupLaunch launch;
  int64_t base;
};

constexpr int kChunksPerBlock = kThreads / math::kSquaresLanes;

template <typename S>
__global__ void chunkSquaresKernel(const __grid_constant__ SquaresArgs<S> a,
                                   double *chunks) {
  int64_t chunk =
      int64_t(blockIdx.x) * kChunksPerBlock + threadIdx.x / math::kSquaresLanes;
  int lane = int(threadIdx.x % math::kSquaresLanes);
  double sum = 0;
  bool active = chunk < a.launch.firstUnit[a.launch.count];
  if (active) {
    int k = math::memberOfUnit(a.launch, chunk);
    int64_t first = (chunk - a.launch.firstUnit[k]) * math::kSquaresChunk;
    int64_t len = a.n[k] - first < math::kSquaresChunk ? a.n[k] - first
                                                       : math::kSquaresChunk;
    const S *x = a.x[k];
    for (int64_t e = lane; e < len; e += math::kSquaresLanes)
      sum += squareAt(x, first + e);
  }
  // combineLanes' tree: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)),
  // every lane of the warp taking part.
  for (int mask = 1; mask < math::kSquaresLanes; mask *= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, mask);
  if (active && lane == 0)
    chunks[a.base + chunk] = sum;
}

/// One block of kSquaresPartials threads: combinePartials' order.
__global__ void __launch_bounds__(math::kSquaresPartials)
    combineSquaresKernel(const double *chunks, int64_t count, double *out) {
  __shared__ double partials[math::kSquaresPartials];
  int t = int(threadIdx.x);
  double sum = 0;
  for (int64_t c = t; c < count; c += math::kSquaresPartials)
    sum += chunks[c];
  partials[t] = sum;
  __syncthreads();
  for (int s = math::kSquaresPartials / 2; s > 0; s /= 2) {
    if (t < s)
      partials[t] = partials[t] + partials[t + s];
    __syncthreads();
  }
  if (t == 0)
    *out = partials[0];
}

template <typename S> Status sumOfSquares(const KernelCall &call) {
  const Span<TensorRef> &in = call.inputs;
  int64_t total = 0;
  size_t count = size_t(in.size);
  for (size_t i = 0; i < count; ++i)
    total += math::squaresChunks(in[i].numElements());
  Scratch chunks;
  TRAINC_RETURN_IF_ERROR(
      chunks.allocate(call, uint64_t(total > 0 ? total : 1) * 8));
  cudaStream_t stream = streamOf(call).handle();
  SquaresArgs<S> a;
  a.base = 0;
  size_t next = 0;
  auto chunksOf = [&](size_t i) {
    return math::squaresChunks(in[i].numElements());
  };
  while (math::nextLaunch(count, next, chunksOf, a.launch)) {
    for (int k = 0; k < a.launch.count; ++k) {
      const TensorRef &t = in[a.launch.tensor[k]];
      a.x[k] = t.template as<const S>();
      a.n[k] = t.numElements();
    }
    int64_t launchChunks = a.launch.firstUnit[a.launch.count];
    int64_t blocks = (launchChunks + kChunksPerBlock - 1) / kChunksPerBlock;
    chunkSquaresKernel<S>
        <<<unsigned(blocks), kThreads, 0, stream>>>(a, chunks.as<double>());
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "chunkSquaresKernel"));
    a.base += launchChunks;
  }
  combineSquaresKernel<<<1, math::kSquaresPartials, 0, stream>>>(
      chunks.as<double>(), total, call.outputs[0].as<double>());
  return checkLaunch(call, "combineSquaresKernel");
}

} // namespace

Status runAdamwUpdate(const KernelCall &call) {
  switch (call.inputs[0].dtype) {
  case DType::F32:
    return adamw<float>(call);
  case DType::F64:
    return adamw<double>(call);
  default:
    return unsupported(call, call.inputs[0].dtype);
  }
}

Status runSumOfSquares(const KernelCall &call) {
  return withFloatStorage(call, call.inputs[0].dtype, [&](auto s) {
    return sumOfSquares<decltype(s)>(call);
  });
}

} // namespace trainc::cuda
