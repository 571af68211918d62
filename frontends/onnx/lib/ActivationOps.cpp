//===- ActivationOps.cpp - ONNX activations and libm functions ------------===//
//
// The activation functions of torch.nn that export to one ONNX op each
// (LeakyReLU, PReLU, ELU, SELU, CELU, Softplus, Softsign, Hardsigmoid,
// Hardswish, Mish, Threshold-style ThresholdedRelu, Hardshrink/Softshrink
// as Shrink, clamp as Clip), Sign and Mod, and the trigonometric and
// hyperbolic functions graph ops do not compute, composed from graph ops
// (GraphMath.h for the libm ones).
//
// Where PyTorch defines the derivative at a kink, the select is written so
// that autodiff gives PyTorch's: LeakyRelu, PRelu, Elu, Selu and Celu take
// their negative branch at 0 (torch's backward tests x > 0), HardSwish its
// middle piece at +-3, Clip gives x none at its bounds (hardtanh's).
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "trainc/Dialect/Graph/GraphMath.h"

#include <limits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// A float-only one-input node: output 0 = build(input 0).
template <typename Build>
LogicalResult importFloatUnary(NodeContext &ctx, Build build) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "the input")))
    return failure();
  ctx.setOutput(0, build(*x, ctx.inputType(*x)));
  return success();
}

template <Value (*build)(OpBuilder &, Location, Value)>
LogicalResult importMath(NodeContext &ctx) {
  return importFloatUnary(ctx, [&](Value x, RankedTensorType) {
    return build(ctx.builder, ctx.loc, x);
  });
}

Value greaterThan(NodeContext &ctx, Value x, double bound) {
  return ctx.create<CompareOp>(ComparisonDirection::GT, x,
                               ctx.splat(ctx.inputType(x), bound));
}

/// scale * select(x > 0, x, negative(min(x, 0))): the negative branch
/// reads x clamped to 0, so its exp never overflows in the branch not taken.
template <typename Negative>
LogicalResult importExponentialUnit(NodeContext &ctx, Negative negative,
                                    double scale = 1.0) {
  return importFloatUnary(ctx, [&](Value x, RankedTensorType type) {
    Value positive = greaterThan(ctx, x, 0);
    Value xn = ctx.create<SelectOp>(positive, ctx.splat(type, 0), x);
    Value y = ctx.create<SelectOp>(positive, x, negative(xn, type));
    return scale == 1.0 ? y : ctx.create<MulOp>(ctx.splat(type, scale), y);
  });
}

} // namespace

/// Sigmoid: GraphMath's logistic, whose gradient is 0, not NaN, where
/// exp(-x) would overflow (x < -88.7 in f32).
LogicalResult importSigmoid(NodeContext &ctx) {
  return importMath<buildLogistic>(ctx);
}
LogicalResult importAtan(NodeContext &ctx) {
  return importMath<buildAtan>(ctx);
}
LogicalResult importAsin(NodeContext &ctx) {
  return importMath<buildAsin>(ctx);
}
LogicalResult importAcos(NodeContext &ctx) {
  return importMath<buildAcos>(ctx);
}
LogicalResult importSinh(NodeContext &ctx) {
  return importMath<buildSinh>(ctx);
}
LogicalResult importCosh(NodeContext &ctx) {
  return importMath<buildCosh>(ctx);
}
LogicalResult importAsinh(NodeContext &ctx) {
  return importMath<buildAsinh>(ctx);
}
LogicalResult importAcosh(NodeContext &ctx) {
  return importMath<buildAcosh>(ctx);
}
LogicalResult importAtanh(NodeContext &ctx) {
  return importMath<buildAtanh>(ctx);
}
LogicalResult importSoftplus(NodeContext &ctx) {
  return importMath<buildSoftplus>(ctx);
}

LogicalResult importTan(NodeContext &ctx) { return importMath<buildTan>(ctx); }

/// x / (1 + |x|); +-1 at the infinities, where the quotient reads 0
/// (inf / inf would be NaN, and so would its gradient).
LogicalResult importSoftsign(NodeContext &ctx) {
  return importFloatUnary(ctx, [&](Value x, RankedTensorType type) {
    Value infinite = ctx.create<CompareOp>(
        ComparisonDirection::EQ, ctx.create<AbsOp>(x),
        ctx.splat(type, std::numeric_limits<double>::infinity()));
    Value xs = ctx.create<SelectOp>(infinite, ctx.splat(type, 0), x);
    Value ratio = ctx.create<DivOp>(
        xs, ctx.create<AddOp>(ctx.splat(type, 1), ctx.create<AbsOp>(xs)));
    return ctx.create<SelectOp>(infinite, buildSign(ctx.builder, ctx.loc, x),
                                ratio);
  });
}

