//===- GraphWindows.cpp - Convolutions, window reductions, padding -------===//
//
// Both window kinds work on strided slices of a padded input: one slice per
// window position. The padding (interior, edges, negative crops) is
// buildPad's, which StableHLO's pad lowers to as well.
//
// Window reductions (ONNX MaxPool and AveragePool, StableHLO's
// reduce_window) combine the K slices elementwise, in window order: sums
// and products by add and mul, max and min by a select chain that keeps
// the first extreme (and a NaN), so that autodiff's gradient goes to the
// first maximum of each window as PyTorch's max pooling and JAX's
// reduce_window gradient give it. A float max pool over 1 to 3 dimensions
// (NCHW's, or NHWC's after a transpose) reads its windows with
// graph.extract_patches instead and finds each window's first maximum
// with reductions over the window positions (patchWindowMax), so that its
// gradient is one graph.fold_patches where the chain's padded, interleaved
// and added a copy of x per window position.
//
// Convolutions: both frontends' (ONNX Conv, StableHLO convolution) in the
// channels-first layout: the input is dilated (zeros between neighbours),
// graph.extract_patches reads its patches [C, K, N, P] (P output
// positions; the padding read as zeros, so no padded copy) and one
// graph.dot_general, batched over the G groups, contracts the kernel
// reshaped to [G, O/G, C/G * K] with them as [G, C/G * K, N P]: every
// position of the batch is a column of one GEMM, and the kernel's gradient
// one GEMM with N P terms per sum. Autodiff differentiates the patches with
// graph.fold_patches (col2im). The patches cost K times the input's
// memory. Batch groups (StableHLO's, from JAX's kernel gradients) take one
// strided slice of the padded input per kernel position instead, joined
// into patches [N, C, K, P].
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphBuilders.h"
#include "trainc/Dialect/Graph/GraphOps.h"

using namespace mlir;

namespace trainc::graph {
namespace {

/// Shape-changing graph ops on tensors of one element type; padding and
/// dilation insert `fill` (a rank-0 tensor), or zeros without one.
struct Shaper {
  OpBuilder &b;
  Location loc;
  Type element;
  Value fill = {};

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
    if (fill)
      return b.createOrFold<BroadcastInDimOp>(loc, type, fill,
                                              ArrayRef<int64_t>{});
    return b.create<ConstantOp>(
        loc, SplatElementsAttr::get(type, b.getZeroAttr(element)));
  }

  /// v with dilation - 1 zeros (fills) between neighbours along dim.
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

