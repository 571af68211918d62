//===- SumOfSquares.h - The order of graph.sum_of_squares's sum -*- C++ -*-===//
//
// graph.sum_of_squares adds the squares of every element of its operands
// in f64 (the global gradient norm squared). Its order is fixed here, and
// both devices follow it, so they give the same bits:
//
// 1. Each operand is cut into chunks of kSquaresChunk elements (its last
//    chunk may be shorter); the chunks of all operands are numbered in
//    operand order.
// 2. In a chunk, lane j of kSquaresLanes sums elements j, j + kSquaresLanes,
//    j + 2 kSquaresLanes, ... in that order, each square rounded to the
//    operand's type first, except a 16-bit operand's, which is exact (in
//    f64); the lanes are combined by combineLanes.
// 3. Accumulator t of kSquaresPartials sums the chunk sums t,
//    t + kSquaresPartials, ... in that order; the accumulators are combined
//    by a pairwise tree (combinePartials).
//
// The CPU (cpu/Optimizer.cpp) runs a chunk's lanes in one loop the
// compiler vectorizes; the GPU (cuda/Optimizer.cu) gives each lane a
// thread and each accumulator a thread of one block. Shared kernel math
// (TRAINC_HD), as math/AdamW.h.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_SUMOFSQUARES_H
#define TRAINC_RUNTIME_MATH_SUMOFSQUARES_H

#include "base/Float16.h"
#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

constexpr int64_t kSquaresChunk = 2048;
constexpr int kSquaresLanes = 8;
constexpr int kSquaresPartials = 1024;

/// x * x rounded to the operand's type, as f64.
TRAINC_HD double squareF64(double x) { return x * x; }
TRAINC_HD double squareF32(float x) { return double(x * x); }
/// A 16-bit float's (bf16, f16) square, exact in f64 (at most 22
/// significant bits; bf16's range squared is within f64's). Not rounded
/// to 16 bits: a gradient element of f16 above 256 would square to
/// infinity, and the optimizer would skip every step as non-finite while
/// PyTorch's norm (in f32) stays finite.
TRAINC_HD double square16(float x) { return double(x) * double(x); }

/// Chunks of an operand of `n` elements.
TRAINC_HD int64_t squaresChunks(int64_t n) {
  return (n + kSquaresChunk - 1) / kSquaresChunk;
}

/// A chunk's sum from its lanes' sums:
/// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
TRAINC_HD double combineLanes(const double *lanes) {
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

/// The sum of the kSquaresPartials accumulators, combined pairwise in
/// place: partials[t] += partials[t + s] for s = 512, 256, ..., 1.
inline double combinePartials(double *partials) {
  for (int s = kSquaresPartials / 2; s > 0; s /= 2)
    for (int t = 0; t < s; ++t)
      partials[t] = partials[t] + partials[t + s];
  return partials[0];
}

static_assert(kSquaresLanes == 8, "combineLanes adds eight lanes");
static_assert(kSquaresChunk % kSquaresLanes == 0,
              "a chunk is whole rounds of its lanes");

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_SUMOFSQUARES_H
