//===- ReduceOps.cpp - Reductions and dot products ------------------------===//
//
// stablehlo.reduce carries its combiner as a region. trainc lowers the
// reductions whose region gives each input's result by one binary op of
// that input's two block arguments (what jnp.sum, jnp.prod, jnp.max,
// jnp.min, jnp.all and jnp.any print; several inputs reduce independently):
// add, multiply, maximum, minimum, and, or. The init value is combined with
// the result unless it is the combiner's identity (0, 1, -inf, +inf, true,
// false). Besides, the
// (value, index) pair that jnp.argmax and argmin reduce (see
// matchArgReduce), as graph ops that find the extreme value and then the
// lowest index holding it.
// stablehlo.reduce_window is lowered as a prefix scan (jnp.cumsum,
// cumprod, cummax, cummin; see lowerReduceWindow), any other window as
// strided slices (pooling; lowerWindowOfSlices).
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

#include "trainc/Dialect/Graph/GraphBuilders.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

enum class Combiner { Add, Mul, Max, Min, And, Or };

/// Whether `op` has exactly the operands {a, b}, in either order.
bool takes(Operation *op, Value a, Value b) {
  return op && op->getNumOperands() == 2 &&
         ((op->getOperand(0) == a && op->getOperand(1) == b) ||
          (op->getOperand(0) == b && op->getOperand(1) == a));
}

/// The combiner of each input of a reduce region of n inputs, whose block
/// arguments are the accumulators (a_0..a_n-1) then the elements
/// (b_0..b_n-1): `^bb0(...): %r_k = OP_k %a_k, %b_k ...; stablehlo.return
/// %r_0, ...` (either operand order, the ops in any order); none for any
/// other body.
std::optional<SmallVector<Combiner>> matchCombiners(Region &region) {
  if (!region.hasOneBlock())
    return std::nullopt;
  Block &block = region.front();
  unsigned n = block.getNumArguments() / 2;
  Operation &ret = block.back();
  if (n == 0 || block.getNumArguments() != 2 * n ||
      block.getOperations().size() != n + 1 ||
      ret.getName().getStringRef() != "stablehlo.return" ||
      ret.getNumOperands() != n)
    return std::nullopt;
  SmallVector<Combiner> combiners;
  for (unsigned k = 0; k < n; ++k) {
    Operation *op = ret.getOperand(k).getDefiningOp();
    if (!takes(op, block.getArgument(k), block.getArgument(n + k)) ||
        op->getNumResults() != 1)
      return std::nullopt;
    StringRef name = op->getName().getStringRef();
    if (name == "stablehlo.add")
      combiners.push_back(Combiner::Add);
    else if (name == "stablehlo.multiply")
      combiners.push_back(Combiner::Mul);
    else if (name == "stablehlo.maximum")
      combiners.push_back(Combiner::Max);
    else if (name == "stablehlo.minimum")
      combiners.push_back(Combiner::Min);
    else if (name == "stablehlo.and")
      combiners.push_back(Combiner::And);
    else if (name == "stablehlo.or")
      combiners.push_back(Combiner::Or);
    else
      return std::nullopt;
  }
  return combiners;
}

/// `op` if it is a stablehlo.compare in direction `direction`, else null.
Operation *compareIn(Operation *op, StringRef direction) {
  if (!op || op->getName().getStringRef() != "stablehlo.compare")
    return nullptr;
  auto attr = dyn_cast_or_null<StringAttr>(op->getAttr("comparison_direction"));
  return attr && attr.getValue() == direction ? op : nullptr;
}

/// `op` if it is `name` (one of stablehlo.or, and, select), else null.
Operation *opNamed(Operation *op, StringRef name) {
  return op && op->getName().getStringRef() == name ? op : nullptr;
}

