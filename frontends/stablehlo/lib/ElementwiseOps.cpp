//===- ElementwiseOps.cpp - Elementwise StableHLO ops ---------------------===//
//
// Ops with a graph counterpart map one to one; the rest are decompositions
// whose math is written beside each. StableHLO's elementwise operands all
// have the result's shape (only select and clamp take scalars beside
// tensors), so no broadcasting is inferred here.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

#include "trainc/Dialect/Graph/GraphMath.h"

#include <limits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

bool isBool(Type t) { return getElementTypeOrSelf(t).isInteger(1); }

/// A float tensor type's bits: an unsigned integer tensor of its width,
/// with constants of that type.
struct FloatBits {
  FloatBits(OpContext &ctx, RankedTensorType floatType)
      : ctx(ctx), type(RankedTensorType::get(
                      floatType.getShape(),
                      IntegerType::get(floatType.getContext(),
                                       floatType.getElementTypeBitWidth(),
                                       IntegerType::Unsigned))) {}
  /// x's bits.
  Value of(Value x) const { return ctx.create<BitcastOp>(type, x); }
  Value constant(const APInt &v) const {
    return ctx.builder.create<ConstantOp>(
        ctx.loc, SplatElementsAttr::get(
                     type, IntegerAttr::get(type.getElementType(), v)));
  }

