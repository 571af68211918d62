//===- ShapeOps.cpp - Constants, broadcasts, reshapes, slices -------------===//
//
// Data movement with static shapes. The ops whose positions are data in
// StableHLO, dynamic_slice and dynamic_update_slice, are static slices and
// paddings along the dimensions whose start folds to a constant (JAX
// computed it from constants, or an unrolled loop's counter) and gathers
// of the clamped positions along the others (`w[i]` at a computed i, such
// as an argmax).
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

#include "trainc/Dialect/Graph/GraphBuilders.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {

LogicalResult lowerConstant(OpContext &ctx) {
  auto value = dyn_cast_or_null<ElementsAttr>(ctx.op->getAttr("value"));
  if (!value || !isa<DenseElementsAttr, DenseResourceElementsAttr>(value))
    return ctx.error() << "needs a dense 'value'";
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    ctx.setResult(0, ctx.builder.create<ConstantOp>(ctx.loc, dense));
    return success();
  }
  return ctx.error() << "with a dense_resource value is not supported";
}

LogicalResult lowerIota(OpContext &ctx) {
  auto dim = ctx.integer("iota_dimension");
  if (failed(dim))
    return failure();
  auto type = ctx.resultType();
  if (*dim < 0 || *dim >= type.getRank())
    return ctx.error() << "has iota_dimension " << *dim
                       << " outside the result's rank " << type.getRank();
  if (type.getElementType().isInteger(1))
    return ctx.error() << "of i1 is not supported";
  ctx.setResult(0, ctx.builder.create<IotaOp>(ctx.loc, type, *dim));
  return success();
}

/// graph.broadcast_in_dim needs increasing dims: an operand whose dims are
/// not in order is transposed into that order first.
LogicalResult lowerBroadcastInDim(OpContext &ctx) {
  auto dims = ctx.ints("broadcast_dimensions");
  if (failed(dims))
    return failure();
  auto operandType = ctx.operandType(0);
  auto resultType = ctx.resultType();
  if (static_cast<int64_t>(dims->size()) != operandType.getRank())
    return ctx.error() << "has " << dims->size()
                       << " broadcast_dimensions for an operand of rank "
                       << operandType.getRank();
  for (auto [i, d] : llvm::enumerate(*dims))
    if (d < 0 || d >= resultType.getRank() ||
        (operandType.getDimSize(i) != 1 &&
         operandType.getDimSize(i) != resultType.getDimSize(d)))
      return ctx.error() << "maps operand dimension " << i << " (size "
                         << operandType.getDimSize(i)
                         << ") to result dimension " << d
                         << ", which does not fit the result " << resultType;
  SmallVector<int64_t> order(dims->size());
  std::iota(order.begin(), order.end(), 0);
  llvm::stable_sort(
      order, [&](int64_t a, int64_t b) { return (*dims)[a] < (*dims)[b]; });
  Value x = ctx.operand(0);
  SmallVector<int64_t> sorted;
  for (int64_t i : order)
    sorted.push_back((*dims)[i]);
  if (!llvm::is_sorted(order))
    x = ctx.transpose(x, order);
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i] == sorted[i - 1])
      return ctx.error() << "lists result dimension " << sorted[i]
                         << " twice in broadcast_dimensions";
  if (tensorType(x) == resultType)
    ctx.setResult(0, x);
  else
    ctx.setResult(0, ctx.create<BroadcastInDimOp>(resultType, x, sorted));
  return success();
}

/// The operand's dimensions go last.
LogicalResult lowerBroadcast(OpContext &ctx) {
  int64_t rank = ctx.operandType(0).getRank();
  int64_t lead = ctx.resultType().getRank() - rank;
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(lead + d);
  ctx.setResult(
      0, ctx.create<BroadcastInDimOp>(ctx.resultType(), ctx.operand(0), dims));
  return success();
}