/// x * tanh(softplus(x)), through GraphMath (in f32 for f16 and bf16).
LogicalResult importMish(NodeContext &ctx) {
  return importMath<buildMish>(ctx);
}

/// select(x > 0, x, alpha * x).
LogicalResult importLeakyRelu(NodeContext &ctx) {
  double alpha = ctx.floatAttr("alpha", 0.01f);
  return importFloatUnary(ctx, [&](Value x, RankedTensorType type) {
    return ctx.create<SelectOp>(greaterThan(ctx, x, 0), x,
                                ctx.create<MulOp>(ctx.splat(type, alpha), x));
  });
}

/// select(x > 0, x, slope * x), the slope unidirectionally broadcast to x
/// (a trainable parameter in torch.nn.PReLU: it gets its gradient).
LogicalResult importPRelu(NodeContext &ctx) {
  auto x = ctx.input(0), slope = ctx.input(1);
  if (failed(x) || failed(slope) || failed(ctx.requireFloat(*x, "input X")))
    return failure();
  auto type = ctx.inputType(*x);
  if (ctx.inputType(*slope).getElementType() != type.getElementType())
    return ctx.error() << "slope has element type "
                       << ctx.inputType(*slope).getElementType()
                       << " but X has " << type.getElementType();
  ArrayRef<int64_t> xShape = type.getShape();
  ArrayRef<int64_t> slopeShape = ctx.inputType(*slope).getShape();
  bool broadcasts = slopeShape.size() <= xShape.size();
  for (size_t k = 0; broadcasts && k < slopeShape.size(); ++k) {
    int64_t s = slopeShape[slopeShape.size() - 1 - k];
    broadcasts = s == 1 || s == xShape[xShape.size() - 1 - k];
  }
  if (!broadcasts)
    return ctx.error() << "slope of type " << slope->getType()
                       << " does not broadcast to X's shape " << x->getType()
                       << " (PRelu broadcasts the slope only)";
  Value slopes = ctx.broadcastTo(*slope, xShape);
  ctx.setOutput(0, ctx.create<SelectOp>(greaterThan(ctx, *x, 0), *x,
                                        ctx.create<MulOp>(slopes, *x)));
  return success();
}

/// select(x > 0, x, alpha * expm1(x)).
LogicalResult importElu(NodeContext &ctx) {
  double alpha = ctx.floatAttr("alpha", 1.0f);
  return importExponentialUnit(ctx, [&](Value xn, RankedTensorType type) {
    return ctx.create<MulOp>(ctx.splat(type, alpha),
                             buildExpm1(ctx.builder, ctx.loc, xn));
  });
}

/// gamma * select(x > 0, x, alpha * expm1(x)).
LogicalResult importSelu(NodeContext &ctx) {
  double alpha = ctx.floatAttr("alpha", 1.67326319217681884765625f);
  double gamma = ctx.floatAttr("gamma", 1.05070102214813232421875f);
  return importExponentialUnit(
      ctx,
      [&](Value xn, RankedTensorType type) {
        return ctx.create<MulOp>(ctx.splat(type, alpha),
                                 buildExpm1(ctx.builder, ctx.loc, xn));
      },
      gamma);
}

/// select(x > 0, x, alpha * expm1(x / alpha)).
LogicalResult importCelu(NodeContext &ctx) {
  double alpha = ctx.floatAttr("alpha", 1.0f);
  if (alpha == 0)
    return ctx.error() << "alpha is 0 (CELU divides by it)";
  return importExponentialUnit(ctx, [&](Value xn, RankedTensorType type) {
    Value scaled = ctx.create<DivOp>(xn, ctx.splat(type, alpha));
    return ctx.create<MulOp>(ctx.splat(type, alpha),
                             buildExpm1(ctx.builder, ctx.loc, scaled));
  });
}

