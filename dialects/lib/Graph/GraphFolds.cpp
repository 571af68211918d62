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
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

using namespace mlir;
using namespace trainc::graph;

namespace {

constexpr int64_t kMaxFoldedElements = 1 << 16;

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
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) { return std::optional(a / b); },
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        bool overflow = false;
        if (b.isZero())
          return std::nullopt; // Left for the runtime to report.
        APInt q = a.sdiv_ov(b, overflow);
        if (overflow)
          return std::nullopt;
        return q;
      });
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) {
        return std::optional(llvm::maximum(a, b));
      },
      [](const APInt &a, const APInt &b) {
        return std::optional(a.sge(b) ? a : b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  if (getLhs() == getRhs())
    return getLhs();
  return foldBinaryConstants(
      adaptor.getOperands(), getType(),
      [](const APFloat &a, const APFloat &b) {
        return std::optional(llvm::minimum(a, b));
      },
      [](const APInt &a, const APInt &b) {
        return std::optional(a.sle(b) ? a : b);
      });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto pred = intSplat(adaptor.getPred()))
    return pred->isOne() ? getOnTrue() : getOnFalse();
  return {};
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions and data movement
//===----------------------------------------------------------------------===//

OpFoldResult ReduceSumOp::fold(FoldAdaptor) {
  return getDims().empty() ? getOperand() : OpFoldResult();
}
OpFoldResult ReduceMaxOp::fold(FoldAdaptor) {
  return getDims().empty() ? getOperand() : OpFoldResult();
}
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) {
  return getDims().empty() ? getOperand() : OpFoldResult();
}

/// A splat constant of `type` with `operand`'s splat value, if it is one.
static OpFoldResult resplat(Attribute operand, Type type) {
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(operand))
    return SplatElementsAttr::get(cast<ShapedType>(type),
                                  splat.getSplatValue<Attribute>());
  return {};
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor adaptor) {
  // Same type with strictly increasing dims means the identity.
  if (getOperand().getType() == getType())
    return getOperand();
  return resplat(adaptor.getOperand(), getType());
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
  return resplat(adaptor.getOperand(), getType());
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  // A slice whose result has the operand's shape takes every element.
  if (getOperand().getType() == getType())
    return getOperand();
  return resplat(adaptor.getOperand(), getType());
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
