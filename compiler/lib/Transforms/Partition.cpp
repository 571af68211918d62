//===- Partition.cpp - The per-rank program of a device mesh --------------===//
//
// See Partition in Passes.td and Partition.h. Tensor parallelism comes
// first (ShardAxis.cpp): the step's computation is split over the tensor
// axis, and its gradients come out whole. Then data parallelism: the program is
// already one rank's step on one rank's part of the batch, so partitioning it
// marks the data inputs and batched outputs as split over the `data` axis and
// averages the loss and the gradients across it. ZeRO then splits what data
// parallelism replicates: the gradients (here) and the parameters (here, stage
// 3), each along dimension 0 into padded parts; the optimizer phase splits its
// state the same way (`graph.sharding` with `graph.global_shape` tells it).
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Partition.h"

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

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

RankedTensorType trainc::zeroPartType(RankedTensorType whole, int64_t ranks) {
  SmallVector<int64_t> shape(whole.getShape());
  shape[0] = (shape[0] + ranks - 1) / ranks;
  return whole.clone(shape);
}

Value trainc::padWithZeros(OpBuilder &b, Location loc, Value v, int64_t dim,
                           int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  if (size == type.getDimSize(dim))
    return v;
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size - shape[dim];
  auto padType = type.clone(shape);
  Value zeros = b.create<ConstantOp>(
      loc, SplatElementsAttr::get(
               padType, cast<TypedAttr>(b.getZeroAttr(type.getElementType()))));
  return b.create<ConcatenateOp>(loc, ValueRange{v, zeros}, dim);
}

Value trainc::padToParts(OpBuilder &b, Location loc, Value v, int64_t ranks) {
  auto type = cast<RankedTensorType>(v.getType());
  return padWithZeros(b, loc, v, 0,
                      zeroPartType(type, ranks).getDimSize(0) * ranks);
}

Value trainc::gatherParts(OpBuilder &b, Location loc, Value part,
                          RankedTensorType whole, StringRef axis) {
  auto partType = cast<RankedTensorType>(part.getType());
  SmallVector<int64_t> padded(whole.getShape());
  padded[0] =
      partType.getDimSize(0) * getMesh(b.getBlock()->getParentOp()).size(axis);
  Value gathered = b.create<AllGatherOp>(loc, whole.clone(padded), part,
                                         b.getStringAttr(axis));
  if (padded[0] == whole.getDimSize(0))
    return gathered;
  SmallVector<int64_t> start(whole.getRank(), 0), strides(whole.getRank(), 1);
  return b.create<SliceOp>(loc, gathered, start, whole.getShape(), strides);
}

SmallVector<NamedAttribute, 2>
trainc::partAttributes(RankedTensorType whole, StringRef axis, int64_t dim) {
  Builder b(whole.getContext());
  SmallVector<Attribute> dims(whole.getRank(), b.getStringAttr(""));
  dims[dim] = b.getStringAttr(axis);
  return {b.getNamedAttr(GraphDialect::kShardingAttr, b.getArrayAttr(dims)),
          b.getNamedAttr(GraphDialect::kGlobalShapeAttr,
                         b.getDenseI64ArrayAttr(whole.getShape()))};
}

