//===- GraphPatches.cpp - Verifiers of a convolution's patch ops ----------===//
//
// graph.extract_patches (C1-C5, type inference) and graph.fold_patches
// (C1-C5, type inference): one window (kernel, strides, dilation, padding)
// per spatial dimension, checked the same way for both.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtil.h"
#include "trainc/Dialect/Graph/GraphOps.h"

using namespace mlir;
using namespace trainc::graph;

namespace {

constexpr int64_t kMaxSpatialDims = 3;
/// Window attributes and sizes stay below this, so that no position's
/// arithmetic overflows (the runtime's loader holds executables to it too).
constexpr int64_t kWindowLimit = int64_t(1) << 31;

struct PatchWindow {
  ArrayRef<int64_t> kernel, strides, dilation, padLow, padHigh;
};

/// C2 and C3 of both ops for `d` spatial dimensions.
LogicalResult checkWindow(const PatchWindow &w, int64_t d,
                          EmitErrorFn emitError) {
  for (auto [name, list] :
       {std::pair("kernel", w.kernel), std::pair("strides", w.strides),
        std::pair("dilation", w.dilation), std::pair("pad_low", w.padLow),
        std::pair("pad_high", w.padHigh)})
    if (int64_t(list.size()) != d) // extract_patches_c2, fold_patches_c2
      return emitError() << "(C2) " << name << " has " << list.size()
                         << " entries for " << d << " spatial dimensions";
  for (int64_t i = 0; i < d; ++i) {
    auto inRange = [](int64_t v, int64_t lo) {
      return v >= lo && v < kWindowLimit;
    };
    if (!inRange(w.kernel[i], 1) || !inRange(w.strides[i], 1) ||
        !inRange(w.dilation[i], 1) || !inRange(w.padLow[i], 0) ||
        !inRange(w.padHigh[i], 0)) // extract_patches_c3
      return emitError() << "(C3) spatial dimension " << i
                         << " needs kernel, strides and dilation in [1, 2^31) "
                            "and paddings in [0, 2^31)";
  }
  return success();
}

/// The number of window positions along one spatial dimension of `size`
/// elements (0 when the window is wider than the padded size).
int64_t outputSize(const PatchWindow &w, int64_t i, int64_t size) {
  int64_t padded = size + w.padLow[i] + w.padHigh[i];
  int64_t span = (w.kernel[i] - 1) * w.dilation[i] + 1;
  return padded < span ? 0 : (padded - span) / w.strides[i] + 1;
}

LogicalResult inferExtractPatches(Type operandType, const PatchWindow &w,
                                  SmallVectorImpl<Type> *types,
                                  EmitErrorFn emitError) {
  auto x = dyn_cast<RankedTensorType>(operandType);
  if (!x)
    return failure();
  int64_t d = x.getRank() - 2;
  if (d < 1 || d > kMaxSpatialDims) // extract_patches_c1
    return emitError() << "(C1) the operand needs rank 3 to 5 ([N, C, "
                          "spatial...]), not "
                       << x.getRank();
  if (failed(checkWindow(w, d, emitError)))
    return failure();
  SmallVector<int64_t> shape{x.getDimSize(1)};
  llvm::append_range(shape, w.kernel);
  shape.push_back(x.getDimSize(0));
  for (int64_t i = 0; i < d; ++i) {
    int64_t o = outputSize(w, i, x.getDimSize(2 + i));
    if (o < 1) // extract_patches_c4
      return emitError() << "(C4) the window of spatial dimension " << i
                         << " does not fit its " << x.getDimSize(2 + i)
                         << " padded elements";
    shape.push_back(o);
  }
  if (types)
    types->push_back(RankedTensorType::get(shape, x.getElementType()));
  return success();
}

LogicalResult inferFoldPatches(Type operandType, const PatchWindow &w,
                               ArrayRef<int64_t> spatial,
                               SmallVectorImpl<Type> *types,
                               EmitErrorFn emitError) {
  auto p = dyn_cast<RankedTensorType>(operandType);
  if (!p)
    return failure();
  int64_t d = spatial.size();
  if (d < 1 || d > kMaxSpatialDims || p.getRank() != 2 * d + 2)
    return emitError() // fold_patches_c1
           << "(C1) " << d << " spatial sizes (1 to 3) need an operand of rank "
           << 2 * d + 2 << ", not " << p.getRank();
  if (failed(checkWindow(w, d, emitError)))
    return failure();
  for (int64_t i = 0; i < d; ++i)
    if (spatial[i] < 0 || spatial[i] >= kWindowLimit) // fold_patches_c3
      return emitError() << "(C3) spatial size " << spatial[i]
                         << " is outside [0, 2^31)";
  ArrayRef<int64_t> ps = p.getShape();
  for (int64_t i = 0; i < d; ++i) {
    int64_t o = outputSize(w, i, spatial[i]);
    if (o < 1) // fold_patches_c4
      return emitError() << "(C4) the window of spatial dimension " << i
                         << " does not fit its " << spatial[i]
                         << " padded elements";
    if (ps[1 + i] != w.kernel[i] || ps[d + 2 + i] != o) // fold_patches_c4
      return emitError() << "(C4) spatial dimension " << i << " of "
                         << spatial[i] << " elements has kernel " << w.kernel[i]
                         << " and " << o
                         << " window positions, but the operand has "
                         << ps[1 + i] << " and " << ps[d + 2 + i];
  }
  SmallVector<int64_t> shape{ps[d + 1], ps[0]};
  llvm::append_range(shape, spatial);
  if (types)
    types->push_back(RankedTensorType::get(shape, p.getElementType()));
  return success();
}

template <typename Op> PatchWindow windowOf(Op op) {
  return {op.getKernel(), op.getStrides(), op.getDilation(), op.getPadLow(),
          op.getPadHigh()};
}

} // namespace

LogicalResult ExtractPatchesOp::verifyShapeConstraints() {
  return inferExtractPatches(getOperand().getType(), windowOf(*this), nullptr,
                             [&] { return emitOpError(); });
}

LogicalResult ExtractPatchesOp::inferReturnTypes(MLIRContext *ctx,
                                                 std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &types) {
  return inferExtractPatches(
      adaptor.getOperand().getType(), windowOf(adaptor), &types,
      [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });
}

LogicalResult FoldPatchesOp::verifyShapeConstraints() {
  return inferFoldPatches(getOperand().getType(), windowOf(*this), getSpatial(),
                          nullptr, [&] { return emitOpError(); });
}

LogicalResult FoldPatchesOp::inferReturnTypes(MLIRContext *ctx,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &types) {
  return inferFoldPatches(
      adaptor.getOperand().getType(), windowOf(adaptor), adaptor.getSpatial(),
      &types, [&] { return mlir::emitError(inferenceLoc(ctx, loc)); });
}