  /// v with `low` and `high` zeros (fills) at the ends of dim; a negative
  /// amount removes that many from that end of the padded sequence (which
  /// may reach into the other end's padding). The caller keeps the total
  /// size at least 0.
  Value pad(Value v, int64_t dim, int64_t low, int64_t high) const {
    SmallVector<int64_t> s(shape(v));
    int64_t rank = s.size();
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
    v = concatenate(parts, dim);
    if (low >= 0 && high >= 0)
      return v;
    SmallVector<int64_t> start(rank, 0), limit(shape(v)), strides(rank, 1);
    start[dim] = std::max<int64_t>(-low, 0);
    limit[dim] -= std::max<int64_t>(-high, 0);
    return slice(v, start, limit, strides);
  }
};

int64_t product(ArrayRef<int64_t> values) {
  int64_t p = 1;
  for (int64_t v : values)
    p *= v;
  return p;
}

/// The number of windows along a dimension of `input` elements, dilated by
/// `base` and padded: 0 where the window's span exceeds the padded size (an
/// empty dimension, as XLA's shape inference gives); nullopt for a window
/// of no elements.
std::optional<int64_t> windowCount(int64_t input, int64_t window, int64_t base,
                                   int64_t dilation, int64_t low, int64_t high,
                                   int64_t stride) {
  if (window < 1)
    return std::nullopt;
  int64_t dilated = input == 0 ? 0 : (input - 1) * base + 1;
  int64_t padded = dilated + low + high;
  int64_t span = (window - 1) * dilation + 1;
  return padded < span ? 0 : (padded - span) / stride + 1;
}

/// Calls `visit(first)` for each window position in row-major order, with
/// `first` the position's offset in each dimension of `window` (scaled by
/// `dilation`).
template <typename Visit>
void forEachWindowPosition(ArrayRef<int64_t> window, ArrayRef<int64_t> dilation,
                           Visit visit) {
  int64_t d = window.size();
  SmallVector<int64_t> position(d, 0), first(d, 0);
  for (int64_t t = 0, k = product(window); t < k; ++t) {
    for (int64_t i = 0; i < d; ++i)
      first[i] = position[i] * dilation[i];
    visit(ArrayRef<int64_t>(first));
    for (int64_t i = d - 1; i >= 0 && ++position[i] == window[i]; --i)
      position[i] = 0;
  }
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
    std::optional<int64_t> n = windowCount(
        input[i], kernel[i], window.inputDilation[i], window.kernelDilation[i],
        window.padLow[i], window.padHigh[i], window.strides[i]);
    if (!n)
      return std::nullopt;
    out.push_back(*n);
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
  assert(out && "the caller checks the window");
  {
    ArrayRef<int64_t> xs = xType.getShape();
    SmallVector<int64_t> shape{xs[0] / window.batchGroups, g.shape(w)[0]};
    llvm::append_range(shape, *out);
    if (llvm::is_contained(shape, 0))
      return g.zeros(shape);
  }

  bool patches = window.featureGroups == 1 && window.batchGroups == 1;
  for (int64_t i = 0; i < d; ++i)
    patches = patches && window.strides[i] == kernelSizes[i] &&
              window.padLow[i] == 0 && window.padHigh[i] == 0 &&
              window.inputDilation[i] == 1 && window.kernelDilation[i] == 1;
  if (patches)
    return patchConvolution(g, x, w, *out);

  // Without batch groups: graph.extract_patches gives the patches [G,
  // depth, N P] directly (padding read as zeros, no padded copy), so the
  // product is one GEMM per group with N P columns and the weight's
  // gradient one with N P terms per sum; its gradient is one
  // graph.fold_patches. An input dilation still dilates x first, and a
  // dimension with a negative padding is padded and cropped first.
  if (window.batchGroups == 1 && d >= 1 && d <= 3) {
    SmallVector<int64_t> low, high;
    for (int64_t i = 0; i < d; ++i) {
      x = g.dilate(x, 2 + i, window.inputDilation[i]);
      int64_t lo = window.padLow[i], hi = window.padHigh[i];
      if (lo < 0 || hi < 0) { // a crop, which may reach into the padding
        x = g.pad(x, 2 + i, lo, hi);
        lo = hi = 0;
      }
      low.push_back(lo);
      high.push_back(hi);
    }
    ArrayRef<int64_t> xs = g.shape(x);
    int64_t n = xs[0], c = xs[1], o = g.shape(w)[0];
    int64_t p = product(*out), k = product(kernelSizes);
    int64_t groups = window.featureGroups, depth = c / groups * k;
    Value patches = builder.create<ExtractPatchesOp>(
        loc, x, kernelSizes, window.strides, window.kernelDilation, low, high);
    Value lhs = g.reshape(patches, {groups, depth, n * p});
    Value rhs = g.reshape(w, {groups, o / groups, depth});
    Value y = builder.createOrFold<DotGeneralOp>(
        loc, rhs, lhs, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{0},
        ArrayRef<int64_t>{2}, ArrayRef<int64_t>{1}); // [G, O/G, N P]
    y = g.transpose(g.reshape(y, {o, n, p}), {1, 0, 2});
    SmallVector<int64_t> shape{n, o};
    llvm::append_range(shape, *out);
    return g.reshape(y, shape);
  }

  // Batch groups (or no or more than 3 spatial dimensions): one strided
  // slice of the padded input per kernel position.
  for (int64_t i = 0; i < d; ++i) {
    x = g.dilate(x, 2 + i, window.inputDilation[i]);
    x = g.pad(x, 2 + i, window.padLow[i], window.padHigh[i]);
  }
  SmallVector<int64_t> xs(g.shape(x));
  int64_t n = xs[0], c = xs[1], o = g.shape(w)[0];
  int64_t p = product(*out), k = product(kernelSizes);

  // One strided slice per kernel position, in w's row-major order.
  SmallVector<Value> taps;
  forEachWindowPosition(
      kernelSizes, window.kernelDilation, [&](ArrayRef<int64_t> first) {
        SmallVector<int64_t> start{0, 0}, limit{n, c}, strides{1, 1};
        for (int64_t i = 0; i < d; ++i) {
          start.push_back(first[i]);
          limit.push_back(first[i] + ((*out)[i] - 1) * window.strides[i] + 1);
          strides.push_back(window.strides[i]);
        }
        taps.push_back(
            g.reshape(g.slice(x, start, limit, strides), {n, c, 1, p}));
      });
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

/// The window maximum of x [N, C, S...] over its 1 to 3 spatial
/// dimensions (window `kernel`, `strides`, `dilation`, padding `low` and
/// `high` of at least 0, `outSpatial` positions) from its patches, ties and
/// NaN (the last wins, as in PyTorch's kernel) as buildWindowReduce's
/// select chain (but a maximum of -0 comes out +0):
///
///   P [C, K, N, O]  = extract_patches(x), the padding set to `fill`
///   m [C, N, O]     = reduce_max(P, K)
///   chosen          = the last k where P is NaN, else the first where
///                     P == m: the highest of the scores K + k (NaN), -k
///                     (P == m) and -K (the others), in f32
///   y [N, C, O...]  = reduce_sum(chosen ? P : 0, K), transposed
///
/// Only the last line is differentiable in P, so autodiff sends each
/// window's gradient to its first maximum, as the chain does, through one
/// fold_patches, where the chain's gradient padded, interleaved and added
/// a full copy of x per window position.
Value patchWindowMax(const Shaper &g, Value x, ArrayRef<int64_t> kernel,
                     ArrayRef<int64_t> strides, ArrayRef<int64_t> dilation,
                     ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                     ArrayRef<int64_t> outSpatial, Value fill) {
  OpBuilder &b = g.b;
  Location loc = g.loc;
  ArrayRef<int64_t> xs = g.shape(x);
  int64_t d = int64_t(xs.size()) - 2, n = xs[0], c = xs[1];
  ArrayRef<int64_t> spatial = xs.drop_front(2);
  int64_t k = product(kernel), o = product(outSpatial);
  SmallVector<int64_t> shape{c, k, n, o};
  auto typed = [&](Type element) {
    return RankedTensorType::get(shape, element);
  };
  auto over = [&](Value v, ArrayRef<int64_t> dims, Type element) {
    return b.createOrFold<BroadcastInDimOp>(loc, typed(element), v, dims);
  };
  Value patches = g.reshape(
      b.create<ExtractPatchesOp>(loc, x, kernel, strides, dilation, low, high),
      shape);
  // Which [k, o] read the padding (extract_patches reads it as zeros).
  SmallVector<bool> padding;
  bool padded = false;
  forEachWindowPosition(kernel, dilation, [&](ArrayRef<int64_t> first) {
    SmallVector<int64_t> at(d, 0);
    for (int64_t t = 0; t < o; ++t) {
      bool outside = false;
      for (int64_t i = 0; i < d; ++i) {
        int64_t source = at[i] * strides[i] + first[i] - low[i];
        outside = outside || source < 0 || source >= spatial[i];
      }
      padding.push_back(outside);
      padded = padded || outside;
      for (int64_t i = d - 1; i >= 0 && ++at[i] == outSpatial[i]; --i)
        at[i] = 0;
    }
  });
  Type element = g.element, i1 = b.getI1Type(), f32 = b.getF32Type();
  if (padded) {
    Value mask = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(RankedTensorType::get({k, o}, i1),
                                    ArrayRef(padding)));
    patches = b.create<SelectOp>(loc, over(mask, {1, 3}, i1),
                                 over(fill, {}, element), patches);
  }
  Value max = b.create<ReduceMaxOp>(loc, patches, ArrayRef<int64_t>{1});
  Value holds = b.create<CompareOp>(loc, ComparisonDirection::EQ, patches,
                                    over(max, {0, 2, 3}, element));
  Value isNaN =
      b.create<CompareOp>(loc, ComparisonDirection::NE, patches, patches);
  // Each position's score, in f32 (exact below 2^24): K + k for a NaN (the
  // last NaN scores highest), -k for a maximum (the first scores highest),
  // -K otherwise. The highest score is the chosen position's alone.
  auto perPosition = [&](auto score) {
    SmallVector<float> values;
    for (int64_t t = 0; t < k; ++t)
      values.push_back(float(score(t)));
    return over(b.create<ConstantOp>(
                    loc, DenseElementsAttr::get(RankedTensorType::get({k}, f32),
                                                ArrayRef(values))),
                {1}, f32);
  };
  auto scalar = [&](Type type, double value) {
    return over(b.create<ConstantOp>(
                    loc, DenseElementsAttr::get(RankedTensorType::get({}, type),
                                                b.getFloatAttr(type, value))),
                {}, type);
  };
  Value score = b.create<SelectOp>(
      loc, isNaN, perPosition([&](int64_t t) { return k + t; }),
      b.create<SelectOp>(loc, holds, perPosition([](int64_t t) { return -t; }),
                         scalar(f32, -double(k))));
  Value best = b.create<ReduceMaxOp>(loc, score, ArrayRef<int64_t>{1});
  Value chosen = b.create<CompareOp>(loc, ComparisonDirection::EQ, score,
                                     over(best, {0, 2, 3}, f32));
  // A sum from +0, so a maximum of -0 comes out +0 (the chain keeps -0).
  Value y = b.create<ReduceSumOp>(
      loc, b.create<SelectOp>(loc, chosen, patches, scalar(element, 0.0)),
      ArrayRef<int64_t>{1}); // [C, N, O]
  SmallVector<int64_t> out{n, c};
  llvm::append_range(out, outSpatial);
  return g.reshape(g.transpose(y, {1, 0, 2}), out);
}

/// buildWindowReduce's max of floats from patches (patchWindowMax) where
/// the window covers 1 to 3 dimensions with padding of at least 0 and no
/// base dilation, and is 1 (stride 1, no padding) along the others, which
/// are moved in front and merged into two ([N, C, S...] for NCHW, a
/// transpose for JAX's NHWC); and where the patches take at most 16 times
/// x's memory (a 3x3 window of stride 1 takes 9). Null otherwise.
Value windowMaxFromPatches(const Shaper &g, Value x,
                           const WindowReduction &window, ArrayRef<int64_t> out,
                           Value fill) {
  ArrayRef<int64_t> xs = g.shape(x);
  SmallVector<int64_t> whole, spatial;
  for (int64_t i = 0; i < int64_t(xs.size()); ++i) {
    if (window.baseDilation[i] != 1 || window.padLow[i] < 0 ||
        window.padHigh[i] < 0)
      return Value();
    bool one = window.sizes[i] == 1 && window.strides[i] == 1 &&
               window.padLow[i] == 0 && window.padHigh[i] == 0;
    (one ? whole : spatial).push_back(i);
  }
  int64_t d = int64_t(spatial.size());
  if (d < 1 || d > 3)
    return Value();
  SmallVector<int64_t> kernel, strides, dilation, low, high, outSpatial,
      permutation(whole), sizes;
  int64_t a = 1, bSize = 1, positions = 1, inputs = 1;
  for (auto [j, i] : llvm::enumerate(whole)) {
    (j + 1 < whole.size() ? a : bSize) *= xs[i];
    sizes.push_back(xs[i]);
  }
  for (int64_t i : spatial) {
    kernel.push_back(window.sizes[i]);
    strides.push_back(window.strides[i]);
    dilation.push_back(window.windowDilation[i]);
    low.push_back(window.padLow[i]);
    high.push_back(window.padHigh[i]);
    outSpatial.push_back(out[i]);
    permutation.push_back(i);
    positions *= out[i] * window.sizes[i];
    inputs *= xs[i];
  }
  if (positions > 16 * inputs)
    return Value();
  SmallVector<int64_t> merged{a, bSize};
  for (int64_t i : spatial)
    merged.push_back(xs[i]);
  Value y = patchWindowMax(g, g.reshape(g.transpose(x, permutation), merged),
                           kernel, strides, dilation, low, high, outSpatial,
                           fill); // [A, B, O...]
  llvm::append_range(sizes, outSpatial);
  y = g.reshape(y, sizes);
  SmallVector<int64_t> inverse(permutation.size());
  for (auto [j, i] : llvm::enumerate(permutation))
    inverse[i] = int64_t(j);
  return g.transpose(y, inverse);
}

std::optional<SmallVector<int64_t>>
windowReductionSizes(ArrayRef<int64_t> input, const WindowReduction &window) {
  SmallVector<int64_t> out;
  for (size_t i = 0; i < input.size(); ++i) {
    std::optional<int64_t> n =
        windowCount(input[i], window.sizes[i], window.baseDilation[i],
                    window.windowDilation[i], window.padLow[i],
                    window.padHigh[i], window.strides[i]);
    if (!n)
      return std::nullopt;
    out.push_back(*n);
  }
  return out;
}

Value buildWindowReduce(OpBuilder &builder, Location loc, Value x,
                        const WindowReduction &window, WindowCombiner combiner,
                        Value fill) {
  auto type = cast<RankedTensorType>(x.getType());
  Shaper g{builder, loc, type.getElementType(), fill};
  int64_t rank = type.getRank();
  std::optional<SmallVector<int64_t>> out =
      windowReductionSizes(type.getShape(), window);
  assert(out && "the caller checks the window");
  if (llvm::is_contained(*out, 0))
    return g.zeros(*out);
  // A max pool of floats: from patches where they fit.
  if (combiner == WindowCombiner::Max && isa<FloatType>(type.getElementType()))
    if (Value y = windowMaxFromPatches(g, x, window, *out, fill))
      return y;
  for (int64_t i = 0; i < rank; ++i) {
    x = g.dilate(x, i, window.baseDilation[i]);
    x = g.pad(x, i, window.padLow[i], window.padHigh[i]);
  }
  bool isFloat = isa<FloatType>(type.getElementType());
  Value result;
  forEachWindowPosition(
      window.sizes, window.windowDilation, [&](ArrayRef<int64_t> first) {
        SmallVector<int64_t> limit;
        for (int64_t i = 0; i < rank; ++i)
          limit.push_back(first[i] + ((*out)[i] - 1) * window.strides[i] + 1);
        Value v = g.slice(x, first, limit, window.strides);
        if (!result) {
          result = v;
          return;
        }
        switch (combiner) {
        case WindowCombiner::Add:
          result = builder.createOrFold<AddOp>(loc, result, v);
          return;
        case WindowCombiner::Mul:
          result = builder.createOrFold<MulOp>(loc, result, v);
          return;
        case WindowCombiner::Max:
        case WindowCombiner::Min: {
          // v replaces the running extreme only where strictly beyond it
          // (or NaN): ties keep the first.
          Value beyond = builder.createOrFold<CompareOp>(
              loc,
              combiner == WindowCombiner::Max ? ComparisonDirection::GT
                                              : ComparisonDirection::LT,
              v, result);
          if (isFloat) {
            Value nan = builder.createOrFold<CompareOp>(
                loc, ComparisonDirection::NE, v, v);
            beyond = builder.createOrFold<SelectOp>(loc, beyond, beyond, nan);
          }
          result = builder.createOrFold<SelectOp>(loc, beyond, v, result);
          return;
        }
        }
      });
  return result;
}

Value buildPad(OpBuilder &builder, Location loc, Value x, Value fill,
               ArrayRef<int64_t> low, ArrayRef<int64_t> high,
               ArrayRef<int64_t> interior) {
  auto type = cast<RankedTensorType>(x.getType());
  Shaper g{builder, loc, type.getElementType(), fill};
  for (int64_t d = 0; d < type.getRank(); ++d) {
    x = g.dilate(x, d, interior[d] + 1);
    x = g.pad(x, d, low[d], high[d]);
  }
  return x;
}

Value buildReverse(OpBuilder &builder, Location loc, Value x,
                   ArrayRef<int64_t> dims) {
  for (int64_t d : dims) {
    int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(d);
    if (n <= 1)
      continue;
    SmallVector<int64_t> positions;
    for (int64_t i = n - 1; i >= 0; --i)
      positions.push_back(i);
    auto indexType = RankedTensorType::get({n}, builder.getI64Type());
    Value indices = builder.create<ConstantOp>(
        loc, DenseElementsAttr::get(indexType, ArrayRef(positions)));
    x = builder.createOrFold<GatherOp>(loc, x, indices, d);
  }
  return x;
}

} // namespace trainc::graph
