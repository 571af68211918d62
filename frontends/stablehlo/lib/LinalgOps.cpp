//===- LinalgOps.cpp - triangular_solve and convolution -------------------===//
//
// stablehlo.convolution transposes its operands to channels-first and
// calls GraphBuilders.h's buildConvolution (im2col and one product), the
// ONNX frontend's Conv too.
//
// stablehlo.triangular_solve as the inverse of the triangle times b, the
// inverse built by doubling: with M the inverse of the triangle's diagonal
// blocks of size s (zero elsewhere) and C the triangle's entries that join
// pairs of those blocks into blocks of size 2s (the lower-left quarter of
// each 2s block for a lower triangle, the upper-right for an upper one),
// M' = M - M C M inverts the 2s blocks:
//   [[A, 0], [E, B]]^-1 = [[A^-1, 0], [-B^-1 E A^-1, B^-1]],
// and likewise for upper ones; M C M is exactly that lower-left term, since
// M C is zero outside it (a partial last block too). Starting from the
// reciprocal diagonal, ceil(log2 n) rounds of two batched products give
// the inverse: a handful of graph ops that autodiff differentiates as
// usual, at 2 n^3 log2 n multiply-adds, where substitution takes n^2 k.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

#include "trainc/Dialect/Graph/GraphBuilders.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

/// a @ b over the last two dimensions, the others batch dimensions.
Value batchedProduct(OpContext &ctx, Value a, Value b) {
  int64_t rank = tensorType(a).getRank();
  SmallVector<int64_t> batch;
  for (int64_t d = 0; d + 2 < rank; ++d)
    batch.push_back(d);
  return ctx.create<DotGeneralOp>(a, b, batch, batch,
                                  ArrayRef<int64_t>{rank - 1},
                                  ArrayRef<int64_t>{rank - 2});
}

/// The [n, n] boolean mask `pick(i, j)`, broadcast to `type`'s shape.
template <typename Pick>
Value matrixMask(OpContext &ctx, RankedTensorType type, Pick pick) {
  int64_t rank = type.getRank(), n = type.getShape().back();
  SmallVector<bool> values;
  values.reserve(n * n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      values.push_back(pick(i, j));
  auto maskType = RankedTensorType::get({n, n}, ctx.builder.getI1Type());
  Value mask = ctx.builder.create<ConstantOp>(
      ctx.loc, DenseElementsAttr::get(maskType, values));
  if (rank == 2)
    return mask;
  return ctx.create<BroadcastInDimOp>(
      RankedTensorType::get(type.getShape(), ctx.builder.getI1Type()), mask,
      ArrayRef<int64_t>{rank - 2, rank - 1});
}

/// The inverse of a's `lower` (or upper) triangle, its diagonal taken as
/// ones when `unitDiagonal`; the other triangle is never read.
Value triangleInverse(OpContext &ctx, Value a, bool lower, bool unitDiagonal) {
  auto type = tensorType(a);
  int64_t n = type.getShape().back();
  Value zero = ctx.splat(type, 0), one = ctx.splat(type, 1);
  Value diagonal =
      matrixMask(ctx, type, [](int64_t i, int64_t j) { return i == j; });
  Value m = diagonal;
  if (unitDiagonal) {
    m = ctx.create<SelectOp>(diagonal, one, zero);
  } else {
    // 1 / a on the diagonal; off it the denominator is 1, so no 1 / 0
    // reaches a gradient.
    Value denominator = ctx.create<SelectOp>(diagonal, a, one);
    m = ctx.create<SelectOp>(diagonal, ctx.create<DivOp>(one, denominator),
                             zero);
  }
  for (int64_t s = 1; s < n; s *= 2) {
    Value joins = matrixMask(ctx, type, [&](int64_t i, int64_t j) {
      if (i / (2 * s) != j / (2 * s))
        return false;
      bool iLate = i % (2 * s) >= s, jLate = j % (2 * s) >= s;
      return lower ? iLate && !jLate : !iLate && jLate;
    });
    Value c = ctx.create<SelectOp>(joins, a, zero);
    m = ctx.create<SubOp>(m, batchedProduct(ctx, batchedProduct(ctx, m, c), m));
  }
  return m;
}

std::optional<bool> flag(OpContext &ctx, StringRef name) {
  if (auto b = dyn_cast_or_null<BoolAttr>(ctx.attribute(name)))
    return b.getValue();
  ctx.error() << "needs the boolean attribute '" << name << "'";
  return std::nullopt;
}

/// A list attribute of the convolution's window: one entry per spatial
/// dimension (two for padding), `fallback` where absent.
FailureOr<SmallVector<int64_t>> windowList(OpContext &ctx, StringRef name,
                                           size_t size, int64_t fallback) {
  if (!ctx.attribute(name))
    return SmallVector<int64_t>(size, fallback);
  auto values = ctx.ints(name);
  if (failed(values))
    return failure();
  if (values->size() != size)
    return ctx.error() << "has " << values->size() << " entries in '" << name
                       << "'; expected " << size;
  return values;
}

/// `dims.name`, an integer.
FailureOr<int64_t> dimension(OpContext &ctx, DictionaryAttr dims,
                             StringRef name) {
  auto value = dyn_cast_or_null<IntegerAttr>(dims.get(name));
  if (!value)
    return ctx.error() << "needs dimension_numbers." << name;
  return value.getInt();
}

} // namespace

