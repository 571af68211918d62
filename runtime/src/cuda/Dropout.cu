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
// (math::wholeIndex). One thread per element (grid-stride).
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "device/Device.h"
#include "math/Dropout.h"

namespace trainc::cuda {
namespace {

template <typename S>
__global__ void dropoutKernel(const S *x, S *y, Bool *mask, int64_t n,
                              uint64_t key, math::DropoutBlock block,
                              uint64_t threshold, Compute<S> scale) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    bool keep = math::dropoutKept(key, math::wholeIndex(block, i), threshold);
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
    dropoutKernel<S><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), y.as<S>(), mask.as<Bool>(), n, key,
        dropoutBlockOf(call, x), math::keepThreshold(ratio), scale);
    return checkLaunch(call, "dropoutKernel");
  });
}

} // namespace trainc::cuda
