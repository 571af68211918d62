//===- MiniFloat.h - 8-bit float formats and sub-byte integers --*- C++ -*-===//
//
// The storage-only element types: the four 8-bit float formats of ONNX
// (OCP FP8 E4M3FN and E5M2, and Graphcore's E4M3FNUZ and E5M2FNUZ), the
// OCP MX formats FLOAT4E2M1 and FLOAT8E8M0 (the block scale), and 4- and
// 2-bit integers, each held in one byte per element. Nothing computes
// in them; graph.convert moves values in and out, so this file is the whole
// of their arithmetic.
//
// Encoding rounds to nearest, ties to even, from a double (so a float or a
// 16-bit value converts with one rounding). A finite value that rounds
// beyond the largest finite one overflows to infinity (E5M2, which has
// infinities) or to NaN (the others); saturation is the importer's job (it
// clamps first, as ONNX Cast's `saturate` asks). The FNUZ formats have no
// negative zero (it encodes NaN): -0 encodes as +0. This is what LLVM's
// APFloat does for the same semantics, so the graph dialect's folder and
// these kernels agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_MINIFLOAT_H
#define TRAINC_RUNTIME_BASE_MINIFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace trainc {

/// An 8-bit float format: 1 sign bit, `expBits` exponent bits with `bias`,
/// the rest mantissa.
struct MiniFloatFormat {
  int expBits;
  int bias;
  /// E5M2: an all-ones exponent is infinity (mantissa 0) or NaN, as IEEE.
  bool ieee;
  /// FNUZ: NaN is 0x80 (the negative-zero pattern); no infinities.
  bool fnuz;
  int manBits() const { return 7 - expBits; }
};

constexpr MiniFloatFormat kF8E4M3FN{4, 7, false, false};
constexpr MiniFloatFormat kF8E4M3FNUZ{4, 8, false, true};
constexpr MiniFloatFormat kF8E5M2{5, 15, true, false};
constexpr MiniFloatFormat kF8E5M2FNUZ{5, 16, false, true};

/// The value of byte `b` in format `f`.
inline double decodeMiniFloat(MiniFloatFormat f, uint8_t b) {
  int m = f.manBits();
  bool negative = (b & 0x80) != 0;
  int exponent = (b >> m) & ((1 << f.expBits) - 1);
  int mantissa = b & ((1 << m) - 1);
  int maxExponent = (1 << f.expBits) - 1;
  if (f.fnuz && b == 0x80)
    return NAN;
  if (f.ieee && exponent == maxExponent)
    return mantissa ? NAN : (negative ? -INFINITY : INFINITY);
  if (!f.ieee && !f.fnuz && exponent == maxExponent && mantissa == (1 << m) - 1)
    return NAN; // E4M3FN: S.1111.111
  double magnitude =
      exponent == 0
          ? std::ldexp(double(mantissa), 1 - f.bias - m)
          : std::ldexp(double(mantissa + (1 << m)), exponent - f.bias - m);
  return negative ? -magnitude : magnitude;
}

/// The largest finite value of `f`.
inline double maxMiniFloat(MiniFloatFormat f) {
  int m = f.manBits();
  int maxExponent = (1 << f.expBits) - 1;
  // IEEE: the top exponent is inf/NaN; E4M3FN: its all-ones mantissa is NaN;
  // FNUZ: every pattern of the top exponent is finite.
  int exponent = f.ieee ? maxExponent - 1 : maxExponent;
  int mantissa = (!f.ieee && !f.fnuz) ? (1 << m) - 2 : (1 << m) - 1;
  return std::ldexp(double(mantissa + (1 << m)), exponent - f.bias - m);
}

