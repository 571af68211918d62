//===- Gelu.cu - GELU and its gradient, erf and tanh forms ----------------===//
//
//   gelu (erf):  y  = 0.5 * x * (1 + erf(x / sqrt(2)))
//   gelu (tanh): y  = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//   gelu_grad:   dx = g * gelu'(x), g the cotangent (FusedGradients.cpp
//                states both forms)
//
// Elementwise over any shape, one thread per pack of kGeluPack consecutive
// elements (grid-stride; one vector load and store where aligned, the rest
// element by element). f32,
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

/// Elements a thread takes at a time, by one vector load and store where
/// the tensors are aligned to it (16 bytes of a 16-bit float).
constexpr int kGeluPack = 8;

/// Calls fn(i) for every element index i below n, a pack of kGeluPack at a
/// time: fn(Pack index) over the whole packs when `packed`, then fn(i) one
/// by one over the rest.
template <typename PackFn, typename ElementFn>
__device__ __forceinline__ void
forEachPacked(int64_t n, bool packed, PackFn packFn, ElementFn elementFn) {
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t packs = packed ? n / kGeluPack : 0;
  for (int64_t k = first; k < packs; k += stride)
    packFn(k);
  for (int64_t i = packs * kGeluPack + first; i < n; i += stride)
    elementFn(i);
}

template <typename S>
__global__ void geluKernel(const S *x, S *y, int64_t n, bool useTanh,
                           bool packed) {
  using P = Pack<S, kGeluPack>;
  forEachPacked(
      n, packed,
      [&](int64_t k) {
        P u = reinterpret_cast<const P *>(x)[k], r;
#pragma unroll
        for (int j = 0; j < kGeluPack; ++j)
          store(r.v, j, geluOf(load(u.v, j), useTanh));
        reinterpret_cast<P *>(y)[k] = r;
      },
      [&](int64_t i) { store(y, i, geluOf(load(x, i), useTanh)); });
}

template <typename S>
__global__ void geluGradKernel(const S *x, const S *g, S *dx, int64_t n,
                               bool useTanh, bool packed) {
  using P = Pack<S, kGeluPack>;
  forEachPacked(
      n, packed,
      [&](int64_t k) {
        P u = reinterpret_cast<const P *>(x)[k];
        P v = reinterpret_cast<const P *>(g)[k], r;
#pragma unroll
        for (int j = 0; j < kGeluPack; ++j)
          store(r.v, j, geluGradOf(load(u.v, j), load(v.v, j), useTanh));
        reinterpret_cast<P *>(dx)[k] = r;
      },
      [&](int64_t i) {
        store(dx, i, geluGradOf(load(x, i), load(g, i), useTanh));
      });
}

/// A grid for n elements taken kGeluPack at a time.
unsigned gridForPacks(int64_t n) {
  return gridFor((n + kGeluPack - 1) / kGeluPack);
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
    size_t size = sizeof(Pack<S, kGeluPack>);
    bool packed = packAligned(x.data, size) && packAligned(y.data, size);
    geluKernel<S><<<gridForPacks(n), kThreads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), y.as<S>(), n, useTanh, packed);
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
    size_t size = sizeof(Pack<S, kGeluPack>);
    bool packed = packAligned(x.data, size) && packAligned(g.data, size) &&
                  packAligned(dx.data, size);
    geluGradKernel<S>
        <<<gridForPacks(n), kThreads, 0, streamOf(call).handle()>>>(
            x.as<const S>(), g.as<const S>(), dx.as<S>(), n, useTanh, packed);
    return checkLaunch(call, "geluGradKernel");
  });
}

} // namespace trainc::cuda
