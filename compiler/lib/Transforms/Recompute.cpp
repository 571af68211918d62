//===- Recompute.cpp - Activation checkpointing ---------------------------===//
//
// See Recompute in Passes.td and Recompute.h. Three steps: find the
// forward pass, its activations and its blocks on the dataflow
// (ForwardPass); choose the activations to recompute for a mode
// (chooseRecomputed); clone their forward ops where the backward pass
// first reads them (rewrite). A budget tries the ladder's steps in order on
// copies of the module planned by the back half of the pipeline.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Recompute.h"

#include "trainc/Compiler/MemoryPlan.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Compiler/Pipeline.h"
#include "trainc/Compiler/Program.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

namespace trainc {
#define GEN_PASS_DEF_RECOMPUTE
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;
using trainc::train::TrainDialect;

namespace trainc {

std::optional<RecomputeMode> parseRecomputeMode(llvm::StringRef text,
                                                std::string &error) {
  RecomputeMode mode;
  if (text == "none")
    return mode;
  if (text == "full" || text == "selective") {
    mode.kind = text == "full" ? RecomputeMode::Full : RecomputeMode::Selective;
    return mode;
  }
  llvm::StringRef bytes = text;
  if (bytes.consume_front("budget=")) {
    uint64_t scale = 1;
    if (bytes.consume_back("K"))
      scale = uint64_t(1) << 10;
    else if (bytes.consume_back("M"))
      scale = uint64_t(1) << 20;
    else if (bytes.consume_back("G"))
      scale = uint64_t(1) << 30;
    uint64_t value = 0;
    if (!bytes.getAsInteger(10, value) && value > 0 &&
        value <= UINT64_MAX / scale) {
      mode.kind = RecomputeMode::Budget;
      mode.budget = value * scale;
      return mode;
    }
  }
  error = "recompute mode '" + text.str() +
          "' is not none, full, selective or budget=BYTES (a positive "
          "integer, optionally with K, M or G for KiB, MiB, GiB)";
  return std::nullopt;
}

namespace {

/// What each block recomputes.
enum class BlockChoice { Keep, Selective, Full };

/// The forward pass of a training step, its activations and its blocks.
struct ForwardPass {
  /// The forward ops: those the loss or another model output depends on.
  llvm::DenseSet<Operation *> ops;
  /// Values of forward ops that depend on a parameter and on a data input.
  llvm::DenseSet<Value> activations;
  /// Activations read outside the forward pass (kept for the backward).
  llvm::DenseSet<Value> saved;
  /// Block j is the forward ops after `input`'s op up to `output`'s op.
  struct Block {
    Value input, output;
    SmallVector<Operation *> ops;
  };
  SmallVector<Block> blocks;
  /// Cut values (one live activation), in program order.
  llvm::DenseSet<Value> cuts;
};

bool isResultOf(func::FuncOp fn, unsigned i, llvm::StringRef attr) {
  return static_cast<bool>(fn.getResultAttr(i, attr));
}

ForwardPass analyze(func::FuncOp fn) {
  ForwardPass f;
  Block &body = fn.getBody().front();
  Operation *ret = body.getTerminator();
  SmallVector<Value> worklist;
  // The forward's results: outputs and the updates it makes itself
  // (running statistics), not the gradients, the optimizer's updates or
  // the metrics.
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if ((!isResultOf(fn, i, TrainDialect::kGradOfAttr) &&
         !isResultOf(fn, i, TrainDialect::kUpdateAttr) &&
         !isResultOf(fn, i, TrainDialect::kMetricAttr)) ||
        TrainDialect::isForwardUpdate(fn, i))
      worklist.push_back(ret->getOperand(i));
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (def && f.ops.insert(def).second)
      llvm::append_range(worklist, def->getOperands());
  }

  // Dependence on parameters (frozen ones too) and on data inputs.
  llvm::DenseSet<Value> onParam, onData;
  for (BlockArgument arg : body.getArguments()) {
    if (fn.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttr))
      onParam.insert(arg);
    else if (!fn.getArgAttr(arg.getArgNumber(), TrainDialect::kStateAttr))
      onData.insert(arg);
  }
  SmallVector<Operation *> order;
  for (Operation &op : body.without_terminator()) {
    bool param = false, data = false;
    for (Value v : op.getOperands()) {
      param |= onParam.contains(v);
      data |= onData.contains(v);
    }
    for (Value r : op.getResults()) {
      if (param)
        onParam.insert(r);
      if (data)
        onData.insert(r);
      if (param && data && f.ops.contains(&op))
        f.activations.insert(r);
    }
    if (f.ops.contains(&op))
      order.push_back(&op);
  }
  for (Value v : f.activations)
    for (Operation *user : v.getUsers())
      if (!f.ops.contains(user))
        f.saved.insert(v);