namespace {
/// max(0, min(1, alpha * x + beta)): a constant keeps a tie, so the
/// gradient is 0 at both ends (torch's hardsigmoid backward).
Value hardSigmoid(NodeContext &ctx, Value x, double alpha, double beta) {
  auto type = ctx.inputType(x);
  Value linear = ctx.create<AddOp>(ctx.create<MulOp>(ctx.splat(type, alpha), x),
                                   ctx.splat(type, beta));
  return ctx.create<MaxOp>(ctx.create<MinOp>(linear, ctx.splat(type, 1)),
                           ctx.splat(type, 0));
}
} // namespace

LogicalResult importHardSigmoid(NodeContext &ctx) {
  double alpha = ctx.floatAttr("alpha", 0.2f);
  double beta = ctx.floatAttr("beta", 0.5f);
  return importFloatUnary(ctx, [&](Value x, RankedTensorType) {
    return hardSigmoid(ctx, x, alpha, beta);
  });
}

/// x * (x / 6 + 1/2) on [-3, 3], 0 below, x above: the selects include
/// both ends in the middle piece, so the gradient there is torch's
/// hardswish backward (1.5 at 3, -0.5 at -3).
LogicalResult importHardSwish(NodeContext &ctx) {
  return importFloatUnary(ctx, [&](Value x, RankedTensorType type) {
    Value below =
        ctx.create<CompareOp>(ComparisonDirection::LT, x, ctx.splat(type, -3));
    Value above = greaterThan(ctx, x, 3);
    // The middle piece reads 0 outside [-3, 3], so that no inf * 0 from
    // it reaches the gradient at the infinities.
    Value outside = ctx.create<SelectOp>(below, below, above);
    Value xm = ctx.create<SelectOp>(outside, ctx.splat(type, 0), x);
    Value middle = ctx.create<MulOp>(
        xm, ctx.create<AddOp>(ctx.create<MulOp>(ctx.splat(type, 1.0 / 6), xm),
                              ctx.splat(type, 0.5)));
    return ctx.create<SelectOp>(below, ctx.splat(type, 0),
                                ctx.create<SelectOp>(above, x, middle));
  });
}

/// select(x > alpha, x, 0).
LogicalResult importThresholdedRelu(NodeContext &ctx) {
  double alpha = ctx.floatAttr("alpha", 1.0f);
  return importFloatUnary(ctx, [&](Value x, RankedTensorType type) {
    return ctx.create<SelectOp>(greaterThan(ctx, x, alpha), x,
                                ctx.splat(type, 0));
  });
}

/// x + bias below -lambd, x - bias above lambd, 0 between (Hardshrink with
/// bias 0, Softshrink with bias = lambd).
LogicalResult importShrink(NodeContext &ctx) {
  double bias = ctx.floatAttr("bias", 0.0f);
  double lambd = ctx.floatAttr("lambd", 0.5f);
  return importFloatUnary(ctx, [&](Value x, RankedTensorType type) {
    Value below = ctx.create<CompareOp>(ComparisonDirection::LT, x,
                                        ctx.splat(type, -lambd));
    Value inner = ctx.create<SelectOp>(
        greaterThan(ctx, x, lambd), ctx.create<SubOp>(x, ctx.splat(type, bias)),
        ctx.splat(type, 0));
    return ctx.create<SelectOp>(
        below, ctx.create<AddOp>(x, ctx.splat(type, bias)), inner);
  });
}

/// GraphMath's sign (-0 and NaN kept, gradient 0).
LogicalResult importSign(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  if (ctx.inputType(*x).getElementType().isInteger(1))
    return ctx.error() << "Sign of a boolean tensor is not defined";
  ctx.setOutput(0, buildSign(ctx.builder, ctx.loc, *x));
  return success();
}

