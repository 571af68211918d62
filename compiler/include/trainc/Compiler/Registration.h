//===- Registration.h - Every dialect and pass trainc uses -----*- C++ -*-===//
//
// Tools call these instead of MLIR's registerAll* (whose headers cost ~50 s
// per translation unit and pull in dialects trainc never uses).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_REGISTRATION_H
#define TRAINC_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace trainc {

/// Adds the dialects trainc's IR may contain: graph, train, func.
void registerTraincDialects(mlir::DialectRegistry &registry);

/// Registers trainc's passes (Passes.td) and the upstream ones its pipeline
/// uses (canonicalize, cse, symbol-dce).
void registerTraincPasses();

} // namespace trainc

#endif // TRAINC_COMPILER_REGISTRATION_H
