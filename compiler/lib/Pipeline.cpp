//===- Pipeline.cpp - The phases of the trainc compiler -------------------===//

#include "trainc/Compiler/Pipeline.h"

#include "trainc/Compiler/Partition.h"
#include "trainc/Compiler/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace trainc {

llvm::ArrayRef<LowerFlag> lowerFlags() {
  static const LowerFlag flags[] = {
      {"fuse-elementwise",
       "In the lower phase, make each chain of elementwise ops of one shape "
       "(math, compare, select, convert, gelu and its gradient; integer "
       "arithmetic and bit operations, as jax.random's) one loop "
       "over memory: one kernel instead of one per op, and values used only "
       "inside the chain never stored; and cast the parameters to 16 bits "
       "in one instruction; results are the same bits (default true; "
       "--fuse-elementwise=false: one instruction per op)",
       &LowerOptions::fuseElementwise},
      {"pad-classes",
       "With --train, in the lower phase, pad the class dimension of a "
       "cross-entropy loss whose logits come from a matmul (a vocabulary) "
       "to a multiple of N where that adds at most 1/32 of the classes: "
       "aligned rows for the GPU's matmul kernels (GPT-2's 50,257 classes "
       "become 50,304); the padding is never read, the loss is the unpadded "
       "one and the gradients are up to the rounding of one longer sum "
       "(default 64; 0 or 1: off)",
       &LowerOptions::padClasses, "N"},
      {"qkv-in-place",
       "In the lower phase, let attention read query, key and value where "
       "one fused projection wrote them (GPT-2's c_attn) instead of slicing "
       "three copies out of it, and write their gradients into one tensor "
       "instead of concatenating three; results are the same bits (default "
       "true; --qkv-in-place=false: keep the slices and the concatenation)",
       &LowerOptions::qkvInPlace},
      {"fuse-gelu",
       "In the lower phase, compute the GELU of a linear layer's output in "
       "the layer's matmul instruction, which also writes the "
       "pre-activation the GELU's gradient reads, and that gradient in the "
       "matmul that makes its cotangent (on a GPU cuBLASLt's GELU epilogue "
       "for 16-bit tanh GELUs and DGELU for bf16 ones: a pass over the "
       "MLP's activation fewer each); on the CPU the results are the same bits "
       "(default true; --fuse-gelu=false: gelu and gelu_grad instructions)",
       &LowerOptions::fuseGelu},
      {"fuse-bias-grad",
       "With --train, in the lower phase, sum each linear layer's bias "
       "gradient in its weight gradient's matmul (one instruction, "
       "cuBLASLt's bias-gradient epilogue on a GPU) instead of a separate "
       "reduction over the output's gradient; on the CPU the results are "
       "the same bits (default true; --fuse-bias-grad=false: a reduce_sum "
       "per bias)",
       &LowerOptions::fuseBiasGrad},
      {"fuse-loss-grad",
       "With --train, in the lower phase, compute a cross-entropy loss and "
       "its logits gradient in one instruction that reads the logits three "
       "times instead of five (the vocabulary's logits are a language "
       "model's largest tensor); the gradients are the same bits, the loss "
       "may differ in its last bits (its sum of exps is added in the "
       "gradient's order) (default true; --fuse-loss-grad=false: two "
       "instructions)",
       &LowerOptions::fuseLossGrad},
      {"attention-stats",
       "With --train, in the lower phase, let each attention gradient read "
       "its forward's result and the log-sum-exps of its score rows (kept "
       "by the forward: [B, H, S] f32 per call) instead of remaking the "
       "softmax (a GPU's cuDNN backward would run the forward again); "
       "results may differ in their last bits (default true; "
       "--attention-stats=false: the gradient remakes them)",
       &LowerOptions::attentionStats},
      {"fuse-residual-grad",
       "With --train, in the lower phase, add the gradient flowing down a "
       "residual stream to a norm's input gradient in the norm's backward "
       "instruction, which also writes the 16-bit copy of the sum that "
       "mixed precision's matmuls read (a pre-norm transformer block's two "
       "adds and casts of that f32 gradient, each a pass over it); results "
       "are the same bits (default true; --fuse-residual-grad=false: an "
       "add and a cast per norm)",
       &LowerOptions::fuseResidualGrad},
  };
  return flags;
}

std::string checkLowerOptions(const LowerOptions &options) {
  if (options.padClasses < 0 || options.padClasses > 65536)
    return "pad-classes must be in [0, 65536] (0: off), not " +
           std::to_string(options.padClasses);
  return "";
}

