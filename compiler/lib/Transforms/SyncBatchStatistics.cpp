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
    // Bessel's corrections (--unbiased-running-var) of the variances, now
    // of the global batch: c / (c - 1) of a rank's count c becomes
    // N c / (N c - 1).
    SmallVector<MulOp> corrections;
    module.walk([&](MulOp op) {
      if (op->hasAttr(TrainDialect::kBesselCorrectionAttr))
        corrections.push_back(op);
    });
    for (MulOp op : corrections) {
      ReduceMeanOp variance = globalStatistic(op.getLhs());
      if (!variance) {
        op.emitOpError("marked ")
            << TrainDialect::kBesselCorrectionAttr
            << " does not multiply a batch statistic (a marked reduce_mean, "
               "summed over the ranks and divided)";
        return signalPassFailure();
      }
      auto in = cast<RankedTensorType>(variance.getOperand().getType());
      double count = double(ranks);
      for (int64_t d : variance.getDims())
        count *= double(in.getDimSize(d));
      auto type = cast<RankedTensorType>(op.getRhs().getType());
      OpBuilder b(op);
      op->setOperand(
          1, b.create<ConstantOp>(
                 op.getLoc(), SplatElementsAttr::get(
                                  type, b.getFloatAttr(type.getElementType(),
                                                       count / (count - 1)))));
    }
  }

  /// The marked reduce_mean that `v` is the global form of:
  /// div(all_reduce(statistic), N); null when it is not.
  static ReduceMeanOp globalStatistic(Value v) {
    auto div = v.getDefiningOp<DivOp>();
    auto sum = div ? div.getLhs().getDefiningOp<AllReduceOp>() : AllReduceOp();
    auto mean =
        sum ? sum.getOperand().getDefiningOp<ReduceMeanOp>() : ReduceMeanOp();
    return mean && mean->hasAttr(TrainDialect::kBatchStatisticAttr)
               ? mean
               : ReduceMeanOp();
  }
};

} // namespace
