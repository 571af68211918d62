//===- Softcap.h - Soft-capped attention scores, per element ---*- C++ -*-===//
//
// Gemma 2's logit soft cap (graph.attention's `softcap`, c > 0): a score
// s = scale * q . k becomes c * t, t = tanh(s / c), before the mask is
// added, and the gradient multiplies each score's dS by dt/ds * c =
// 1 - t^2. Attention's kernels remake s in both passes, so both keep t
// from s rather than from the capped score (which would round once more).
//
// Shared kernel math (TRAINC_HD), as math/AdamW.h: cpu/Attention.cpp and
// cuda/Attention.cu call these. f32 takes Transcendental.h's tanhCore (the
// same bits on both devices); f64 the C library's tanh on the host and
// CUDA's on the GPU (both within an ulp or two of the exact value).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_SOFTCAP_H
#define TRAINC_RUNTIME_MATH_SOFTCAP_H

#include "base/HostDevice.h"
#include "math/Transcendental.h"

#include <cmath>

namespace trainc::math {

/// t = tanh(s / cap) of the uncapped score s.
TRAINC_HD float softcapTanh(float s, float cap) { return tanhCore(s / cap); }
TRAINC_HD double softcapTanh(double s, double cap) { return ::tanh(s / cap); }

/// d(cap * t)/ds = 1 - t^2: what a capped score's gradient is multiplied
/// by to become the uncapped score's.
template <typename C> TRAINC_HD C softcapSlope(C t) { return C(1) - t * t; }

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_SOFTCAP_H
