//===- GraphConvolution.cpp - Convolution as im2col and one product -------===//
//
// Both frontends' convolutions (ONNX Conv, StableHLO convolution) in the
// channels-first layout: the input is dilated (zeros between neighbours)
// and padded, each kernel position k takes the strided slice of the input
// that it multiplies, the K slices are joined into patches [N, C, K, P]
// (P output positions) and one graph.dot_general, batched over the
// groups, contracts them with the kernel reshaped to [G, O/G, C/G * K].
// Autodiff differentiates the slices, joins and product as usual, so
// convolutions train with no rule of their own; the patches cost K times
// the input's memory.
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphBuilders.h"
#include "trainc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace trainc::graph {
namespace {

/// Shape-changing graph ops on tensors of one element type.
struct Shaper {
  OpBuilder &b;
  Location loc;
  Type element;

  ArrayRef<int64_t> shape(Value v) const {
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) const {
    return b.createOrFold<ReshapeOp>(loc, RankedTensorType::get(shape, element),
                                     v);
  }
  Value transpose(Value v, ArrayRef<int64_t> permutation) const {
    return b.createOrFold<TransposeOp>(loc, v, permutation);
  }
  Value slice(Value v, ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
              ArrayRef<int64_t> strides) const {
    return b.createOrFold<SliceOp>(loc, v, start, limit, strides);
  }
  Value concatenate(ValueRange values, int64_t dim) const {
    return values.size() == 1 ? values.front()
                              : b.createOrFold<ConcatenateOp>(loc, values, dim);
  }
  Value zeros(ArrayRef<int64_t> shape) const {
    auto type = RankedTensorType::get(shape, element);
    return b.create<ConstantOp>(
        loc, SplatElementsAttr::get(type, b.getZeroAttr(element)));
  }

  /// v with dilation - 1 zeros between neighbours along dim.
  Value dilate(Value v, int64_t dim, int64_t dilation) const {
    SmallVector<int64_t> s(shape(v));
    int64_t n = s[dim];
    if (dilation == 1 || n <= 1)
      return v;
    SmallVector<int64_t> split(s);
    split.insert(split.begin() + dim + 1, 1);
    SmallVector<int64_t> fill(split);
    fill[dim + 1] = dilation - 1;
    Value joined = concatenate({reshape(v, split), zeros(fill)}, dim + 1);
    SmallVector<int64_t> merged(s);
    merged[dim] = n * dilation;
    SmallVector<int64_t> start(s.size(), 0), limit(merged),
        strides(s.size(), 1);
    limit[dim] = (n - 1) * dilation + 1;
    return slice(reshape(joined, merged), start, limit, strides);
  }

  /// v with `low` and `high` zeros at the ends of dim (negative: removed).
  Value pad(Value v, int64_t dim, int64_t low, int64_t high) const {
    SmallVector<int64_t> s(shape(v));
    int64_t rank = s.size();
    if (low < 0 || high < 0) {
      SmallVector<int64_t> start(rank, 0), limit(s), strides(rank, 1);
      start[dim] = std::max<int64_t>(-low, 0);
      limit[dim] = s[dim] - std::max<int64_t>(-high, 0);
      v = slice(v, start, limit, strides);
      s.assign(shape(v).begin(), shape(v).end());
    }
    SmallVector<Value> parts;
    auto edge = [&](int64_t size) {
      SmallVector<int64_t> e(s);
      e[dim] = size;
      parts.push_back(zeros(e));
    };
    if (low > 0)
      edge(low);
    parts.push_back(v);
    if (high > 0)
      edge(high);
    return concatenate(parts, dim);
  }
};

int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}

/// Non-overlapping patches: x [N, C, o1 k1, ...] -> [N, o1, ..., C, k1,
/// ...] -> [N P, C K], times w [O, C K]^T -> [N, O, o...].
Value patchConvolution(const Shaper &g, Value x, Value w,
                       ArrayRef<int64_t> out) {
  ArrayRef<int64_t> xs = g.shape(x), ws = g.shape(w);
  int64_t d = out.size(), n = xs[0], c = xs[1], o = ws[0];
  ArrayRef<int64_t> kernel = ws.drop_front(2);
  SmallVector<int64_t> start(d + 2, 0), limit{n, c}, strides(d + 2, 1);
  for (int64_t i = 0; i < d; ++i)
    limit.push_back(out[i] * kernel[i]);
  // Positions past the last whole patch reach no output.
  if (ArrayRef<int64_t>(limit) != xs)
    x = g.slice(x, start, limit, strides);
  SmallVector<int64_t> split{n, c}, permutation{0};
  for (int64_t i = 0; i < d; ++i) {
    split.push_back(out[i]);
    split.push_back(kernel[i]);
    permutation.push_back(2 + 2 * i);
  }
  permutation.push_back(1);
  for (int64_t i = 0; i < d; ++i)
    permutation.push_back(3 + 2 * i);
  int64_t p = product(out), k = product(kernel);
  Value patches =
      g.reshape(g.transpose(g.reshape(x, split), permutation), {n * p, c * k});
  Value y = g.b.createOrFold<DotGeneralOp>(
      g.loc, patches, g.reshape(w, {o, c * k}), ArrayRef<int64_t>{},
      ArrayRef<int64_t>{}, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
  SmallVector<int64_t> spread{n};
  llvm::append_range(spread, out);
  spread.push_back(o);
  SmallVector<int64_t> toChannelsFirst{0, d + 1};
  for (int64_t i = 0; i < d; ++i)
    toChannelsFirst.push_back(1 + i);
  return g.transpose(g.reshape(y, spread), toChannelsFirst);
}

} // namespace

