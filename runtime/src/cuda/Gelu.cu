//===- Gelu.cu - GELU and its gradient, erf and tanh forms ----------------===//
//
//   gelu (erf):  y  = 0.5 * x * (1 + erf(x / sqrt(2)))
//   gelu (tanh): y  = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//   gelu_grad:   dx = g * gelu'(x), g the cotangent (FusedGradients.cpp
//                states both forms)
//
// Elementwise over any shape, one thread per element (grid-stride). f32,
// f16 and bf16 compute in f32 through math/Transcendental.h's geluErf,
// geluTanh, geluErfGrad and geluTanhGrad, the functions the CPU kernels
// (cpu/Gelu.cpp, cpu/FusedGradients.cpp) call, so with -fmad=false both
// devices give the same bits; 16-bit values are widened and rounded back
// to nearest even as on the CPU. f64 evaluates the CPU's f64 formulas
// operation for operation, but with CUDA's double erf, tanh and exp in
// place of libm's: those can differ by an ulp, so f64 results may differ
// from the CPU's in the last bits.
//
// Each element's math is GeluMath.cuh's, which FusedElementwise.cu calls
// too. gelu may run in place (y the memory of x): each thread reads its
// element before writing it.
//
//===----------------------------------------------------------------------===//

#include "cuda/GeluMath.cuh"
#include "cuda/KernelUtil.cuh"

namespace trainc::cuda {
namespace {

template <typename S>
__global__ void geluKernel(const S *x, S *y, int64_t n, bool useTanh) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    store(y, i, geluOf(load(x, i), useTanh));
}

template <typename S>
__global__ void geluGradKernel(const S *x, const S *g, S *dx, int64_t n,
                               bool useTanh) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    store(dx, i, geluGradOf(load(x, i), load(g, i), useTanh));
}

} // namespace

Status runGelu(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  bool useTanh = call.ints[0] == 1;
  int64_t n = x.numElements();
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if (n == 0)
      return okStatus();
    geluKernel<S><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), y.as<S>(), n, useTanh);
    return checkLaunch(call, "geluKernel");
  });
}

Status runGeluGrad(const KernelCall &call) {
  const TensorRef &x = call.inputs[0], &g = call.inputs[1];
  const TensorRef &dx = call.outputs[0];
  bool useTanh = call.ints[0] == 1;
  int64_t n = x.numElements();
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if (n == 0)
      return okStatus();
    geluGradKernel<S><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), g.as<const S>(), dx.as<S>(), n, useTanh);
    return checkLaunch(call, "geluGradKernel");
  });
}

} // namespace trainc::cuda
