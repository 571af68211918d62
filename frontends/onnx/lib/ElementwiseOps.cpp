//===- ElementwiseOps.cpp - ONNX elementwise ops --------------------------===//
//
// Arithmetic, comparison, logic, activations and casts. ONNX broadcasts
// numpy-style; trainc makes each broadcast an explicit broadcast_in_dim.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include <limits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// Inputs 0..n-1, broadcast to their common shape, all of one element type.
FailureOr<SmallVector<Value>> sameTypeInputs(NodeContext &ctx, int first,
                                             int count) {
  SmallVector<Value> values;
  for (int i = first; i < first + count; ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  Type e = ctx.inputType(values.front()).getElementType();
  for (auto [i, v] : llvm::enumerate(values))
    if (ctx.inputType(v).getElementType() != e)
      return ctx.error() << "input " << first + i << " has element type "
                         << ctx.inputType(v).getElementType() << " but input "
                         << first << " has " << e;
  return ctx.broadcastAll(values);
}

/// Requires numbers (not booleans) for arithmetic.
LogicalResult requireNumeric(NodeContext &ctx, Value v) {
  if (ctx.inputType(v).getElementType().isInteger(1))
    return ctx.error() << "arithmetic on booleans is not supported";
  return success();
}

template <typename OpT> LogicalResult importBinary(NodeContext &ctx) {
  auto operands = sameTypeInputs(ctx, 0, 2);
  if (failed(operands) || failed(requireNumeric(ctx, (*operands)[0])))
    return failure();
  ctx.setOutput(0, ctx.create<OpT>((*operands)[0], (*operands)[1]));
  return success();
}

/// Max, Min, Sum: one or more inputs folded left to right.
template <typename OpT> LogicalResult importVariadic(NodeContext &ctx) {
  if (ctx.node.input_size() < 1)
    return ctx.error() << "needs at least one input";
  auto operands = sameTypeInputs(ctx, 0, ctx.node.input_size());
  if (failed(operands) || failed(requireNumeric(ctx, (*operands)[0])))
    return failure();
  Value acc = (*operands)[0];
  for (Value v : ArrayRef<Value>(*operands).drop_front())
    acc = ctx.create<OpT>(acc, v);
  ctx.setOutput(0, acc);
  return success();
}

LogicalResult importCompare(NodeContext &ctx, ComparisonDirection direction) {
  auto operands = sameTypeInputs(ctx, 0, 2);
  if (failed(operands))
    return failure();
  ctx.setOutput(
      0, ctx.create<CompareOp>(direction, (*operands)[0], (*operands)[1]));
  return success();
}

template <typename OpT>
LogicalResult importUnary(NodeContext &ctx, bool floatOnly) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  if (floatOnly ? failed(ctx.requireFloat(*x, "the input"))
                : failed(requireNumeric(ctx, *x)))
    return failure();
  ctx.setOutput(0, ctx.create<OpT>(*x));
  return success();
}

/// A float-only one-input node whose output `build` composes from its
/// input.
template <typename Build>
LogicalResult importFloatComposite(NodeContext &ctx, Build build) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "the input")))
    return failure();
  ctx.setOutput(0, build(*x));
  return success();
}

LogicalResult requireBool(NodeContext &ctx, Value v) {
  if (!ctx.inputType(v).getElementType().isInteger(1))
    return ctx.error() << "expects boolean inputs, got " << v.getType();
  return success();
}

} // namespace

LogicalResult importAdd(NodeContext &ctx) { return importBinary<AddOp>(ctx); }
LogicalResult importSub(NodeContext &ctx) { return importBinary<SubOp>(ctx); }
LogicalResult importMul(NodeContext &ctx) { return importBinary<MulOp>(ctx); }
LogicalResult importDiv(NodeContext &ctx) { return importBinary<DivOp>(ctx); }
LogicalResult importMax(NodeContext &ctx) { return importVariadic<MaxOp>(ctx); }
LogicalResult importMin(NodeContext &ctx) { return importVariadic<MinOp>(ctx); }
LogicalResult importSum(NodeContext &ctx) { return importVariadic<AddOp>(ctx); }

/// Pow(X, Y): the exponent may have another type; it is converted to X's.
/// x ^ y in x's type. An integer base computes in f64 and converts back
/// (truncating, as onnxruntime's static_cast does): exact while |x^y| is
/// below 2^53.
LogicalResult importPow(NodeContext &ctx) {
  auto x = ctx.input(0), y = ctx.input(1);
  if (failed(x) || failed(y) || failed(requireNumeric(ctx, *x)) ||
      failed(requireNumeric(ctx, *y)))
    return failure();
  Type baseType = ctx.inputType(*x).getElementType();
  Type computeType =
      isa<FloatType>(baseType) ? baseType : ctx.builder.getF64Type();
  auto operands = ctx.broadcastAll(
      {ctx.convert(*x, computeType), ctx.convert(*y, computeType)});
  if (failed(operands))
    return failure();
  Value power = ctx.create<PowOp>((*operands)[0], (*operands)[1]);
  ctx.setOutput(0, ctx.convert(power, baseType));
  return success();
}

