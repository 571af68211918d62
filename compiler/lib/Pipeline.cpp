//===- Pipeline.cpp - The phases of the trainc compiler -------------------===//

#include "trainc/Compiler/Pipeline.h"

#include "trainc/Compiler/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace trainc {

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

  // autodiff: the backward pass, folding and merging what the rules built,
  // then micro-batches (gradient accumulation): the whole step, forward and
  // backward, once per micro-batch, so one micro-batch's activations are
  // alive at a time.
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
  recompute.fuseElementwise = options.lower.fuseElementwise;
  recompute.padClasses = options.lower.padClasses;
  recompute.qkvInPlace = options.lower.qkvInPlace;
  recompute.fuseBiasGrad = options.lower.fuseBiasGrad;
  recompute.fuseLossGrad = options.lower.fuseLossGrad;
  recompute.attentionStats = options.lower.attentionStats;
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
  // biases, attention reads a fused projection's q, k and v in place,
  // norm_grad sums the norms' parameter gradients, the 16-bit
  // products only widened to f32 are made in f32, bias gradients are
  // summed by their weights' matmuls, a loss's classes are padded for its
  // matmuls, the loss and its logits gradient become one op, attention's
  // gradient reads the forward's result and log-sum-exps,
  // elementwise chains become loops, then every op must be an instruction.
  pm.addNestedPass<mlir::func::FuncOp>(createAbsorbTransposes());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseBias());
  if (lower.qkvInPlace)
    pm.addNestedPass<mlir::func::FuncOp>(createReadQkvInPlace());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseNormGrad());
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
