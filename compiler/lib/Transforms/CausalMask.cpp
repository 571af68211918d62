//===- CausalMask.cpp - Reading a causal mask out of the scores' terms ---===//
//
// Whether a mask of attention's scores is causal (key j seen by query i
// exactly when j <= i + Sk - Sq), for RecognizeAttention.cpp: a select's
// condition, or an additive term of 0 and a masking fill. Exporters build
// these from iotas that no folder materializes ([Sq, Sk] is too large), so
// a condition made from constants and iotas is evaluated element by
// element here.
//
//===----------------------------------------------------------------------===//

#include "RecognizeUtil.h"
#include "trainc/Dialect/Graph/CompareElements.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::recognize {
namespace {

/// Whether `shape` ends in [Sq, Sk].
bool endsInScores(ArrayRef<int64_t> shape, int64_t sq, int64_t sk) {
  return shape.size() >= 2 && shape[shape.size() - 2] == sq &&
         shape.back() == sk;
}

/// Whether flat element k of a tensor ending in [Sq, Sk] lies past its
/// query's causal window: key j > i + Sk - Sq for query i.
bool pastWindow(int64_t k, int64_t sq, int64_t sk) {
  int64_t i = (k / sk) % sq, j = k % sk;
  return j > i + sk - sq;
}

/// The operand of `v`'s broadcast or reshape when every [Sq, Sk] slice of
/// `v` is a whole slice of that operand (a broadcast that adds or widens
/// leading dims only; a reshape of the leading dims), else null.
Value sliceSource(Value v, int64_t sq, int64_t sk) {
  Operation *op = v.getDefiningOp();
  if (!isa_and_nonnull<BroadcastInDimOp, ReshapeOp>(op))
    return nullptr;
  Value source = op->getOperand(0);
  ArrayRef<int64_t> from = cast<RankedTensorType>(source.getType()).getShape();
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  if (!endsInScores(from, sq, sk) ||
      !endsInScores(cast<RankedTensorType>(v.getType()).getShape(), sq, sk))
    return nullptr;
  if (auto spread = dyn_cast<BroadcastInDimOp>(op)) {
    ArrayRef<int64_t> dims = spread.getDims();
    if (dims[dims.size() - 2] != rank - 2 || dims.back() != rank - 1)
      return nullptr;
  }
  return source;
}

/// An element of a tensor made from constants: an integer, or a float.
struct Element {
  APInt integer;
  std::optional<APFloat> real;
};

/// Element `index` of `v` when `v` is made from constants and integer
/// iotas by broadcasts, reshapes, compares, integer adds and subtracts and
/// selects alone, else nullopt: a causal condition compares iotas (JAX's
/// tril: iota + 0 >= iota, then a select of true and false) or iotas
/// broadcast to [Sq, Sk] (Hugging Face's), which no folder materializes
/// (too many elements). Values, not attributes: no context lookup per
/// element.
std::optional<Element> constantElement(Value v, ArrayRef<int64_t> index,
                                       int depth = 8) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v.getType()).getShape();
  auto flatten = [&] {
    int64_t flat = 0;
    for (auto [i, size] : llvm::zip(index, shape))
      flat = flat * size + i;
    return flat;
  };
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    int64_t at = attr.isSplat() ? 0 : flatten();
    if (isa<FloatType>(attr.getElementType()))
      return Element{APInt(), attr.getValues<APFloat>()[at]};
    if (attr.getElementType().isIntOrIndex())
      return Element{attr.getValues<APInt>()[at], std::nullopt};
    return std::nullopt;
  }
  Operation *op = v.getDefiningOp();
  if (!op || depth == 0)
    return std::nullopt;
  Type elementType = getElementTypeOrSelf(v);
  if (auto iota = dyn_cast<IotaOp>(op)) {
    if (!elementType.isInteger())
      return std::nullopt;
    return Element{APInt(elementType.getIntOrFloatBitWidth(),
                         uint64_t(index[iota.getDim()])),
                   std::nullopt};
  }
  if (isa<AddOp, SubOp>(op) && elementType.isInteger()) {
    std::optional<Element> lhs =
        constantElement(op->getOperand(0), index, depth - 1);
    std::optional<Element> rhs =
        constantElement(op->getOperand(1), index, depth - 1);
    if (!lhs || !rhs)
      return std::nullopt;
    return Element{isa<AddOp>(op) ? lhs->integer + rhs->integer
                                  : lhs->integer - rhs->integer,
                   std::nullopt};
  }
  if (auto sel = dyn_cast<SelectOp>(op)) {
    std::optional<Element> pred =
        constantElement(sel.getPred(), index, depth - 1);
    if (!pred)
      return std::nullopt;
    return constantElement(pred->integer.isOne() ? sel.getOnTrue()
                                                 : sel.getOnFalse(),
                           index, depth - 1);
  }
  if (auto spread = dyn_cast<BroadcastInDimOp>(op)) {
    ArrayRef<int64_t> from = spread.getOperand().getType().getShape();
    SmallVector<int64_t> at;
    for (auto [i, d] : llvm::enumerate(spread.getDims()))
      at.push_back(from[i] == 1 ? 0 : index[d]);
    return constantElement(spread.getOperand(), at, depth - 1);
  }
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    ArrayRef<int64_t> from = reshape.getOperand().getType().getShape();
    SmallVector<int64_t> at(from.size());
    for (int64_t flat = flatten(), d = int64_t(from.size()) - 1; d >= 0; --d) {
      at[d] = flat % from[d];
      flat /= from[d];
    }
    return constantElement(reshape.getOperand(), at, depth - 1);
  }
  if (auto compare = dyn_cast<CompareOp>(op)) {
    std::optional<Element> lhs =
        constantElement(compare.getLhs(), index, depth - 1);
    std::optional<Element> rhs =
        constantElement(compare.getRhs(), index, depth - 1);
    if (!lhs || !rhs)
      return std::nullopt;
    ComparisonDirection direction = compare.getDirection();
    bool holds =
        lhs->real ? compareFloats(*lhs->real, *rhs->real, direction)
                  : compareIntegers(lhs->integer, rhs->integer,
                                    comparesUnsigned(
                                        getElementTypeOrSelf(compare.getLhs())),
                                    direction);
    return Element{APInt(1, holds ? 1 : 0), std::nullopt};
  }
  return std::nullopt;
}

