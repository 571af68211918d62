//===- FuseNormGrad.cpp - A norm's parameter gradients inside norm_grad ---===//
//
// See FuseNormGrad in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_FUSENORMGRAD
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// `sum` if it sums over exactly the dims [0, axis) into `type` and
/// carries `marks`, else null.
ReduceSumOp leadingSum(Operation *user, int64_t axis, Type type,
                       DictionaryAttr marks) {
  auto sum = dyn_cast<ReduceSumOp>(user);
  if (!sum || sum.getType() != type ||
      sum->getDiscardableAttrDictionary() != marks)
    return nullptr;
  SmallVector<int64_t> dims(sum.getDims());
  llvm::sort(dims);
  for (auto [i, d] : llvm::enumerate(dims))
    if (d != int64_t(i))
      return nullptr;
  return int64_t(dims.size()) == axis ? sum : nullptr;
}

/// The sum of `g * xhat` that is xhat's one use, or null.
ReduceSumOp scaleSum(NormGradOp grad, DictionaryAttr marks) {
  Value xhat = grad.getNormalized(), g = grad.getCotangent();
  if (!xhat.hasOneUse())
    return nullptr;
  auto mul = dyn_cast<MulOp>(*xhat.getUsers().begin());
  if (!mul || !mul->hasOneUse() ||
      mul->getDiscardableAttrDictionary() != marks ||
      mul.getOperand(mul.getOperand(0) == xhat ? 1 : 0) != g)
    return nullptr;
  return leadingSum(*mul->getUsers().begin(), int64_t(grad.getAxis()),
                    grad.getScale().getType(), marks);
}

struct FuseNormGradPass
    : public trainc::impl::FuseNormGradBase<FuseNormGradPass> {
  void runOnOperation() override {
    SmallVector<NormGradOp> grads;
    getOperation().walk([&](NormGradOp grad) { grads.push_back(grad); });
    for (NormGradOp grad : grads) {
      Type element = grad.getInput().getType().getElementType();
      if (!grad.getScale() || !(element.isF32() || element.isF64()))
        continue;
      DictionaryAttr marks = grad->getDiscardableAttrDictionary();
      ReduceSumOp scale = scaleSum(grad, marks);
      if (!scale)
        continue;
      // A sum of g after the norm_grad (one before it may have users
      // before it too).
      ReduceSumOp bias;
      for (Operation *user : grad.getCotangent().getUsers()) {
        if (user->getBlock() != grad->getBlock() ||
            !grad->isBeforeInBlock(user))
          continue;
        if ((bias = leadingSum(user, int64_t(grad.getAxis()),
                               grad.getScale().getType(), marks)))
          break;
      }

      // At the norm_grad: its operands are defined there, and the sums'
      // users all follow it.
      OpBuilder b(grad);
      auto fused = b.create<NormGradParamsOp>(
          grad.getLoc(), grad.getInput(), grad.getScale(), grad.getCotangent(),
          grad.getAxisAttr(), grad.getEpsilonAttr(), grad.getCenteredAttr(),
          bias ? b.getUnitAttr() : UnitAttr());
      fused->setDiscardableAttrs(marks);
      grad.getInputGrad().replaceAllUsesWith(fused.getInputGrad());
      Operation *mul = scale->getOperand(0).getDefiningOp();
      scale.replaceAllUsesWith(fused.getScaleGrad());
      scale.erase();
      mul->erase();
      grad.erase();
      if (bias) {
        bias.replaceAllUsesWith(fused.getBiasGrad());
        bias.erase();
      }
    }
  }
};

} // namespace
