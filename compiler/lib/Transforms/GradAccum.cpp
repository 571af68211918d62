//===- GradAccum.cpp - Micro-batches inside one training step -------------===//
//
// See GradAccum in Passes.td. The step's ops (forward and backward) are
// cloned once per extra micro-batch; the original ops become micro-batch 0.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace trainc {
#define GEN_PASS_DEF_GRADACCUM
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

struct GradAccumPass : public trainc::impl::GradAccumBase<GradAccumPass> {
  using GradAccumBase::GradAccumBase;

  void runOnOperation() override {
    if (microBatches < 1) {
      getOperation().emitError("grad-accum: micro-batches must be at least 1");
      return signalPassFailure();
    }
    if (microBatches == 1)
      return;
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("grad-accum: no function @main");
      return signalPassFailure();
    }
    if (failed(split(fn)))
      signalPassFailure();
  }

  LogicalResult split(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    int64_t k = microBatches;

    // Data inputs and their common micro-batch size.
    SmallVector<BlockArgument> inputs;
    int64_t batch = -1;
    for (BlockArgument arg : body.getArguments()) {
      if (!fn.getArgAttr(arg.getArgNumber(), GraphDialect::kInputAttr))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      if (type.getRank() == 0 || (batch >= 0 && type.getDimSize(0) != batch))
        return fn.emitError("grad-accum: input ")
               << arg.getArgNumber() << " of type " << type
               << " does not have the micro-batch size "
               << (batch >= 0 ? std::to_string(batch) : std::string("?"))
               << " as its leading dimension";
      batch = type.getDimSize(0);
      inputs.push_back(arg);
    }
    if (inputs.empty())
      return fn.emitError("grad-accum: @main has no data inputs to split");

    // Outputs: the loss and the gradients are averaged, batched outputs
    // concatenated. An update the forward pass makes (a running statistic)
    // is chained: each micro-batch reads the value the one before it left,
    // as PyTorch's forward passes update their buffers one after another.
    std::optional<unsigned> lossIndex;
    SmallVector<bool> averaged(ret.getNumOperands(), false);
    SmallVector<std::optional<unsigned>> chained(ret.getNumOperands());
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      bool loss = fn.getResultAttr(i, trainc::train::TrainDialect::kLossAttr) !=
                  nullptr;
      if (loss)
        lossIndex = i;
      averaged[i] =
          loss || fn.getResultAttr(i, trainc::train::TrainDialect::kGradOfAttr);
      if (trainc::train::TrainDialect::isForwardUpdate(fn, i)) {
        chained[i] = trainc::train::TrainDialect::updatedArgument(fn, i);
        continue;
      }
      if (!averaged[i] && (type.getRank() == 0 || type.getDimSize(0) != batch))
        return fn.emitError("grad-accum: output ")
               << i << " (" << type
               << ") is neither the loss, a gradient nor batched along "
                  "dimension 0";
    }
    if (!lossIndex)
      return fn.emitError("grad-accum: no result is marked train.loss (run "
                          "--trainc-infer-signature first)");

    // Widen the inputs; micro-batch 0 reads the first slice.
    OpBuilder b(&body, body.begin());
    SmallVector<Operation *> step;
    for (Operation &op : body.without_terminator())
      step.push_back(&op);
    auto sliceOf = [&](BlockArgument arg, int64_t index) {
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
          strides(type.getRank(), 1);
      start[0] = index * batch;
      limit[0] = (index + 1) * batch;
      return b.create<SliceOp>(fn.getLoc(), arg, start, limit, strides)
          .getResult();
    };
    SmallVector<Value> firstSlices;
    for (BlockArgument arg : inputs) {
      auto type = cast<RankedTensorType>(arg.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = batch * k;
      arg.setType(RankedTensorType::get(shape, type.getElementType()));
      Value slice = sliceOf(arg, 0);
      arg.replaceAllUsesExcept(slice, slice.getDefiningOp());
      firstSlices.push_back(slice);
    }

    // Micro-batches 1 .. K-1: clones of the step's ops (forward and
    // backward) on their slices, one after the other. The loss and the
    // gradients are summed as each micro-batch ends, so only one
    // micro-batch's activations and one running sum are alive at a time.
    SmallVector<Value> running(ret.getOperands());
    SmallVector<SmallVector<Value>> batched(ret.getNumOperands());
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (!averaged[i] && !chained[i])
        batched[i].push_back(ret.getOperand(i));
    b.setInsertionPoint(ret);
    for (int64_t m = 1; m < k; ++m) {
      IRMapping mapping;
      for (auto [arg, first] : llvm::zip(inputs, firstSlices))
        mapping.map(first, sliceOf(arg, m));
      for (unsigned i = 0; i < ret.getNumOperands(); ++i)
        if (chained[i])
          mapping.map(body.getArgument(*chained[i]), running[i]);
      for (Operation *op : step) {
        Operation *clone = b.clone(*op, mapping);
        // Each micro-batch draws its own dropout masks (its backward reads
        // the mask of its own forward, or draws it again from the same
        // seed: attention's).
        if (auto random = dyn_cast<RandomOpInterface>(clone);
            random && random.drawsMasks())
          random.setSeed(random.getSeed() +
                         uint64_t(m) * trainc::kMicroBatchSeedStride);
      }
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        Value v = mapping.lookupOrDefault(ret.getOperand(i));
        if (averaged[i])
          running[i] = b.create<AddOp>(fn.getLoc(), running[i], v);
        else if (chained[i])
          running[i] = v;
        else
          batched[i].push_back(v);
      }
    }

    // Combine: the means of the sums, the last micro-batch's updates, the
    // concatenation of the rest.
    SmallVector<Value> results;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      if (chained[i]) {
        results.push_back(running[i]);
        continue;
      }
      if (averaged[i]) {
        auto type = cast<RankedTensorType>(running[i].getType());
        Value count = b.create<ConstantOp>(
            fn.getLoc(),
            SplatElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), double(k))));
        results.push_back(b.create<DivOp>(fn.getLoc(), running[i], count));
        continue;
      }
      results.push_back(
          b.create<ConcatenateOp>(fn.getLoc(), batched[i], 0).getResult());
    }
    ret->setOperands(results);
    fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
    return success();
  }
};

} // namespace