/// The operands transposed to [N, C, spatial...] and [O, I, spatial...],
/// buildConvolution, and its [N', O, out...] transposed to the output's
/// layout. Integers compute in f64 (exact while the sums stay below 2^53)
/// and wrap to the result type (OpContext::fromF64),
/// floats in the result's type (bf16 operands with an f32 result sum in
/// f32, not rounded to bf16 first).
LogicalResult lowerConvolution(OpContext &ctx) {
  auto dims = ctx.dict("dimension_numbers");
  if (failed(dims))
    return failure();
  auto lhsType = ctx.operandType(0), rhsType = ctx.operandType(1);
  auto resultType = ctx.resultType();
  int64_t rank = lhsType.getRank(), d = rank - 2;
  if (rank < 2 || rhsType.getRank() != rank || resultType.getRank() != rank)
    return ctx.error() << "needs operands and a result of one rank (at least "
                          "2); got "
                       << lhsType << ", " << rhsType << " -> " << resultType;
  StringRef what = "dimension_numbers";
  auto ib = dimension(ctx, *dims, "input_batch_dimension");
  auto ifeat = dimension(ctx, *dims, "input_feature_dimension");
  auto ki = dimension(ctx, *dims, "kernel_input_feature_dimension");
  auto ko = dimension(ctx, *dims, "kernel_output_feature_dimension");
  auto ob = dimension(ctx, *dims, "output_batch_dimension");
  auto of = dimension(ctx, *dims, "output_feature_dimension");
  auto is = ctx.ints(*dims, "input_spatial_dimensions", what);
  auto ks = ctx.ints(*dims, "kernel_spatial_dimensions", what);
  auto os = ctx.ints(*dims, "output_spatial_dimensions", what);
  if (failed(ib) || failed(ifeat) || failed(ki) || failed(ko) || failed(ob) ||
      failed(of) || failed(is) || failed(ks) || failed(os))
    return failure();
  auto permutation = [&](int64_t first, int64_t second,
                         ArrayRef<int64_t> spatial) {
    SmallVector<int64_t> p{first, second};
    llvm::append_range(p, spatial);
    return p;
  };
  SmallVector<int64_t> lhsOrder = permutation(*ib, *ifeat, *is);
  SmallVector<int64_t> rhsOrder = permutation(*ko, *ki, *ks);
  SmallVector<int64_t> outOrder = permutation(*ob, *of, *os);
  auto isPermutation = [&](ArrayRef<int64_t> p) {
    SmallVector<bool> seen(rank, false);
    for (int64_t v : p) {
      if (v < 0 || v >= rank || seen[v])
        return false;
      seen[v] = true;
    }
    return static_cast<int64_t>(p.size()) == rank;
  };
  if (!isPermutation(lhsOrder) || !isPermutation(rhsOrder) ||
      !isPermutation(outOrder))
    return ctx.error() << "has dimension_numbers that do not name each "
                          "dimension of rank "
                       << rank << " once";

  graph::ConvolutionWindow window;
  auto strides = windowList(ctx, "window_strides", d, 1);
  auto padding = windowList(ctx, "padding", 2 * d, 0);
  auto lhsDilation = windowList(ctx, "lhs_dilation", d, 1);
  auto rhsDilation = windowList(ctx, "rhs_dilation", d, 1);
  if (failed(strides) || failed(padding) || failed(lhsDilation) ||
      failed(rhsDilation))
    return failure();
  if (Attribute reversal = ctx.attribute("window_reversal")) {
    bool reversed = false;
    if (auto flags = dyn_cast<DenseBoolArrayAttr>(reversal))
      reversed = llvm::is_contained(flags.asArrayRef(), true);
    else if (auto values = ctx.ints("window_reversal"); succeeded(values))
      reversed = llvm::any_of(*values, [](int64_t v) { return v != 0; });
    else
      return failure();
    if (reversed)
      return ctx.error() << "reverses its window, which trainc does not lower";
  }
  window.strides = *strides;
  window.inputDilation = *lhsDilation;
  window.kernelDilation = *rhsDilation;
  for (int64_t i = 0; i < d; ++i) {
    window.padLow.push_back((*padding)[2 * i]);
    window.padHigh.push_back((*padding)[2 * i + 1]);
  }
  auto groups = [&](StringRef name) -> int64_t {
    auto v = dyn_cast_or_null<IntegerAttr>(ctx.attribute(name));
    return v ? v.getInt() : 1;
  };
  window.featureGroups = groups("feature_group_count");
  window.batchGroups = groups("batch_group_count");
  for (int64_t i = 0; i < d; ++i)
    if (window.strides[i] < 1 || window.inputDilation[i] < 1 ||
        window.kernelDilation[i] < 1)
      return ctx.error() << "needs strides and dilations of at least 1";

  int64_t n = lhsType.getDimSize(*ib), c = lhsType.getDimSize(*ifeat);
  int64_t o = rhsType.getDimSize(*ko), i = rhsType.getDimSize(*ki);
  int64_t fg = window.featureGroups, bg = window.batchGroups;
  if (fg < 1 || bg < 1 || (fg > 1 && bg > 1) || c != i * fg || o % fg != 0 ||
      o % bg != 0 || n % bg != 0)
    return ctx.error() << "has feature_group_count " << fg
                       << " and batch_group_count " << bg
                       << " that do not divide its " << c
                       << " input features, kernel " << rhsType << " and batch "
                       << n;
  SmallVector<int64_t> input, kernel;
  for (int64_t k = 0; k < d; ++k) {
    input.push_back(lhsType.getDimSize((*is)[k]));
    kernel.push_back(rhsType.getDimSize((*ks)[k]));
  }
  std::optional<SmallVector<int64_t>> out =
      graph::convolutionOutputSizes(input, kernel, window);
  if (!out)
    return ctx.error() << "has a kernel " << rhsType
                       << " with an empty spatial dimension";
  SmallVector<int64_t> expected(rank);
  expected[*ob] = n / bg;
  expected[*of] = o;
  for (int64_t k = 0; k < d; ++k)
    expected[(*os)[k]] = (*out)[k];
  if (ArrayRef<int64_t>(expected) != resultType.getShape())
    return ctx.error() << "declares the result " << resultType
                       << " but its operands and window give "
                       << RankedTensorType::get(expected,
                                                resultType.getElementType());

  Type element = resultType.getElementType();
  Type compute = isa<FloatType>(element) ? element : ctx.builder.getF64Type();
  auto inCompute = [&](Value v, ArrayRef<int64_t> order) {
    auto type = tensorType(v);
    if (type.getElementType() != compute)
      v = ctx.create<ConvertOp>(RankedTensorType::get(type.getShape(), compute),
                                v);
    return ctx.transpose(v, order);
  };
  Value y = graph::buildConvolution(
      ctx.builder, ctx.loc, inCompute(ctx.operand(0), lhsOrder),
      inCompute(ctx.operand(1), rhsOrder), window);
  // Canonical dimension k goes to the output's outOrder[k].
  SmallVector<int64_t> toOutput(rank);
  for (int64_t k = 0; k < rank; ++k)
    toOutput[outOrder[k]] = k;
  y = ctx.transpose(y, toOutput);
  if (compute != element)
    y = ctx.fromF64(y, resultType);
  if (ctx.failed())
    return failure();
  ctx.setResult(0, y);
  return success();
}

