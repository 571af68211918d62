//===- Passes.h - trainc compiler passes -----------------------*- C++ -*-===//

#ifndef TRAINC_COMPILER_PASSES_H
#define TRAINC_COMPILER_PASSES_H

#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace trainc {

#define GEN_PASS_DECL
#include "trainc/Compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "trainc/Compiler/Passes.h.inc"

} // namespace trainc

#endif // TRAINC_COMPILER_PASSES_H