  OpContext &ctx;
  RankedTensorType type;
};

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
/// Floats: graph.pow; integers: IntegerOps.cpp's squaring.
LogicalResult lowerPower(OpContext &ctx) {
  if (isa<IntegerType>(ctx.resultType().getElementType()))
    return lowerIntegerPower(ctx);
  return lowerBinary<PowOp>(ctx);
}

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
/// The remainder with the dividend's sign: on floats graph.remainder
/// (fmod); on integers x - (x / y) * y, graph.div truncating toward zero as
/// StableHLO's does (a zero divisor is the runtime's division error).
LogicalResult lowerRemainder(OpContext &ctx) {
  Value x = ctx.operand(0), y = ctx.operand(1);
  if (isa<FloatType>(ctx.resultType().getElementType())) {
    ctx.setResult(0, ctx.create<RemainderOp>(x, y));
    return success();
  }
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

/// One of GraphMath.h's compositions, on the operands as lowered.
template <Value (*build)(OpBuilder &, Location, Value)>
LogicalResult lowerMath(OpContext &ctx) {
  ctx.setResult(0, build(ctx.builder, ctx.loc, ctx.operand(0)));
  return success();
}
LogicalResult lowerTan(OpContext &ctx) { return lowerMath<buildTan>(ctx); }
LogicalResult lowerSinh(OpContext &ctx) { return lowerMath<buildSinh>(ctx); }
LogicalResult lowerCosh(OpContext &ctx) { return lowerMath<buildCosh>(ctx); }
LogicalResult lowerAtan(OpContext &ctx) { return lowerMath<buildAtan>(ctx); }
LogicalResult lowerAsin(OpContext &ctx) { return lowerMath<buildAsin>(ctx); }
LogicalResult lowerAcos(OpContext &ctx) { return lowerMath<buildAcos>(ctx); }
LogicalResult lowerAsinh(OpContext &ctx) { return lowerMath<buildAsinh>(ctx); }
LogicalResult lowerAcosh(OpContext &ctx) { return lowerMath<buildAcosh>(ctx); }
LogicalResult lowerAtanh(OpContext &ctx) { return lowerMath<buildAtanh>(ctx); }
LogicalResult lowerCbrt(OpContext &ctx) { return lowerMath<buildCbrt>(ctx); }
LogicalResult lowerExponentialMinusOne(OpContext &ctx) {
  return lowerMath<buildExpm1>(ctx);
}
LogicalResult lowerLogPlusOne(OpContext &ctx) {
  return lowerMath<buildLog1p>(ctx);
}
LogicalResult lowerAtan2(OpContext &ctx) {
  ctx.setResult(
      0, buildAtan2(ctx.builder, ctx.loc, ctx.operand(0), ctx.operand(1)));
  return success();
}

/// 1 - erf(x) (jax.nn.gelu's exact form as jax.jit(...).lower prints it;
/// loses erfc's relative precision in the far tail, x > ~4).
LogicalResult lowerErfc(OpContext &ctx) {
  ctx.setResult(0, ctx.create<SubOp>(ctx.splat(ctx.resultType(), 1.0),
                                     ctx.create<ErfOp>(ctx.operand(0))));
  return success();
}

namespace {
/// One range of Giles' erfinv expansion ("Approximating the erfinv
/// function", GPU Computing Gems 2, 2010): for w below `below`, erfinv(x) =
/// x * p(t), p's coefficients highest degree first, t = w - shift or
/// sqrt(w) - shift.
struct ErfInvRange {
  double below;
  bool sqrtOfW;
  double shift;
  ArrayRef<double> coefficients;
};

// The single-precision expansion (f32, and f16 and bf16 computed in f32).
constexpr double kErfInvF32Central[] = {
    2.81022636e-08,  3.43273939e-07, -3.5233877e-06,
    -4.39150654e-06, 0.00021858087,  -0.00125372503,
    -0.00417768164,  0.246640727,    1.50140941};
constexpr double kErfInvF32Tail[] = {
    -0.000200214257, 0.000100950558, 0.00134934322,
    -0.00367342844,  0.00573950773,  -0.0076224613,
    0.00943887047,   1.00167406,     2.83297682};
const ErfInvRange kErfInvF32[] = {
    {5.0, false, 2.5, kErfInvF32Central},
    {std::numeric_limits<double>::infinity(), true, 3.0, kErfInvF32Tail}};

// The double-precision expansion (f64).
constexpr double kErfInvF64Central[] = {
    -3.6444120640178196996e-21, -1.685059138182016589e-19,
    1.2858480715256400167e-18,  1.115787767802518096e-17,
    -1.333171662854620906e-16,  2.0972767875968561637e-17,
    6.6376381343583238325e-15,  -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12,
    -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09,   -4.1126339803469836976e-09,
    -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352,   -0.00074070253416626697512,
    -0.0060336708714301490533,  0.24015818242558961693,
    1.6536545626831027356};
constexpr double kErfInvF64Middle[] = {
    2.2137376921775787049e-09,  9.0756561938885390979e-08,
    -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06,  -4.013867526981545969e-06,
    2.9234449089955446044e-06,  1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05,
    2.4031110387097893999e-05,  -0.0003550375203628474796,
    0.00095328937973738049703,  -0.0016882755560235047313,
    0.0024914420961078508066,   -0.0037512085075692412107,
    0.005370914553590063617,    1.0052589676941592334,
    3.0838856104922207635};
constexpr double kErfInvF64Tail[] = {
    -2.7109920616438573243e-11, -2.5556418169965252055e-10,
    1.5076572693500548083e-09,  -3.7894654401267369937e-09,
    7.6157012080783393804e-09,  -1.4960026627149240478e-08,
    2.9147953450901080826e-08,  -6.7711997758452339498e-08,
    2.2900482228026654717e-07,  -9.9298272942317002539e-07,
    4.5260625972231537039e-06,  -1.9681778105531670567e-05,
    7.5995277030017761139e-05,  -0.00021503011930044477347,
    -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221};
const ErfInvRange kErfInvF64[] = {
    {6.25, false, 3.125, kErfInvF64Central},
    {16.0, true, 3.25, kErfInvF64Middle},
    {std::numeric_limits<double>::infinity(), true, 5.0, kErfInvF64Tail}};
} // namespace

/// erfinv(x) = x * p(w), w = -log((1 - x)(1 + x)) (not 1 - x*x, which
/// rounds near |x| = 1), p one polynomial per range of w (the expansion XLA
/// uses). Every range is computed and the right one selected; a range of
/// sqrt(w) reads w clamped to its own start, which it is selected above,
/// so no unselected sqrt(0) puts an infinite derivative into the gradient.
/// x = +-1 gives +-inf, |x| > 1 and NaN give NaN.
LogicalResult lowerErfInv(OpContext &ctx) {
  auto resultType = ctx.resultType();
  bool f64 = resultType.getElementType().isF64();
  auto type =
      f64 ? resultType
          : RankedTensorType::get(resultType.getShape(),
                                  Float32Type::get(resultType.getContext()));
  Value x = ctx.operand(0);
  if (tensorType(x) != type)
    x = ctx.create<ConvertOp>(type, x);
  Value one = ctx.splat(type, 1.0);
  Value w = ctx.create<NegOp>(ctx.create<LogOp>(
      ctx.create<MulOp>(ctx.create<SubOp>(one, x), ctx.create<AddOp>(one, x))));
  ArrayRef<ErfInvRange> ranges = f64 ? ArrayRef(kErfInvF64) : kErfInvF32;
  SmallVector<Value> polynomials;
  double start = 0;
  for (const ErfInvRange &range : ranges) {
    Value t =
        range.sqrtOfW
            ? ctx.create<SqrtOp>(ctx.create<MaxOp>(w, ctx.splat(type, start)))
            : w;
    t = ctx.create<SubOp>(t, ctx.splat(type, range.shift));
    Value p = ctx.splat(type, range.coefficients.front());
    for (double c : range.coefficients.drop_front())
      p = ctx.create<AddOp>(ctx.create<MulOp>(p, t), ctx.splat(type, c));
    polynomials.push_back(p);
    start = range.below;
  }
  Value p = polynomials.back();
  for (size_t i = ranges.size() - 1; i-- > 0;)
    p = ctx.create<SelectOp>(
        ctx.create<CompareOp>(ComparisonDirection::LT, w,
                              ctx.splat(type, ranges[i].below)),
        polynomials[i], p);
  // At x = +-1 (w = inf) the polynomials give inf - inf: the limits are
  // constants, so the unselected branch adds nothing to the gradient.
  double inf = std::numeric_limits<double>::infinity();
  Value y = ctx.create<MulOp>(p, x);
  y = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::EQ, x, one),
      ctx.splat(type, inf), y);
  y = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::EQ, x, ctx.splat(type, -1.0)),
      ctx.splat(type, -inf), y);
  if (type != resultType)
    y = ctx.create<ConvertOp>(resultType, y);
  ctx.setResult(0, y);
  return success();
}

