//===- GraphFolds.cpp - Cheap folders of graph ops ------------------------===//
//
// Folds that are exact in IEEE arithmetic and cost at most one pass over a
// small constant: identities (x * 1, reshape to the same type, ...),
// collapsing chains (neg(neg x), transpose(transpose x), reshape(reshape x)),
// and constant folding of elementwise arithmetic on splats and on constants
// of at most kMaxFoldedElements elements (larger ones are left for the
// runtime rather than bloating the IR).
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APSInt.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace {

constexpr int64_t kMaxFoldedElements = 1 << 16;
/// Broadcasting a non-splat constant multiplies its size; fold only results
/// at the scale of shape arithmetic, and keep the compact form otherwise.
constexpr int64_t kMaxFoldedBroadcastElements = 1 << 10;

/// True when every operand is a known constant that is a splat or small.
bool cheapToFold(ArrayRef<Attribute> operands) {
  for (Attribute a : operands) {
    auto elements = dyn_cast_or_null<DenseElementsAttr>(a);
    if (!elements)
      return false;
    if (!elements.isSplat() && elements.getNumElements() > kMaxFoldedElements)
      return false;
  }
  return true;
}

/// The splat value of `attr` as a float, if it is a float splat.
std::optional<APFloat> floatSplat(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

std::optional<APInt> intSplat(Attribute attr) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat || !isa<IntegerType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APInt>();
}

/// x + c == x exactly for every x, NaN and -0 included, when c is -0 (or
/// the integer 0). (+0 is not an identity: -0 + +0 = +0.)
bool isAdditiveIdentity(Attribute attr) {
  if (auto f = floatSplat(attr))
    return f->isZero() && f->isNegative();
  if (auto i = intSplat(attr))
    return i->isZero();
  return false;
}

/// x - c == x exactly when c is +0 (or the integer 0).
bool isSubtractiveIdentity(Attribute attr) {
  if (auto f = floatSplat(attr))
    return f->isZero() && !f->isNegative();
  if (auto i = intSplat(attr))
    return i->isZero();
  return false;
}

bool isOne(Attribute attr) {
  if (auto f = floatSplat(attr))
    return f->isExactlyValue(1.0);
  if (auto i = intSplat(attr))
    return i->isOne();
  return false;
}

/// Constant-folds an elementwise binary op whose operands are both cheap
/// constants, with `floatFn` on floats and `intFn` on integers (either may
/// return nullopt to refuse, e.g. division by zero).
template <typename FloatFn, typename IntFn>
OpFoldResult foldBinaryConstants(ArrayRef<Attribute> operands, Type type,
                                 FloatFn floatFn, IntFn intFn) {
  if (!cheapToFold(operands))
    return {};
  if (isa<FloatType>(getElementTypeOrSelf(type)))
    return constFoldBinaryOp<FloatAttr, APFloat, void>(
        operands,
        [&](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
          return floatFn(a, b);
        });
  return constFoldBinaryOp<IntegerAttr, APInt, void>(
      operands, [&](const APInt &a, const APInt &b) -> std::optional<APInt> {
        return intFn(a, b);
      });
}

/// The elements of a cheap constant in row-major order (a splat expanded).
SmallVector<Attribute> elementsOf(DenseElementsAttr attr) {
  return SmallVector<Attribute>(attr.getValues<Attribute>());
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// Builds a constant of `resultType` whose element at each result index is
/// the source element `sourceIndex(resultIndex)` of `source`; for data
/// movement folders. Refuses results above kMaxFoldedElements.
template <typename IndexFn>
OpFoldResult gatherElements(DenseElementsAttr source, ShapedType resultType,
                            IndexFn sourceIndex) {
  if (resultType.getNumElements() > kMaxFoldedElements)
    return {};
  if (source.isSplat())
    return SplatElementsAttr::get(resultType,
                                  source.getSplatValue<Attribute>());
  SmallVector<Attribute> values = elementsOf(source);
  ArrayRef<int64_t> shape = resultType.getShape();
  SmallVector<int64_t> index(shape.size(), 0);
  SmallVector<Attribute> result;
  result.reserve(resultType.getNumElements());
  for (int64_t n = 0; n < resultType.getNumElements(); ++n) {
    result.push_back(values[sourceIndex(ArrayRef<int64_t>(index))]);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return DenseElementsAttr::get(resultType, result);
}

/// Converts one element to `to` as graph.convert defines it.
Attribute convertElement(Attribute value, Type to) {
  if (auto f = dyn_cast<FloatAttr>(value)) {
    APFloat v = f.getValue();
    if (auto toFloat = dyn_cast<FloatType>(to)) {
      bool lost = false;
      v.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      return FloatAttr::get(to, v);
    }
    unsigned width = to.getIntOrFloatBitWidth();
    if (width == 1)
      return IntegerAttr::get(to, APInt(1, v.isZero() ? 0 : 1));
    // Truncates toward zero and saturates: APFloat gives NaN -> 0 and a
    // value beyond the range the nearest bound (its opInvalidOp result), as
    // the runtime's kernel does.
    APSInt result(width, /*isUnsigned=*/to.isUnsignedInteger());
    bool exact = false;
    (void)v.convertToInteger(result, APFloat::rmTowardZero, &exact);
    return IntegerAttr::get(to, result);
  }
  auto i = cast<IntegerAttr>(value);
  APInt v = i.getValue();
  // i1 is a truth value: true converts to 1, never -1; unsigned integers
  // widen with zeros.
  bool isSigned = v.getBitWidth() != 1 && !i.getType().isUnsignedInteger();
  if (auto toFloat = dyn_cast<FloatType>(to)) {
    APFloat f(toFloat.getFloatSemantics());
    f.convertFromAPInt(v, isSigned, APFloat::rmNearestTiesToEven);
    return FloatAttr::get(to, f);
  }
  unsigned width = to.getIntOrFloatBitWidth();
  if (width == 1)
    return IntegerAttr::get(to, APInt(1, v.isZero() ? 0 : 1));
  return IntegerAttr::get(to, isSigned ? v.sextOrTrunc(width)
                                       : v.zextOrTrunc(width));
}

bool compareElements(Attribute lhs, Attribute rhs,
                     ComparisonDirection direction) {
  if (auto l = dyn_cast<FloatAttr>(lhs)) {
    APFloat::cmpResult c =
        l.getValue().compare(cast<FloatAttr>(rhs).getValue());
    switch (direction) {
    case ComparisonDirection::EQ:
      return c == APFloat::cmpEqual;
    case ComparisonDirection::NE:
      return c != APFloat::cmpEqual; // True for NaN.
    case ComparisonDirection::LT:
      return c == APFloat::cmpLessThan;
    case ComparisonDirection::LE:
      return c == APFloat::cmpLessThan || c == APFloat::cmpEqual;
    case ComparisonDirection::GT:
      return c == APFloat::cmpGreaterThan;
    case ComparisonDirection::GE:
      return c == APFloat::cmpGreaterThan || c == APFloat::cmpEqual;
    }
  }
  APInt l = cast<IntegerAttr>(lhs).getValue();
  APInt r = cast<IntegerAttr>(rhs).getValue();
  // i1 (false < true) and the unsigned types compare as unsigned; signless
  // integers are signed.
  bool isUnsigned = l.getBitWidth() == 1 ||
                    cast<IntegerAttr>(lhs).getType().isUnsignedInteger();
  switch (direction) {
  case ComparisonDirection::EQ:
    return l == r;
  case ComparisonDirection::NE:
    return l != r;
  case ComparisonDirection::LT:
    return isUnsigned ? l.ult(r) : l.slt(r);
  case ComparisonDirection::LE:
    return isUnsigned ? l.ule(r) : l.sle(r);
  case ComparisonDirection::GT:
    return isUnsigned ? l.ugt(r) : l.sgt(r);
  case ComparisonDirection::GE:
    return isUnsigned ? l.uge(r) : l.sge(r);
  }
  return false;
}

/// Applies `fn` to corresponding elements of same-shaped cheap constants.
template <typename Fn>
OpFoldResult mapElements(ArrayRef<Attribute> operands, ShapedType resultType,
                         Fn fn) {
  if (!cheapToFold(operands))
    return {};
  SmallVector<DenseElementsAttr> dense;
  bool allSplat = true;
  for (Attribute a : operands) {
    dense.push_back(cast<DenseElementsAttr>(a));
    allSplat &= dense.back().isSplat();
  }
  int64_t n = allSplat ? 1 : resultType.getNumElements();
  SmallVector<SmallVector<Attribute>> values;
  for (DenseElementsAttr d : dense)
    values.push_back(
        d.isSplat() ? SmallVector<Attribute>(n, d.getSplatValue<Attribute>())
                    : elementsOf(d));
  SmallVector<Attribute> result;
  SmallVector<Attribute> args(operands.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < values.size(); ++k)
      args[k] = values[k][i];
    Attribute r = fn(ArrayRef<Attribute>(args));
    if (!r)
      return {};
    result.push_back(r);
  }
  if (allSplat)
    return SplatElementsAttr::get(resultType, result.front());
  return DenseElementsAttr::get(resultType, result);
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  if (!cheapToFold(adaptor.getOperands()))
    return {};
  if (isa<FloatType>(getType().getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(adaptor.getOperands(),
                                                      [](APFloat a) {
                                                        a.changeSign();
                                                        return a;
                                                      });
  return constFoldUnaryOp<IntegerAttr, APInt, void>(
      adaptor.getOperands(), [](const APInt &a) { return -a; });
}

/// Square root of small constants, correctly rounded: the root is taken in
/// double (53 bits), then rounded once to the element type (at most 24
/// bits), and 53 >= 2 * 24 + 2 makes that double rounding innocuous.
OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  Type type = getType().getElementType();
  return mapElements(adaptor.getOperands(), getType(),
                     [&](ArrayRef<Attribute> x) -> Attribute {
                       double v = cast<FloatAttr>(x[0]).getValueAsDouble();
                       return FloatAttr::get(type, std::sqrt(v));
                     });
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isAdditiveIdentity(adaptor.getRhs()))
    return getLhs();
  if (isAdditiveIdentity(adaptor.getLhs()))
    return getRhs();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return std::optional(a + b); },
      [](const APInt &a, const APInt &b) { return std::optional(a + b); });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSubtractiveIdentity(adaptor.getRhs()))
    return getLhs();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return std::optional(a - b); },
      [](const APInt &a, const APInt &b) { return std::optional(a - b); });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isOne(adaptor.getRhs()))
    return getLhs();
  if (isOne(adaptor.getLhs()))
    return getRhs();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return std::optional(a * b); },
      [](const APInt &a, const APInt &b) { return std::optional(a * b); });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isOne(adaptor.getRhs()))
    return getLhs();
  bool isUnsigned = getType().getElementType().isUnsignedInteger();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return std::optional(a / b); },
      [isUnsigned](const APInt &a, const APInt &b) -> std::optional<APInt> {
        bool overflow = false;
        if (b.isZero())
          return std::nullopt; // Left for the runtime to report.
        if (isUnsigned)
          return a.udiv(b);
        APInt q = a.sdiv_ov(b, overflow);
        if (overflow)
          return std::nullopt;
        return q;
      });
}

