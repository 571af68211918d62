//===- IndexingOps.cpp - stablehlo.gather and scatter ---------------------===//
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

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

/// Operand `operand` (a gather's or scatter's indices, index vectors along
/// dimension `ivd`; ivd = rank: vectors of one) as [batch..., K] in i64,
/// K = map.size(); sets `batchShape` to the dims other than ivd.
FailureOr<Value> indexVectors(OpContext &ctx, unsigned operand, int64_t ivd,
                              ArrayRef<int64_t> map, StringRef mapName,
                              SmallVector<int64_t> &batchShape) {
  RankedTensorType type = ctx.operandType(operand);
  Value indices = ctx.operand(operand);
  auto i64 = ctx.builder.getI64Type();
  batchShape.clear();
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (dim != ivd)
      batchShape.push_back(type.getDimSize(dim));
  int64_t k = ivd < type.getRank() ? type.getDimSize(ivd) : 1;
  if (k != static_cast<int64_t>(map.size()))
    return ctx.error() << "has index vectors of size " << k << " but "
                       << map.size() << " " << mapName << " entries";
  if (ivd < type.getRank()) {
    SmallVector<int64_t> toLast;
    for (int64_t dim = 0; dim < type.getRank(); ++dim)
      if (dim != ivd)
        toLast.push_back(dim);
    toLast.push_back(ivd);
    indices = ctx.transpose(indices, toLast);
  }
  SmallVector<int64_t> withVector(batchShape);
  withVector.push_back(k);
  indices = ctx.reshape(indices, withVector);
  // ui64 indices of 2^63 and above would wrap to negative i64; any index
  // from 2^62 is far outside every operand, so they stop there.
  if (type.getElementType().isUnsignedInteger(64))
    indices = ctx.create<MinOp>(
        indices, ctx.splat(cast<RankedTensorType>(indices.getType()), 0x1p62));
  if (type.getElementType() != i64)
    indices =
        ctx.create<ConvertOp>(RankedTensorType::get(withVector, i64), indices);
  return indices;
}

/// Component j of [batch..., K] index vectors, shaped [batch...].
Value indexComponent(OpContext &ctx, Value vectors, int64_t j) {
  ArrayRef<int64_t> shape = tensorType(vectors).getShape();
  SmallVector<int64_t> from(shape.size() - 1, 0), to(shape.drop_back());
  from.push_back(j);
  to.push_back(j + 1);
  return ctx.reshape(ctx.slice(vectors, from, to), shape.drop_back());
}

} // namespace

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
  auto i64 = ctx.builder.getI64Type();
  SmallVector<int64_t> batchShape;
  FailureOr<Value> vectors =
      indexVectors(ctx, 1, ivd, *startIndexMap, "start_index_map", batchShape);
  if (failed(vectors))
    return failure();
  Value indices = *vectors;

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
    Value index = indexComponent(ctx, indices, j);
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

namespace {

/// What a scatter's body does with the operand's element a and the
/// update's element b.
enum class ScatterBody { Add, Replace };

/// `^bb0(%a, %b): %r = stablehlo.add %a, %b (either order); return %r`
/// adds; `^bb0(%a, %b): return %b` replaces; anything else is none.
std::optional<ScatterBody> matchScatterBody(Region &region) {
  if (!region.hasOneBlock())
    return std::nullopt;
  Block &block = region.front();
  Operation &ret = block.back();
  if (block.getNumArguments() != 2 ||
      ret.getName().getStringRef() != "stablehlo.return" ||
      ret.getNumOperands() != 1)
    return std::nullopt;
  Value a = block.getArgument(0), b = block.getArgument(1);
  Value result = ret.getOperand(0);
  if (result == b && block.getOperations().size() == 1)
    return ScatterBody::Replace;
  Operation *op = result.getDefiningOp();
  if (block.getOperations().size() == 2 && op &&
      op->getName().getStringRef() == "stablehlo.add" &&
      op->getNumOperands() == 2 &&
      ((op->getOperand(0) == a && op->getOperand(1) == b) ||
       (op->getOperand(0) == b && op->getOperand(1) == a)))
    return ScatterBody::Add;
  return std::nullopt;
}

} // namespace