  // Cuts: after each forward op, the live non-scalar activations (those a
  // later forward op still reads); a cut is where only one is.
  auto counted = [&](Value v) {
    return f.activations.contains(v) &&
           cast<RankedTensorType>(v.getType()).getRank() > 0;
  };
  llvm::DenseMap<Value, int64_t> pending;
  for (Operation *op : order)
    for (Value v : op->getOperands())
      if (counted(v))
        ++pending[v];
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseSet<Value> live;
  SmallVector<Value> cuts;
  SmallVector<int64_t> anchors;
  for (auto [pos, op] : llvm::enumerate(order)) {
    position[op] = pos;
    if (isa<AttentionOp, ExtractPatchesOp>(op))
      anchors.push_back(pos);
    for (Value v : op->getOperands())
      if (counted(v) && --pending[v] == 0)
        live.erase(v);
    for (Value r : op->getResults())
      if (counted(r) && pending.lookup(r) > 0)
        live.insert(r);
    if (live.size() == 1 && (cuts.empty() || cuts.back() != *live.begin()))
      cuts.push_back(*live.begin());
  }
  f.cuts.insert(cuts.begin(), cuts.end());
  auto cutPosition = [&](size_t c) {
    return position.lookup(cuts[c].getDefiningOp());
  };

  // Block inputs: the last cut before each attention or patches (a
  // convolution's or a pool's; those sharing one are one block).
  SmallVector<size_t> inputs;
  for (int64_t a : anchors) {
    size_t last = cuts.size();
    for (size_t c = 0; c < cuts.size() && cutPosition(c) < a; ++c)
      last = c;
    if (last != cuts.size() && (inputs.empty() || inputs.back() != last))
      inputs.push_back(last);
  }
  if (inputs.empty())
    return f;
  // The last block spans as many cuts as the one before it; with one
  // block, up to the last cut made by the same op as its input.
  SmallVector<size_t> bounds(inputs);
  if (inputs.size() >= 2) {
    size_t end = inputs.back() + (inputs.back() - inputs[inputs.size() - 2]);
    if (end < cuts.size())
      bounds.push_back(end);
  } else {
    // One block: it ends at the last cut that a norm reads (the final
    // norm's input in a pre-norm model), else at the last cut.
    auto readByNorm = [](Value v) {
      return llvm::any_of(v.getUsers(), [](Operation *u) {
        return isa<LayerNormOp, RmsNormOp>(u);
      });
    };
    size_t end = cuts.size() - 1;
    for (size_t c = cuts.size(); c-- > inputs[0] + 1;)
      if (readByNorm(cuts[c])) {
        end = c;
        break;
      }
    if (end > inputs[0])
      bounds.push_back(end);
  }
  for (size_t j = 0; j + 1 < bounds.size(); ++j) {
    ForwardPass::Block block{cuts[bounds[j]], cuts[bounds[j + 1]], {}};
    int64_t begin = cutPosition(bounds[j]), end = cutPosition(bounds[j + 1]);
    for (int64_t p = begin + 1; p <= end; ++p)
      block.ops.push_back(order[p]);
    f.blocks.push_back(std::move(block));
  }
  return f;
}

/// Ops whose results selective recompute makes again: the attention core,
/// normalized probabilities, activation functions, dropout and patches.
bool isSelectiveRoot(Operation *op) {
  return isa<AttentionOp, SoftmaxOp, GeluOp, DropoutOp, ExpOp, TanhOp, ErfOp,
             ExtractPatchesOp>(op);
}

/// Ops that selective recompute follows from a root: elementwise math and
/// data movement (not dots, reductions or norms).
bool isSelectiveFollower(Operation *op) {
  return op->hasTrait<mlir::OpTrait::Elementwise>() ||
         isa<ReshapeOp, TransposeOp, BroadcastInDimOp, SliceOp>(op);
}

/// The activations to recompute for `choices` (one per block).
llvm::DenseSet<Value> chooseRecomputed(const ForwardPass &f,
                                       ArrayRef<BlockChoice> choices) {
  llvm::DenseSet<Value> chosen, kept;
  for (auto [block, choice] : llvm::zip_equal(f.blocks, choices)) {
    kept.insert(block.input);
    kept.insert(block.output);
    for (Operation *op : block.ops) {
      bool take = false;
      if (choice == BlockChoice::Full)
        take = true;
      else if (choice == BlockChoice::Selective)
        take = isSelectiveRoot(op) ||
               (isSelectiveFollower(op) &&
                llvm::any_of(op->getOperands(),
                             [&](Value v) { return chosen.contains(v); }));
      for (Value r : op->getResults())
        if (take && f.activations.contains(r) && r != block.output &&
            (choice == BlockChoice::Full || !f.cuts.contains(r)))
          chosen.insert(r);
    }
  }
  // A recomputation may only read what is kept anyway: drop a value that
  // would read an activation neither chosen nor saved (keeping that
  // activation alive would cost what recomputing saves), until none does.
  // An elementwise op or a reshape of what is kept is remade instead (one
  // pass, or a view), as a convolution's input, a ReLU of a saved norm
  // output seen as [N, C, H, W], is.
  auto available = [&](Value v) {
    return !f.activations.contains(v) || chosen.contains(v) ||
           f.saved.contains(v) || kept.contains(v);
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (Value v : llvm::to_vector(chosen))
      for (Value operand : v.getDefiningOp()->getOperands()) {
        if (available(operand))
          continue;
        Operation *def = operand.getDefiningOp();
        if (isSelectiveFollower(def) &&
            llvm::all_of(def->getOperands(), available)) {
          chosen.insert(operand);
        } else {
          chosen.erase(v);
          changed = true;
          break;
        }
      }
  }
  // What a recomputation reads besides activations (a bias broadcast to
  // the activations' shape, a mask made from an input) is made again too
  // when the backward pass would not keep it: keeping it would cost as
  // much as the activation it serves.
  SmallVector<Value> worklist(chosen.begin(), chosen.end());
  while (!worklist.empty())
    for (Value operand :
         worklist.pop_back_val().getDefiningOp()->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && f.ops.contains(def) && !isa<ConstantOp>(def) &&
          !f.activations.contains(operand) && !f.saved.contains(operand) &&
          chosen.insert(operand).second)
        worklist.push_back(operand);
    }
  return chosen;
}

