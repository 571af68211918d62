//===- Compile.cpp - The compiler as a library ----------------------------===//
//
// See Compile.h.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Compile.h"

#include "trainc/Compiler/Partition.h"
#include "trainc/Compiler/Recompute.h"

#include "mlir/Pass/PassManager.h"

namespace trainc {

std::string checkOptions(const CompileOptions &options) {
  std::optional<Phase> last = options.compileTo;
  std::string error;
  if (last &&
      (*last == Phase::Autodiff || *last == Phase::Partition ||
       *last == Phase::Optimizer || *last == Phase::Recompute ||
       *last == Phase::Schedule) &&
      !options.train)
    return "--compile-to=" + phaseName(*last).str() + " needs --train";
  if (options.gradAccum.microBatches != 1 && !options.train)
    return "--grad-accum needs --train";
  if (std::string lower = checkLowerOptions(options.lower); !lower.empty())
    return "--" + lower;
  const std::string &optimizer = options.optimizer.optimizer;
  if (optimizer != "adamw" && optimizer != "sgd" && optimizer != "none")
    return "--optimizer must be adamw, sgd or none (gradients only), not '" +
           optimizer + "'";
  if (options.gradAccum.microBatches < 1)
    return "--grad-accum must be at least 1";
  // The step is cloned once per micro-batch (GradAccum in Passes.td):
  // compile time and the executable grow with K.
  if (options.gradAccum.microBatches > kMaxMicroBatches)
    return "--grad-accum " + std::to_string(options.gradAccum.microBatches) +
           " is more than " + std::to_string(kMaxMicroBatches) +
           ": each micro-batch is a copy of the step in the executable; "
           "use larger micro-batches (the inputs' leading dimension)";
  std::optional<graph::Mesh> mesh = parseMesh(options.partition.mesh, error);
  if (!mesh)
    return error;
  if (mesh->numRanks() > 1 && !options.train)
    return "--mesh with more than one rank needs --train (a forward program "
           "runs on one rank)";
  if (options.partition.dataParallel && !options.train)
    return "--data-parallel needs --train";
  if (options.partition.tensorParallel && mesh->size("tensor") < 2)
    return "--tensor-parallel needs --mesh tensor=T with T >= 2";
  if (options.partition.bucketBytes < 0)
    return "--bucket-bytes must be at least 0";
  if (options.partition.zero < 0 || options.partition.zero > 3)
    return "--zero must be 1, 2 or 3 (0: none), not " +
           std::to_string(options.partition.zero);
  if (options.partition.syncBatchNorm &&
      (!options.partition.dataParallel || mesh->size("data") < 2))
    return "--sync-batch-norm needs --data-parallel on a mesh of at least 2 "
           "data ranks (--mesh data=N): it takes the batch norms' statistics "
           "over every rank's part of the batch";
  if (options.partition.zero && !options.partition.dataParallel)
    return "--zero " + std::to_string(options.partition.zero) +
           " needs --data-parallel (ZeRO splits what data parallelism "
           "replicates)";
  const std::string &precision = options.precision.precision;
  if (precision != "f32" && precision != "tf32" && precision != "bf16" &&
      precision != "fp16")
    return "--precision must be f32, tf32, bf16 or fp16, not '" + precision +
           "'";
  if (!options.precision.keepF32.empty() && precision == "f32")
    return "--keep-f32 needs --precision tf32, bf16 or fp16";
  std::optional<RecomputeMode> recompute =
      parseRecomputeMode(options.recompute.mode, error);
  if (!recompute)
    return "--recompute: " + error;
  if (recompute->kind != RecomputeMode::None && !options.train)
    return "--recompute needs --train";
  return "";
}

Phase lastPhase(const CompileOptions &options) {
  return options.compileTo.value_or(Phase::PlanMemory);
}

mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
compileModel(mlir::MLIRContext &context, llvm::StringRef path,
             const CompileOptions &options, mlir::TimingScope *timing) {
  mlir::TimingScope importTimer =
      timing ? timing->nest("import") : mlir::TimingScope();
  ImportOptions import = options.import;
  import.trainingStep = options.train;
  auto module = importModel(context, path, import);
  importTimer.stop();
  if (failed(module))
    return mlir::failure();
  PipelineOptions pipeline;
  pipeline.train = options.train;
  pipeline.loss = options.loss;
  pipeline.gradAccum = options.gradAccum.microBatches;
  if (options.train && options.optimizer.optimizer != "none")
    pipeline.optimizer = options.optimizer;
  pipeline.recompute = options.recompute;
  pipeline.schedule = options.schedule;
  pipeline.partition = options.partition;
  pipeline.precision = options.precision;
  pipeline.lower = options.lower;
  mlir::PassManager pm(&context);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  buildPipeline(pm, lastPhase(options), pipeline);
  mlir::TimingScope passTimer =
      timing ? timing->nest("passes") : mlir::TimingScope();
  if (timing)
    pm.enableTiming(passTimer);
  if (failed(pm.run(**module)))
    return mlir::failure();
  return module;
}

} // namespace trainc