/// Whether `attr` is a float splat of the infinity of sign `negative`.
static bool isInfinitySplat(Attribute attr, bool negative) {
  auto dense = dyn_cast_or_null<DenseFPElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  APFloat v = dense.getSplatValue<APFloat>();
  return v.isInfinity() && v.isNegative() == negative;
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  // max(x, -inf) = x (NaN stays NaN): JAX's softmax guards its row max so.
  if (isInfinitySplat(adaptor.getRhs(), /*negative=*/true))
    return getLhs();
  if (isInfinitySplat(adaptor.getLhs(), /*negative=*/true))
    return getRhs();
  bool isUnsigned = getType().getElementType().isUnsignedInteger();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) {
        return std::optional(llvm::maximum(a, b));
      },
      [isUnsigned](const APInt &a, const APInt &b) {
        return std::optional((isUnsigned ? a.uge(b) : a.sge(b)) ? a : b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  if (isInfinitySplat(adaptor.getRhs(), /*negative=*/false))
    return getLhs();
  if (isInfinitySplat(adaptor.getLhs(), /*negative=*/false))
    return getRhs();
  bool isUnsigned = getType().getElementType().isUnsignedInteger();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) {
        return std::optional(llvm::minimum(a, b));
      },
      [isUnsigned](const APInt &a, const APInt &b) {
        return std::optional((isUnsigned ? a.ule(b) : a.sle(b)) ? a : b);
      });
}