/// recompute::kAddedLiveBytes of `recomputed`: every remade value but a
/// saved one that no other remake reads, and every forward value a remake
/// reads.
int64_t addedLiveBytes(const ForwardPass &f,
                       const llvm::DenseSet<Value> &recomputed) {
  auto bytes = [](Value v) {
    return int64_t(bytesOf(cast<RankedTensorType>(v.getType())));
  };
  llvm::DenseSet<Value> counted;
  int64_t total = 0;
  for (Value v : recomputed) {
    // A clone is made once, at its first backward reader, and serves every
    // later one: a held value's clone that a later remake reads (or one
    // whose original lives on in a view) can outlive the original. Only a
    // saved value no other remake reads is surely within its life.
    bool withinLife =
        f.saved.contains(v) && llvm::none_of(v.getUsers(), [&](Operation *u) {
          return llvm::any_of(u->getResults(),
                              [&](Value r) { return recomputed.contains(r); });
        });
    if (!withinLife && counted.insert(v).second)
      total += bytes(v);
    for (Value operand : v.getDefiningOp()->getOperands())
      if (f.activations.contains(operand) && !recomputed.contains(operand) &&
          counted.insert(operand).second)
        total += bytes(operand);
  }
  return total;
}

/// Clones the forward op of each recomputed value where an op outside the
/// forward pass first reads it; returns the FLOPs the clones add.
int64_t rewrite(func::FuncOp fn, const ForwardPass &f,
                const llvm::DenseSet<Value> &recomputed) {
  Block &body = fn.getBody().front();
  SmallVector<Operation *> readers;
  for (Operation &op : body.without_terminator())
    if (!f.ops.contains(&op))
      readers.push_back(&op);
  OpBuilder b(fn.getContext());
  UnitAttr mark = b.getUnitAttr();
  llvm::DenseMap<Value, Value> clones;
  int64_t flops = 0;
  std::function<Value(Value)> materialize = [&](Value v) -> Value {
    if (Value c = clones.lookup(v))
      return c;
    Operation *def = v.getDefiningOp();
    IRMapping map;
    for (Value operand : def->getOperands())
      if (recomputed.contains(operand))
        map.map(operand, materialize(operand));
    Operation *clone = b.clone(*def, map);
    clone->setAttr(recompute::kClone, mark);
    if (auto cost = dyn_cast<CostOpInterface>(clone))
      flops += cost.getFlops();
    for (auto [r, c] : llvm::zip_equal(def->getResults(), clone->getResults()))
      clones[r] = c;
    return clones.lookup(v);
  };
  for (Operation *reader : readers)
    for (OpOperand &use : reader->getOpOperands())
      if (recomputed.contains(use.get())) {
        b.setInsertionPoint(reader);
        use.set(materialize(use.get()));
      }
  return flops;
}