/// op(a) x = b (left_side) or x op(a) = b, op(a) = a or its transpose
/// (ADJOINT is the transpose on real types): x = op(inv) b or b op(inv),
/// where op(inv) = op(a)^-1 is the inverse of a's triangle, transposed.
LogicalResult lowerTriangularSolve(OpContext &ctx) {
  auto aType = ctx.operandType(0), bType = ctx.operandType(1);
  std::optional<bool> left = flag(ctx, "left_side"), lower = flag(ctx, "lower"),
                      unit = flag(ctx, "unit_diagonal");
  if (!left || !lower || !unit)
    return failure();
  StringRef transpose = ctx.enumValue("transpose_a");
  if (transpose != "NO_TRANSPOSE" && transpose != "TRANSPOSE" &&
      transpose != "ADJOINT")
    return ctx.error() << "has transpose_a '" << transpose
                       << "'; expected NO_TRANSPOSE, TRANSPOSE or ADJOINT";
  int64_t rank = aType.getRank();
  ArrayRef<int64_t> as = aType.getShape(), bs = bType.getShape();
  bool shapesFit = rank >= 2 && bType.getRank() == rank &&
                   as[rank - 1] == as[rank - 2] &&
                   as.drop_back(2) == bs.drop_back(2) &&
                   bs[*left ? rank - 2 : rank - 1] == as[rank - 1];
  if (!shapesFit)
    return ctx.error() << "needs a of shape [..., n, n] and b of shape "
                          "[..., n, k] (left_side) or [..., m, n] with the "
                          "same leading dimensions; got "
                       << aType << " and " << bType;
  Value inverse = triangleInverse(ctx, ctx.operand(0), *lower, *unit);
  if (transpose != "NO_TRANSPOSE") {
    SmallVector<int64_t> permutation;
    for (int64_t d = 0; d < rank; ++d)
      permutation.push_back(d);
    std::swap(permutation[rank - 2], permutation[rank - 1]);
    inverse = ctx.transpose(inverse, permutation);
  }
  Value b = ctx.operand(1);
  Value x =
      *left ? batchedProduct(ctx, inverse, b) : batchedProduct(ctx, b, inverse);
  if (ctx.failed())
    return failure();
  ctx.setResult(0, x);
  return success();
}

} // namespace trainc::stablehlo_import
