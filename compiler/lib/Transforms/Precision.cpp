//===- Precision.cpp - Mixed precision as explicit casts ------------------===//
//
// See Precision in Passes.td. One walk in program order: each op's
// operands already have their final types, so the op is classified, its
// operands cast as the policy says, and its result types set to match.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"

namespace trainc {
#define GEN_PASS_DEF_PRECISION
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;
using trainc::train::TrainDialect;

namespace {

/// The initial dynamic loss scale (PyTorch GradScaler's init_scale).
constexpr double kInitialLossScale = 65536.0;

enum class Policy { Low, F32, Follow };

Policy policyOf(Operation *op) {
  if (isa<DotGeneralOp, AttentionOp>(op))
    return Policy::Low;
  if (isa<SoftmaxOp, LayerNormOp, RmsNormOp, ReduceSumOp, ReduceMeanOp,
          ReduceMaxOp, ReduceProdOp, SoftmaxCrossEntropyOp>(op))
    return Policy::F32;
  return Policy::Follow;
}

bool isF32Tensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType().isF32();
}

/// Node names in a location (NameLoc, possibly inside fused locations).
void collectNames(Location loc, SmallVectorImpl<StringRef> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().getValue());
    collectNames(name.getChildLoc(), names);
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location l : fused.getLocations())
      collectNames(l, names);
  }
}

struct PrecisionPass : public trainc::impl::PrecisionBase<PrecisionPass> {
  using PrecisionBase::PrecisionBase;