LogicalResult lowerReshape(OpContext &ctx) {
  if (ctx.operandType(0).getNumElements() != ctx.resultType().getNumElements())
    return ctx.error() << "changes the number of elements: "
                       << ctx.operandType(0) << " to " << ctx.resultType();
  ctx.setResult(0, ctx.reshape(ctx.operand(0), ctx.resultType().getShape()));
  return success();
}

LogicalResult lowerTranspose(OpContext &ctx) {
  auto permutation = ctx.ints("permutation");
  if (failed(permutation))
    return failure();
  ctx.setResult(0, ctx.transpose(ctx.operand(0), *permutation));
  return success();
}

LogicalResult lowerSlice(OpContext &ctx) {
  auto start = ctx.ints("start_indices");
  auto limit = ctx.ints("limit_indices");
  auto strides = ctx.ints("strides");
  if (failed(start) || failed(limit) || failed(strides))
    return failure();
  ctx.setResult(0, ctx.slice(ctx.operand(0), *start, *limit, *strides));
  return success();
}

namespace {

/// A start index of dynamic_slice / dynamic_update_slice along one
/// dimension, clamped into [0, dim - size] as the specification says: a
/// number when it folds to a constant, else an i64 scalar computed from
/// the data.
struct Start {
  std::optional<int64_t> constant;
  Value computed;
};

/// The starts (operands `first`...) for windows of `sizes` in `shape`.
FailureOr<SmallVector<Start>> startsOf(OpContext &ctx, unsigned first,
                                       ArrayRef<int64_t> shape,
                                       ArrayRef<int64_t> sizes) {
  if (ctx.numOperands() - first != shape.size())
    return ctx.error() << "has " << ctx.numOperands() - first
                       << " start indices for rank " << shape.size();
  SmallVector<Start> starts;
  auto scalar = RankedTensorType::get({}, ctx.builder.getI64Type());
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t highest = shape[d] - sizes[d];
    Value operand = ctx.operand(first + d);
    std::optional<DenseElementsAttr> value = ctx.constantOf(operand);
    if (value && value->getElementType().isIntOrIndex() &&
        value->getNumElements() == 1) {
      APInt v = *value->getValues<APInt>().begin();
      int64_t s = value->getElementType().isUnsignedInteger()
                      ? static_cast<int64_t>(v.getZExtValue())
                      : v.getSExtValue();
      starts.push_back({std::clamp<int64_t>(s, 0, highest), Value()});
      continue;
    }
    if (tensorType(operand).getElementType() != scalar.getElementType())
      operand = ctx.create<ConvertOp>(scalar, operand);
    Value clamped = ctx.create<MaxOp>(
        ctx.create<MinOp>(operand, ctx.splat(scalar, double(highest))),
        ctx.splat(scalar, 0));
    starts.push_back({std::nullopt, clamped});
  }
  return starts;
}

/// 0, 1, ..., n - 1 as i64 (graph.iota).
Value positionsOf(OpContext &ctx, int64_t n) {
  return ctx.builder.create<IotaOp>(
      ctx.loc, RankedTensorType::get({n}, ctx.builder.getI64Type()), 0);
}

/// `x`'s elements at `positions` (i64, 1-D) along `dim`.
Value gatherDim(OpContext &ctx, Value x, Value positions, int64_t dim) {
  return ctx.create<GatherOp>(x, positions, dim);
}

