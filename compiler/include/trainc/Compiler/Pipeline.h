//===- Pipeline.h - The phases of the trainc compiler ----------*- C++ -*-===//
//
// The table of contents of the compiler. `trainc --compile-to=PHASE` stops
// after any phase and prints the IR; each phase has lit tests.
//
//   import     ONNX / StableHLO -> graph dialect (frontends/)
//   recognize  fold constants; recognize composites (layer_norm, rms_norm,
//              gelu, softmax, attention)
//
// Phases still to come, in order (see ../shared/DESIGN.md): autodiff,
// optimizer, precision, recompute, partition, schedule, plan memory,
// serialize.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PIPELINE_H
#define TRAINC_COMPILER_PIPELINE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace trainc {

enum class Phase {
  Import,
  Recognize,
};

/// Phases in pipeline order.
llvm::ArrayRef<Phase> allPhases();
llvm::StringRef phaseName(Phase phase);
std::optional<Phase> parsePhase(llvm::StringRef name);

/// Adds the passes of every phase after import, up to and including
/// `last`, to `pm` (which runs on the module).
void buildPipeline(mlir::OpPassManager &pm, Phase last);

} // namespace trainc

#endif // TRAINC_COMPILER_PIPELINE_H
