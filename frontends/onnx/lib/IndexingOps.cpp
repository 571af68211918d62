//===- IndexingOps.cpp - ONNX gathers, scatters, sorts and running sums --===//
//
// Gather, GatherElements, GatherND, ScatterND, TopK and CumSum. All but
// Gather and TopK become graph ops that already exist (gather of flattened
// data at linear positions built from iota; select of gathered updates; a
// log-step scan of slices and adds), so autodiff and the runtime need
// nothing new for them; TopK gathers at graph.argsort's first K indices.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"
#include "trainc/Dialect/Graph/GraphBuilders.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {

LogicalResult importGather(NodeContext &ctx) {
  auto x = ctx.input(0), indices = ctx.input(1);
  if (failed(x) || failed(indices))
    return failure();
  Type it = ctx.inputType(*indices).getElementType();
  if (!(it.isInteger(32) || it.isInteger(64)))
    return ctx.error() << "indices must be int32 or int64, got "
                       << indices->getType();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0),
                                ctx.inputType(*x).getRank(), "axis");
  if (failed(axis))
    return failure();
  // Constant indices are checked here, where the error can name the node
  // (graph.gather counts negative ones from the end; the runtime checks
  // the others).
  int64_t n = ctx.inputType(*x).getDimSize(*axis);
  DenseElementsAttr values;
  if (!ShapedType::isDynamic(n) && matchPattern(*indices, m_Constant(&values)))
    for (const APInt &v : values.getValues<APInt>())
      if (v.getSExtValue() < -n || v.getSExtValue() >= n)
        return ctx.error() << "index " << v.getSExtValue()
                           << " is outside axis " << *axis << " of size " << n
                           << " of input 0 " << x->getType();
  // --embedding-padding-index: PyTorch's Embedding(padding_idx), which the
  // exporters drop, for a table read on axis 0.
  if (auto param = ctx.graph.parameterIndex(*x); param && *axis == 0) {
    std::string name = ctx.graph.parameterName(*param).str();
    auto it = ctx.graph.paddingIndices.find(name);
    if (it != ctx.graph.paddingIndices.end()) {
      if (it->second < 0 || it->second >= n)
        return ctx.error() << "--embedding-padding-index " << name << "="
                           << it->second << " is not a row of the table "
                           << x->getType();
      ctx.graph.paddedTablesRead.insert(name);
      ctx.setOutput(0, ctx.builder.create<GatherOp>(
                           ctx.loc, *x, *indices,
                           ctx.builder.getI64IntegerAttr(*axis),
                           ctx.builder.getI64IntegerAttr(it->second)));
      return success();
    }
  }
  ctx.setOutput(0, ctx.create<GatherOp>(*x, *indices, *axis));
  return success();
}

namespace {

/// Input `i` as integer indices, or an error naming the input.
FailureOr<Value> indexInput(NodeContext &ctx, int i) {
  auto v = ctx.input(i);
  if (failed(v))
    return failure();
  Type t = ctx.inputType(*v).getElementType();
  if (!(t.isInteger(32) || t.isInteger(64)))
    return ctx.error() << "input " << i << " (indices) must be int32 or int64, "
                       << "got " << v->getType();
  return *v;
}

/// `indices` as i64 with negative entries counted from the end of a
/// dimension of size `n` (ONNX's convention). When the indices are
/// constant, an entry outside [-n, n) is an error here; data-dependent ones
/// are checked by the runtime against the flattened range only.
FailureOr<Value> indicesFromEnd(NodeContext &ctx, Value indices, int64_t n,
                                StringRef what) {
  auto type = RankedTensorType::get(ctx.inputType(indices).getShape(),
                                    ctx.builder.getI64Type());
  Value idx = ctx.convert(indices, type.getElementType());
  DenseElementsAttr values;
  if (matchPattern(idx, m_Constant(&values)))
    for (const APInt &v : values.getValues<APInt>())
      if (v.getSExtValue() < -n || v.getSExtValue() >= n)
        return ctx.error() << what << " index " << v.getSExtValue()
                           << " is outside a dimension of size " << n;
  Value negative =
      ctx.create<CompareOp>(ComparisonDirection::LT, idx, ctx.splat(type, 0));
  return ctx.create<SelectOp>(negative,
                              ctx.create<AddOp>(idx, ctx.splat(type, n)), idx);
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

} // namespace

/// out[p] = data[p with p[axis] replaced by indices[p]]: a gather of the
/// flattened data at linear positions built from iota, so autodiff and the
/// runtime need nothing beyond graph.gather.
LogicalResult importGatherElements(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto indices = indexInput(ctx, 1);
  if (failed(x) || failed(indices))
    return failure();
  auto xType = ctx.inputType(*x), iType = ctx.inputType(*indices);
  if (xType.getRank() == 0 || xType.getRank() != iType.getRank())
    return ctx.error() << "data and indices must have the same rank (at "
                          "least 1), got "
                       << x->getType() << " and " << indices->getType();
  auto axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), xType.getRank(), "axis");
  if (failed(axis))
    return failure();
  for (int64_t d = 0; d < xType.getRank(); ++d)
    if (d != *axis && iType.getDimSize(d) > xType.getDimSize(d))
      return ctx.error() << "indices dimension " << d << " ("
                         << iType.getDimSize(d) << ") exceeds the data's ("
                         << xType.getDimSize(d) << ")";
  auto positions =
      indicesFromEnd(ctx, *indices, xType.getDimSize(*axis), "GatherElements");
  if (failed(positions))
    return failure();
  ctx.setOutput(
      0, buildTakeAlongAxis(ctx.builder, ctx.loc, *x, *positions, *axis));
  return success();
}