OpFoldResult CompareOp::fold(FoldAdaptor adaptor) {
  Type i1 = getType().getElementType();
  ComparisonDirection direction = getDirection();
  return mapElements(adaptor.getOperands(), getType(),
                     [&](ArrayRef<Attribute> x) -> Attribute {
                       bool r = compareElements(x[0], x[1], direction);
                       return IntegerAttr::get(i1, APInt(1, r ? 1 : 0));
                     });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto pred = intSplat(adaptor.getPred()))
    return pred->isOne() ? getOnTrue() : getOnFalse();
  return mapElements(
      adaptor.getOperands(), getType(), [](ArrayRef<Attribute> x) -> Attribute {
        return cast<IntegerAttr>(x[0]).getValue().isOne() ? x[1] : x[2];
      });
}

OpFoldResult ConvertOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  // Widened and rounded back: x -> f32 -> x is x (every value of a narrower
  // float is exact in a wider one).
  if (auto inner = getOperand().getDefiningOp<ConvertOp>()) {
    Type from = inner.getOperand().getType().getElementType();
    Type mid = inner.getType().getElementType();
    if (inner.getOperand().getType() == getType() && isa<FloatType>(from) &&
        isa<FloatType>(mid) &&
        cast<FloatType>(mid).getFPMantissaWidth() >=
            cast<FloatType>(from).getFPMantissaWidth() &&
        mid.getIntOrFloatBitWidth() > from.getIntOrFloatBitWidth())
      return inner.getOperand();
  }
  Type to = getType().getElementType();
  if (!to.isIntOrFloat()) // the dialect's storage types have no attributes
    return {};
  return mapElements(
      adaptor.getOperands(), getType(),
      [&](ArrayRef<Attribute> x) { return convertElement(x[0], to); });
}