/// `x` (size m along `dim`) placed at the computed `start` of a dimension
/// of size n, `value` (a scalar tensor) elsewhere: the gather of x at
/// clamp(i - start, 0, m - 1), i < n, selected where i - start is in
/// [0, m).
Value placeDim(OpContext &ctx, Value x, Value value, int64_t dim, Value start,
               int64_t n) {
  auto type = tensorType(x);
  int64_t m = type.getDimSize(dim);
  auto window = RankedTensorType::get({n}, ctx.builder.getI64Type());
  Value from = ctx.broadcastScalar(start, {n});
  Value offsets = ctx.create<SubOp>(positionsOf(ctx, n), from);
  Value below = ctx.create<CompareOp>(ComparisonDirection::LT, offsets,
                                      ctx.splat(window, double(m)));
  Value notBefore = ctx.create<CompareOp>(ComparisonDirection::GE, offsets,
                                          ctx.splat(window, 0));
  Value inside =
      ctx.create<SelectOp>(notBefore, below, ctx.splat(tensorType(below), 0));
  Value at = ctx.create<MaxOp>(
      ctx.create<MinOp>(offsets, ctx.splat(window, double(m - 1))),
      ctx.splat(window, 0));
  Value placed = gatherDim(ctx, x, at, dim);
  auto placedType = tensorType(placed);
  Value mask =
      ctx.create<BroadcastInDimOp>(placedType.clone(ctx.builder.getI1Type()),
                                   inside, ArrayRef<int64_t>{dim});
  return ctx.create<SelectOp>(
      mask, placed, ctx.broadcastScalar(value, placedType.getShape()));
}

/// `x` padded with `value` (a scalar tensor) by `low` and `high` elements
/// (each >= 0) on dimension `dim`.
Value padDim(OpContext &ctx, Value x, Value value, int64_t dim, int64_t low,
             int64_t high) {
  auto type = tensorType(x);
  SmallVector<Value> parts;
  auto filler = [&](int64_t size) {
    SmallVector<int64_t> shape(type.getShape());
    shape[dim] = size;
    return ctx.broadcastScalar(value, shape);
  };
  if (low > 0)
    parts.push_back(filler(low));
  parts.push_back(x);
  if (high > 0)
    parts.push_back(filler(high));
  if (parts.size() == 1)
    return x;
  return ctx.concatenate(parts, dim);
}

} // namespace

LogicalResult lowerDynamicSlice(OpContext &ctx) {
  auto sizes = ctx.ints("slice_sizes");
  if (failed(sizes))
    return failure();
  auto shape = ctx.operandType(0).getShape();
  if (sizes->size() != shape.size())
    return ctx.error() << "has " << sizes->size() << " slice_sizes for rank "
                       << shape.size();
  for (auto [d, size] : llvm::enumerate(*sizes))
    if (size < 0 || size > shape[d])
      return ctx.error() << "slice size " << size << " of dimension " << d
                         << " is outside [0, " << shape[d] << "]";
  auto starts = startsOf(ctx, 1, shape, *sizes);
  if (failed(starts))
    return failure();
  // Constant starts slice; the others slice nothing here and gather the
  // positions start + j, j < size, below.
  SmallVector<int64_t> begin, limits;
  for (auto [d, start] : llvm::enumerate(*starts)) {
    begin.push_back(start.constant.value_or(0));
    limits.push_back(start.constant ? *start.constant + (*sizes)[d] : shape[d]);
  }
  Value result = ctx.slice(ctx.operand(0), begin, limits);
  for (auto [d, start] : llvm::enumerate(*starts)) {
    if (start.constant)
      continue;
    int64_t size = (*sizes)[d];
    Value from = ctx.broadcastScalar(start.computed, {size});
    result = gatherDim(ctx, result,
                       ctx.create<AddOp>(from, positionsOf(ctx, size)), d);
  }
  ctx.setResult(0, result);
  return success();
}

