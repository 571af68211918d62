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

struct WidenProductsPass
    : public trainc::impl::WidenProductsBase<WidenProductsPass> {
  void runOnOperation() override {
    SmallVector<ConvertOp> converts;
    getOperation().walk([&](ConvertOp c) { converts.push_back(c); });
    for (ConvertOp convert : converts) {
      auto dot = convert.getOperand().getDefiningOp<DotGeneralOp>();
      if (!dot || !dot->hasOneUse() || dot.getF32Result() ||
          !convert.getType().getElementType().isF32() ||
          dot->getDiscardableAttrDictionary() !=
              convert->getDiscardableAttrDictionary())
        continue;
      Type element = dot.getType().getElementType();
      if (!element.isBF16() && !element.isF16())
        continue;
      OpBuilder b(convert);
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
