//===- ShapeOps.cpp - ONNX constants, shape arithmetic and data movement --===//
//
// Shapes must be static, so inputs that carry shapes (Reshape's shape,
// Slice's starts, ...) must fold to constants; the graph dialect's folders
// evaluate the Shape -> Gather -> Unsqueeze -> Concat chains exporters emit.
// Every attribute is validated before an op is built: a corrupt model gets
// an error naming the node, never a crash in a builder.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// Checks that `shape` has non-negative dims and a bounded element count.
LogicalResult checkShape(NodeContext &ctx, ArrayRef<int64_t> shape,
                         StringRef what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return ctx.error() << what << " has negative dimension " << d;
    if (d > 0 && n > kMaxConstantElements / d)
      return ctx.error() << what << " has more than " << kMaxConstantElements
                         << " elements";
    n *= d;
  }
  return success();
}

/// Axes from input `inputIndex` (newer opsets) or attribute "axes" (older);
/// nullopt when neither is given.
FailureOr<std::optional<SmallVector<int64_t>>> axesInputOrAttr(NodeContext &ctx,
                                                               int inputIndex) {
  if (ctx.hasInput(inputIndex)) {
    auto axes = ctx.intListInput(inputIndex, "axes");
    if (failed(axes))
      return failure();
    return std::optional<SmallVector<int64_t>>(*axes);
  }
  return ctx.intsAttr("axes");
}

} // namespace

LogicalResult importConstant(NodeContext &ctx) {
  if (ctx.node.attribute_size() != 1)
    return ctx.error() << "expects exactly one attribute, got "
                       << ctx.node.attribute_size();
  const onnx::AttributeProto &attr = ctx.node.attribute(0);
  Builder &b = ctx.builder;
  DenseElementsAttr value;
  if (attr.name() == "value") {
    auto elements =
        tensorToElements(attr.t(), ctx.graph.baseDir, ctx.context(),
                         ctx.node.output_size() ? ctx.node.output(0) : "",
                         [&] { return ctx.error(); });
    if (failed(elements))
      return failure();
    value = *elements;
  } else if (attr.name() == "value_float") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   attr.f());
  } else if (attr.name() == "value_floats") {
    SmallVector<float> v(attr.floats().begin(), attr.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getF32Type()),
        ArrayRef<float>(v));
  } else if (attr.name() == "value_int") {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   static_cast<int64_t>(attr.i()));
  } else if (attr.name() == "value_ints") {
    SmallVector<int64_t> v(attr.ints().begin(), attr.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    return ctx.error() << "attribute '" << attr.name()
                       << "' is not supported (sparse and string constants "
                          "have no graph equivalent)";
  }
  ctx.setOutput(0, ctx.constant(value));
  return success();
}

LogicalResult importConstantOfShape(NodeContext &ctx) {
  auto shape = ctx.intListInput(0, "shape");
  if (failed(shape) || failed(checkShape(ctx, *shape, "the shape")))
    return failure();
  Type elementType = ctx.builder.getF32Type();
  Attribute element = ctx.builder.getF32FloatAttr(0);
  if (const auto *attr = ctx.attribute("value")) {
    auto v = tensorToElements(attr->t(), ctx.graph.baseDir, ctx.context(),
                              "value", [&] { return ctx.error(); });
    if (failed(v))
      return failure();
    if (v->getNumElements() != 1)
      return ctx.error() << "attribute 'value' must have one element, got "
                         << v->getType();
    elementType = v->getElementType();
    element = *v->getValues<Attribute>().begin();
  }
  ctx.setOutput(0, ctx.constant(SplatElementsAttr::get(
                       RankedTensorType::get(*shape, elementType), element)));
  return success();
}

