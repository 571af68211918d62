//===- DropoutMask.h - Dropout's keep bits, a run at a time -----*- C++ -*-===//
//
// The CPU kernels that drop out (Dropout.cpp, Attention.cpp) draw the mask
// of a run of consecutive stream elements into bytes with one loop the
// compiler vectorizes (64-bit lanes: splitmix's multiplies and the integer
// threshold of math::keepThreshold), then apply those bytes to their
// values; attention's gradient applies one row's bits twice.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_DROPOUTMASK_H
#define TRAINC_RUNTIME_CPU_DROPOUTMASK_H

#include <cstdint>

namespace trainc::cpu {

/// keep[j] = math::dropoutKept(key, first + j, threshold) for j < n.
void drawKeep(uint64_t key, uint64_t threshold, uint64_t first, int64_t n,
              uint8_t *keep);

/// y[j] = keep[j] ? x[j] * scale : 0 for j < n (y may be x).
template <typename T>
void applyKeep(const T *x, T *y, const uint8_t *keep, int64_t n, T scale) {
  for (int64_t j = 0; j < n; ++j)
    y[j] = keep[j] ? x[j] * scale : T(0);
}

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_DROPOUTMASK_H
