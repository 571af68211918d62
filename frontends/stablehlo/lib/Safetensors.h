//===- Safetensors.h - Reading initial parameter values ---------*- C++ -*-===//

#ifndef TRAINC_FRONTENDS_STABLEHLO_SAFETENSORS_H
#define TRAINC_FRONTENDS_STABLEHLO_SAFETENSORS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace trainc::stablehlo_import {

/// One tensor of a safetensors file.
struct SafetensorsEntry {
  std::string name;
  mlir::RankedTensorType type;
  std::vector<char> bytes; ///< Little-endian, row-major.
};

/// Every tensor of the safetensors file at `path`, in header order; an
/// error naming the file and tensor for anything malformed.
mlir::FailureOr<std::vector<SafetensorsEntry>>
readSafetensors(mlir::MLIRContext *ctx, llvm::StringRef path);

} // namespace trainc::stablehlo_import

#endif // TRAINC_FRONTENDS_STABLEHLO_SAFETENSORS_H
