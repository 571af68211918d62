//===- ResizeOps.cpp - ONNX Resize, DepthToSpace and SpaceToDepth ---------===//
//
// DepthToSpace and SpaceToDepth (pixel shuffle) are a reshape, a transpose
// and a reshape.
//
// Resize, one axis at a time (every mode is separable): each output
// position's source coordinate is computed here, at import, from the
// coordinate transformation mode, so the graph holds one graph.gather of
// constant indices per resized axis (nearest), two gathers and their
// constant weights (linear), or a gather and a weight per tap of the
// filter: 4 for cubic, more for a downsampling filter widened by antialias
// (as the ONNX reference computes them: taps beyond an edge read the edge,
// or, with exclude_outside, are dropped and the rest renormalized).
// Autodiff differentiates the gathers (scatter-adds), so upsampling
// decoders train.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// The source coordinate of output position x along an axis of `in`
/// elements resized to `out` by `scale`, per coordinate_transformation_mode.
double sourceCoordinate(StringRef mode, double x, int64_t in, int64_t out,
                        double scale) {
  if (mode == "asymmetric")
    return x / scale;
  if (mode == "align_corners")
    return out == 1 ? 0.0 : x * double(in - 1) / double(out - 1);
  if (mode == "pytorch_half_pixel")
    return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "half_pixel_symmetric") {
    double adjustment = double(out) / (scale * double(in));
    double offset = double(in) / 2 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5; // half_pixel
}

/// The nearest source index of coordinate c, per nearest_mode, clamped.
int64_t nearestIndex(StringRef mode, double c, int64_t in) {
  double f = std::floor(c);
  double i;
  if (mode == "floor")
    i = f;
  else if (mode == "ceil")
    i = std::ceil(c);
  else if (c - f == 0.5)
    i = mode == "round_prefer_ceil" ? f + 1 : f;
  else
    i = std::round(c);
  return std::clamp<int64_t>(int64_t(i), 0, in - 1);
}

/// The interpolation filter of mode linear (a = 0 unused) or cubic (Keys'
/// kernel with coefficient a) at distance x from the source coordinate.
double filterAt(bool cubic, double a, double x) {
  x = std::fabs(x);
  if (!cubic)
    return std::max(0.0, 1 - x);
  if (x <= 1)
    return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2)
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// The taps (source indices, clamped to the edges, and weights) of the
/// linear or cubic filter at source coordinate c, on an axis of `in`
/// elements; `widen` < 1 stretches the filter by 1 / widen (antialias
/// when downsampling). As the ONNX reference: the n taps nearest c,
/// preferring the lower ones at a tie, each weighted by the filter at its
/// distance times `widen`; widened filters are normalized to sum 1; with
/// `excludeOutside`, taps beyond an edge weigh 0 and the rest are
/// normalized.
void filterTaps(bool cubic, double a, double widen, bool excludeOutside,
                double c, int64_t in, SmallVectorImpl<int64_t> &indices,
                SmallVectorImpl<double> &weights) {
  double radius = cubic ? 2 : 1;
  int64_t n = -2 * int64_t(std::floor(-radius / widen));
  int64_t below = int64_t(std::floor(c));
  double r = c - double(below);
  if (r == 0) { // On a source element: the n nearest reach one lower.
    below -= 1;
    r = 1;
  }
  indices.clear();
  weights.clear();
  double sum = 0;
  for (int64_t i = 1 - n / 2; i <= n / 2; ++i) {
    int64_t at = below + i;
    double w = filterAt(cubic, a, widen * (double(i) - r));
    if (excludeOutside && (at < 0 || at >= in))
      w = 0;
    indices.push_back(std::clamp<int64_t>(at, 0, in - 1));
    weights.push_back(w);
    sum += w;
  }
  if (widen < 1 || excludeOutside)
    for (double &w : weights)
      w /= sum;
}

/// A constant vector, as a tensor of `type`'s element type.
Value vectorConstant(NodeContext &ctx, ArrayRef<int64_t> values) {
  auto type =
      RankedTensorType::get({int64_t(values.size())}, ctx.builder.getI64Type());
  return ctx.builder.create<ConstantOp>(ctx.loc,
                                        DenseElementsAttr::get(type, values));
}

