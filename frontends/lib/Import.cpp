//===- Import.cpp - The frontend registry ---------------------------------===//
//
// See Import.h.
//
//===----------------------------------------------------------------------===//

#include "trainc/Frontends/Import.h"

#include "trainc/Frontends/Onnx/OnnxImporter.h"
#include "trainc/Frontends/Stablehlo/StablehloImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

namespace trainc {

llvm::StringRef formatName(ModelFormat format) {
  switch (format) {
  case ModelFormat::Onnx:
    return "ONNX model";
  case ModelFormat::GraphIR:
    return "graph-dialect MLIR";
  case ModelFormat::Stablehlo:
    return "StableHLO";
  }
  return "unknown";
}

std::optional<ModelFormat> detectFormat(llvm::StringRef bytes) {
  // MLIR text: after blank lines and // comments, a module, a function, an
  // attribute or type alias, or a generic op.
  llvm::StringRef rest = bytes;
  while (true) {
    rest = rest.ltrim(" \t\r\n");
    if (!rest.starts_with("//"))
      break;
    rest = rest.drop_until([](char c) { return c == '\n'; });
  }
  auto mlirText = [&] {
    return stablehlo_import::isStablehloText(bytes) ? ModelFormat::Stablehlo
                                                    : ModelFormat::GraphIR;
  };
  for (llvm::StringRef start :
       {"module", "func.func", "\"builtin.module\"", "\"func.func\"", "{-#"})
    if (rest.starts_with(start))
      return mlirText();
  // An attribute or type alias: #name = ... or !name = ...
  if (rest.starts_with("#") || rest.starts_with("!")) {
    llvm::StringRef name = rest.drop_front().take_while(
        [](char c) { return llvm::isAlnum(c) || c == '_' || c == '.'; });
    if (!name.empty() &&
        rest.drop_front(1 + name.size()).ltrim(" \t").starts_with("="))
      return mlirText();
  }
  // An ONNX ModelProto starts with the tag of one of its fields: protobuf
  // writers go in field order, so ir_version (1, varint: 0x08) when set,
  // else producer_name, ..., graph (7: 0x3a), opset_import (8: 0x42).
  if (!bytes.empty())
    switch (static_cast<unsigned char>(bytes[0])) {
    case 0x08:
    case 0x12:
    case 0x1a:
    case 0x22:
    case 0x28:
    case 0x32:
    case 0x3a:
    case 0x42:
      return ModelFormat::Onnx;
    default:
      break;
    }
  return std::nullopt;
}

FailureOr<OwningOpRef<ModuleOp>> importModel(MLIRContext &context,
                                             llvm::StringRef path,
                                             const ImportOptions &options) {
  Location loc = FileLineColLoc::get(&context, path, 0, 0);
  // A directory, device or pipe is no model (and /dev/zero never ends).
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return emitError(loc) << path
                          << ": cannot read the file: " << error.message();
  if (!llvm::sys::fs::is_regular_file(status))
    return emitError(loc) << path
                          << ": not a regular file (a model is a file: "
                             "an ONNX model, StableHLO or graph-dialect MLIR "
                             "text)";
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return emitError(loc) << path << ": cannot read the file: "
                          << file.getError().message();
  if ((*file)->getBufferSize() == 0)
    return emitError(loc) << path
                          << ": the file is empty, not an ONNX model, "
                             "StableHLO or graph-dialect MLIR";
  std::optional<ModelFormat> format = detectFormat((*file)->getBuffer());
  if (!format)
    return emitError(loc)
           << path
           << ": not a model trainc reads (expected an ONNX model, StableHLO "
              "text or graph-dialect MLIR text; the format is told by the "
              "content, not the file name)";
  if (!options.parameters.empty() && *format != ModelFormat::Stablehlo)
    return emitError(loc) << "--params applies to StableHLO functions; " << path
                          << " is " << formatName(*format)
                          << ", which holds its parameters itself";
  if (options.unbiasedRunningVar && *format != ModelFormat::Onnx)
    return emitError(loc) << "--unbiased-running-var applies to ONNX models "
                             "(their BatchNormalization); "
                          << path << " is " << formatName(*format);
  if (!options.embeddingPaddingIndex.empty() && *format != ModelFormat::Onnx)
    return emitError(loc) << "--embedding-padding-index applies to ONNX "
                             "models (their Gather); "
                          << path << " is " << formatName(*format);
  if (options.trainModelessDropout && *format != ModelFormat::Onnx)
    return emitError(loc) << "--train-modeless-dropout applies to ONNX models "
                             "(their Dropout); "
                          << path << " is " << formatName(*format);
  if (options.trainModelessDropout &&
      (!options.trainingStep || options.evalMode))
    return emitError(loc) << "--train-modeless-dropout applies to a training "
                             "step (--train, without --eval-mode)";
  if (options.evalMode && *format != ModelFormat::Onnx)
    return emitError(loc) << "--eval-mode applies to ONNX models (their "
                             "training-mode Dropout and BatchNormalization); "
                          << path << " is " << formatName(*format);
  switch (*format) {
  case ModelFormat::Onnx:
    return onnx_import::importOnnxFile(context, path, options);
  case ModelFormat::Stablehlo:
    return stablehlo_import::importStablehlo(context, path, std::move(*file),
                                             options);
  case ModelFormat::GraphIR: {
    if (!options.inputShapes.empty() || !options.frozen.empty() ||
        !options.bindings.empty())
      return emitError(loc)
             << "--input-shape, --freeze and --bind apply to ONNX models; "
             << path
             << " is graph-dialect MLIR, which already has static shapes and "
                "parameter attributes";
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return failure();
    return module;
  }
  }
  return failure();
}

} // namespace trainc