std::string formatLowerFlag(const LowerFlag &flag,
                            const LowerOptions &options) {
  if (auto *field = std::get_if<bool LowerOptions::*>(&flag.field))
    return options.**field ? "true" : "false";
  return std::to_string(options.*std::get<int64_t LowerOptions::*>(flag.field));
}

std::string formatLowerOptions(const LowerOptions &options) {
  std::string text;
  for (const LowerFlag &flag : lowerFlags()) {
    if (!text.empty())
      text += ',';
    text += flag.name.str() + "=" + formatLowerFlag(flag, options);
  }
  return text;
}

std::optional<LowerOptions> parseLowerOptions(llvm::StringRef text,
                                              std::string &error) {
  LowerOptions options;
  llvm::SmallVector<llvm::StringRef> pairs;
  if (!text.empty())
    text.split(pairs, ',');
  llvm::SmallVector<llvm::StringRef> seen;
  for (llvm::StringRef pair : pairs) {
    if (pair.empty()) {
      error =
          "lower options '" + text.str() + "' have an empty NAME=VALUE pair";
      return std::nullopt;
    }
    auto [name, value] = pair.split('=');
    if (llvm::is_contained(seen, name)) {
      error = "lower option '" + name.str() + "' is given twice";
      return std::nullopt;
    }
    seen.push_back(name);
    const LowerFlag *found = llvm::find_if(
        lowerFlags(), [&](const LowerFlag &flag) { return flag.name == name; });
    if (found == lowerFlags().end()) {
      error = "lower option '" + name.str() + "' is none of";
      llvm::StringRef separator = " ";
      for (const LowerFlag &flag : lowerFlags()) {
        error += separator.str() + flag.name.str();
        separator = ", ";
      }
      return std::nullopt;
    }
    bool parsed = false;
    auto *flag = std::get_if<bool LowerOptions::*>(&found->field);
    if (flag) {
      parsed =
          value == "true" || value == "false" || value == "1" || value == "0";
      options.**flag = value == "true" || value == "1";
    } else {
      parsed = !value.getAsInteger(
          10, options.*std::get<int64_t LowerOptions::*>(found->field));
    }
    if (!parsed) {
      error = "lower option " + name.str() + "='" + value.str() + "' is not " +
              (flag ? "true, false, 1 or 0" : "an integer");
      return std::nullopt;
    }
  }
  error = checkLowerOptions(options);
  if (!error.empty())
    return std::nullopt;
  return options;
}

llvm::ArrayRef<Phase> allPhases() {
  static const Phase phases[] = {
      Phase::Import,    Phase::Recognize, Phase::Precision, Phase::Autodiff,
      Phase::Partition, Phase::Optimizer, Phase::Recompute, Phase::Schedule,
      Phase::Lower,     Phase::PlanMemory};
  return phases;
}

llvm::StringRef phaseName(Phase phase) {
  switch (phase) {
  case Phase::Import:
    return "import";
  case Phase::Recognize:
    return "recognize";
  case Phase::Precision:
    return "precision";
  case Phase::Autodiff:
    return "autodiff";
  case Phase::Partition:
    return "partition";
  case Phase::Optimizer:
    return "optimizer";
  case Phase::Recompute:
    return "recompute";
  case Phase::Schedule:
    return "schedule";
  case Phase::Lower:
    return "lower";
  case Phase::PlanMemory:
    return "plan-memory";
  }
  return "unknown";
}

std::optional<Phase> parsePhase(llvm::StringRef name) {
  for (Phase p : allPhases())
    if (phaseName(p) == name)
      return p;
  return std::nullopt;
}

