//===- Softmax.cpp - Softmax along one dim --------------------------------===//
//
// y[o, :, i] = exp(x[o, :, i] - m) / sum_j exp(x[o, j, i] - m),
//   m = max_j x[o, j, i]
//
// Subtracting the row max keeps exp() from overflowing (the largest term is
// exp(0) = 1), so the sum is at least 1 and the division is safe. A row of
// all -inf gives NaN, as PyTorch does.
//
// Shape legend: the operand viewed as [O, N, I]: O the product of the dims
// before `dim`, N = shape[dim], I the product of the dims after it. Each of
// the O*I rows is a strided run of N elements (stride I). Compute (and the
// sum) in f64 for f64 (libm's exp, the sum in index order), in f32
// otherwise through VectorMath.h's softmaxRowF32 (vectorized exp, at most
// 1 ulp; the sum in math/SoftmaxSum.h's 128 partial sums). f32 rows with
// I = 1 are read and written in place; other rows are gathered into a
// float buffer first.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "cpu/VectorMath.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace trainc::cpu {

Status runSoftmax(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  int dim = int(call.ints[0]);
  int64_t outer = 1, n = x.dims[dim], inner = 1;
  for (int d = 0; d < dim; ++d)
    outer *= x.dims[d];
  for (int d = dim + 1; d < x.rank; ++d)
    inner *= x.dims[d];

  int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1));
  auto rowBase = [=](int64_t r) { return (r / inner) * n * inner + r % inner; };
  if (x.dtype == DType::F32 && inner == 1) {
    const float *in = x.as<float>();
    float *out = y.as<float>();
    parallelFor(outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        softmaxRowF32(in + r * n, out + r * n, n);
    });
  } else if (x.dtype != DType::F64) {
    parallelFor(outer * inner, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> in(n), out(n);
      for (int64_t r = begin; r < end; ++r) {
        int64_t base = rowBase(r);
        for (int64_t j = 0; j < n; ++j)
          in[j] = loadAs<float>(x, base + j * inner);
        softmaxRowF32(in.data(), out.data(), n);
        for (int64_t j = 0; j < n; ++j)
          storeAs(y, base + j * inner, out[j]);
      }
    });
  } else {
    const double *in = x.as<double>();
    double *out = y.as<double>();
    parallelFor(outer * inner, grain, [&](int64_t begin, int64_t end) {
      std::vector<double> row(n);
      for (int64_t r = begin; r < end; ++r) {
        int64_t base = rowBase(r);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          row[j] = in[base + j * inner];
          max = std::max(max, row[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          row[j] = std::exp(row[j] - max);
          sum += row[j];
        }
        for (int64_t j = 0; j < n; ++j)
          out[base + j * inner] = row[j] / sum;
      }
    });
  }
  return okStatus();
}

} // namespace trainc::cpu