std::optional<SmallVector<int64_t>>
convolutionOutputSizes(ArrayRef<int64_t> input, ArrayRef<int64_t> kernel,
                       const ConvolutionWindow &window) {
  SmallVector<int64_t> out;
  for (size_t i = 0; i < input.size(); ++i) {
    int64_t dilated =
        input[i] == 0 ? 0 : (input[i] - 1) * window.inputDilation[i] + 1;
    int64_t padded = dilated + window.padLow[i] + window.padHigh[i];
    int64_t span = (kernel[i] - 1) * window.kernelDilation[i] + 1;
    if (kernel[i] < 1 || padded < span)
      return std::nullopt;
    out.push_back((padded - span) / window.strides[i] + 1);
  }
  return out;
}

Value buildConvolution(OpBuilder &builder, Location loc, Value x, Value w,
                       const ConvolutionWindow &window) {
  auto xType = cast<RankedTensorType>(x.getType());
  Shaper g{builder, loc, xType.getElementType()};
  int64_t d = xType.getRank() - 2;
  ArrayRef<int64_t> kernel = g.shape(w).drop_front(2);
  SmallVector<int64_t> kernelSizes(kernel);
  std::optional<SmallVector<int64_t>> out = convolutionOutputSizes(
      xType.getShape().drop_front(2), kernelSizes, window);
  assert(out && "the caller checks the window fits");

  bool patches = window.featureGroups == 1 && window.batchGroups == 1;
  for (int64_t i = 0; i < d; ++i)
    patches = patches && window.strides[i] == kernelSizes[i] &&
              window.padLow[i] == 0 && window.padHigh[i] == 0 &&
              window.inputDilation[i] == 1 && window.kernelDilation[i] == 1;
  if (patches)
    return patchConvolution(g, x, w, *out);

  for (int64_t i = 0; i < d; ++i) {
    x = g.dilate(x, 2 + i, window.inputDilation[i]);
    x = g.pad(x, 2 + i, window.padLow[i], window.padHigh[i]);
  }
  SmallVector<int64_t> xs(g.shape(x));
  int64_t n = xs[0], c = xs[1], o = g.shape(w)[0];
  int64_t p = product(*out), k = product(kernelSizes);

  // One strided slice per kernel position, in w's row-major order.
  SmallVector<Value> taps;
  SmallVector<int64_t> position(d, 0);
  for (int64_t t = 0; t < k; ++t) {
    SmallVector<int64_t> start{0, 0}, limit{n, c}, strides{1, 1};
    for (int64_t i = 0; i < d; ++i) {
      int64_t first = position[i] * window.kernelDilation[i];
      start.push_back(first);
      limit.push_back(first + ((*out)[i] - 1) * window.strides[i] + 1);
      strides.push_back(window.strides[i]);
    }
    taps.push_back(g.reshape(g.slice(x, start, limit, strides), {n, c, 1, p}));
    for (int64_t i = d - 1; i >= 0 && ++position[i] == kernelSizes[i]; --i)
      position[i] = 0;
  }
  Value lhs = g.concatenate(taps, 2); // [N, C, K, P]

  // [G, rows, depth, P]: feature groups split the channels, batch groups
  // the batch.
  int64_t groups, rows, depth;
  if (window.batchGroups > 1) {
    groups = window.batchGroups;
    rows = n / groups;
    depth = c * k;
    lhs = g.reshape(lhs, {groups, rows, depth, p});
  } else {
    groups = window.featureGroups;
    rows = n;
    depth = c / groups * k;
    lhs = g.transpose(g.reshape(lhs, {n, groups, depth, p}), {1, 0, 2, 3});
  }
  Value rhs = g.reshape(w, {groups, o / groups, depth});
  Value y = builder.createOrFold<DotGeneralOp>(
      loc, lhs, rhs, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{0},
      ArrayRef<int64_t>{2}, ArrayRef<int64_t>{2}); // [G, rows, P, O/G]
  y = g.transpose(y, {1, 0, 3, 2});                // [rows, G, O/G, P]
  SmallVector<int64_t> shape{rows, o};
  llvm::append_range(shape, *out);
  return g.reshape(y, shape);
}

} // namespace trainc::graph