//===----------------------------------------------------------------------===//
// Bitwise: APInt's own operations; a shift amount is read as unsigned and
// one at least the width gives 0 (or the sign's bits), as StableHLO says
// and APInt's shifts by an APInt do.
//===----------------------------------------------------------------------===//

namespace {
template <typename IntFn>
OpFoldResult foldBits(ArrayRef<Attribute> operands, Type type, IntFn intFn) {
  return foldBinaryConstants(
      operands, type,
      [](const APFloat &, const APFloat &) -> std::optional<APFloat> {
        return std::nullopt; // the bitwise ops take integers only
      },
      [&](const APInt &a, const APInt &b) {
        return std::optional(intFn(a, b));
      });
}
template <typename IntFn>
OpFoldResult foldBitsUnary(ArrayRef<Attribute> operands, IntFn intFn) {
  if (!cheapToFold(operands))
    return {};
  return constFoldUnaryOp<IntegerAttr, APInt, void>(operands, intFn);
}
} // namespace

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldBits(adaptor.getOperands(), getType(),
                  [](const APInt &a, const APInt &b) { return a & b; });
}
OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldBits(adaptor.getOperands(), getType(),
                  [](const APInt &a, const APInt &b) { return a | b; });
}
OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldBits(adaptor.getOperands(), getType(),
                  [](const APInt &a, const APInt &b) { return a ^ b; });
}
OpFoldResult ShiftLeftOp::fold(FoldAdaptor adaptor) {
  return foldBits(adaptor.getOperands(), getType(),
                  [](const APInt &a, const APInt &b) { return a.shl(b); });
}
OpFoldResult ShiftRightLogicalOp::fold(FoldAdaptor adaptor) {
  return foldBits(adaptor.getOperands(), getType(),
                  [](const APInt &a, const APInt &b) { return a.lshr(b); });
}
OpFoldResult ShiftRightArithmeticOp::fold(FoldAdaptor adaptor) {
  return foldBits(adaptor.getOperands(), getType(),
                  [](const APInt &a, const APInt &b) { return a.ashr(b); });
}
OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  return foldBitsUnary(adaptor.getOperands(),
                       [](const APInt &a) { return ~a; });
}
OpFoldResult PopCountOp::fold(FoldAdaptor adaptor) {
  return foldBitsUnary(adaptor.getOperands(), [](const APInt &a) {
    return APInt(a.getBitWidth(), a.popcount());
  });
}
OpFoldResult CountLeadingZerosOp::fold(FoldAdaptor adaptor) {
  return foldBitsUnary(adaptor.getOperands(), [](const APInt &a) {
    return APInt(a.getBitWidth(), a.countl_zero());
  });
}

//===----------------------------------------------------------------------===//
// Reductions and data movement
//===----------------------------------------------------------------------===//

