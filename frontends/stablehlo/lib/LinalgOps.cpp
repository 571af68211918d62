//===- LinalgOps.cpp - triangular_solve -----------------------------------===//
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

} // namespace

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