LogicalResult importEqual(NodeContext &ctx) {
  return importCompare(ctx, ComparisonDirection::EQ);
}
LogicalResult importLess(NodeContext &ctx) {
  return importCompare(ctx, ComparisonDirection::LT);
}
LogicalResult importLessOrEqual(NodeContext &ctx) {
  return importCompare(ctx, ComparisonDirection::LE);
}
LogicalResult importGreater(NodeContext &ctx) {
  return importCompare(ctx, ComparisonDirection::GT);
}
LogicalResult importGreaterOrEqual(NodeContext &ctx) {
  return importCompare(ctx, ComparisonDirection::GE);
}

/// a AND b = select(a, b, false); a OR b = select(a, true, b).
LogicalResult importAnd(NodeContext &ctx) {
  auto operands = sameTypeInputs(ctx, 0, 2);
  if (failed(operands) || failed(requireBool(ctx, (*operands)[0])))
    return failure();
  Value a = (*operands)[0], b = (*operands)[1];
  ctx.setOutput(0, ctx.create<SelectOp>(a, b, ctx.splat(ctx.inputType(a), 0)));
  return success();
}

LogicalResult importOr(NodeContext &ctx) {
  auto operands = sameTypeInputs(ctx, 0, 2);
  if (failed(operands) || failed(requireBool(ctx, (*operands)[0])))
    return failure();
  Value a = (*operands)[0], b = (*operands)[1];
  ctx.setOutput(0, ctx.create<SelectOp>(a, ctx.splat(ctx.inputType(a), 1), b));
  return success();
}

LogicalResult importNot(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(requireBool(ctx, *x)))
    return failure();
  ctx.setOutput(0, ctx.create<CompareOp>(ComparisonDirection::EQ, *x,
                                         ctx.splat(ctx.inputType(*x), 0)));
  return success();
}

/// IsNaN(x) = x != x (float comparisons with NaN are unordered; NE is true).
LogicalResult importIsNaN(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "input 0")))
    return failure();
  ctx.setOutput(0, ctx.create<CompareOp>(ComparisonDirection::NE, *x, *x));
  return success();
}

/// IsInf(x): x == +inf (detect_positive) or x == -inf (detect_negative).
LogicalResult importIsInf(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "input 0")))
    return failure();
  auto type = ctx.inputType(*x);
  bool positive = ctx.intAttr("detect_positive", 1) != 0;
  bool negative = ctx.intAttr("detect_negative", 1) != 0;
  auto equals = [&](double v) {
    return ctx.create<CompareOp>(ComparisonDirection::EQ, *x,
                                 ctx.splat(type, v));
  };
  auto boolType =
      RankedTensorType::get(type.getShape(), ctx.builder.getI1Type());
  Value result = ctx.splat(boolType, 0);
  double inf = std::numeric_limits<double>::infinity();
  if (positive)
    result = equals(inf);
  if (negative)
    result = positive ? ctx.create<SelectOp>(result, result, equals(-inf))
                      : equals(-inf);
  ctx.setOutput(0, result);
  return success();
}

LogicalResult importWhere(NodeContext &ctx) {
  auto cond = ctx.input(0), x = ctx.input(1), y = ctx.input(2);
  if (failed(cond) || failed(x) || failed(y) || failed(requireBool(ctx, *cond)))
    return failure();
  if (ctx.inputType(*x).getElementType() != ctx.inputType(*y).getElementType())
    return ctx.error() << "inputs 1 and 2 have different element types: "
                       << x->getType() << " and " << y->getType();
  auto operands = ctx.broadcastAll({*cond, *x, *y});
  if (failed(operands))
    return failure();
  ctx.setOutput(
      0, ctx.create<SelectOp>((*operands)[0], (*operands)[1], (*operands)[2]));
  return success();
}