LogicalResult lowerScatter(OpContext &ctx) {
  if (ctx.numOperands() != 3)
    return ctx.error() << "scatters " << (ctx.numOperands() - 1) / 2
                       << " inputs at once; trainc lowers a scatter of one";
  std::optional<ScatterBody> body = matchScatterBody(ctx.op->getRegion(0));
  if (!body)
    return ctx.error() << "has a body trainc does not lower: it must add the "
                          "update (stablehlo.add of the two arguments) or "
                          "return it (x.at[i].add and x.at[i].set); not "
                          "multiply, maximum, minimum or others";
  auto uniqueAttr =
      dyn_cast_or_null<BoolAttr>(ctx.op->getAttr("unique_indices"));
  bool unique = uniqueAttr && uniqueAttr.getValue();
  auto numbers = ctx.dict("scatter_dimension_numbers");
  if (failed(numbers))
    return failure();
  StringRef what = "scatter_dimension_numbers";
  auto updateWindowDims = ctx.ints(*numbers, "update_window_dims", what);
  auto inserted = ctx.ints(*numbers, "inserted_window_dims", what);
  auto operandBatching = ctx.ints(*numbers, "input_batching_dims", what);
  auto indicesBatching =
      ctx.ints(*numbers, "scatter_indices_batching_dims", what);
  auto toOperand = ctx.ints(*numbers, "scatter_dims_to_operand_dims", what);
  if (failed(updateWindowDims) || failed(inserted) || failed(operandBatching) ||
      failed(indicesBatching) || failed(toOperand))
    return failure();
  auto ivdAttr =
      dyn_cast_or_null<IntegerAttr>(numbers->get("index_vector_dim"));
  RankedTensorType operandType = ctx.operandType(0);
  RankedTensorType indicesType = ctx.operandType(1);
  RankedTensorType updatesType = ctx.operandType(2);
  int64_t rank = operandType.getRank();
  int64_t ivd = ivdAttr ? ivdAttr.getInt() : 0;
  if (ctx.resultType() != operandType ||
      updatesType.getElementType() != operandType.getElementType())
    return ctx.error() << "must give its operand's type " << operandType
                       << " from updates of its element type";
  Type element = operandType.getElementType();
  if (!isa<FloatType>(element) && !element.isSignlessInteger(32) &&
      !element.isSignlessInteger(64))
    return ctx.error() << "scatters " << element
                       << " elements; trainc scatters floats, i32 and i64";
  if (ivd < 0 || ivd > indicesType.getRank())
    return ctx.error() << "has index_vector_dim " << ivd
                       << " outside the indices' rank "
                       << indicesType.getRank();
  if (!isa<IntegerType>(indicesType.getElementType()) ||
      indicesType.getElementType().isInteger(1))
    return ctx.error() << "needs integer scatter indices";
  if (operandBatching->size() != indicesBatching->size())
    return ctx.error() << "has " << operandBatching->size()
                       << " input batching dims but " << indicesBatching->size()
                       << " scatter_indices batching dims";

  // The operand's dimensions: indexed (scatter_dims_to_operand_dims, entry
  // k), batching (input_batching_dims, entry i), and windows (all but the
  // inserted and batching ones, in order: update_window_dims' entries).
  SmallVector<int64_t> indexOf(rank, -1), batchingOf(rank, -1);
  SmallVector<bool> inWindow(rank, true);
  for (auto [k, dim] : llvm::enumerate(*toOperand)) {
    if (dim < 0 || dim >= rank || indexOf[dim] >= 0)
      return ctx.error() << "has an invalid scatter_dims_to_operand_dims";
    indexOf[dim] = k;
  }
  for (auto [i, dim] : llvm::enumerate(*operandBatching)) {
    if (dim < 0 || dim >= rank || batchingOf[dim] >= 0 || indexOf[dim] >= 0)
      return ctx.error() << "has an invalid input_batching_dims";
    int64_t indicesDim = (*indicesBatching)[i];
    if (indicesDim < 0 || indicesDim >= indicesType.getRank() ||
        indicesDim == ivd)
      return ctx.error() << "has an invalid scatter_indices_batching_dims";
    if (indicesType.getDimSize(indicesDim) != operandType.getDimSize(dim))
      return ctx.error() << "has input batching dim " << dim << " of size "
                         << operandType.getDimSize(dim)
                         << " but scatter_indices batching dim " << indicesDim
                         << " of size " << indicesType.getDimSize(indicesDim);
    batchingOf[dim] = i;
    inWindow[dim] = false;
  }
  for (int64_t dim : *inserted) {
    if (dim < 0 || dim >= rank || !inWindow[dim])
      return ctx.error() << "has an invalid inserted_window_dims";
    inWindow[dim] = false;
  }
  SmallVector<int64_t> windowDims; // operand dims, in order
  for (int64_t dim = 0; dim < rank; ++dim)
    if (inWindow[dim])
      windowDims.push_back(dim);
  int64_t batchRank = indicesType.getRank() - (ivd < indicesType.getRank());
  if (windowDims.size() != updateWindowDims->size() ||
      updatesType.getRank() !=
          static_cast<int64_t>(updateWindowDims->size()) + batchRank)
    return ctx.error() << "has updates " << updatesType << " for "
                       << windowDims.size() << " window dims and " << batchRank
                       << " scatter dims";
  SmallVector<bool> isWindow(updatesType.getRank(), false);
  for (int64_t dim : *updateWindowDims) {
    if (dim < 0 || dim >= updatesType.getRank() || isWindow[dim])
      return ctx.error() << "has an invalid update_window_dims";
    isWindow[dim] = true;
  }
  SmallVector<int64_t> scatterDims; // updates dims of the index batch
  for (int64_t dim = 0; dim < updatesType.getRank(); ++dim)
    if (!isWindow[dim])
      scatterDims.push_back(dim);

  SmallVector<int64_t> batchShape;
  FailureOr<Value> vectors = indexVectors(
      ctx, 1, ivd, *toOperand, "scatter_dims_to_operand_dims", batchShape);
  if (failed(vectors))
    return failure();
  for (auto [b, dim] : llvm::enumerate(scatterDims))
    if (updatesType.getDimSize(dim) != batchShape[b])
      return ctx.error() << "has updates " << updatesType
                         << " whose scatter dims do not match the indices "
                         << indicesType;
  for (auto [k, dim] : llvm::enumerate(windowDims))
    if (updatesType.getDimSize((*updateWindowDims)[k]) >
        operandType.getDimSize(dim))
      return ctx.error() << "has an update window wider than dimension " << dim
                         << " of its operand";
  // Nothing to scatter, or nowhere to put it: the operand as it is.
  if (product(operandType.getShape()) == 0 ||
      product(updatesType.getShape()) == 0) {
    ctx.setResult(0, ctx.operand(0));
    return success();
  }

  // A replacing scatter needs each element written at most once: said by
  // unique_indices, or seen in constant indices.
  if (*body == ScatterBody::Replace && !unique) {
    std::optional<DenseElementsAttr> constant = ctx.constantOf(*vectors);
    if (!constant)
      return ctx.error()
             << "replaces elements at indices that are data without "
                "unique_indices = true: trainc does not choose among several "
                "updates of one element (in JAX, .at[i].set(v, "
                "unique_indices=True) where the indices are unique)";
    SmallVector<int64_t> starts;
    for (const APInt &v : constant->getValues<APInt>())
      starts.push_back(v.getSExtValue());
    // Walk the update elements in row-major order, as the positions below
    // are made.
    int64_t k = toOperand->size();
    llvm::DenseSet<int64_t> seen;
    SmallVector<int64_t> coord(updatesType.getRank(), 0);
    for (int64_t e = 0, count = product(updatesType.getShape()); e < count;
         ++e) {
      int64_t batch = 0;
      for (int64_t dim : scatterDims)
        batch = batch * updatesType.getDimSize(dim) + coord[dim];
      int64_t place = 0;
      bool inside = true;
      for (int64_t dim = 0; dim < rank && inside; ++dim) {
        int64_t n = operandType.getDimSize(dim), at = 0;
        if (indexOf[dim] >= 0) {
          // Window offsets are in [0, n): a start outside (-n, n) leaves
          // the operand, and one inside cannot overflow.
          at = starts[batch * k + indexOf[dim]];
          if (at <= -n || at >= n) {
            inside = false;
            break;
          }
        }
        if (batchingOf[dim] >= 0) {
          int64_t indicesDim = (*indicesBatching)[batchingOf[dim]];
          at += coord[scatterDims[indicesDim > ivd ? indicesDim - 1
                                                   : indicesDim]];
        }
        if (inWindow[dim])
          at += coord[(*updateWindowDims)[llvm::find(windowDims, dim) -
                                          windowDims.begin()]];
        inside = at >= 0 && at < n;
        place = place * n + at;
      }
      if (inside && !seen.insert(place).second)
        return ctx.error() << "replaces an element more than once (update " << e
                           << " lands where an earlier one did): "
                              "trainc does not choose among several updates "
                              "of one element";
      for (int64_t dim = updatesType.getRank() - 1; dim >= 0; --dim) {
        if (++coord[dim] < updatesType.getDimSize(dim))
          break;
        coord[dim] = 0;
      }
    }
  }

  // Each update element's place in the operand, and whether it is inside:
  // result_index[d] = start (indexed d) + batch position (batching d) +
  // window offset (window d), i64 tensors of the updates' shape. An
  // element outside the operand is dropped (the reference interpreter's
  // reading of the specification).
  auto i64 = ctx.builder.getI64Type();
  ArrayRef<int64_t> uShape = updatesType.getShape();
  auto uI64 = RankedTensorType::get(uShape, i64);
  auto uBool = RankedTensorType::get(uShape, ctx.builder.getI1Type());
  Value position = ctx.splat(uI64, 0), inside;
  int64_t stride = product(operandType.getShape());
  for (int64_t dim = 0; dim < rank; ++dim) {
    int64_t n = operandType.getDimSize(dim);
    stride /= n;
    Value at = ctx.splat(uI64, 0);
    if (indexOf[dim] >= 0) {
      Value start = indexComponent(ctx, *vectors, indexOf[dim]);
      at = ctx.create<BroadcastInDimOp>(uI64, start, scatterDims);
    }
    if (batchingOf[dim] >= 0) {
      int64_t indicesDim = (*indicesBatching)[batchingOf[dim]];
      int64_t b = indicesDim > ivd ? indicesDim - 1 : indicesDim;
      at = ctx.builder.create<IotaOp>(ctx.loc, uI64, scatterDims[b]);
    }
    if (inWindow[dim]) {
      int64_t k = llvm::find(windowDims, dim) - windowDims.begin();
      at = ctx.create<AddOp>(at, ctx.builder.create<IotaOp>(
                                     ctx.loc, uI64, (*updateWindowDims)[k]));
    }
    if (indexOf[dim] >= 0) {
      Value here =
          ctx.create<SelectOp>(ctx.create<CompareOp>(ComparisonDirection::GE,
                                                     at, ctx.splat(uI64, 0)),
                               ctx.create<CompareOp>(ComparisonDirection::LT,
                                                     at, ctx.splat(uI64, n)),
                               ctx.splat(uBool, 0));
      inside = inside ? ctx.create<SelectOp>(inside, here, ctx.splat(uBool, 0))
                      : here;
    }
    position = ctx.create<AddOp>(
        position, ctx.create<MulOp>(at, ctx.splat(uI64, stride)));
  }

  // The updates added into zeros of the operand's size at those places
  // (the dropped ones as 0 at place 0), then combined with the operand.
  Value updates = ctx.operand(2);
  if (inside) {
    position = ctx.create<SelectOp>(inside, position, ctx.splat(uI64, 0));
    updates = ctx.create<SelectOp>(inside, updates, ctx.splat(updatesType, 0));
  }
  int64_t count = product(uShape), size = product(operandType.getShape());
  auto flatResult = RankedTensorType::get({size}, element);
  Value places = ctx.reshape(position, {count});
  auto scatterFlat = [&](Value values) {
    return ctx.reshape(ctx.create<ScatterAddOp>(
                           flatResult, ctx.reshape(values, {count}), places, 0),
                       operandType.getShape());
  };
  Value sums = scatterFlat(updates);
  Value x = ctx.operand(0);
  if (*body == ScatterBody::Add) {
    ctx.setResult(0, ctx.create<AddOp>(x, sums));
    return success();
  }
  // Replace: where an update lands (unique: at most one), its value.
  Value ones = ctx.splat(updatesType, 1);
  if (inside)
    ones = ctx.create<SelectOp>(inside, ones, ctx.splat(updatesType, 0));
  Value written = ctx.create<CompareOp>(
      ComparisonDirection::NE, scatterFlat(ones), ctx.splat(operandType, 0));
  ctx.setResult(0, ctx.create<SelectOp>(written, sums, x));
  return success();
}

} // namespace trainc::stablehlo_import
