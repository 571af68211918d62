//===- DataMovementGradients.cpp - VJP rules of reductions and movement ---===//
//
// Reductions, broadcast, reshape, transpose, slice, concatenate, gather and
// scatter_add. Each rule moves the result's cotangent `g` back to where the
// operand's elements came from:
//
//   reduce_sum        broadcast g back over the reduced dims
//   reduce_mean       the same, divided by the number of reduced elements
//   reduce_max        g split evenly among the positions equal to the max
//   reduce_prod       g times the product of the other reduced elements
//   broadcast_in_dim  g summed over the broadcast dims (sumToOperand)
//   reshape           g reshaped to the operand's shape
//   transpose         g transposed by the inverse permutation
//   slice             g placed among zeros (see sliceVjp)
//   concatenate       slices of g, one per operand
//   gather            scatter_add of g at the same indices (indices: none)
//   scatter_add       gather of g at the same indices (indices: none)
//   extract_patches   fold_patches of g (each patch summed back where it
//                     was read)
//   fold_patches      extract_patches of g
//   all_reduce        over the data axis: all_reduce of g, every rank's
//                     result being the sum of every rank's operand (a
//                     batch statistic summed in the forward pass, summed
//                     again in the backward: --sync-batch-norm); see
//                     AllReduceGradient
//
// iota and constant have no operands and need no rule.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace trainc::graph {
namespace {

/// The zeros a slice's gradient is padded with: -0, the additive identity
/// (x + -0 == x for every x, -0 included; +0 turns -0 into +0), so that
/// sums of the padded gradients of several slices of one tensor are
/// exactly their concatenation, which canonicalization makes them.
Value zerosOf(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
              Type element) {
  return splatConstant(b, loc, RankedTensorType::get(shape, element), -0.0);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A widened sum's (f32 of a 16-bit operand) cotangent is narrowed to the
/// operand's type first.
void reduceSumVjp(ReduceSumOp op, OpBuilder &b, Value g,
                  SmallVectorImpl<Value> &out) {
  RankedTensorType operand = typeOf(op.getOperand());
  if (typeOf(g).getElementType() != operand.getElementType())
    g = b.createOrFold<ConvertOp>(
        op.getLoc(),
        RankedTensorType::get(typeOf(g).getShape(), operand.getElementType()),
        g);
  out.push_back(broadcastBack(b, op.getLoc(), g, operand, op.getDims()));
}

/// Scaled before broadcasting, on the smaller tensor.
void reduceMeanVjp(ReduceMeanOp op, OpBuilder &b, Value g,
                   SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  RankedTensorType type = typeOf(op.getOperand());
  int64_t count = 1;
  for (int64_t d : op.getDims())
    count *= type.getDimSize(d);
  Value scaled = b.createOrFold<MulOp>(
      loc, g, splatConstant(b, loc, typeOf(g), 1.0 / double(count)));
  out.push_back(broadcastBack(b, loc, scaled, type, op.getDims()));
}

/// As torch.amax: every position equal to the max gets an equal share,
/// g / (number of ties). A NaN max matches no position, which gets 0.
/// The tie count is in the operand's type: exact up to 256 ties in bf16,
/// 2048 in f16, far beyond what real data produces.
void reduceMaxVjp(ReduceMaxOp op, OpBuilder &b, Value g,
                  SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getOperand();
  RankedTensorType type = typeOf(x);
  ArrayRef<int64_t> dims = op.getDims();
  Value isMax =
      b.create<CompareOp>(loc, ComparisonDirection::EQ, x,
                          broadcastBack(b, loc, op.getResult(), type, dims));
  Value ties = b.createOrFold<ReduceSumOp>(
      loc, b.create<ConvertOp>(loc, type, isMax), dims);
  Value share =
      broadcastBack(b, loc, b.createOrFold<DivOp>(loc, g, ties), type, dims);
  out.push_back(b.createOrFold<SelectOp>(loc, isMax, share,
                                         splatConstant(b, loc, type, 0.0)));
}

/// g times the product of the other elements of x's reduced set, which
/// zeros make three cases (as JAX's rule, which takes exclusive cumulative
/// products; here a count of the zeros does it):
///   - no zero: g * p / x, p the product;
///   - one zero: g * (the product of the nonzeros) at the zero, 0 elsewhere;
///   - two or more: 0 everywhere.
/// g * p / x rounds twice where the exclusive products round once per
/// factor, and overflows where p does but the product without x would not.
void reduceProdVjp(ReduceProdOp op, OpBuilder &b, Value g,
                   SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getOperand();
  RankedTensorType type = typeOf(x);
  ArrayRef<int64_t> dims = op.getDims();
  auto back = [&](Value v) { return broadcastBack(b, loc, v, type, dims); };
  Value zero = splatConstant(b, loc, type, 0.0);
  Value isZero = b.create<CompareOp>(loc, ComparisonDirection::EQ, x, zero);
  // x with its zeros made ones, and the product of the nonzeros.
  Value nonzero = b.createOrFold<SelectOp>(loc, isZero,
                                           splatConstant(b, loc, type, 1.0), x);
  Value gp = b.createOrFold<MulOp>(
      loc, g, b.createOrFold<ReduceProdOp>(loc, nonzero, dims));
  Value zeros = b.createOrFold<ReduceSumOp>(
      loc, b.create<ConvertOp>(loc, type, isZero), dims);
  auto zerosAre = [&](double n) {
    return back(b.create<CompareOp>(loc, ComparisonDirection::EQ, zeros,
                                    splatConstant(b, loc, typeOf(zeros), n)));
  };
  Value atTheZero = b.createOrFold<SelectOp>(
      loc, zerosAre(1.0), b.createOrFold<SelectOp>(loc, isZero, back(gp), zero),
      zero);
  out.push_back(b.createOrFold<SelectOp>(
      loc, zerosAre(0.0), b.createOrFold<DivOp>(loc, back(gp), nonzero),
      atTheZero));
}

//===----------------------------------------------------------------------===//
// Shape changes
//===----------------------------------------------------------------------===//

void broadcastInDimVjp(BroadcastInDimOp op, OpBuilder &b, Value g,
                       SmallVectorImpl<Value> &out) {
  out.push_back(
      sumToOperand(b, op.getLoc(), g, typeOf(op.getOperand()), op.getDims()));
}

void reshapeVjp(ReshapeOp op, OpBuilder &b, Value g,
                SmallVectorImpl<Value> &out) {
  out.push_back(
      b.createOrFold<ReshapeOp>(op.getLoc(), op.getOperand().getType(), g));
}

void transposeVjp(TransposeOp op, OpBuilder &b, Value g,
                  SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> permutation = op.getPermutation();
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [i, p] : llvm::enumerate(permutation))
    inverse[p] = static_cast<int64_t>(i);
  out.push_back(b.createOrFold<TransposeOp>(op.getLoc(), g, inverse));
}

//===----------------------------------------------------------------------===//
// Slice and concatenate
//===----------------------------------------------------------------------===//

/// Pads `v` along `dim` with `before` and `after` zeros.
Value padWithZeros(OpBuilder &b, Location loc, Value v, int64_t dim,
                   int64_t before, int64_t after) {
  RankedTensorType type = typeOf(v);
  SmallVector<Value> parts;
  SmallVector<int64_t> shape(type.getShape());
  if (before > 0) {
    shape[dim] = before;
    parts.push_back(zerosOf(b, loc, shape, type.getElementType()));
  }
  parts.push_back(v);
  if (after > 0) {
    shape[dim] = after;
    parts.push_back(zerosOf(b, loc, shape, type.getElementType()));
  }
  if (parts.size() == 1)
    return v;
  return b.createOrFold<ConcatenateOp>(loc, parts, dim);
}

/// Spreads `v`'s n elements along `dim` to positions 0, s, 2s, ...,
/// (n-1)s of a length (n-1)s+1 tensor, zeros between: v[..., n, ...] is
/// reshaped to [..., n, 1, ...], joined with zeros [..., n, s-1, ...] along
/// the new dimension, flattened back to [..., n*s, ...], and the trailing
/// s-1 zeros sliced off.
Value interleaveZeros(OpBuilder &b, Location loc, Value v, int64_t dim,
                      int64_t stride) {
  RankedTensorType type = typeOf(v);
  Type element = type.getElementType();
  int64_t n = type.getDimSize(dim);
  SmallVector<int64_t> split(type.getShape());
  split.insert(split.begin() + dim + 1, 1);
  Value column =
      b.createOrFold<ReshapeOp>(loc, RankedTensorType::get(split, element), v);
  split[dim + 1] = stride - 1;
  Value spread = b.createOrFold<ConcatenateOp>(
      loc, ValueRange{column, zerosOf(b, loc, split, element)}, dim + 1);
  SmallVector<int64_t> flat(type.getShape());
  flat[dim] = n * stride;
  spread = b.createOrFold<ReshapeOp>(loc, RankedTensorType::get(flat, element),
                                     spread);
  SmallVector<int64_t> start(flat.size(), 0), limit(flat),
      strides(flat.size(), 1);
  limit[dim] = (n - 1) * stride + 1;
  return b.createOrFold<SliceOp>(loc, spread, start, limit, strides);
}

/// g placed where the slice read, zeros elsewhere, one dimension at a time:
/// a strided dimension first spreads g's elements `stride` apart
/// (interleaveZeros), then zeros pad it to the operand's size before
/// `start` and after the last element read. Only dense data movement
/// (reshape, concatenate, slice) is used: no index constants and no
/// scatter, so the result is deterministic and the ops stay shardable.
void sliceVjp(SliceOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  RankedTensorType type = typeOf(op.getOperand());
  if (typeOf(g).getNumElements() == 0) {
    out.push_back(splatConstant(b, loc, type, 0.0));
    return;
  }
  Value v = g;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t start = op.getStart()[d], stride = op.getStrides()[d];
    int64_t n = typeOf(g).getDimSize(d);
    if (stride > 1 && n > 1)
      v = interleaveZeros(b, loc, v, d, stride);
    int64_t span = (n - 1) * stride + 1;
    v = padWithZeros(b, loc, v, d, start, type.getDimSize(d) - start - span);
  }
  out.push_back(v);
}

