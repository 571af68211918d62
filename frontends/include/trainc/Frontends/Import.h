//===- Import.h - Any model file into the graph dialect ---------*- C++ -*-===//
//
// The frontend registry: one entry point that reads a model file and hands
// it to the importer of its format, chosen by the file's content (never its
// name): an ONNX protobuf, StableHLO text (as JAX prints it), or
// graph-dialect MLIR text. A new frontend adds a format here with its
// content test.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_IMPORT_H
#define TRAINC_FRONTENDS_IMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trainc {

/// What a frontend needs besides the file.
struct ImportOptions {
  /// Static shapes for graph inputs by name, e.g. {"tokens": {8, 128}}.
  /// Required for every input with a symbolic or unknown dimension; an
  /// input with a static shape must match. (ONNX only.)
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Parameters not to train: names or glob patterns (ONNX initializer
  /// names; StableHLO parameter names).
  std::vector<std::string> frozen;
  /// A safetensors file with the initial values of a StableHLO function's
  /// parameters: each tensor names an argument (by its location name, e.g.
  /// `params['w']` as jax.export writes it), which becomes a trainable
  /// parameter; the other arguments are data inputs. (StableHLO only.)
  std::string parameters;
  /// Base seed of Dropout nodes; node i gets a seed derived from (seed, i).
  uint64_t dropoutSeed = 0;
  /// Read training-mode Dropout and BatchNormalization nodes in inference
  /// mode, as PyTorch's model.eval() runs them: for the evaluation
  /// executable of a model exported in training mode. (ONNX only.)
  bool evalMode = false;
  /// In a training step, read Dropout nodes without a training_mode input
  /// (which ONNX defines as the identity) as training-mode dropouts: what
  /// PyTorch's exporters write for scaled_dot_product_attention's
  /// dropout_p, even in training mode. (ONNX only.)
  bool trainModelessDropout = false;
  /// BatchNormalization's running variance blends the batch's unbiased
  /// variance (n / (n - 1) times the population variance, n the elements
  /// per channel), as PyTorch's BatchNorm does, not the population variance
  /// the ONNX specification says. (ONNX only.)
  bool unbiasedRunningVar = false;
  /// Embedding tables whose padding row gets no gradient, as PyTorch's
  /// Embedding(padding_idx=ROW) (which the exporters drop): initializer
  /// name -> row. Each must be read by a Gather on axis 0, which gets
  /// graph.gather's padding_index. (ONNX only.)
  std::map<std::string, int64_t> embeddingPaddingIndex;
  /// The module becomes a training step (compileModel sets it from
  /// --train): the state the forward pass updates (BatchNormalization's
  /// running statistics) becomes the step's `train.update` results. Else
  /// those are ordinary values, and the parameters stay as they are from
  /// run to run. (ONNX only.)
  bool trainingStep = false;
  /// Graph inputs bound to compile-time constants, by name: the file holds
  /// the value as an ONNX TensorProto (.pb, as the ONNX node tests ship
  /// their inputs). A bound input is no input of the executable. For the
  /// inputs an op needs as constants (shapes, axes, pads). (ONNX only.)
  std::map<std::string, std::string> bindings;
};

enum class ModelFormat {
  /// An ONNX ModelProto (binary protobuf).
  Onnx,
  /// MLIR text in trainc's graph dialect (what `trainc --compile-to` and
  /// trainc-opt print).
  GraphIR,
  /// MLIR text in StableHLO (what JAX exports), told from graph IR by its
  /// ops' dialects.
  Stablehlo,
};

/// "ONNX model", "graph-dialect MLIR", "StableHLO".
llvm::StringRef formatName(ModelFormat format);

/// The format of `bytes` (the whole file: StableHLO and graph IR are told
/// apart by the dialects the text uses), or none.
std::optional<ModelFormat> detectFormat(llvm::StringRef bytes);

/// Reads the model at `path` with the importer of its format and returns a
/// module whose `@main` is in the graph dialect. Errors are emitted as MLIR
/// diagnostics (a file that is no known format is one, naming the formats).
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &context, llvm::StringRef path,
            const ImportOptions &options);

} // namespace trainc

#endif // TRAINC_FRONTENDS_IMPORT_H
