//===- FusedGradients.cpp - gelu_grad, norm_grad, norm_grad_params --------===//
//
// The backward passes of gelu and of the norms, each one pass over memory
// where the decomposed rules took a dozen elementwise ops:
//
//   gelu_grad (erf):  dx = g * (Phi(x) + x * phi(x)),
//                     Phi(x) = 0.5 * (1 + erf(x / sqrt(2))),
//                     phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
//   gelu_grad (tanh): u = k * (x + c x^3), t = tanh(u), k = sqrt(2 / pi),
//                     c = 0.044715:
//                     dx = g * (0.5 * (1 + t) + 0.5 * x * (1 - t^2) * k *
//                          (1 + 3 c x^2))
//   norm_grad, per row of N elements (the dims axis..rank-1):
//                     c = x - mean(x) (centered) or x; rstd = 1 / sqrt(
//                     mean(c^2) + eps); xhat = c * rstd; d = g * scale;
//                     dx = rstd * (d - xhat * mean(d * xhat) - mean(d)),
//                     the last term only when centered; results (dx, xhat).
//   norm_grad_params:  dx as norm_grad, and the sums over the rows of
//                     g * xhat (the scale's gradient) and of g (the bias's),
//                     in f64 in math/NormParamSums.h's order: segments of
//                     rows in parallel, each row's dx and xhat by the same
//                     row function, then the segments' sums in order;
//                     with an addend, dx is addend + the norm's dx (the
//                     residual stream's gradient), then optionally
//                     rounded to a 16-bit copy, as an add and a convert.
//
// Compute in f64 for f64 (libm, sums in index order), in f32 otherwise:
// the statistics with the forward kernel's own VectorMath.h row sums
// (Norm.cpp), so xhat here is the forward's; erf, exp and tanh through
// VectorMath.h on blocks (math/Transcendental.h's per-element gelu
// gradients, which the CUDA kernels share). 16-bit operands are widened a block
// (or row) at a time and the results rounded to nearest even.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "cpu/NormStatistics.h"
#include "cpu/VectorMath.h"
#include "math/NormParamSums.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kCubic = 0.044715;

/// Elements per block of the gelu_grad loop (and per parallel chunk).
constexpr int64_t kBlock = 1024;

double geluGradF64(double x, double g, bool useTanh) {
  if (!useTanh)
    return g * (0.5 * (1 + std::erf(x * kInvSqrt2)) +
                x * std::exp(-0.5 * x * x) * kInvSqrt2Pi);
  double t = std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
  return g * (0.5 * (1 + t) +
              0.5 * x * (1 - t * t) * kSqrt2OverPi * (1 + 3 * kCubic * x * x));
}

/// One row of norm_grad in T: dx and xhat from x, g and scale (n each).
template <typename T>
void normGradRow(const T *x, const T *g, const T *scale, int64_t n,
                 bool centered, T eps, T *dx, T *xhat) {
  T mean;
  T rstd = normRowStatistics(x, n, centered, eps, mean);
  // xhat, and d = g * scale in dx as scratch (each element read before
  // either is written: dx or xhat may alias x or g); then the two means of
  // d, as VectorMath.h's fixed-order sums.
  for (int64_t j = 0; j < n; ++j) {
    T d = g[j] * scale[j];
    xhat[j] = (x[j] - mean) * rstd;
    dx[j] = d;
  }
  T meanD = centered ? rowSum(dx, n) / T(n) : T(0);
  T meanDX = rowDot(dx, xhat, n) / T(n);
  for (int64_t j = 0; j < n; ++j)
    dx[j] = rstd * (dx[j] - xhat[j] * meanDX - meanD);
}

/// norm_grad_params over `rows` rows of n elements, in T (f32 or f64):
/// dx (plus the addend, ints[3]; then narrowed to 16 bits, ints[4]) and
/// the parameters' sums. Only dx may share memory with an operand, the
/// addend (each of its elements read just before dx's is written).
template <typename T>
void normGradParams(const KernelCall &call, int64_t rows, int64_t n,
                    bool centered, bool withBias) {
  const T *x = call.inputs[0].as<T>(), *scale = call.inputs[1].as<T>();
  const T *g = call.inputs[2].as<T>();
  const T *addend = call.ints[3] != 0 ? call.inputs[3].as<T>() : nullptr;
  const TensorRef *narrowed =
      call.ints[4] != 0 ? &call.outputs[call.numOutputs - 1] : nullptr;
  T *dx = call.outputs[0].as<T>();
  T eps = T(call.floats[0]);
  int64_t per = math::normSegmentRows(rows);
  int64_t segments = math::normSegments(rows);
  // partials[s][k][j]: segment s's sum for column j of result k (the
  // scale's gradient, then the bias's). Kept between calls (this thread's:
  // up to 128 x 2 x n doubles, whose fresh pages cost more than the
  // kernel's arithmetic), each segment's zeroed by the thread that sums it.
  int64_t sums = withBias ? 2 : 1;
  thread_local std::vector<double> scratch;
  scratch.resize(std::max(scratch.size(), size_t(segments * sums * n)));
  double *partials = scratch.data();
  parallelFor(segments, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> xhat(static_cast<size_t>(n));
    // The norm's own dx of a row when an addend is added to it.
    std::vector<T> own(addend ? static_cast<size_t>(n) : 0);
    for (int64_t s = begin; s < end; ++s) {
      double *scaleSum = partials + s * sums * n;
      double *biasSum = scaleSum + n;
      std::fill(scaleSum, scaleSum + sums * n, 0.0);
      for (int64_t r = s * per; r < std::min(rows, (s + 1) * per); ++r) {
        int64_t base = r * n;
        T *out = dx + base;
        normGradRow(x + base, g + base, scale, n, centered, eps,
                    addend ? own.data() : out, xhat.data());
        // graph.add's and graph.convert's rounding, as the ops they fold.
        if (addend)
          for (int64_t j = 0; j < n; ++j)
            out[j] = addend[base + j] + own[j];
        if (narrowed)
          for (int64_t j = 0; j < n; ++j)
            storeAs(*narrowed, base + j, out[j]);
        if constexpr (std::is_same_v<T, float>) {
          // math::scaleGradTerm's terms, through the vector clones.
          accumulateProductsF32(g + base, xhat.data(), scaleSum, n);
          if (withBias)
            accumulateF32(g + base, biasSum, n);
        } else {
          for (int64_t j = 0; j < n; ++j)
            scaleSum[j] += math::scaleGradTerm(g[base + j], xhat[j]);
          if (withBias)
            for (int64_t j = 0; j < n; ++j)
              biasSum[j] += double(g[base + j]);
        }
      }
    }
  });
  // Step 3, a row of segment sums at a time: each column's sums in
  // combineSegments' order (column by column, the reads would stride by
  // whole rows of partials).
  std::vector<double> total(size_t(sums * n), 0.0);
  for (int64_t s = 0; s < segments; ++s)
    for (int64_t i = 0; i < sums * n; ++i)
      total[i] += partials[s * sums * n + i];
  for (int64_t k = 0; k < sums; ++k) {
    T *out = call.outputs[1 + k].as<T>();
    for (int64_t j = 0; j < n; ++j)
      out[j] = T(total[k * n + j]);
  }
}

