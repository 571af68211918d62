//===- Softmax.cu - Softmax along one dim ---------------------------------===//
//
// y[o, :, i] = exp(x[o, :, i] - m) * (1 / sum_j exp(x[o, j, i] - m)),
//   m = max_j x[o, j, i]
//
// NaN anywhere in a row, +inf, or a row of all -inf gives a row of NaN, as
// on the CPU (it falls out of the formula).
//
// Shape legend: the operand viewed as [O, N, I] around `dim`; each of the
// O*I rows is a strided run of N elements (stride I).
//
// Work split: one warp per row (8 a block, grid-stride over rows), three
// passes over the row (cuda/RowMath.cuh's WarpRow):
//   1. m: the warp's maximum of the elements as ordered integers
//      (math::orderedKey, as cpu/VectorMath.cpp's rowMax; a 64-bit
//      version of the same key for f64);
//   2. the sum of e_j = exp(x_j - m) in math/SoftmaxSum.h's order, as
//      cpu/VectorMath.cpp's softmaxRowF32 adds it: lane l adds the e_j with
//      j mod 128 in [4l, 4l + 4) into its four partials in index order,
//      then the 128 partials pairwise (shuffles, then within the lane);
//   3. y_j = e_j * (1 / sum), e_j recomputed from x (the same bits).
// Each lane reads four consecutive elements at a time, in one vector load
// (and store) where rows are contiguous and aligned to it.
// f32, f16 and bf16 compute in f32 with math::expCore, the CPU's exp, so
// the results are bit-identical to cpu/Softmax.cpp's softmaxRowF32 (16-bit
// values widened, results rounded to nearest even).
//
// Differs from the CPU: f64 uses CUDA's double exp (the CPU: libm's,
// either may be an ulp off) and the same 128-partial sum (the CPU adds in
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

template <typename S, bool kPacked>
__global__ void __launch_bounds__(kRowThreads)
    softmaxKernel(const S *x, S *y, int64_t rows, int64_t n, int64_t inner) {
  using C = Compute<S>;
  int lane = int(threadIdx.x) % kRowLanes;
  for (int64_t r = firstWarp(); r < rows; r += gridWarps()) {
    int64_t base = (r / inner) * n * inner + r % inner;
    WarpRow<S, kPacked> row{x + base, inner, n, lane};
    C m = row.maximum();
    C sum = row.sumExp(m);
    // Each lane has read its elements (y may be x): it writes only those.
    S *yr = y + base;
    C inverse = C(1) / sum;
    row.forEachQuad([&](int64_t j, const C(&v)[kQuad], int count) {
      C p[kQuad];
#pragma unroll
      for (int u = 0; u < kQuad; ++u)
        p[u] = expOf(v[u] - m) * inverse;
      storeQuad<S, kPacked>(yr, inner, j, p, count);
    });
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
    bool packed = inner == 1 && rowsPacked(x.data, n, sizeof(S)) &&
                  rowsPacked(y.data, n, sizeof(S));
    auto kernel = packed ? softmaxKernel<S, true> : softmaxKernel<S, false>;
    kernel<<<warpRowBlocks(rows), kRowThreads, 0, streamOf(call).handle()>>>(
        x.as<const S>(), y.as<S>(), rows, n, inner);
    return checkLaunch(call, "softmaxKernel");
  });
}

} // namespace trainc::cuda