/// For `or`/`and` op: whether its operands are {x, y} where match(x) holds
/// for one and match(y) for the other.
template <typename MatchA, typename MatchB>
bool eitherOrder(Operation *op, MatchA matchA, MatchB matchB) {
  if (!op || op->getNumOperands() != 2)
    return false;
  Value x = op->getOperand(0), y = op->getOperand(1);
  return (matchA(x) && matchB(y)) || (matchA(y) && matchB(x));
}

/// Whether the region is jnp.argmax's (GT) or jnp.argmin's (LT) reducer
/// of (value, index) pairs, block arguments (a, ai, b, bi):
///   pick = (a DIR b) or (a != a)                 -- a wins, or a is NaN
///   pickIndex = pick or ((a == b) and (ai < bi)) -- ties: the lower index
///   return select(pick, a, b), select(pickIndex, ai, bi)
/// That is: the greatest (least) value, NaN above all, and the lowest
/// index among the elements holding it. The compare of a with b may name
/// them in either order only where the direction allows it (EQ).
std::optional<Combiner> matchArgReduce(Region &region) {
  if (!region.hasOneBlock())
    return std::nullopt;
  Block &block = region.front();
  if (block.getNumArguments() != 4)
    return std::nullopt;
  Value a = block.getArgument(0), ai = block.getArgument(1),
        b = block.getArgument(2), bi = block.getArgument(3);
  Operation &ret = block.back();
  if (ret.getName().getStringRef() != "stablehlo.return" ||
      ret.getNumOperands() != 2 || block.getOperations().size() != 10)
    return std::nullopt;
  auto selectOf = [](Value v, Value onTrue, Value onFalse) -> Operation * {
    Operation *op = opNamed(v.getDefiningOp(), "stablehlo.select");
    return op && op->getOperand(1) == onTrue && op->getOperand(2) == onFalse
               ? op
               : nullptr;
  };
  Operation *pickValue = selectOf(ret.getOperand(0), a, b);
  Operation *pickIndex = selectOf(ret.getOperand(1), ai, bi);
  if (!pickValue || !pickIndex)
    return std::nullopt;
  Value pick = pickValue->getOperand(0);
  auto ordered = [&](Value v, StringRef direction, Value x, Value y) {
    Operation *op = compareIn(v.getDefiningOp(), direction);
    return op && op->getOperand(0) == x && op->getOperand(1) == y;
  };
  auto isNaNTest = [&](Value v) { return ordered(v, "NE", a, a); };
  std::optional<Combiner> kind;
  for (auto [direction, combiner] :
       {std::pair{"GT", Combiner::Max}, std::pair{"LT", Combiner::Min}})
    if (eitherOrder(
            opNamed(pick.getDefiningOp(), "stablehlo.or"),
            [&](Value v) { return ordered(v, direction, a, b); }, isNaNTest))
      kind = combiner;
  if (!kind)
    return std::nullopt;
  auto isTie = [&](Value v) {
    return eitherOrder(
        opNamed(v.getDefiningOp(), "stablehlo.and"),
        [&](Value e) {
          return takes(compareIn(e.getDefiningOp(), "EQ"), a, b);
        },
        [&](Value l) { return ordered(l, "LT", ai, bi); });
  };
  if (!eitherOrder(
          opNamed(pickIndex->getOperand(0).getDefiningOp(), "stablehlo.or"),
          [&](Value v) { return v == pick; }, isTie))
    return std::nullopt;
  return kind;
}

/// Whether the scalar constant `init` is `value` (for floats, also the
/// infinities; for integers, the type's bounds via `intValue`).
bool isConstant(OpContext &ctx, Value init, double value,
                std::optional<APInt> intValue = std::nullopt) {
  std::optional<DenseElementsAttr> attr = ctx.constantOf(init);
  if (!attr || !attr->isSplat())
    return false;
  Type t = attr->getElementType();
  if (isa<FloatType>(t))
    return attr->getSplatValue<APFloat>().convertToDouble() == value;
  APInt v = attr->getSplatValue<APInt>();
  if (intValue)
    return v == *intValue;
  return v.getSExtValue() == static_cast<int64_t>(value);
}

