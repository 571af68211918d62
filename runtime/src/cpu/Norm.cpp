//===- Norm.cpp - Layer norm and RMS norm ---------------------------------===//
//
// Over each row x[r, :] of N elements (the dims axis..rank-1 flattened):
//
//   layer_norm: mean = sum_j x[j] / N
//               var  = sum_j (x[j] - mean)^2 / N          (biased)
//               y[j] = (x[j] - mean) / sqrt(var + eps) * scale[j] + bias[j]
//   rms_norm:   ms   = sum_j x[j]^2 / N
//               y[j] = x[j] / sqrt(ms + eps) * scale[j]
//
// scale and bias have the normalized shape (N elements) and default to 1
// and 0. The variance is computed in a second pass over the row rather than
// as E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std.
// Compute and sums in f64 for f64 (sums in index order), in f32 otherwise
// through VectorMath.h's vectorized row loops (sums in 16 partial sums, an
// order that depends only on N); 16-bit rows are widened into a float
// buffer first. An f32 norm's result may be bf16 or f16 (the compiler
// narrows a norm whose only use was that convert): each row is computed in
// f32 and rounded once, the convert's bits.
//
// Shape legend: the input viewed as [R, N], R the product of dims
// 0..axis-1.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "cpu/NormStatistics.h"
#include "cpu/VectorMath.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

/// Loads the N-element `t` as T, or returns `fill` repeated when absent.
template <typename T>
std::vector<T> loadParam(const TensorRef *t, int64_t n, T fill) {
  std::vector<T> v(n, fill);
  if (t)
    for (int64_t j = 0; j < n; ++j)
      v[j] = loadAs<T>(*t, j);
  return v;
}

} // namespace

Status runNorm(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  bool layer = call.op == Opcode::LayerNorm;
  int axis = int(call.ints[0]);
  bool hasScale = call.ints[1] != 0;
  bool hasBias = layer && call.ints[2] != 0;
  const TensorRef *scaleRef = hasScale ? &call.inputs[1] : nullptr;
  const TensorRef *biasRef = hasBias ? &call.inputs[hasScale ? 2 : 1] : nullptr;
  double epsilon = call.floats[0];

  int64_t rows = x.product(0, axis), n = x.product(axis, x.rank);
  if (n == 0)
    return okStatus();

  withFloatCompute(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> scale = loadParam<T>(scaleRef, n, T(1));
    std::vector<T> bias = loadParam<T>(biasRef, n, T(0));
    T eps = T(epsilon);
    int64_t grain = std::max<int64_t>(1, 4096 / n);
    parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      std::vector<T> in, out;
      for (int64_t r = begin; r < end; ++r) {
        int64_t base = r * n;
        // The row in T: read in place for f32 and f64, else widened into
        // `in`; written in place when y has x's type, else computed into
        // `out` and rounded to y's (16-bit x, or an f32 norm narrowed).
        bool widened = x.dtype != DType::F32 && x.dtype != DType::F64;
        bool rounded = widened || y.dtype != x.dtype;
        const T *row = widened ? nullptr : x.as<T>() + base;
        T *result = rounded ? nullptr : y.as<T>() + base;
        if (widened) {
          in.resize(n);
          for (int64_t j = 0; j < n; ++j)
            in[j] = loadAs<T>(x, base + j);
          row = in.data();
        }
        if (rounded) {
          out.resize(n);
          result = out.data();
        }
        T mean;
        T rstd = normRowStatistics(row, n, layer, eps, mean);
        if constexpr (std::is_same_v<T, float>) {
          normalizeF32(row, mean, rstd, scale.data(), bias.data(), result, n);
        } else {
          for (int64_t j = 0; j < n; ++j)
            result[j] = (row[j] - mean) * rstd * scale[j] + bias[j];
        }
        if (rounded)
          for (int64_t j = 0; j < n; ++j)
            storeAs(y, base + j, out[j]);
      }
    });
  });
  return okStatus();
}

} // namespace trainc::cpu