/// select(y >= max, max, y), y = select(x <= min, min, x): max where min >
/// max, as ONNX says; NaN stays NaN. A missing float bound is the type's
/// lowest or largest finite value (so infinities clip to it), a missing
/// integer bound no bound. The selects give x the gradient strictly between
/// the bounds and a bound wherever x reaches it, whatever the bounds are
/// (constants, trainable or frozen initializers): torch's hardtanh and
/// relu6 backward, and trainc's ReLU (max(x, 0)) at 0. torch.clamp's
/// backward gives x the gradient at the bounds too; ONNX cannot tell the
/// two apart.
LogicalResult importClip(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  Type element = type.getElementType();
  if (element.isInteger(1))
    return ctx.error() << "Clip of a boolean tensor is not supported";
  Value result = *x;
  for (int i : {1, 2}) {
    StringRef what = i == 1 ? "min" : "max";
    Value bound;
    if (ctx.hasInput(i)) {
      auto b = ctx.input(i);
      if (failed(b))
        return failure();
      auto boundType = ctx.inputType(*b);
      if (boundType.getElementType() != element)
        return ctx.error() << what << " has element type "
                           << boundType.getElementType()
                           << " but the input has " << element;
      if (boundType.getNumElements() != 1)
        return ctx.error() << what << " must be a scalar, got " << b->getType();
      bound = ctx.broadcastTo(ctx.reshape(*b, {}), type.getShape());
    } else if (auto f = dyn_cast<FloatType>(element)) {
      double largest =
          APFloat::getLargest(f.getFloatSemantics()).convertToDouble();
      bound = ctx.splat(type, i == 1 ? -largest : largest);
    } else {
      continue;
    }
    auto direction = i == 1 ? ComparisonDirection::LE : ComparisonDirection::GE;
    result = ctx.create<SelectOp>(
        ctx.create<CompareOp>(direction, result, bound), bound, result);
  }
  ctx.setOutput(0, result);
  return success();
}

/// fmod = 1: the remainder of truncated division, with the dividend's sign
/// (graph.remainder on floats, a - (a / b) * b on integers). fmod = 0: with
/// the divisor's sign, as Python's %: that remainder plus b where it is
/// non-zero and its sign differs from b's, and a zero remainder of a float
/// with b's sign. Opsets 13 to 27 allow fmod = 0 on integers only; opset 28
/// defines it on floats as this.
LogicalResult importMod(NodeContext &ctx) {
  auto a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b))
    return failure();
  Type element = ctx.inputType(*a).getElementType();
  if (ctx.inputType(*b).getElementType() != element)
    return ctx.error() << "inputs have different element types: "
                       << a->getType() << " and " << b->getType();
  if (element.isInteger(1))
    return ctx.error() << "Mod of boolean tensors is not defined";
  auto operands = ctx.broadcastAll({*a, *b});
  if (failed(operands))
    return failure();
  Value x = (*operands)[0], y = (*operands)[1];
  auto type = ctx.inputType(x);
  bool isFloat = isa<FloatType>(element);
  Value r;
  if (isFloat) {
    r = ctx.create<RemainderOp>(x, y);
  } else {
    // Every remainder by -1 is 0; dividing by 1 there instead keeps the
    // quotient of the minimum by -1 from overflowing.
    Value byMinusOne =
        ctx.create<CompareOp>(ComparisonDirection::EQ, y, ctx.splat(type, -1));
    Value divisor =
        element.isUnsignedInteger()
            ? y
            : ctx.create<SelectOp>(byMinusOne, ctx.splat(type, 1), y);
    r = ctx.create<SubOp>(
        x, ctx.create<MulOp>(ctx.create<DivOp>(x, divisor), divisor));
    if (!element.isUnsignedInteger())
      r = ctx.create<SelectOp>(byMinusOne, ctx.splat(type, 0), r);
  }
  if (ctx.intAttr("fmod", 0) != 0 || element.isUnsignedInteger()) {
    ctx.setOutput(0, r);
    return success();
  }
  Value zero = ctx.splat(type, 0);
  auto isNegative = [&](Value v) {
    return ctx.create<CompareOp>(ComparisonDirection::LT, v, zero);
  };
  Value yNegative = isNegative(y);
  Value signsDiffer =
      ctx.create<CompareOp>(ComparisonDirection::NE, isNegative(r), yNegative);
  Value isZero = ctx.create<CompareOp>(ComparisonDirection::EQ, r, zero);
  // r != 0 and the signs differ (a NaN r gives NaN either way).
  auto boolType =
      RankedTensorType::get(type.getShape(), ctx.builder.getI1Type());
  Value adjust =
      ctx.create<SelectOp>(isZero, ctx.splat(boolType, 0), signsDiffer);
  r = ctx.create<SelectOp>(adjust, ctx.create<AddOp>(r, y), r);
  if (isFloat)
    r = ctx.create<SelectOp>(
        isZero, ctx.create<SelectOp>(yNegative, ctx.splat(type, -0.0), zero),
        r);
  ctx.setOutput(0, r);
  return success();
}

} // namespace trainc::onnx_import
