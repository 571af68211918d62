//===- PadClasses.cpp - A loss's class dimension padded for its matmuls ---===//
//
// See PadClasses in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Partition.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_PADCLASSES
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `type` with dimension `dim` of size `size`.
RankedTensorType withDim(RankedTensorType type, int64_t dim, int64_t size) {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size;
  return type.clone(shape);
}

/// How a backward matmul reads the padded logits' gradient: its operand
/// `side` (0 lhs, 1 rhs) is the gradient, whose class dim is `classDim`.
struct GradDot {
  DotGeneralOp dot;
  unsigned side;
  /// The class dim is contracted (with the weight's class dim), else it is
  /// a free dim and the result's dim `resultDim` is padded.
  bool contracted;
  int64_t resultDim;
};

/// Everything the rewrite of one softmax_cross_entropy changes, found
/// before anything is changed.
struct Plan {
  DotGeneralOp logitsDot;
  /// The weight (the dot's rhs) and its class dim.
  Value weight;
  int64_t weightDim;
  /// Reshapes between the dot and the losses, and between each gradient
  /// and its matmuls (all keep the class dim last).
  SmallVector<ReshapeOp> reshapes;
  SmallVector<SoftmaxCrossEntropyOp> losses;
  SmallVector<SoftmaxCrossEntropyGradOp> grads;
  SmallVector<GradDot> gradDots;
};

/// The ops that read `v` (through reshapes that keep its last dim last)
/// other than reshapes, or failure when a reshape moves the last dim.
LogicalResult readers(Value v, SmallVectorImpl<ReshapeOp> &reshapes,
                      SmallVectorImpl<std::pair<Operation *, Value>> &out) {
  for (Operation *user : v.getUsers()) {
    if (auto reshape = dyn_cast<ReshapeOp>(user)) {
      if (typeOf(reshape.getResult()).getShape().back() !=
          typeOf(v).getShape().back())
        return failure();
      reshapes.push_back(reshape);
      if (failed(readers(reshape.getResult(), reshapes, out)))
        return failure();
      continue;
    }
    out.push_back({user, v});
  }
  return success();
}

/// How `dot` reads `grad` (its operand `side`, class dim last): contracted
/// with `weight`'s dim `weightDim`, or as a free dim; else failure.
FailureOr<GradDot> gradDot(DotGeneralOp dot, Value grad, Value weight,
                           int64_t weightDim) {
  if (dot.getLhs() == dot.getRhs())
    return failure();
  unsigned side = dot.getLhs() == grad ? 0 : 1;
  int64_t classDim = typeOf(grad).getRank() - 1;
  ArrayRef<int64_t> batching[2] = {dot.getLhsBatchingDimensions(),
                                   dot.getRhsBatchingDimensions()};
  ArrayRef<int64_t> contracting[2] = {dot.getLhsContractingDimensions(),
                                      dot.getRhsContractingDimensions()};
  if (llvm::is_contained(batching[side], classDim))
    return failure();
  const auto *at = llvm::find(contracting[side], classDim);
  if (at != contracting[side].end()) {
    // The other operand must be the weight, contracted on its class dim.
    Value other = side == 0 ? dot.getRhs() : dot.getLhs();
    int64_t k = at - contracting[side].begin();
    if (other != weight || contracting[1 - side][k] != weightDim)
      return failure();
    return GradDot{dot, side, true, -1};
  }
  // A free dim: the result has the batching dims, lhs's free dims, then
  // rhs's.
  Value lhs = dot.getLhs(), rhs = dot.getRhs();
  SmallVector<int64_t> lhsFree =
      dotFreeDims(typeOf(lhs).getRank(), batching[0], contracting[0]);
  SmallVector<int64_t> rhsFree =
      dotFreeDims(typeOf(rhs).getRank(), batching[1], contracting[1]);
  int64_t base = int64_t(batching[0].size());
  ArrayRef<int64_t> free = side == 0 ? lhsFree : rhsFree;
  if (side == 1)
    base += int64_t(lhsFree.size());
  int64_t position = llvm::find(free, classDim) - free.begin();
  return GradDot{dot, side, false, base + position};
}

