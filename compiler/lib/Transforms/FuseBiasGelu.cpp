//===- FuseBiasGelu.cpp - A linear layer's GELU inside its dot ------------===//
//
// See FuseBiasGelu in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_FUSEBIASGELU
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

struct FuseBiasGeluPass
    : public trainc::impl::FuseBiasGeluBase<FuseBiasGeluPass> {
  void runOnOperation() override {
    SmallVector<GeluOp> gelus;
    getOperation().walk([&](GeluOp gelu) { gelus.push_back(gelu); });
    for (GeluOp gelu : gelus) {
      auto dot = gelu.getOperand().getDefiningOp<DotGeneralBiasOp>();
      // Marks (a recompute clone's) must agree: the fused op carries them.
      if (!dot || dot->getBlock() != gelu->getBlock() ||
          dot->getDiscardableAttrDictionary() !=
              gelu->getDiscardableAttrDictionary())
        continue;
      // At the dot's place: its operands are defined before it, and the
      // gelu's users follow the gelu, which follows the dot.
      OpBuilder b(dot);
      auto fused = b.create<DotGeneralBiasGeluOp>(
          gelu.getLoc(), dot.getLhs(), dot.getRhs(), dot.getBias(),
          dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions(),
          dot.getLhsContractingDimensions(), dot.getRhsContractingDimensions(),
          gelu.getApproximation(), dot.getTf32());
      fused->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
      gelu.replaceAllUsesWith(fused.getResult());
      gelu.erase();
      // Every other reader of the product (gelu_grad, another gelu) reads
      // the pre-activation the fused op writes.
      dot.replaceAllUsesWith(fused.getPreactivation());
      dot.erase();
    }
  }
};

} // namespace