  void runOnOperation() override {
    if (precision != "f32" && precision != "tf32" && precision != "bf16" &&
        precision != "fp16") {
      getOperation().emitError("precision '")
          << precision << "' is not f32, tf32, bf16 or fp16";
      return signalPassFailure();
    }
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("precision: no function @main");
      return signalPassFailure();
    }
    if (failed(parseKeepF32(fn)))
      return signalPassFailure();
    if (precision == "f32")
      return;
    if (precision == "tf32") {
      markTf32(fn);
    } else {
      OpBuilder b(&getContext());
      Type low = precision == "bf16" ? Type(b.getBF16Type()) : b.getF16Type();
      autocast(fn, low);
      if (precision == "fp16" && lossScaling)
        addLossScale(fn);
    }
    // An entry that kept nothing is a typo or a name the model lacks: say
    // so rather than train in a precision the user did not ask for.
    for (const KeepEntry &entry : keepEntries)
      if (!entry.used) {
        fn.emitError("precision: keep-f32 entry '")
            << entry.text << "' matches no "
            << (entry.glob ? "node name" : "op") << " of the model"
            << (precision == "tf32" ? "'s matmuls (tf32 rounds only matmuls)"
                                    : "")
            << " (node names are the ONNX nodes' or the JAX ops' names; ops "
               "are graph ops, e.g. dot_general)";
        return signalPassFailure();
      }
  }

  LogicalResult parseKeepF32(func::FuncOp fn) {
    SmallVector<StringRef> entries;
    StringRef(keepF32).split(entries, ',', -1, /*KeepEmpty=*/false);
    for (StringRef entry : entries) {
      StringRef name = entry;
      name.consume_front("graph.");
      KeepEntry kept{entry.str()};
      if (RegisteredOperationName::lookup(("graph." + name).str(),
                                          &getContext())) {
        kept.kind = ("graph." + name).str();
        keepEntries.push_back(std::move(kept));
        continue;
      }
      llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(entry);
      if (!glob)
        return fn.emitError("precision: keep-f32 entry '")
               << entry << "' is neither a graph op nor a glob pattern: "
               << llvm::toString(glob.takeError());
      kept.glob = std::move(*glob);
      keepEntries.push_back(std::move(kept));
    }
    return success();
  }

  /// Whether `op` stays f32; marks every entry that names it as used.
  bool kept(Operation *op) {
    if (keepEntries.empty())
      return false;
    SmallVector<StringRef> names;
    collectNames(op->getLoc(), names);
    bool keep = false;
    for (KeepEntry &entry : keepEntries) {
      bool match = entry.glob ? llvm::any_of(names,
                                             [&](StringRef name) {
                                               return entry.glob->match(name);
                                             })
                              : entry.kind == op->getName().getStringRef();
      entry.used |= match;
      keep |= match;
    }
    return keep;
  }

  /// tf32: every f32 matmul not kept in f32 rounds its operands to TF32;
  /// the gradient rules give the backward pass's matmuls the same mark.
  void markTf32(func::FuncOp fn) {
    fn.walk([&](DotGeneralOp dot) {
      if (!kept(dot) && isF32Tensor(dot.getLhs()))
        dot.setTf32(true);
    });
  }

  void autocast(func::FuncOp fn, Type low) {
    Block &body = fn.getBody().front();
    OpBuilder b(&getContext());
    // Values that depend on a data input (activations): the others are
    // weights and constants, cast to whatever their reader runs in.
    llvm::DenseSet<Value> onData;
    for (BlockArgument arg : body.getArguments())
      if (!fn.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttr) &&
          !fn.getArgAttr(arg.getArgNumber(), TrainDialect::kStateAttr))
        onData.insert(arg);
    auto isLow = [&](Value v) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      return t && t.getElementType() == low;
    };
    auto castOperand = [&](OpOperand &use, Type to) {
      auto t = cast<RankedTensorType>(use.get().getType());
      b.setInsertionPoint(use.getOwner());
      use.set(b.createOrFold<ConvertOp>(use.getOwner()->getLoc(), t.clone(to),
                                        use.get()));
    };
    Type f32 = b.getF32Type();
    for (Operation &op : body.without_terminator()) {
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return onData.contains(v); }))
        for (Value r : op.getResults())
          onData.insert(r);
      // Explicit casts keep their result type; constants have no operand.
      if (isa<ConvertOp>(op) || op.getNumOperands() == 0)
        continue;
      // A bitcast reads the stored bits of its operand as the program typed
      // it: a 32-bit float this pass narrowed is widened back for it (the
      // result's width says which), and its result type stays.
      if (auto bitcast = dyn_cast<BitcastOp>(op)) {
        if (isLow(bitcast.getOperand()) &&
            elementStorageBytes(bitcast.getType().getElementType()) == 4)
          castOperand(bitcast->getOpOperand(0), f32);
        continue;
      }
      bool keep = kept(&op);
      // The loss reads 16-bit logits as they are (its kernel computes in
      // f32) and stays f32: no f32 copy of the logits.
      if (isa<SoftmaxCrossEntropyOp>(op) && !keep)
        continue;
      Policy policy = keep ? Policy::F32 : policyOf(&op);
      bool toLow = policy == Policy::Low;
      if (policy == Policy::Follow) {
        bool anyLow = false, anyF32 = false;
        for (Value v : op.getOperands()) {
          anyLow |= isLow(v);
          anyF32 |= onData.contains(v) && isF32Tensor(v);
        }
        if (!anyLow)
          continue; // an f32 op stays as it is
        toLow = !anyF32;
      }
      for (OpOperand &use : op.getOpOperands()) {
        if (toLow && isF32Tensor(use.get()))
          castOperand(use, low);
        else if (!toLow && isLow(use.get()))
          castOperand(use, f32);
      }
      // A dot narrowed to 16-bit operands rounds nothing to TF32 (an input
      // that already carried the mark, compiled again with bf16/fp16), and
      // a dot this policy types anew keeps no widened result of an earlier
      // compile (f32_result; trainc-widen-products may set it again).
      if (auto dot = dyn_cast<DotGeneralOp>(op)) {
        if (toLow)
          dot.removeTf32Attr();
        dot.removeF32ResultAttr();
        dot.getResult().setType(cast<RankedTensorType>(dot.getType())
                                    .clone(getElementTypeOrSelf(dot.getLhs())));
      }
      if (toLow)
        for (Value r : op.getResults())
          if (isF32Tensor(r))
            r.setType(cast<RankedTensorType>(r.getType()).clone(low));
    }
    // The function keeps its result types.
    Operation *ret = body.getTerminator();
    for (OpOperand &use : ret->getOpOperands())
      if (use.get().getType() !=
          fn.getFunctionType().getResult(use.getOperandNumber()))
        castOperand(use, cast<RankedTensorType>(fn.getFunctionType().getResult(
                                                    use.getOperandNumber()))
                             .getElementType());
  }

  /// fp16: the loss scale as optimizer state (autodiff and the optimizer
  /// read it by its train.loss_scale mark).
  void addLossScale(func::FuncOp fn) {
    Builder b(&getContext());
    auto type = RankedTensorType::get({}, b.getF32Type());
    unsigned index = fn.getNumArguments();
    (void)fn.insertArgument(
        index, type,
        b.getDictionaryAttr(
            {b.getNamedAttr(TrainDialect::kStateAttr,
                            b.getStringAttr("loss_scale")),
             b.getNamedAttr(TrainDialect::kInitAttr,
                            DenseElementsAttr::get(
                                type, b.getF32FloatAttr(kInitialLossScale))),
             b.getNamedAttr(TrainDialect::kLossScaleAttr, b.getUnitAttr())}),
        fn.getLoc());
  }

  /// A --keep-f32 entry: a graph op kind or a glob over node names, and
  /// whether it kept any op.
  struct KeepEntry {
    std::string text;
    std::optional<std::string> kind;
    std::optional<llvm::GlobPattern> glob;
    bool used = false;
  };
  std::vector<KeepEntry> keepEntries;
};

} // namespace
