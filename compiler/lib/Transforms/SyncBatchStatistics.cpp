//===- SyncBatchStatistics.cpp - Batch norms over the global batch --------===//
//
// See SyncBatchStatistics in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_SYNCBATCHSTATISTICS
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;
using trainc::train::TrainDialect;

namespace {

struct SyncBatchStatisticsPass
    : public trainc::impl::SyncBatchStatisticsBase<SyncBatchStatisticsPass> {
  using SyncBatchStatisticsBase::SyncBatchStatisticsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 2) {
      module.emitError("sync-batch-statistics: needs a data axis of at least "
                       "2 ranks, not ")
          << ranks;
      return signalPassFailure();
    }
    SmallVector<ReduceMeanOp> statistics;
    module.walk([&](ReduceMeanOp op) {
      if (op->hasAttr(TrainDialect::kBatchStatisticAttr))
        statistics.push_back(op);
    });
    if (statistics.empty()) {
      module.emitError("sync-batch-statistics: the model has no batch "
                       "statistics to synchronize (the ONNX importer marks "
                       "those of a BatchNormalization in training mode; "
                       "this model has none)");
      return signalPassFailure();
    }
    for (ReduceMeanOp op : statistics) {
      // mean over the ranks = (sum over the ranks) / N.
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      Value local = op.getResult();
      auto type = cast<RankedTensorType>(local.getType());
      Value sum = b.create<AllReduceOp>(op.getLoc(), local, "data");
      Value n = b.create<ConstantOp>(
          op.getLoc(),
          SplatElementsAttr::get(
              type, b.getFloatAttr(type.getElementType(), double(ranks))));
      Value global = b.create<DivOp>(op.getLoc(), sum, n);
      local.replaceAllUsesExcept(global, sum.getDefiningOp());
    }
  }
};

} // namespace
