//===- ElementwiseOps.cpp - Elementwise StableHLO ops ---------------------===//
//
// Ops with a graph counterpart map one to one; the rest are decompositions
// whose math is written beside each. StableHLO's elementwise operands all
// have the result's shape (only select and clamp take scalars beside
// tensors), so no broadcasting is inferred here.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

#include <limits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

bool isBool(Type t) { return getElementTypeOrSelf(t).isInteger(1); }

template <typename OpT> LogicalResult lowerBinary(OpContext &ctx) {
  ctx.setResult(0, ctx.create<OpT>(ctx.operand(0), ctx.operand(1)));
  return success();
}

template <typename OpT> LogicalResult lowerUnary(OpContext &ctx) {
  ctx.setResult(0, ctx.create<OpT>(ctx.operand(0)));
  return success();
}

/// a AND b = select(a, b, false); a OR b = select(a, true, b).
Value logicalAnd(OpContext &ctx, Value a, Value b) {
  return ctx.create<SelectOp>(a, b, ctx.splat(tensorType(a), 0));
}
Value logicalOr(OpContext &ctx, Value a, Value b) {
  return ctx.create<SelectOp>(a, ctx.splat(tensorType(a), 1), b);
}
Value logicalNot(OpContext &ctx, Value a) {
  return ctx.create<CompareOp>(ComparisonDirection::EQ, a,
                               ctx.splat(tensorType(a), 0));
}

} // namespace

// add, multiply, maximum and minimum are or, and, or and and on i1.
LogicalResult lowerAdd(OpContext &ctx) {
  if (isBool(ctx.resultType())) {
    ctx.setResult(0, logicalOr(ctx, ctx.operand(0), ctx.operand(1)));
    return success();
  }
  return lowerBinary<AddOp>(ctx);
}
LogicalResult lowerMultiply(OpContext &ctx) {
  if (isBool(ctx.resultType())) {
    ctx.setResult(0, logicalAnd(ctx, ctx.operand(0), ctx.operand(1)));
    return success();
  }
  return lowerBinary<MulOp>(ctx);
}
LogicalResult lowerMaximum(OpContext &ctx) {
  if (isBool(ctx.resultType()))
    return lowerAdd(ctx);
  return lowerBinary<MaxOp>(ctx);
}
LogicalResult lowerMinimum(OpContext &ctx) {
  if (isBool(ctx.resultType()))
    return lowerMultiply(ctx);
  return lowerBinary<MinOp>(ctx);
}
LogicalResult lowerSubtract(OpContext &ctx) { return lowerBinary<SubOp>(ctx); }
LogicalResult lowerDivide(OpContext &ctx) { return lowerBinary<DivOp>(ctx); }
LogicalResult lowerPower(OpContext &ctx) { return lowerBinary<PowOp>(ctx); }

