//===- ReduceOps.cpp - ONNX reductions ------------------------------------===//
//
// ReduceSum, ReduceMean, ReduceMax and ReduceProd map onto their graph ops;
// ReduceMin, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum and
// ReduceLogSumExp are compositions around graph.reduce_sum and
// graph.reduce_max, and ArgMax/ArgMin find the extreme's lowest (or
// highest) index with an iota, as numpy's argmax does (NaN is the
// extreme where there is one).
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include <limits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// Axes of a reduction: input 1 from `inputOpset` on, attribute before.
/// Empty with noop_with_empty_axes: nothing is reduced (`noop`).
FailureOr<SmallVector<int64_t>>
reductionAxes(NodeContext &ctx, int64_t inputOpset, int64_t rank, bool &noop) {
  std::optional<SmallVector<int64_t>> axes;
  if (ctx.opset() >= inputOpset) {
    if (ctx.hasInput(1)) {
      auto a = ctx.intListInput(1, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  } else {
    axes = ctx.intsAttr("axes");
  }
  noop = false;
  if (!axes || axes->empty()) {
    if (ctx.opset() >= inputOpset && ctx.intAttr("noop_with_empty_axes", 0)) {
      noop = true;
      return SmallVector<int64_t>();
    }
    return iotaVector(0, rank);
  }
  auto result = ctx.normalizeAxes(*axes, rank);
  if (failed(result))
    return failure();
  llvm::sort(*result);
  return *result;
}

enum class Inputs { Numbers, Floats };

/// Whether a reduction compares (maximum, minimum, arg-) or only adds and
/// multiplies, which wraps alike in a wider type.
enum class Order { Compares, Wraps };

/// The type a reduction of `element` computes in: the runtime reduces f64,
/// f32, f16, bf16, i64 and i32; narrower integers widen to i32 and ui32 to
/// i64 (exactly), and ui64 to i64 where the reduction only adds and
/// multiplies (the same bits modulo 2^64). A ui64 comparison is refused.
FailureOr<Type> computeType(NodeContext &ctx, Type element, Order order) {
  auto integer = dyn_cast<IntegerType>(element);
  if (!integer || element.isSignlessInteger(32) ||
      element.isSignlessInteger(64))
    return element;
  unsigned width = integer.getWidth();
  if (width < 32)
    return Type(ctx.builder.getI32Type());
  if (width == 32 || order == Order::Wraps)
    return Type(ctx.builder.getI64Type());
  return ctx.error() << "reducing " << element
                     << " by comparison is not supported (the runtime "
                        "compares 64-bit integers as signed)";
}

/// A reduction whose value over `dims` (dropped; empty for a no-op)
/// `build` returns, with keepdims applied.
template <typename Build>
LogicalResult importReduction(NodeContext &ctx, int64_t axesInputOpset,
                              Inputs inputs, Order order, Build build) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  Type e = type.getElementType();
  if (e.isInteger(1) || (inputs == Inputs::Floats && !isa<FloatType>(e)))
    return ctx.error() << "reducing " << x->getType() << " is not supported"
                       << (e.isInteger(1) ? "" : " (floats only)");
  bool noop = false;
  auto axes = reductionAxes(ctx, axesInputOpset, type.getRank(), noop);
  if (failed(axes))
    return failure();
  // An empty dimension reduces to the reduction's identity (0 for a sum,
  // -inf for a maximum), as ONNX says.
  auto wide = computeType(ctx, e, order);
  if (failed(wide))
    return failure();
  Value r = build(ctx.convert(*x, *wide), ArrayRef<int64_t>(*axes));
  if (*wide != e)
    r = ctx.convert(r, e);
  if (!noop && ctx.intAttr("keepdims", 1)) {
    SmallVector<int64_t> shape(type.getShape());
    for (int64_t d : *axes)
      shape[d] = 1;
    r = ctx.reshape(r, shape);
  }
  ctx.setOutput(0, r);
  return success();
}

/// OpT over `dims`, or `x` itself when there are none.
template <typename OpT>
Value reduceOver(NodeContext &ctx, Value x, ArrayRef<int64_t> dims) {
  return dims.empty() ? x : ctx.create<OpT>(x, dims);
}

/// The minimum as the maximum of an order-reversing map: -x for floats
/// (exact, NaN kept), ~x for integers (-x would wrap at the minimum).
Value reduceMin(NodeContext &ctx, Value x, ArrayRef<int64_t> dims) {
  bool isFloat = isa<FloatType>(ctx.inputType(x).getElementType());
  auto reverse = [&](Value v) {
    return isFloat ? ctx.create<NegOp>(v) : ctx.create<NotOp>(v);
  };
  return reverse(reduceOver<ReduceMaxOp>(ctx, reverse(x), dims));
}

Value sumOfSquares(NodeContext &ctx, Value x, ArrayRef<int64_t> dims) {
  return reduceOver<ReduceSumOp>(ctx, ctx.create<MulOp>(x, x), dims);
}

template <typename OpT>
LogicalResult importSimpleReduce(NodeContext &ctx, int64_t axesInputOpset,
                                 Inputs inputs, Order order) {
  return importReduction(ctx, axesInputOpset, inputs, order,
                         [&](Value x, ArrayRef<int64_t> dims) {
                           return reduceOver<OpT>(ctx, x, dims);
                         });
}

/// ArgMax (isMax) or ArgMin along `axis`: the lowest index holding the
/// extreme, or the highest with select_last_index; int64.
LogicalResult importArgReduce(NodeContext &ctx, bool isMax) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  if (type.getElementType().isInteger(1))
    return ctx.error() << "ArgMax/ArgMin of a boolean tensor is not supported";
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t n = type.getDimSize(*axis);
  if (n == 0)
    return ctx.error() << "reduces dimension " << *axis << " of "
                       << x->getType() << ", which has no elements";
  bool last = ctx.intAttr("select_last_index", 0) != 0;
  auto wide = computeType(ctx, type.getElementType(), Order::Compares);
  if (failed(wide))
    return failure();
  Value values = ctx.convert(*x, *wide);
  int64_t dims[] = {*axis};
  Value extreme = isMax ? ctx.create<ReduceMaxOp>(values, dims)
                        : reduceMin(ctx, values, dims);
  extreme = expandReduced(ctx, extreme, type.getShape(), dims);
  Value holds = ctx.create<CompareOp>(ComparisonDirection::EQ, values, extreme);
  if (isa<FloatType>(type.getElementType())) {
    // A NaN is the extreme (reduce_max propagates it): it holds where x is
    // NaN too.
    Value isNaN =
        ctx.create<CompareOp>(ComparisonDirection::NE, values, values);
    holds = ctx.create<SelectOp>(isNaN, isNaN, holds);
  }
  auto indexType =
      RankedTensorType::get(type.getShape(), ctx.builder.getI64Type());
  Value index = ctx.create<IotaOp>(indexType, *axis);
  // The highest holder's index, or the lowest as -max(-index).
  Value candidates =
      last ? ctx.create<SelectOp>(holds, index, ctx.splat(indexType, -1))
           : ctx.create<SelectOp>(holds, ctx.create<NegOp>(index),
                                  ctx.splat(indexType, -n));
  Value chosen = ctx.create<ReduceMaxOp>(candidates, dims);
  if (!last)
    chosen = ctx.create<NegOp>(chosen);
  if (ctx.intAttr("keepdims", 1)) {
    SmallVector<int64_t> shape(type.getShape());
    shape[*axis] = 1;
    chosen = ctx.reshape(chosen, shape);
  }
  ctx.setOutput(0, chosen);
  return success();
}

} // namespace

