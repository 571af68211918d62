//===- Dropout.cu - Dropout with a counter-based mask ---------------------===//
//
// Inverted dropout: y[i] = keep[i] ? x[i] * scale : 0, mask[i] = keep[i],
// scale = 1 / (1 - ratio) computed in f64 on the host and rounded to the
// compute type (f64 for f64, f32 otherwise) before the multiply, as
// cpu/Dropout.cpp does.
//
// keep[i] is math/Dropout.h's dropoutKept(key, i, keepThreshold(ratio)), i the
// flat row-major element index and key = dropoutKey(seed, step): the same
// function the CPU kernel calls, so both devices draw the same mask bit for
// bit (and y is the same product). On a mesh (ints = [seed, axis, stride])
// the seed is seed + coordinate(axis) * stride, the coordinate read on the
// host from the context's collective, as on the CPU; on a block of the
// tensor axis (ints[3..5]) i is the element's index in the whole
// (math::wholeIndex). The grid's x runs over the elements of one of the
// block's runs and its y over the runs (a tensor not split is one run),
// both grid-stride, so that no thread divides an index by the run (a
// 64-bit division, tens of instructions, per element).
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "device/Device.h"
#include "math/Dropout.h"

namespace trainc::cuda {
namespace {

template <typename S>
__global__ void dropoutKernel(const S *x, S *y, Bool *mask, int64_t runs,
                              int64_t run, uint64_t key,
                              math::DropoutBlock block, uint64_t threshold,
                              Compute<S> scale) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t outer = blockIdx.y; outer < runs; outer += gridDim.y)
    for (int64_t within = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
         within < run; within += step) {
      int64_t i = outer * run + within;
      bool keep = math::dropoutKept(key, math::wholeIndex(block, outer, within),
                                    threshold);
      store(mask, i, keep);
      store(y, i, keep ? load(x, i) * scale : Compute<S>(0));
    }
}

} // namespace

Status runDropout(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0], &mask = call.outputs[1];
  double ratio = call.floats[0];
  uint64_t key = dropoutKeyOf(call, 0);
  int64_t n = x.numElements();
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    using C = Compute<S>;
    if (!(ratio >= 0 && ratio < 1))
      return kernelError(call, "ratio " + std::to_string(ratio) +
                                   " is outside [0, 1)");
    if (n == 0)
      return okStatus();
    C scale = C(1.0 / (1.0 - ratio));
    // Not split: one run of n, which wholeIndex(block, 0, i) numbers i
    // (tensorBlockOf's block 0 of 1).
    math::DropoutBlock block = dropoutBlockOf(call, x);
    int64_t run = block.blocks == 1 ? n : block.run, runs = n / run;
    dim3 grid(gridFor(run), unsigned(runs < 65535 ? runs : 65535));
    dropoutKernel<S><<<grid, kThreads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), y.as<S>(), mask.as<Bool>(), runs, run, key, block,
        math::keepThreshold(ratio), scale);
    return checkLaunch(call, "dropoutKernel");
  });
}

} // namespace trainc::cuda
