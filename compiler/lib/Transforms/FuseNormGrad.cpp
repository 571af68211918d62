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

/// Whether `v` is defined before `op` in op's block (or is that block's
/// argument).
bool definedBefore(Value v, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == op->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

/// `n` made again in its place with `addend` and `narrowed` (null: none);
/// the uses of n's results move to the new op's.
NormGradParamsOp rebuild(NormGradParamsOp n, Value addend, Type narrowed) {
  OpBuilder b(n);
  auto fused = b.create<NormGradParamsOp>(
      n.getLoc(), n.getInput(), n.getScale(), n.getCotangent(), addend,
      n.getAxisAttr(), n.getEpsilonAttr(), n.getCenteredAttr(),
      n.getWithBiasGradAttr(), narrowed ? TypeAttr::get(narrowed) : TypeAttr());
  fused->setDiscardableAttrs(n->getDiscardableAttrDictionary());
  n.getInputGrad().replaceAllUsesWith(fused.getInputGrad());
  n.getScaleGrad().replaceAllUsesWith(fused.getScaleGrad());
  if (Value bias = n.getBiasGrad())
    bias.replaceAllUsesWith(fused.getBiasGrad());
  if (Value old = n.getNarrowedInputGrad())
    old.replaceAllUsesWith(fused.getNarrowedInputGrad());
  n.erase();
  return fused;
}

/// The residual stream's gradient summed inside `n`: the add that is its
/// input gradient's one use becomes its addend (when the other operand is
/// defined before it), then a convert of the (summed) input gradient to
/// bf16 or f16 its narrowed result. The add and the convert must carry
/// n's marks.
void foldResidualGrad(NormGradParamsOp n) {
  DictionaryAttr marks = n->getDiscardableAttrDictionary();
  Value dx = n.getInputGrad();
  // Not into an op that has its copy already (the pass run again, or
  // written by hand): the copy is of the unsummed gradient.
  if (!n.getAddend() && !n.getNarrowedType() && dx.hasOneUse()) {
    auto add = dyn_cast<AddOp>(*dx.getUsers().begin());
    if (add && add.getType() == dx.getType() &&
        add->getDiscardableAttrDictionary() == marks) {
      Value other = add.getOperand(add.getOperand(0) == dx ? 1 : 0);
      if (definedBefore(other, n)) {
        n = rebuild(n, other, Type());
        add.replaceAllUsesWith(n.getInputGrad());
        add.erase();
      }
    }
  }
  auto type = cast<RankedTensorType>(n.getInputGrad().getType());
  if (n.getNarrowedType() || !type.getElementType().isF32())
    return;
  for (Operation *user : n.getInputGrad().getUsers()) {
    auto convert = dyn_cast<ConvertOp>(user);
    if (!convert || convert->getDiscardableAttrDictionary() != marks)
      continue;
    auto to = cast<RankedTensorType>(convert.getType());
    if (!to.getElementType().isBF16() && !to.getElementType().isF16())
      continue;
    n = rebuild(n, n.getAddend(), to.getElementType());
    convert.replaceAllUsesWith(n.getNarrowedInputGrad());
    convert.erase();
    return;
  }
}

struct FuseNormGradPass
    : public trainc::impl::FuseNormGradBase<FuseNormGradPass> {
  using FuseNormGradBase::FuseNormGradBase;

  void runOnOperation() override {
    formNormGradParams();
    if (!residualGrad)
      return;
    SmallVector<NormGradParamsOp> fused;
    getOperation().walk([&](NormGradParamsOp n) { fused.push_back(n); });
    for (NormGradParamsOp n : fused)
      foldResidualGrad(n);
  }

  void formNormGradParams() {
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
          /*addend=*/Value(), grad.getAxisAttr(), grad.getEpsilonAttr(),
          grad.getCenteredAttr(), bias ? b.getUnitAttr() : UnitAttr(),
          /*narrowed_type=*/TypeAttr());
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