void concatenateVjp(ConcatenateOp op, OpBuilder &b, Value g,
                    SmallVectorImpl<Value> &out) {
  int64_t dim = op.getDim();
  RankedTensorType gType = typeOf(g);
  SmallVector<int64_t> start(gType.getRank(), 0), limit(gType.getShape()),
      strides(gType.getRank(), 1);
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    int64_t size = typeOf(input).getDimSize(dim);
    start[dim] = offset;
    limit[dim] = offset + size;
    offset += size;
    out.push_back(
        isFloatTensorType(input.getType())
            ? b.createOrFold<SliceOp>(op.getLoc(), g, start, limit, strides)
            : Value());
  }
}

//===----------------------------------------------------------------------===//
// Gather and scatter_add: each is the other's transpose
//===----------------------------------------------------------------------===//

/// Duplicate indices accumulate, as they must: a row gathered twice gets
/// both cotangents. With a padding_index p, the slices taken at p (or at
/// p - n, the same slice) get none: their cotangents are zeroed first.
void gatherVjp(GatherOp op, OpBuilder &b, Value g,
               SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  if (IntegerAttr p = op.getPaddingIndexAttr()) {
    RankedTensorType idx = typeOf(op.getIndices()), gt = typeOf(g);
    int64_t n = typeOf(op.getOperand()).getDimSize(op.getAxis());
    // Negative indices count from the end: p or p - n.
    Value i = op.getIndices();
    Value fromStart = b.create<SelectOp>(
        loc,
        b.create<CompareOp>(loc, ComparisonDirection::LT, i,
                            splatConstant(b, loc, idx, 0)),
        b.create<AddOp>(loc, i, splatConstant(b, loc, idx, double(n))), i);
    Value padding =
        b.create<CompareOp>(loc, ComparisonDirection::EQ, fromStart,
                            splatConstant(b, loc, idx, double(p.getInt())));
    // The indices' dimensions are the cotangent's axis.. axis + rank.
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < idx.getRank(); ++d)
      dims.push_back(int64_t(op.getAxis()) + d);
    Value mask = b.create<BroadcastInDimOp>(
        loc, RankedTensorType::get(gt.getShape(), b.getI1Type()), padding,
        dims);
    g = b.create<SelectOp>(loc, mask, splatConstant(b, loc, gt, 0.0), g);
  }
  out.append({b.create<ScatterAddOp>(loc, op.getOperand().getType(), g,
                                     op.getIndices(), op.getAxis()),
              Value()});
}