/// start, start + delta, ... while below (above, for negative delta) limit.
LogicalResult importRange(NodeContext &ctx) {
  auto start = ctx.constantInput(0, "start");
  auto limit = ctx.scalarInput(1, "limit");
  auto delta = ctx.scalarInput(2, "delta");
  auto startValue = ctx.scalarInput(0, "start");
  if (failed(start) || failed(limit) || failed(delta) || failed(startValue))
    return failure();
  if (*delta == 0)
    return ctx.error() << "delta must not be zero";
  double count = std::ceil((*limit - *startValue) / *delta);
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  if (!(count < double(kMaxConstantElements)))
    return ctx.error() << "the range has more than " << kMaxConstantElements
                       << " elements";
  Type e = start->getElementType();
  auto type = RankedTensorType::get({n}, e);
  SmallVector<Attribute> values;
  if (isa<FloatType>(e)) {
    // Opset 27's stash_type (default 1) computes in f32 for 16-bit types.
    bool narrow = e.isF16() || e.isBF16();
    for (int64_t i = 0; i < n; ++i) {
      double v = e.isF64() || (narrow && ctx.intAttr("stash_type", 1) == 0)
                     ? *startValue + i * *delta
                     : double(float(*startValue) + float(i) * float(*delta));
      values.push_back(ctx.builder.getFloatAttr(e, v));
    }
  } else {
    int64_t s = static_cast<int64_t>(*startValue),
            d = static_cast<int64_t>(*delta);
    for (int64_t i = 0; i < n; ++i)
      values.push_back(ctx.builder.getIntegerAttr(e, s + i * d));
  }
  ctx.setOutput(0, ctx.constant(DenseElementsAttr::get(type, values)));
  return success();
}

/// The input's static shape as an int64 constant; opset 15 added start/end.
LogicalResult importShape(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = ctx.inputType(*x).getShape();
  int64_t rank = shape.size();
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clamp(ctx.intAttr("start", 0));
  int64_t end = clamp(ctx.intAttr("end", rank));
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(shape[d]);
  ctx.setOutput(0,
                ctx.constant(DenseElementsAttr::get(
                    RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                          ctx.builder.getI64Type()),
                    ArrayRef<int64_t>(dims))));
  return success();
}

LogicalResult importReshape(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto spec = ctx.intListInput(1, "shape");
  if (failed(x) || failed(spec))
    return failure();
  auto type = ctx.inputType(*x);
  bool allowZero = ctx.intAttr("allowzero", 0) != 0;
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(*spec)) {
    if (d == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return ctx.error() << "shape entry " << i
                           << " is 0 (copy the input's dimension) but the "
                              "input has rank "
                           << type.getRank();
      d = type.getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return ctx.error() << "the shape has more than one -1";
      inferred = i;
    } else if (d < 0) {
      return ctx.error() << "shape entry " << i << " is " << d;
    } else {
      known *= d;
    }
    shape.push_back(d);
  }
  int64_t total = type.getNumElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return ctx.error() << "cannot infer the -1 in shape: " << total
                         << " elements do not divide by " << known;
    shape[inferred] = total / known;
  } else if (known != total) {
    return ctx.error() << "cannot reshape " << x->getType() << " (" << total
                       << " elements) to " << known << " elements";
  }
  ctx.setOutput(0, ctx.reshape(*x, shape));
  return success();
}

LogicalResult importFlatten(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  int64_t rank = type.getRank(), axis = ctx.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.error() << "axis " << ctx.intAttr("axis", 1)
                       << " is out of range for rank " << rank;
  ctx.setOutput(0,
                ctx.reshape(*x, {product(type.getShape().take_front(axis)),
                                 product(type.getShape().drop_front(axis))}));
  return success();
}

LogicalResult importSqueeze(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto axes = axesInputOrAttr(ctx, 1);
  if (failed(x) || failed(axes))
    return failure();
  auto type = ctx.inputType(*x);
  SmallVector<int64_t> drop;
  if (axes->has_value()) {
    auto normalized = ctx.normalizeAxes(**axes, type.getRank());
    if (failed(normalized))
      return failure();
    for (int64_t a : *normalized)
      if (type.getDimSize(a) != 1)
        return ctx.error() << "cannot squeeze axis " << a << " of size "
                           << type.getDimSize(a);
    drop = *normalized;
  } else {
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) == 1)
        drop.push_back(d);
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(drop, d))
      shape.push_back(type.getDimSize(d));
  ctx.setOutput(0, ctx.reshape(*x, shape));
  return success();
}

