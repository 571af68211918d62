//===- FuseBiasGrad.cpp - A bias gradient summed inside its weight's GEMM -===//
//
// See FuseBiasGrad in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "FusionUtil.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_FUSEBIASGRAD
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// Whether `a` and `b` list the same dims (in any order).
bool sameDimSet(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  SmallVector<int64_t> x(a), y(b);
  llvm::sort(x);
  llvm::sort(y);
  return x == y;
}

/// A dot_general that contracts `sum`'s operand over exactly the dims the
/// sum reduces, with no batching dims and the sum's marks; `sumRhs` says
/// which operand it is. Null when there is none.
DotGeneralOp productOf(ReduceSumOp sum, bool &sumRhs) {
  Value dy = sum.getOperand();
  for (Operation *user : dy.getUsers()) {
    auto dot = dyn_cast<DotGeneralOp>(user);
    if (!dot || dot->getBlock() != sum->getBlock() ||
        !dot.getLhsBatchingDimensions().empty() ||
        dot->getDiscardableAttrDictionary() !=
            sum->getDiscardableAttrDictionary())
      continue;
    if (dot.getLhs() == dy &&
        sameDimSet(dot.getLhsContractingDimensions(), sum.getDims())) {
      sumRhs = false;
      return dot;
    }
    if (dot.getRhs() == dy &&
        sameDimSet(dot.getRhsContractingDimensions(), sum.getDims())) {
      sumRhs = true;
      return dot;
    }
  }
  return nullptr;
}

struct FuseBiasGradPass
    : public trainc::impl::FuseBiasGradBase<FuseBiasGradPass> {
  void runOnOperation() override {
    SmallVector<ReduceSumOp> sums;
    getOperation().walk([&](ReduceSumOp sum) { sums.push_back(sum); });
    for (ReduceSumOp sum : sums) {
      Type element = sum.getOperand().getType().getElementType();
      Type sumElement = sum.getType().getElementType();
      bool f32Sum = sumElement != element;
      if (!isa<FloatType>(element) || (f32Sum && !sumElement.isF32()))
        continue;
      bool sumRhs = false;
      DotGeneralOp dot = productOf(sum, sumRhs);
      if (!dot)
        continue;
      // A 16-bit sum widened for its f32 bias just after it (an f16 sum,
      // which trainc-widen-products leaves): the convert waits for the
      // product, so the fused op can take the product's place.
      for (Operation *user : llvm::make_early_inc_range(sum->getUsers()))
        if (isa<ConvertOp>(user) && user->getBlock() == dot->getBlock() &&
            user->isBeforeInBlock(dot) && trainc::usedOnlyAfter(user, dot))
          user->moveAfter(dot);
      // At the product's place (the schedule phase ordered the GEMMs) when
      // the sum's users all follow it, else at the sum's.
      Operation *point = trainc::fusionPoint(dot, sum);
      if (!point)
        continue;
      OpBuilder b(point);
      auto fused = b.create<DotGeneralBiasGradOp>(
          dot.getLoc(), dot.getLhs(), dot.getRhs(),
          dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions(),
          dot.getLhsContractingDimensions(), dot.getRhsContractingDimensions(),
          dot.getTf32(), dot.getF32Result(), f32Sum, sumRhs);
      fused->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
      dot.replaceAllUsesWith(fused.getResult());
      sum.replaceAllUsesWith(fused.getSum());
      dot.erase();
      sum.erase();
    }
  }
};

} // namespace