/// The K largest (or, with largest = 0, smallest) elements along `axis`
/// and their indices: the first K of graph.argsort's stable order (ties in
/// index order, as ONNX says; NaN above every number, as torch.topk),
/// gathered. Always sorted, which `sorted = 0` allows.
LogicalResult importTopK(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto k = ctx.intListInput(1, "K");
  if (failed(x) || failed(k))
    return failure();
  auto xType = ctx.inputType(*x);
  Type element = xType.getElementType();
  if (!isa<FloatType>(element) && !element.isInteger(32) &&
      !element.isInteger(64))
    return ctx.error() << "sorts " << element
                       << " values; trainc's TopK takes floats, int32 and "
                          "int64";
  auto axis =
      ctx.normalizeAxis(ctx.intAttr("axis", -1), xType.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t n = xType.getDimSize(*axis);
  if (k->size() != 1 || (*k)[0] < 0 || (*k)[0] > n)
    return ctx.error() << "K must be one value in [0, " << n
                       << "], the size of axis " << *axis;
  auto orderType =
      RankedTensorType::get(xType.getShape(), ctx.builder.getI64Type());
  Value order = ctx.create<ArgsortOp>(orderType, *x, uint64_t(*axis),
                                      ctx.intAttr("largest", 1) != 0,
                                      /*total_order=*/false);
  SmallVector<int64_t> start(xType.getRank(), 0), limit(xType.getShape()),
      steps(xType.getRank(), 1);
  limit[*axis] = (*k)[0];
  Value top = ctx.create<SliceOp>(order, start, limit, steps);
  ctx.setOutput(0, buildTakeAlongAxis(ctx.builder, ctx.loc, *x, top, *axis));
  ctx.setOutput(1, top);
  return success();
}

/// indices [..., K] pick slices data[i_0, ..., i_K-1, :...]: a gather along
/// the first dimension of data with its first K dimensions flattened.
LogicalResult importGatherND(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto indices = indexInput(ctx, 1);
  if (failed(x) || failed(indices))
    return failure();
  if (int64_t b = ctx.intAttr("batch_dims", 0); b != 0)
    return ctx.error() << "batch_dims " << b << " is not supported (only 0)";
  auto xType = ctx.inputType(*x), iType = ctx.inputType(*indices);
  int64_t q = iType.getRank();
  if (q == 0)
    return ctx.error() << "indices must have rank at least 1";
  int64_t k = iType.getDimSize(q - 1);
  if (k < 1 || k > xType.getRank())
    return ctx.error() << "the indices' last dimension (" << k
                       << ") must be in [1, " << xType.getRank()
                       << "], the data's rank";
  ArrayRef<int64_t> lead = xType.getShape().take_front(k);
  SmallVector<int64_t> leadStrides = stridesOf(lead);
  SmallVector<int64_t> idxShape(iType.getShape().drop_back());
  auto linearType = RankedTensorType::get(idxShape, ctx.builder.getI64Type());
  Value linear = ctx.splat(linearType, 0);
  SmallVector<int64_t> start(q, 0), limit(iType.getShape()), steps(q, 1);
  for (int64_t c = 0; c < k; ++c) {
    start[q - 1] = c;
    limit[q - 1] = c + 1;
    Value component = ctx.reshape(
        ctx.create<SliceOp>(*indices, start, limit, steps), idxShape);
    auto position = indicesFromEnd(ctx, component, lead[c], "GatherND");
    if (failed(position))
      return failure();
    linear = ctx.create<AddOp>(
        linear,
        ctx.create<MulOp>(*position, ctx.splat(linearType, leadStrides[c])));
  }
  SmallVector<int64_t> flatShape{product(lead)};
  llvm::append_range(flatShape, xType.getShape().drop_front(k));
  ctx.setOutput(0, ctx.create<GatherOp>(ctx.reshape(*x, flatShape), linear, 0));
  return success();
}

namespace {

/// A scatter's data, constant indices and updates (reduction none, data and
/// updates of one element type), or the error naming what is wrong.
struct ScatterOperands {
  Value data, updates;
  DenseElementsAttr indices;
};

FailureOr<ScatterOperands> scatterOperands(NodeContext &ctx) {
  auto x = ctx.input(0), updates = ctx.input(2);
  auto indices = ctx.constantInput(1, "indices");
  if (failed(x) || failed(indices) || failed(updates))
    return failure();
  std::string reduction = ctx.stringAttr("reduction", "none");
  if (reduction != "none")
    return ctx.error() << "reduction '" << reduction
                       << "' is not supported (only 'none')";
  if (!isa<IntegerType>(indices->getType().getElementType()))
    return ctx.error() << "indices must be integers, got "
                       << indices->getType();
  if (ctx.inputType(*x).getElementType() !=
      ctx.inputType(*updates).getElementType())
    return ctx.error() << "data and updates have different element types: "
                       << x->getType() << " and " << updates->getType();
  return ScatterOperands{*x, *updates, *indices};
}

/// `data` with its slices data[p, ...] over the leading dims `lead` that
/// `written` marks replaced by rows[source[p], ...]: select(written,
/// gather(rows, source), data), differentiable in both data and rows and
/// good for every element type. `source` and `written` are row-major over
/// `lead`; `rows` is [count, the data's other dims].
Value replaceWritten(NodeContext &ctx, Value data, Value rows,
                     ArrayRef<int64_t> lead, ArrayRef<int64_t> source,
                     ArrayRef<bool> written) {
  auto type = ctx.inputType(data);
  Value picked = ctx.create<GatherOp>(
      rows,
      ctx.constant(DenseElementsAttr::get(
          RankedTensorType::get(lead, ctx.builder.getI64Type()), source)),
      0);
  SmallVector<int64_t> maskShape(lead);
  maskShape.append(type.getRank() - lead.size(), 1);
  Value mask = ctx.broadcastTo(
      ctx.constant(DenseElementsAttr::get(
          RankedTensorType::get(maskShape, ctx.builder.getI1Type()), written)),
      type.getShape());
  return ctx.create<SelectOp>(mask, picked, data);
}

} // namespace

/// data with the slices at constant `indices` replaced by `updates`
/// (reduction none; with duplicate indices the last update wins, as in
/// onnxruntime), through replaceWritten with `written` and `source`
/// computed here.
LogicalResult importScatterND(NodeContext &ctx) {
  auto ops = scatterOperands(ctx);
  if (failed(ops))
    return failure();
  auto xType = ctx.inputType(ops->data), uType = ctx.inputType(ops->updates);
  auto iType = ops->indices.getType();
  int64_t q = iType.getRank();
  if (q == 0)
    return ctx.error() << "indices must have rank at least 1, got " << iType;
  int64_t k = iType.getDimSize(q - 1);
  if (k < 1 || k > xType.getRank())
    return ctx.error() << "the indices' last dimension (" << k
                       << ") must be in [1, " << xType.getRank() << "]";
  SmallVector<int64_t> uShape(iType.getShape().drop_back());
  llvm::append_range(uShape, xType.getShape().drop_front(k));
  if (uType.getShape() != ArrayRef<int64_t>(uShape))
    return ctx.error() << "updates have type " << ops->updates.getType()
                       << "; indices " << iType << " into data "
                       << ops->data.getType() << " need shape "
                       << RankedTensorType::get(uShape, uType.getElementType());
  ArrayRef<int64_t> lead = xType.getShape().take_front(k);
  int64_t leadSize = product(lead), count = product(iType.getShape()) / k;
  if (leadSize > kMaxConstantElements)
    return ctx.error() << "the indexed dimensions have more than "
                       << kMaxConstantElements << " positions";
  SmallVector<int64_t> leadStrides = stridesOf(lead);
  SmallVector<int64_t> source(leadSize, 0);
  SmallVector<bool> written(leadSize, false);
  auto values = ops->indices.getValues<APInt>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t target = 0;
    for (int64_t c = 0; c < k; ++c) {
      int64_t v = values[j * k + c].getSExtValue();
      if (v < -lead[c] || v >= lead[c])
        return ctx.error() << "index " << v << " is outside dimension " << c
                           << " of size " << lead[c];
      target += (v < 0 ? v + lead[c] : v) * leadStrides[c];
    }
    source[target] = j;
    written[target] = true;
  }
  if (count == 0) {
    ctx.setOutput(0, ops->data);
    return success();
  }
  SmallVector<int64_t> rowsShape{count};
  llvm::append_range(rowsShape, xType.getShape().drop_front(k));
  ctx.setOutput(0, replaceWritten(ctx, ops->data,
                                  ctx.reshape(ops->updates, rowsShape), lead,
                                  source, written));
  return success();
}

