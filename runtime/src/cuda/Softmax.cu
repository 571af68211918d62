//===- Softmax.cu - Softmax along one dim ---------------------------------===//
//
// y[o, :, i] = exp(x[o, :, i] - m) / sum_j exp(x[o, j, i] - m),
//   m = max_j x[o, j, i]
//
// NaN anywhere in a row, +inf, or a row of all -inf gives a row of NaN, as
// on the CPU (it falls out of the formula).
//
// Shape legend: the operand viewed as [O, N, I] around `dim`; each of the
// O*I rows is a strided run of N elements (stride I).
//
// Work split: one block per row (grid-stride over rows), 32 to 256 threads
// by N. Three passes over the row:
//   1. m: the block's maximum of the elements as ordered integers
//      (math::orderedKey, as cpu/VectorMath.cpp's rowMax; a 64-bit
//      version of the same key for f64);
//   2. the sum of e_j = exp(x_j - m): the block computes e_j a chunk at a
//      time into shared memory, and 16 threads add them as
//      cpu/VectorMath.cpp's blockedSum does: thread l adds the e_j with
//      j = l mod 16 in index order, then the 16 partials pairwise;
//   3. y_j = e_j / sum, e_j recomputed from x (the same bits).
// f32, f16 and bf16 compute in f32 with math::expCore, the CPU's exp, so
// with -fmad=false the results are bit-identical to cpu/Softmax.cpp's
// softmaxRowF32 (16-bit values widened, results rounded to nearest even).
//
// Differs from the CPU: f64 uses CUDA's double exp (the CPU: libm's,
// either may be an ulp off) and the same 16-partial sum (the CPU adds in
// index order), so f64 results may differ in the last bits. Rows with
// I > 1 are read with stride I (uncoalesced): correct, not fast; softmax
// over the last dim is the common case.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "cuda/RowMath.cuh"
#include "math/Transcendental.h"

#include <climits>

namespace trainc::cuda {
namespace {

using namespace row;

template <typename S>
__global__ void __launch_bounds__(kMaxThreads)
    softmaxKernel(const S *x, S *y, int64_t rows, int64_t n, int64_t inner) {
  using C = Compute<S>;
  __shared__ RowShared<C> sh;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = (r / inner) * n * inner + r % inner;
    const S *xr = x + base;
    C m = rowMax(xr, inner, n, sh);
    C sum = rowSumExp(xr, inner, n, m, sh);
    S *yr = y + base;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      store(yr, j * inner, expOf(C(load(xr, j * inner)) - m) / sum);
  }
}

} // namespace

Status runSoftmax(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  int dim = int(call.ints[0]);
  int64_t outer = 1, n = x.dims[dim], inner = 1;
  for (int d = 0; d < dim; ++d)
    outer *= x.dims[d];
  for (int d = dim + 1; d < x.rank; ++d)
    inner *= x.dims[d];
  int64_t rows = outer * inner;
  return withFloatStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if (rows == 0 || n == 0)
      return okStatus();
    int threads = n >= 256 ? 256 : n >= 128 ? 128 : n >= 64 ? 64 : 32;
    unsigned blocks = unsigned(rows < (1 << 20) ? rows : (1 << 20));
    softmaxKernel<S><<<blocks, threads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), y.as<S>(), rows, n, inner);
    return checkLaunch(call, "softmaxKernel");
  });
}

} // namespace trainc::cuda