/// Whether the scalar constant `init` is the identity of `combiner` on
/// `element`: 0 for add, 1 for multiply, -inf (the lowest integer) for
/// maximum, +inf (the highest) for minimum, true for and, false for or.
bool isIdentity(OpContext &ctx, Combiner combiner, Value init, Type element) {
  bool isFloat = isa<FloatType>(element);
  unsigned width = element.getIntOrFloatBitWidth();
  bool isUnsigned = element.isUnsignedInteger();
  switch (combiner) {
  case Combiner::Add:
    return isConstant(ctx, init, 0.0);
  case Combiner::Mul:
    return isConstant(ctx, init, 1.0);
  case Combiner::Max:
    return isFloat ? isConstant(ctx, init, -INFINITY)
                   : isConstant(ctx, init, 0,
                                isUnsigned ? APInt::getMinValue(width)
                                           : APInt::getSignedMinValue(width));
  case Combiner::Min:
    return isFloat ? isConstant(ctx, init, INFINITY)
                   : isConstant(ctx, init, 0,
                                isUnsigned ? APInt::getMaxValue(width)
                                           : APInt::getSignedMaxValue(width));
  case Combiner::And:
    return isConstant(ctx, init, 1);
  case Combiner::Or:
    return isConstant(ctx, init, 0);
  }
  return false;
}

/// Integer operands of a dot product compute in f64: exact while every
/// product and sum stays below 2^53.
Value asFloat(OpContext &ctx, Value v) {
  auto type = tensorType(v);
  if (isa<FloatType>(type.getElementType()))
    return v;
  return ctx.create<ConvertOp>(
      RankedTensorType::get(type.getShape(), ctx.builder.getF64Type()), v);
}

/// Whether `dims` are distinct dimensions of a rank-`rank` tensor.
bool distinctDims(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d])
      return false;
    seen[d] = true;
  }
  return true;
}

/// The dot_general constraints graph.dot_general's inference checks.
LogicalResult checkDotDims(OpContext &ctx, RankedTensorType lhs,
                           RankedTensorType rhs, ArrayRef<int64_t> lb,
                           ArrayRef<int64_t> rb, ArrayRef<int64_t> lc,
                           ArrayRef<int64_t> rc) {
  SmallVector<int64_t> lhsDims(lb), rhsDims(rb);
  lhsDims.append(lc.begin(), lc.end());
  rhsDims.append(rc.begin(), rc.end());
  if (lb.size() != rb.size() || lc.size() != rc.size() ||
      !distinctDims(lhsDims, lhs.getRank()) ||
      !distinctDims(rhsDims, rhs.getRank()))
    return ctx.error() << "has invalid dimension numbers for " << lhs << " and "
                       << rhs;
  for (auto [l, r] : llvm::zip(lhsDims, rhsDims))
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return ctx.error() << "pairs lhs dimension " << l << " (size "
                         << lhs.getDimSize(l) << ") with rhs dimension " << r
                         << " (size " << rhs.getDimSize(r) << ")";
  return success();
}

Value reduceMax(OpContext &ctx, Value x, ArrayRef<int64_t> dims,
                RankedTensorType resultType) {
  return ctx.create<ReduceMaxOp>(resultType, x, dims);
}