std::pair<int64_t, StringRef> trainc::splitOf(ArrayAttr sharding) {
  if (sharding)
    for (auto [d, a] : llvm::enumerate(sharding))
      if (!cast<StringAttr>(a).getValue().empty())
        return {int64_t(d), cast<StringAttr>(a).getValue()};
  return {-1, StringRef()};
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
    if (data > 1 && !dataParallel) {
      module.emitError("partition: the mesh's data axis has ")
          << data << " ranks but no strategy uses it: add --data-parallel";
      return signalPassFailure();
    }
    if (syncBatchNorm && (!dataParallel || data < 2)) {
      module.emitError("partition: sync-batch-norm needs data-parallel on a "
                       "data axis of at least 2 ranks");
      return signalPassFailure();
    }
    auto fn = module.lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      module.emitError("partition: no function @main");
      return signalPassFailure();
    }
    if (tensorParallel && tensor == 1) {
      module.emitError("partition: tensor-parallel needs a mesh whose "
                       "tensor axis has more than 1 rank (as tensor=2)");
      return signalPassFailure();
    }
    if (tensor == 1) {
      // Nothing to split: annotations for the tensor axis are moot.
      fn.walk(
          [](Operation *op) { op->removeAttr(GraphDialect::kShardingAttr); });
    }
    if (parsed->numRanks() == 1)
      return;
    Builder b(module.getContext());
    SmallVector<NamedAttribute> axes;
    for (auto [name, size] : parsed->axes)
      axes.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(size)));
    module->setAttr(GraphDialect::kMeshAttr, b.getDictionaryAttr(axes));

    if (tensor > 1) {
      if (tensorParallel)
        trainc::seedMegatron(fn, tensor);
      // Annotated ops, or arguments (which shardAlongAxis refuses).
      bool annotated = llvm::any_of(fn.getArguments(), [&](BlockArgument arg) {
        return fn.getArgAttr(arg.getArgNumber(), GraphDialect::kShardingAttr) !=
               nullptr;
      });
      fn.walk([&](Operation *op) {
        annotated |= op->hasAttr(GraphDialect::kShardingAttr);
      });
      if (!annotated) {
        module.emitError("partition: the mesh's tensor axis has ")
            << tensor
            << " ranks but nothing is split over it: add --tensor-parallel "
               "(which found no attention heads or MLP features that "
            << tensor << " divides, if it was given) or annotate ops with "
            << GraphDialect::kShardingAttr;
        return signalPassFailure();
      }
      // ZeRO splits the parameters over the data axis instead.
      if (failed(trainc::shardAlongAxis(fn, "tensor", tensor,
                                        /*splitParameters=*/zero == 0)))
        return signalPassFailure();
    }
    if (data > 1 && failed(splitBatch(fn, data)))
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
    fn.walk([&](RandomOpInterface op) {
      if (op.drawsMasks())
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

    std::optional<unsigned> loss;
    // Averaged whole; of those, split afterwards (ZeRO-1); reduced straight
    // into parts (ZeRO-2 and 3).
    SmallVector<unsigned> averaged, slicedAfter, scattered;
    // Updates the forward pass makes, averaged in buckets of their own (the
    // forward's values, apart from the backward's gradients).
    SmallVector<unsigned> statistics;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      Value v = ret.getOperand(i);
      auto type = cast<RankedTensorType>(v.getType());
      if (fn.getResultAttr(i, TrainDialect::kLossAttr)) {
        loss = i;
        continue;
      }
      // Running statistics: each rank's forward normalizes with its own
      // batch's statistics, as PyTorch's DistributedDataParallel does, and
      // the new running values are averaged so that every rank keeps the
      // same ones (DDP broadcasts rank 0's instead).
      if (TrainDialect::isForwardUpdate(fn, i)) {
        statistics.push_back(i);
        continue;
      }
      bool grad = fn.getResultAttr(i, TrainDialect::kGradOfAttr) != nullptr;
      if (grad && zero >= 2 && type.getRank() > 0) {
        scattered.push_back(i);
        continue;
      }
      if (grad && zero == 1 && type.getRank() > 0)
        slicedAfter.push_back(i);
      if (grad) {
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
    if (!loss)
      return fn.emitError("partition: data parallelism needs a training "
                          "step: no result is marked train.loss");
    // The loss (a metric) on its own: the buckets hold gradients only.
    averageInBuckets(fn, ret, {*loss}, ranks);
    // Statistics of the global batch (sync-batch-norm) are already the same
    // on every rank: averaging them would only round them again.
    if (!syncBatchNorm)
      averageInBuckets(fn, ret, statistics, ranks);
    if (zero == 3)
      splitParameters(fn, ranks);
    averageInBuckets(fn, ret, averaged, ranks);
    for (unsigned i : slicedAfter) {
      Value whole = ret.getOperand(i);
      auto type = cast<RankedTensorType>(whole.getType());
      OpBuilder b(fn.getContext());
      b.setInsertionPointAfterValue(whole);
      Value padded = trainc::padToParts(b, fn.getLoc(), whole, ranks);
      ret.setOperand(i, b.create<ShardSliceOp>(
                            fn.getLoc(), trainc::zeroPartType(type, ranks),
                            padded, b.getStringAttr("data")));
      markPart(fn, i, type, /*result=*/true);
    }
    scatterInBuckets(fn, ret, scattered, ranks);
    fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                                 ret.getOperandTypes()));
    return success();
  }

  /// Marks result (or argument) `index` of `fn` as this rank's part of a
  /// tensor of type `whole`, split along dimension 0 over `data`.
  void markPart(func::FuncOp fn, unsigned index, RankedTensorType whole,
                bool result) {
    for (NamedAttribute attr : trainc::partAttributes(whole, "data")) {
      if (result)
        fn.setResultAttr(index, attr.getName(), attr.getValue());
      else
        fn.setArgAttr(index, attr.getName(), attr.getValue());
    }
  }

  /// ZeRO-3: every trainable parameter of rank >= 1 becomes this rank's
  /// part; each op that reads it gets its own all_gather (and a slice that
  /// drops the padding) just before it.
  void splitParameters(func::FuncOp fn, int64_t ranks) {
    llvm::StringSet<> trainable;
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (auto param =
              fn.getResultAttrOfType<StringAttr>(i, TrainDialect::kGradOfAttr))
        trainable.insert(param.getValue());
    Location loc = fn.getLoc();
    for (BlockArgument arg : fn.getBody().front().getArguments()) {
      auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  TrainDialect::kParamAttr);
      auto whole = cast<RankedTensorType>(arg.getType());
      if (!name || !trainable.contains(name.getValue()) || whole.getRank() == 0)
        continue;
      SmallVector<Operation *> users;
      for (Operation *user : arg.getUsers())
        if (!llvm::is_contained(users, user))
          users.push_back(user);
      RankedTensorType part = trainc::zeroPartType(whole, ranks);
      arg.setType(part);
      markPart(fn, arg.getArgNumber(), whole, /*result=*/false);
      for (Operation *user : users) {
        OpBuilder b(user);
        user->replaceUsesOfWith(
            arg, trainc::gatherParts(b, loc, arg, whole, "data"));
      }
    }
  }

  /// Groups the results in `indices` into buckets of one element type, at
  /// most bucketBytes each (`bytesOf` a member), in the order the values
  /// are computed. `after[k]` is the op after which bucket k is complete
  /// (null: the block's start).
  SmallVector<SmallVector<unsigned>>
  bucketsInComputeOrder(func::FuncOp fn, func::ReturnOp ret,
                        ArrayRef<unsigned> indices,
                        function_ref<int64_t(RankedTensorType)> bytesOf,
                        SmallVectorImpl<Operation *> &after) {
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
      int64_t bytes = bytesOf(type);
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
    after.clear();
    for (ArrayRef<unsigned> bucket : buckets) {
      Operation *last = nullptr;
      for (unsigned i : bucket)
        if (Operation *def = ret.getOperand(i).getDefiningOp())
          if (!last || position.lookup(def) > position.lookup(last))
            last = def;
      after.push_back(last);
    }
    return buckets;
  }

  /// A builder after `last` (a bucket's last member), or at the start of
  /// `body` when every member is an argument.
  static OpBuilder builderAfter(Operation *last, Block &body) {
    OpBuilder b(body.getParent()->getContext());
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(&body);
    return b;
  }

  static int64_t bytesOf(RankedTensorType type) {
    return type.getNumElements() *
           int64_t(elementStorageBytes(type.getElementType()));
  }

  /// Replaces each result in `indices` by its mean over the data axis:
  /// buckets of one element type, at most bucketBytes each, in the order
  /// the values are computed; per bucket one all_reduce and one divide.
  void averageInBuckets(func::FuncOp fn, func::ReturnOp ret,
                        ArrayRef<unsigned> indices, int64_t ranks) {
    Block &body = fn.getBody().front();
    SmallVector<Operation *> after;
    SmallVector<SmallVector<unsigned>> buckets =
        bucketsInComputeOrder(fn, ret, indices, bytesOf, after);
    Location loc = fn.getLoc();
    for (auto [bucket, last] : llvm::zip(buckets, after)) {
      OpBuilder b = builderAfter(last, body);
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

  /// ZeRO-2 and 3: replaces each result in `indices` (gradients of rank
  /// >= 1) by this rank's part of its mean over the data axis. Buckets as
  /// averageInBuckets; each member is padded to whole parts and laid out
  /// [rank][its part], the members side by side, so that one
  /// reduce_scatter gives every rank its part of every member.
  void scatterInBuckets(func::FuncOp fn, func::ReturnOp ret,
                        ArrayRef<unsigned> indices, int64_t ranks) {
    Block &body = fn.getBody().front();
    SmallVector<Operation *> after;
    SmallVector<SmallVector<unsigned>> buckets = bucketsInComputeOrder(
        fn, ret, indices,
        [&](RankedTensorType type) {
          return bytesOf(trainc::zeroPartType(type, ranks)) * ranks;
        },
        after);
    Location loc = fn.getLoc();
    for (auto [bucket, last] : llvm::zip(buckets, after)) {
      OpBuilder b = builderAfter(last, body);
      Type element = cast<RankedTensorType>(ret.getOperand(bucket[0]).getType())
                         .getElementType();
      // Each member as [ranks, its part's elements].
      SmallVector<Value> rows;
      SmallVector<RankedTensorType> wholes;
      int64_t width = 0;
      for (unsigned i : bucket) {
        Value v = ret.getOperand(i);
        auto whole = cast<RankedTensorType>(v.getType());
        int64_t n = trainc::zeroPartType(whole, ranks).getNumElements();
        rows.push_back(
            b.create<ReshapeOp>(loc, RankedTensorType::get({ranks, n}, element),
                                trainc::padToParts(b, loc, v, ranks)));
        wholes.push_back(whole);
        width += n;
      }
      Value joined = rows.size() == 1
                         ? rows[0]
                         : b.create<ConcatenateOp>(loc, rows, 1).getResult();
      Value flat = b.create<ReshapeOp>(
          loc, RankedTensorType::get({ranks * width}, element), joined);
      auto partFlat = RankedTensorType::get({width}, element);
      Value sum = b.create<ReduceScatterOp>(loc, partFlat, flat,
                                            b.getStringAttr("data"));
      Value count = b.create<ConstantOp>(
          loc, SplatElementsAttr::get(partFlat,
                                      b.getFloatAttr(element, double(ranks))));
      Value mean = b.create<DivOp>(loc, sum, count);
      int64_t offset = 0;
      for (auto [i, whole] : llvm::zip(bucket, wholes)) {
        RankedTensorType part = trainc::zeroPartType(whole, ranks);
        int64_t n = part.getNumElements();
        Value piece = mean;
        if (n != width)
          piece = b.create<SliceOp>(loc, mean, ArrayRef<int64_t>{offset},
                                    ArrayRef<int64_t>{offset + n},
                                    ArrayRef<int64_t>{1});
        ret.setOperand(i, b.create<ReshapeOp>(loc, part, piece).getResult());
        markPart(fn, i, whole, /*result=*/true);
        offset += n;
      }
    }
  }
};

} // namespace