void scatterAddVjp(ScatterAddOp op, OpBuilder &b, Value g,
                   SmallVectorImpl<Value> &out) {
  out.append(
      {b.createOrFold<GatherOp>(op.getLoc(), g, op.getIndices(), op.getAxis()),
       Value()});
}

void extractPatchesVjp(ExtractPatchesOp op, OpBuilder &b, Value g,
                       SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> x = typeOf(op.getOperand()).getShape();
  out.push_back(b.create<FoldPatchesOp>(
      op.getLoc(), g, op.getKernel(), op.getStrides(), op.getDilation(),
      op.getPadLow(), op.getPadHigh(), x.drop_front(2)));
}

void foldPatchesVjp(FoldPatchesOp op, OpBuilder &b, Value g,
                    SmallVectorImpl<Value> &out) {
  out.push_back(b.create<ExtractPatchesOp>(op.getLoc(), g, op.getKernel(),
                                           op.getStrides(), op.getDilation(),
                                           op.getPadLow(), op.getPadHigh()));
}

/// all_reduce over the data axis. Each data-parallel rank differentiates
/// its own loss L_r, and the partition phase then averages the ranks'
/// gradients: the objective is (1/N) sum_r L_r. Rank s's operand reaches
/// every rank's result, so its cotangent is the sum over the ranks of the
/// result cotangents, which the average then divides by N. Over the
/// tensor axis every rank computes the same loss and the rule would be the
/// identity instead (Megatron's g); no pass puts one before autodiff, so
/// it is refused rather than guessed.
struct AllReduceGradient
    : public GradientOpInterface::ExternalModel<AllReduceGradient,
                                                AllReduceOp> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b,
                         ValueRange resultCotangents,
                         SmallVectorImpl<Value> &out) const {
    auto allReduce = cast<AllReduceOp>(op);
    Value g = resultCotangents.empty() ? Value() : resultCotangents.front();
    if (!g) {
      out.push_back(Value());
      return success();
    }
    if (allReduce.getAxis() != "data")
      return op->emitOpError("over the '")
             << allReduce.getAxis()
             << "' axis has no gradient rule (only 'data', whose ranks' "
                "losses the partition phase averages)";
    out.push_back(b.create<AllReduceOp>(op->getLoc(), g, allReduce.getAxis()));
    return success();
  }
};

} // namespace