/// One input `x` reduced over `dims` by `combiner`, starting from `init`.
FailureOr<Value> reduceOne(OpContext &ctx, Combiner combiner, Value x,
                           Value init, ArrayRef<int64_t> dims,
                           RankedTensorType resultType) {
  auto type = tensorType(x);
  Type element = type.getElementType();
  bool isBool = element.isInteger(1);
  bool isUnsigned = element.isUnsignedInteger();
  // On i1, maximum is or and minimum is and.
  if (isBool && combiner == Combiner::Max)
    combiner = Combiner::Or;
  if (isBool && combiner == Combiner::Min)
    combiner = Combiner::And;
  if (isBool != (combiner == Combiner::And || combiner == Combiner::Or))
    return ctx.error() << "reduces " << element
                       << " tensors with a combiner trainc lowers only for "
                          "the other kind (and/or on i1; add/multiply/"
                          "maximum/minimum on numbers)";
  Value result;
  bool identity = isIdentity(ctx, combiner, init, element);
  switch (combiner) {
  case Combiner::Add:
    result = ctx.create<ReduceSumOp>(resultType, x, dims);
    if (!identity)
      result = ctx.create<AddOp>(
          result, ctx.broadcastScalar(init, resultType.getShape()));
    break;
  case Combiner::Mul:
    if (isUnsigned)
      return ctx.error() << "is a product over unsigned integers, which is "
                            "not supported";
    result = ctx.create<ReduceProdOp>(resultType, x, dims);
    if (!identity)
      result = ctx.create<MulOp>(
          result, ctx.broadcastScalar(init, resultType.getShape()));
    break;
  case Combiner::Max:
    result = reduceMax(ctx, x, dims, resultType);
    if (!identity)
      result = ctx.create<MaxOp>(
          result, ctx.broadcastScalar(init, resultType.getShape()));
    break;
  case Combiner::Min:
    if (isUnsigned)
      return ctx.error() << "is a minimum over unsigned integers, which is "
                            "not supported";
    // min(x) = -max(-x).
    result = ctx.create<NegOp>(
        reduceMax(ctx, ctx.create<NegOp>(x), dims, resultType));
    if (!identity)
      result = ctx.create<MinOp>(
          result, ctx.broadcastScalar(init, resultType.getShape()));
    break;
  case Combiner::And:
  case Combiner::Or: {
    // any(x) = max(x as i32) != 0; all(x) = !any(!x).
    bool isAnd = combiner == Combiner::And;
    auto i32 = RankedTensorType::get(type.getShape(), ctx.builder.getI32Type());
    auto i32Result =
        RankedTensorType::get(resultType.getShape(), ctx.builder.getI32Type());
    Value bits = x;
    if (isAnd)
      bits =
          ctx.create<CompareOp>(ComparisonDirection::EQ, x, ctx.splat(type, 0));
    Value any = ctx.create<CompareOp>(
        ComparisonDirection::NE,
        reduceMax(ctx, ctx.create<ConvertOp>(i32, bits), dims, i32Result),
        ctx.splat(i32Result, 0));
    result = isAnd ? ctx.create<CompareOp>(ComparisonDirection::EQ, any,
                                           ctx.splat(resultType, 0))
                   : any;
    if (!identity) {
      Value initValue = ctx.broadcastScalar(init, resultType.getShape());
      result = isAnd ? ctx.create<SelectOp>(result, initValue,
                                            ctx.splat(resultType, 0))
                     : ctx.create<SelectOp>(result, ctx.splat(resultType, 1),
                                            initValue);
    }
    break;
  }
  }
  return result;
}

/// a == b, where for floats two NaNs are equal too (the arg reducers' NaN
/// wins over every number, so the NaNs are the extreme's holders).
Value sameOrBothNaN(OpContext &ctx, Value a, Value b) {
  Value same = ctx.create<CompareOp>(ComparisonDirection::EQ, a, b);
  if (!isa<FloatType>(tensorType(a).getElementType()))
    return same;
  Value aNaN = ctx.create<CompareOp>(ComparisonDirection::NE, a, a);
  Value bNaN = ctx.create<CompareOp>(ComparisonDirection::NE, b, b);
  Value bothNaN =
      ctx.create<SelectOp>(aNaN, bNaN, ctx.splat(tensorType(aNaN), 0));
  return ctx.create<SelectOp>(same, ctx.splat(tensorType(same), 1), bothNaN);
}

