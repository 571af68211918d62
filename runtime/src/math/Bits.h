//===- Bits.h - The bitwise ops' per-element math ------------------*- C++
//-*-===//
//
// graph.and ... graph.count_leading_zeros on one element, for the CPU
// (cpu/Bitwise.cpp) and CUDA (cuda/Bitwise.cu, cuda/FusedElementwise.cu)
// kernels alike, and which BitOp an opcode is (toBitOp; bitOpOf on the
// host). T is the
// storage type (int8_t ... uint64_t); every op works on its unsigned bits
// U, so signed values are their two's complement bits and nothing here is
// undefined behaviour in C++ (no signed overflow, no shift by the width):
//
//   shift_left(x, y)             x << y, 0 where y >= width
//   shift_right_logical(x, y)    x >> y with zeros, 0 where y >= width
//   shift_right_arithmetic(x, y) x >> y with copies of the sign bit, every
//                                bit the sign bit where y >= width
//   pop_count(x)                 the number of set bits
//   count_leading_zeros(x)       zero bits above the highest set bit (the
//                                width for 0)
//
// y is read as unsigned, so a negative shift is a large one (StableHLO's
// rule, and XLA's). The shifts' results are T's bits, as are the counts
// (a count of at most 64 fits every T).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_BITS_H
#define TRAINC_RUNTIME_MATH_BITS_H

#include "base/HostDevice.h"
#include "trainc/schema/ExecutableFormat.h"

#include <cstdint>
#include <optional>
#include <type_traits>

namespace trainc::math {

enum class BitOp {
  kAnd,
  kOr,
  kXor,
  kNot,
  kShiftLeft,
  kShiftRightLogical,
  kShiftRightArithmetic,
  kPopCount,
  kCountLeadingZeros,
};

/// The math::BitOp of a bitwise opcode, in `out`; false for another opcode
/// (host and device: a fused loop's steps map here on the GPU).
TRAINC_HD bool toBitOp(Opcode op, BitOp &out) {
  switch (op) {
  case Opcode::And:
    out = BitOp::kAnd;
    return true;
  case Opcode::Or:
    out = BitOp::kOr;
    return true;
  case Opcode::Xor:
    out = BitOp::kXor;
    return true;
  case Opcode::Not:
    out = BitOp::kNot;
    return true;
  case Opcode::ShiftLeft:
    out = BitOp::kShiftLeft;
    return true;
  case Opcode::ShiftRightLogical:
    out = BitOp::kShiftRightLogical;
    return true;
  case Opcode::ShiftRightArithmetic:
    out = BitOp::kShiftRightArithmetic;
    return true;
  case Opcode::PopCount:
    out = BitOp::kPopCount;
    return true;
  case Opcode::CountLeadingZeros:
    out = BitOp::kCountLeadingZeros;
    return true;
  default:
    return false;
  }
}

/// The math::BitOp of a bitwise opcode (none for another opcode).
inline std::optional<BitOp> bitOpOf(Opcode op) {
  BitOp b;
  return toBitOp(op, b) ? std::optional<BitOp>(b) : std::nullopt;
}

/// Whether `op` takes two operands.
TRAINC_HD bool isBinaryBitOp(BitOp op) {
  return op != BitOp::kNot && op != BitOp::kPopCount &&
         op != BitOp::kCountLeadingZeros;
}

/// `op` of x (and y, for the binary ones) in T's bits.
template <typename T> TRAINC_HD T bitOp(BitOp op, T x, T y) {
  using U = std::make_unsigned_t<T>;
  constexpr int kWidth = int(sizeof(T) * 8);
  // The arithmetic is done in uint64_t and cut to U at the end, so that
  // the 8- and 16-bit types are not promoted to (signed) int.
  uint64_t a = uint64_t(U(x)), b = uint64_t(U(y));
  constexpr uint64_t kMask =
      kWidth == 64 ? ~uint64_t(0) : (uint64_t(1) << kWidth) - 1;
  uint64_t r = 0;
  switch (op) {
  case BitOp::kAnd:
    r = a & b;
    break;
  case BitOp::kOr:
    r = a | b;
    break;
  case BitOp::kXor:
    r = a ^ b;
    break;
  case BitOp::kNot:
    r = ~a;
    break;
  case BitOp::kShiftLeft:
    r = b >= uint64_t(kWidth) ? 0 : a << b;
    break;
  case BitOp::kShiftRightLogical:
    r = b >= uint64_t(kWidth) ? 0 : a >> b;
    break;
  case BitOp::kShiftRightArithmetic: {
    bool negative = (a >> (kWidth - 1)) & 1;
    uint64_t shift = b >= uint64_t(kWidth) ? uint64_t(kWidth) - 1 : b;
    r = a >> shift;
    if (negative) // The bits shifted in are ones.
      r |= kMask & ~(kMask >> shift);
    break;
  }
  case BitOp::kPopCount:
#if defined(__CUDA_ARCH__)
    r = uint64_t(__popcll(a));
#else
    r = uint64_t(__builtin_popcountll(a));
#endif
    break;
  case BitOp::kCountLeadingZeros:
    // a has no bit above kWidth: the 64-bit count less the 64 - kWidth
    // bits above T's (the builtins leave 0 undefined).
    if (a == 0) {
      r = uint64_t(kWidth);
    } else {
#if defined(__CUDA_ARCH__)
      r = uint64_t(__clzll((long long)a)) - uint64_t(64 - kWidth);
#else
      r = uint64_t(__builtin_clzll(a)) - uint64_t(64 - kWidth);
#endif
    }
    break;
  }
  return T(U(r & kMask));
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_BITS_H
