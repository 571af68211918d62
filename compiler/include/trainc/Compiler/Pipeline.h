//===- Pipeline.h - The phases of the trainc compiler ----------*- C++ -*-===//
//
// The table of contents of the compiler. `trainc --compile-to=PHASE` stops
// after any phase and prints the IR; each phase has lit tests.
//
//   import     ONNX / StableHLO -> graph dialect (frontends/)
//   recognize  fold constants; recognize composites (layer_norm, rms_norm,
//              gelu, softmax, attention)
//   precision  an autocast policy as explicit casts (--precision bf16/fp16;
//              before autodiff, so the backward pass follows it)
//   autodiff   (training only) the loss's gradients w.r.t. trainable
//              parameters, as extra results, then micro-batches for
//              gradient accumulation (the whole step once per micro-batch)
//   partition  (training only) the per-rank program of a device mesh
//              (--mesh data=N --data-parallel): data inputs split over the
//              data axis, the loss and gradients averaged across it
//              (graph.all_reduce; with --zero 2|3 graph.reduce_scatter into
//              parts, with --zero 3 parameters split too); Partition.h
//   optimizer  (training only) clipping, the schedule and the AdamW/SGD
//              update; parameters and optimizer state become the step's
//              updated results
//   recompute  (training only) activation checkpointing: forward ops whose
//              results the backward pass reads are cloned where it reads
//              them, per --recompute (Recompute.h)
//   schedule   (a program for a mesh) collectives as start/done pairs: each
//              starts where it was, ends as late as its value allows, and
//              ZeRO-3's gathers are prefetched one ahead (--overlap-
//              collectives; Passes.td)
//   lower      to instruction form: transposes read by dot_generals are
//              absorbed into them, then every op must be an executable
//              instruction (the graph op of an opcode; see Program.h)
//   plan-memory  liveness, in-place reuse and static offsets of every
//              buffer, as plan.* attributes (MemoryPlan.h)
//
// Then the serializer (ExecutableWriter.h) writes the file; it decides
// nothing. Partition runs before the optimizer, not after
// recompute as DESIGN.md lists it: the update must read averaged gradients
// (the norm, clipping and skipped steps agree on every rank), and sharding
// the update itself (ZeRO) is the optimizer's to do from the annotations. Today
// the program order is the block's order, as autodiff and the optimizer emit
// it: two reorderings were measured on tinygpt's training step and both raised
// the planned activations (756,484 bytes): sinking every op to its first user
// to 1,056,324, a greedy list schedule by bytes freed to 828,548. The schedule
// phase comes with the asynchronous collectives it exists for.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PIPELINE_H
#define TRAINC_COMPILER_PIPELINE_H

#include "trainc/Compiler/Passes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <variant>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace trainc {

enum class Phase {
  Import,
  Recognize,
  Precision,
  Autodiff,
  Partition,
  Optimizer,
  Recompute,
  Schedule,
  Lower,
  PlanMemory,
};

/// The lower phase's choices (trainc's --fuse-elementwise, --pad-classes,
/// --qkv-in-place, --fuse-gelu, --fuse-bias-grad, --fuse-loss-grad,
/// --attention-stats).
/// Each field has its flag in lowerFlags(), which trainc and the recompute
/// pass read.
struct LowerOptions {
  /// Group elementwise chains into fused loops (trainc-fuse-elementwise).
  bool fuseElementwise = true;
  /// Pad a loss's class dimension to a multiple of this
  /// (trainc-pad-classes; 0 or 1: off).
  int64_t padClasses = 64;
  /// Attention reads query, key and value from their fused projection
  /// (trainc-read-qkv-in-place).
  bool qkvInPlace = true;
  /// A GELU computed by the matmul whose output it reads, and its gradient
  /// by the matmul that makes its cotangent (trainc-fuse-gelu).
  bool fuseGelu = true;
  /// Bias gradients summed by their weight gradient's matmul
  /// (trainc-fuse-bias-grad).
  bool fuseBiasGrad = true;
  /// A cross-entropy loss and its logits gradient as one op
  /// (trainc-fuse-loss-grad).
  bool fuseLossGrad = true;
  /// Attention's gradients read their forwards' results and log-sum-exps
  /// (trainc-attention-stats).
  bool attentionStats = true;
  /// A residual stream's gradient added, and its 16-bit copy made, in
  /// norm_grad_params (trainc-fuse-norm-grad's residual-grad).
  bool fuseResidualGrad = true;
};

/// One of the lower phase's choices as a flag. The one declaration of each:
/// trainc makes its --NAME from it, and the recompute pass, which plans
/// with the lower phase, reads its `lower=NAME=VALUE,...` option with it.
struct LowerFlag {
  llvm::StringLiteral name;
  /// trainc --help's text.
  llvm::StringLiteral help;
  /// Where LowerOptions keeps it: a switch or a number.
  std::variant<bool LowerOptions::*, int64_t LowerOptions::*> field;
  /// A number's placeholder in --help (N).
  llvm::StringLiteral valueName = "";
};

/// The lower phase's flags, in LowerOptions' order.
llvm::ArrayRef<LowerFlag> lowerFlags();

/// An error naming the flag (without its dashes) when a value is out of
/// range; empty when `options` are valid.
std::string checkLowerOptions(const LowerOptions &options);

/// `flag`'s value in `options` as its text: true or false, or the number.
std::string formatLowerFlag(const LowerFlag &flag, const LowerOptions &options);

/// `options` as `NAME=VALUE` for every flag, separated by commas: the text
/// parseLowerOptions reads back to the same options.
std::string formatLowerOptions(const LowerOptions &options);

/// `NAME=VALUE` pairs separated by commas, each NAME a lower flag (true,
/// false, 1 or 0 for a switch; an integer for a number) at most once;
/// flags not named keep their defaults. An empty text: the defaults.
/// nullopt, with `error` set, on an empty pair, a name that is no flag or
/// is repeated, a bad value or an out-of-range one.
std::optional<LowerOptions> parseLowerOptions(llvm::StringRef text,
                                              std::string &error);

struct PipelineOptions {
  /// Build a training program (autodiff and later phases); else inference.
  bool train = false;
  /// The output differentiated when training.
  std::string loss = "loss";
  /// Micro-batches per step (gradient accumulation); 1: none.
  int64_t gradAccum = 1;
  /// The partition phase's options (no mesh: the phase changes nothing).
  PartitionOptions partition;
  /// The optimizer phase's options; absent: no optimizer step (the
  /// program returns the gradients).
  std::optional<OptimizerOptions> optimizer;
  /// The precision phase's options (f32: the phase changes nothing).
  PrecisionOptions precision;
  /// The recompute phase's options (mode none: the phase changes nothing).
  RecomputeOptions recompute;
  /// The schedule phase's options (a program without collectives: the
  /// phase changes nothing).
  ScheduleOptions schedule;
  /// The lower phase's options.
  LowerOptions lower;
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

/// Adds the phases from `lower` to `last` (lower or plan-memory): what any
/// graph-dialect module needs before the serializer writes it.
void buildExecutablePhases(mlir::OpPassManager &pm,
                           Phase last = Phase::PlanMemory,
                           const LowerOptions &lower = {});

} // namespace trainc

#endif // TRAINC_COMPILER_PIPELINE_H
