//===- GeluMath.cuh - One element of GELU and its gradient ----------------===//
//
// geluOf and geluGradOf in f32 (also the 16-bit floats' compute type) and
// f64, the math of Gelu.cu's kernels (one op per launch) and of
// FusedElementwise.cu's steps, so a fused step gives the unfused op's
// bits. The numerics are written at the top of Gelu.cu.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_GELUMATH_CUH
#define TRAINC_RUNTIME_CUDA_GELUMATH_CUH

#include "math/Transcendental.h"

namespace trainc::cuda {

constexpr double kInvSqrt2F64 = 0.70710678118654752440;
constexpr double kInvSqrt2PiF64 = 0.39894228040143267794;
constexpr double kSqrt2OverPiF64 = 0.79788456080286535588;
constexpr double kCubicF64 = 0.044715;

__device__ __forceinline__ float geluOf(float v, bool useTanh) {
  return useTanh ? math::geluTanh(v) : math::geluErf(v);
}

/// cpu/Gelu.cpp's geluF64.
__device__ __forceinline__ double geluOf(double v, bool useTanh) {
  double inner = useTanh ? tanh(kSqrt2OverPiF64 * (v + kCubicF64 * v * v * v))
                         : erf(v * kInvSqrt2F64);
  return 0.5 * v * (1 + inner);
}

__device__ __forceinline__ float geluGradOf(float x, float g, bool useTanh) {
  return useTanh ? math::geluTanhGrad(x, g) : math::geluErfGrad(x, g);
}

/// cpu/FusedGradients.cpp's geluGradF64.
__device__ __forceinline__ double geluGradOf(double x, double g, bool useTanh) {
  if (!useTanh)
    return g * (0.5 * (1 + erf(x * kInvSqrt2F64)) +
                x * exp(-0.5 * x * x) * kInvSqrt2PiF64);
  double t = tanh(kSqrt2OverPiF64 * (x + kCubicF64 * x * x * x));
  return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kSqrt2OverPiF64 *
                                  (1 + 3 * kCubicF64 * x * x));
}

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_GELUMATH_CUH
