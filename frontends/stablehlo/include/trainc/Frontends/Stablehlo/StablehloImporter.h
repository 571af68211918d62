//===- StablehloImporter.h - StableHLO text into the graph dialect -*- C++
//-*-===//
//
// The public face of the StableHLO frontend: StableHLO as JAX prints it
// (`jax.jit(f).lower(...).as_text()`, `jax.export(...).mlir_module()`), in
// the pretty or the generic op form, read with trainc's own input dialects
// (no StableHLO library, no Python). See frontends/README.md.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_STABLEHLO_STABLEHLOIMPORTER_H
#define TRAINC_FRONTENDS_STABLEHLO_STABLEHLOIMPORTER_H

#include "trainc/Frontends/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class MemoryBuffer;
} // namespace llvm

namespace trainc::stablehlo_import {

/// Whether MLIR text is StableHLO (it uses the stablehlo, chlo or check
/// dialects) rather than trainc's graph dialect.
bool isStablehloText(llvm::StringRef text);

/// Reads the StableHLO module in `file` (read from `path`) and returns a
/// module whose `@main` is in the graph dialect:
/// - the entry function is `@main`, or the module's only public function;
///   private functions it calls are inlined;
/// - an argument is named by its location (`loc("params['w']")`, as
///   jax.export writes) or `argN`; an argument whose name is a tensor of
///   `options.parameters` (a safetensors file) is a parameter initialized
///   from it, any other argument a data input;
/// - results are named by `jax.result_info`; a function with one scalar
///   float result (a JAX loss function) names it `loss`;
/// - the interpreter tests' checks (`check.expect_*`,
///   `stablehlo.custom_call @check.expect_*`) become outputs
///   `check<i>_<eq|almost_eq|close>_{actual,expected}`.
/// Errors are emitted as MLIR diagnostics naming the op and its location.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importStablehlo(mlir::MLIRContext &context, llvm::StringRef path,
                std::unique_ptr<llvm::MemoryBuffer> file,
                const ImportOptions &options);

/// An op the importer lowers, with its limits.
struct SupportedOp {
  std::string name; ///< With its dialect: "stablehlo.add".
  std::string
      types; ///< "any" supported type, "numbers" (not i1), "floats", "i1".
  std::string note;
};

/// Every supported op, sorted by name.
std::vector<SupportedOp> supportedOps();

/// The element types trainc imports, for listings.
llvm::StringRef supportedElementTypes();

} // namespace trainc::stablehlo_import

#endif // TRAINC_FRONTENDS_STABLEHLO_STABLEHLOIMPORTER_H