/// `weights` (one per position along axis d of `type`), in its element
/// type, broadcast to `type`.
Value weightsAlong(NodeContext &ctx, RankedTensorType type, int64_t d,
                   ArrayRef<double> weights) {
  auto f64 = RankedTensorType::get({int64_t(weights.size())},
                                   ctx.builder.getF64Type());
  Value w = ctx.create<ConvertOp>(
      RankedTensorType::get({int64_t(weights.size())}, type.getElementType()),
      ctx.builder.create<ConstantOp>(ctx.loc,
                                     DenseElementsAttr::get(f64, weights)));
  return ctx.create<BroadcastInDimOp>(type, w, ArrayRef<int64_t>{d});
}

/// Above this many taps a resized axis is one product with its [in, out]
/// matrix of weights rather than a gather per tap (a filter widened by
/// antialias for a large downsampling has 4 times the factor), where the
/// matrix is at least a quarter full: its product then costs at most 4
/// times the gathers' multiply-adds, in one op.
constexpr size_t kMaxGatheredTaps = 16;

/// y resized along axis d to `out` positions by a filter: `tapsOf(o,
/// indices, weights)` gives output position o's taps (as many for every
/// o). The sum of a gather and its weights per tap, or for many taps the
/// product with the filter's matrix.
Value resizeByTaps(NodeContext &ctx, Value y, int64_t d, int64_t out,
                   function_ref<void(int64_t, SmallVectorImpl<int64_t> &,
                                     SmallVectorImpl<double> &)>
                       tapsOf) {
  SmallVector<SmallVector<int64_t>> indices;
  SmallVector<SmallVector<double>> weights;
  SmallVector<int64_t> tapIndices;
  SmallVector<double> tapWeights;
  for (int64_t o = 0; o < out; ++o) {
    tapsOf(o, tapIndices, tapWeights);
    indices.resize(tapIndices.size());
    weights.resize(tapIndices.size());
    for (size_t k = 0; k < tapIndices.size(); ++k) {
      indices[k].push_back(tapIndices[k]);
      weights[k].push_back(tapWeights[k]);
    }
  }
  auto type = ctx.inputType(y);
  int64_t in = type.getDimSize(d);
  if (indices.size() > kMaxGatheredTaps && in <= 4 * int64_t(indices.size())) {
    int64_t rank = type.getRank();
    SmallVector<double> matrix(in * out, 0.0); // [in, out]
    for (size_t k = 0; k < indices.size(); ++k)
      for (int64_t o = 0; o < out; ++o)
        matrix[indices[k][o] * out + o] += weights[k][o];
    auto f64 = RankedTensorType::get({in, out}, ctx.builder.getF64Type());
    Value m = ctx.create<ConvertOp>(
        RankedTensorType::get({in, out}, type.getElementType()),
        ctx.builder.create<ConstantOp>(
            ctx.loc, DenseElementsAttr::get(f64, ArrayRef(matrix))));
    // [.., in, ..] x [in, out] -> [.. .., out], then out back to axis d.
    Value product =
        ctx.create<DotGeneralOp>(y, m, ArrayRef<int64_t>{}, ArrayRef<int64_t>{},
                                 ArrayRef<int64_t>{d}, ArrayRef<int64_t>{0});
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i < d; ++i)
      perm.push_back(i);
    perm.push_back(rank - 1);
    for (int64_t i = d; i < rank - 1; ++i)
      perm.push_back(i);
    return ctx.create<TransposeOp>(product, perm);
  }
  Value sum;
  for (size_t k = 0; k < indices.size(); ++k) {
    Value g = ctx.create<GatherOp>(y, vectorConstant(ctx, indices[k]), d);
    Value term = ctx.create<MulOp>(
        weightsAlong(ctx, ctx.inputType(g), d, weights[k]), g);
    sum = sum ? ctx.create<AddOp>(sum, term) : term;
  }
  return sum;
}

} // namespace