/// The float after x in the direction of y (C's nextafter), on x's bits as
/// the unsigned integer of its width, u: the NaN where either is NaN; y where
/// x == y (so +-0 gives y's zero); the smallest subnormal of y's sign where
/// x is 0; else u - 1 where that shrinks |x| (|x| > |y| or the signs
/// differ), u + 1 where it grows it.
LogicalResult lowerNextAfter(OpContext &ctx) {
  auto type = ctx.resultType();
  unsigned width = type.getElementTypeBitWidth();
  FloatBits f(ctx, type);
  auto bitsConstant = [&](const APInt &v) { return f.constant(v); };
  Value x = ctx.operand(0), y = ctx.operand(1);
  Value xBits = f.of(x);
  Value yBits = f.of(y);
  Value signMask = bitsConstant(APInt::getSignMask(width));
  Value magnitudeMask = bitsConstant(APInt::getSignedMaxValue(width));
  Value one = bitsConstant(APInt(width, 1));
  Value xMagnitude = ctx.create<AndOp>(xBits, magnitudeMask);
  Value yMagnitude = ctx.create<AndOp>(yBits, magnitudeMask);
  Value xSign = ctx.create<AndOp>(xBits, signMask);
  Value ySign = ctx.create<AndOp>(yBits, signMask);
  Value shrinks = logicalOr(
      ctx,
      ctx.create<CompareOp>(ComparisonDirection::GT, xMagnitude, yMagnitude),
      ctx.create<CompareOp>(ComparisonDirection::NE, xSign, ySign));
  Value stepped = ctx.create<SelectOp>(shrinks, ctx.create<SubOp>(xBits, one),
                                       ctx.create<AddOp>(xBits, one));
  Value fromZero = ctx.create<OrOp>(ySign, one);
  Value bits = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::EQ, xMagnitude,
                            bitsConstant(APInt(width, 0))),
      fromZero, stepped);
  Value result = ctx.create<BitcastOp>(type, bits);
  result = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::EQ, x, y), y, result);
  // NaN where either is: that operand.
  result = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::NE, y, y), y, result);
  ctx.setResult(
      0, ctx.create<SelectOp>(
             ctx.create<CompareOp>(ComparisonDirection::NE, x, x), x, result));
  return success();
}

