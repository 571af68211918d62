//===- OnnxImporter.h - ONNX models into the graph dialect -----*- C++ -*-===//
//
// The public face of the ONNX frontend. It includes no ONNX or protobuf
// header, so tools built without exceptions can call it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_ONNX_ONNXIMPORTER_H
#define TRAINC_FRONTENDS_ONNX_ONNXIMPORTER_H

#include "trainc/Frontends/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainc::onnx_import {

/// The options of every frontend (trainc/Frontends/Import.h).
using ImportOptions = trainc::ImportOptions;

/// Reads the ONNX model at `path` and returns a module with one function,
/// `@main`, in the graph dialect (see GraphBase.td for the contract on its
/// arguments and results). On failure, errors have been emitted as MLIR
/// diagnostics naming the file, node, op type, domain and opset.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxFile(mlir::MLIRContext &context, llvm::StringRef path,
               const ImportOptions &options);

/// An op the importer supports, for the opsets [minOpset, maxOpset].
struct SupportedOp {
  std::string opType;
  int64_t minOpset;
  int64_t maxOpset;
  std::string note; ///< Limits, e.g. "weight input unsupported".
};

/// Every supported op of the default (ai.onnx) domain, sorted by name.
std::vector<SupportedOp> supportedOps();

/// Dialects the imported IR uses (load them before importing).
void loadImportDialects(mlir::MLIRContext &context);

} // namespace trainc::onnx_import

#endif // TRAINC_FRONTENDS_ONNX_ONNXIMPORTER_H
