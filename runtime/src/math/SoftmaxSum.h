//===- SoftmaxSum.h - The order of a softmax row's sum of exps -*- C++ -*-===//
//
// A softmax row (graph.softmax, and the softmax of the cross-entropy loss
// and its gradient) adds its terms e_i = exp(x_i - max) in f32 in this
// order, on both devices, so they give the same bits:
//
// 1. Term i goes into partial i mod kSoftmaxPartials (128), the terms of a
//    partial in index order, from 0.
// 2. The partials are added pairwise: partial[k] += partial[k + s] for
//    s = 64, 32, ..., 1; the sum is partial[0].
//
// The CPU (cpu/VectorMath.cpp) holds the 128 partials in vector registers
// (eight of AVX-512's). The GPU (cuda/RowMath.cuh) reads a row with one
// warp: lane l holds partials 4l .. 4l + 3 and reads the row's elements
// 128 k + 4l .. 128 k + 4l + 3 for k = 0, 1, ..., four consecutive
// elements in one vector load (16 partials, the earlier order, let a warp
// read only 32 bytes of a bf16 row at a time, too few to keep a GPU's
// memory busy). The steps s = 64 .. 4 of the tree are shuffles 16 .. 1
// lanes down (partial 4l + u plus partial 4(l + s/4) + u); s = 2 and 1 are
// within a lane: combineQuad.
//
// Shared kernel math (TRAINC_HD), as math/AdamW.h.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_SOFTMAXSUM_H
#define TRAINC_RUNTIME_MATH_SOFTMAXSUM_H

#include "base/HostDevice.h"

namespace trainc::math {

constexpr int kSoftmaxPartials = 128;
/// The GPU's lanes per row and the partials (consecutive elements) each
/// holds.
constexpr int kSoftmaxLanes = 32;
constexpr int kSoftmaxQuad = kSoftmaxPartials / kSoftmaxLanes;

/// The tree's last two steps over one lane's partials 4l .. 4l + 3 (after
/// the steps across lanes): s = 2 then s = 1.
template <typename T> TRAINC_HD T combineQuad(const T (&p)[kSoftmaxQuad]) {
  return (p[0] + p[2]) + (p[1] + p[3]);
}

static_assert(kSoftmaxQuad == 4, "combineQuad adds four partials");

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_SOFTMAXSUM_H