/// jnp.argmax / argmin (matchArgReduce): values x and their indices reduced
/// over `dims` from the init pair (v0, i0), as the reducer would pair
/// them in any order: m = the extreme of x and v0 (NaN if any is), then
/// the lowest index among the elements (and the init) equal to m.
LogicalResult lowerArgReduce(OpContext &ctx, Combiner kind,
                             ArrayRef<int64_t> dims) {
  Value x = ctx.operand(0), index = ctx.operand(1);
  Value v0 = ctx.operand(2), i0 = ctx.operand(3);
  auto xType = ctx.operandType(0), indexType = ctx.operandType(1);
  Type element = xType.getElementType(),
       indexElement = indexType.getElementType();
  if (!isa<IntegerType>(indexElement) || indexElement.isInteger(1))
    return ctx.error() << "reduces indices of type " << indexElement
                       << "; trainc's argmax/argmin lowering takes integer "
                          "indices";
  // The runtime reduces f64, f32, 16-bit floats, i64 and i32: other
  // integers compute in i32 or i64, exactly; ui64 only where it is exact.
  auto wide = [&](Type t) -> Type {
    if (isa<FloatType>(t) || t.isSignlessInteger(32) || t.isSignlessInteger(64))
      return t;
    return t.getIntOrFloatBitWidth() < 32 ? ctx.builder.getI32Type()
                                          : ctx.builder.getI64Type();
  };
  if (element.isUnsignedInteger(64))
    return ctx.error() << "is an argmax/argmin of ui64 values, which is not "
                          "supported";
  if (indexElement.isUnsignedInteger(64) && !index.getDefiningOp<IotaOp>())
    return ctx.error() << "is an argmax/argmin with ui64 indices that are "
                          "not an iota, which is not supported";
  for (int64_t d : dims)
    if (xType.getDimSize(d) == 0)
      return ctx.error() << "is an argmax/argmin over dimension " << d
                         << " of size 0 (it has no elements)";
  auto widen = [&](Value v) {
    auto t = tensorType(v);
    Type w = wide(t.getElementType());
    return w == t.getElementType()
               ? v
               : ctx.create<ConvertOp>(RankedTensorType::get(t.getShape(), w),
                                       v);
  };
  auto computeType = [&](unsigned result) {
    RankedTensorType t = ctx.resultType(result);
    return RankedTensorType::get(t.getShape(), wide(t.getElementType()));
  };
  // i1 values compare as 0 < 1.
  Value values = widen(x), init = widen(v0);
  auto valueCompute = computeType(0);
  Value extreme =
      kind == Combiner::Max
          ? reduceMax(ctx, values, dims, valueCompute)
          : ctx.create<NegOp>(
                reduceMax(ctx, ctx.create<NegOp>(values), dims, valueCompute));
  Value initValue = ctx.broadcastScalar(init, valueCompute.getShape());
  extreme = kind == Combiner::Max ? ctx.create<MaxOp>(extreme, initValue)
                                  : ctx.create<MinOp>(extreme, initValue);

  // The lowest index among the holders: -max(-index) over them, the others
  // counted as the highest index.
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < xType.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      kept.push_back(d);
  Value extremeHere = ctx.create<BroadcastInDimOp>(
      RankedTensorType::get(xType.getShape(), valueCompute.getElementType()),
      extreme, kept);
  Value indices = widen(index), initIndex = widen(i0);
  auto indexCompute = computeType(1);
  auto indicesType = tensorType(indices);
  Type computeElement = indexCompute.getElementType();
  Value highest = ctx.builder.create<ConstantOp>(
      ctx.loc,
      SplatElementsAttr::get(
          indicesType,
          ctx.builder.getIntegerAttr(
              computeElement, APInt::getSignedMaxValue(
                                  computeElement.getIntOrFloatBitWidth()))));
  Value candidates = ctx.create<SelectOp>(
      sameOrBothNaN(ctx, values, extremeHere), indices, highest);
  Value lowest = ctx.create<NegOp>(
      reduceMax(ctx, ctx.create<NegOp>(candidates), dims, indexCompute));
  lowest = ctx.create<SelectOp>(
      sameOrBothNaN(ctx, initValue, extreme),
      ctx.create<MinOp>(
          lowest, ctx.broadcastScalar(initIndex, indexCompute.getShape())),
      lowest);

  auto narrow = [&](Value v, unsigned result) {
    RankedTensorType t = ctx.resultType(result);
    if (tensorType(v) == t)
      return v;
    if (t.getElementType().isInteger(1))
      return ctx.create<CompareOp>(ComparisonDirection::NE, v,
                                   ctx.splat(tensorType(v), 0));
    return ctx.create<ConvertOp>(t, v);
  };
  ctx.setResult(0, narrow(extreme, 0));
  ctx.setResult(1, narrow(lowest, 1));
  return success();
}

} // namespace

