//===- Gelu.cpp - GELU, erf and tanh forms --------------------------------===//
//
//   erf:  y = 0.5 * x * (1 + erf(x / sqrt(2)))
//   tanh: y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//
// as PyTorch's gelu(approximate="none" | "tanh"). Elementwise over any
// shape; compute in f64 for f64 (libm), in f32 otherwise through
// VectorMath.h's geluErfF32 and geluTanhF32 (vectorized; the tanh form as
// the equal x / (1 + exp(-2u)), which does not cancel for negative x). The
// erf form keeps PyTorch's formula, so for x < 0 its error is absolute,
// a few ulp of |x|, like PyTorch's own f32 result. 16-bit values are
// widened a block at a time into a float buffer and rounded back to
// nearest even.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "cpu/VectorMath.h"

#include <algorithm>
#include <cmath>

namespace trainc::cpu {

namespace {

/// Elements per parallel chunk.
constexpr int64_t kGrain = 16384;

/// GELU of one double.
inline double geluF64(double v, bool useTanh) {
  const double invSqrt2 = 0.70710678118654752440;
  const double sqrt2OverPi = 0.79788456080286535588;
  double inner = useTanh ? std::tanh(sqrt2OverPi * (v + 0.044715 * v * v * v))
                         : std::erf(v * invSqrt2);
  return 0.5 * v * (1 + inner);
}

} // namespace

Status runGelu(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  bool useTanh = call.ints[0] == 1;
  int64_t n = x.numElements();
  if (x.dtype == DType::F64) {
    const double *in = x.as<double>();
    double *out = y.as<double>();
    parallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = geluF64(in[i], useTanh);
    });
    return okStatus();
  }
  auto geluF32 = useTanh ? geluTanhF32 : geluErfF32;
  if (x.dtype == DType::F32) {
    const float *in = x.as<float>();
    float *out = y.as<float>();
    parallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
      geluF32(in + begin, out + begin, end - begin);
    });
    return okStatus();
  }
  parallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
    constexpr int64_t kBlock = 256;
    float in[kBlock], out[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      int64_t len = std::min(kBlock, end - b);
      for (int64_t i = 0; i < len; ++i)
        in[i] = loadAs<float>(x, b + i);
      geluF32(in, out, len);
      for (int64_t i = 0; i < len; ++i)
        storeAs(y, b + i, out[i]);
    }
  });
  return okStatus();
}

} // namespace trainc::cpu