// and, or, xor and not: bitwise on integers; on i1 (which the bitwise ops
// do not take) logic, xor as a != b.
LogicalResult lowerAnd(OpContext &ctx) {
  if (!isBool(ctx.resultType()))
    return lowerBinary<AndOp>(ctx);
  ctx.setResult(0, logicalAnd(ctx, ctx.operand(0), ctx.operand(1)));
  return success();
}
LogicalResult lowerOr(OpContext &ctx) {
  if (!isBool(ctx.resultType()))
    return lowerBinary<OrOp>(ctx);
  ctx.setResult(0, logicalOr(ctx, ctx.operand(0), ctx.operand(1)));
  return success();
}
LogicalResult lowerXor(OpContext &ctx) {
  if (!isBool(ctx.resultType()))
    return lowerBinary<XorOp>(ctx);
  ctx.setResult(0, ctx.create<CompareOp>(ComparisonDirection::NE,
                                         ctx.operand(0), ctx.operand(1)));
  return success();
}
LogicalResult lowerNot(OpContext &ctx) {
  if (!isBool(ctx.resultType()))
    return lowerUnary<NotOp>(ctx);
  ctx.setResult(0, logicalNot(ctx, ctx.operand(0)));
  return success();
}
LogicalResult lowerShiftLeft(OpContext &ctx) {
  return lowerBinary<ShiftLeftOp>(ctx);
}
LogicalResult lowerShiftRightLogical(OpContext &ctx) {
  return lowerBinary<ShiftRightLogicalOp>(ctx);
}
LogicalResult lowerShiftRightArithmetic(OpContext &ctx) {
  return lowerBinary<ShiftRightArithmeticOp>(ctx);
}
LogicalResult lowerPopcnt(OpContext &ctx) {
  return lowerUnary<PopCountOp>(ctx);
}
LogicalResult lowerCountLeadingZeros(OpContext &ctx) {
  return lowerUnary<CountLeadingZerosOp>(ctx);
}
/// Between types of one width only: a change of width reshapes (an extra
/// dimension of the narrower type), which jax.random does not use.
LogicalResult lowerBitcastConvert(OpContext &ctx) {
  Type from = ctx.operandType(0).getElementType();
  Type to = ctx.resultType().getElementType();
  if (from.isInteger(1) || to.isInteger(1) ||
      from.getIntOrFloatBitWidth() != to.getIntOrFloatBitWidth() ||
      ctx.operandType(0).getShape() != ctx.resultType().getShape())
    return ctx.error() << "from " << from << " to " << to
                       << " is not supported: trainc bitcasts between element "
                          "types of one bit width (not i1), shape unchanged";
  ctx.setResult(0, ctx.create<BitcastOp>(ctx.resultType(), ctx.operand(0)));
  return success();
}

LogicalResult lowerNegate(OpContext &ctx) {
  ctx.setResult(0, ctx.create<NegOp>(ctx.operand(0)));
  return success();
}
/// |x|. Floats as select(x >= 0, x + 0, -x), whose gradient is JAX's:
/// select(x >= 0, g, -g), so 1 at 0 and -0, where graph.abs's rule gives
/// PyTorch's 0 (sign(0)). x + (+0) is -0 -> +0 as |x| gives (the folder
/// keeps it: +0 is no additive identity); NaN stays NaN.
LogicalResult lowerAbs(OpContext &ctx) {
  Value x = ctx.operand(0);
  if (!isa<FloatType>(ctx.resultType().getElementType())) {
    ctx.setResult(0, ctx.create<AbsOp>(x));
    return success();
  }
  Value zero = ctx.splat(ctx.resultType(), 0.0);
  Value nonNegative = ctx.create<CompareOp>(ComparisonDirection::GE, x, zero);
  ctx.setResult(0, ctx.create<SelectOp>(nonNegative, ctx.create<AddOp>(x, zero),
                                        ctx.create<NegOp>(x)));
  return success();
}
LogicalResult lowerExponential(OpContext &ctx) {
  return lowerUnary<ExpOp>(ctx);
}
LogicalResult lowerLog(OpContext &ctx) { return lowerUnary<LogOp>(ctx); }
LogicalResult lowerTanh(OpContext &ctx) { return lowerUnary<TanhOp>(ctx); }
LogicalResult lowerSqrt(OpContext &ctx) { return lowerUnary<SqrtOp>(ctx); }
LogicalResult lowerRsqrt(OpContext &ctx) { return lowerUnary<RsqrtOp>(ctx); }
LogicalResult lowerSine(OpContext &ctx) { return lowerUnary<SinOp>(ctx); }
LogicalResult lowerCosine(OpContext &ctx) { return lowerUnary<CosOp>(ctx); }
LogicalResult lowerFloor(OpContext &ctx) { return lowerUnary<FloorOp>(ctx); }
LogicalResult lowerRoundNearestEven(OpContext &ctx) {
  return lowerUnary<RoundOp>(ctx);
}
/// Integer remainder with the dividend's sign: x - (x / y) * y, graph.div
/// truncating toward zero as StableHLO's does. A zero divisor is the
/// runtime's division error.
LogicalResult lowerRemainder(OpContext &ctx) {
  Value x = ctx.operand(0), y = ctx.operand(1);
  ctx.setResult(
      0, ctx.create<SubOp>(x, ctx.create<MulOp>(ctx.create<DivOp>(x, y), y)));
  return success();
}

