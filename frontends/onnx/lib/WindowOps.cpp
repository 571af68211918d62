//===- WindowOps.cpp - ONNX Conv and pooling ------------------------------===//
//
// Conv, ConvTranspose, MaxPool, AveragePool, GlobalMaxPool and
// GlobalAveragePool on
// X [N, C, D...] with 1 to 3 spatial dimensions. The window attributes
// (kernel_shape, strides, dilations, pads, auto_pad, ceil_mode) are read
// once, by spatialWindow; the computation is GraphBuilders.h's:
// buildConvolution (im2col and one product) and buildWindowReduce (one
// strided slice per window position, combined elementwise, the maximum's
// gradient going to the first maximum of each window, as PyTorch's).
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "trainc/Dialect/Graph/GraphBuilders.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// A window over X's spatial dimensions. `extension` is what ceil_mode adds
/// past padHigh: windows that start inside the input or its padding but
/// end beyond it (never counted by AveragePool's divisor).
struct SpatialWindow {
  SmallVector<int64_t> kernel, strides, dilations, padLow, padHigh, extension,
      out;
};

/// Attribute `name`: a list of `size` integers, or `size` copies of `fill`
/// where the node has none.
FailureOr<SmallVector<int64_t>> intList(NodeContext &ctx, StringRef name,
                                        int64_t size, int64_t fill) {
  std::optional<SmallVector<int64_t>> v = ctx.intsAttr(name);
  if (!v)
    return SmallVector<int64_t>(size, fill);
  if (static_cast<int64_t>(v->size()) != size)
    return ctx.error() << name << " has " << v->size() << " entries; expected "
                       << size;
  return *v;
}

/// Reads the window attributes for X's spatial sizes `input` and the
/// window `kernel` (W's spatial shape for Conv, kernel_shape for pooling).
FailureOr<SpatialWindow> spatialWindow(NodeContext &ctx,
                                       ArrayRef<int64_t> input,
                                       ArrayRef<int64_t> kernel,
                                       bool ceilModeAllowed) {
  int64_t d = input.size();
  auto strides = intList(ctx, "strides", d, 1);
  auto dilations = intList(ctx, "dilations", d, 1);
  auto pads = intList(ctx, "pads", 2 * d, 0);
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  for (int64_t i = 0; i < d; ++i)
    if ((*strides)[i] < 1 || (*dilations)[i] < 1 || (*pads)[i] < 0 ||
        (*pads)[d + i] < 0 || kernel[i] < 1)
      return ctx.error() << "needs strides, dilations and kernel sizes of at "
                            "least 1 and pads of at least 0";
  SpatialWindow w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = *strides;
  w.dilations = *dilations;
  w.padLow.assign(pads->begin(), pads->begin() + d);
  w.padHigh.assign(pads->begin() + d, pads->end());
  w.extension.assign(d, 0);
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.padLow.assign(d, 0);
    w.padHigh.assign(d, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    // Output ceil(D / stride); the odd padding element at the end (UPPER)
    // or the start (LOWER).
    for (int64_t i = 0; i < d; ++i) {
      int64_t out = (input[i] + w.strides[i] - 1) / w.strides[i];
      int64_t span = (kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + span - input[i]);
      int64_t small = total / 2;
      w.padLow[i] = autoPad == "SAME_UPPER" ? small : total - small;
      w.padHigh[i] = total - w.padLow[i];
    }
  } else if (autoPad != "NOTSET") {
    return ctx.error() << "auto_pad '" << autoPad
                       << "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID";
  }
  bool ceilMode = ctx.intAttr("ceil_mode", 0) != 0;
  if (ceilMode && !ceilModeAllowed)
    return ctx.error() << "ceil_mode is not an attribute of this op";
  for (int64_t i = 0; i < d; ++i) {
    int64_t padded = input[i] + w.padLow[i] + w.padHigh[i];
    int64_t span = (kernel[i] - 1) * w.dilations[i] + 1;
    if (padded < span)
      return ctx.error() << "has spatial dimension " << i << " of size "
                         << input[i] << ", padded " << padded
                         << ", smaller than the dilated window " << span;
    int64_t room = padded - span;
    int64_t out = room / w.strides[i] + 1;
    if (ceilMode && room % w.strides[i] != 0) {
      // PyTorch's rule, which onnxruntime follows: one more window, unless
      // it would start past the input and its low padding.
      ++out;
      if ((out - 1) * w.strides[i] >= input[i] + w.padLow[i])
        --out;
      w.extension[i] =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + span - padded);
    }
    w.out.push_back(out);
  }
  return w;
}

