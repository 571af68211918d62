//===- AttentionStats.cpp - Attention's gradient from its forward's stats -===//
//
// See AttentionStats in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_ATTENTIONSTATS
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// How many producers deep SameValues looks: a mask is its input through
/// a few casts, broadcasts and arithmetic.
constexpr int kSameValueDepth = 16;

/// Whether two values hold the same values: one value, or the same result
/// of two ops of one name, inherent attributes and result types whose
/// operands hold the same values in turn. Every graph op is a function of
/// its operands and attributes (dropout's mask of its seed, the step and
/// the index), so such ops compute the same bits: a recompute clone
/// (marked recompute.clone, a discardable attribute, not compared) and the
/// forward pass's op, as a recomputed attention mask and the forward's.
/// Answers are remembered (a value read twice is compared once), so the IR
/// must not change while one of these lives.
class SameValues {
public:
  bool operator()(Value a, Value b, int depth = kSameValueDepth) {
    if (a == b)
      return true;
    auto x = dyn_cast<OpResult>(a), y = dyn_cast<OpResult>(b);
    if (!x || !y || depth == 0 || x.getResultNumber() != y.getResultNumber())
      return false;
    if (auto known = answers.find({a, b}); known != answers.end())
      return known->second;
    Operation *p = x.getOwner(), *q = y.getOwner();
    bool same =
        p->getName() == q->getName() && p->getNumRegions() == 0 &&
        q->getNumRegions() == 0 && p->getResultTypes() == q->getResultTypes() &&
        p->getPropertiesAsAttribute() == q->getPropertiesAsAttribute() &&
        p->getNumOperands() == q->getNumOperands();
    for (unsigned i = 0; same && i < p->getNumOperands(); ++i)
      same = (*this)(p->getOperand(i), q->getOperand(i), depth - 1);
    answers[{a, b}] = same;
    return same;
  }

private:
  llvm::DenseMap<std::pair<Value, Value>, bool> answers;
};

/// Whether `forward` computes the attention whose gradient `grad` takes:
/// operands holding the same values, the same attributes and tensor
/// layouts, its result stored as the cotangent (C7 of
/// graph.attention_grad).
bool sameAttention(AttentionOp forward, AttentionGradOp grad,
                   SameValues &sameValues) {
  Value mask = forward.getMask(), gradMask = grad.getMask();
  if (!sameValues(forward.getQuery(), grad.getQuery()) ||
      !sameValues(forward.getKey(), grad.getKey()) ||
      !sameValues(forward.getValue(), grad.getValue()) ||
      bool(mask) != bool(gradMask) || (mask && !sameValues(mask, gradMask)) ||
      forward.getScaleAttr() != grad.getScaleAttr() ||
      forward.getCausal() != grad.getCausal() ||
      forward.getSoftcapAttr() != grad.getSoftcapAttr() ||
      forward.getDropoutAttr() != grad.getDropoutAttr() ||
      forward.getSeed() != grad.getSeed() ||
      forward.getDataSeedStride() != grad.getDataSeedStride() ||
      forward.getHeadBlocks() != grad.getHeadBlocks() ||
      forward.getQkvHeadsAttr() != grad.getQkvHeadsAttr() ||
      forward.getResult().getType() != grad.getCotangent().getType())
    return false;
  for (int i = 0; i < 4; ++i)
    if (forward.isSeqMajor(i) != grad.isSeqMajor(i))
      return false;
  return true;
}

/// The last attention before `grad` in its block that `grad` is the
/// gradient of (a recomputed clone, when there is one, rather than the
/// forward pass's: the result and statistics then live the shortest), or
/// null.
AttentionOp forwardOf(AttentionGradOp grad, ArrayRef<AttentionOp> attentions,
                      SameValues &sameValues) {
  AttentionOp found;
  for (AttentionOp forward : attentions)
    if (forward->getBlock() == grad->getBlock() &&
        forward->isBeforeInBlock(grad) &&
        sameAttention(forward, grad, sameValues) &&
        (!found || found->isBeforeInBlock(forward)))
      found = forward;
  return found;
}

/// `forward` giving its log-sum-exps as well (the op itself when it
/// already does).
AttentionOp withLse(AttentionOp forward) {
  if (forward.getWithLse())
    return forward;
  OpBuilder b(forward);
  auto kept = b.create<AttentionOp>(
      forward.getLoc(), forward.getQuery(), forward.getKey(),
      forward.getValue(), forward.getMask(), forward.getScaleAttr(),
      forward.getCausalAttr(), forward.getSoftcapAttr(),
      forward.getDropoutAttr(), forward.getSeedAttr(),
      forward.getDataSeedStrideAttr(), forward.getSeqMajorAttr(),
      forward.getQkvHeadsAttr(), b.getUnitAttr(), forward.getHeadBlocksAttr());
  kept->setDiscardableAttrs(forward->getDiscardableAttrDictionary());
  forward.getResult().replaceAllUsesWith(kept.getResult());
  forward.erase();
  return kept;
}

struct AttentionStatsPass
    : public trainc::impl::AttentionStatsBase<AttentionStatsPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    SmallVector<AttentionGradOp> grads;
    getOperation().walk([&](Operation *op) {
      if (auto forward = dyn_cast<AttentionOp>(op))
        attentions.push_back(forward);
      else if (auto grad = dyn_cast<AttentionGradOp>(op);
               grad && !grad.hasStats())
        grads.push_back(grad);
    });
    // Every pair is found before anything changes (SameValues remembers
    // values).
    SmallVector<std::pair<AttentionGradOp, Operation *>> pairs;
    {
      SameValues sameValues;
      for (AttentionGradOp grad : grads)
        if (AttentionOp forward = forwardOf(grad, attentions, sameValues))
          pairs.push_back({grad, forward});
    }
    // Each forward once with its log-sum-exps, by the op it replaces.
    llvm::DenseMap<Operation *, AttentionOp> kept;
    for (auto [grad, found] : pairs) {
      AttentionOp &forward = kept[found];
      if (!forward)
        forward = withLse(cast<AttentionOp>(found));
      OpBuilder b(grad);
      auto read = b.create<AttentionGradOp>(
          grad.getLoc(), grad.getResultTypes(), grad.getQuery(), grad.getKey(),
          grad.getValue(), grad.getCotangent(), grad.getMask(),
          ValueRange{forward.getResult(), forward.getLse()},
          grad.getScaleAttr(), grad.getCausalAttr(), grad.getSoftcapAttr(),
          grad.getDropoutAttr(), grad.getSeedAttr(),
          grad.getDataSeedStrideAttr(), grad.getSeqMajorAttr(),
          grad.getQkvHeadsAttr(), grad.getHeadBlocksAttr());
      read->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
      grad.replaceAllUsesWith(read.getResults());
      grad.erase();
    }
  }
};

} // namespace