Status runNormGradParams(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  int axis = int(call.ints[0]);
  bool centered = call.ints[1] != 0, withBias = call.ints[2] != 0;
  int64_t rows = x.product(0, axis), n = x.product(axis, x.rank);
  if (n == 0)
    return okStatus();
  if (x.dtype == DType::F32)
    normGradParams<float>(call, rows, n, centered, withBias);
  else if (x.dtype == DType::F64)
    normGradParams<double>(call, rows, n, centered, withBias);
  else
    return unsupportedDType(call, x.dtype);
  return okStatus();
}

} // namespace

Status runGeluGrad(const KernelCall &call) {
  const TensorRef &x = call.inputs[0], &g = call.inputs[1];
  const TensorRef &dx = call.outputs[0];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  bool useTanh = call.ints[0] == 1;
  int64_t n = x.numElements();
  int64_t blocks = (n + kBlock - 1) / kBlock;
  if (x.dtype == DType::F64) {
    parallelFor(n, kBlock * 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        dx.as<double>()[i] =
            geluGradF64(x.as<double>()[i], g.as<double>()[i], useTanh);
    });
    return okStatus();
  }
  bool native = x.dtype == DType::F32;
  auto gradF32 = useTanh ? geluTanhGradF32 : geluErfGradF32;
  parallelFor(blocks, 4, [&](int64_t begin, int64_t end) {
    float xs[kBlock], gs[kBlock], out[kBlock];
    for (int64_t blk = begin; blk < end; ++blk) {
      int64_t base = blk * kBlock, len = std::min(kBlock, n - base);
      if (native) {
        gradF32(x.as<float>() + base, g.as<float>() + base,
                dx.as<float>() + base, len);
        continue;
      }
      for (int64_t i = 0; i < len; ++i) {
        xs[i] = loadAs<float>(x, base + i);
        gs[i] = loadAs<float>(g, base + i);
      }
      gradF32(xs, gs, out, len);
      for (int64_t i = 0; i < len; ++i)
        storeAs(dx, base + i, out[i]);
    }
  });
  return okStatus();
}

Status runNormGrad(const KernelCall &call) {
  if (call.op == Opcode::NormGradParams)
    return runNormGradParams(call);
  const TensorRef &x = call.inputs[0];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  int axis = int(call.ints[0]);
  bool hasScale = call.ints[1] != 0, centered = call.ints[2] != 0;
  const TensorRef &g = call.inputs[hasScale ? 2 : 1];
  const TensorRef &dx = call.outputs[0], &xhat = call.outputs[1];
  int64_t rows = x.product(0, axis), n = x.product(axis, x.rank);
  if (n == 0 || rows == 0)
    return okStatus();

  withFloatCompute(x.dtype, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> scale(size_t(n), T(1));
    if (hasScale)
      for (int64_t j = 0; j < n; ++j)
        scale[j] = loadAs<T>(call.inputs[1], j);
    T eps = T(call.floats[0]);
    bool native = x.dtype == DType::F32 || x.dtype == DType::F64;
    parallelFor(rows, std::max<int64_t>(1, 4096 / n),
                [&](int64_t begin, int64_t end) {
                  std::vector<T> buf(native ? 0 : 4 * size_t(n));
                  for (int64_t r = begin; r < end; ++r) {
                    int64_t base = r * n;
                    if (native) {
                      normGradRow(x.as<T>() + base, g.as<T>() + base,
                                  scale.data(), n, centered, eps,
                                  dx.as<T>() + base, xhat.as<T>() + base);
                      continue;
                    }
                    T *xs = buf.data(), *gs = xs + n, *d = gs + n, *h = d + n;
                    for (int64_t j = 0; j < n; ++j) {
                      xs[j] = loadAs<T>(x, base + j);
                      gs[j] = loadAs<T>(g, base + j);
                    }
                    normGradRow(xs, gs, scale.data(), n, centered, eps, d, h);
                    for (int64_t j = 0; j < n; ++j) {
                      storeAs(dx, base + j, d[j]);
                      storeAs(xhat, base + j, h[j]);
                    }
                  }
                });
  });
  return okStatus();
}

} // namespace trainc::cpu