/// reduce_precision to exponent_bits and mantissa_bits, on the float's bits
/// as the reference interpreter computes it: the mantissa rounded to
/// nearest even by adding a bias and masking; exponents beyond the format's
/// range become a signed infinity, those at or below its smallest normal a
/// signed zero (no subnormals); NaN stays NaN, or becomes +inf with no
/// mantissa bits. The result is r - (x' - x) where r is the rounded value
/// and x' is x read back from its bits: no gradient flows through bits, so
/// the gradient is the cotangent itself where x is finite (JAX's rounds
/// the cotangent to the format too), and r - (+0) is r exactly, signed
/// zeros included.
LogicalResult lowerReducePrecision(OpContext &ctx) {
  auto type = ctx.resultType();
  auto floatType = cast<FloatType>(type.getElementType());
  FailureOr<int64_t> exponentBits = ctx.integer("exponent_bits");
  FailureOr<int64_t> mantissaBits = ctx.integer("mantissa_bits");
  if (failed(exponentBits) || failed(mantissaBits))
    return failure();
  if (*exponentBits < 1 || *mantissaBits < 0)
    return ctx.error() << "has exponent_bits = " << *exponentBits
                       << " and mantissa_bits = " << *mantissaBits
                       << ": a format needs at least one exponent bit and "
                          "no negative count of mantissa bits";
  unsigned width = floatType.getWidth();
  int64_t mantissa = floatType.getFPMantissaWidth() - 1;
  int64_t exponent = width - 1 - mantissa;
  Value x = ctx.operand(0);
  if (*exponentBits >= exponent && *mantissaBits >= mantissa) {
    ctx.setResult(0, x); // Every value of the type is in the format.
    return success();
  }
  FloatBits f(ctx, type);
  Value xBits = f.of(x), bits = xBits;
  if (*mantissaBits < mantissa) {
    unsigned shift = mantissa - *mantissaBits;
    APInt last = APInt::getOneBitSet(width, shift);
    Value lastBit = ctx.create<ShiftRightLogicalOp>(
        ctx.create<AndOp>(bits, f.constant(last)),
        f.constant(APInt(width, shift)));
    Value bias = ctx.create<AddOp>(lastBit, f.constant(last.lshr(1) - 1));
    bits = ctx.create<AndOp>(ctx.create<AddOp>(bits, bias),
                             f.constant(~(last - 1)));
  }
  if (*exponentBits < exponent) {
    APInt exponentMask =
        APInt::getBitsSet(width, mantissa, mantissa + exponent);
    uint64_t bias = (uint64_t(1) << (exponent - 1)) - 1;
    uint64_t reducedBias = (uint64_t(1) << (*exponentBits - 1)) - 1;
    Value biased = ctx.create<AndOp>(bits, f.constant(exponentMask));
    auto beyond = [&](ComparisonDirection d, uint64_t e) {
      return ctx.create<CompareOp>(d, biased,
                                   f.constant(APInt(width, e) << mantissa));
    };
    Value signedZero =
        ctx.create<AndOp>(bits, f.constant(APInt::getSignMask(width)));
    Value signedInf = ctx.create<OrOp>(signedZero, f.constant(exponentMask));
    bits = ctx.create<SelectOp>(
        beyond(ComparisonDirection::GT, bias + reducedBias), signedInf, bits);
    bits = ctx.create<SelectOp>(
        beyond(ComparisonDirection::LE, bias - reducedBias), signedZero, bits);
  }
  Value rounded = ctx.create<BitcastOp>(type, bits);
  Value nan = ctx.create<CompareOp>(ComparisonDirection::NE, x, x);
  Value nanResult =
      *mantissaBits > 0
          ? x
          : ctx.splat(type, std::numeric_limits<double>::infinity());
  rounded = ctx.create<SelectOp>(nan, nanResult, rounded);
  Value xAgain = ctx.create<BitcastOp>(type, xBits);
  Value finite = ctx.create<CompareOp>(
      ComparisonDirection::EQ, ctx.create<SubOp>(x, x), ctx.splat(type, 0));
  ctx.setResult(0, ctx.create<SelectOp>(
                       finite,
                       ctx.create<SubOp>(rounded, ctx.create<SubOp>(xAgain, x)),
                       rounded));
  return success();
}

/// GraphMath's logistic: finite gradients everywhere.
LogicalResult lowerLogistic(OpContext &ctx) {
  return lowerMath<buildLogistic>(ctx);
}

/// GraphMath's sign: zeros keep their sign and NaN stays NaN, as the
/// specification asks; the gradient is 0 everywhere.
LogicalResult lowerSign(OpContext &ctx) { return lowerMath<buildSign>(ctx); }

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
