//===- TestOpCost.cpp - Print each op's CostOpInterface figures -----------===//
//
// `trainc-opt --trainc-test-op-cost` emits a remark "flops = F, bytes = B"
// on every op that implements the cost interface, so lit tests can check
// the counts with expected-remark.
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphInterfaces.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

struct TestOpCostPass : public PassWrapper<TestOpCostPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestOpCostPass)

  StringRef getArgument() const final { return "trainc-test-op-cost"; }
  StringRef getDescription() const final {
    return "Emit a remark with the FLOPs and bytes of every graph op";
  }

  void runOnOperation() override {
    getOperation()->walk([](trainc::graph::CostOpInterface op) {
      op->emitRemark() << "flops = " << op.getFlops()
                       << ", bytes = " << op.getBytesAccessed();
    });
  }
};

} // namespace

namespace trainc::test {
void registerTestShardingRulesPass();

void registerTestPasses() {
  PassRegistration<TestOpCostPass>();
  registerTestShardingRulesPass();
}
} // namespace trainc::test