LogicalResult importUnsqueeze(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto axes = axesInputOrAttr(ctx, 1);
  if (failed(x) || failed(axes))
    return failure();
  if (!axes->has_value())
    return ctx.error() << "needs axes";
  auto type = ctx.inputType(*x);
  int64_t outRank = type.getRank() + static_cast<int64_t>((*axes)->size());
  auto normalized = ctx.normalizeAxes(**axes, outRank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> in = type.getShape();
  for (int64_t d = 0, k = 0; d < outRank; ++d)
    shape.push_back(llvm::is_contained(*normalized, d) ? 1 : in[k++]);
  ctx.setOutput(0, ctx.reshape(*x, shape));
  return success();
}

LogicalResult importTranspose(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  int64_t rank = ctx.inputType(*x).getRank();
  SmallVector<int64_t> perm;
  if (auto attr = ctx.intsAttr("perm")) {
    perm = *attr;
  } else {
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  }
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  for (int64_t d = 0; d < rank; ++d)
    if (static_cast<int64_t>(sorted.size()) != rank || sorted[d] != d)
      return ctx.error() << "perm is not a permutation of the input's " << rank
                         << " dimensions";
  ctx.setOutput(0, ctx.create<TransposeOp>(*x, perm));
  return success();
}

LogicalResult importConcat(NodeContext &ctx) {
  if (ctx.node.input_size() < 1)
    return ctx.error() << "needs at least one input";
  SmallVector<Value> inputs;
  for (int i = 0; i < ctx.node.input_size(); ++i) {
    auto v = ctx.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  auto first = ctx.inputType(inputs.front());
  if (!ctx.attribute("axis"))
    return ctx.error() << "attribute 'axis' is missing";
  auto axis =
      ctx.normalizeAxis(ctx.intAttr("axis", 0), first.getRank(), "axis");
  if (failed(axis))
    return failure();
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto t = ctx.inputType(v);
    bool compatible = t.getRank() == first.getRank() &&
                      t.getElementType() == first.getElementType();
    for (int64_t d = 0; compatible && d < t.getRank(); ++d)
      compatible = d == *axis || t.getDimSize(d) == first.getDimSize(d);
    if (!compatible)
      return ctx.error() << "input " << i << " " << t
                         << " cannot be concatenated with input 0 " << first
                         << " along axis " << *axis;
  }
  ctx.setOutput(0, ctx.create<ConcatenateOp>(inputs, *axis));
  return success();
}

/// Pad in constant mode: per padded axis, negative pads crop (a slice) and
/// positive ones add `constant_value` (a concatenation with splats), so the
/// gradient flows through ops that have rules. HF's causal-LM loss pads the
/// labels with -100 this way. pads, constant_value and axes (opset 18) must
/// be constants; reflect, edge and wrap modes are not supported.
LogicalResult importPad(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  std::string mode = ctx.stringAttr("mode", "constant");
  if (mode != "constant")
    return ctx.error() << "mode '" << mode
                       << "' is not supported (only 'constant')";
  auto type = ctx.inputType(*x);
  int64_t rank = type.getRank();
  auto pads = ctx.intListInput(1, "pads");
  if (failed(pads))
    return failure();
  double value = 0;
  if (ctx.hasInput(2)) {
    auto v = ctx.scalarInput(2, "constant_value");
    if (failed(v))
      return failure();
    value = *v;
  }
  SmallVector<int64_t> axes;
  if (ctx.hasInput(3)) {
    auto given = ctx.intListInput(3, "axes");
    if (failed(given))
      return failure();
    auto normalized = ctx.normalizeAxes(*given, rank);
    if (failed(normalized))
      return failure();
    axes = *normalized;
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  int64_t n = axes.size();
  if (int64_t(pads->size()) != 2 * n)
    return ctx.error() << "pads has " << pads->size()
                       << " values, expected 2 x " << n << " (begins, ends)";
  Value v = *x;
  for (int64_t k = 0; k < n; ++k) {
    int64_t axis = axes[k], begin = (*pads)[k], end = (*pads)[k + n];
    auto t = ctx.inputType(v);
    if (begin < 0 || end < 0) {
      SmallVector<int64_t> start(rank, 0), limit(t.getShape()),
          strides(rank, 1);
      start[axis] = std::max<int64_t>(0, -begin);
      limit[axis] = t.getDimSize(axis) - std::max<int64_t>(0, -end);
      if (start[axis] > limit[axis])
        return ctx.error() << "pads crop " << -std::min<int64_t>(begin, 0)
                           << " + " << -std::min<int64_t>(end, 0)
                           << " elements from axis " << axis << " of size "
                           << t.getDimSize(axis);
      v = ctx.create<SliceOp>(v, start, limit, strides);
      t = ctx.inputType(v);
    }
    // [fill of `begin`] v [fill of `end`], for the positive pads.
    auto fill = [&](int64_t size) {
      SmallVector<int64_t> shape(t.getShape());
      shape[axis] = size;
      return ctx.splat(RankedTensorType::get(shape, t.getElementType()), value);
    };
    SmallVector<Value> parts;
    if (begin > 0)
      parts.push_back(fill(begin));
    parts.push_back(v);
    if (end > 0)
      parts.push_back(fill(end));
    if (parts.size() > 1)
      v = ctx.create<ConcatenateOp>(parts, axis);
  }
  ctx.setOutput(0, v);
  return success();
}

/// Slices parts of the given sizes along `axis` out of `x`.
static SmallVector<Value> sliceParts(NodeContext &ctx, Value x, int64_t axis,
                                     ArrayRef<int64_t> sizes) {
  auto type = ctx.inputType(x);
  SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
      strides(type.getRank(), 1);
  SmallVector<Value> parts;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    start[axis] = offset;
    limit[axis] = offset + size;
    parts.push_back(ctx.create<SliceOp>(x, start, limit, strides));
    offset += size;
  }
  return parts;
}

/// Checks split sizes against the dimension they divide.
static LogicalResult checkSplitSizes(NodeContext &ctx, ArrayRef<int64_t> sizes,
                                     int64_t dim) {
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return ctx.error() << "split sizes must not be negative";
    total += s;
  }
  if (total != dim)
    return ctx.error() << "split sizes sum to " << total
                       << ", not to the dimension size " << dim;
  return success();
}