/// The window over X [N, C, D...] that leaves N and C alone.
WindowReduction overSpatial(const SpatialWindow &w) {
  WindowReduction r;
  r.sizes = {1, 1};
  r.strides = {1, 1};
  r.windowDilation = {1, 1};
  r.baseDilation = {1, 1};
  r.padLow = {0, 0};
  r.padHigh = {0, 0};
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    r.sizes.push_back(w.kernel[i]);
    r.strides.push_back(w.strides[i]);
    r.windowDilation.push_back(w.dilations[i]);
    r.baseDilation.push_back(1);
    r.padLow.push_back(w.padLow[i]);
    r.padHigh.push_back(w.padHigh[i] + w.extension[i]);
  }
  return r;
}

/// X and its spatial sizes, for a pooling op: [N, C, D...] with 1 to 3
/// spatial dimensions; `floatOnly` for AveragePool.
FailureOr<Value> poolInput(NodeContext &ctx, bool floatOnly) {
  auto x = ctx.input(0);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  Type element = type.getElementType();
  if (floatOnly ? !isa<FloatType>(element)
                : !(isa<FloatType>(element) || element.isInteger(8)))
    return ctx.error() << "expects X of a float type"
                       << (floatOnly ? "" : " or an 8-bit integer") << ", got "
                       << type;
  if (type.getRank() < 3 || type.getRank() > 5)
    return ctx.error() << "needs X [N, C, D...] with 1 to 3 spatial "
                          "dimensions, got "
                       << type;
  return *x;
}

/// kernel_shape, required by the pooling ops, of one entry per spatial
/// dimension.
FailureOr<SmallVector<int64_t>> kernelShape(NodeContext &ctx, int64_t d) {
  std::optional<SmallVector<int64_t>> kernel = ctx.intsAttr("kernel_shape");
  if (!kernel || static_cast<int64_t>(kernel->size()) != d)
    return ctx.error() << "needs kernel_shape with one entry per spatial "
                          "dimension ("
                       << d << ")";
  return *kernel;
}

/// The bias B [M] added along Y's channel dimension, if the node has one.
FailureOr<Value> addBias(NodeContext &ctx, Value y, int64_t m) {
  if (!ctx.hasInput(2))
    return y;
  auto b = ctx.input(2);
  if (failed(b))
    return failure();
  auto bt = ctx.inputType(*b), yt = ctx.inputType(y);
  if (bt.getRank() != 1 || bt.getDimSize(0) != m ||
      bt.getElementType() != yt.getElementType())
    return ctx.error() << "B must be [" << m << "] of X's type, got " << bt;
  return ctx.create<AddOp>(
      y, ctx.create<BroadcastInDimOp>(yt, *b, ArrayRef<int64_t>{1}));
}

} // namespace