void attachDataMovementGradients(MLIRContext &context) {
  AllReduceOp::attachInterface<AllReduceGradient>(context);
  ReduceSumOp::attachInterface<Gradient<ReduceSumOp, reduceSumVjp>>(context);
  ReduceMeanOp::attachInterface<Gradient<ReduceMeanOp, reduceMeanVjp>>(context);
  ReduceMaxOp::attachInterface<Gradient<ReduceMaxOp, reduceMaxVjp>>(context);
  ReduceProdOp::attachInterface<Gradient<ReduceProdOp, reduceProdVjp>>(context);
  BroadcastInDimOp::attachInterface<
      Gradient<BroadcastInDimOp, broadcastInDimVjp>>(context);
  ReshapeOp::attachInterface<Gradient<ReshapeOp, reshapeVjp>>(context);
  TransposeOp::attachInterface<Gradient<TransposeOp, transposeVjp>>(context);
  SliceOp::attachInterface<Gradient<SliceOp, sliceVjp>>(context);
  ConcatenateOp::attachInterface<Gradient<ConcatenateOp, concatenateVjp>>(
      context);
  GatherOp::attachInterface<Gradient<GatherOp, gatherVjp>>(context);
  ScatterAddOp::attachInterface<Gradient<ScatterAddOp, scatterAddVjp>>(context);
  ExtractPatchesOp::attachInterface<
      Gradient<ExtractPatchesOp, extractPatchesVjp>>(context);
  FoldPatchesOp::attachInterface<Gradient<FoldPatchesOp, foldPatchesVjp>>(
      context);
}

} // namespace trainc::graph
