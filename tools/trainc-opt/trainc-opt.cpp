//===- trainc-opt.cpp - Run trainc passes on MLIR files -------------------===//
//
// mlir-opt with only trainc's dialects and passes (plus test passes), for
// lit tests and for debugging a single pass: `trainc-opt --help`.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace trainc::test {
void registerTestPasses();
} // namespace trainc::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  trainc::registerTraincDialects(registry);
  trainc::registerTraincPasses();
  trainc::test::registerTestPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "trainc optimizer driver: runs trainc passes on MLIR\n",
      registry));
}