/// ceil(x) = -floor(-x) (ceil(-0.5) = -0 too).
LogicalResult lowerCeil(OpContext &ctx) {
  ctx.setResult(0, ctx.create<NegOp>(
                       ctx.create<FloorOp>(ctx.create<NegOp>(ctx.operand(0)))));
  return success();
}
/// Ties away from zero: f = floor(|x|), f + 1 where |x| - f >= 0.5 (exact:
/// no |x| + 0.5 to round), x's sign put back; x itself times 0 where x is
/// 0 (keeps -0; the gradient stays 0). NaN and the infinities pass.
LogicalResult lowerRoundNearestAfz(OpContext &ctx) {
  Value x = ctx.operand(0);
  auto type = ctx.operandType(0);
  Value zero = ctx.splat(type, 0);
  Value magnitude = ctx.create<AbsOp>(x);
  Value f = ctx.create<FloorOp>(magnitude);
  Value up = ctx.create<CompareOp>(ComparisonDirection::GE,
                                   ctx.create<SubOp>(magnitude, f),
                                   ctx.splat(type, 0.5));
  Value r =
      ctx.create<SelectOp>(up, ctx.create<AddOp>(f, ctx.splat(type, 1)), f);
  Value isNegative = ctx.create<CompareOp>(ComparisonDirection::LT, x, zero);
  Value isZero = ctx.create<CompareOp>(ComparisonDirection::EQ, x, zero);
  Value signedR = ctx.create<SelectOp>(isNegative, ctx.create<NegOp>(r), r);
  ctx.setResult(
      0, ctx.create<SelectOp>(isZero, ctx.create<MulOp>(x, zero), signedR));
  return success();
}
LogicalResult lowerErf(OpContext &ctx) { return lowerUnary<ErfOp>(ctx); }

/// x * x (x ** 2 as jax.jit(...).lower prints it).
LogicalResult lowerSquare(OpContext &ctx) {
  ctx.setResult(0, ctx.create<MulOp>(ctx.operand(0), ctx.operand(0)));
  return success();
}

/// sin(x) / cos(x).
LogicalResult lowerTan(OpContext &ctx) {
  ctx.setResult(0, ctx.create<DivOp>(ctx.create<SinOp>(ctx.operand(0)),
                                     ctx.create<CosOp>(ctx.operand(0))));
  return success();
}

/// (exp(x) - exp(-x)) / 2 and (exp(x) + exp(-x)) / 2.
template <typename CombineOp> LogicalResult lowerHyperbolic(OpContext &ctx) {
  Value x = ctx.operand(0);
  Value e = ctx.create<ExpOp>(x);
  Value inverse = ctx.create<ExpOp>(ctx.create<NegOp>(x));
  ctx.setResult(0, ctx.create<MulOp>(ctx.create<CombineOp>(e, inverse),
                                     ctx.splat(ctx.resultType(), 0.5)));
  return success();
}
LogicalResult lowerSinh(OpContext &ctx) { return lowerHyperbolic<SubOp>(ctx); }
LogicalResult lowerCosh(OpContext &ctx) { return lowerHyperbolic<AddOp>(ctx); }

/// 1 - erf(x) (jax.nn.gelu's exact form as jax.jit(...).lower prints it;
/// loses erfc's relative precision in the far tail, x > ~4).
LogicalResult lowerErfc(OpContext &ctx) {
  ctx.setResult(0, ctx.create<SubOp>(ctx.splat(ctx.resultType(), 1.0),
                                     ctx.create<ErfOp>(ctx.operand(0))));
  return success();
}

/// exp(x) - 1 (loses the relative precision of expm1 for |x| << 1).
LogicalResult lowerExponentialMinusOne(OpContext &ctx) {
  Value e = ctx.create<ExpOp>(ctx.operand(0));
  ctx.setResult(0, ctx.create<SubOp>(e, ctx.splat(ctx.resultType(), 1.0)));
  return success();
}

/// log(1 + x) (loses the relative precision of log1p for |x| << 1).
LogicalResult lowerLogPlusOne(OpContext &ctx) {
  Value sum =
      ctx.create<AddOp>(ctx.splat(ctx.resultType(), 1.0), ctx.operand(0));
  ctx.setResult(0, ctx.create<LogOp>(sum));
  return success();
}