/// Resize (opsets 13 and later): X, roi (unused unless tf_crop_and_resize,
/// which is refused), constant scales or sizes; modes nearest, linear and
/// cubic (cubic_coeff_a, exclude_outside), antialias; axes and
/// keep_aspect_ratio_policy stretch.
LogicalResult importResize(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  int64_t rank = type.getRank();
  std::string mode = ctx.stringAttr("mode", "nearest");
  std::string transform =
      ctx.stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest = ctx.stringAttr("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.error() << "mode '" << mode
                       << "' is not known (nearest, linear or cubic)";
  if (mode != "nearest" && failed(ctx.requireFloat(*x, "X")))
    return failure();
  bool cubic = mode == "cubic";
  double a = ctx.floatAttr("cubic_coeff_a", -0.75);
  bool antialias = ctx.intAttr("antialias", 0) != 0;
  bool excludeOutside = ctx.intAttr("exclude_outside", 0) != 0;
  if (transform != "half_pixel" && transform != "pytorch_half_pixel" &&
      transform != "align_corners" && transform != "asymmetric" &&
      transform != "half_pixel_symmetric")
    return ctx.error() << "coordinate_transformation_mode '" << transform
                       << "' is not supported (tf_crop_and_resize reads roi)";
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" &&
      nearest != "floor" && nearest != "ceil")
    return ctx.error() << "nearest_mode '" << nearest << "' is not known";
  if (ctx.stringAttr("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.error() << "keep_aspect_ratio_policy other than stretch is "
                          "not supported";
  SmallVector<int64_t> axes;
  if (auto given = ctx.intsAttr("axes")) {
    for (int64_t a : *given) {
      auto axis = ctx.normalizeAxis(a, rank, "axes");
      if (failed(axis))
        return failure();
      if (llvm::is_contained(axes, *axis))
        return ctx.error() << "names axis " << *axis << " twice in axes";
      axes.push_back(*axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  // Scales (input 2) or sizes (input 3), one per axis.
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  if (ctx.hasInput(3)) {
    auto given = ctx.intListInput(3, "sizes");
    if (failed(given))
      return failure();
    sizes = *given;
  } else if (ctx.hasInput(2)) {
    auto given = ctx.constantInput(2, "scales");
    if (failed(given))
      return failure();
    for (APFloat v : given->getValues<APFloat>())
      scales.push_back(v.convertToDouble());
  } else {
    return ctx.error() << "needs constant scales or sizes";
  }
  size_t count = sizes.empty() ? scales.size() : sizes.size();
  if (count != axes.size())
    return ctx.error() << "has " << count << " scales or sizes for "
                       << axes.size() << " axes";
  // Filters weigh and sum in f32 for 16-bit inputs (rounded once at the
  // end): in bf16 a cubic filter's sum of 4 products alone is off by
  // several of its ulps.
  Type element = type.getElementType();
  bool widened = mode != "nearest" && element.getIntOrFloatBitWidth() == 16;
  Value y = *x;
  if (widened)
    y = ctx.convert(y, ctx.builder.getF32Type());
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t d = axes[k], in = type.getDimSize(d);
    double scale = sizes.empty() ? scales[k] : double(sizes[k]) / double(in);
    int64_t out = sizes.empty() ? int64_t(std::floor(in * scale)) : sizes[k];
    if (!(scale > 0) || out < 1 || in < 1)
      return ctx.error() << "resizes axis " << d << " of size " << in << " by "
                         << scale << " to " << out
                         << "; scales must be positive and sizes at least 1";
    if (out == in && scale == 1.0)
      continue;
    // Antialias widens the filter when downsampling.
    double widen = antialias && scale < 1 ? scale : 1;
    if (mode != "nearest" && (cubic || widen < 1 || excludeOutside)) {
      y = resizeByTaps(ctx, y, d, out, [&](int64_t o, auto &idx, auto &w) {
        double c = sourceCoordinate(transform, double(o), in, out, scale);
        filterTaps(cubic, a, widen, excludeOutside, c, in, idx, w);
      });
      continue;
    }
    SmallVector<int64_t> first, second;
    SmallVector<double> weights;
    for (int64_t o = 0; o < out; ++o) {
      double c = sourceCoordinate(transform, double(o), in, out, scale);
      if (mode == "nearest") {
        first.push_back(nearestIndex(nearest, c, in));
        continue;
      }
      c = std::clamp(c, 0.0, double(in - 1));
      int64_t i0 = int64_t(std::floor(c));
      first.push_back(i0);
      second.push_back(std::min(i0 + 1, in - 1));
      weights.push_back(c - double(i0));
    }
    Value near = ctx.create<GatherOp>(y, vectorConstant(ctx, first), d);
    if (mode == "nearest") {
      y = near;
      continue;
    }
    Value far = ctx.create<GatherOp>(y, vectorConstant(ctx, second), d);
    Value w1 = weightsAlong(ctx, ctx.inputType(near), d, weights);
    // near + w1 (far - near): exact at w1 = 0 and w1 = 1.
    y = ctx.create<AddOp>(near,
                          ctx.create<MulOp>(w1, ctx.create<SubOp>(far, near)));
  }
  ctx.setOutput(0, widened ? ctx.convert(y, element) : y);
  return success();
}

namespace {

/// X [N, C, H, W] and the blocksize b (at least 1).
FailureOr<std::pair<Value, int64_t>> blockInput(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  int64_t b = ctx.intAttr("blocksize", 0);
  if (type.getRank() != 4 || b < 1)
    return ctx.error() << "needs X [N, C, H, W] and a blocksize of at least "
                          "1; got "
                       << type << " and " << b;
  return std::make_pair(*x, b);
}

} // namespace

/// DepthToSpace: [N, C, H, W] -> [N, C / b^2, H b, W b], the channels read
/// as (b, b, C / b^2) (mode DCR, the default) or (C / b^2, b, b) (CRD).
LogicalResult importDepthToSpace(NodeContext &ctx) {
  auto xb = blockInput(ctx);
  if (failed(xb))
    return failure();
  auto [x, b] = *xb;
  ArrayRef<int64_t> s = ctx.inputType(x).getShape();
  std::string mode = ctx.stringAttr("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return ctx.error() << "mode '" << mode << "' is not DCR or CRD";
  if (s[1] % (b * b) != 0)
    return ctx.error() << "needs channels (" << s[1]
                       << ") divisible by blocksize^2 (" << b * b << ")";
  int64_t c = s[1] / (b * b);
  bool dcr = mode == "DCR";
  SmallVector<int64_t> split =
      dcr ? SmallVector<int64_t>{s[0], b, b, c, s[2], s[3]}
          : SmallVector<int64_t>{s[0], c, b, b, s[2], s[3]};
  SmallVector<int64_t> order = dcr ? SmallVector<int64_t>{0, 3, 4, 1, 5, 2}
                                   : SmallVector<int64_t>{0, 1, 4, 2, 5, 3};
  ctx.setOutput(
      0, ctx.reshape(ctx.create<TransposeOp>(ctx.reshape(x, split), order),
                     {s[0], c, s[2] * b, s[3] * b}));
  return success();
}

/// SpaceToDepth: [N, C, H, W] -> [N, C b^2, H / b, W / b], the block's
/// (row, column) offsets before the channel.
LogicalResult importSpaceToDepth(NodeContext &ctx) {
  auto xb = blockInput(ctx);
  if (failed(xb))
    return failure();
  auto [x, b] = *xb;
  ArrayRef<int64_t> s = ctx.inputType(x).getShape();
  if (s[2] % b != 0 || s[3] % b != 0)
    return ctx.error() << "needs H and W (" << s[2] << ", " << s[3]
                       << ") divisible by the blocksize " << b;
  Value t = ctx.create<TransposeOp>(
      ctx.reshape(x, {s[0], s[1], s[2] / b, b, s[3] / b, b}),
      SmallVector<int64_t>{0, 3, 5, 1, 2, 4});
  ctx.setOutput(0, ctx.reshape(t, {s[0], s[1] * b * b, s[2] / b, s[3] / b}));
  return success();
}

} // namespace trainc::onnx_import
