//===- Gelu.cpp - GELU, erf and tanh forms --------------------------------===//
//
//   erf:  y = 0.5 * x * (1 + erf(x / sqrt(2)))
//   tanh: y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//
// as PyTorch's gelu(approximate="none" | "tanh"). Elementwise over any
// shape; compute in f64 for f64, in f32 otherwise.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"

#include <cmath>

namespace trainc::cpu {

namespace {

/// GELU of one value in the compute type T.
template <typename T> inline T gelu(T v, bool useTanh) {
  const T invSqrt2 = T(0.70710678118654752440);
  const T sqrt2OverPi = T(0.79788456080286535588);
  T inner = useTanh ? std::tanh(sqrt2OverPi * (v + T(0.044715) * v * v * v))
                    : std::erf(v * invSqrt2);
  return T(0.5) * v * (T(1) + inner);
}

/// f32 and f64 read and write their elements directly; 16-bit types go
/// through loadAs/storeAs (widen to float, round to nearest even).
template <typename T>
void geluDirect(const TensorRef &x, const TensorRef &y, bool useTanh) {
  const T *in = x.as<T>();
  T *out = y.as<T>();
  parallelFor(x.numElements(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = gelu(in[i], useTanh);
  });
}

} // namespace

Status runGelu(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (!isFloat(x.dtype))
    return unsupportedDType(call, x.dtype);
  bool useTanh = call.ints[0] == 1;
  if (x.dtype == DType::kF32) {
    geluDirect<float>(x, y, useTanh);
    return okStatus();
  }
  if (x.dtype == DType::kF64) {
    geluDirect<double>(x, y, useTanh);
    return okStatus();
  }
  parallelFor(x.numElements(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      storeAs(y, i, gelu(loadAs<float>(x, i), useTanh));
  });
  return okStatus();
}

} // namespace trainc::cpu