void buildPipeline(mlir::OpPassManager &pm, Phase last,
                   const PipelineOptions &options) {
  if (last == Phase::Import)
    return;

  // recognize: fold the exporter's shape arithmetic and constants and merge
  // broadcasts, so patterns see one canonical form, with duplicates merged
  // (JAX does not merge them: a norm's x - mean(x) comes twice) ...
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  // ... turn decomposed norms, activations and attention into composites ...
  pm.addNestedPass<mlir::func::FuncOp>(createRecognizeComposites());
  // ... and drop what they made dead, merging duplicates.
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  // ... with tensor parallelism, one projection per slice of a fused QKV,
  // so that each splits by heads ...
  if (options.train && options.partition.tensorParallel)
    pm.addNestedPass<mlir::func::FuncOp>(createSplitFusedProjections());
  // ... and mark the training signature: the loss and the data inputs.
  pm.addPass(createInferSignature(
      InferSignatureOptions{options.loss, /*requireLoss=*/options.train}));
  if (last == Phase::Recognize)
    return;

  // precision: the casts of the autocast policy, then the canonicalizer
  // moves weight casts next to the weights and folds casts that cancel.
  PrecisionOptions precision = options.precision;
  precision.lossScaling = options.train;
  pm.addPass(createPrecision(precision));
  if (precision.precision != "f32") {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  if (last == Phase::Precision)
    return;
  if (!options.train)
    return buildExecutablePhases(pm, last, options.lower);

  // autodiff: with --sync-batch-norm, the batch statistics summed over the
  // data axis first (the backward pass then sums their gradients too); the
  // backward pass, folding and merging what the rules built,
  // then micro-batches (gradient accumulation): the whole step, forward and
  // backward, once per micro-batch, so one micro-batch's activations are
  // alive at a time.
  // (A mesh that does not parse is the partition pass's error.)
  std::string meshError;
  std::optional<graph::Mesh> mesh =
      parseMesh(options.partition.mesh, meshError);
  if (options.partition.syncBatchNorm && mesh)
    pm.addPass(createSyncBatchStatistics(
        SyncBatchStatisticsOptions{mesh->size("data")}));
  pm.addPass(createAutodiff());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (options.gradAccum != 1) {
    pm.addPass(createGradAccum(GradAccumOptions{options.gradAccum}));
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  if (last == Phase::Autodiff)
    return;

  // partition: the per-rank program of the device mesh. Before the
  // optimizer, so the update reads gradients already averaged over the
  // data-parallel ranks: the norm, clipping and skipped steps are the same
  // on every rank, as the replicated parameters need.
  PartitionOptions partition = options.partition;
  partition.microBatches = options.gradAccum;
  pm.addPass(createPartition(partition));
  if (last == Phase::Partition)
    return;

  // optimizer: the update of parameters and optimizer state (none: the
  // step returns the gradients).
  if (options.optimizer) {
    pm.addPass(createOptimizer(*options.optimizer));
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  if (last == Phase::Optimizer)
    return;

  // recompute: activations the backward pass makes again. Nothing may
  // merge the clones with the forward ops after it.
  // It plans with the lower phase, which fuses as the pipeline will.
  RecomputeOptions recompute = options.recompute;
  recompute.lower = formatLowerOptions(options.lower);
  pm.addPass(createRecompute(recompute));
  if (last == Phase::Recompute)
    return;
  // schedule: collectives start early and end late.
  pm.addPass(createSchedule(options.schedule));
  if (last == Phase::Schedule)
    return;
  buildExecutablePhases(pm, last, options.lower);
}

void buildExecutablePhases(mlir::OpPassManager &pm, Phase last,
                           const LowerOptions &lower) {
  if (last < Phase::Lower)
    return;
  // lower: dot_generals read transposed operands in place, add their
  // biases (and apply a GELU that follows), attention reads a fused
  // projection's q, k and v in place, norm_grad sums the norms' parameter
  // gradients (and the residual stream's gradient, and writes its 16-bit copy),
  // the 16-bit products only widened to f32 are made in f32, bias gradients are
  // summed by their weights' matmuls, a loss's classes are padded for its
  // matmuls, the loss and its logits gradient become one op, attention's
  // gradient reads the forward's result and log-sum-exps,
  // elementwise chains become loops, then every op must be an instruction.
  pm.addNestedPass<mlir::func::FuncOp>(createAbsorbTransposes());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseBias());
  if (lower.fuseGelu)
    pm.addNestedPass<mlir::func::FuncOp>(createFuseGelu());
  if (lower.qkvInPlace)
    pm.addNestedPass<mlir::func::FuncOp>(createReadQkvInPlace());
  pm.addNestedPass<mlir::func::FuncOp>(
      createFuseNormGrad(FuseNormGradOptions{lower.fuseResidualGrad}));
  pm.addNestedPass<mlir::func::FuncOp>(createWidenProducts());
  if (lower.fuseBiasGrad)
    pm.addNestedPass<mlir::func::FuncOp>(createFuseBiasGrad());
  pm.addNestedPass<mlir::func::FuncOp>(
      createPadClasses(PadClassesOptions{lower.padClasses}));
  if (lower.fuseLossGrad)
    pm.addNestedPass<mlir::func::FuncOp>(createFuseLossGrad());
  // After every pass that may change a value's bits (widen-products) and
  // before the loops, which keep each op's bits: a recomputed mask and
  // the forward's are compared as the ops that make them.
  if (lower.attentionStats)
    pm.addNestedPass<mlir::func::FuncOp>(createAttentionStats());
  if (lower.fuseElementwise)
    pm.addNestedPass<mlir::func::FuncOp>(createFuseElementwise());
  pm.addPass(createLower());
  if (last == Phase::Lower)
    return;
  // plan-memory: liveness and offsets, recorded on the IR.
  pm.addPass(createPlanMemory());
}

} // namespace trainc