/// select(inside, update padded to the operand's shape, operand), with the
/// padding and the mask built at compile time along dimensions whose
/// position is constant, and by placeDim's gather and comparisons along the
/// others.
LogicalResult lowerDynamicUpdateSlice(OpContext &ctx) {
  auto type = ctx.operandType(0);
  auto updateType = ctx.operandType(1);
  if (updateType.getRank() != type.getRank())
    return ctx.error() << "updates a rank-" << type.getRank()
                       << " operand with a rank-" << updateType.getRank()
                       << " update";
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (updateType.getDimSize(d) > type.getDimSize(d))
      return ctx.error() << "has an update larger than the operand in "
                         << "dimension " << d;
  auto starts = startsOf(ctx, 2, type.getShape(), updateType.getShape());
  if (failed(starts))
    return failure();
  auto scalarType = RankedTensorType::get({}, type.getElementType());
  auto boolType = RankedTensorType::get({}, ctx.builder.getI1Type());
  // The update and an all-true mask of its shape, each placed into the
  // operand's shape, one dimension at a time.
  Value padded = ctx.operand(1);
  Value inside = ctx.splat(
      RankedTensorType::get(updateType.getShape(), ctx.builder.getI1Type()), 1);
  for (auto [d, start] : llvm::enumerate(*starts)) {
    int64_t n = type.getDimSize(d);
    for (auto [value, fill] : {std::pair{&padded, ctx.splat(scalarType, 0)},
                               std::pair{&inside, ctx.splat(boolType, 0)}})
      *value = start.constant
                   ? padDim(ctx, *value, fill, d, *start.constant,
                            n - *start.constant - updateType.getDimSize(d))
                   : placeDim(ctx, *value, fill, d, start.computed, n);
  }
  ctx.setResult(0, ctx.create<SelectOp>(inside, padded, ctx.operand(0)));
  return success();
}

LogicalResult lowerConcatenate(OpContext &ctx) {
  auto dim = ctx.integer("dimension");
  if (failed(dim))
    return failure();
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.numOperands(); ++i)
    inputs.push_back(ctx.operand(i));
  if (inputs.size() == 1) {
    ctx.setResult(0, inputs[0]);
    return success();
  }
  ctx.setResult(0, ctx.concatenate(inputs, *dim));
  return success();
}

/// A gather along each reversed dimension at the constant positions
/// n-1, ..., 0.
LogicalResult lowerReverse(OpContext &ctx) {
  auto dims = ctx.ints("dimensions");
  if (failed(dims))
    return failure();
  int64_t rank = ctx.operandType(0).getRank();
  for (int64_t d : *dims)
    if (d < 0 || d >= rank)
      return ctx.error() << "reverses dimension " << d << " of a rank-" << rank
                         << " operand";
  ctx.setResult(0, buildReverse(ctx.builder, ctx.loc, ctx.operand(0), *dims));
  return success();
}

/// GraphBuilders.h's buildPad: interior padding by interleaving, edge
/// padding by concatenation, negative edge padding by slicing the padded
/// sequence (so -5 below and 10 above a dimension of 3 leaves 8).
LogicalResult lowerPad(OpContext &ctx) {
  auto low = ctx.ints("edge_padding_low");
  auto high = ctx.ints("edge_padding_high");
  auto interior = ctx.ints("interior_padding");
  if (failed(low) || failed(high) || failed(interior))
    return failure();
  Value x = ctx.operand(0);
  auto type = tensorType(x);
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(low->size()) != rank ||
      static_cast<int64_t>(high->size()) != rank ||
      static_cast<int64_t>(interior->size()) != rank)
    return ctx.error() << "needs one low, high and interior padding per "
                          "dimension (rank "
                       << rank << ")";
  for (int64_t d = 0; d < rank; ++d) {
    int64_t i = (*interior)[d], n = type.getDimSize(d);
    if (i < 0)
      return ctx.error() << "has negative interior padding " << i;
    int64_t dilated = n == 0 ? 0 : n + (n - 1) * i;
    if (dilated + (*low)[d] + (*high)[d] < 0)
      return ctx.error() << "removes more than all of dimension " << d;
  }
  ctx.setResult(0, buildPad(ctx.builder, ctx.loc, x, ctx.operand(1), *low,
                            *high, *interior));
  return success();
}

LogicalResult lowerOptimizationBarrier(OpContext &ctx) {
  for (unsigned i = 0; i < ctx.numOperands(); ++i)
    ctx.setResult(i, ctx.operand(i));
  return success();
}

} // namespace trainc::stablehlo_import
