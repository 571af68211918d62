//===- Float16.h - IEEE half, bfloat16 and TF32 conversions -----*- C++ -*-===//
//
// Bit-exact conversions between float and the 16-bit formats, rounding to
// nearest, ties to even, with NaN kept NaN (quiet) and overflow to infinity,
// as the conversion instructions of GPUs and CPUs do; and TF32 rounding
// (matmul operands under --precision tf32). Shared kernel math
// (TRAINC_HD): the CUDA kernels convert with these same functions. Arithmetic
// on 16-bit values happens in float: load with *ToFloat, compute, store with
// floatTo*.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_FLOAT16_H
#define TRAINC_RUNTIME_BASE_FLOAT16_H

#include "base/HostDevice.h"

#include <cstdint>
#include <cstring>

namespace trainc {

TRAINC_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

TRAINC_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

/// bfloat16 is the top half of a float.
TRAINC_HD float bf16ToFloat(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

TRAINC_HD uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it NaN, quiet.
    return uint16_t((u >> 16) | 0x40);
  // Round to nearest even on the 16 dropped bits.
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return uint16_t(u >> 16);
}

/// `f` rounded to TF32 (NVIDIA's tensor-float 32: f32's sign and 8-bit
/// exponent, 10 explicit mantissa bits), held in a float whose low 13 bits
/// are zero: to nearest, ties away from zero, as PTX's cvt.rna.tf32.f32 and
/// CUTLASS's default conversion. Adding half an ulp to the magnitude and
/// truncating does exactly that, subnormals included; a carry into the
/// exponent moves to the next binade, and past the largest finite value
/// to infinity. Infinities and NaNs pass through.
TRAINC_HD float roundToTf32(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return f;
  return bitsFloat((u + 0x1000u) & 0xffffe000u);
}

/// IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
TRAINC_HD float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) // Inf or NaN.
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0)
      return bitsFloat(sign);
    // Subnormal: value = mant * 2^-24, exact in float.
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

TRAINC_HD uint16_t floatToF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) // NaN.
    return uint16_t(sign | 0x7e00u | ((absu >> 13) & 0x3ffu));
  if (absu >= 0x477ff000u) // >= 65520 rounds to infinity.
    return uint16_t(sign | 0x7c00u);
  if (absu < 0x38800000u) { // Below the smallest normal (2^-14): subnormal.
    // Scale to units of 2^-24 and round to nearest even in float, which is
    // exact here because the result has at most 11 significant bits.
    float v = bitsFloat(absu) * 16777216.0f;
    uint32_t m = uint32_t(v);
    float rem = v - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u)))
      ++m;
    return uint16_t(sign | m); // m == 0x400 carries into the exponent: ok.
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits.
  uint32_t lsb = (absu >> 13) & 1u;
  absu += 0xfffu + lsb;
  return uint16_t(sign | (((absu >> 13) - (112u << 10)) & 0x7fffu));
}

} // namespace trainc

#endif // TRAINC_RUNTIME_BASE_FLOAT16_H
