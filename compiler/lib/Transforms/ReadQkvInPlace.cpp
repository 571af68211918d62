//===- ReadQkvInPlace.cpp - Attention reads q, k, v from the projection ---===//
//
// See ReadQkvInPlace in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_READQKVINPLACE
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// One of query, key and value as `reshape(slice(source))`: the slice keeps
/// every dimension of `source` whole but the last, of which it takes
/// [begin, begin + width), and the reshape makes that [B, S, H, D].
struct Piece {
  Value source;
  int64_t begin, width;
  ReshapeOp reshape;
  SliceOp slice;
};

std::optional<Piece> pieceOf(Value v) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto slice = reshape.getOperand().getDefiningOp<SliceOp>();
  if (!slice)
    return std::nullopt;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(slice.getOperand().getType()).getShape();
  ArrayRef<int64_t> start = slice.getStart(), limit = slice.getLimit(),
                    strides = slice.getStrides();
  int64_t last = int64_t(shape.size()) - 1;
  if (last < 0 || llvm::any_of(strides, [](int64_t s) { return s != 1; }))
    return std::nullopt;
  for (int64_t d = 0; d < last; ++d)
    if (start[d] != 0 || limit[d] != shape[d])
      return std::nullopt;
  return Piece{slice.getOperand(), start[last], limit[last] - start[last],
               reshape, slice};
}

/// The fused projection that `op`'s query, key and value (sequence-major
/// [B, S, H, D]) are consecutive slices of, its last dimension exactly
/// the three: its value and [Hq, Hk]; or nothing.
template <typename Op>
std::optional<std::pair<Value, std::array<int64_t, 2>>> fusedSource(Op op) {
  if (op.getQkvHeads() || !op.isSeqMajor(0) || !op.isSeqMajor(1) ||
      !op.isSeqMajor(2))
    return std::nullopt;
  std::optional<Piece> q = pieceOf(op.getQuery()), k = pieceOf(op.getKey()),
                       v = pieceOf(op.getValue());
  if (!q || !k || !v || q->source != k->source || q->source != v->source)
    return std::nullopt;
  ArrayRef<int64_t> qs = op.getQuery().getType().getShape(),
                    ks = op.getKey().getType().getShape(),
                    vs = op.getValue().getType().getShape();
  int64_t d = qs[3];
  int64_t total = cast<RankedTensorType>(q->source.getType()).getShape().back();
  // The pieces in order, each whole heads of one head size (its width H *
  // D, so that the source's leading dimensions flatten to B * S: the
  // reshapes keep the row-major order), q's [B, S] shared, at least one
  // head each.
  if (ks[3] != d || vs[3] != d || ks[0] != qs[0] || ks[1] != qs[1] ||
      vs[0] != qs[0] || vs[1] != qs[1] || qs[2] < 1 || ks[2] < 1 ||
      q->width != qs[2] * d || k->width != ks[2] * d || v->width != vs[2] * d ||
      q->begin != 0 || k->begin != q->width ||
      v->begin != k->begin + k->width || v->width != k->width ||
      v->begin + v->width != total)
    return std::nullopt;
  return std::make_pair(q->source, std::array<int64_t, 2>{qs[2], ks[2]});
}

/// The concatenate that joins `grad`'s three results along its last
/// dimension, each through one reshape of [B, S, H, D] (sequence-major) to
/// [..., H * D], in order: the fused projection's gradient; or null.
ConcatenateOp joinedGradients(AttentionGradOp grad) {
  ConcatenateOp concat;
  SmallVector<Operation *> reshapes;
  for (auto [i, r] : llvm::enumerate(grad.getGrads())) {
    if (!grad.isSeqMajor(4 + int(i)) || !r.hasOneUse())
      return nullptr;
    auto reshape = dyn_cast<ReshapeOp>(*r.getUsers().begin());
    if (!reshape || !reshape->hasOneUse())
      return nullptr;
    ArrayRef<int64_t> from = cast<RankedTensorType>(r.getType()).getShape(),
                      to = reshape.getType().getShape();
    auto c = dyn_cast<ConcatenateOp>(*reshape->getUsers().begin());
    if (to.empty() || to.back() != from[2] * from[3] || !c ||
        (concat && c != concat) || c->getNumOperands() != 3 ||
        c->getOperand(i) != reshape.getResult() ||
        int64_t(c.getDim()) != int64_t(to.size()) - 1)
      return nullptr;
    concat = c;
  }
  return concat;
}

