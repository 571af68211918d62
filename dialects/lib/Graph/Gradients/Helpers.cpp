//===- Helpers.cpp - Shared helpers of the VJP rules ----------------------===//

#include "GradientRules.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace trainc::graph {

Value splatConstant(OpBuilder &b, Location loc, RankedTensorType type,
                    double value) {
  Type e = type.getElementType();
  Attribute element = isa<FloatType>(e)
                          ? Attribute(b.getFloatAttr(e, value))
                          : Attribute(b.getIntegerAttr(e, int64_t(value)));
  return b.create<ConstantOp>(loc, SplatElementsAttr::get(type, element));
}

Value sumToOperand(OpBuilder &b, Location loc, Value grad,
                   RankedTensorType type, ArrayRef<int64_t> dims) {
  auto gradType = cast<RankedTensorType>(grad.getType());
  // Sum the result dims the operand does not map to, and those it maps to
  // with size 1 (broadcast); then restore the size-1 dims with a reshape.
  SmallVector<int64_t> summed;
  for (int64_t d = 0; d < gradType.getRank(); ++d) {
    auto it = llvm::find(dims, d);
    if (it == dims.end() || (type.getDimSize(it - dims.begin()) == 1 &&
                             gradType.getDimSize(d) != 1))
      summed.push_back(d);
  }
  Value r = grad;
  if (!summed.empty())
    r = b.createOrFold<ReduceSumOp>(loc, grad, summed);
  if (r.getType() != type)
    r = b.createOrFold<ReshapeOp>(loc, type, r);
  return r;
}

Value broadcastBack(OpBuilder &b, Location loc, Value reduced,
                    RankedTensorType type, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      kept.push_back(d);
  auto e = cast<RankedTensorType>(reduced.getType()).getElementType();
  return b.createOrFold<BroadcastInDimOp>(
      loc, RankedTensorType::get(type.getShape(), e), reduced, kept);
}

} // namespace trainc::graph
