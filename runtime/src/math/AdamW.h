//===- AdamW.h - One element of an AdamW step --------------------*- C++
//-*-===//
//
// The update of graph.adamw_update (PyTorch's AdamW), every operation
// rounded to the parameter's type T in this order:
//
//   g' = g * grad_scale;  p' = p * decay_factor
//   m1 = m * beta1 + (1 - beta1) * g'
//   v1 = v * beta2 + (1 - beta2) * (g' * g')
//   p1 = p' + neg_step_size * (m1 / (sqrt(v1) / bias_correction2_sqrt + eps))
//
// so the result equals the decomposed update's bit for bit. Shared kernel
// math (TRAINC_HD): the CPU kernel (cpu/Optimizer.cpp) and the CUDA kernel
// call it, both compiled without FMA contraction and with IEEE sqrt and
// division, so both devices produce the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_ADAMW_H
#define TRAINC_RUNTIME_MATH_ADAMW_H

#include "base/HostDevice.h"

#include <cmath>

namespace trainc::math {

/// The step's scalars, in T (the 0-d operands and the attributes).
template <typename T> struct AdamwScalars {
  T negStep, biasCorrection2Sqrt, decay, gradScale;
  T beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps;
};

template <typename T>
TRAINC_HD void adamwElement(const AdamwScalars<T> &c, T p, T g, T m, T v,
                            T &newP, T &newM, T &newV) {
  T gi = g * c.gradScale;
  T pd = p * c.decay;
  T mi = m * c.beta1 + c.oneMinusBeta1 * gi;
  T vi = v * c.beta2 + c.oneMinusBeta2 * (gi * gi);
#if defined(__CUDA_ARCH__)
  T root = sqrt(vi);
#else
  T root = std::sqrt(vi);
#endif
  T denom = root / c.biasCorrection2Sqrt + c.eps;
  newP = pd + c.negStep * (mi / denom);
  newM = mi;
  newV = vi;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_ADAMW_H
