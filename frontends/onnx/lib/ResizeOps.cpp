//===- ResizeOps.cpp - ONNX Resize, DepthToSpace and SpaceToDepth ---------===//
//
// DepthToSpace and SpaceToDepth (pixel shuffle) are a reshape, a transpose
// and a reshape.
//
// Resize with mode nearest or linear, one axis at a time (both are
// separable): each output position's source coordinate is computed here,
// at import, from the coordinate transformation mode, so the graph holds
// one graph.gather of constant indices per resized axis (nearest), or two
// gathers and their constant weights (linear). Autodiff differentiates the
// gathers (scatter-adds), so upsampling decoders train.
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

/// A constant vector, as a tensor of `type`'s element type.
Value vectorConstant(NodeContext &ctx, ArrayRef<int64_t> values) {
  auto type =
      RankedTensorType::get({int64_t(values.size())}, ctx.builder.getI64Type());
  return ctx.builder.create<ConstantOp>(ctx.loc,
                                        DenseElementsAttr::get(type, values));
}

} // namespace

/// Resize (opsets 13 and later): X, roi (unused unless tf_crop_and_resize,
/// which is refused), constant scales or sizes; modes nearest and linear
/// (antialias only where it changes nothing: upsampling); axes and
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
  if (mode != "nearest" && mode != "linear")
    return ctx.error() << "mode '" << mode
                       << "' is not supported; trainc resizes with nearest "
                          "and linear";
  if (mode == "linear" && failed(ctx.requireFloat(*x, "X")))
    return failure();
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
  if (ctx.intAttr("exclude_outside", 0) != 0)
    return ctx.error() << "exclude_outside (a cubic option) is not supported";
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
  Value y = *x;
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
    if (mode == "linear" && out < in && ctx.intAttr("antialias", 0) != 0)
      return ctx.error() << "antialias when downsampling is not supported";
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
    auto yType = ctx.inputType(y);
    Value near = ctx.create<GatherOp>(y, vectorConstant(ctx, first), d);
    if (mode == "nearest") {
      y = near;
      continue;
    }
    Value far = ctx.create<GatherOp>(y, vectorConstant(ctx, second), d);
    auto outType = ctx.inputType(near);
    auto f64 = RankedTensorType::get({out}, ctx.builder.getF64Type());
    Value w1 = ctx.create<ConvertOp>(
        RankedTensorType::get({out}, yType.getElementType()),
        ctx.builder.create<ConstantOp>(
            ctx.loc, DenseElementsAttr::get(f64, ArrayRef(weights))));
    Value w1Full =
        ctx.create<BroadcastInDimOp>(outType, w1, ArrayRef<int64_t>{d});
    // near + w1 (far - near): exact at w1 = 0 and w1 = 1.
    y = ctx.create<AddOp>(
        near, ctx.create<MulOp>(w1Full, ctx.create<SubOp>(far, near)));
  }
  ctx.setOutput(0, y);
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