/// data with data[p with p[axis] replaced by indices[p]] = updates[p] for
/// every position p of the constant `indices` (reduction none; the last
/// update of a position wins, as in ScatterND): replaceWritten over every
/// dim of the data. PyTorch's dynamo exporter writes select_scatter this way
/// (BART's shift of the labels into decoder inputs).
LogicalResult importScatterElements(NodeContext &ctx) {
  auto ops = scatterOperands(ctx);
  if (failed(ops))
    return failure();
  auto xType = ctx.inputType(ops->data), uType = ctx.inputType(ops->updates);
  auto iType = ops->indices.getType();
  int64_t rank = xType.getRank();
  if (rank == 0 || iType.getRank() != rank ||
      uType.getShape() != iType.getShape())
    return ctx.error() << "indices must have the data's rank and the "
                          "updates' shape, got "
                       << iType << " for data " << ops->data.getType()
                       << " and updates " << ops->updates.getType();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), rank, "axis");
  if (failed(axis))
    return failure();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && iType.getDimSize(d) > xType.getDimSize(d))
      return ctx.error() << "indices dimension " << d << " ("
                         << iType.getDimSize(d) << ") exceeds the data's ("
                         << xType.getDimSize(d) << ")";
  int64_t size = xType.getNumElements(), count = iType.getNumElements();
  if (size > kMaxConstantElements)
    return ctx.error() << "the data has more than " << kMaxConstantElements
                       << " elements";
  if (count == 0) {
    ctx.setOutput(0, ops->data);
    return success();
  }
  SmallVector<int64_t> xStrides = stridesOf(xType.getShape()),
                       iStrides = stridesOf(iType.getShape());
  SmallVector<int64_t> source(size, 0);
  SmallVector<bool> written(size, false);
  int64_t n = xType.getDimSize(*axis);
  auto values = ops->indices.getValues<APInt>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = values[j].getSExtValue();
    if (v < -n || v >= n)
      return ctx.error() << "index " << v << " is outside axis " << *axis
                         << " of size " << n;
    int64_t target = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t at = (j / iStrides[d]) % iType.getDimSize(d);
      if (d == *axis)
        at = v < 0 ? v + n : v;
      target += at * xStrides[d];
    }
    source[target] = j;
    written[target] = true;
  }
  ctx.setOutput(0, replaceWritten(ctx, ops->data,
                                  ctx.reshape(ops->updates, {count}),
                                  xType.getShape(), source, written));
  return success();
}