struct ReadQkvInPlacePass
    : public trainc::impl::ReadQkvInPlaceBase<ReadQkvInPlacePass> {
  /// The [B, S, Hq + 2 Hk, D] views of each fused projection, each made
  /// once (one projection may be split into heads more than one way).
  DenseMap<std::pair<Value, Type>, Value> views;

  Value viewOf(Value source, ArrayRef<int64_t> qShape, int64_t heads) {
    auto type = RankedTensorType::get(
        {qShape[0], qShape[1], heads, qShape[3]},
        cast<RankedTensorType>(source.getType()).getElementType());
    auto [it, inserted] = views.try_emplace({source, type}, Value());
    if (!inserted)
      return it->second;
    OpBuilder b(source.getContext());
    Operation *producer = source.getDefiningOp();
    if (producer)
      b.setInsertionPointAfter(producer);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(source).getOwner());
    auto view = b.create<ReshapeOp>(source.getLoc(), type, source);
    if (producer)
      view->setDiscardableAttrs(producer->getDiscardableAttrDictionary());
    return it->second = view;
  }

  template <typename Op> void rewrite(Op op) {
    auto found = fusedSource(op);
    if (!found)
      return;
    auto [source, heads] = *found;
    SmallVector<Operation *> pieces;
    for (Value x : {op.getQuery(), op.getKey(), op.getValue()})
      pieces.push_back(x.getDefiningOp());
    Value view = viewOf(source, op.getQuery().getType().getShape(),
                        heads[0] + 2 * heads[1]);
    for (unsigned i = 0; i < 3; ++i)
      op->setOperand(i, view);
    op.setQkvHeads(ArrayRef<int64_t>(heads));
    if (auto grad = dyn_cast<AttentionGradOp>(op.getOperation()))
      writeInPlace(grad);
    // The slices and their reshapes go once nothing else reads them.
    for (Operation *reshape : pieces) {
      if (!reshape->use_empty())
        continue;
      Operation *slice = reshape->getOperand(0).getDefiningOp();
      reshape->erase();
      if (slice->use_empty())
        slice->erase();
    }
  }

  /// When the program concatenates `grad`'s results (the slices'
  /// gradient), `grad` writes them in their windows of one result instead,
  /// and that reshaped is the concatenation (C6 of graph.attention_grad).
  void writeInPlace(AttentionGradOp grad) {
    ConcatenateOp concat = joinedGradients(grad);
    if (!concat)
      return;
    OpBuilder b(grad);
    auto packed = b.create<AttentionGradOp>(
        grad.getLoc(), TypeRange{grad.getQuery().getType()}, grad.getQuery(),
        grad.getKey(), grad.getValue(), grad.getCotangent(), grad.getMask(),
        grad.getStats(), grad.getScaleAttr(), grad.getCausalAttr(),
        grad.getSoftcapAttr(), grad.getDropoutAttr(), grad.getSeedAttr(),
        grad.getDataSeedStrideAttr(), grad.getSeqMajorAttr(),
        grad.getQkvHeadsAttr(), grad.getHeadBlocksAttr());
    packed->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
    b.setInsertionPoint(concat);
    auto joined = b.create<ReshapeOp>(concat.getLoc(), concat.getType(),
                                      packed.getGrads()[0]);
    joined->setDiscardableAttrs(concat->getDiscardableAttrDictionary());
    concat.getResult().replaceAllUsesWith(joined.getResult());
    concat->erase();
    for (Value r : grad.getGrads())
      (*r.getUsers().begin())->erase(); // its one reshape, now unused
    grad->erase();
  }

  void runOnOperation() override {
    views.clear();
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto a = dyn_cast<AttentionOp>(op))
        rewrite(a);
      else
        rewrite(cast<AttentionGradOp>(op));
    }
  }
};

} // namespace