/// The per-block choices of a recompute mode; step `s` of a budget's
/// ladder (0: none; 1..L: selective on blocks 0..s-1; L+1..2L: selective
/// everywhere and full on blocks 0..s-L-1).
SmallVector<BlockChoice> choicesFor(RecomputeMode::Kind kind, size_t blocks,
                                    size_t step = 0) {
  SmallVector<BlockChoice> choices(blocks, BlockChoice::Keep);
  for (size_t j = 0; j < blocks; ++j) {
    if (kind == RecomputeMode::Full)
      choices[j] = BlockChoice::Full;
    else if (kind == RecomputeMode::Selective)
      choices[j] = BlockChoice::Selective;
    else if (kind == RecomputeMode::Budget)
      choices[j] = step > blocks + j ? BlockChoice::Full
                   : step > j        ? BlockChoice::Selective
                                     : BlockChoice::Keep;
  }
  return choices;
}

/// Applies `choices` to @main of `module`; returns the added FLOPs, and
/// sets recompute::kAddedLiveBytes.
int64_t apply(func::FuncOp fn, ArrayRef<BlockChoice> choices) {
  ForwardPass f = analyze(fn);
  llvm::DenseSet<Value> recomputed = chooseRecomputed(f, choices);
  fn->setAttr(recompute::kAddedLiveBytes,
              Builder(fn.getContext())
                  .getI64IntegerAttr(addedLiveBytes(f, recomputed)));
  return rewrite(fn, f, recomputed);
}

struct Planned {
  MemoryPlanReport report;
  int64_t addedFlops = 0;
  uint64_t stepFlops = 0;
};

/// Plans a copy of `module` with `choices` applied (lower, then the
/// planner), leaving `module` as it is.
FailureOr<Planned> planWith(ModuleOp module, ArrayRef<BlockChoice> choices,
                            const LowerOptions &lower) {
  OwningOpRef<ModuleOp> copy = module.clone();
  auto fn = copy->lookupSymbol<func::FuncOp>("main");
  Planned planned;
  planned.addedFlops = apply(fn, choices);
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  buildExecutablePhases(pm, Phase::Lower, lower);
  if (failed(pm.run(*copy)))
    return failure();
  FailureOr<Program> program = Program::build(fn, /*withConstantData=*/false);
  if (failed(program))
    return failure();
  std::vector<bool> alias;
  planned.report = planMemory(*program, alias);
  planned.stepFlops = program->flops;
  return planned;
}

struct RecomputePass : public impl::RecomputeBase<RecomputePass> {
  using RecomputeBase::RecomputeBase;