LogicalResult importSplit(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis), parts = ctx.numOutputs();
  SmallVector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    auto split = ctx.intListInput(1, "split");
    if (failed(split))
      return failure();
    sizes = *split;
  } else if (auto attr = ctx.intsAttr("split")) {
    sizes = *attr;
  } else if (ctx.attribute("num_outputs")) {
    // Opset 18: ceil-sized parts, the last one smaller.
    int64_t n = ctx.intAttr("num_outputs", 0);
    if (n < 1 || n != parts)
      return ctx.error() << "num_outputs " << n << " does not match the "
                         << parts << " outputs";
    int64_t chunk = llvm::divideCeil(dim, n);
    for (int64_t i = 0, left = dim; i < n; ++i, left -= chunk)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  } else {
    if (parts < 1 || dim % parts != 0)
      return ctx.error() << "cannot split dimension " << dim << " into "
                         << parts << " equal parts";
    sizes.assign(parts, dim / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return ctx.error() << "split has " << sizes.size() << " parts but the node "
                       << parts << " outputs";
  if (failed(checkSplitSizes(ctx, sizes, dim)))
    return failure();
  for (auto [i, part] : llvm::enumerate(sliceParts(ctx, *x, *axis, sizes)))
    ctx.setOutput(i, part);
  return success();
}

/// A sequence of the parts of a split: size-1 parts without `split` (with
/// the axis squeezed when keepdims = 0), chunks of a scalar `split` (the
/// last smaller), or the sizes of a 1-D `split`.
LogicalResult importSplitToSequence(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", 0), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.hasInput(1)) {
    sizes.assign(dim, 1);
    squeeze = ctx.intAttr("keepdims", 1) == 0;
  } else {
    auto split = ctx.constantInput(1, "split");
    auto values = ctx.intListInput(1, "split");
    if (failed(split) || failed(values))
      return failure();
    if (split->getType().getRank() == 0) {
      int64_t chunk = values->front();
      if (chunk <= 0)
        return ctx.error() << "split " << chunk << " must be positive";
      for (int64_t left = dim; left > 0; left -= chunk)
        sizes.push_back(std::min(chunk, left));
    } else {
      sizes = *values;
    }
  }
  if (failed(checkSplitSizes(ctx, sizes, dim)))
    return failure();
  SmallVector<Value> parts = sliceParts(ctx, *x, *axis, sizes);
  if (squeeze) {
    SmallVector<int64_t> shape(type.getShape());
    shape.erase(shape.begin() + *axis);
    for (Value &part : parts)
      part = ctx.reshape(part, shape);
  }
  ctx.graph.defineSequence(ctx.node.output(0), std::move(parts));
  return success();
}

