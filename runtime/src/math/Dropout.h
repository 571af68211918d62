//===- Dropout.h - Dropout's counter-based keep mask -------------*- C++
//-*-===//
//
// keep[i] is a pure function of (seed, step, i), i the flat row-major
// element index, so backward and recomputation can replay the forward mask
// without storing it, on any thread split and on any device: shared kernel
// math (TRAINC_HD), called by the CPU kernel (cpu/Dropout.cpp) and the CUDA
// kernel, which therefore draw the same mask bit for bit.
//
//   mix(z)  = splitmix64's output function applied to z + 0x9E3779B97F4A7C15:
//               z += 0x9E3779B97F4A7C15
//               z  = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//               z  = (z ^ (z >> 27)) * 0x94D049BB133111EB
//               return z ^ (z >> 31)                    (all mod 2^64)
//   key     = mix(mix(uint64(seed)) ^ uint64(step))
//   u[i]    = (mix(key ^ uint64(i)) >> 11) * 2^-53     (uniform in [0, 1))
//   keep[i] = u[i] >= ratio                            (in f64)
//
// so P(keep) = 1 - ratio up to 2^-53. Each mix is a bijection of 64-bit
// words with full avalanche, so distinct (seed, step) pairs give unrelated
// streams and neighbouring indices unrelated bits. Changing this function
// changes every trained model's dropout masks: treat it as a format.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_DROPOUT_H
#define TRAINC_RUNTIME_MATH_DROPOUT_H

#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

TRAINC_HD uint64_t splitMix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The key of one (seed, step) stream.
TRAINC_HD uint64_t dropoutKey(uint64_t seed, uint64_t step) {
  return splitMix(splitMix(seed) ^ step);
}

/// The least 53-bit draw n = mix(key ^ i) >> 11 kept at drop `ratio`
/// (in [0, 1]): u[i] = n 2^-53 >= ratio exactly when n >= ratio 2^53
/// (scaling by a power of two is exact), that is n >= ceil(ratio 2^53),
/// an integer no larger than 2^53. So the kernels compare integers, the
/// definition's bits without a conversion to f64 per element. (A NaN
/// ratio, which no caller passes, keeps everything; u >= NaN kept
/// nothing.)
TRAINC_HD uint64_t keepThreshold(double ratio) {
  if (!(ratio > 0))
    return 0;
  if (ratio >= 1)
    return uint64_t(1) << 53;
  double scaled = ratio * 0x1p53; // exact; below 2^53
  uint64_t n = uint64_t(scaled);  // its floor, exact
  return double(n) < scaled ? n + 1 : n;
}

/// Whether element `index` of the stream `key` is kept, given the drop
/// ratio's keepThreshold.
TRAINC_HD bool dropoutKept(uint64_t key, uint64_t index, uint64_t threshold) {
  return (splitMix(key ^ index) >> 11) >= threshold;
}

/// Whether element `index` of the stream `key` is kept at drop `ratio`
/// (u[i] >= ratio).
TRAINC_HD bool dropoutKeep(uint64_t key, uint64_t index, double ratio) {
  return dropoutKept(key, index, keepThreshold(ratio));
}

/// Where a block of a tensor split along one dimension lies in the whole
/// (graph.dropout's `blocks`, and attention's `head_blocks` for its
/// [B, Hq, Sq, Sk] probabilities): it is block `block` of `blocks`, and
/// `run` is the number of its elements from the split dimension on (that
/// dimension's size times those after it). Not split: 1 block.
struct DropoutBlock {
  int64_t block = 0, blocks = 1, run = 1;
};

/// The whole's row-major index of element `within` of the block's run
/// `outer`: the block's runs lie `blocks` runs apart in the whole, from
/// run `block`.
TRAINC_HD uint64_t wholeIndex(const DropoutBlock &b, int64_t outer,
                              int64_t within) {
  return uint64_t((outer * b.blocks + b.block) * b.run + within);
}

/// The same for the block's element `i` (row-major).
TRAINC_HD uint64_t wholeIndex(const DropoutBlock &b, int64_t i) {
  if (b.blocks == 1)
    return uint64_t(i);
  return wholeIndex(b, i / b.run, i % b.run);
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_DROPOUT_H