/// The plan for `loss`, or failure when its logits are not (reshapes of) a
/// matmul read only by cross-entropy ops whose gradients only matmuls
/// read.
FailureOr<Plan> planFor(SoftmaxCrossEntropyOp loss) {
  Plan plan;
  Value logits = loss.getLogits();
  // (The reshapes are checked with the matmul's other readers below.)
  while (auto reshape = logits.getDefiningOp<ReshapeOp>())
    logits = reshape.getOperand();
  plan.logitsDot = logits.getDefiningOp<DotGeneralOp>();
  if (!plan.logitsDot || plan.logitsDot.getLhs() == plan.logitsDot.getRhs())
    return failure();
  // The result's last dim is the rhs's last free dim.
  DotGeneralOp dot = plan.logitsDot;
  SmallVector<int64_t> rhsFree = dotFreeDims(typeOf(dot.getRhs()).getRank(),
                                             dot.getRhsBatchingDimensions(),
                                             dot.getRhsContractingDimensions());
  if (rhsFree.empty())
    return failure();
  plan.weight = dot.getRhs();
  plan.weightDim = rhsFree.back();

  SmallVector<std::pair<Operation *, Value>> users;
  if (failed(readers(dot.getResult(), plan.reshapes, users)))
    return failure();
  for (auto [user, value] : users) {
    if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(user)) {
      if (ce.getLogits() != value || ce.getClasses())
        return failure();
      plan.losses.push_back(ce);
      continue;
    }
    auto grad = dyn_cast<SoftmaxCrossEntropyGradOp>(user);
    if (!grad || grad.getLogits() != value || grad.getClasses())
      return failure();
    plan.grads.push_back(grad);
    SmallVector<std::pair<Operation *, Value>> gradUsers;
    if (failed(readers(grad.getResult(), plan.reshapes, gradUsers)))
      return failure();
    for (auto [gradUser, gradValue] : gradUsers) {
      auto matmul = dyn_cast<DotGeneralOp>(gradUser);
      if (!matmul)
        return failure();
      FailureOr<GradDot> how =
          gradDot(matmul, gradValue, plan.weight, plan.weightDim);
      if (failed(how))
        return failure();
      plan.gradDots.push_back(*how);
    }
  }
  return plan;
}

struct PadClassesPass : public trainc::impl::PadClassesBase<PadClassesPass> {
  using PadClassesBase::PadClassesBase;

  void runOnOperation() override {
    if (multiple <= 1)
      return;
    // Values of an earlier run (another function) must not match this one's.
    paddedWeights.clear();
    SmallVector<SoftmaxCrossEntropyOp> losses;
    getOperation().walk(
        [&](SoftmaxCrossEntropyOp loss) { losses.push_back(loss); });
    for (SoftmaxCrossEntropyOp loss : losses) {
      // An earlier rewrite (two losses of one matmul) set its classes.
      if (loss.getClasses())
        continue;
      int64_t classes = typeOf(loss.getLogits()).getShape().back();
      int64_t padded = (classes + multiple - 1) / multiple * multiple;
      // Only where the padding is small next to the classes.
      if (padded == classes || (padded - classes) * kMaxPaddingRatio > classes)
        continue;
      // Only for a training step: an inference program's one matmul would
      // gain little and copy the whole weight on every run.
      FailureOr<Plan> plan = planFor(loss);
      if (succeeded(plan) && !plan->grads.empty())
        rewrite(*plan, classes, padded);
    }
  }

  /// Padding at most 1/kMaxPaddingRatio of the classes.
  static constexpr int64_t kMaxPaddingRatio = 32;

  /// The padded copy of each weight (a weight that several losses read,
  /// one per micro-batch under gradient accumulation, is padded once: the
  /// first loss's copy dominates the later ones).
  llvm::DenseMap<std::pair<Value, int64_t>, Value> paddedWeights;

  void rewrite(const Plan &plan, int64_t classes, int64_t padded) {
    DotGeneralOp dot = plan.logitsDot;
    OpBuilder b(dot);
    Value &weight = paddedWeights[{plan.weight, plan.weightDim}];
    if (!weight)
      weight = trainc::padWithZeros(b, dot.getLoc(), plan.weight,
                                    plan.weightDim, padded);
    auto padLast = [&](Value v) {
      RankedTensorType type = typeOf(v);
      v.setType(withDim(type, type.getRank() - 1, padded));
    };
    dot.getRhsMutable().assign(weight);
    padLast(dot.getResult());
    for (ReshapeOp reshape : plan.reshapes)
      padLast(reshape.getResult());
    IntegerAttr count = b.getI64IntegerAttr(classes);
    for (SoftmaxCrossEntropyOp loss : plan.losses)
      loss.setClassesAttr(count);
    for (SoftmaxCrossEntropyGradOp grad : plan.grads) {
      grad.setClassesAttr(count);
      padLast(grad.getResult());
    }
    for (const GradDot &use : plan.gradDots) {
      DotGeneralOp matmul = use.dot;
      if (use.contracted) {
        (use.side == 0 ? matmul.getRhsMutable() : matmul.getLhsMutable())
            .assign(weight);
        continue;
      }
      // The padded rows of the result (zeros: the gradient is 0 there) are
      // dropped for the matmul's users.
      RankedTensorType type = typeOf(matmul.getResult());
      matmul.getResult().setType(withDim(type, use.resultDim, padded));
      b.setInsertionPointAfter(matmul);
      SmallVector<int64_t> start(type.getRank(), 0), strides(type.getRank(), 1);
      auto slice = b.create<SliceOp>(matmul.getLoc(), matmul.getResult(), start,
                                     type.getShape(), strides);
      slice->setDiscardableAttrs(matmul->getDiscardableAttrDictionary());
      matmul.getResult().replaceAllUsesExcept(slice.getResult(), slice);
    }
  }
};

} // namespace