LogicalResult importSequenceAt(NodeContext &ctx) {
  if (!ctx.hasInput(0))
    return ctx.error() << "input 0 is missing";
  const SmallVector<Value> *items = ctx.graph.lookupSequence(ctx.node.input(0));
  if (!items)
    return ctx.error() << "input 0 '" << ctx.node.input(0)
                       << "' is not a sequence made by SplitToSequence (the "
                          "only sequences trainc imports)";
  auto position = ctx.scalarInput(1, "position");
  if (failed(position))
    return failure();
  int64_t n = items->size(), p = static_cast<int64_t>(*position);
  if (p < -n || p >= n)
    return ctx.error() << "position " << p << " is outside a sequence of " << n
                       << " tensors";
  ctx.setOutput(0, (*items)[p < 0 ? p + n : p]);
  return success();
}

LogicalResult importSlice(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto starts = ctx.intListInput(1, "starts");
  auto ends = ctx.intListInput(2, "ends");
  if (failed(x) || failed(starts) || failed(ends))
    return failure();
  auto type = ctx.inputType(*x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (ctx.hasInput(3)) {
    auto a = ctx.intListInput(3, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (ctx.hasInput(4)) {
    auto s = ctx.intListInput(4, "steps");
    if (failed(s))
      return failure();
    steps = *s;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return ctx.error() << "starts, ends, axes and steps have different lengths";
  auto normalized = ctx.normalizeAxes(axes, rank);
  if (failed(normalized))
    return failure();

  // Positive steps become one graph.slice; each negative step a gather of
  // the indices it visits (graph.slice strides are positive).
  SmallVector<int64_t> start(rank, 0), limit(type.getShape()), strides(rank, 1);
  SmallVector<std::pair<int64_t, SmallVector<int64_t>>> reversed;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = (*normalized)[i], dim = type.getDimSize(a), step = steps[i];
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (step == 0)
      return ctx.error() << "step must not be zero";
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      start[a] = s;
      limit[a] = std::max(s, e);
      strides[a] = step;
    } else {
      SmallVector<int64_t> indices;
      if (dim > 0) {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        for (int64_t k = s; k > e; k += step)
          indices.push_back(k);
      }
      reversed.push_back({a, indices});
    }
  }
  Value result = ctx.create<SliceOp>(*x, start, limit, strides);
  for (auto &[axis, indices] : reversed) {
    Value idx = ctx.constant(DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(indices.size())},
                              ctx.builder.getI64Type()),
        ArrayRef<int64_t>(indices)));
    result = ctx.create<GatherOp>(result, idx, axis);
  }
  ctx.setOutput(0, result);
  return success();
}

/// Bidirectional broadcast of the input with the given shape.
LogicalResult importExpand(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto shape = ctx.intListInput(1, "shape");
  if (failed(x) || failed(shape) ||
      failed(checkShape(ctx, *shape, "the shape")))
    return failure();
  Value target = ctx.constant(SplatElementsAttr::get(
      RankedTensorType::get(*shape, ctx.builder.getI1Type()),
      ctx.builder.getBoolAttr(false)));
  auto operands = ctx.broadcastAll({*x, target});
  if (failed(operands))
    return failure();
  ctx.setOutput(0, (*operands)[0]);
  return success();
}

