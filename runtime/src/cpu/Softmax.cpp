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
// sum) in f64 for f64, in f32 otherwise.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"

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

  withFloatCompute(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1));
    parallelFor(outer * inner, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> row(n);
      for (int64_t r = begin; r < end; ++r) {
        int64_t base = (r / inner) * n * inner + r % inner;
        T max = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          row[j] = loadAs<T>(x, base + j * inner);
          max = std::max(max, row[j]);
        }
        T sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          row[j] = std::exp(row[j] - max);
          sum += row[j];
        }
        for (int64_t j = 0; j < n; ++j)
          storeAs(y, base + j * inner, row[j] / sum);
      }
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