/// `v` in format `f`, rounded to nearest even (see the file comment).
inline uint8_t encodeMiniFloat(MiniFloatFormat f, double v) {
  int m = f.manBits();
  uint8_t nan = f.fnuz ? 0x80 : 0x7F;
  if (std::isnan(v))
    return nan;
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  double a = std::fabs(v);
  uint8_t overflow = f.ieee ? uint8_t(sign | (0x1F << m)) : nan;
  if (std::isinf(a))
    return overflow;
  // The spacing of representable values around a: subnormal below 2^(1-bias).
  int minExponent = 1 - f.bias;
  int e = a > 0 ? std::ilogb(a) : minExponent;
  if (e < minExponent)
    e = minExponent;
  double quantum = std::ldexp(1.0, e - m);
  double steps = std::nearbyint(a / quantum); // ties to even (default mode)
  double rounded = steps * quantum;
  if (rounded > maxMiniFloat(f))
    return overflow;
  if (rounded == 0)
    return f.fnuz ? 0 : sign;
  int re = std::ilogb(rounded);
  if (re < minExponent) // subnormal
    return uint8_t(sign | int(std::ldexp(rounded, m - minExponent)));
  int mantissa = int(std::ldexp(rounded, m - re)) - (1 << m);
  return uint8_t(sign | ((re + f.bias) << m) | mantissa);
}

/// The value of FLOAT4E2M1 `b` (low 4 bits: sign, 2 exponent bits with
/// bias 1, 1 mantissa bit): +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
inline double decodeF4E2M1(uint8_t b) {
  int exponent = (b >> 1) & 3, mantissa = b & 1;
  double magnitude = exponent == 0
                         ? 0.5 * mantissa
                         : std::ldexp(1.0 + 0.5 * mantissa, exponent - 1);
  return (b & 0x8) ? -magnitude : magnitude;
}

/// `v` as FLOAT4E2M1, rounded to nearest even and saturated to +-6 (the
/// format has no infinity); NaN gives -0, as ONNX's reference and
/// ml_dtypes do.
inline uint8_t encodeF4E2M1(double v) {
  if (std::isnan(v))
    return 0x8;
  uint8_t sign = std::signbit(v) ? 0x8 : 0;
  double a = std::fabs(v);
  if (a >= 6)
    return sign | 0x7;
  // Spacing: 0.5 below 2, 1 in [2, 4), 2 in [4, 6].
  double quantum = a < 2 ? 0.5 : a < 4 ? 1.0 : 2.0;
  double r = std::nearbyint(a / quantum) * quantum;
  if (r == 0)
    return sign;
  int e = std::ilogb(r);
  if (r < 1) // subnormal 0.5
    return sign | 0x1;
  int mantissa = int(std::ldexp(r, -e) * 2) - 2;
  return uint8_t(sign | ((e + 1) << 1) | mantissa);
}

/// The value of FLOAT8E8M0 `b`: 2^(b - 127); 0xFF is NaN.
inline double decodeE8M0(uint8_t b) {
  return b == 0xFF ? NAN : std::ldexp(1.0, int(b) - 127);
}

/// `v` as FLOAT8E8M0 with ONNX Cast's defaults (round_mode "up",
/// saturate): the exponent of `v` as a float, plus one when any fraction
/// bit is set, but never past 0xFE; the sign is ignored; 0 gives 2^-127
/// and NaN or infinity 0xFF (NaN). Computed on float's bits, as ONNX's
/// reference does.
inline uint8_t encodeE8M0(double v) {
  float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF)
    return 0xFF;
  if ((bits & 0x7FFFFF) && exponent != 0xFE)
    ++exponent;
  return uint8_t(exponent);
}

/// `v` wrapped to a `bits`-wide two's-complement (or unsigned) integer, as
/// integer conversions do.
inline int64_t wrapToBits(int64_t v, int bits, bool isSigned) {
  uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t low = uint64_t(v) & mask;
  if (isSigned && (low >> (bits - 1)))
    return int64_t(low) - int64_t(uint64_t(1) << bits);
  return int64_t(low);
}

} // namespace trainc

#endif // TRAINC_RUNTIME_BASE_MINIFLOAT_H
