//===- IntegerOps.cpp - Integer arithmetic beyond one graph op ------------===//
//
// chlo.mulhi and stablehlo.power on integers, composed from the graph's
// integer ops (which wrap around in two's complement, as StableHLO's do).
// Integers carry no gradient, so only the values matter here.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

/// `type`'s shape with integer elements of `width` bits and `unsignedness`.
RankedTensorType integerTensor(RankedTensorType type, unsigned width,
                               bool isUnsigned) {
  return RankedTensorType::get(
      type.getShape(), IntegerType::get(type.getContext(), width,
                                        isUnsigned ? IntegerType::Unsigned
                                                   : IntegerType::Signless));
}

/// The high 64 bits of the unsigned 128-bit product of ui64 a and b, from
/// their 32-bit halves: every partial product and the middle column's sum
/// (at most 3 (2^32 - 1)) fits in 64 bits.
Value unsignedMulhi64(OpContext &ctx, Value a, Value b) {
  auto u64 = tensorType(a);
  Value low32 = ctx.splat(u64, 4294967295.0);
  Value s32 = ctx.splat(u64, 32);
  auto lo = [&](Value v) { return ctx.create<AndOp>(v, low32); };
  auto hi = [&](Value v) { return ctx.create<ShiftRightLogicalOp>(v, s32); };
  Value a0 = lo(a), a1 = hi(a), b0 = lo(b), b1 = hi(b);
  Value p00 = ctx.create<MulOp>(a0, b0);
  Value p01 = ctx.create<MulOp>(a0, b1);
  Value p10 = ctx.create<MulOp>(a1, b0);
  Value p11 = ctx.create<MulOp>(a1, b1);
  Value middle =
      ctx.create<AddOp>(ctx.create<AddOp>(hi(p00), lo(p01)), lo(p10));
  Value high = ctx.create<AddOp>(p11, ctx.create<AddOp>(hi(p01), hi(p10)));
  return ctx.create<AddOp>(high, hi(middle));
}

} // namespace

/// chlo.mulhi: the high half of the double-width product. Up to 32 bits,
/// the product of the operands widened (sign- or zero-extended, to at least
/// 32 bits) shifted right by the width; 64 bits from 32-bit halves, and for
/// signed operands the unsigned high half less b where a < 0 and a where
/// b < 0 (mod 2^64), the two's complement correction.
LogicalResult lowerMulhi(OpContext &ctx) {
  auto type = ctx.resultType();
  auto element = cast<IntegerType>(type.getElementType());
  unsigned width = element.getWidth();
  bool isUnsigned = element.isUnsigned();
  Value a = ctx.operand(0), b = ctx.operand(1);
  if (width <= 32) {
    auto wide = integerTensor(type, width == 32 ? 64 : 32, isUnsigned);
    Value product = ctx.create<MulOp>(ctx.create<ConvertOp>(wide, a),
                                      ctx.create<ConvertOp>(wide, b));
    Value shift = ctx.splat(wide, width);
    Value high = isUnsigned
                     ? ctx.create<ShiftRightLogicalOp>(product, shift)
                     : ctx.create<ShiftRightArithmeticOp>(product, shift);
    ctx.setResult(0, ctx.create<ConvertOp>(type, high));
    return success();
  }
  if (isUnsigned) {
    ctx.setResult(0, unsignedMulhi64(ctx, a, b));
    return success();
  }
  auto u64 = integerTensor(type, 64, /*isUnsigned=*/true);
  Value ua = ctx.create<BitcastOp>(u64, a), ub = ctx.create<BitcastOp>(u64, b);
  Value zero = ctx.splat(type, 0), uzero = ctx.splat(u64, 0);
  auto negative = [&](Value v) {
    return ctx.create<CompareOp>(ComparisonDirection::LT, v, zero);
  };
  Value high = unsignedMulhi64(ctx, ua, ub);
  high = ctx.create<SubOp>(high, ctx.create<SelectOp>(negative(a), ub, uzero));
  high = ctx.create<SubOp>(high, ctx.create<SelectOp>(negative(b), ua, uzero));
  ctx.setResult(0, ctx.create<BitcastOp>(type, high));
  return success();
}

/// stablehlo.power on integers, as the StableHLO interpreter computes it:
/// base^e by squaring for e >= 0, wrapping around; for e < 0, 1 where the
/// base is 1, +-1 where it is -1 (by e's parity), 0 elsewhere. The squaring
/// runs over e's bits: those of the largest constant exponent, or all but
/// the sign bit.
LogicalResult lowerIntegerPower(OpContext &ctx) {
  auto type = ctx.resultType();
  auto element = cast<IntegerType>(type.getElementType());
  bool isUnsigned = element.isUnsigned();
  Value base = ctx.operand(0), exponent = ctx.operand(1);
  unsigned bits = element.getWidth() - (isUnsigned ? 0 : 1);
  if (auto values = ctx.constantOf(exponent)) {
    unsigned needed = 0;
    for (const APInt &v : values->getValues<APInt>())
      if (isUnsigned || !v.isNegative())
        needed = std::max(needed, v.getActiveBits());
    bits = std::min(bits, needed);
  }
  Value zero = ctx.splat(type, 0), one = ctx.splat(type, 1);
  Value negativeExponent =
      isUnsigned
          ? Value()
          : ctx.create<CompareOp>(ComparisonDirection::LT, exponent, zero);
  Value e = isUnsigned ? exponent
                       : ctx.create<SelectOp>(negativeExponent, zero, exponent);
  Value result = one, square = base;
  for (unsigned i = 0; i < bits; ++i) {
    Value bit = ctx.create<AndOp>(
        ctx.create<ShiftRightLogicalOp>(e, ctx.splat(type, i)), one);
    Value taken = ctx.create<CompareOp>(ComparisonDirection::NE, bit, zero);
    result =
        ctx.create<MulOp>(result, ctx.create<SelectOp>(taken, square, one));
    if (i + 1 < bits)
      square = ctx.create<MulOp>(square, square);
  }
  if (!isUnsigned) {
    // e < 0: 1 / base^|e| truncated toward zero.
    Value minusOne = ctx.splat(type, -1);
    Value odd = ctx.create<CompareOp>(ComparisonDirection::NE,
                                      ctx.create<AndOp>(exponent, one), zero);
    Value ofMinusOne = ctx.create<SelectOp>(odd, minusOne, one);
    Value reciprocal = ctx.create<SelectOp>(
        ctx.create<CompareOp>(ComparisonDirection::EQ, base, one), one,
        ctx.create<SelectOp>(
            ctx.create<CompareOp>(ComparisonDirection::EQ, base, minusOne),
            ofMinusOne, zero));
    result = ctx.create<SelectOp>(negativeExponent, reciprocal, result);
  }
  ctx.setResult(0, result);
  return success();
}

} // namespace trainc::stablehlo_import
