//===- SplitFusedProjections.cpp - One projection per slice of a fused one ===//
//
// See SplitFusedProjections in Passes.td. Uses each dot_general's sharding
// rule to find which operand dimension makes the sliced result dimension.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_SPLITFUSEDPROJECTIONS
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// `v` sliced to [lo, hi) along `dim`, whole along the others.
Value sliceAlong(OpBuilder &b, Location loc, Value v, int64_t dim, int64_t lo,
                 int64_t hi) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
      strides(type.getRank(), 1);
  start[dim] = lo;
  limit[dim] = hi;
  return b.create<SliceOp>(loc, v, start, limit, strides);
}

/// The dimension `slice` takes part of, when it takes all of every other
/// with stride 1; else -1.
int64_t slicedDim(SliceOp slice) {
  ArrayRef<int64_t> shape = slice.getOperand().getType().getShape();
  int64_t dim = -1;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (slice.getStrides()[d] != 1)
      return -1;
    if (slice.getStart()[d] == 0 && slice.getLimit()[d] == shape[d])
      continue;
    if (dim >= 0)
      return -1;
    dim = d;
  }
  return dim;
}

/// `v`'s slice [lo, hi) along result dimension `dim`: for a broadcast, the
/// broadcast of its operand's slice (no whole broadcast made first).
Value sliceAddend(OpBuilder &b, Location loc, Value v, int64_t dim, int64_t lo,
                  int64_t hi) {
  if (auto broadcast = v.getDefiningOp<BroadcastInDimOp>()) {
    ArrayRef<int64_t> in = broadcast.getOperand().getType().getShape();
    for (auto [i, d] : llvm::enumerate(broadcast.getDims())) {
      if (d != dim || in[i] != broadcast.getType().getDimSize(dim))
        continue;
      Value piece =
          sliceAlong(b, loc, broadcast.getOperand(), int64_t(i), lo, hi);
      SmallVector<int64_t> shape(broadcast.getType().getShape());
      shape[dim] = hi - lo;
      return b.create<BroadcastInDimOp>(loc, broadcast.getType().clone(shape),
                                        piece, broadcast.getDims());
    }
  }
  return sliceAlong(b, loc, v, dim, lo, hi);
}

struct SplitFusedProjectionsPass
    : public trainc::impl::SplitFusedProjectionsBase<
          SplitFusedProjectionsPass> {
  void runOnOperation() override {
    SmallVector<DotGeneralOp> dots;
    getOperation().walk([&](DotGeneralOp dot) { dots.push_back(dot); });
    for (DotGeneralOp dot : dots)
      split(dot);
  }

  void split(DotGeneralOp dot) {
    // The fused value: the product, or the product plus a bias.
    Value fused = dot.getResult();
    AddOp add;
    Value addend;
    if (dot->hasOneUse())
      if ((add = dyn_cast<AddOp>(*dot->user_begin()))) {
        addend = add.getLhs() == fused ? add.getRhs() : add.getLhs();
        if (addend == fused)
          return;
        fused = add.getResult();
      }
    // Possibly seen through a reshape that keeps the sliced dimension
    // (a flattened [B*S, 3d] product viewed as [B, S, 3d]).
    ReshapeOp reshape;
    if (fused.hasOneUse())
      reshape = dyn_cast<ReshapeOp>(*fused.user_begin());
    Value sliced = reshape ? reshape.getResult() : fused;
    SmallVector<SliceOp> slices;
    int64_t dim = -1;
    for (Operation *user : sliced.getUsers()) {
      auto slice = dyn_cast<SliceOp>(user);
      int64_t d = slice ? slicedDim(slice) : -1;
      if (d < 0 || (dim >= 0 && d != dim))
        return;
      dim = d;
      slices.push_back(slice);
    }
    if (slices.size() < 2)
      return;
    int64_t slicedDim = dim;
    if (reshape) {
      // The fused dimension the reshape keeps whole as `dim`.
      ShardingRule view = reshape.getShardingRule();
      int64_t f = view.resultDims[0][dim];
      dim = f == ShardingRule::kNoFactor
                ? -1
                : ShardingRule::dimOf(view.operandDims[0], f);
      if (dim < 0 || reshape.getOperand().getType().getDimSize(dim) !=
                         reshape.getType().getDimSize(slicedDim))
        return;
    }
    // The operand dimension that makes the sliced result dimension.
    ShardingRule rule = dot.getShardingRule();
    int64_t factor = rule.resultDims[0][dim];
    if (factor == ShardingRule::kNoFactor)
      return;
    // A free dimension of one operand (a batching one is in both: left
    // alone).
    int64_t lhsDim = ShardingRule::dimOf(rule.operandDims[0], factor);
    int64_t rhsDim = ShardingRule::dimOf(rule.operandDims[1], factor);
    if ((lhsDim >= 0) == (rhsDim >= 0))
      return;
    unsigned operand = lhsDim >= 0 ? 0 : 1;
    int64_t operandDim = lhsDim >= 0 ? lhsDim : rhsDim;
    for (SliceOp slice : slices) {
      OpBuilder b(slice);
      Location loc = slice.getLoc();
      int64_t lo = slice.getStart()[slicedDim],
              hi = slice.getLimit()[slicedDim];
      SmallVector<Value> operands{dot.getLhs(), dot.getRhs()};
      operands[operand] =
          sliceAlong(b, loc, operands[operand], operandDim, lo, hi);
      Value piece = b.create<DotGeneralOp>(
          loc, operands[0], operands[1], dot.getLhsBatchingDimensions(),
          dot.getRhsBatchingDimensions(), dot.getLhsContractingDimensions(),
          dot.getRhsContractingDimensions(), dot.getTf32(), dot.getF32Result());
      if (add) {
        Value bias = sliceAddend(b, loc, addend, dim, lo, hi);
        piece = add.getLhs() == addend
                    ? b.create<AddOp>(loc, bias, piece).getResult()
                    : b.create<AddOp>(loc, piece, bias).getResult();
      }
      if (reshape)
        piece = b.create<ReshapeOp>(loc, slice.getType(), piece);
      slice.replaceAllUsesWith(piece);
      slice.erase();
    }
    if (reshape)
      reshape.erase();
    if (add)
      add.erase();
    dot.erase();
  }
};

} // namespace