OpFoldResult ReduceSumOp::fold(FoldAdaptor) {
  // Not a widened sum (C3): its result is not the operand's type.
  return getDims().empty() && getOperand().getType() == getType()
             ? getOperand()
             : OpFoldResult();
}
OpFoldResult ReduceMaxOp::fold(FoldAdaptor) {
  return getDims().empty() ? getOperand() : OpFoldResult();
}
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) {
  return getDims().empty() ? getOperand() : OpFoldResult();
}
OpFoldResult ReduceProdOp::fold(FoldAdaptor) {
  return getDims().empty() ? getOperand() : OpFoldResult();
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor adaptor) {
  // Same type with strictly increasing dims means the identity.
  if (getOperand().getType() == getType())
    return getOperand();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (!dense || (!dense.isSplat() &&
                 getType().getNumElements() > kMaxFoldedBroadcastElements))
    return {};
  ArrayRef<int64_t> inShape = getOperand().getType().getShape();
  SmallVector<int64_t> inStrides = stridesOf(inShape);
  ArrayRef<int64_t> dims = getDims();
  return gatherElements(dense, getType(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (auto [i, d] : llvm::enumerate(dims))
      flat += (inShape[i] == 1 ? 0 : index[d]) * inStrides[i];
    return flat;
  });
}

namespace {
/// broadcast_in_dim(broadcast_in_dim(x)) -> broadcast_in_dim(x), and
/// broadcast_in_dim(reshape(x)) -> broadcast_in_dim(x) when the reshape only
/// inserts size-1 dimensions (ONNX's keepdims reductions produce these).
/// One broadcast per value keeps the recognition patterns and gradients
/// simple.
struct FoldIntoBroadcast : public OpRewritePattern<BroadcastInDimOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BroadcastInDimOp op,
                                PatternRewriter &rewriter) const override {
    ArrayRef<int64_t> dims = op.getDims();
    SmallVector<int64_t> newDims;
    Value source;
    if (auto inner = op.getOperand().getDefiningOp<BroadcastInDimOp>()) {
      for (int64_t d : inner.getDims())
        newDims.push_back(dims[d]);
      source = inner.getOperand();
    } else if (auto reshape = op.getOperand().getDefiningOp<ReshapeOp>()) {
      // Match the reshape's source dims, in order, to its result dims,
      // skipping only result dims of size 1.
      ArrayRef<int64_t> from = reshape.getOperand().getType().getShape();
      ArrayRef<int64_t> to = reshape.getType().getShape();
      size_t j = 0;
      for (int64_t size : from) {
        while (j < to.size() && to[j] != size) {
          if (to[j] != 1)
            return failure();
          ++j;
        }
        if (j == to.size())
          return failure();
        newDims.push_back(dims[j++]);
      }
      for (; j < to.size(); ++j)
        if (to[j] != 1)
          return failure();
      source = reshape.getOperand();
    } else {
      return failure();
    }
    rewriter.replaceOpWithNewOp<BroadcastInDimOp>(op, op.getType(), source,
                                                  newDims);
    return success();
  }
};
} // namespace

void BroadcastInDimOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                   MLIRContext *context) {
  results.add<FoldIntoBroadcast>(context);
}

namespace {
/// op(reshape(a), reshape(b), splat) -> reshape(op(a, b, splat')) for an
/// elementwise op whose reshaped operands all come from one shape.
/// Elementwise ops commute with reshapes; sinking them moves keepdims
/// reshapes down to the broadcast that consumes them, where they fold.
struct SinkReshapeThroughElementwise : public RewritePattern {
  SinkReshapeThroughElementwise(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!op->hasTrait<mlir::OpTrait::Elementwise>() ||
        op->getNumResults() != 1 || !isa<GraphDialect>(op->getDialect()) ||
        op->getNumOperands() == 0)
      return failure();
    std::optional<ArrayRef<int64_t>> source;
    for (Value v : op->getOperands()) {
      if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
        ArrayRef<int64_t> s = reshape.getOperand().getType().getShape();
        if ((source && *source != s) ||
            llvm::any_of(v.getUsers(), [&](Operation *u) { return u != op; }))
          return failure();
        source = s;
      } else if (!matchPattern(v, m_Constant()) ||
                 !isa<SplatElementsAttr>(
                     cast<ConstantOp>(v.getDefiningOp()).getValue())) {
        return failure();
      }
    }
    if (!source)
      return failure();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      if (auto reshape = v.getDefiningOp<ReshapeOp>()) {
        operands.push_back(reshape.getOperand());
        continue;
      }
      auto splat = cast<SplatElementsAttr>(
          cast<ConstantOp>(v.getDefiningOp()).getValue());
      auto type = RankedTensorType::get(*source, splat.getElementType());
      operands.push_back(rewriter.create<ConstantOp>(
          op->getLoc(),
          SplatElementsAttr::get(type, splat.getSplatValue<Attribute>())));
    }
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    Operation *sunk = rewriter.create(
        op->getLoc(), op->getName().getIdentifier(), operands,
        {RankedTensorType::get(*source, resultType.getElementType())},
        op->getAttrs());
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, resultType, sunk->getResult(0));
    return success();
  }
};
} // namespace

