//===- Patches.cu - extract_patches and fold_patches ----------------------===//
//
// A convolution's patches (im2col) and their transpose (col2im), by the
// geometry and order of math/Patches.h, one thread per result element:
//   extractPatchesKernel  patch element (c, k..., n, o...) copies x at
//                         patchSource's position, or 0 in the padding
//                         (any dtype, as its bytes);
//   foldPatchesKernel     x element (n, c, s...) is math::foldPatchesAt:
//                         the patch elements that read it, in row-major
//                         kernel order, summed from 0 in the compute type
//                         (f32 for 16-bit floats) and rounded once. The
//                         CPU adds the same terms in the same order, so
//                         both devices give the same bits.
// No atomics: each thread writes its own element.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "math/Patches.h"

namespace trainc::cuda {
namespace {

using math::PatchGeometry;

template <typename T>
__global__ void extractPatchesKernel(const T *x, T *p, PatchGeometry g,
                                     int64_t count) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += step) {
    int64_t rest = e, o[math::kMaxPatchDims], k[math::kMaxPatchDims];
    for (int i = g.d - 1; i >= 0; --i) {
      o[i] = rest % g.out[i];
      rest /= g.out[i];
    }
    int64_t n = rest % g.n;
    rest /= g.n;
    for (int i = g.d - 1; i >= 0; --i) {
      k[i] = rest % g.kernel[i];
      rest /= g.kernel[i];
    }
    int64_t c = rest, at = n * g.c + c;
    bool inside = true;
    for (int i = 0; i < g.d; ++i) {
      int64_t s = math::patchSource(o[i], k[i], g.stride[i], g.dilation[i],
                                    g.padLow[i]);
      inside = inside && s >= 0 && s < g.spatial[i];
      at = at * g.spatial[i] + s;
    }
    p[e] = inside ? x[at] : T(0);
  }
}

template <typename S>
__global__ void foldPatchesKernel(const S *p, S *x, PatchGeometry g,
                                  int64_t count) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t plane = g.spatialSize();
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += step) {
    int64_t s = e % plane, nc = e / plane;
    using Acc = Compute<S>;
    Acc sum = math::foldPatchesAt<Acc>(
        g, nc / g.c, nc % g.c, s, [&](int64_t i) { return Acc(load(p, i)); });
    store(x, e, sum);
  }
}

template <typename T>
Status extract(const KernelCall &call, const PatchGeometry &g) {
  int64_t count = call.outputs[0].numElements();
  if (count == 0)
    return okStatus();
  cudaStream_t stream = streamOf(call).handle();
  extractPatchesKernel<T><<<gridFor(count), kThreads, 0, stream>>>(
      call.inputs[0].as<const T>(), call.outputs[0].as<T>(), g, count);
  return checkLaunch(call, "extractPatchesKernel");
}

} // namespace

Status runPatches(const KernelCall &call) {
  bool isExtract = call.op == Opcode::ExtractPatches;
  const TensorRef &x = isExtract ? call.inputs[0] : call.outputs[0];
  const TensorRef &p = isExtract ? call.outputs[0] : call.inputs[0];
  PatchGeometry g =
      math::patchGeometry(call.ints.data, x.rank - 2, x.dims, p.dims);
  if (isExtract) {
    switch (dtypeSize(x.dtype)) {
    case 1:
      return extract<uint8_t>(call, g);
    case 2:
      return extract<uint16_t>(call, g);
    case 4:
      return extract<uint32_t>(call, g);
    case 8:
      return extract<uint64_t>(call, g);
    }
    return unsupported(call, x.dtype);
  }
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    int64_t count = x.numElements();
    if (count == 0)
      return okStatus();
    cudaStream_t stream = streamOf(call).handle();
    foldPatchesKernel<S><<<gridFor(count), kThreads, 0, stream>>>(
        p.as<const S>(), x.as<S>(), g, count);
    return checkLaunch(call, "foldPatchesKernel");
  });
}

} // namespace trainc::cuda
