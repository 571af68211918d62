//===- Compile.h - The compiler as a library --------------------*- C++ -*-===//
//
// What `trainc` does, callable without its command line: import a model
// (the frontend registry picks the importer by content), run the pipeline
// up to a phase, write the executable. CompileOptions is the one definition
// of every option: the CLI binds its flags to these fields under the same
// names, and the pass options are these structs (generated from
// Passes.td, with their defaults), not copies of them.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_COMPILE_H
#define TRAINC_COMPILER_COMPILE_H

#include "trainc/Compiler/ExecutableWriter.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Compiler/Pipeline.h"
#include "trainc/Frontends/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/Timing.h"

#include <optional>
#include <string>

namespace trainc {

/// The most micro-batches --grad-accum takes: the step is cloned once per
/// micro-batch (GradAccum in Passes.td).
constexpr int64_t kMaxMicroBatches = 1024;

struct CompileOptions {
  /// The frontend's options (--input-shape, --freeze, --dropout-seed).
  ImportOptions import;
  /// Build a training step (autodiff, optimizer); else a forward program.
  bool train = false;
  /// The output that is the loss (trainc-infer-signature's `loss`).
  std::string loss = InferSignatureOptions().loss;
  /// Gradient accumulation (the grad-accum pass's options).
  GradAccumOptions gradAccum;
  /// The device mesh and its strategies (the partition pass's options:
  /// --mesh, --data-parallel, --sync-batch-norm, ...).
  PartitionOptions partition;
  /// The optimizer phase (the optimizer pass's options); optimizer "none":
  /// no update, the step returns the gradients.
  OptimizerOptions optimizer;
  /// Mixed precision (the precision pass's options: --precision, --keep-f32).
  PrecisionOptions precision;
  /// Activation checkpointing (the recompute pass's options: --recompute).
  RecomputeOptions recompute;
  /// Overlapped collectives (the schedule pass's options:
  /// --overlap-collectives).
  ScheduleOptions schedule;
  /// The lower phase's options (--fuse-elementwise, --pad-classes,
  /// --qkv-in-place, --fuse-gelu, --fuse-bias-grad, --fuse-loss-grad,
  /// --attention-stats).
  LowerOptions lower;
  /// Stop after this phase (none: through plan-memory).
  std::optional<Phase> compileTo;
};

/// An error in the options themselves ("--grad-accum needs --train"), or
/// empty. The messages name the options by their flags.
std::string checkOptions(const CompileOptions &options);

/// Imports `path` and runs the pipeline through `options.compileTo`.
/// Errors are emitted as MLIR diagnostics. With `timing`, the import and
/// every pass are timed as scopes nested in it (trainc --time-phases).
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
compileModel(mlir::MLIRContext &context, llvm::StringRef path,
             const CompileOptions &options,
             mlir::TimingScope *timing = nullptr);

/// The last phase compileModel runs for `options`.
Phase lastPhase(const CompileOptions &options);

} // namespace trainc

#endif // TRAINC_COMPILER_COMPILE_H