namespace {
/// convert(m(x)) -> m(convert(x)) for a narrowing float convert of the only
/// use of a data-movement op m (transpose, broadcast_in_dim, slice): the
/// movement then moves fewer bytes, and a weight's transpose stays next to
/// the dot that absorbs it, reading the weight's 16-bit copy.
struct HoistNarrowingConvert : public OpRewritePattern<ConvertOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvertOp op,
                                PatternRewriter &rewriter) const override {
    Operation *movement = op.getOperand().getDefiningOp();
    if (!movement || !isa<TransposeOp, BroadcastInDimOp, SliceOp>(movement) ||
        !movement->hasOneUse())
      return failure();
    auto from = dyn_cast<FloatType>(op.getOperand().getType().getElementType());
    auto to = dyn_cast<FloatType>(op.getType().getElementType());
    if (!from || !to || to.getWidth() >= from.getWidth())
      return failure();
    Value source = movement->getOperand(0);
    auto sourceType = cast<RankedTensorType>(source.getType());
    Value narrowed =
        rewriter.create<ConvertOp>(op.getLoc(), sourceType.clone(to), source);
    Operation *moved =
        rewriter.create(movement->getLoc(), movement->getName().getIdentifier(),
                        {narrowed}, {op.getType()}, movement->getAttrs());
    rewriter.replaceOp(op, moved->getResults());
    return success();
  }
};
} // namespace

void ConvertOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<HoistNarrowingConvert>(context);
}

namespace {
/// A broadcast_in_dim that only inserts size-1 dimensions is a reshape (how
/// JAX writes keepdims); as a reshape it sinks through elementwise ops and
/// folds into the broadcast that consumes it, like ONNX's keepdims.
struct UnitBroadcastToReshape : public OpRewritePattern<BroadcastInDimOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BroadcastInDimOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getOperand().getType().getNumElements() !=
        op.getType().getNumElements())
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getOperand());
    return success();
  }
};

/// reduce_sum(x, dims) / N -> reduce_mean(x, dims) when N is the number of
/// elements summed (jnp.mean's form), so norms match one mean.
struct SumDivToMean : public OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp op,
                                PatternRewriter &rewriter) const override {
    auto sum = op.getLhs().getDefiningOp<ReduceSumOp>();
    DenseFPElementsAttr divisor;
    // Not a widened sum (f32 of a 16-bit operand): reduce_mean has none.
    if (!sum || !matchPattern(op.getRhs(), m_Constant(&divisor)) ||
        !divisor.isSplat() ||
        getElementTypeOrSelf(sum.getType()) !=
            getElementTypeOrSelf(sum.getOperand().getType()))
      return failure();
    int64_t count = 1;
    for (int64_t d : sum.getDims())
      count *= sum.getOperand().getType().getDimSize(d);
    if (divisor.getSplatValue<APFloat>().convertToDouble() !=
        static_cast<double>(count))
      return failure();
    rewriter.replaceOpWithNewOp<ReduceMeanOp>(op, op.getType(),
                                              sum.getOperand(), sum.getDims());
    return success();
  }
};
} // namespace