  void runOnOperation() override {
    std::string error;
    std::optional<RecomputeMode> parsed = parseRecomputeMode(mode, error);
    if (!parsed) {
      getOperation().emitError(error);
      return signalPassFailure();
    }
    std::optional<LowerOptions> lowerPhase = parseLowerOptions(lower, error);
    if (!lowerPhase) {
      getOperation().emitError("recompute: ") << error;
      return signalPassFailure();
    }
    lowerOptions = *lowerPhase;
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("recompute: no function @main");
      return signalPassFailure();
    }
    size_t blocks = analyze(fn).blocks.size();
    Builder b(&getContext());
    fn->setAttr(recompute::kBlocks, b.getI64IntegerAttr(blocks));
    if (parsed->kind != RecomputeMode::None && blocks == 0) {
      fn.emitError("recompute ")
          << mode
          << ": no block found (blocks are found around graph.attention "
             "and graph.extract_patches ops, a transformer's attention and a "
             "CNN's convolutions, and this step has none, or none with a "
             "single-activation cut before it)";
      return signalPassFailure();
    }
    if (compareOptions && failed(recordOptions(fn, blocks)))
      return signalPassFailure();
    SmallVector<BlockChoice> choices = choicesFor(parsed->kind, blocks);
    if (parsed->kind == RecomputeMode::Budget) {
      FailureOr<SmallVector<BlockChoice>> fit =
          fitBudget(fn, blocks, parsed->budget);
      if (failed(fit))
        return signalPassFailure();
      choices = *fit;
    }
    int64_t flops = 0;
    if (parsed->kind != RecomputeMode::None)
      flops = apply(fn, choices);
    fn->setAttr(recompute::kAddedFlops, b.getI64IntegerAttr(flops));
  }

  /// The first ladder step whose planned activations fit `budget`. Each
  /// step adds FLOPs, but the planned peak need not fall with every step
  /// (full recompute can plan more than selective when one block's remade
  /// activations outweigh what it frees), so the steps are planned in order
  /// rather than bisected; a failure reports the smallest peak of all.
  FailureOr<SmallVector<BlockChoice>> fitBudget(func::FuncOp fn, size_t blocks,
                                                uint64_t budget) {
    ModuleOp module = getOperation();
    std::optional<Planned> smallest;
    size_t smallestStep = 0;
    for (size_t step = 0; step <= 2 * blocks; ++step) {
      FailureOr<Planned> planned =
          planWith(module, choicesFor(RecomputeMode::Budget, blocks, step),
                   lowerOptions);
      if (failed(planned))
        return failure();
      if (planned->report.activations <= budget)
        return choicesFor(RecomputeMode::Budget, blocks, step);
      if (!smallest ||
          planned->report.activations < smallest->report.activations) {
        smallest = *planned;
        smallestStep = step;
      }
    }
    std::string plan;
    llvm::raw_string_ostream os(plan);
    smallest->report.print(os);
    return fn.emitError("recompute budget=")
           << budget << ": the smallest planned activation peak is "
           << smallest->report.activations << " bytes ("
           << describeStep(smallestStep, blocks) << "); its plan:\n"
           << plan;
  }

  static std::string describeStep(size_t step, size_t blocks) {
    if (step == 0)
      return "no recompute";
    if (step <= blocks)
      return "selective recompute of blocks 0.." + std::to_string(step - 1) +
             " of " + std::to_string(blocks);
    if (step == 2 * blocks)
      return "full recompute of all " + std::to_string(blocks) + " blocks";
    return "selective recompute everywhere, full of blocks 0.." +
           std::to_string(step - blocks - 1) + " of " + std::to_string(blocks);
  }

  /// The lower phase as the pipeline runs it (the `lower` option).
  LowerOptions lowerOptions;

  /// recompute.options: none, selective and full, each planned on a copy.
  LogicalResult recordOptions(func::FuncOp fn, size_t blocks) {
    Builder b(&getContext());
    SmallVector<NamedAttribute> entries;
    for (auto [name, kind] : {std::pair{"none", RecomputeMode::None},
                              std::pair{"selective", RecomputeMode::Selective},
                              std::pair{"full", RecomputeMode::Full}}) {
      FailureOr<Planned> planned =
          planWith(getOperation(), choicesFor(kind, blocks), lowerOptions);
      if (failed(planned))
        return failure();
      entries.push_back(b.getNamedAttr(
          name, b.getI64ArrayAttr({int64_t(planned->report.activations),
                                   planned->addedFlops,
                                   int64_t(planned->stepFlops)})));
    }
    fn->setAttr(recompute::kOptions, b.getDictionaryAttr(entries));
    return success();
  }
};

} // namespace

void printRecomputeOptions(ModuleOp module, llvm::raw_ostream &os) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  auto options =
      fn ? fn->getAttrOfType<DictionaryAttr>(recompute::kOptions) : nullptr;
  if (!options)
    return;
  auto blocks = fn->getAttrOfType<IntegerAttr>(recompute::kBlocks);
  os << "recompute options (" << (blocks ? blocks.getInt() : 0)
     << (blocks && blocks.getInt() == 1 ? " block" : " blocks") << " found):\n";
  os << "  option          activations    saved        FLOPs added   of step\n";
  int64_t none = 0;
  if (auto n = options.getAs<ArrayAttr>("none"))
    none = cast<IntegerAttr>(n[0]).getInt();
  for (llvm::StringRef name : {"none", "selective", "full"}) {
    auto row = options.getAs<ArrayAttr>(name);
    if (!row || row.size() != 3)
      continue;
    int64_t bytes = cast<IntegerAttr>(row[0]).getInt();
    int64_t added = cast<IntegerAttr>(row[1]).getInt();
    int64_t step = cast<IntegerAttr>(row[2]).getInt();
    os << llvm::format(
        "  %-10s %10.3f MiB %8.1f%% %18lld %8.1f%%\n", name.str().c_str(),
        bytes / 1048576.0, none ? 100.0 * (none - bytes) / none : 0.0,
        (long long)added, step > added ? 100.0 * added / (step - added) : 0.0);
  }
}

} // namespace trainc