namespace {

/// `x` shifted by `k` along `axis`, zero-filled: y[i] = x[i - k] when
/// `forward`, else y[i] = x[i + k].
Value shiftAlong(NodeContext &ctx, Value x, int64_t axis, int64_t k,
                 bool forward) {
  auto type = ctx.inputType(x);
  int64_t n = type.getDimSize(axis);
  k = std::min(k, n);
  SmallVector<int64_t> zerosShape(type.getShape());
  zerosShape[axis] = k;
  Value zeros =
      ctx.splat(RankedTensorType::get(zerosShape, type.getElementType()), 0);
  if (k == n)
    return ctx.reshape(zeros, type.getShape());
  SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
      steps(type.getRank(), 1);
  if (forward)
    limit[axis] = n - k;
  else
    start[axis] = k;
  Value kept = ctx.create<SliceOp>(x, start, limit, steps);
  return ctx.create<ConcatenateOp>(forward ? SmallVector<Value>{zeros, kept}
                                           : SmallVector<Value>{kept, zeros},
                                   axis);
}

} // namespace

/// Running sums along a constant axis, as a Hillis-Steele scan: log2(n)
/// rounds of y += shift(y, 2^r). Exact for integers (position ids from an
/// attention mask) and differentiable for floats, with no kernel of its own.
LogicalResult importCumSum(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto axisValue = ctx.scalarInput(1, "axis");
  if (failed(x) || failed(axisValue))
    return failure();
  auto type = ctx.inputType(*x);
  if (type.getElementType().isInteger(1))
    return ctx.error() << "CumSum of booleans is not defined";
  if (type.getRank() == 0)
    return ctx.error() << "the input must have rank at least 1";
  auto axis = ctx.normalizeAxis(static_cast<int64_t>(*axisValue),
                                type.getRank(), "axis");
  if (failed(axis))
    return failure();
  bool forward = ctx.intAttr("reverse", 0) == 0;
  Value y = *x;
  for (int64_t k = 1; k < type.getDimSize(*axis); k *= 2)
    y = ctx.create<AddOp>(y, shiftAlong(ctx, y, *axis, k, forward));
  if (ctx.intAttr("exclusive", 0) != 0)
    y = shiftAlong(ctx, y, *axis, 1, forward);
  ctx.setOutput(0, y);
  return success();
}

} // namespace trainc::onnx_import