/// 1 / (1 + exp(-x)): exp(-x) overflows to inf for very negative x, and
/// 1 / inf = 0, the correct limit.
LogicalResult lowerLogistic(OpContext &ctx) {
  Value one = ctx.splat(ctx.resultType(), 1.0);
  Value e = ctx.create<ExpOp>(ctx.create<NegOp>(ctx.operand(0)));
  ctx.setResult(0, ctx.create<DivOp>(one, ctx.create<AddOp>(one, e)));
  return success();
}

/// select(x > 0, 1, select(x < 0, -1, x)): zeros keep their sign and NaN
/// stays NaN, as the specification asks.
LogicalResult lowerSign(OpContext &ctx) {
  auto type = ctx.resultType();
  Value x = ctx.operand(0);
  Value zero = ctx.splat(type, 0);
  Value negative = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::LT, x, zero),
      ctx.splat(type, -1), x);
  ctx.setResult(0, ctx.create<SelectOp>(
                       ctx.create<CompareOp>(ComparisonDirection::GT, x, zero),
                       ctx.splat(type, 1), negative));
  return success();
}

/// x - x == 0: false for infinities (inf - inf is NaN) and NaN.
LogicalResult lowerIsFinite(OpContext &ctx) {
  Value x = ctx.operand(0);
  Value diff = ctx.create<SubOp>(x, x);
  ctx.setResult(0, ctx.create<CompareOp>(ComparisonDirection::EQ, diff,
                                         ctx.splat(tensorType(x), 0)));
  return success();
}

/// min(max(x, lo), hi); lo and hi may be scalars.
LogicalResult lowerClamp(OpContext &ctx) {
  auto type = ctx.resultType();
  Value lo = ctx.broadcastScalar(ctx.operand(0), type.getShape());
  Value hi = ctx.broadcastScalar(ctx.operand(2), type.getShape());
  ctx.setResult(0,
                ctx.create<MinOp>(ctx.create<MaxOp>(ctx.operand(1), lo), hi));
  return success();
}

/// The predicate may be a scalar.
LogicalResult lowerSelect(OpContext &ctx) {
  Value pred = ctx.broadcastScalar(ctx.operand(0), ctx.resultType().getShape());
  ctx.setResult(0, ctx.create<SelectOp>(pred, ctx.operand(1), ctx.operand(2)));
  return success();
}

LogicalResult lowerCompare(OpContext &ctx) {
  StringRef name = ctx.enumValue("comparison_direction");
  std::optional<ComparisonDirection> direction =
      symbolizeComparisonDirection(name);
  if (!direction)
    return ctx.error() << "has comparison_direction '" << name
                       << "'; expected EQ, NE, LT, LE, GT or GE";
  StringRef compareType = ctx.enumValue("compare_type");
  Type element = ctx.operandType(0).getElementType();
  // TOTALORDER orders NaNs and -0 < +0; graph.compare compares as FLOAT.
  // On integers every compare type means the same thing.
  if (compareType == "TOTALORDER" && isa<FloatType>(element))
    return ctx.error() << "with compare_type TOTALORDER on floats is not "
                          "supported (trainc compares floats as FLOAT: NaN "
                          "unordered, -0 == +0)";
  if ((compareType == "UNSIGNED" && element.isSignlessInteger() &&
       !element.isInteger(1)) ||
      (compareType == "SIGNED" && element.isUnsignedInteger()))
    return ctx.error() << "with compare_type " << compareType << " on "
                       << element
                       << " is not supported (trainc compares integers by "
                          "their type's signedness)";
  ctx.setResult(
      0, ctx.create<CompareOp>(*direction, ctx.operand(0), ctx.operand(1)));
  return success();
}

LogicalResult lowerConvert(OpContext &ctx) {
  Value x = ctx.operand(0);
  if (tensorType(x) == ctx.resultType()) {
    ctx.setResult(0, x);
    return success();
  }
  ctx.setResult(0, ctx.create<ConvertOp>(ctx.resultType(), x));
  return success();
}

} // namespace trainc::stablehlo_import