namespace {
/// A run [begin, end) of a concatenate's operand along its dim: `value`,
/// or the additive identity (-0, the integer 0) when `value` is null.
struct ConcatPiece {
  int64_t begin, end;
  Value value;
};

/// `v`'s pieces when it is a concatenate along `dim`; empty operands are
/// left out.
std::optional<SmallVector<ConcatPiece>> concatPieces(Value v, int64_t dim) {
  auto concat = v.getDefiningOp<ConcatenateOp>();
  if (!concat || int64_t(concat.getDim()) != dim)
    return std::nullopt;
  SmallVector<ConcatPiece> pieces;
  int64_t at = 0;
  for (Value input : concat.getInputs()) {
    int64_t width = cast<RankedTensorType>(input.getType()).getDimSize(dim);
    if (width == 0)
      continue;
    Attribute constant;
    bool identity = matchPattern(input, m_Constant(&constant)) &&
                    isAdditiveIdentity(constant);
    pieces.push_back({at, at + width, identity ? Value() : input});
    at += width;
  }
  return pieces;
}

/// add(concatenate(a, 0), concatenate(0, b)) -> concatenate(a, b): where
/// at every position at most one side is not the additive identity, the sum
/// is the other side, exactly (x + -0 == x). Autodiff sums the gradients
/// of several slices of one tensor (a fused QKV projection's three) this
/// way, each padded with -0 to the tensor's size; the sum becomes one
/// concatenate instead of two adds over the whole tensor. Both sides must
/// be split at the same points wherever neither is the identity.
struct AddOfDisjointConcatenates : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    auto lhsConcat = op.getLhs().getDefiningOp<ConcatenateOp>();
    if (!lhsConcat)
      return failure();
    int64_t dim = lhsConcat.getDim();
    auto lhs = concatPieces(op.getLhs(), dim);
    auto rhs = concatPieces(op.getRhs(), dim);
    if (!lhs || !rhs)
      return failure();
    SmallVector<ConcatPiece> merged;
    int64_t total = op.getType().getDimSize(dim);
    for (size_t i = 0, j = 0; i < lhs->size() && j < rhs->size();) {
      const ConcatPiece &l = (*lhs)[i], &r = (*rhs)[j];
      int64_t begin = std::max(l.begin, r.begin), end = std::min(l.end, r.end);
      if (l.value && r.value)
        return failure();
      if (l.value || r.value) {
        const ConcatPiece &p = l.value ? l : r;
        if (p.begin != begin || p.end != end) // only part of p: no slices
          return failure();
        merged.push_back(p);
      } else if (!merged.empty() && !merged.back().value) {
        merged.back().end = end;
      } else {
        merged.push_back({begin, end, Value()});
      }
      i += l.end == end;
      j += r.end == end;
    }
    if (merged.empty() || merged.back().end != total)
      return failure();
    SmallVector<Value> inputs;
    for (const ConcatPiece &p : merged) {
      if (p.value) {
        inputs.push_back(p.value);
        continue;
      }
      SmallVector<int64_t> shape(op.getType().getShape());
      shape[dim] = p.end - p.begin;
      auto type = RankedTensorType::get(shape, op.getType().getElementType());
      Type e = type.getElementType();
      Attribute identity = isa<FloatType>(e)
                               ? Attribute(rewriter.getFloatAttr(e, -0.0))
                               : Attribute(rewriter.getIntegerAttr(e, 0));
      inputs.push_back(rewriter.create<ConstantOp>(
          op.getLoc(), SplatElementsAttr::get(type, identity)));
    }
    if (inputs.size() == 1)
      rewriter.replaceOp(op, inputs.front());
    else
      rewriter.replaceOpWithNewOp<ConcatenateOp>(op, op.getType(), inputs, dim);
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<AddOfDisjointConcatenates>(context);
}

void GraphDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  results
      .add<SinkReshapeThroughElementwise, UnitBroadcastToReshape, SumDivToMean>(
          getContext());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand()))
    return dense.reshape(getType());
  return {};
}

