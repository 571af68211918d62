//===- Registration.cpp - Every dialect and pass trainc uses --------------===//

#include "trainc/Compiler/Registration.h"

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace trainc {

void registerTraincDialects(mlir::DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, train::TrainDialect,
                  mlir::func::FuncDialect>();
}

void registerTraincPasses() {
  registerCompilerPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}

} // namespace trainc
