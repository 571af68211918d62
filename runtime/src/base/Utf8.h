//===- Utf8.h - Whether bytes are well-formed UTF-8 -------------*- C++ -*-===//
//
// Names in an executable (tensors, arenas, mesh axes) end up in JSON
// (checkpoint manifests) and safetensors headers, which must be UTF-8: the
// loader refuses a name that is not, rather than writing a file nothing
// can read, or throwing from the JSON writer.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_UTF8_H
#define TRAINC_RUNTIME_BASE_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trainc {

/// Whether `s` is well-formed UTF-8 (Unicode's Table 3-7): no overlong
/// forms, no surrogates, nothing above U+10FFFF, no truncated sequence.
/// Sets `*badOffset` (when given) to the first byte that is not.
inline bool isUtf8(std::string_view s, size_t *badOffset = nullptr) {
  size_t i = 0, n = s.size();
  auto byte = [&](size_t at) { return uint8_t(s[at]); };
  while (i < n) {
    uint8_t b = byte(i);
    // The sequence's length, and the range of its second byte.
    size_t length;
    uint8_t low = 0x80, high = 0xBF;
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      length = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      length = 3;
      if (b == 0xE0)
        low = 0xA0; // not overlong
      if (b == 0xED)
        high = 0x9F; // not a surrogate
    } else if (b >= 0xF0 && b <= 0xF4) {
      length = 4;
      if (b == 0xF0)
        low = 0x90; // not overlong
      if (b == 0xF4)
        high = 0x8F; // not above U+10FFFF
    } else {
      break;
    }
    if (i + length > n || byte(i + 1) < low || byte(i + 1) > high)
      break;
    size_t k = 2;
    while (k < length && byte(i + k) >= 0x80 && byte(i + k) <= 0xBF)
      ++k;
    if (k < length)
      break;
    i += length;
  }
  if (badOffset)
    *badOffset = i;
  return i == n;
}

} // namespace trainc

#endif // TRAINC_RUNTIME_BASE_UTF8_H