/// Tile: output dim d is input dim d times repeats[d], whole copies of the
/// input one after another (out[j] = in[j mod size]). Each repeated dim is
/// broadcast along a new dim of size r just before it, and the two merged:
/// [.., r, size, ..] -> [.., r * size, ..] in row-major order is that.
LogicalResult importTile(NodeContext &ctx) {
  auto x = ctx.input(0);
  auto repeats = ctx.intListInput(1, "repeats");
  if (failed(x) || failed(repeats))
    return failure();
  auto type = ctx.inputType(*x);
  int64_t rank = type.getRank();
  if (static_cast<int64_t>(repeats->size()) != rank)
    return ctx.error() << "repeats has " << repeats->size()
                       << " entries for an input of rank " << rank;
  SmallVector<int64_t> spread, dims, tiled;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t r = (*repeats)[d], size = type.getDimSize(d);
    if (r < 0)
      return ctx.error() << "repeats[" << d << "] is negative (" << r << ")";
    if (r > kMaxConstantElements ||
        (size > 0 && r > kMaxConstantElements / size))
      return ctx.error() << "repeats[" << d << "] = " << r
                         << " makes dimension " << d << " longer than "
                         << kMaxConstantElements;
    if (r != 1)
      spread.push_back(r);
    dims.push_back(static_cast<int64_t>(spread.size()));
    spread.push_back(size);
    tiled.push_back(r * size);
  }
  if (failed(checkShape(ctx, spread, "the tiled output")) ||
      failed(checkShape(ctx, tiled, "the tiled output")))
    return failure();
  Value out = *x;
  if (!llvm::equal(spread, type.getShape()))
    out = ctx.create<BroadcastInDimOp>(
        RankedTensorType::get(spread, type.getElementType()), out, dims);
  ctx.setOutput(0, ctx.reshape(out, tiled));
  return success();
}

/// Keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last
/// two dimensions and zeroes the rest.
LogicalResult importTrilu(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    auto kv = ctx.scalarInput(1, "k");
    if (failed(kv))
      return failure();
    k = static_cast<int64_t>(*kv);
  }
  auto type = ctx.inputType(*x);
  if (type.getRank() < 2)
    return ctx.error() << "the input must have rank at least 2";
  bool upper = ctx.intAttr("upper", 1) != 0;
  int64_t rows = type.getDimSize(type.getRank() - 2),
          cols = type.getDimSize(type.getRank() - 1);
  if (rows * cols > kMaxConstantElements)
    return ctx.error() << "the matrix is too large for a constant mask";
  SmallVector<bool> keep;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  Value mask = ctx.constant(DenseElementsAttr::get(
      RankedTensorType::get({rows, cols}, ctx.builder.getI1Type()),
      ArrayRef<bool>(keep)));
  mask = ctx.broadcastTo(mask, type.getShape());
  ctx.setOutput(0, ctx.create<SelectOp>(mask, *x, ctx.splat(type, 0)));
  return success();
}

/// EyeLike: ones where column - row == k, zeros elsewhere, in the shape of
/// the 2-D input and of type `dtype` (default: the input's), from two
/// iotas (no constant the size of the matrix).
LogicalResult importEyeLike(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  if (type.getRank() != 2)
    return ctx.error() << "the input must be a matrix, got " << x->getType();
  Type element = type.getElementType();
  if (const auto *dtype = ctx.attribute("dtype")) {
    element = elementTypeFor(ctx.context(), static_cast<int32_t>(dtype->i()));
    // The types trainc computes in (the 8-bit floats and 2-/4-bit integers
    // are for Cast only).
    auto integer = dyn_cast_or_null<IntegerType>(element);
    auto floating = dyn_cast_or_null<FloatType>(element);
    bool computes = (floating && floating.getWidth() >= 16) ||
                    (integer && llvm::is_contained({1u, 8u, 16u, 32u, 64u},
                                                   integer.getWidth()));
    if (!computes)
      return ctx.error() << "dtype "
                         << onnxTypeName(static_cast<int32_t>(dtype->i()))
                         << " is not supported by EyeLike (trainc supports "
                            "FLOAT, DOUBLE, FLOAT16, BFLOAT16, BOOL and the 8- "
                            "to 64-bit integers here)";
  }
  auto indexType =
      RankedTensorType::get(type.getShape(), ctx.builder.getI64Type());
  Value offset = ctx.create<SubOp>(ctx.create<IotaOp>(indexType, 1),
                                   ctx.create<IotaOp>(indexType, 0));
  Value onDiagonal = ctx.create<CompareOp>(
      ComparisonDirection::EQ, offset,
      ctx.splat(indexType, static_cast<double>(ctx.intAttr("k", 0))));
  auto resultType = RankedTensorType::get(type.getShape(), element);
  ctx.setOutput(0, ctx.create<SelectOp>(onDiagonal, ctx.splat(resultType, 1),
                                        ctx.splat(resultType, 0)));
  return success();
}

