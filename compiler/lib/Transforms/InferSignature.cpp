//===- InferSignature.cpp - The loss and the data inputs of @main ---------===//
//
// See InferSignature in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace trainc {
#define GEN_PASS_DEF_INFERSIGNATURE
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;
using trainc::train::TrainDialect;

namespace trainc {
namespace {

bool isIntegerTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<IntegerType>(t.getElementType()) &&
         !t.getElementType().isInteger(1);
}

/// The data inputs (graph.input arguments) whose integer values reach `v`
/// through integer ops only.
llvm::SetVector<BlockArgument> integerSources(func::FuncOp fn, Value v) {
  llvm::SetVector<BlockArgument> sources;
  llvm::SmallVector<Value> work = {v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!isIntegerTensor(x) || !seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      if (fn.getArgAttr(arg.getArgNumber(), GraphDialect::kInputAttr))
        sources.insert(arg);
      continue;
    }
    for (Value operand : x.getDefiningOp()->getOperands())
      work.push_back(operand);
  }
  return sources;
}

/// Everything `root` depends on.
llvm::DenseSet<Operation *> backwardSlice(Value root) {
  llvm::DenseSet<Operation *> slice;
  llvm::SmallVector<Value> work = {root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!op || !slice.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      work.push_back(operand);
  }
  return slice;
}

struct InferSignaturePass
    : public impl::InferSignatureBase<InferSignaturePass> {
  using InferSignatureBase::InferSignatureBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("no function @main");
      return signalPassFailure();
    }
    std::optional<unsigned> lossIndex = markLoss(fn);
    if (!lossIndex) {
      if (requireLoss)
        signalPassFailure();
      return;
    }
    markDataInputs(fn, *lossIndex);
  }

  /// The result marked train.loss (marking the one named `loss`); none
  /// after an error or, without requireLoss, when there is none.
  std::optional<unsigned> markLoss(func::FuncOp fn) {
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (fn.getResultAttr(i, TrainDialect::kLossAttr))
        return i;
    std::string names;
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      auto name =
          fn.getResultAttrOfType<StringAttr>(i, GraphDialect::kOutputAttr);
      if (!name)
        continue;
      names += (names.empty() ? "'" : ", '") + name.str() + "'";
      if (name.getValue() != loss)
        continue;
      auto type = cast<RankedTensorType>(fn.getResultTypes()[i]);
      if (type.getRank() != 0 || !isa<FloatType>(type.getElementType())) {
        fn.emitError("the loss '")
            << loss << "' must be a scalar float, but it is " << type;
        return std::nullopt;
      }
      fn.setResultAttr(i, TrainDialect::kLossAttr,
                       UnitAttr::get(fn.getContext()));
      return i;
    }
    if (requireLoss)
      fn.emitError("no output named '")
          << loss
          << "' to train on (outputs: " << (names.empty() ? "none" : names)
          << "); name the loss with --loss";
    return std::nullopt;
  }

  /// Marks the tokens and targets inputs when each is unambiguous.
  void markDataInputs(func::FuncOp fn, unsigned lossIndex) {
    for (BlockArgument arg : fn.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), TrainDialect::kDataAttr))
        return;
    Value lossValue =
        fn.getBody().front().getTerminator()->getOperand(lossIndex);
    llvm::DenseSet<Operation *> slice = backwardSlice(lossValue);
    llvm::SetVector<BlockArgument> targets, tokens;
    for (Operation *op : slice)
      if (auto ce = dyn_cast<SoftmaxCrossEntropyOp>(op))
        for (BlockArgument arg : integerSources(fn, ce.getTargets()))
          targets.insert(arg);
    for (Operation *op : slice)
      if (auto gather = dyn_cast<GatherOp>(op))
        for (BlockArgument arg : integerSources(fn, gather.getIndices()))
          if (!targets.contains(arg))
            tokens.insert(arg);
    if (targets.size() != 1 || tokens.size() != 1)
      return;
    MLIRContext *ctx = fn.getContext();
    fn.setArgAttr(tokens[0].getArgNumber(), TrainDialect::kDataAttr,
                  StringAttr::get(ctx, "tokens"));
    fn.setArgAttr(targets[0].getArgNumber(), TrainDialect::kDataAttr,
                  StringAttr::get(ctx, "targets"));
  }
};

} // namespace
} // namespace trainc