LogicalResult lowerReduce(OpContext &ctx) {
  unsigned inputs = ctx.numOperands() / 2;
  auto dims = ctx.ints("dimensions");
  if (failed(dims))
    return failure();
  if (!distinctDims(*dims, ctx.operandType(0).getRank()))
    return ctx.error() << "reduces dimensions [" << *dims << "] of a rank-"
                       << ctx.operandType(0).getRank() << " input";
  Region &body = ctx.op->getRegion(0);
  if (std::optional<SmallVector<Combiner>> combiners = matchCombiners(body)) {
    for (unsigned k = 0; k < inputs; ++k) {
      FailureOr<Value> result =
          reduceOne(ctx, (*combiners)[k], ctx.operand(k),
                    ctx.operand(inputs + k), *dims, ctx.resultType(k));
      if (failed(result))
        return failure();
      ctx.setResult(k, *result);
    }
    return success();
  }
  if (inputs == 2)
    if (std::optional<Combiner> kind = matchArgReduce(body))
      return lowerArgReduce(ctx, *kind, *dims);
  return ctx.error() << "has a body trainc does not lower: it must give each "
                        "input's result by one stablehlo.add, multiply, "
                        "maximum, minimum, and or or of that input's two "
                        "block arguments, or be jnp.argmax's or argmin's "
                        "reducer of (value, index) pairs";
}

/// stablehlo.reduce_window as a prefix scan. jnp.cumsum, cummax and cummin
/// (lax's reverse=True forms too) print a window that spans one dimension
/// whole, padded by its size - 1 before it (after it, reversed), unit
/// strides and dilations, and the combiner's identity as init: y[i] =
/// x[0] op ... op x[i]. Lowered as ceil(log2 n) steps y = y op shift(y, s),
/// s = 1, 2, 4, ... (Hillis-Steele), the shifted-in elements the init:
/// exact for integers, maximum and minimum; a float sum adds in that
/// tree's order (XLA's is not sequential either). Other windows (pooling,
/// strides, dilations) go to lowerWindowOfSlices.
namespace {

/// A window that is not a prefix scan (pooling: max_pool, avg_pool's sums):
/// GraphBuilders.h's buildWindowReduce, one strided slice per window
/// position, padded and dilated with the init, the combiner's identity.
LogicalResult
lowerWindowOfSlices(OpContext &ctx, Combiner combiner, ArrayRef<int64_t> window,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> base,
                    ArrayRef<int64_t> dilations, ArrayRef<int64_t> padding) {
  constexpr int64_t kMaxPositions = 1024;
  RankedTensorType type = ctx.operandType(0);
  WindowReduction w;
  w.sizes.assign(window.begin(), window.end());
  w.strides.assign(strides.begin(), strides.end());
  w.baseDilation.assign(base.begin(), base.end());
  w.windowDilation.assign(dilations.begin(), dilations.end());
  for (size_t d = 0; d < window.size(); ++d) {
    w.padLow.push_back(padding[2 * d]);
    w.padHigh.push_back(padding[2 * d + 1]);
    if (window[d] < 1 || strides[d] < 1 || base[d] < 1 || dilations[d] < 1)
      return ctx.error() << "needs window sizes, strides and dilations of at "
                            "least 1";
  }
  int64_t positions = product(window);
  if (positions > kMaxPositions)
    return ctx.error() << "has a window of " << positions
                       << " positions; trainc lowers a window that is not a "
                          "prefix scan as one slice per position, at most "
                       << kMaxPositions;
  std::optional<SmallVector<int64_t>> out =
      windowReductionSizes(type.getShape(), w);
  // Window sizes are at least 1 (checked above), so `out` has a value.
  if (ArrayRef<int64_t>(*out) != ctx.resultType().getShape())
    return ctx.error() << "declares the result " << ctx.resultType()
                       << " but its window gives "
                       << RankedTensorType::get(*out, type.getElementType());
  auto combine = combiner == Combiner::Add   ? WindowCombiner::Add
                 : combiner == Combiner::Mul ? WindowCombiner::Mul
                 : combiner == Combiner::Max ? WindowCombiner::Max
                                             : WindowCombiner::Min;
  ctx.setResult(0, buildWindowReduce(ctx.builder, ctx.loc, ctx.operand(0), w,
                                     combine, ctx.operand(1)));
  return success();
}

} // namespace

