//===- SortKey.h - argsort's order as unsigned 64-bit keys --------*- C++
//-*-===//
//
// graph.argsort orders a row by one unsigned key per element, so that the
// CPU (a stable sort of the keys, cpu/Sort.cpp) and the GPU (CUB's stable
// segmented sort of the same keys, cuda/Sort.cu) agree bit for bit:
//
//   integers  key = uint64(int64(x)) ^ 2^63      (two's complement, shifted
//                                                 so that unsigned order is
//                                                 signed order)
//   floats    NaN: key = 2^64 - 1                (after every number, all
//                                                 NaNs equal)
//             else x as a double (exact for every float type), -0 as +0,
//             bits b: key = b ^ (2^64 - 1) if the sign is set, else b ^ 2^63
//                                                (negatives reversed below
//                                                 the positives)
//   floats in total order: the storage's own w bits b (w = 16, 32 or 64),
//             key = ~b & (2^w - 1) if the sign is set, else b | 2^(w-1)
//                                                (IEEE 754 totalOrder: -NaN
//                                                 < -inf < ... < -0 < +0 <
//                                                 ... < +inf < +NaN, NaNs by
//                                                 payload)
//   descending: key = ~key                       (the reverse order; a
//                                                 stable sort keeps ties in
//                                                 index order either way)
//
// So floats sort as numbers with -0 == +0 and NaN largest, which is JAX's
// sort order (lax.sort canonicalizes -0 and NaN before comparing in total
// order), or in total order, which is chlo.top_k's and a TOTALORDER
// comparison's without that canonicalization.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_SORTKEY_H
#define TRAINC_RUNTIME_MATH_SORTKEY_H

#include "base/HostDevice.h"

#include <cstdint>
#include <cstring>

namespace trainc::math {

constexpr uint64_t kSortSignBit = uint64_t(1) << 63;

TRAINC_HD uint64_t sortKeyOfInt(int64_t x, bool descending) {
  uint64_t key = uint64_t(x) ^ kSortSignBit;
  return descending ? ~key : key;
}

TRAINC_HD uint64_t sortKeyOfFloat(double x, bool descending) {
  uint64_t key;
  if (x != x) {
    key = ~uint64_t(0);
  } else {
    if (x == 0)
      x = 0; // -0 sorts as +0
    uint64_t bits;
#if defined(__CUDA_ARCH__)
    bits = uint64_t(__double_as_longlong(x));
#else
    std::memcpy(&bits, &x, 8);
#endif
    key = (bits & kSortSignBit) ? ~bits : bits ^ kSortSignBit;
  }
  return descending ? ~key : key;
}

TRAINC_HD uint64_t sortKeyOfFloatBits(uint64_t bits, int width,
                                      bool descending) {
  uint64_t top = uint64_t(1) << (width - 1);
  uint64_t mask = top | (top - 1);
  uint64_t key = (bits & top) ? (~bits & mask) : (bits | top);
  return descending ? ~key : key;
}

/// sortKeyOfFloatBits of element i of an array of `width`-bit floats (16,
/// 32 or 64), read as the stored bits.
TRAINC_HD uint64_t sortKeyOfStoredFloat(const void *data, int64_t i, int width,
                                        bool descending) {
  uint64_t bits = width == 16   ? static_cast<const uint16_t *>(data)[i]
                  : width == 32 ? static_cast<const uint32_t *>(data)[i]
                                : static_cast<const uint64_t *>(data)[i];
  return sortKeyOfFloatBits(bits, width, descending);
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_SORTKEY_H
