//===- Partition.cpp - The per-rank program of a device mesh --------------===//
//
// See Partition in Passes.td and Partition.h. Data parallelism is the one
// strategy so far: the program is already one rank's step on one rank's
// part of the batch, so partitioning it marks the data inputs and batched
// outputs as split over the `data` axis and averages the loss and the
// gradients across it.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Partition.h"

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace trainc {
#define GEN_PASS_DEF_PARTITION
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;
using trainc::train::TrainDialect;

std::optional<Mesh> trainc::parseMesh(StringRef text, std::string &error) {
  Mesh mesh;
  for (StringRef name : GraphDialect::meshAxisNames())
    mesh.axes.push_back({name, 1});
  llvm::SmallVector<StringRef> seen;
  SmallVector<StringRef> entries;
  text.split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef entry : entries) {
    auto [name, value] = entry.trim().split('=');
    name = name.trim();
    int64_t size = 0;
    int index = mesh.axisIndex(name);
    if (index < 0) {
      error = "--mesh '" + text.str() + "': unknown axis '" + name.str() +
              "' (axes: data, tensor)";
      return std::nullopt;
    }
    if (llvm::is_contained(seen, name)) {
      error = "--mesh '" + text.str() + "': axis '" + name.str() +
              "' is given twice";
      return std::nullopt;
    }
    if (value.trim().getAsInteger(10, size) || size < 1) {
      error = "--mesh '" + text.str() + "': axis '" + name.str() +
              "' needs a size >= 1 (as in data=2)";
      return std::nullopt;
    }
    seen.push_back(name);
    mesh.axes[index].second = size;
  }
  return mesh;
}