LogicalResult lowerReduceWindow(OpContext &ctx) {
  if (ctx.numOperands() != 2)
    return ctx.error() << "with " << ctx.numOperands() / 2
                       << " inputs is not supported; trainc lowers "
                          "reduce_window of one input";
  std::optional<SmallVector<Combiner>> combiners =
      matchCombiners(ctx.op->getRegion(0));
  std::optional<Combiner> combiner;
  if (combiners)
    combiner = combiners->front();
  if (!combiner || *combiner == Combiner::And || *combiner == Combiner::Or)
    return ctx.error() << "has a body trainc does not lower: it must be one "
                          "stablehlo.add, multiply, maximum or minimum of the "
                          "two block arguments";
  RankedTensorType type = ctx.operandType(0);
  int64_t rank = type.getRank();
  // An attribute of `count` integers, `fill` each when it is absent.
  auto list = [&](StringRef name, int64_t fill,
                  int64_t count) -> FailureOr<SmallVector<int64_t>> {
    if (!ctx.op->getAttr(name) && name != "window_dimensions")
      return SmallVector<int64_t>(count, fill);
    FailureOr<SmallVector<int64_t>> values = ctx.ints(name);
    if (succeeded(values) && int64_t(values->size()) != count)
      return ctx.error() << "has " << values->size() << " entries in '" << name
                         << "' for a rank-" << rank << " input, not " << count;
    return values;
  };
  auto window = list("window_dimensions", 1, rank);
  auto strides = list("window_strides", 1, rank);
  auto base = list("base_dilations", 1, rank);
  auto dilations = list("window_dilations", 1, rank);
  auto padding = list("padding", 0, 2 * rank);
  if (failed(window) || failed(strides) || failed(base) || failed(dilations) ||
      failed(padding))
    return failure();
  int64_t axis = -1;
  bool reverse = false, scan = ctx.resultType() == type;
  for (int64_t d = 0; d < rank && scan; ++d) {
    int64_t n = type.getDimSize(d), w = (*window)[d];
    int64_t low = (*padding)[2 * d], high = (*padding)[2 * d + 1];
    scan = (*strides)[d] == 1 && (*base)[d] == 1 && (*dilations)[d] == 1;
    if (!scan || (w == 1 && low == 0 && high == 0))
      continue;
    scan = axis < 0 && w == n && n > 1 &&
           ((low == n - 1 && high == 0) || (low == 0 && high == n - 1));
    axis = d;
    reverse = low == 0;
  }
  // With another init, XLA and the specification part where a window
  // holds padding: jax.lax.reduce_window(add, init 1) counts a pad as 0,
  // the specification pads with the init.
  Value init = ctx.operand(1);
  if (!isIdentity(ctx, *combiner, init, type.getElementType()))
    return ctx.error() << "has an init that is not its combiner's identity "
                          "(0, 1, -inf, +inf, the integer bounds); trainc "
                          "lowers windows from the identity, where XLA and "
                          "the specification agree";
  if (!scan)
    return lowerWindowOfSlices(ctx, *combiner, *window, *strides, *base,
                               *dilations, *padding);
  Value y = ctx.operand(0);
  int64_t n = axis < 0 ? 1 : type.getDimSize(axis);
  for (int64_t s = 1; s < n; s *= 2) {
    SmallVector<int64_t> fillShape(type.getShape());
    fillShape[axis] = s;
    Value fill = ctx.broadcastScalar(init, fillShape);
    SmallVector<int64_t> start(rank, 0), limit(type.getShape());
    Value shifted;
    if (reverse) {
      start[axis] = s;
      shifted = ctx.concatenate({ctx.slice(y, start, limit), fill}, axis);
    } else {
      limit[axis] = n - s;
      shifted = ctx.concatenate({fill, ctx.slice(y, start, limit)}, axis);
    }
    if (*combiner == Combiner::Add)
      y = ctx.create<AddOp>(y, shifted);
    else if (*combiner == Combiner::Mul)
      y = ctx.create<MulOp>(y, shifted);
    else if (*combiner == Combiner::Max)
      y = ctx.create<MaxOp>(y, shifted);
    else
      y = ctx.create<MinOp>(y, shifted);
  }
  if (ctx.failed())
    return failure();
  ctx.setResult(0, y);
  return success();
}