LogicalResult importNeg(NodeContext &ctx) {
  return importUnary<NegOp>(ctx, /*floatOnly=*/false);
}
LogicalResult importAbs(NodeContext &ctx) {
  return importUnary<AbsOp>(ctx, /*floatOnly=*/false);
}
LogicalResult importSqrt(NodeContext &ctx) {
  return importUnary<SqrtOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importExp(NodeContext &ctx) {
  return importUnary<ExpOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importLog(NodeContext &ctx) {
  return importUnary<LogOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importTanh(NodeContext &ctx) {
  return importUnary<TanhOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importErf(NodeContext &ctx) {
  return importUnary<ErfOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importCos(NodeContext &ctx) {
  return importUnary<CosOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importSin(NodeContext &ctx) {
  return importUnary<SinOp>(ctx, /*floatOnly=*/true);
}
LogicalResult importFloor(NodeContext &ctx) {
  return importUnary<FloorOp>(ctx, /*floatOnly=*/true);
}
/// ceil(x) = -floor(-x) (ceil(-0.5) = -0 too).
LogicalResult importCeil(NodeContext &ctx) {
  return importFloatComposite(ctx, [&](Value x) {
    return ctx.create<NegOp>(ctx.create<FloorOp>(ctx.create<NegOp>(x)));
  });
}
/// Round: to the nearest integer, ties to even (ONNX's rule).
LogicalResult importRound(NodeContext &ctx) {
  return importUnary<RoundOp>(ctx, /*floatOnly=*/true);
}

/// 1 / x.
LogicalResult importReciprocal(NodeContext &ctx) {
  return importFloatComposite(ctx, [&](Value x) {
    return ctx.create<DivOp>(ctx.splat(ctx.inputType(x), 1.0), x);
  });
}

/// max(x, 0).
LogicalResult importRelu(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(requireNumeric(ctx, *x)))
    return failure();
  ctx.setOutput(0, ctx.create<MaxOp>(*x, ctx.splat(ctx.inputType(*x), 0)));
  return success();
}

namespace {

/// The largest finite value of an 8-bit float type (null type: none).
std::optional<double> float8Max(Type t) {
  auto f = dyn_cast<FloatType>(t);
  if (!f || f.getWidth() != 8)
    return std::nullopt;
  return APFloat::getLargest(f.getFloatSemantics()).convertToDouble();
}

/// ONNX Cast of `x` to `target`. To an 8-bit float with `saturate` (ONNX's
/// default), values beyond the format's range (infinities included) clamp
/// to its largest finite value first; NaN stays NaN. To a 4- or 2-bit
/// integer from a float, through int8: ONNX truncates and then wraps (-9
/// casts to INT4 7), where graph.convert from a float saturates.
Value castTo(NodeContext &ctx, Value x, Type target, bool saturate) {
  Type source = ctx.inputType(x).getElementType();
  if (auto max = float8Max(target); max && saturate) {
    if (!isa<FloatType>(source) || float8Max(source))
      x = ctx.convert(x, ctx.builder.getF64Type());
    auto type = ctx.inputType(x);
    x = ctx.create<MinOp>(ctx.create<MaxOp>(x, ctx.splat(type, -*max)),
                          ctx.splat(type, *max));
  }
  auto intTarget = dyn_cast<IntegerType>(target);
  if (intTarget && (intTarget.getWidth() == 4 || intTarget.getWidth() == 2) &&
      isa<FloatType>(source))
    x = ctx.convert(x, ctx.builder.getIntegerType(8));
  return ctx.convert(x, target);
}

} // namespace

LogicalResult importCast(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  const auto *to = ctx.attribute("to");
  if (!to)
    return ctx.error() << "attribute 'to' is missing";
  Type target = elementTypeFor(ctx.context(), static_cast<int32_t>(to->i()));
  if (!target)
    return ctx.error() << "cast to "
                       << onnxTypeName(static_cast<int32_t>(to->i()))
                       << " is not supported (trainc supports "
                       << kSupportedOnnxTypes << ")";
  bool saturate = ctx.intAttr("saturate", 1) != 0;
  if (isa<graph::F8E8M0FNUType>(target)) {
    // graph.convert to f8E8M0FNU is ONNX's default mode: round up, saturate.
    std::string mode = ctx.stringAttr("round_mode", "up");
    if (mode != "up")
      return ctx.error() << "round_mode '" << mode
                         << "' to FLOAT8E8M0 is not supported (only 'up')";
    if (!saturate)
      return ctx.error()
             << "saturate = 0 to FLOAT8E8M0 is not supported (only 1)";
  }
  ctx.setOutput(0, castTo(ctx, *x, target, saturate));
  return success();
}

LogicalResult importCastLike(NodeContext &ctx) {
  auto x = ctx.input(0), like = ctx.input(1);
  if (failed(x) || failed(like))
    return failure();
  ctx.setOutput(0, castTo(ctx, *x, ctx.inputType(*like).getElementType(),
                          ctx.intAttr("saturate", 1) != 0));
  return success();
}

LogicalResult importIdentity(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  ctx.setOutput(0, *x);
  return success();
}

} // namespace trainc::onnx_import