/// `v` as printf's %g writes it (3, 3.8, 1e+300).
static std::string shortNumber(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

/// OneHot: along a new axis of `depth` classes, values[1] where the class
/// is the index (a negative index counts from depth), values[0] elsewhere;
/// an index outside [-depth, depth) gives a row of values[0].
LogicalResult importOneHot(NodeContext &ctx) {
  auto indices = ctx.input(0);
  auto depthValue = ctx.scalarInput(1, "depth (the number of classes)");
  auto values = ctx.input(2);
  if (failed(indices) || failed(depthValue) || failed(values))
    return failure();
  // Non-integer depth and indices are cast to int64, as the spec says.
  if (!(*depthValue >= 1 && *depthValue < double(kMaxConstantElements)))
    return ctx.error() << "depth " << shortNumber(*depthValue)
                       << " is not a class count of at least 1 (and below "
                       << kMaxConstantElements << ")";
  int64_t depth = static_cast<int64_t>(*depthValue);
  auto valuesType = ctx.inputType(*values);
  if (valuesType.getNumElements() != 2 || valuesType.getRank() != 1)
    return ctx.error() << "values must be [off_value, on_value], got "
                       << valuesType;
  auto type = ctx.inputType(*indices);
  if (type.getRank() == 0)
    return ctx.error() << "indices must have rank 1 or more (as the "
                          "specification's shape inference requires), got "
                       << type;
  auto axis =
      ctx.normalizeAxis(ctx.intAttr("axis", -1), type.getRank() + 1, "axis");
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + *axis, depth);
  auto i64 = ctx.builder.getI64Type();
  auto indexType = RankedTensorType::get(type.getShape(), i64);
  Value index = ctx.convert(*indices, i64);
  Value wrapped = ctx.create<SelectOp>(
      ctx.create<CompareOp>(ComparisonDirection::LT, index,
                            ctx.splat(indexType, 0)),
      ctx.create<AddOp>(index, ctx.splat(indexType, double(depth))), index);
  auto wideType = RankedTensorType::get(shape, i64);
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d <= type.getRank(); ++d)
    if (d != *axis)
      dims.push_back(d);
  Value isClass = ctx.create<CompareOp>(
      ComparisonDirection::EQ, ctx.create<IotaOp>(wideType, *axis),
      ctx.create<BroadcastInDimOp>(wideType, wrapped, dims));
  // off_value and on_value as scalars broadcast to the result.
  auto resultType = RankedTensorType::get(shape, valuesType.getElementType());
  auto scalarType = RankedTensorType::get({}, valuesType.getElementType());
  auto pick = [&](int64_t i) {
    Value one =
        ctx.create<SliceOp>(*values, ArrayRef<int64_t>{i},
                            ArrayRef<int64_t>{i + 1}, ArrayRef<int64_t>{1});
    return ctx.create<BroadcastInDimOp>(resultType,
                                        ctx.create<ReshapeOp>(scalarType, one),
                                        ArrayRef<int64_t>{});
  };
  ctx.setOutput(0, ctx.create<SelectOp>(isClass, pick(1), pick(0)));
  return success();
}

} // namespace trainc::onnx_import
