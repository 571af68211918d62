//===- IndexingOps.cpp - stablehlo.gather as graph.gather -----------------===//
//
// A StableHLO gather picks, for each batch position, a slice of the operand
// starting at an index vector read from `start_indices`. trainc lowers the
// gathers embeddings, jnp.take, jnp.take_along_axis and window slicing
// print: every batching dimension has slice size 1, an indexed dimension
// (start_index_map) any slice size s_k, and the other dimensions are
// sliced from 0. Then the gather is one graph.gather at linear positions:
//
//   operand   -> [batching dims..., indexed dims..., other dims...]
//             -> reshape [B * N1 * ... * NK, other dims...]
//   position  =  linear batch index * (N1 * ... * NK)
//                + sum_k (clamp(index_k, 0, N_k - s_k) + w_k) * stride_k
//                for each window offset w_k in [0, s_k)
//   result    =  graph.gather(operand, position, axis 0)
//             -> reshape and transpose into the result's dimension order
//
// Indices are clamped into range, as the specification asks, so the
// runtime's range check never fires on a StableHLO gather.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {

LogicalResult lowerGather(OpContext &ctx) {
  auto numbers = ctx.dict("dimension_numbers");
  if (failed(numbers))
    return failure();
  StringRef what = "dimension_numbers";
  DictionaryAttr d = *numbers;
  auto listOr = [&](StringRef name) -> FailureOr<SmallVector<int64_t>> {
    if (!d.get(name))
      return SmallVector<int64_t>{};
    return ctx.ints(d, name, what);
  };
  auto offsetDims = listOr("offset_dims");
  auto collapsed = listOr("collapsed_slice_dims");
  auto operandBatching = listOr("operand_batching_dims");
  auto indicesBatching = listOr("start_indices_batching_dims");
  auto startIndexMap = listOr("start_index_map");
  auto sliceSizes = ctx.ints("slice_sizes");
  if (failed(offsetDims) || failed(collapsed) || failed(operandBatching) ||
      failed(indicesBatching) || failed(startIndexMap) || failed(sliceSizes))
    return failure();
  auto ivdAttr = dyn_cast_or_null<IntegerAttr>(d.get("index_vector_dim"));
  auto operandType = ctx.operandType(0);
  auto indicesType = ctx.operandType(1);
  auto resultType = ctx.resultType();
  int64_t rank = operandType.getRank();
  // index_vector_dim is 0 when the printer leaves it out.
  int64_t ivd = ivdAttr ? ivdAttr.getInt() : 0;
  if (ivd < 0 || ivd > indicesType.getRank())
    return ctx.error() << "has index_vector_dim " << ivd
                       << " outside the indices' rank "
                       << indicesType.getRank();
  if (static_cast<int64_t>(sliceSizes->size()) != rank)
    return ctx.error() << "needs one slice size per operand dimension";
  if (operandBatching->size() != indicesBatching->size())
    return ctx.error() << "has " << operandBatching->size()
                       << " operand batching dims but "
                       << indicesBatching->size()
                       << " start_indices batching dims";
  if (!isa<IntegerType>(indicesType.getElementType()) ||
      indicesType.getElementType().isInteger(1))
    return ctx.error() << "needs integer start indices";

  // Classify the operand's dimensions.
  enum Kind { Other, Indexed, Batching };
  SmallVector<Kind> kind(rank, Other);
  for (int64_t dim : *startIndexMap) {
    if (dim < 0 || dim >= rank || kind[dim] != Other)
      return ctx.error() << "has an invalid start_index_map";
    kind[dim] = Indexed;
  }
  for (int64_t dim : *operandBatching) {
    if (dim < 0 || dim >= rank || kind[dim] != Other)
      return ctx.error() << "has an invalid operand_batching_dims";
    kind[dim] = Batching;
  }
  llvm::SmallDenseSet<int64_t> collapsedSet(collapsed->begin(),
                                            collapsed->end());
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t size = (*sliceSizes)[dim];
    if (size < 0 || size > operandType.getDimSize(dim))
      return ctx.error() << "slice size " << size << " of dimension " << dim
                         << " is outside [0, " << operandType.getDimSize(dim)
                         << "]";
    if (kind[dim] == Batching && size != 1)
      return ctx.error() << "slices " << size
                         << " elements of batching dimension " << dim;
    if (collapsedSet.contains(dim) && size != 1)
      return ctx.error() << "collapses dimension " << dim
                         << " whose slice size is " << size;
  }

  // The operand, reordered to [batching..., indexed..., other...] and with
  // the other dimensions sliced to their slice size.
  Value x = ctx.operand(0);
  SmallVector<int64_t> start(rank, 0), limit(operandType.getShape());
  for (int64_t dim = 0; dim < rank; ++dim)
    if (kind[dim] == Other)
      limit[dim] = (*sliceSizes)[dim];
  x = ctx.slice(x, start, limit);
  SmallVector<int64_t> order(operandBatching->begin(), operandBatching->end());
  order.append(startIndexMap->begin(), startIndexMap->end());
  SmallVector<int64_t> others;
  for (int64_t dim = 0; dim < rank; ++dim)
    if (kind[dim] == Other)
      others.push_back(dim);
  order.append(others);
  x = ctx.transpose(x, order);
  int64_t lead = 1;
  for (int64_t dim : *operandBatching)
    lead *= operandType.getDimSize(dim);
  for (int64_t dim : *startIndexMap)
    lead *= operandType.getDimSize(dim);
  SmallVector<int64_t> flatShape = {lead};
  for (int64_t dim : others)
    flatShape.push_back((*sliceSizes)[dim]);
  x = ctx.reshape(x, flatShape);

  // The indices as [batch..., K] in i64.
  Value indices = ctx.operand(1);
  auto i64 = ctx.builder.getI64Type();
  SmallVector<int64_t> batchShape;
  for (int64_t dim = 0; dim < indicesType.getRank(); ++dim)
    if (dim != ivd)
      batchShape.push_back(indicesType.getDimSize(dim));
  int64_t k = ivd < indicesType.getRank() ? indicesType.getDimSize(ivd) : 1;
  if (k != static_cast<int64_t>(startIndexMap->size()))
    return ctx.error() << "has index vectors of size " << k << " but "
                       << startIndexMap->size() << " start_index_map entries";
  if (ivd < indicesType.getRank()) {
    SmallVector<int64_t> toLast;
    for (int64_t dim = 0; dim < indicesType.getRank(); ++dim)
      if (dim != ivd)
        toLast.push_back(dim);
    toLast.push_back(ivd);
    indices = ctx.transpose(indices, toLast);
  }
  SmallVector<int64_t> withVector(batchShape);
  withVector.push_back(k);
  indices = ctx.reshape(indices, withVector);
  if (indicesType.getElementType() != i64)
    indices =
        ctx.create<ConvertOp>(RankedTensorType::get(withVector, i64), indices);

  // The linear position of every element of every window, shaped
  // [batch..., window of each indexed dim...]: batching dims, then the
  // indexed ones, row-major. A window of size s along dimension k starts at
  // clamp(index_k, 0, N_k - s) and covers s positions.
  SmallVector<int64_t> windowShape(batchShape);
  for (int64_t dim : *startIndexMap)
    windowShape.push_back((*sliceSizes)[dim]);
  auto windowI64 = RankedTensorType::get(windowShape, i64);
  auto batchI64 = RankedTensorType::get(batchShape, i64);
  int64_t nBatch = batchShape.size();
  SmallVector<int64_t> batchDims;
  for (int64_t j = 0; j < nBatch; ++j)
    batchDims.push_back(j);
  auto expand = [&](Value v) {
    return ctx.create<BroadcastInDimOp>(windowI64, v, batchDims);
  };
  Value position = ctx.splat(windowI64, 0);
  int64_t stride = lead;
  for (auto [operandDim, indicesDim] :
       llvm::zip(*operandBatching, *indicesBatching)) {
    if (indicesDim < 0 || indicesDim >= indicesType.getRank() ||
        indicesDim == ivd)
      return ctx.error() << "has an invalid start_indices_batching_dims";
    stride /= operandType.getDimSize(operandDim);
    int64_t batchDim = indicesDim > ivd ? indicesDim - 1 : indicesDim;
    Value iota = ctx.builder.create<IotaOp>(ctx.loc, windowI64, batchDim);
    position = ctx.create<AddOp>(
        position, ctx.create<MulOp>(iota, ctx.splat(windowI64, stride)));
  }
  for (auto [j, dim] : llvm::enumerate(*startIndexMap)) {
    int64_t n = operandType.getDimSize(dim);
    int64_t size = (*sliceSizes)[dim];
    stride /= n;
    SmallVector<int64_t> from(batchShape.size(), 0), to(batchShape);
    from.push_back(j);
    to.push_back(j + 1);
    Value index = ctx.reshape(ctx.slice(indices, from, to), batchShape);
    index = ctx.create<MinOp>(ctx.create<MaxOp>(index, ctx.splat(batchI64, 0)),
                              ctx.splat(batchI64, n - size));
    Value at = expand(index);
    if (size > 1)
      at = ctx.create<AddOp>(
          at, ctx.builder.create<IotaOp>(ctx.loc, windowI64, nBatch + j));
    position = ctx.create<AddOp>(
        position, ctx.create<MulOp>(at, ctx.splat(windowI64, stride)));
  }
  // [batch..., windows..., others...]; the flattened operand's leading
  // dimension runs over batching and indexed positions only, so the window
  // positions above are rows of it.
  Value gathered = ctx.create<GatherOp>(x, position, 0);

  // Into the result's order. The gathered value's dimensions are the batch
  // dims, then the indexed dims (start_index_map order), then the others
  // (operand order); collapsed ones (size 1) are dropped, and the offset
  // dims (the uncollapsed, non-batching operand dims) go to offset_dims in
  // operand order, the batch dims elsewhere in order.
  SmallVector<int64_t> labels; // operand dim of each non-batch dim kept
  SmallVector<int64_t> keptShape(batchShape);
  auto keep = [&](int64_t dim) {
    if (collapsedSet.contains(dim))
      return;
    labels.push_back(dim);
    keptShape.push_back((*sliceSizes)[dim]);
  };
  for (int64_t dim : *startIndexMap)
    keep(dim);
  for (int64_t dim : others)
    keep(dim);
  SmallVector<int64_t> offsetOperandDims(labels);
  llvm::sort(offsetOperandDims);
  if (offsetOperandDims.size() != offsetDims->size() ||
      offsetDims->size() + batchShape.size() !=
          static_cast<size_t>(resultType.getRank()))
    return ctx.error() << "has " << offsetDims->size()
                       << " offset_dims, but the operand leaves "
                       << offsetOperandDims.size()
                       << " uncollapsed dimensions and the result has rank "
                       << resultType.getRank();
  gathered = ctx.reshape(gathered, keptShape);
  SmallVector<int64_t> permutation;
  int64_t nextBatch = 0;
  for (int64_t pos = 0; pos < resultType.getRank(); ++pos) {
    auto it = llvm::find(*offsetDims, pos);
    if (it == offsetDims->end()) {
      permutation.push_back(nextBatch++);
      continue;
    }
    int64_t dim = offsetOperandDims[it - offsetDims->begin()];
    permutation.push_back(nBatch + (llvm::find(labels, dim) - labels.begin()));
  }
  gathered = ctx.transpose(gathered, permutation);
  if (tensorType(gathered) != resultType)
    return ctx.error() << "declares the result " << resultType
                       << " but its operands give " << gathered.getType();
  ctx.setResult(0, gathered);
  return success();
}

} // namespace trainc::stablehlo_import
