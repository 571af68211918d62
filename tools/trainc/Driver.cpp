//===- Driver.cpp - The trainc compiler command line ----------------------===//
//
// trainc MODEL [options]: import a model (ONNX, or graph-dialect MLIR), run
// the compiler pipeline up to --compile-to, and write the result. Errors go
// to stderr as "trainc: error: ..." with a non-zero exit code.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "trainc/Compiler/Compile.h"
#include "trainc/Compiler/Recompute.h"
#include "trainc/Compiler/Registration.h"
#include "trainc/Frontends/Onnx/OnnxImporter.h"
#include "trainc/Frontends/Stablehlo/StablehloImporter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cstdio>
#include <memory>
#include <vector>

namespace cl = llvm::cl;

namespace trainc {
namespace {

constexpr const char *kOverview =
    R"(trainc: compile a model's forward graph into a training program

  trainc model.onnx -o model.tcx                  an inference executable
  trainc model.onnx --train -o step.tcx           a training step (AdamW)
  trainc model.onnx --compile-to=recognize        print the IR after a phase
  trainc model.onnx --input-shape tokens=8x128    give symbolic inputs sizes
  trainc --list-onnx-ops                          what the ONNX importer reads
  trainc loss.mlir --params init.safetensors --train -o step.tcx
                                                  train a JAX function (StableHLO)
  trainc --list-stablehlo-ops                     what the StableHLO importer reads

Phases, in order (--compile-to): import, recognize, precision, then with
--train autodiff, optimizer and recompute, then lower and plan-memory. An output ending in .tcx
runs every phase and is serialized as an executable for trainc-run; other
outputs get the IR after --compile-to (default: optimizer).
)";

int fail(const llvm::Twine &message) {
  llvm::errs() << "trainc: error: " << message << "\n";
  return 1;
}

/// Parses "NAME=D0xD1x..." (an empty list means a scalar).
bool parseInputShape(llvm::StringRef spec, std::string &name,
                     std::vector<int64_t> &dims) {
  auto [lhs, rhs] = spec.rsplit('=');
  if (lhs.empty() || lhs.size() == spec.size())
    return false;
  name = lhs.str();
  dims.clear();
  if (rhs.empty())
    return true;
  llvm::SmallVector<llvm::StringRef> parts;
  rhs.split(parts, 'x');
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d) || d < 0)
      return false;
    dims.push_back(d);
  }
  return true;
}

int listStablehloOps() {
  llvm::outs() << llvm::left_justify("StableHLO op", 34)
               << llvm::left_justify("types", 10) << "notes\n";
  for (const stablehlo_import::SupportedOp &op :
       stablehlo_import::supportedOps())
    llvm::outs() << llvm::left_justify(op.name, 34)
                 << llvm::left_justify(op.types, 10) << op.note << "\n";
  llvm::outs() << "\nelement types: "
               << stablehlo_import::supportedElementTypes() << "\n";
  return 0;
}

int listOnnxOps() {
  llvm::outs() << llvm::left_justify("ONNX op (domain ai.onnx)", 28)
               << llvm::left_justify("opsets", 9) << "notes\n";
  for (const onnx_import::SupportedOp &op : onnx_import::supportedOps())
    llvm::outs() << llvm::left_justify(op.opType, 28)
                 << llvm::left_justify(std::to_string(op.minOpset) + "-" +
                                           std::to_string(op.maxOpset),
                                       9)
                 << op.note << "\n";
  return 0;
}