namespace {

struct PartitionPass : public trainc::impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::optional<Mesh> parsed = trainc::parseMesh(mesh, error);
    if (!parsed) {
      module.emitError("partition: ") << error;
      return signalPassFailure();
    }
    int64_t data = parsed->size("data"), tensor = parsed->size("tensor");
    if (tensor > 1) {
      module.emitError("partition: tensor parallelism is not implemented "
                       "yet: the mesh's tensor axis must be 1, not ")
          << tensor;
      return signalPassFailure();
    }
    if (data > 1 && !dataParallel) {
      module.emitError("partition: the mesh's data axis has ")
          << data << " ranks but no strategy uses it: add --data-parallel";
      return signalPassFailure();
    }
    if (parsed->numRanks() == 1)
      return;
    Builder b(module.getContext());
    SmallVector<NamedAttribute> axes;
    for (auto [name, size] : parsed->axes)
      axes.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(size)));
    module->setAttr(GraphDialect::kMeshAttr, b.getDictionaryAttr(axes));

    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      module.emitError("partition: no function @main");
      return signalPassFailure();
    }
    if (failed(splitBatch(fn, data)))
      signalPassFailure();
  }

  /// ["data", "", ...] for a value of `type`.
  ArrayAttr batchSharding(RankedTensorType type) {
    Builder b(type.getContext());
    SmallVector<Attribute> dims(type.getRank(), b.getStringAttr(""));
    dims[0] = b.getStringAttr("data");
    return b.getArrayAttr(dims);
  }

  LogicalResult splitBatch(func::FuncOp fn, int64_t ranks) {
    // Each rank draws the dropout masks of its own micro-batches: rank r's
    // micro-batch m is micro-batch r * K + m of one rank with --grad-accum
    // N * K, whose seeds step by kMicroBatchSeedStride (GradAccum.cpp).
    fn.walk([&](DropoutOp op) {
      op.setDataSeedStride(uint64_t(microBatches) *
                           trainc::kMicroBatchSeedStride);
    });

    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    int64_t batch = -1;
    for (BlockArgument arg : body.getArguments()) {
      if (!fn.getArgAttr(arg.getArgNumber(), GraphDialect::kInputAttr))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      if (type.getRank() == 0)
        return fn.emitError("partition: data input ")
               << arg.getArgNumber() << " (" << type
               << ") has no batch dimension to split over the data axis";
      batch = type.getDimSize(0);
      fn.setArgAttr(arg.getArgNumber(), GraphDialect::kShardingAttr,
                    batchSharding(type));
    }
    if (batch < 0)
      return fn.emitError("partition: @main has no data inputs to split "
                          "over the data axis");

    bool hasLoss = false;
    SmallVector<unsigned> averaged;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      Value v = ret.getOperand(i);
      auto type = cast<RankedTensorType>(v.getType());
      bool loss = fn.getResultAttr(i, TrainDialect::kLossAttr) != nullptr;
      hasLoss |= loss;
      if (loss || fn.getResultAttr(i, TrainDialect::kGradOfAttr)) {
        averaged.push_back(i);
        continue;
      }
      if (type.getRank() == 0 || type.getDimSize(0) != batch)
        return fn.emitError("partition: output ")
               << i << " (" << type
               << ") is neither the loss, a gradient nor batched along "
                  "dimension 0, so it has no data-parallel meaning";
      fn.setResultAttr(i, GraphDialect::kShardingAttr, batchSharding(type));
    }
    if (!hasLoss)
      return fn.emitError("partition: data parallelism needs a training "
                          "step: no result is marked train.loss");
    averageInBuckets(fn, ret, averaged, ranks);
    return success();
  }

  /// Replaces each result in `indices` by its mean over the data axis:
  /// buckets of one element type, at most bucketBytes each, in the order
  /// the values are computed; per bucket one all_reduce and one divide.
  void averageInBuckets(func::FuncOp fn, func::ReturnOp ret,
                        ArrayRef<unsigned> indices, int64_t ranks) {
    Block &body = fn.getBody().front();
    DenseMap<Operation *, unsigned> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = unsigned(i);
    auto orderOf = [&](Value v) -> unsigned {
      Operation *def = v.getDefiningOp();
      return def ? position.lookup(def) + 1 : 0;
    };
    SmallVector<unsigned> order(indices);
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return orderOf(ret.getOperand(a)) < orderOf(ret.getOperand(b));
    });
    // Buckets fill in that order, one open bucket per element type.
    llvm::MapVector<Type, SmallVector<unsigned>> open;
    DenseMap<Type, int64_t> openBytes;
    SmallVector<SmallVector<unsigned>> buckets;
    for (unsigned i : order) {
      auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
      Type element = type.getElementType();
      int64_t bytes =
          type.getNumElements() * int64_t(elementStorageBytes(element));
      SmallVector<unsigned> &members = open[element];
      if (!members.empty() &&
          (bucketBytes <= 0 || openBytes[element] + bytes > bucketBytes)) {
        buckets.push_back(std::move(members));
        members.clear();
        openBytes[element] = 0;
      }
      members.push_back(i);
      openBytes[element] += bytes;
    }
    for (auto &entry : open)
      if (!entry.second.empty())
        buckets.push_back(std::move(entry.second));

    Location loc = fn.getLoc();
    for (ArrayRef<unsigned> bucket : buckets) {
      // After the last member is computed.
      Operation *last = nullptr;
      for (unsigned i : bucket)
        if (Operation *def = ret.getOperand(i).getDefiningOp())
          if (!last || position.lookup(def) > position.lookup(last))
            last = def;
      OpBuilder b(fn.getContext());
      if (last)
        b.setInsertionPointAfter(last);
      else
        b.setInsertionPointToStart(&body);
      auto mean = [&](Value v) -> Value {
        auto type = cast<RankedTensorType>(v.getType());
        Value sum = b.create<AllReduceOp>(loc, v, "data");
        Value count = b.create<ConstantOp>(
            loc,
            SplatElementsAttr::get(
                type, b.getFloatAttr(type.getElementType(), double(ranks))));
        return b.create<DivOp>(loc, sum, count);
      };
      if (bucket.size() == 1) {
        ret.setOperand(bucket[0], mean(ret.getOperand(bucket[0])));
        continue;
      }
      // Flattened and joined, averaged once, sliced back.
      Type element = cast<RankedTensorType>(ret.getOperand(bucket[0]).getType())
                         .getElementType();
      SmallVector<Value> flat;
      for (unsigned i : bucket) {
        Value v = ret.getOperand(i);
        int64_t n = cast<RankedTensorType>(v.getType()).getNumElements();
        auto flatType = RankedTensorType::get({n}, element);
        flat.push_back(v.getType() == flatType
                           ? v
                           : b.create<ReshapeOp>(loc, flatType, v).getResult());
      }
      Value joined = b.create<ConcatenateOp>(loc, flat, 0);
      Value averagedBucket = mean(joined);
      int64_t offset = 0;
      for (unsigned i : bucket) {
        auto type = cast<RankedTensorType>(ret.getOperand(i).getType());
        int64_t n = type.getNumElements();
        Value part = b.create<SliceOp>(
            loc, averagedBucket, ArrayRef<int64_t>{offset},
            ArrayRef<int64_t>{offset + n}, ArrayRef<int64_t>{1});
        ret.setOperand(i,
                       part.getType() == type
                           ? part
                           : b.create<ReshapeOp>(loc, type, part).getResult());
        offset += n;
      }
    }
  }
};

} // namespace
