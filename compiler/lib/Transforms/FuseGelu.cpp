//===- FuseGelu.cpp - A GELU and its gradient inside their matmuls --------===//
//
// See FuseGelu in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_FUSEGELU
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// gelu(dot_general_bias(x, w, b)) -> dot_general_bias_gelu, placed at the
/// dot's place: its operands are defined before it, and the gelu's users
/// follow the gelu, which follows the dot.
void fuseForward(GeluOp gelu) {
  auto dot = gelu.getOperand().getDefiningOp<DotGeneralBiasOp>();
  // Marks (a recompute clone's) must agree: the fused op carries them.
  if (!dot || dot->getBlock() != gelu->getBlock() ||
      dot->getDiscardableAttrDictionary() !=
          gelu->getDiscardableAttrDictionary())
    return;
  OpBuilder b(dot);
  auto fused = b.create<DotGeneralBiasGeluOp>(
      gelu.getLoc(), dot.getLhs(), dot.getRhs(), dot.getBias(),
      dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions(),
      dot.getLhsContractingDimensions(), dot.getRhsContractingDimensions(),
      gelu.getApproximation(), dot.getTf32());
  fused->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
  gelu.replaceAllUsesWith(fused.getResult());
  gelu.erase();
  // Every other reader of the product (gelu_grad, another gelu) reads the
  // pre-activation the fused op writes.
  dot.replaceAllUsesWith(fused.getPreactivation());
  dot.erase();
}

/// `v` widened to f32 by a convert from `narrow`: the convert's operand,
/// else null.
Value widenedFrom(Value v, Type narrow) {
  auto convert = v.getDefiningOp<ConvertOp>();
  if (!convert || convert.getOperand().getType() != narrow)
    return nullptr;
  return convert.getOperand();
}

/// gelu_grad(pre, dot_general(a, b)) -> dot_general_gelu_grad(a, b, pre),
/// or, under mixed precision, convert_T(gelu_grad(convert_f32(pre),
/// convert_f32(dot_general(a, b)))) with a 16-bit T: the same op on T,
/// whose 16-bit gelu_grad computes in f32 and rounds once, as the chain
/// does. The product and every op between it and the result must have no
/// other reader and the gelu_grad's marks. The fused op takes the
/// product's place, or the last op's where the pre-activation comes later
/// than the product.
void fuseBackward(GeluGradOp grad) {
  DictionaryAttr marks = grad->getDiscardableAttrDictionary();
  auto sameMarks = [&](Operation *op) {
    return op && op->getBlock() == grad->getBlock() &&
           op->getDiscardableAttrDictionary() == marks;
  };
  Value pre = grad.getOperand(), cotangent = grad.getCotangent();
  Operation *last = grad;
  SmallVector<Operation *> chain = {grad}; // erased after the replacement
  Type type = grad.getType();
  if (auto widened = cotangent.getDefiningOp<ConvertOp>()) {
    // Mixed precision: the product and the pre-activation widened to f32,
    // the gradient narrowed back.
    Type narrow = widened.getOperand().getType();
    auto element = cast<RankedTensorType>(narrow).getElementType();
    if ((!element.isBF16() && !element.isF16()) || !grad->hasOneUse())
      return;
    auto back = dyn_cast<ConvertOp>(*grad->getUsers().begin());
    pre = widenedFrom(pre, narrow);
    if (!back || back.getType() != narrow || !pre || !sameMarks(back) ||
        !sameMarks(widened) || !widened->hasOneUse() ||
        !getElementTypeOrSelf(grad.getType()).isF32())
      return;
    cotangent = widened.getOperand();
    chain = {back, grad, widened};
    last = back;
    type = narrow;
  }
  auto dot = cotangent.getDefiningOp<DotGeneralOp>();
  if (!dot || dot.getF32Result() || !dot->hasOneUse() || !sameMarks(dot) ||
      dot.getType() != type)
    return;
  chain.push_back(dot);
  Operation *preWidening =
      pre == grad.getOperand() ? nullptr : grad.getOperand().getDefiningOp();
  // At the product's place where the pre-activation is defined before it
  // (the forward's: the product's operands die as early as they did),
  // else at the last op's, after every operand.
  Operation *preDef = pre.getDefiningOp();
  bool early = !preDef || (preDef->getBlock() == dot->getBlock() &&
                           preDef->isBeforeInBlock(dot));
  OpBuilder b(early ? dot.getOperation() : last);
  auto fused = b.create<DotGeneralGeluGradOp>(
      grad.getLoc(), dot.getLhs(), dot.getRhs(), pre,
      dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions(),
      dot.getLhsContractingDimensions(), dot.getRhsContractingDimensions(),
      grad.getApproximation(), dot.getTf32());
  fused->setDiscardableAttrs(marks);
  last->getResult(0).replaceAllUsesWith(fused.getResult());
  for (Operation *op : chain)
    op->erase();
  if (preWidening && preWidening->use_empty())
    preWidening->erase();
}

struct FuseGeluPass : public trainc::impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    SmallVector<GeluOp> gelus;
    SmallVector<GeluGradOp> grads;
    getOperation().walk([&](Operation *op) {
      if (auto gelu = dyn_cast<GeluOp>(op))
        gelus.push_back(gelu);
      else if (auto grad = dyn_cast<GeluGradOp>(op))
        grads.push_back(grad);
    });
    for (GeluOp gelu : gelus)
      fuseForward(gelu);
    for (GeluGradOp grad : grads)
      fuseBackward(grad);
  }
};

} // namespace
