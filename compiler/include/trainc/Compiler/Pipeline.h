//===- Pipeline.h - The phases of the trainc compiler ----------*- C++ -*-===//
//
// The table of contents of the compiler. `trainc --compile-to=PHASE` stops
// after any phase and prints the IR; each phase has lit tests.
//
//   import     ONNX / StableHLO -> graph dialect (frontends/)
//   recognize  fold constants; recognize composites (layer_norm, rms_norm,
//              gelu, softmax, attention)
//   autodiff   (training only) micro-batches for gradient accumulation,
//              then the loss's gradients w.r.t. trainable parameters, as
//              extra results
//   optimizer  (training only) clipping, the schedule and the AdamW/SGD
//              update; parameters and optimizer state become the step's
//              updated results
//
// Phases still to come, in order (see ../shared/DESIGN.md): precision,
// recompute, partition, schedule. Memory planning and
// serialization run after the last IR phase (ExecutableWriter.h).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PIPELINE_H
#define TRAINC_COMPILER_PIPELINE_H

#include "trainc/Compiler/Passes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace trainc {

enum class Phase {
  Import,
  Recognize,
  Autodiff,
  Optimizer,
};

struct PipelineOptions {
  /// Build a training program (autodiff and later phases); else inference.
  bool train = false;
  /// The output differentiated when training.
  std::string loss = "loss";
  /// Micro-batches per step (gradient accumulation); 1: none.
  int64_t gradAccum = 1;
  /// The optimizer phase's options; absent: no optimizer step (the
  /// program returns the gradients).
  std::optional<OptimizerOptions> optimizer;
};

/// Phases in pipeline order.
llvm::ArrayRef<Phase> allPhases();
llvm::StringRef phaseName(Phase phase);
std::optional<Phase> parsePhase(llvm::StringRef name);

/// Adds the passes of every phase after import, up to and including
/// `last`, to `pm` (which runs on the module). Training phases run only
/// with `options.train`.
void buildPipeline(mlir::OpPassManager &pm, Phase last,
                   const PipelineOptions &options);

} // namespace trainc

#endif // TRAINC_COMPILER_PIPELINE_H
