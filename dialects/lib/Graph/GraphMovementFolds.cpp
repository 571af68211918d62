//===- GraphMovementFolds.cpp - Folders of reductions and data movement ---===//
//
// The folds of GraphFolds.cpp's kind (exact, at most one pass over a small
// constant) for reductions, broadcasts, reshapes, transposes, slices,
// concatenations, gathers, iota and constants.
//
//===----------------------------------------------------------------------===//

#include "FoldUtil.h"
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
using namespace mlir;
using namespace trainc::graph;
using namespace trainc::graph::fold;

namespace {

/// Broadcasting a non-splat constant multiplies its size; fold only results
/// at the scale of shape arithmetic, and keep the compact form otherwise.
constexpr int64_t kMaxFoldedBroadcastElements = 1 << 10;

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

} // namespace

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
/// use of a data-movement op m (transpose, broadcast_in_dim, slice,
/// extract_patches): the movement then moves fewer bytes (a convolution's
/// patches, K times its input, are made in 16 bits from a 16-bit input),
/// and a weight's transpose stays next to the dot that absorbs it, reading
/// the weight's 16-bit copy.
struct HoistNarrowingConvert : public OpRewritePattern<ConvertOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvertOp op,
                                PatternRewriter &rewriter) const override {
    Operation *movement = op.getOperand().getDefiningOp();
    if (!movement ||
        !isa<TransposeOp, BroadcastInDimOp, SliceOp, ExtractPatchesOp>(
            movement) ||
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