/// Prints diagnostics as "trainc: error: message", with the location when
/// it is a line in a file (MLIR input) and notes indented below.
class CliDiagnostics {
public:
  explicit CliDiagnostics(mlir::MLIRContext &context)
      : handler(&context, [](mlir::Diagnostic &diag) {
          print(diag, "");
          return mlir::success();
        }) {}

private:
  static void print(mlir::Diagnostic &diag, llvm::StringRef indent) {
    const char *kind = "error";
    switch (diag.getSeverity()) {
    case mlir::DiagnosticSeverity::Warning:
      kind = "warning";
      break;
    case mlir::DiagnosticSeverity::Note:
      kind = "note";
      break;
    case mlir::DiagnosticSeverity::Remark:
      kind = "remark";
      break;
    case mlir::DiagnosticSeverity::Error:
      break;
    }
    llvm::errs() << indent << "trainc: " << kind << ": ";
    mlir::Location location = diag.getLocation();
    if (auto loc = llvm::dyn_cast<mlir::FileLineColLoc>(location);
        loc && loc.getLine() > 0)
      llvm::errs() << loc.getFilename().getValue() << ":" << loc.getLine()
                   << ":" << loc.getColumn() << ": ";
    // Ops imported from ONNX carry the node's name and the model file.
    if (auto named = llvm::dyn_cast<mlir::NameLoc>(location)) {
      if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(named.getChildLoc()))
        llvm::errs() << file.getFilename().getValue() << ": ";
      llvm::errs() << "node '" << named.getName().getValue() << "': ";
    }
    llvm::errs() << diag.str() << "\n";
    for (mlir::Diagnostic &note : diag.getNotes())
      print(note, "  ");
  }

  mlir::ScopedDiagnosticHandler handler;
};

} // namespace

