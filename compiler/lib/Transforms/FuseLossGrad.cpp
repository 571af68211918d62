//===- FuseLossGrad.cpp - A cross-entropy and its gradient as one op ------===//
//
// See FuseLossGrad in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "FusionUtil.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_FUSELOSSGRAD
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// The loss of `grad`'s logits, targets and classes in its block with its
/// marks, or null.
SoftmaxCrossEntropyOp lossOf(SoftmaxCrossEntropyGradOp grad) {
  for (Operation *user : grad.getLogits().getUsers()) {
    auto loss = dyn_cast<SoftmaxCrossEntropyOp>(user);
    if (loss && loss->getBlock() == grad->getBlock() &&
        loss.getTargets() == grad.getTargets() &&
        loss.getClasses() == grad.getClasses() &&
        loss->getDiscardableAttrDictionary() ==
            grad->getDiscardableAttrDictionary())
      return loss;
  }
  return nullptr;
}

struct FuseLossGradPass
    : public trainc::impl::FuseLossGradBase<FuseLossGradPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxCrossEntropyGradOp> grads;
    getOperation().walk(
        [&](SoftmaxCrossEntropyGradOp grad) { grads.push_back(grad); });
    for (SoftmaxCrossEntropyGradOp grad : grads) {
      SoftmaxCrossEntropyOp loss = lossOf(grad);
      if (!loss)
        continue;
      // At the loss's place (the forward's end) when the gradient's weight
      // is defined by then, else at the gradient's.
      Operation *point = trainc::fusionPoint(loss, grad);
      if (!point)
        continue;
      OpBuilder b(point);
      auto fused = b.create<SoftmaxCrossEntropyAndGradOp>(
          loss.getLoc(), TypeRange{loss.getType(), grad.getType()},
          loss.getLogits(), loss.getTargets(), grad.getWeight(),
          loss.getReduction(), loss.getIgnoreIndexAttr(),
          loss.getClassesAttr());
      fused->setDiscardableAttrs(loss->getDiscardableAttrDictionary());
      loss.replaceAllUsesWith(fused.getLoss());
      grad.replaceAllUsesWith(fused.getGrad());
      loss.erase();
      grad.erase();
    }
  }
};

} // namespace
