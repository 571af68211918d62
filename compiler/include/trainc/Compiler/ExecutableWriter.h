//===- ExecutableWriter.h - The serializer ----------------------*- C++ -*-===//
//
// The last step of the compiler, after the `plan-memory` phase: writes @main
// (in instruction form, with its memory plan as attributes) as the
// FlatBuffer of runtime/schema/executable.fbs followed by the constant
// section. It decides nothing: instruction order, lowering and the memory
// plan are the phases' (Pipeline.h).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_EXECUTABLEWRITER_H
#define TRAINC_COMPILER_EXECUTABLEWRITER_H

#include "trainc/Compiler/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace trainc {

struct WriterOptions {
  std::string source;  ///< The model file, recorded in the executable.
  std::string command; ///< The trainc command line.
};

/// Writes `@main` of `module` (after the plan-memory phase) to `path`, and
/// fills `report` from its plan. Emits an error naming what is missing or
/// cannot be written.
mlir::LogicalResult writeExecutable(mlir::ModuleOp module, llvm::StringRef path,
                                    const WriterOptions &options,
                                    MemoryPlanReport &report);

} // namespace trainc

#endif // TRAINC_COMPILER_EXECUTABLEWRITER_H
