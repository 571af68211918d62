//===- Autodiff.cpp - Reverse-mode differentiation of the loss ------------===//
//
// See Autodiff in Passes.td. The sweep visits ops in reverse program order;
// only ops that both depend on a trainable parameter and have a result
// cotangent are differentiated, so the backward pass contains nothing the
// gradients do not need.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace trainc {
#define GEN_PASS_DEF_AUTODIFF
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

Value zerosLike(OpBuilder &b, Location loc, Type type) {
  auto t = cast<RankedTensorType>(type);
  return b.create<ConstantOp>(
      loc, SplatElementsAttr::get(t, b.getFloatAttr(t.getElementType(), 0.0)));
}

struct AutodiffPass : public trainc::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("autodiff: no function @main");
      return signalPassFailure();
    }
    if (failed(differentiate(fn)))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // The loss: the result marked train.loss (a scalar float, as the train
    // dialect verifies).
    std::optional<unsigned> lossIndex;
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (fn.getResultAttr(i, trainc::train::TrainDialect::kLossAttr))
        lossIndex = i;
    if (!lossIndex)
      return fn.emitError("autodiff: no result is marked train.loss (run "
                          "--trainc-infer-signature, which marks the output "
                          "named by trainc --loss)");
    Value lossValue = ret.getOperand(*lossIndex);
    auto lossType = cast<RankedTensorType>(lossValue.getType());

    // Trainable parameters and everything computed from them.
    SmallVector<BlockArgument> trainable;
    llvm::DenseSet<Value> dependent;
    for (BlockArgument arg : body.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (fn.getArgAttr(i, trainc::train::TrainDialect::kParamAttr) &&
          !fn.getArgAttr(i, trainc::train::TrainDialect::kFrozenAttr) &&
          isFloatTensorType(arg.getType())) {
        trainable.push_back(arg);
        dependent.insert(arg);
      }
    }
    for (Operation &op : body.without_terminator())
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return dependent.contains(v); }))
        for (Value r : op.getResults())
          if (isFloatTensorType(r.getType()))
            dependent.insert(r);

    // The reverse sweep, appending the backward ops before the return.
    OpBuilder b(ret);
    llvm::DenseMap<Value, Value> cotangent;
    auto accumulate = [&](Value v, Value g, Location loc) {
      auto [it, inserted] = cotangent.try_emplace(v, g);
      if (!inserted)
        it->second = b.create<AddOp>(loc, it->second, g);
    };
    // The seed: 1, or the dynamic loss scale (fp16), divided out of each
    // gradient again below, so that the results are the loss's gradients
    // (an overflow of the scaled backward pass stays inf or NaN).
    Value seed = b.create<ConstantOp>(
        fn.getLoc(),
        SplatElementsAttr::get(lossType,
                               b.getFloatAttr(lossType.getElementType(), 1.0)));
    Value lossScale;
    for (BlockArgument arg : body.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(),
                        trainc::train::TrainDialect::kLossScaleAttr))
        lossScale = arg;
    if (lossScale)
      seed = b.createOrFold<ConvertOp>(fn.getLoc(), lossType, lossScale);
    accumulate(lossValue, seed, fn.getLoc());
    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultCotangents;
      bool any = false;
      for (Value r : op->getResults()) {
        resultCotangents.push_back(cotangent.lookup(r));
        any |= resultCotangents.back() != nullptr;
      }
      bool needed = llvm::any_of(
          op->getOperands(), [&](Value v) { return dependent.contains(v); });
      if (!any || !needed)
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitError("autodiff: '")
               << op->getName()
               << "' has no gradient rule, and it lies on a path from a "
                  "trainable parameter to the loss";
      SmallVector<Value> operandCotangents;
      if (failed(rule.buildVjp(b, resultCotangents, operandCotangents)))
        return op->emitError("autodiff: the gradient rule of '")
               << op->getName() << "' failed";
      if (operandCotangents.size() != op->getNumOperands())
        return op->emitError("autodiff: the gradient rule of '")
               << op->getName() << "' returned " << operandCotangents.size()
               << " cotangents for " << op->getNumOperands() << " operands";
      for (auto [operand, g] :
           llvm::zip_equal(op->getOperands(), operandCotangents))
        if (g && dependent.contains(operand))
          accumulate(operand, g, op->getLoc());
    }

    // Gradients become results, after the original outputs.
    SmallVector<Value> results(ret.getOperands());
    Value inverseScale;
    if (lossScale) {
      auto scalar = cast<RankedTensorType>(lossScale.getType());
      Value one = b.create<ConstantOp>(
          fn.getLoc(),
          SplatElementsAttr::get(scalar,
                                 b.getFloatAttr(scalar.getElementType(), 1.0)));
      inverseScale = b.create<DivOp>(fn.getLoc(), one, lossScale);
    }
    for (BlockArgument arg : trainable) {
      Value g = cotangent.lookup(arg);
      auto type = cast<RankedTensorType>(arg.getType());
      if (g && inverseScale) {
        Value inverse = b.createOrFold<ConvertOp>(
            fn.getLoc(), RankedTensorType::get({}, type.getElementType()),
            inverseScale);
        g = b.create<MulOp>(
            fn.getLoc(), g,
            b.createOrFold<BroadcastInDimOp>(fn.getLoc(), type, inverse,
                                             ArrayRef<int64_t>{}));
      }
      results.push_back(g ? g : zerosLike(b, fn.getLoc(), arg.getType()));
    }
    unsigned firstGrad = ret.getNumOperands();
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    // setType (not setFunctionType) resizes the result attribute list.
    fn.setType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
    for (auto [k, arg] : llvm::enumerate(trainable)) {
      StringAttr param = fn.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), trainc::train::TrainDialect::kParamAttr);
      fn.setResultAttr(firstGrad + k, GraphDialect::kOutputAttr,
                       b.getStringAttr(param.getValue() + ".grad"));
      fn.setResultAttr(firstGrad + k, trainc::train::TrainDialect::kGradOfAttr,
                       param);
    }
    return success();
  }
};

} // namespace
