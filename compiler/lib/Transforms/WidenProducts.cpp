//===- WidenProducts.cpp - 16-bit products that are only widened ----------===//
//
// See WidenProducts in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_WIDENPRODUCTS
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// convert(reduce_sum(x : bf16)) -> f32, the convert the sum's only use:
/// the sum itself gives f32 (reduce_sum's C3), the bias gradients of mixed
/// precision (a 16-bit gradient summed over rows for an f32 bias). Not for
/// f16: a bias gradient's f16 sum is where a loss-scaled backward pass
/// overflows first (a Hugging Face ViT at 2^16), and fp16 training keeps
/// GradScaler's overflow decisions, so its sums stay as PyTorch's.
bool widenSum(ConvertOp convert) {
  auto sum = convert.getOperand().getDefiningOp<ReduceSumOp>();
  if (!sum || !sum->hasOneUse() || sum.getDims().empty() ||
      !convert.getType().getElementType().isF32() ||
      sum->getDiscardableAttrDictionary() !=
          convert->getDiscardableAttrDictionary())
    return false;
  if (!sum.getType().getElementType().isBF16())
    return false;
  sum.getResult().setType(convert.getType());
  convert.replaceAllUsesWith(sum.getResult());
  convert.erase();
  return true;
}

/// Whether every use of the widened product is an elementwise op other
/// than a sum: an activation's derivative (gelu_grad), a gated unit's
/// product, an activation itself. trainc-fuse-elementwise then fuses the
/// convert into their loop, where reading the 16-bit product costs half
/// the bytes of an f32 one and no kernel of its own. Sums (add, sub: a
/// residual stream, gradient accumulation) keep the f32 product.
bool readOnlyByElementwiseMath(ConvertOp convert) {
  return llvm::all_of(convert->getUsers(), [](Operation *user) {
    return user->hasTrait<mlir::OpTrait::Elementwise>() &&
           !isa<AddOp, SubOp, ConvertOp>(user);
  });
}

struct WidenProductsPass
    : public trainc::impl::WidenProductsBase<WidenProductsPass> {
  void runOnOperation() override {
    SmallVector<ConvertOp> converts;
    getOperation().walk([&](ConvertOp c) { converts.push_back(c); });
    // One use each: with recomputation, a forward product and its clone
    // may differ in uses (the clone feeds only the backward pass), and so
    // be widened differently; the numbers stay those of a program written
    // with the same products, each widened or not.
    for (ConvertOp convert : converts) {
      if (widenSum(convert))
        continue;
      auto dot = convert.getOperand().getDefiningOp<DotGeneralOp>();
      if (!dot || !dot->hasOneUse() || dot.getF32Result() ||
          !convert.getType().getElementType().isF32() ||
          readOnlyByElementwiseMath(convert) ||
          dot->getDiscardableAttrDictionary() !=
              convert->getDiscardableAttrDictionary())
        continue;
      Type element = dot.getType().getElementType();
      if (!element.isBF16() && !element.isF16())
        continue;
      // At the product's place: the schedule phase ordered the GEMMs.
      OpBuilder b(dot);
      auto wide = b.create<DotGeneralOp>(
          dot.getLoc(), dot.getLhs(), dot.getRhs(),
          dot.getLhsBatchingDimensions(), dot.getRhsBatchingDimensions(),
          dot.getLhsContractingDimensions(), dot.getRhsContractingDimensions(),
          dot.getTf32(), /*f32_result=*/true);
      wide->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
      convert.replaceAllUsesWith(wide.getResult());
      convert.erase();
      dot.erase();
    }
  }
};

} // namespace