int runCompilerCli(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Past a file size limit (ulimit -f) a write fails with EFBIG, reported
  // naming the file, rather than SIGXFSZ killing the compiler silently.
  std::signal(SIGXFSZ, SIG_IGN);
  // Every compiler option is a field of CompileOptions, bound here under
  // its one name; defaults are the fields' (the pass options' from
  // Passes.td). Only what is the command line's own (files, printing) is
  // declared here alone.
  CompileOptions options;
  OptimizerOptions &opt = options.optimizer;
  cl::OptionCategory category("trainc options");
  cl::opt<std::string> inputFile(
      cl::Positional,
      cl::desc("<model.onnx | model.mlir (StableHLO or graph IR)>"),
      cl::cat(category));
  cl::opt<std::string> outputFile(
      "o",
      cl::desc("Write the output here: a name ending in .tcx gets the "
               "executable, anything else the IR (default: standard output)"),
      cl::value_desc("file"), cl::init("-"), cl::cat(category));
  cl::opt<std::string> compileTo(
      "compile-to",
      cl::desc("Stop after this phase and print the IR: import (the model as "
               "imported), recognize (constants folded, composites "
               "recognized), precision (--precision casts inserted), "
               "autodiff (with --train: gradients added), "
               "optimizer (with --train: the update step), recompute (with "
               "--train: recomputed activations cloned), lower (in "
               "instruction form) or plan-memory (with the memory plan as "
               "plan.* attributes); default: optimizer"),
      cl::value_desc("phase"), cl::init("optimizer"), cl::cat(category));
  cl::list<std::string> inputShapes(
      "input-shape",
      cl::desc("Static shape of a graph input, e.g. tokens=8x128 (repeat for "
               "each input with symbolic dimensions; an empty list, tokens=, "
               "is a scalar)"),
      cl::value_desc("name=d0xd1..."), cl::cat(category));
  cl::list<std::string> binds(
      "bind",
      cl::desc("Bind graph input NAME to a compile-time constant read from "
               "FILE, an ONNX TensorProto (.pb, e.g. "
               "onnx.numpy_helper.from_array(a).SerializeToString()): for "
               "inputs an op needs as constants (shapes, axes, pads); the "
               "input is then no input of the executable; repeat per input"),
      cl::value_desc("name=file"), cl::cat(category));
  cl::opt<std::string, true> params(
      "params",
      cl::desc("StableHLO only: a safetensors file with the initial values of "
               "the function's parameters; each tensor is named like an "
               "argument (its location name, e.g. params['w'] as "
               "tools/jax_export.py writes it), which becomes a trainable "
               "parameter; the other arguments are data inputs"),
      cl::value_desc("file.safetensors"),
      cl::location(options.import.parameters), cl::cat(category));
  cl::list<std::string> freeze(
      "freeze",
      cl::desc("Parameters not to train (ONNX initializer names or StableHLO "
               "parameter names), or glob patterns of them (e.g. "
               "'*.inv_freq' for rotary buffers an exporter wrote as "
               "initializers); repeat the flag or separate names with "
               "commas"),
      cl::value_desc("name"), cl::CommaSeparated, cl::cat(category));
  cl::opt<uint64_t, true> dropoutSeed(
      "dropout-seed",
      cl::desc("Base seed of training-mode Dropout nodes without a seed "
               "attribute (default 0); each node derives its own"),
      cl::location(options.import.dropoutSeed), cl::cat(category));
  cl::opt<bool, true> evalMode(
      "eval-mode",
      cl::desc("Read training-mode Dropout (as the identity) and "
               "BatchNormalization (with its running statistics, not the "
               "batch's) in inference mode, as PyTorch's model.eval() runs "
               "them: for the --eval-executable of a model exported in "
               "training mode (ONNX only)"),
      cl::location(options.import.evalMode), cl::cat(category));
  cl::opt<bool, true> trainModelessDropout(
      "train-modeless-dropout",
      cl::desc("Read Dropout nodes without a training_mode input as "
               "training-mode dropouts, not as the identity ONNX defines "
               "them as. PyTorch's exporters write "
               "scaled_dot_product_attention's dropout_p so even in training "
               "mode (Hugging Face's default \"sdpa\" attention); such "
               "attention dropout is then fused into graph.attention as the "
               "eager attention's is. Needs --train without --eval-mode "
               "(ONNX only)"),
      cl::location(options.import.trainModelessDropout), cl::cat(category));
  cl::opt<bool, true> unbiasedRunningVar(
      "unbiased-running-var",
      cl::desc("BatchNormalization's running variance blends the batch's "
               "unbiased variance (n / (n - 1) times the population "
               "variance the ONNX specification says), as PyTorch's "
               "BatchNorm does, so that a module trained through trainc "
               "evaluates as PyTorch would (ONNX only)"),
      cl::location(options.import.unbiasedRunningVar), cl::cat(category));
  cl::list<std::string> paddingIndices(
      "embedding-padding-index",
      cl::desc("The embedding table NAME (an initializer) has a padding row "
               "ROW whose slices get no gradient, as PyTorch's "
               "Embedding(padding_idx=ROW) defines it, which the ONNX "
               "exporters drop; NAME must be read by a Gather on axis 0 "
               "(the PyTorch bridge passes it for each such module; repeat "
               "per table; ONNX only)"),
      cl::value_desc("NAME=ROW"), cl::cat(category));
  cl::opt<bool> listOps(
      "list-onnx-ops",
      cl::desc("List the ONNX ops the importer supports, with their opsets, "
               "and exit"),
      cl::cat(category));
  cl::opt<bool> listStablehlo(
      "list-stablehlo-ops",
      cl::desc("List the StableHLO ops the importer lowers, with their "
               "limits, and exit"),
      cl::cat(category));
  cl::opt<bool, true> train(
      "train",
      cl::desc("Compile a training step: the gradients of the loss with "
               "respect to every trainable parameter (autodiff), then the "
               "optimizer's update (--optimizer none: gradients only)"),
      cl::location(options.train), cl::cat(category));
  cl::opt<int64_t, true> gradAccum(
      "grad-accum",
      cl::desc("With --train: K micro-batches per step; every data input's "
               "leading dimension becomes K times the model's, and the loss "
               "is their mean (default 1; at most 1024: each micro-batch is "
               "a copy of the step in the executable)"),
      cl::value_desc("K"), cl::location(options.gradAccum.microBatches),
      cl::cat(category));
  cl::opt<std::string, true> mesh(
      "mesh",
      cl::desc("With --train: the device mesh the step runs on, e.g. "
               "data=2 (axes data and tensor; an absent axis has size 1). "
               "Launch the executable with mpirun -np <ranks>"),
      cl::value_desc("axis=N,..."), cl::location(options.partition.mesh),
      cl::cat(category));
  cl::opt<bool, true> dataParallel(
      "data-parallel",
      cl::desc("With --mesh data=N: each rank trains on its own part of "
               "every batch (the compiled batch is one rank's; the global "
               "batch is N times it) and the gradients are averaged across "
               "ranks before the update"),
      cl::location(options.partition.dataParallel), cl::cat(category));
  cl::opt<bool, true> syncBatchNorm(
      "sync-batch-norm",
      cl::desc("With --data-parallel: batch norms normalize by the "
               "statistics of the whole global batch, summed over the data "
               "ranks in the forward and the backward pass (PyTorch's "
               "SyncBatchNorm), instead of each rank's part"),
      cl::location(options.partition.syncBatchNorm), cl::cat(category));
  cl::opt<bool, true> tensorParallel(
      "tensor-parallel",
      cl::desc("With --mesh tensor=T: split each attention by heads and each "
               "MLP by features over T ranks (Megatron-LM: column-parallel "
               "projections in, row-parallel out, one all-reduce each in the "
               "forward and the backward pass); the ranks of a tensor group "
               "read the same batch. The split projections' weights, "
               "gradients and optimizer state are kept as parts"),
      cl::location(options.partition.tensorParallel), cl::cat(category));
  cl::opt<int64_t, true> bucketBytes(
      "bucket-bytes",
      cl::desc("With --data-parallel: sum the gradients in one all-reduce "
               "per bucket of at most this many bytes, filled in the order "
               "the backward pass makes them (default 26214400 = 25 MiB, as "
               "PyTorch DDP; 0: one all-reduce per gradient)"),
      cl::value_desc("bytes"), cl::location(options.partition.bucketBytes),
      cl::cat(category));
  cl::opt<bool, true> overlapCollectives(
      "overlap-collectives",
      cl::desc("With --mesh: start each collective where its operand is "
               "ready and wait for it only where its result is needed, so "
               "communication overlaps compute; ZeRO-3 prefetches each "
               "parameter gather one ahead (default true; "
               "--overlap-collectives=false: synchronous collectives)"),
      cl::location(options.schedule.overlap), cl::cat(category));
  cl::opt<int64_t, true> zero(
      "zero",
      cl::desc("With --data-parallel: ZeRO stage. 1: each rank keeps and "
               "updates 1/N of the optimizer state; 2: also reduces the "
               "gradients straight into its 1/N (reduce-scatter); 3: also "
               "keeps 1/N of each parameter, gathered just before each use "
               "(0: none, the default). The memory plan prints each stage's "
               "bytes per parameter beside the plan"),
      cl::value_desc("stage"), cl::location(options.partition.zero),
      cl::cat(category));
  cl::opt<std::string, true> precision(
      "precision",
      cl::desc("f32 (default), tf32, bf16 or fp16. tf32: every tensor f32, "
               "each matmul (and its gradients') with operands rounded to "
               "TF32 (10 mantissa bits) and f32 sums, as a GPU's tensor "
               "cores (PyTorch's allow_tf32); the CPU emulates the rounding "
               "and gains no speed. bf16/fp16: matmuls and attention (and "
               "their gradients) with 16-bit inputs and f32 accumulation, "
               "a matmul whose result only feeds f32 math (a weight "
               "gradient for the optimizer) keeping its f32 sums; "
               "softmax, norms, reductions and the loss in f32; other ops in "
               "their inputs' precision; parameters, gradients and optimizer "
               "state f32. fp16 training adds dynamic loss scaling (initial "
               "2^16, x2 after 2000 clean steps, x0.5 and the step skipped "
               "on overflow)"),
      cl::value_desc("type"), cl::location(options.precision.precision),
      cl::cat(category));
  cl::list<std::string> keepF32(
      "keep-f32",
      cl::desc("With --precision tf32/bf16/fp16: ops kept in f32, by op name "
               "(dot_general) or by a glob of node names ('/lm_head/*', "
               "'/h.0/*'); repeat or separate with commas"),
      cl::value_desc("op|glob"), cl::CommaSeparated, cl::cat(category));
  cl::opt<std::string, true> recompute(
      "recompute",
      cl::desc("With --train, activation checkpointing: none (default: keep "
               "every activation the backward pass reads); selective "
               "(recompute attention, softmax, activation functions, "
               "dropout and convolutions' patches from their saved "
               "inputs); full (keep only each block's input, recompute the "
               "block in the backward pass; blocks are found around "
               "attention and convolutions); budget=BYTES (suffix K, M, G: "
               "the cheapest of none, selective and full per block whose "
               "planned activations fit)"),
      cl::value_desc("mode"), cl::location(options.recompute.mode),
      cl::cat(category));
  // The lower phase's flags, declared once in its table (Pipeline.h).
  std::vector<std::unique_ptr<cl::Option>> lowerFlagOptions;
  for (const LowerFlag &flag : lowerFlags()) {
    if (auto *field = std::get_if<bool LowerOptions::*>(&flag.field))
      lowerFlagOptions.push_back(std::make_unique<cl::opt<bool, true>>(
          llvm::StringRef(flag.name), cl::desc(flag.help),
          cl::location(options.lower.**field), cl::cat(category)));
    else
      lowerFlagOptions.push_back(std::make_unique<cl::opt<int64_t, true>>(
          llvm::StringRef(flag.name), cl::desc(flag.help),
          cl::value_desc(flag.valueName),
          cl::location(options.lower.*
                       std::get<int64_t LowerOptions::*>(flag.field)),
          cl::cat(category)));
  }
  cl::opt<std::string, true> optimizerName(
      "optimizer", cl::desc("With --train: adamw (default), sgd or none"),
      cl::value_desc("name"), cl::location(opt.optimizer), cl::cat(category));
  cl::opt<double, true> lr("lr", cl::desc("Peak learning rate (default 1e-3)"),
                           cl::location(opt.lr), cl::cat(category));
  cl::opt<double, true> beta1("beta1", cl::desc("AdamW beta1 (default 0.9)"),
                              cl::location(opt.beta1), cl::cat(category));
  cl::opt<double, true> beta2("beta2", cl::desc("AdamW beta2 (default 0.999)"),
                              cl::location(opt.beta2), cl::cat(category));
  cl::opt<double, true> eps("eps", cl::desc("AdamW epsilon (default 1e-8)"),
                            cl::location(opt.eps), cl::cat(category));
  cl::opt<double, true> weightDecay(
      "weight-decay",
      cl::desc("Weight decay, decoupled for AdamW (default 0.01); applied to "
               "matrices that are not embeddings unless --decay-all"),
      cl::location(opt.weightDecay), cl::cat(category));
  cl::opt<bool, true> decayAll(
      "decay-all",
      cl::desc("Decay every parameter, biases, norms and embeddings included "
               "(PyTorch's default)"),
      cl::location(opt.decayAll), cl::cat(category));
  cl::opt<double, true> momentum("momentum",
                                 cl::desc("SGD momentum (default 0)"),
                                 cl::location(opt.momentum), cl::cat(category));
  cl::opt<bool, true> nesterov("nesterov",
                               cl::desc("SGD with Nesterov momentum"),
                               cl::location(opt.nesterov), cl::cat(category));
  cl::opt<double, true> clipGradNorm(
      "clip-grad-norm",
      cl::desc("Clip the global gradient norm to this value (default 0: off)"),
      cl::location(opt.clipGradNorm), cl::cat(category));
  cl::opt<std::string, true> schedule(
      "lr-schedule",
      cl::desc("After a linear warmup over --warmup-steps: constant "
               "(default); cosine: cosine decay to --min-lr at "
               "--total-steps; wsd: constant, then linear decay to --min-lr "
               "over the last --decay-steps of --total-steps"),
      cl::value_desc("name"), cl::location(opt.schedule), cl::cat(category));
  cl::opt<int64_t, true> warmupSteps(
      "warmup-steps", cl::desc("Linear warmup steps (every schedule)"),
      cl::location(opt.warmupSteps), cl::cat(category));
  cl::opt<int64_t, true> totalSteps(
      "total-steps",
      cl::desc("Length of the cosine and wsd schedules in steps"),
      cl::location(opt.totalSteps), cl::cat(category));
  cl::opt<double, true> minLr("min-lr",
                              cl::desc("Floor of the cosine and wsd schedules"),
                              cl::location(opt.minLr), cl::cat(category));
  cl::opt<int64_t, true> decaySteps(
      "decay-steps", cl::desc("Length of the wsd schedule's final decay"),
      cl::location(opt.decaySteps), cl::cat(category));
  cl::opt<std::string, true> loss(
      "loss",
      cl::desc("The model output that is the loss: trained with --train, "
               "reported as the held-out loss otherwise (default: loss)"),
      cl::value_desc("output"), cl::location(options.loss), cl::cat(category));
  cl::opt<bool> printMemoryPlan(
      "print-memory-plan",
      cl::desc("With a .tcx output, print the static memory plan's peak by "
               "category (parameters, persistent state, activations, "
               "temporaries, workspace) to standard output; with --train "
               "also each --recompute option's planned activations and "
               "added FLOPs"),
      cl::cat(category));
  cl::opt<bool> timePhases(
      "time-phases",
      cl::desc("Print to standard error how long each part of the "
               "compilation took, as a tree: the import, every pass of every "
               "phase (MLIR's pass timing), and writing the executable"),
      cl::cat(category));
  cl::opt<bool> printWeights(
      "print-weights",
      cl::desc("Print parameters' initial values in full; by default values "
               "over 64 bytes are elided, and such IR cannot be parsed back"),
      cl::cat(category));

  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, kOverview);

  if (listOps)
    return listOnnxOps();
  if (listStablehlo)
    return listStablehloOps();
  if (inputFile.empty())
    return fail("no input model given (see trainc --help)");
  std::optional<Phase> phase = parsePhase(compileTo);
  if (!phase) {
    std::string names;
    for (Phase p : allPhases())
      names += (names.empty() ? "" : ", ") + phaseName(p).str();
    return fail("--compile-to=" + compileTo +
                " is not a phase (phases: " + names + ")");
  }
  // Training options without --train would be ignored: refuse them.
  if (!options.train) {
    for (const cl::Option *o :
         std::initializer_list<const cl::Option *>{&gradAccum,
                                                   &mesh,
                                                   &dataParallel,
                                                   &syncBatchNorm,
                                                   &tensorParallel,
                                                   &bucketBytes,
                                                   &zero,
                                                   &recompute,
                                                   &optimizerName,
                                                   &lr,
                                                   &beta1,
                                                   &beta2,
                                                   &eps,
                                                   &weightDecay,
                                                   &decayAll,
                                                   &momentum,
                                                   &nesterov,
                                                   &clipGradNorm,
                                                   &schedule,
                                                   &warmupSteps,
                                                   &totalSteps,
                                                   &minLr,
                                                   &decaySteps})
      if (o->getNumOccurrences())
        return fail("--" + o->ArgStr.str() +
                    " applies to a training step; add --train (or drop it)");
  }
  // Another optimizer's options would be ignored too.
  for (auto [o, owner] :
       std::initializer_list<std::pair<const cl::Option *, llvm::StringRef>>{
           {&beta1, "adamw"},
           {&beta2, "adamw"},
           {&eps, "adamw"},
           {&momentum, "sgd"},
           {&nesterov, "sgd"}})
    if (options.train && o->getNumOccurrences() && opt.optimizer != owner)
      return fail("--" + o->ArgStr.str() + " applies to --optimizer " +
                  owner.str() + ", not " + opt.optimizer);
  bool writeExecutableFile = llvm::StringRef(outputFile).ends_with(".tcx");
  if (writeExecutableFile && compileTo.getNumOccurrences())
    return fail("--compile-to=" + compileTo +
                " prints IR; drop it to write an executable");
  // An executable needs every phase; IR stops at --compile-to.
  if (!writeExecutableFile)
    options.compileTo = *phase;
  if (printMemoryPlan && !writeExecutableFile)
    return fail("--print-memory-plan needs an executable output (-o *.tcx)");
  // The options table plans the step three more times: only when asked.
  options.recompute.compareOptions = printMemoryPlan && options.train;
  for (const std::string &spec : inputShapes) {
    std::string name;
    std::vector<int64_t> dims;
    if (!parseInputShape(spec, name, dims))
      return fail("--input-shape '" + spec +
                  "': expected NAME=D0xD1x..., e.g. tokens=8x128");
    if (!options.import.inputShapes.emplace(name, dims).second)
      return fail("--input-shape gives '" + name + "' twice");
  }
  for (const std::string &spec : paddingIndices) {
    auto [name, row] = llvm::StringRef(spec).rsplit('=');
    int64_t index = 0;
    if (name.empty() || row.getAsInteger(10, index) || index < 0)
      return fail("--embedding-padding-index '" + spec +
                  "': expected NAME=ROW, ROW a non-negative integer");
    if (!options.import.embeddingPaddingIndex.emplace(name.str(), index).second)
      return fail("--embedding-padding-index gives '" + name.str() + "' twice");
  }
  options.import.frozen.assign(freeze.begin(), freeze.end());
  options.precision.keepF32 = llvm::join(keepF32, ",");
  for (const std::string &spec : binds) {
    auto [name, file] = llvm::StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return fail("--bind '" + spec + "': expected NAME=FILE");
    if (!options.import.bindings.emplace(name.str(), file.str()).second)
      return fail("--bind gives '" + name.str() + "' twice");
  }
  // An output that is one of the inputs would destroy it (the IR printed
  // in place of the model, weights elided): refused before any work.
  if (outputFile != "-") {
    std::vector<std::pair<std::string, std::string>> readFiles = {
        {"the input model", inputFile}};
    if (!options.import.parameters.empty())
      readFiles.push_back({"--params", options.import.parameters});
    for (const auto &[name, file] : options.import.bindings)
      readFiles.push_back({"--bind " + name, file});
    for (const auto &[what, file] : readFiles) {
      bool same = false;
      if (!llvm::sys::fs::equivalent(outputFile, file, same) && same)
        return fail("-o " + outputFile + " is " + what + " (" + file +
                    "): writing it would destroy it; give another output");
    }
  }
  // Only an explicit --compile-to=autodiff/optimizer needs --train.
  CompileOptions checked = options;
  if (!compileTo.getNumOccurrences())
    checked.compileTo.reset();
  if (std::string error = checkOptions(checked); !error.empty())
    return fail(error);

  mlir::DialectRegistry registry;
  registerTraincDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // An error names the op and its location; printing the whole enclosing
  // function after it (MLIR's default) buries the message under the IR.
  bool printOpAsked = false;
  for (int i = 1; i < argc; ++i)
    printOpAsked |=
        llvm::StringRef(argv[i]).contains("mlir-print-op-on-diagnostic");
  if (!printOpAsked)
    context.printOpOnDiagnostic(false);
  CliDiagnostics diagnostics(context);

  // Prints its tree to standard error when it goes out of scope, after
  // `timing` (declared after it) has closed.
  mlir::DefaultTimingManager timingManager;
  timingManager.setEnabled(timePhases);
  timingManager.setDisplayMode(mlir::DefaultTimingManager::DisplayMode::Tree);
  mlir::TimingScope timing = timingManager.getRootScope();

  auto module =
      compileModel(context, inputFile, options, timePhases ? &timing : nullptr);
  if (failed(module))
    return fail("compilation failed in phase up to '" +
                phaseName(lastPhase(options)) + "'");

  if (writeExecutableFile) {
    WriterOptions writerOptions;
    // Absolute, so that trainc-run --export-onnx finds the model from any
    // working directory.
    llvm::SmallString<256> source(inputFile);
    llvm::sys::fs::make_absolute(source);
    llvm::sys::path::remove_dots(source, /*remove_dot_dot=*/true);
    writerOptions.source = source.str().str();
    for (int i = 0; i < argc; ++i)
      writerOptions.command += (i ? " " : "") + std::string(argv[i]);
    MemoryPlanReport report;
    mlir::TimingScope writeTimer = timing.nest("write executable");
    if (failed(writeExecutable(**module, outputFile, writerOptions, report)))
      return fail("cannot compile '" + inputFile + "' to an executable");
    writeTimer.stop();
    if (printMemoryPlan) {
      report.print(llvm::outs());
      printRecomputeOptions(**module, llvm::outs());
    }
    return 0;
  }

  std::string error;
  auto output = mlir::openOutputFile(outputFile, &error);
  if (!output)
    return fail(error);
  mlir::OpPrintingFlags flags;
  if (!printWeights)
    flags.elideLargeResourceString(64);
  (*module)->print(output->os(), flags);
  output->os() << "\n";
  // A failed write (a full disk) is this error naming the file, not LLVM's
  // fatal one without it; the file is removed (not kept).
  output->os().flush();
  if (output->os().has_error()) {
    std::string message = output->os().error().message();
    output->os().clear_error();
    return fail(
        "cannot write " +
        (outputFile == "-" ? std::string("standard output") : outputFile) +
        ": " + message);
  }
  output->keep();
  return 0;
}

} // namespace trainc
