//===- FuseBias.cpp - A linear layer's bias added inside its dot ----------===//
//
// See FuseBias in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_FUSEBIAS
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// The bias that `value` broadcasts onto `dot`'s rhs free dimensions (the
/// result's last ones, in order), or null.
Value biasOf(Value value, DotGeneralOp dot) {
  auto broadcast = value.getDefiningOp<BroadcastInDimOp>();
  if (!broadcast)
    return nullptr;
  auto bias = cast<RankedTensorType>(broadcast.getOperand().getType());
  auto result = cast<RankedTensorType>(dot.getResult().getType());
  int64_t rhsFree = dot.getRhs().getType().getRank() -
                    int64_t(dot.getRhsBatchingDimensions().size()) -
                    int64_t(dot.getRhsContractingDimensions().size());
  if (bias.getRank() != rhsFree ||
      bias.getShape() != result.getShape().take_back(rhsFree))
    return nullptr;
  // A size-1 bias dimension broadcast onto a larger one would also verify;
  // the shapes being equal rules it out. The dims must be the trailing ones.
  for (auto [i, d] : llvm::enumerate(broadcast.getDims()))
    if (d != result.getRank() - rhsFree + int64_t(i))
      return nullptr;
  return broadcast.getOperand();
}

struct FuseBiasPass : public trainc::impl::FuseBiasBase<FuseBiasPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp add) { adds.push_back(add); });
    for (AddOp add : adds) {
      for (unsigned side : {0u, 1u}) {
        auto dot = add->getOperand(side).getDefiningOp<DotGeneralOp>();
        // Marks (a recompute clone's) must agree: the fused op carries them.
        // A widened product has no fused form.
        if (!dot || !dot->hasOneUse() || dot.getF32Result() ||
            dot->getDiscardableAttrDictionary() !=
                add->getDiscardableAttrDictionary())
          continue;
        Value bias = biasOf(add->getOperand(1 - side), dot);
        if (!bias)
          continue;
        OpBuilder b(add);
        auto fused = b.create<DotGeneralBiasOp>(
            add.getLoc(), dot.getLhs(), dot.getRhs(), bias,
            dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions(),
            dot.getLhsContractingDimensions(),
            dot.getRhsContractingDimensions(), dot.getTf32());
        fused->setDiscardableAttrs(add->getDiscardableAttrDictionary());
        Operation *broadcast = add->getOperand(1 - side).getDefiningOp();
        add.replaceAllUsesWith(fused.getResult());
        add.erase();
        dot.erase();
        if (broadcast->use_empty())
          broadcast->erase();
        break;
      }
    }
  }
};

} // namespace
