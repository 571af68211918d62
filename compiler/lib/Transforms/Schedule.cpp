//===- Schedule.cpp - Collectives that overlap with compute ---------------===//
//
// See Schedule in Passes.td. The program order is the block's order; this
// pass changes it only around collectives: the ops that move or scale a
// collective's result sink to their first user, each collective splits into
// a start where it was and a done just before its (now late) first user,
// and ZeRO-3's gathers start one gather ahead.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_SCHEDULE
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

bool isCollective(Operation *op) {
  return isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op);
}

/// Ops that only move or scale a value (what follows a collective: the
/// divide by the number of ranks, slices and reshapes back to each
/// gradient, the padding, this rank's part).
bool movesOrScales(Operation *op) {
  return isa<DivOp, SliceOp, ReshapeOp, ShardSliceOp, ConcatenateOp, ConvertOp>(
      op);
}

/// The first op of `block` that uses `v` (the terminator included).
Operation *firstUser(Value v, Block &block) {
  Operation *first = nullptr;
  for (Operation *user : v.getUsers()) {
    Operation *inBlock = block.findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

struct SchedulePass : public trainc::impl::ScheduleBase<SchedulePass> {
  using ScheduleBase::ScheduleBase;

  void runOnOperation() override {
    if (!overlap)
      return;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.getBody().empty())
        schedule(fn.getBody().front());
  }

  void schedule(Block &block) {
    // 1. What a collective's result flows through before anything computes
    //    with it sinks to just before its first user: walking backwards, a
    //    mover whose operands come (through movers) from a collective.
    llvm::DenseSet<Operation *> downstream;
    for (Operation &op : block.without_terminator()) {
      if (isCollective(&op)) {
        downstream.insert(&op);
        continue;
      }
      if (!movesOrScales(&op))
        continue;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && downstream.contains(def)) {
          downstream.insert(&op);
          break;
        }
    }
    SmallVector<Operation *> movers;
    for (Operation &op : block.without_terminator())
      if (downstream.contains(&op) && !isCollective(&op))
        movers.push_back(&op);
    for (Operation *op : llvm::reverse(movers)) {
      Operation *first = nullptr;
      for (Value result : op->getResults())
        if (Operation *user = firstUser(result, block))
          if (!first || user->isBeforeInBlock(first))
            first = user;
      if (first && op->getNextNode() != first)
        op->moveBefore(first);
    }

    // 2. Each collective: a start where it is, a done before its first user.
    SmallVector<Operation *> collectives;
    for (Operation &op : block.without_terminator())
      if (isCollective(&op))
        collectives.push_back(&op);
    SmallVector<std::pair<Operation *, Operation *>> gathers; // start, done
    for (Operation *op : collectives) {
      OpBuilder b(op);
      Value operand = op->getOperand(0);
      Type type = op->getResult(0).getType();
      StringAttr axis = op->getAttrOfType<StringAttr>("axis");
      Operation *start;
      if (isa<AllReduceOp>(op))
        start = b.create<AllReduceStartOp>(op->getLoc(), type, operand, axis);
      else if (isa<ReduceScatterOp>(op))
        start =
            b.create<ReduceScatterStartOp>(op->getLoc(), type, operand, axis);
      else
        start = b.create<AllGatherStartOp>(op->getLoc(), type, operand, axis);
      Operation *first = firstUser(op->getResult(0), block);
      OpBuilder at(first ? first : block.getTerminator());
      auto done = at.create<CollectiveDoneOp>(op->getLoc(), type,
                                              start->getResult(0), operand);
      op->getResult(0).replaceAllUsesWith(done.getResult());
      op->erase();
      if (isa<AllGatherStartOp>(start) && isa<BlockArgument>(operand))
        gathers.push_back({start, done});
    }

    // 3. Prefetch: a gather of a parameter (its operand an argument, ready
    //    from the start) begins right after the previous gather's done.
    for (size_t k = 1; k < gathers.size(); ++k) {
      auto [start, done] = gathers[k];
      Operation *previousDone = gathers[k - 1].second;
      if (previousDone->isBeforeInBlock(start))
        start->moveAfter(previousDone);
    }
  }
};

} // namespace