LogicalResult importReduceSum(NodeContext &ctx) {
  return importSimpleReduce<ReduceSumOp>(ctx, 13, Inputs::Numbers,
                                         Order::Wraps);
}
LogicalResult importReduceMean(NodeContext &ctx) {
  return importSimpleReduce<ReduceMeanOp>(ctx, 18, Inputs::Floats,
                                          Order::Wraps);
}
LogicalResult importReduceMax(NodeContext &ctx) {
  return importSimpleReduce<ReduceMaxOp>(ctx, 18, Inputs::Numbers,
                                         Order::Compares);
}
LogicalResult importReduceProd(NodeContext &ctx) {
  return importSimpleReduce<ReduceProdOp>(ctx, 18, Inputs::Numbers,
                                          Order::Wraps);
}

LogicalResult importReduceMin(NodeContext &ctx) {
  return importReduction(ctx, 18, Inputs::Numbers, Order::Compares,
                         [&](Value x, ArrayRef<int64_t> dims) {
                           return dims.empty() ? x : reduceMin(ctx, x, dims);
                         });
}

/// sum(|x|) (of x itself for unsigned integers, which a ui64 widened to
/// i64 would otherwise flip): the gradient at 0 is 0, as torch's
/// norm(p=1).
LogicalResult importReduceL1(NodeContext &ctx) {
  bool isUnsigned = false;
  if (auto x = ctx.input(0); succeeded(x))
    isUnsigned = ctx.inputType(*x).getElementType().isUnsignedInteger();
  return importReduction(ctx, 18, Inputs::Numbers, Order::Wraps,
                         [&](Value x, ArrayRef<int64_t> dims) {
                           return reduceOver<ReduceSumOp>(
                               ctx, isUnsigned ? x : ctx.create<AbsOp>(x),
                               dims);
                         });
}

