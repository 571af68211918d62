//===- TestShardingRules.cpp - Print each op's sharding rule --------------===//
//
// `trainc-opt --trainc-test-sharding-rules` emits a remark with every graph
// op's ShardingRuleOpInterface rule in Shardy's notation, so lit tests can
// check each rule with expected-remark (test/Dialect/Graph/sharding.mlir).
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphInterfaces.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

struct TestShardingRulesPass
    : public PassWrapper<TestShardingRulesPass, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestShardingRulesPass)

  StringRef getArgument() const final { return "trainc-test-sharding-rules"; }
  StringRef getDescription() const final {
    return "Emit a remark with the sharding rule of every graph op";
  }

  void runOnOperation() override {
    getOperation()->walk([](trainc::graph::ShardingRuleOpInterface op) {
      std::string text;
      llvm::raw_string_ostream os(text);
      op.getShardingRule().print(os);
      op->emitRemark() << text;
    });
  }
};

} // namespace

namespace trainc::test {
void registerTestShardingRulesPass() {
  PassRegistration<TestShardingRulesPass>();
}
} // namespace trainc::test
