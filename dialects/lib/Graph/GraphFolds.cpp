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

#include "FoldUtil.h"
#include "trainc/Dialect/Graph/CompareElements.h"
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
using namespace trainc::graph::fold;

bool trainc::graph::fold::cheapToFold(ArrayRef<Attribute> operands) {
  for (Attribute a : operands) {
    auto elements = dyn_cast_or_null<DenseElementsAttr>(a);
    if (!elements)
      return false;
    if (!elements.isSplat() && elements.getNumElements() > kMaxFoldedElements)
      return false;
  }
  return true;
}

namespace {

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

} // namespace

bool trainc::graph::compareFloats(const APFloat &l, const APFloat &r,
                                  ComparisonDirection direction) {
  APFloat::cmpResult c = l.compare(r);
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
  return false;
}

bool trainc::graph::comparesUnsigned(Type elementType) {
  // i1 (false < true) and the unsigned types compare as unsigned; signless
  // integers are signed.
  return elementType.isInteger(1) || elementType.isUnsignedInteger();
}

bool trainc::graph::compareIntegers(const APInt &l, const APInt &r,
                                    bool isUnsigned,
                                    ComparisonDirection direction) {
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

bool trainc::graph::compareElements(Attribute lhs, Attribute rhs,
                                    ComparisonDirection direction) {
  if (auto l = dyn_cast<FloatAttr>(lhs))
    return compareFloats(l.getValue(), cast<FloatAttr>(rhs).getValue(),
                         direction);
  auto l = cast<IntegerAttr>(lhs);
  return compareIntegers(l.getValue(), cast<IntegerAttr>(rhs).getValue(),
                         comparesUnsigned(l.getType()), direction);
}

namespace {

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

bool trainc::graph::fold::isAdditiveIdentity(Attribute attr) {
  if (auto f = floatSplat(attr))
    return f->isZero() && f->isNegative();
  if (auto i = intSplat(attr))
    return i->isZero();
  return false;
}

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

/// Floor, round (ties to even) and abs of small constants: exact in any
/// float type. Pow is taken in double and rounded once to the element
/// type, as the square root is: within the runtime's own pow's error
/// (less than an ulp) and exact where the power is representable, as the
/// shapes that exporters compute with it are (Pow(16, 0.5) = 4).
OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  Type type = getType().getElementType();
  return mapElements(adaptor.getOperands(), getType(),
                     [&](ArrayRef<Attribute> x) -> Attribute {
                       double v = cast<FloatAttr>(x[0]).getValueAsDouble();
                       return FloatAttr::get(type, std::floor(v));
                     });
}

OpFoldResult RoundOp::fold(FoldAdaptor adaptor) {
  Type type = getType().getElementType();
  return mapElements(adaptor.getOperands(), getType(),
                     [&](ArrayRef<Attribute> x) -> Attribute {
                       APFloat v = cast<FloatAttr>(x[0]).getValue();
                       v.roundToIntegral(APFloat::rmNearestTiesToEven);
                       return FloatAttr::get(type, v);
                     });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  Type type = getType().getElementType();
  return mapElements(adaptor.getOperands(), getType(),
                     [&](ArrayRef<Attribute> x) -> Attribute {
                       if (auto f = dyn_cast<FloatAttr>(x[0])) {
                         APFloat v = f.getValue();
                         v.clearSign();
                         return FloatAttr::get(type, v);
                       }
                       APInt v = cast<IntegerAttr>(x[0]).getValue();
                       // Unsigned values are their own magnitude; a signed
                       // minimum wraps to itself, as in two's complement.
                       return IntegerAttr::get(
                           type, type.isUnsignedInteger() ? v : v.abs());
                     });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  Type type = getType().getElementType();
  return mapElements(adaptor.getOperands(), getType(),
                     [&](ArrayRef<Attribute> xy) -> Attribute {
                       double x = cast<FloatAttr>(xy[0]).getValueAsDouble(),
                              y = cast<FloatAttr>(xy[1]).getValueAsDouble();
                       return FloatAttr::get(type, std::pow(x, y));
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
