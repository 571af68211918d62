//===- VocabularyTest.cpp - Every graph op has an executable opcode -------===//
//
// The graph dialect and the executable schema name the same ops: each
// graph op but graph.constant (data, not an instruction) and graph.yield
// (the end of a fused loop's body, part of its instruction) lowers to the
// schema's opcode of the same name, and each opcode implements a graph op.
// The runtime side (a validator rule and a kernel per opcode) is
// test/Unit/Runtime/ExecutableTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Program.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

TEST(Vocabulary, EveryGraphOpLowersToAnOpcodeAndEveryOpcodeIsAGraphOp) {
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  std::set<std::string> graphOps;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "graph")
      continue;
    std::string op = name.stripDialect().str();
    graphOps.insert(op);
    if (op == "constant" || op == "yield")
      continue;
    EXPECT_TRUE(trainc::opcodeForGraphOp(op).has_value())
        << "graph." << op << " lowers to no opcode: add it to enum Opcode in "
        << "runtime/schema/executable.fbs, with a validator rule and a kernel";
  }
  EXPECT_GT(graphOps.size(), 30u);
  EXPECT_FALSE(trainc::opcodeForGraphOp("constant").has_value());
  EXPECT_FALSE(trainc::opcodeForGraphOp("yield").has_value());
  for (int i = 0; i < trainc::kNumOpcodes; ++i) {
    std::string name = trainc::opcodeName(static_cast<trainc::Opcode>(i));
    EXPECT_TRUE(graphOps.count(name))
        << "opcode '" << name << "' implements no graph op";
  }
}

} // namespace