/// The most elements of a condition not itself a constant that are
/// checked one by one (about 0.3 us each: 1.4 s at the most).
constexpr int64_t kMaxCausalElements = int64_t(1) << 22;

} // namespace

/// True when `cond`, made from constants (constantElement), masks exactly
/// the keys after each query (j > i + Sk - Sq), i.e. causal attention;
/// `maskedWhen` is the value of cond at masked positions.
bool isCausalCondition(Value cond, int64_t sq, int64_t sk, bool maskedWhen) {
  // Leading broadcasts and reshapes repeat whole [Sq, Sk] slices.
  while (Value source = sliceSource(cond, sq, sk))
    cond = source;
  auto type = cast<RankedTensorType>(cond.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (!endsInScores(shape, sq, sk))
    return false;
  auto causalAt = [&](int64_t k, bool value) {
    return (value == maskedWhen) == pastWindow(k, sq, sk);
  };
  // Every [Sq, Sk] slice (over leading batch/head dims) must be causal.
  DenseElementsAttr attr;
  if (matchPattern(cond, m_Constant(&attr))) {
    int64_t k = 0;
    for (bool v : attr.getValues<bool>())
      if (!causalAt(k++, v))
        return false;
    return true;
  }
  if (type.getNumElements() > kMaxCausalElements)
    return false;
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t k = 0, n = type.getNumElements(); k < n; ++k) {
    std::optional<Element> value = constantElement(cond, index);
    if (!value || value->real || !causalAt(k, value->integer.isOne()))
      return false;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return true;
}

/// Whether the fill `f` of a mask, scaled by the scores' outer scale,
/// still masks: -inf, or so negative (-1e4 or less) that its softmax
/// weight is 0. Not +inf, nor a positive fill that overflows to it.
bool masksAfterScale(double f, double outerScale) {
  return outerScale > 0 && f * outerScale <= -1e4;
}

/// Whether the additive term `t` of scores ending in [Sq, Sk] is a causal
/// mask: a constant of 0 where key j is seen and fills elsewhere, or
/// select(cond, 0, fill) or select(cond, fill, 0), through
/// broadcasts and reshapes that keep its slices, with a fill that masks
/// and a causal cond (Hugging Face's eager attention without an attention
/// mask). With Sk >= Sq every query row sees a key, so the masked
/// probabilities are exactly 0 either way, and the term becomes
/// graph.attention's `causal`: no [Sq, Sk] tensor, and causal tiles skip
/// the masked half. (Where another term masks every key a row sees, the
/// fill's uniform weights would have spread over the later keys too; with
/// `causal` they stay on the seen ones, as for a causal select.)
bool isCausalTerm(Value t, int64_t sq, int64_t sk, double outerScale) {
  if (sk < sq)
    return false;
  while (Value source = sliceSource(t, sq, sk))
    t = source;
  // A constant term (PyTorch's TorchScript exporter writes
  // scaled_dot_product_attention's is_causal as one): 0 where seen, a
  // masking fill elsewhere.
  DenseElementsAttr constant;
  if (matchPattern(t, m_Constant(&constant))) {
    if (!isa<FloatType>(constant.getElementType()) ||
        !endsInScores(constant.getType().getShape(), sq, sk))
      return false;
    int64_t k = 0;
    for (APFloat value : constant.getValues<APFloat>()) {
      bool masked = pastWindow(k++, sq, sk), lost;
      value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      double x = value.convertToDouble();
      if (masked ? !masksAfterScale(x, outerScale) : x != 0)
        return false;
    }
    return true;
  }
  auto sel = t.getDefiningOp<SelectOp>();
  if (!sel)
    return false;
  std::optional<double> onTrue = splatOf(sel.getOnTrue()),
                        onFalse = splatOf(sel.getOnFalse());
  if (!onTrue || !onFalse)
    return false;
  bool fillOnTrue = *onFalse == 0 && masksAfterScale(*onTrue, outerScale);
  bool fillOnFalse = *onTrue == 0 && masksAfterScale(*onFalse, outerScale);
  return (fillOnTrue || fillOnFalse) &&
         isCausalCondition(sel.getPred(), sq, sk, fillOnTrue);
}

} // namespace trainc::recognize