static bool isIdentityPermutation(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (static_cast<int64_t>(i) != p)
      return false;
  return true;
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (isIdentityPermutation(perm))
    return getOperand();
  if (auto inner = getOperand().getDefiningOp<TransposeOp>()) {
    // result[i] = inner.result[perm[i]] = inner.operand[innerPerm[perm[i]]].
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    if (isIdentityPermutation(composed))
      return inner.getOperand();
    setPermutation(composed);
    getOperandMutable().assign(inner.getOperand());
    return getResult();
  }
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (!dense)
    return {};
  SmallVector<int64_t> inStrides = stridesOf(getOperand().getType().getShape());
  return gatherElements(dense, getType(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (auto [i, p] : llvm::enumerate(perm))
      flat += index[i] * inStrides[p];
    return flat;
  });
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  // A slice whose result has the operand's shape takes every element.
  if (getOperand().getType() == getType())
    return getOperand();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (!dense)
    return {};
  SmallVector<int64_t> inStrides = stridesOf(getOperand().getType().getShape());
  ArrayRef<int64_t> start = getStart(), strides = getStrides();
  return gatherElements(dense, getType(), [&](ArrayRef<int64_t> index) {
    int64_t flat = 0;
    for (size_t d = 0; d < index.size(); ++d)
      flat += (start[d] + index[d] * strides[d]) * inStrides[d];
    return flat;
  });
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  if (!cheapToFold(adaptor.getInputs()) ||
      getType().getNumElements() > kMaxFoldedElements)
    return {};
  // Row-major: the result is, for each index of the dimensions before
  // `dim`, the inputs' blocks of (size along dim) x (inner elements).
  int64_t dim = getDim();
  ArrayRef<int64_t> shape = getType().getShape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  SmallVector<SmallVector<Attribute>> values;
  SmallVector<int64_t> blocks;
  for (auto [input, attr] : llvm::zip(getInputs(), adaptor.getInputs())) {
    auto dense = cast<DenseElementsAttr>(attr);
    values.push_back(elementsOf(dense));
    blocks.push_back(cast<RankedTensorType>(input.getType()).getDimSize(dim) *
                     inner);
  }
  SmallVector<Attribute> result;
  result.reserve(getType().getNumElements());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < values.size(); ++k)
      for (int64_t e = 0; e < blocks[k]; ++e)
        result.push_back(values[k][o * blocks[k] + e]);
  return DenseElementsAttr::get(getType(), result);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  auto indices = dyn_cast_or_null<DenseElementsAttr>(adaptor.getIndices());
  if (!dense || !indices || !cheapToFold({dense, indices}))
    return {};
  ArrayRef<int64_t> inShape = getOperand().getType().getShape();
  int64_t axis = getAxis(), n = inShape[axis];
  SmallVector<int64_t> picked;
  for (const APInt &i : indices.getValues<APInt>()) {
    int64_t v = i.getSExtValue();
    if (v < -n || v >= n)
      return {}; // Out of range: left for the runtime to report.
    picked.push_back(v < 0 ? v + n : v);
  }
  if (indices.isSplat())
    picked.assign(indices.getNumElements(), picked.front());
  SmallVector<int64_t> inStrides = stridesOf(inShape);
  SmallVector<int64_t> idxStrides =
      stridesOf(getIndices().getType().getShape());
  int64_t idxRank = getIndices().getType().getRank();
  return gatherElements(dense, getType(), [&](ArrayRef<int64_t> index) {
    // index = outer dims (axis of them), indices dims, inner dims.
    int64_t flat = 0, k = 0;
    for (int64_t d = 0; d < axis; ++d)
      flat += index[d] * inStrides[d];
    for (int64_t d = 0; d < idxRank; ++d)
      k += index[axis + d] * idxStrides[d];
    flat += picked[k] * inStrides[axis];
    for (size_t d = axis + 1; d < inShape.size(); ++d)
      flat += index[d - 1 + idxRank] * inStrides[d];
    return flat;
  });
}

LogicalResult DropoutOp::fold(FoldAdaptor,
                              SmallVectorImpl<OpFoldResult> &results) {
  if (!getRatio().isZero())
    return failure();
  results.push_back(getOperand());
  results.push_back(SplatElementsAttr::get(getMask().getType(),
                                           BoolAttr::get(getContext(), true)));
  return success();
}

/// Small iotas fold, so masks built from them (causal masks from
/// compare(iota, iota)) become constants the recognizers can read.
OpFoldResult IotaOp::fold(FoldAdaptor) {
  RankedTensorType type = getType();
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  Type e = type.getElementType();
  int64_t dim = getDim();
  SmallVector<int64_t> strides = stridesOf(type.getShape());
  SmallVector<Attribute> values;
  for (int64_t n = 0; n < type.getNumElements(); ++n) {
    int64_t index = (n / strides[dim]) % type.getDimSize(dim);
    values.push_back(isa<FloatType>(e)
                         ? Attribute(FloatAttr::get(e, double(index)))
                         : Attribute(IntegerAttr::get(e, index)));
  }
  return DenseElementsAttr::get(type, values);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