/// sqrt(sum(x^2)), in f32 for f16 and bf16 (whose squares overflow above
/// 256 and underflow below 2^-12 where the norm would not); where the sum
/// is 0 the root reads 1 and the result is 0, so the gradient there is 0
/// (torch's norm backward) instead of 0 * inf.
LogicalResult importReduceL2(NodeContext &ctx) {
  return importReduction(
      ctx, 18, Inputs::Floats, Order::Wraps,
      [&](Value x, ArrayRef<int64_t> dims) {
        Type element = ctx.inputType(x).getElementType();
        bool narrow = element.isF16() || element.isBF16();
        if (narrow)
          x = ctx.convert(x, ctx.builder.getF32Type());
        Value s = sumOfSquares(ctx, x, dims);
        auto type = ctx.inputType(s);
        Value zero = ctx.splat(type, 0);
        Value isZero = ctx.create<CompareOp>(ComparisonDirection::EQ, s, zero);
        Value root = ctx.create<SqrtOp>(
            ctx.create<SelectOp>(isZero, ctx.splat(type, 1), s));
        Value norm = ctx.create<SelectOp>(isZero, zero, root);
        return narrow ? ctx.convert(norm, element) : norm;
      });
}

LogicalResult importReduceSumSquare(NodeContext &ctx) {
  return importReduction(ctx, 18, Inputs::Numbers, Order::Wraps,
                         [&](Value x, ArrayRef<int64_t> dims) {
                           return sumOfSquares(ctx, x, dims);
                         });
}

LogicalResult importReduceLogSum(NodeContext &ctx) {
  return importReduction(ctx, 18, Inputs::Floats, Order::Wraps,
                         [&](Value x, ArrayRef<int64_t> dims) {
                           return ctx.create<LogOp>(
                               reduceOver<ReduceSumOp>(ctx, x, dims));
                         });
}

/// m + log(sum(exp(x - m))), m the maximum (0 where it is infinite, so
/// that all -inf gives -inf and a +inf gives +inf rather than NaN).
LogicalResult importReduceLogSumExp(NodeContext &ctx) {
  return importReduction(
      ctx, 18, Inputs::Floats, Order::Wraps,
      [&](Value x, ArrayRef<int64_t> dims) {
        if (dims.empty())
          return x;
        auto xType = ctx.inputType(x);
        Value m = ctx.create<ReduceMaxOp>(x, dims);
        auto type = ctx.inputType(m);
        Value infinite = ctx.create<CompareOp>(
            ComparisonDirection::EQ, ctx.create<AbsOp>(m),
            ctx.splat(type, std::numeric_limits<double>::infinity()));
        m = ctx.create<SelectOp>(infinite, ctx.splat(type, 0), m);
        Value shifted =
            ctx.create<SubOp>(x, expandReduced(ctx, m, xType.getShape(), dims));
        Value sum = ctx.create<ReduceSumOp>(ctx.create<ExpOp>(shifted), dims);
        return ctx.create<AddOp>(m, ctx.create<LogOp>(sum));
      });
}

LogicalResult importArgMax(NodeContext &ctx) {
  return importArgReduce(ctx, /*isMax=*/true);
}
LogicalResult importArgMin(NodeContext &ctx) {
  return importArgReduce(ctx, /*isMax=*/false);
}

} // namespace trainc::onnx_import