/// Conv: X [N, C, D...], W [M, C / group, k...], B [M], through
/// buildConvolution (non-overlapping patches, as ViT's patch embedding,
/// are a reshape there).
LogicalResult importConv(NodeContext &ctx) {
  auto x = ctx.input(0), w = ctx.input(1);
  if (failed(x) || failed(w) || failed(ctx.requireFloat(*x, "X")))
    return failure();
  auto xt = ctx.inputType(*x), wt = ctx.inputType(*w);
  int64_t rank = xt.getRank(), group = ctx.intAttr("group", 1);
  if (rank < 3 || rank > 5 || wt.getRank() != rank ||
      xt.getElementType() != wt.getElementType())
    return ctx.error() << "needs X [N, C, D...] with 1 to 3 spatial "
                          "dimensions and W [M, C / group, k...] of X's rank "
                          "and type; got X "
                       << xt << " and W " << wt;
  int64_t c = xt.getDimSize(1), m = wt.getDimSize(0);
  if (group < 1 || c % group != 0 || m % group != 0 ||
      wt.getDimSize(1) * group != c)
    return ctx.error() << "group " << group << " must divide X's channels ("
                       << c << ") and W's outputs (" << m
                       << "), and W's second dimension must be channels / "
                          "group; got X "
                       << xt << " and W " << wt;
  SmallVector<int64_t> kernel(wt.getShape().drop_front(2));
  if (auto shape = ctx.intsAttr("kernel_shape"); shape && *shape != kernel)
    return ctx.error() << "kernel_shape differs from W's spatial shape";
  auto window = spatialWindow(ctx, xt.getShape().drop_front(2), kernel,
                              /*ceilModeAllowed=*/false);
  if (failed(window))
    return failure();
  ConvolutionWindow conv;
  conv.strides = window->strides;
  conv.kernelDilation = window->dilations;
  conv.inputDilation.assign(kernel.size(), 1);
  conv.padLow = window->padLow;
  conv.padHigh = window->padHigh;
  conv.featureGroups = group;
  auto y =
      addBias(ctx, buildConvolution(ctx.builder, ctx.loc, *x, *w, conv), m);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

/// ConvTranspose: X [N, C, D...], W [C, M / group, k...], B [M]; output
/// position i * stride + k * dilation - pads_begin receives x[i] * w[k].
/// That is the convolution of X dilated by the strides (zeros between its
/// elements) with W's kernels transposed per group ([M, C / group, k...])
/// and flipped, padded by dilation * (k - 1) - pads_begin before and that
/// minus pads_end plus output_padding after (negative padding crops).
/// output_shape, when given, sets the padding (its odd element at the
/// start unless auto_pad is SAME_UPPER), as the ONNX specification says;
/// so does auto_pad SAME_* (output_shape = X's size times the stride).
LogicalResult importConvTranspose(NodeContext &ctx) {
  auto x = ctx.input(0), w = ctx.input(1);
  if (failed(x) || failed(w) || failed(ctx.requireFloat(*x, "X")))
    return failure();
  auto xt = ctx.inputType(*x), wt = ctx.inputType(*w);
  int64_t rank = xt.getRank(), d = rank - 2, group = ctx.intAttr("group", 1);
  if (rank < 3 || rank > 5 || wt.getRank() != rank ||
      xt.getElementType() != wt.getElementType())
    return ctx.error() << "needs X [N, C, D...] with 1 to 3 spatial "
                          "dimensions and W [C, M / group, k...] of X's rank "
                          "and type; got X "
                       << xt << " and W " << wt;
  int64_t c = xt.getDimSize(1), m = wt.getDimSize(1) * group;
  if (group < 1 || c % group != 0 || wt.getDimSize(0) != c)
    return ctx.error() << "group " << group << " must divide X's channels ("
                       << c << "), and W's first dimension must be them; got X "
                       << xt << " and W " << wt;
  SmallVector<int64_t> kernel(wt.getShape().drop_front(2));
  ArrayRef<int64_t> input = xt.getShape().drop_front(2);
  if (auto shape = ctx.intsAttr("kernel_shape"); shape && *shape != kernel)
    return ctx.error() << "kernel_shape differs from W's spatial shape";
  auto strides = intList(ctx, "strides", d, 1),
       dilations = intList(ctx, "dilations", d, 1),
       pads = intList(ctx, "pads", 2 * d, 0),
       outputPadding = intList(ctx, "output_padding", d, 0);
  if (failed(strides) || failed(dilations) || failed(pads) ||
      failed(outputPadding))
    return failure();
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER" && autoPad != "VALID")
    return ctx.error() << "auto_pad '" << autoPad
                       << "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID";
  std::optional<SmallVector<int64_t>> outputShape =
      ctx.intsAttr("output_shape");
  if (!outputShape && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")) {
    outputShape = SmallVector<int64_t>();
    for (int64_t i = 0; i < d; ++i)
      outputShape->push_back(input[i] * (*strides)[i]);
  }
  if (outputShape && static_cast<int64_t>(outputShape->size()) != d)
    return ctx.error() << "output_shape has " << outputShape->size()
                       << " entries; expected " << d;
  ConvolutionWindow conv;
  conv.strides.assign(d, 1);
  conv.inputDilation = *strides;
  conv.kernelDilation = *dilations;
  conv.featureGroups = group;
  for (int64_t i = 0; i < d; ++i) {
    int64_t s = (*strides)[i], dil = (*dilations)[i], op = (*outputPadding)[i];
    if (s < 1 || dil < 1 || op < 0 || op >= std::max(s, dil))
      return ctx.error() << "needs strides and dilations of at least 1 and "
                            "output_padding in [0, max(stride, dilation))";
    int64_t span = (kernel[i] - 1) * dil + 1;
    int64_t full = s * (input[i] - 1) + op + span;
    int64_t begin = autoPad == "VALID" ? 0 : (*pads)[i];
    int64_t end = autoPad == "VALID" ? 0 : (*pads)[d + i];
    if (outputShape) {
      // A negative total (an output larger than the natural one) extends
      // it: for SAME_* split with halves rounded down, as the ONNX
      // reference evaluator (onnxruntime clamps such pads to 0 and gives
      // the natural size); for explicit output_shape all at the end, as
      // both and PyTorch's output_size.
      int64_t total = full - (*outputShape)[i];
      int64_t half = llvm::divideFloorSigned(total, 2);
      begin = autoPad == "SAME_UPPER" ? half : total - half;
      if (total < 0 && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
        begin = 0;
      end = total - begin;
    } else if (begin < 0 || end < 0) {
      return ctx.error() << "needs pads of at least 0";
    }
    if (full - begin - end < 1)
      return ctx.error() << "gives spatial dimension " << i << " no positive "
                         << "size (" << full << " before padding " << begin
                         << " + " << end << ")";
    conv.padLow.push_back(span - 1 - begin);
    conv.padHigh.push_back(span - 1 - end + op);
  }
  // W [C, M/g, k...] -> [g, C/g, M/g, k...] -> [g, M/g, C/g, k...] ->
  // [M, C/g, k...], each spatial dimension reversed.
  int64_t cg = c / group, mg = m / group;
  SmallVector<int64_t> split{group, cg, mg}, permutation{0, 2, 1},
      transposed{m, cg};
  for (int64_t i = 0; i < d; ++i) {
    split.push_back(kernel[i]);
    permutation.push_back(3 + i);
    transposed.push_back(kernel[i]);
  }
  Value kernels = ctx.reshape(
      ctx.create<TransposeOp>(ctx.reshape(*w, split), permutation), transposed);
  SmallVector<int64_t> spatialDims;
  for (int64_t i = 0; i < d; ++i)
    spatialDims.push_back(2 + i);
  kernels = buildReverse(ctx.builder, ctx.loc, kernels, spatialDims);
  Value y = buildConvolution(ctx.builder, ctx.loc, *x, kernels, conv);
  auto withBias = addBias(ctx, y, m);
  if (failed(withBias))
    return failure();
  ctx.setOutput(0, *withBias);
  return success();
}

/// MaxPool: the window maximum, padding -inf (the type's minimum for
/// integers); the Indices output is not produced.
LogicalResult importMaxPool(NodeContext &ctx) {
  auto x = poolInput(ctx, /*floatOnly=*/false);
  if (failed(x))
    return failure();
  if (ctx.outputRequested(1))
    return ctx.error() << "asks for the Indices output, which trainc does "
                          "not produce";
  if (ctx.intAttr("storage_order", 0) != 0)
    return ctx.error() << "storage_order 1 (column-major Indices) is not "
                          "supported";
  auto type = ctx.inputType(*x);
  auto kernel = kernelShape(ctx, type.getRank() - 2);
  if (failed(kernel))
    return failure();
  auto window = spatialWindow(ctx, type.getShape().drop_front(2), *kernel,
                              /*ceilModeAllowed=*/true);
  if (failed(window))
    return failure();
  Type element = type.getElementType();
  double lowest = -std::numeric_limits<double>::infinity();
  if (auto integer = dyn_cast<IntegerType>(element))
    lowest = integer.isUnsigned() ? 0.0 : -128.0;
  Value fill = ctx.splat(RankedTensorType::get({}, element), lowest);
  ctx.setOutput(0, buildWindowReduce(ctx.builder, ctx.loc, *x,
                                     overSpatial(*window), WindowCombiner::Max,
                                     fill));
  return success();
}

/// AveragePool: the window sum over its divisor, the number of elements
/// of X in the window (count_include_pad = 0) or of X and its pads
/// (count_include_pad = 1; never ceil_mode's extension), computed here as
/// a constant.
LogicalResult importAveragePool(NodeContext &ctx) {
  auto x = poolInput(ctx, /*floatOnly=*/true);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  int64_t d = type.getRank() - 2;
  auto kernel = kernelShape(ctx, d);
  if (failed(kernel))
    return failure();
  ArrayRef<int64_t> input = type.getShape().drop_front(2);
  auto window = spatialWindow(ctx, input, *kernel, /*ceilModeAllowed=*/true);
  if (failed(window))
    return failure();
  bool includePad = ctx.intAttr("count_include_pad", 0) != 0;
  // Per dimension, each output position's count; the divisor is their
  // product.
  SmallVector<SmallVector<int64_t>> counts(d);
  for (int64_t i = 0; i < d; ++i) {
    int64_t lo = window->padLow[i], hi = window->padHigh[i];
    for (int64_t o = 0; o < window->out[i]; ++o) {
      int64_t n = 0;
      for (int64_t k = 0; k < (*kernel)[i]; ++k) {
        int64_t p = o * window->strides[i] + k * window->dilations[i] - lo;
        bool inX = p >= 0 && p < input[i];
        bool inPads = p >= -lo && p < input[i] + hi;
        n += inX || (includePad && inPads);
      }
      counts[i].push_back(n);
    }
  }
  SmallVector<int64_t> outShape{1, 1};
  llvm::append_range(outShape, window->out);
  SmallVector<double> divisor;
  SmallVector<int64_t> at(d, 0);
  for (int64_t t = 0, total = product(window->out); t < total; ++t) {
    double v = 1;
    for (int64_t i = 0; i < d; ++i)
      v *= counts[i][at[i]];
    divisor.push_back(v);
    for (int64_t i = d - 1; i >= 0 && ++at[i] == window->out[i]; --i)
      at[i] = 0;
  }
  if (llvm::is_contained(divisor, 0.0))
    return ctx.error() << "has a window holding no element of X "
                          "(count_include_pad 0): its average is undefined";
  auto f64 = RankedTensorType::get(outShape, ctx.builder.getF64Type());
  Value divisors = ctx.create<ConvertOp>(
      RankedTensorType::get(outShape, type.getElementType()),
      ctx.builder.create<ConstantOp>(
          ctx.loc, DenseElementsAttr::get(f64, ArrayRef(divisor))));
  Value fill = ctx.splat(RankedTensorType::get({}, type.getElementType()), 0);
  Value sums = buildWindowReduce(ctx.builder, ctx.loc, *x, overSpatial(*window),
                                 WindowCombiner::Add, fill);
  auto sumType = ctx.inputType(sums);
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < sumType.getRank(); ++i)
    dims.push_back(i);
  ctx.setOutput(0, ctx.create<DivOp>(sums, ctx.create<BroadcastInDimOp>(
                                               sumType, divisors, dims)));
  return success();
}

/// GlobalMaxPool and GlobalAveragePool: the maximum or mean over the
/// spatial dimensions, kept as size 1; float types (as their schemas).
template <bool isMax> LogicalResult importGlobalPool(NodeContext &ctx) {
  auto x = poolInput(ctx, /*floatOnly=*/true);
  if (failed(x))
    return failure();
  auto type = ctx.inputType(*x);
  SmallVector<int64_t> spatial, shape{type.getDimSize(0), type.getDimSize(1)};
  for (int64_t i = 2; i < type.getRank(); ++i) {
    spatial.push_back(i);
    shape.push_back(1);
  }
  Value r = isMax ? ctx.create<ReduceMaxOp>(*x, spatial)
                  : ctx.create<ReduceMeanOp>(*x, spatial);
  ctx.setOutput(0, ctx.reshape(r, shape));
  return success();
}
LogicalResult importGlobalMaxPool(NodeContext &ctx) {
  return importGlobalPool<true>(ctx);
}
LogicalResult importGlobalAveragePool(NodeContext &ctx) {
  return importGlobalPool<false>(ctx);
}

} // namespace trainc::onnx_import