LogicalResult lowerDotGeneral(OpContext &ctx) {
  auto numbers = ctx.dict("dot_dimension_numbers");
  if (failed(numbers))
    return failure();
  StringRef what = "dot_dimension_numbers";
  auto lb = ctx.ints(*numbers, "lhs_batching_dimensions", what);
  auto rb = ctx.ints(*numbers, "rhs_batching_dimensions", what);
  auto lc = ctx.ints(*numbers, "lhs_contracting_dimensions", what);
  auto rc = ctx.ints(*numbers, "rhs_contracting_dimensions", what);
  if (failed(lb) || failed(rb) || failed(lc) || failed(rc))
    return failure();
  if (failed(checkDotDims(ctx, ctx.operandType(0), ctx.operandType(1), *lb, *rb,
                          *lc, *rc)))
    return failure();
  Value lhs = asFloat(ctx, ctx.operand(0)), rhs = asFloat(ctx, ctx.operand(1));
  if (tensorType(lhs).getElementType() != tensorType(rhs).getElementType())
    return ctx.error() << "has operands of different element types";
  Value result = ctx.create<DotGeneralOp>(lhs, rhs, *lb, *rb, *lc, *rc);
  if (tensorType(result) != ctx.resultType()) {
    if (tensorType(result).getShape() != ctx.resultType().getShape())
      return ctx.error() << "declares the result " << ctx.resultType()
                         << " but the operands give " << result.getType();
    result = ctx.fromF64(result, ctx.resultType());
  }
  ctx.setResult(0, result);
  return success();
}

/// Vector-vector, matrix-vector and matrix-matrix products: lhs's last
/// dimension against rhs's first.
LogicalResult lowerDot(OpContext &ctx) {
  auto lhsType = ctx.operandType(0), rhsType = ctx.operandType(1);
  if (failed(checkDotDims(ctx, lhsType, rhsType, {}, {},
                          {lhsType.getRank() - 1}, {0})))
    return failure();
  if (lhsType.getRank() < 1 || lhsType.getRank() > 2 || rhsType.getRank() < 1 ||
      rhsType.getRank() > 2)
    return ctx.error() << "needs operands of rank 1 or 2";
  Value result = ctx.create<DotGeneralOp>(
      asFloat(ctx, ctx.operand(0)), asFloat(ctx, ctx.operand(1)),
      ArrayRef<int64_t>{}, ArrayRef<int64_t>{},
      ArrayRef<int64_t>{lhsType.getRank() - 1}, ArrayRef<int64_t>{0});
  if (tensorType(result) != ctx.resultType())
    result = ctx.fromF64(result, ctx.resultType());
  ctx.setResult(0, result);
  return success();
}

} // namespace trainc::stablehlo_import
