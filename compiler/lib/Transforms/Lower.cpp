//===- Lower.cpp - Check that @main is in instruction form ----------------===//
//
// See Lower in Passes.td. The instruction view itself is Program.h; this
// pass builds it once so that what cannot be executed fails in this phase,
// with the op and its location.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Compiler/Program.h"

namespace trainc {
#define GEN_PASS_DEF_LOWER
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;

namespace trainc {
namespace {

struct LowerPass : public impl::LowerBase<LowerPass> {
  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("no function @main to compile");
      return signalPassFailure();
    }
    if (failed(Program::build(fn, /*withConstantData=*/false)))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace trainc
