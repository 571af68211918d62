//===- FuseLossGrad.cpp - A cross-entropy and its gradient as one op ------===//
//
// See FuseLossGrad in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "FusionUtil.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

#include <utility>

namespace trainc {
#define GEN_PASS_DEF_FUSELOSSGRAD
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// Whether an op other than `loss` and `grad` reads the logits between
/// them (after the earlier, before the later).
bool logitsReadBetween(SoftmaxCrossEntropyOp loss,
                       SoftmaxCrossEntropyGradOp grad) {
  Operation *first = loss, *last = grad;
  if (last->isBeforeInBlock(first))
    std::swap(first, last);
  for (Operation *user : loss.getLogits().getUsers())
    if (user != loss && user != grad && user->getBlock() == first->getBlock() &&
        first->isBeforeInBlock(user) && user->isBeforeInBlock(last))
      return true;
  return false;
}

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
      // At the gradient's place when the loss's users all follow it (a
      // step's loss goes to its outputs), where the gradient may take the
      // logits' memory as before. Else at the loss's, unless something
      // else reads the logits in between: the gradient could then no
      // longer take their memory, and a step would hold two copies.
      Operation *point = trainc::fusionPoint(grad, loss);
      if (!point ||
          (point == loss.getOperation() && logitsReadBetween(loss, grad)))
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
