//===- RecognizeAttention.cpp - softmax(q k^T) v to graph.attention ------===//
//
// The attention pattern of the recognize phase (RecognizeComposites in
// Passes.td): scaled, optionally soft-capped and masked scores, a softmax
// over the keys, optionally dropout, and the product with the values, in
// any per-head layout its products read, become one graph.attention. Matching
// helpers are RecognizeUtil.h's; whether a mask is causal, CausalMask.cpp's.
//
//===----------------------------------------------------------------------===//

#include "RecognizeUtil.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace trainc::graph;
using namespace trainc::recognize;

namespace {

/// The dims of an operand of a per-head product (two batching dims, the
/// batch and the heads, one contracting dim, one free dim of any size and
/// any number of other free dims of size 1), in the order [batch, head,
/// free, contracting]; empty for any other product. [b, h, s, d] operands
/// give [0, 1, 2, 3]; [b, s, h, d] ones (an einsum over 'bqhd,bkhd->bhqk',
/// as Flax writes attention) [0, 2, 1, 3]; jax.nn.dot_product_attention's
/// [b, t, n, 1, h] queries [0, 2, 1, 4], with dim 3 a unit dim.
SmallVector<int64_t> headDims(Value operand, ArrayRef<int64_t> batch,
                              ArrayRef<int64_t> contract) {
  auto type = cast<RankedTensorType>(operand.getType());
  if (batch.size() != 2 || contract.size() != 1)
    return {};
  SmallVector<int64_t> dims(batch), free;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(batch, d) && d != contract[0] &&
        type.getDimSize(d) != 1)
      free.push_back(d);
  // One free dim: the one that is not of size 1, or, when all are (a
  // single query), the first.
  if (free.empty())
    for (int64_t d = 0; d < type.getRank() && free.empty(); ++d)
      if (!llvm::is_contained(batch, d) && d != contract[0])
        free.push_back(d);
  if (free.size() != 1)
    return {};
  dims.push_back(free[0]);
  dims.push_back(contract[0]);
  return dims;
}

/// `x` (an operand with head dims `dims`, as headDims gives them) as a
/// rank-4 [batch, head, free, contracting] tensor, or [batch, head,
/// contracting, free] with `contractedFirst`: a transpose that moves the
/// unit dims next to each other, then a reshape that drops them (each
/// nothing when it changes nothing).
Value toHeads(PatternRewriter &rewriter, Location loc, Value x,
              ArrayRef<int64_t> dims, bool contractedFirst = false) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> perm = {dims[0], dims[1]};
  perm.push_back(contractedFirst ? dims[3] : dims[2]);
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      perm.push_back(d);
  perm.push_back(contractedFirst ? dims[2] : dims[3]);
  Value moved = rewriter.createOrFold<TransposeOp>(loc, x, perm);
  SmallVector<int64_t> shape;
  for (int64_t d : {perm[0], perm[1], perm[2], perm.back()})
    shape.push_back(type.getDimSize(d));
  return rewriter.createOrFold<ReshapeOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), moved);
}

/// The dims of a rank-3 operand of a product with the heads folded into
/// its one batching dim (BLOOM's [b * h, s, d] operands): [batch, free,
/// contracting]; empty for any other product.
SmallVector<int64_t> foldedDims(Value operand, ArrayRef<int64_t> batch,
                                ArrayRef<int64_t> contract) {
  auto type = cast<RankedTensorType>(operand.getType());
  if (type.getRank() != 3 || batch.size() != 1 || contract.size() != 1 ||
      batch[0] == contract[0])
    return {};
  return {batch[0], 3 - batch[0] - contract[0], contract[0]};
}

/// `x`, a rank-3 operand with folded dims `dims` (foldedDims), as a rank-4
/// [b, h, free, contracting] tensor, or [b, h, contracting, free] with
/// `contractedFirst`: a transpose, then a reshape that splits the batch.
Value toHeadsFolded(PatternRewriter &rewriter, Location loc, Value x,
                    ArrayRef<int64_t> dims, int64_t b, int64_t h,
                    bool contractedFirst = false) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> perm = {dims[0], contractedFirst ? dims[2] : dims[1],
                               contractedFirst ? dims[1] : dims[2]};
  Value moved = rewriter.createOrFold<TransposeOp>(loc, x, perm);
  return rewriter.createOrFold<ReshapeOp>(
      loc,
      RankedTensorType::get(
          {b, h, type.getDimSize(perm[1]), type.getDimSize(perm[2])},
          type.getElementType()),
      moved);
}

/// `x` of the scores' shape (a mask or its condition) with only the
/// scores' head dims `dims` kept, as a rank-4 [b, h, q, k] tensor (the
/// others are 1 in the scores, so in `x` too).
Value scoresToHeads(PatternRewriter &rewriter, Location loc, Value x,
                    ArrayRef<int64_t> dims) {
  auto type = cast<RankedTensorType>(x.getType());
  if (type.getRank() == 4)
    return x;
  SmallVector<int64_t> shape;
  for (int64_t d : dims)
    shape.push_back(type.getDimSize(d));
  return rewriter.createOrFold<ReshapeOp>(
      loc, RankedTensorType::get(shape, type.getElementType()), x);
}

/// A mask operand of rank 4 for scores of `type`: `v` without a trailing
/// broadcast, its missing leading dims as 1.
Value rank4Mask(PatternRewriter &rewriter, Location loc, Value v,
                RankedTensorType type) {
  if (auto b = v.getDefiningOp<BroadcastInDimOp>()) {
    auto src = cast<RankedTensorType>(b.getOperand().getType());
    int64_t r = src.getRank();
    SmallVector<int64_t> trailing;
    for (int64_t d = 4 - r; d < 4; ++d)
      trailing.push_back(d);
    if (b.getDims() == ArrayRef<int64_t>(trailing)) {
      SmallVector<int64_t> shape(4 - r, 1);
      llvm::append_range(shape, src.getShape());
      return rewriter.createOrFold<ReshapeOp>(
          loc, RankedTensorType::get(shape, src.getElementType()),
          b.getOperand());
    }
  }
  return v;
}

/// An additive term of folded [b * h, q, k] scores as a rank-4 mask
/// operand, [b, h, q, k] with dims of size 1 kept: `v` without a broadcast
/// that only repeats dims of size 1, its batch split; null when its batch
/// is neither b * h nor 1. With `rewriter` null, only checks.
Value foldedMask(PatternRewriter *rewriter, Location loc, Value v, int64_t b,
                 int64_t h) {
  if (auto spread = v.getDefiningOp<BroadcastInDimOp>())
    if (spread.getDims() == ArrayRef<int64_t>{0, 1, 2})
      v = spread.getOperand();
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() != 3 ||
      (type.getDimSize(0) != b * h && type.getDimSize(0) != 1))
    return nullptr;
  if (!rewriter)
    return v;
  int64_t rows = type.getDimSize(0) == 1 ? 1 : b;
  int64_t heads = type.getDimSize(0) == 1 ? 1 : h;
  return rewriter->createOrFold<ReshapeOp>(
      loc,
      RankedTensorType::get(
          {rows, heads, type.getDimSize(1), type.getDimSize(2)},
          type.getElementType()),
      v);
}

/// Whether `v` leads to the scores' product through the ops that scale,
/// shift, soft-cap (tanh), reshape or transpose scores (a few levels deep):
/// which side of an add is the scores and which an additive mask.
bool reachesProduct(Value v, int depth = 8) {
  Operation *d = v.getDefiningOp();
  if (!d || depth == 0)
    return false;
  if (isa<DotGeneralOp>(d))
    return true;
  if (isa<ReshapeOp, TransposeOp, TanhOp>(d))
    return reachesProduct(d->getOperand(0), depth - 1);
  if (isa<MulOp, DivOp, AddOp>(d))
    return reachesProduct(d->getOperand(0), depth - 1) ||
           (!isa<DivOp>(d) && reachesProduct(d->getOperand(1), depth - 1));
  // A mask's select (a fill on one side) passes the scores on the other.
  if (auto sel = dyn_cast<SelectOp>(d)) {
    if (isMaskFill(sel.getOnTrue()))
      return reachesProduct(sel.getOnFalse(), depth - 1);
    if (isMaskFill(sel.getOnFalse()))
      return reachesProduct(sel.getOnTrue(), depth - 1);
  }
  return false;
}

/// `select(p != p, 0, p)` (PyTorch's scaled_dot_product_attention zeroes
/// the NaN rows a fully masked softmax produces): the select, or null.
/// graph.attention gives zeros for such rows itself, so the guard folds in.
Operation *nanToZeroGuard(Value v) {
  auto sel = v.getDefiningOp<SelectOp>();
  if (!sel || !hasOneUse(v))
    return nullptr;
  auto isNan = sel.getPred().getDefiningOp<CompareOp>();
  Value p = sel.getOnFalse();
  std::optional<double> zero = splatOf(sel.getOnTrue());
  if (!isNan || isNan.getDirection() != ComparisonDirection::NE ||
      isNan.getLhs() != p || isNan.getRhs() != p || !hasOneUse(isNan) ||
      !zero || *zero != 0.0)
    return nullptr;
  return sel;
}

/// The probabilities a product reads, from the product's operand down to
/// the softmax: dropout of them (taken over by graph.attention: its mask
/// is drawn by each element's index in the softmax's [b, h, q, k], which
/// neither the guard nor the fold changes), the NaN guard, and the reshape
/// that folds the heads into the batch (BLOOM drops out before it).
struct Probabilities {
  DropoutOp dropout;
  Operation *guard = nullptr;
  ReshapeOp fold;
  SoftmaxOp softmax;
  /// The op that reads the softmax's result (the guard's compare aside),
  /// or null when the product does.
  Operation *reader = nullptr;
};

std::optional<Probabilities> probabilitiesOf(Value v) {
  Probabilities p;
  auto step = [&](Operation *op, Value operand) {
    p.reader = op;
    v = operand;
  };
  // A dropout whose mask nothing else reads (no gradient yet: the
  // recognizer runs before autodiff), once.
  auto takeDropout = [&] {
    auto d = v.getDefiningOp<DropoutOp>();
    if (d && !p.dropout && hasOneUse(v) && d.getMask().use_empty()) {
      p.dropout = d;
      step(d, d.getOperand());
    }
  };
  takeDropout();
  if (Operation *guard = nanToZeroGuard(v)) {
    p.guard = guard;
    step(guard, guard->getOperand(2));
  }
  if (auto fold = v.getDefiningOp<ReshapeOp>(); fold && hasOneUse(v)) {
    p.fold = fold;
    step(fold, fold.getOperand());
    takeDropout();
  }
  p.softmax = v.getDefiningOp<SoftmaxOp>();
  if (!p.softmax)
    return std::nullopt;
  return p;
}

/// softmax(scale * q @ k^T [mask]) @ v -> graph.attention, also with the
/// NaN guard above between the softmax and the product, and with dropout
/// of the probabilities. The products may
/// read their operands in any per-head layout (headLayout: [b, h, s, d],
/// [b, s, h, d], ...), the probabilities in theirs, [b, h, q, k], from
/// either side of the second product; the operands are transposed into
/// graph.attention's layout and its result into the product's. The heads
/// may also be folded into one batch dim (BLOOM: [b * h, s, d] operands,
/// the softmax's [b, h, q, k] reshaped to [b * h, q, k]). Additive terms
/// of the scores (a mask, ALiBi's position biases, added before or after
/// the scores are unfolded) become one mask, their sum.
struct Attention : public OpRewritePattern<DotGeneralOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotGeneralOp op,
                                PatternRewriter &rewriter) const override {
    // The probabilities: a softmax (possibly behind the guard and
    // dropout) over k, read in its own [b, h, q, k] order (unit dims
    // aside) with k contracted, as the lhs (the product is [b, h, q, d])
    // or the rhs ([b, h, d, q]); or, with the heads folded, through a
    // reshape to [b * h, q, k].
    std::optional<Probabilities> chain = probabilitiesOf(op.getLhs());
    bool probsOnLeft = chain.has_value();
    if (!probsOnLeft)
      chain = probabilitiesOf(op.getRhs());
    if (!chain)
      return failure();
    Value probs = probsOnLeft ? op.getLhs() : op.getRhs();
    Value values = probsOnLeft ? op.getRhs() : op.getLhs();
    auto batch = [&](bool lhs) {
      return lhs ? op.getLhsBatchingDimensions()
                 : op.getRhsBatchingDimensions();
    };
    auto contract = [&](bool lhs) {
      return lhs ? op.getLhsContractingDimensions()
                 : op.getRhsContractingDimensions();
    };
    Operation *nanGuard = chain->guard;
    SoftmaxOp softmax = chain->softmax;
    Value scores = softmax.getOperand();
    auto scoresType = cast<RankedTensorType>(scores.getType());
    // Folded heads: the probabilities are the softmax's [b, h, q, k]
    // reshaped to [b * h, q, k], read with k contracted.
    bool folded = bool(chain->fold);
    int64_t b = 0, h = 0;
    SmallVector<int64_t> valueDims, probsDims;
    if (folded) {
      auto probsType = cast<RankedTensorType>(chain->fold.getType());
      if (scoresType.getRank() != 4 || softmax.getDim() != 3 ||
          probsType.getRank() != 3 ||
          probsType.getShape() !=
              ArrayRef<int64_t>{
                  scoresType.getDimSize(0) * scoresType.getDimSize(1),
                  scoresType.getDimSize(2), scoresType.getDimSize(3)} ||
          ArrayRef<int64_t>(
              foldedDims(probs, batch(probsOnLeft), contract(probsOnLeft))) !=
              ArrayRef<int64_t>{0, 1, 2})
        return failure();
      b = scoresType.getDimSize(0);
      h = scoresType.getDimSize(1);
      probsDims = {0, 1, 2, 3};
      valueDims =
          foldedDims(values, batch(!probsOnLeft), contract(!probsOnLeft));
    } else {
      valueDims = headDims(values, batch(!probsOnLeft), contract(!probsOnLeft));
      probsDims = headDims(probs, batch(probsOnLeft), contract(probsOnLeft));
    }
    // (headDims' dims are distinct, so sorted means [b, h, q, k] in order.)
    if (valueDims.empty() || probsDims.empty() || !llvm::is_sorted(probsDims))
      return failure();
    if (int64_t(softmax.getDim()) != probsDims[3])
      return failure();
    // The softmax feeds only this product (through the chain, if any).
    Operation *reader = chain->reader ? chain->reader : op.getOperation();
    if (llvm::any_of(softmax->getUsers(), [&](Operation *u) {
          return u != reader && !(reader == nanGuard &&
                                  u == nanGuard->getOperand(0).getDefiningOp());
        }))
      return failure();
    Location loc = op.getLoc();

    // The mask, if any: select(cond, fill, s) / select(cond, s, fill) with
    // fill = -inf (or a number so negative that softmax gives 0), either
    // outermost or below the additive terms (GPT-Neo adds its padding bias
    // to the causally masked scores: fill + bias, like -inf + bias, gives
    // 0 after the softmax); then any number of additive terms s + mask,
    // some of them (with folded heads) before the reshape that unfolds the
    // scores.
    Value maskCond, s = scores;
    bool maskedWhen = true;
    double maskFill = 0; // the select's fill, scaled by outerScale
    // CodeGen scales the masked, biased scores: softmax((s + m) / c) is
    // softmax(s / c + m / c), so the scale applies to the terms as well
    // (the -inf of a select's fill stays -inf).
    double outerScale = 1.0;
    auto scaleOf = [](Value v) -> std::optional<std::pair<double, Value>> {
      if (auto div = v.getDefiningOp<DivOp>()) {
        std::optional<double> c = splatOf(div.getRhs());
        if (c && *c != 0)
          return std::make_pair(1.0 / *c, div.getLhs());
      }
      if (auto mul = v.getDefiningOp<MulOp>())
        if (auto split = pick(mul.getLhs(), mul.getRhs(),
                              [](Value x) { return splatOf(x).has_value(); }))
          return std::make_pair(*splatOf(split->first), split->second);
      return std::nullopt;
    };
    if (auto outer = scaleOf(scores)) {
      Operation *inner = outer->second.getDefiningOp();
      if (isa_and_nonnull<AddOp, SelectOp>(inner) && hasOneUse(outer->second) &&
          std::isfinite(outer->first) && outer->first != 0) {
        outerScale = outer->first;
        s = outer->second;
      }
    }
    // Takes `v` as the mask's select: sets maskCond and steps s past it.
    auto takeMaskSelect = [&](Value v) {
      auto sel = v.getDefiningOp<SelectOp>();
      if (!sel || maskCond)
        return false;
      bool fillOnTrue = isMaskFill(sel.getOnTrue());
      if (!fillOnTrue && !isMaskFill(sel.getOnFalse()))
        return false;
      // Under an outer scale the fill is scaled too: it must still mask
      // (a negative or tiny factor would turn -1e4 into a real score).
      double fill = *splatOf(fillOnTrue ? sel.getOnTrue() : sel.getOnFalse());
      if (!masksAfterScale(fill, outerScale))
        return false;
      maskFill = fill * outerScale;
      s = fillOnTrue ? sel.getOnFalse() : sel.getOnTrue();
      maskedWhen = fillOnTrue;
      maskCond = sel.getPred();
      return true;
    };
    if (s.getDefiningOp<SelectOp>() && !takeMaskSelect(s))
      return failure();
    // Each additive term, and whether it is of the folded scores.
    SmallVector<std::pair<Value, bool>> terms;
    bool unfolded = false;
    while (true) {
      if (s != scores && !hasOneUse(s))
        return failure();
      if (auto add = s.getDefiningOp<AddOp>()) {
        auto split = pick(add.getLhs(), add.getRhs(),
                          [](Value v) { return reachesProduct(v); });
        if (!split || reachesProduct(split->second) ||
            getElementTypeOrSelf(split->second) != scoresType.getElementType())
          return failure();
        if (unfolded && !foldedMask(nullptr, loc, split->second, b, h))
          return failure();
        // A term of zeros (the dynamo exporter adds one to ViT's scores)
        // changes no probability: no mask.
        std::optional<double> splat = splatOf(split->second);
        if (!splat || *splat != 0.0)
          terms.push_back({split->second, unfolded});
        s = split->first;
        continue;
      }
      // Below an additive term, of the unfolded scores' shape.
      if (s != scores && !unfolded && takeMaskSelect(s))
        continue;
      auto unfold = s.getDefiningOp<ReshapeOp>();
      if (folded && !unfolded && unfold &&
          unfold.getOperand().getType() == chain->fold.getType()) {
        unfolded = true;
        s = unfold.getOperand();
        continue;
      }
      break;
    }
    if (folded != unfolded)
      return failure();
    // jax.nn.dot_product_attention moves a unit dim between the product
    // and the mask: a transpose that is a reshape.
    if (auto t = s.getDefiningOp<TransposeOp>()) {
      if (!movesOnlyUnitDims(t.getResult()) || !hasOneUse(t.getOperand()))
        return failure();
      s = t.getOperand();
    }

    // Gemma 2's soft cap, below the mask's terms: s = c * tanh(x * r) (or
    // x / c' inside, either product's operands in either order). The op
    // computes c * tanh(scale * qk / c), so r * c joins the scale. Not
    // under CodeGen's outer scale, which would scale the cap too.
    std::optional<double> softcap;
    double capFactor = 1.0;
    if (auto capped = scaleOf(s)) {
      if (auto tanh = capped->second.getDefiningOp<TanhOp>()) {
        auto inner = scaleOf(tanh.getOperand());
        if (!inner || outerScale != 1.0 || !hasOneUse(tanh.getResult()) ||
            !hasOneUse(tanh.getOperand()) || !hasOneUse(inner->second) ||
            !(capped->first > 0) || !std::isfinite(capped->first) ||
            !std::isfinite(inner->first * capped->first) ||
            inner->first * capped->first == 0)
          return failure();
        softcap = capped->first;
        capFactor = inner->first * capped->first;
        s = inner->second;
      }
    }

    // The scale: s = qk * c, c * qk, qk / c or qk.
    double scale = outerScale * capFactor;
    Value qk = s;
    if (auto mul = s.getDefiningOp<MulOp>()) {
      auto split = pick(mul.getLhs(), mul.getRhs(),
                        [](Value v) { return splatOf(v).has_value(); });
      if (!split)
        return failure();
      scale *= *splatOf(split->first);
      qk = split->second;
    } else if (auto div = s.getDefiningOp<DivOp>()) {
      std::optional<double> c = splatOf(div.getRhs());
      if (!c || *c == 0)
        return failure();
      scale /= *c;
      qk = div.getLhs();
    }
    auto dot = qk.getDefiningOp<DotGeneralOp>();
    if (!dot || (qk != s && !hasOneUse(qk)))
      return failure();
    // PyTorch's exported scaled_dot_product_attention scales q and k by
    // sqrt(scale) each before their product (Hugging Face GPT-2, BERT):
    // the factors join the scale, which the kernel applies to the product
    // in f32, and q and k enter attention unscaled (no multiply, and no
    // transpose kept only to feed one).
    auto unscaled = [&](Value x) {
      if (auto mul = x.getDefiningOp<MulOp>())
        if (auto split = pick(mul.getLhs(), mul.getRhs(),
                              [](Value v) { return splatOf(v).has_value(); })) {
          scale *= *splatOf(split->first);
          return split->second;
        }
      return x;
    };
    Value lhs = unscaled(dot.getLhs()), rhs = unscaled(dot.getRhs());
    if (!std::isfinite(scale))
      return failure();
    auto operandDims = [&](Value x, ArrayRef<int64_t> batching,
                           ArrayRef<int64_t> contracting) {
      return folded ? foldedDims(x, batching, contracting)
                    : headDims(x, batching, contracting);
    };
    SmallVector<int64_t> queryDims = operandDims(
        lhs, dot.getLhsBatchingDimensions(), dot.getLhsContractingDimensions());
    SmallVector<int64_t> keyDims = operandDims(
        rhs, dot.getRhsBatchingDimensions(), dot.getRhsContractingDimensions());
    if (queryDims.empty() || keyDims.empty())
      return failure();
    // The queries' and keys' sequences must be the scores' [q, k] (a
    // transpose of unit dims may have swapped them: k q^T with one query),
    // and the values' (contracted) sequence the keys'; the key and value
    // heads must agree. Checked before any IR is made.
    auto sizeOf = [](Value v, int64_t dim) {
      return cast<RankedTensorType>(v.getType()).getDimSize(dim);
    };
    int64_t free = folded ? 1 : 2, contracted = folded ? 2 : 3;
    if (sizeOf(lhs, queryDims[free]) != scoresType.getDimSize(probsDims[2]) ||
        sizeOf(rhs, keyDims[free]) != scoresType.getDimSize(probsDims[3]) ||
        sizeOf(values, valueDims[contracted]) !=
            scoresType.getDimSize(probsDims[3]) ||
        (!folded && sizeOf(values, valueDims[1]) != sizeOf(rhs, keyDims[1])))
      return failure();

    // [b, h, s, d] each: the value's contracted dim is its sequence.
    auto heads = [&](Value x, ArrayRef<int64_t> dims,
                     bool contractedFirst = false) {
      return folded
                 ? toHeadsFolded(rewriter, loc, x, dims, b, h, contractedFirst)
                 : toHeads(rewriter, loc, x, dims, contractedFirst);
    };
    Value query = heads(lhs, queryDims);
    Value key = heads(rhs, keyDims);
    Value value = heads(values, valueDims, /*contractedFirst=*/true);
    int64_t sq = scoresType.getDimSize(probsDims[2]),
            sk = scoresType.getDimSize(probsDims[3]);
    auto headScores =
        RankedTensorType::get({scoresType.getDimSize(probsDims[0]),
                               scoresType.getDimSize(probsDims[1]), sq, sk},
                              scoresType.getElementType());
    bool causal = false;
    SmallVector<Value> masks;
    // A causal additive term (isCausalTerm), of scores ending in [q, k].
    int64_t scoresRank = scoresType.getRank();
    bool qkLast =
        probsDims[2] == scoresRank - 2 && probsDims[3] == scoresRank - 1;
    llvm::erase_if(terms, [&](const std::pair<Value, bool> &term) {
      if (term.second || !qkLast ||
          !isCausalTerm(term.first, sq, sk, outerScale))
        return false;
      causal = true;
      return true;
    });
    if (maskCond) {
      if (isCausalCondition(maskCond, sq, sk, maskedWhen)) {
        causal = true;
      } else {
        Value cond = rank4Mask(
            rewriter, loc, scoresToHeads(rewriter, loc, maskCond, probsDims),
            headScores);
        auto condType = cast<RankedTensorType>(cond.getType());
        auto fillType = RankedTensorType::get(condType.getShape(),
                                              scoresType.getElementType());
        // The select's own fill where adding it to a score gives the fill
        // (f32's finfo.min, -inf: at or below -2^120, whose ulp is 2^97 or
        // more): then the masked scores are the fill's value as the
        // select's are, and a row that masks every key keeps the select's
        // uniform weights. Otherwise (-1e4, -1e9, whose sum with a score
        // is not the fill) -inf: such a row gives zeros.
        double fillValue = maskFill <= -0x1p120
                               ? maskFill
                               : -std::numeric_limits<double>::infinity();
        Value fill = rewriter.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     fillType, rewriter.getFloatAttr(fillType.getElementType(),
                                                     fillValue)));
        Value zero = rewriter.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     fillType,
                     rewriter.getFloatAttr(fillType.getElementType(), 0.0)));
        masks.push_back(maskedWhen
                            ? rewriter.create<SelectOp>(loc, cond, fill, zero)
                            : rewriter.create<SelectOp>(loc, cond, zero, fill));
      }
    }
    for (auto [term, ofFolded] : terms) {
      if (outerScale != 1.0) {
        auto termType = cast<RankedTensorType>(term.getType());
        term = rewriter.create<MulOp>(
            loc, term,
            rewriter.create<ConstantOp>(
                loc,
                DenseElementsAttr::get(
                    termType, rewriter.getFloatAttr(termType.getElementType(),
                                                    outerScale))));
      }
      masks.push_back(
          ofFolded ? foldedMask(&rewriter, loc, term, b, h)
                   : rank4Mask(rewriter, loc,
                               scoresToHeads(rewriter, loc, term, probsDims),
                               headScores));
    }
    // Several terms: their sum, of the whole scores' shape.
    Value mask = masks.empty() ? Value() : masks[0];
    for (size_t i = 1; i < masks.size(); ++i) {
      auto whole = [&](Value m) -> Value {
        if (m.getType() == headScores)
          return m;
        return rewriter.create<BroadcastInDimOp>(loc, headScores, m,
                                                 ArrayRef<int64_t>{0, 1, 2, 3});
      };
      mask = rewriter.create<AddOp>(loc, whole(mask), whole(masks[i]));
    }
    DropoutOp dropout = chain->dropout;
    Value out =
        rewriter
            .create<AttentionOp>(
                loc, query, key, value, mask, APFloat(scale), causal,
                softcap ? rewriter.getF64FloatAttr(*softcap) : FloatAttr(),
                dropout ? dropout.getRatioAttr() : FloatAttr(),
                dropout ? dropout.getSeed() : 0,
                dropout ? dropout.getDataSeedStride() : 0,
                /*seq_major=*/nullptr,
                /*qkv_heads=*/nullptr,
                /*with_lse=*/false, /*head_blocks=*/1)
            .getResult();
    if (!probsOnLeft) // the product is [b, h, d, q]
      out = rewriter.createOrFold<TransposeOp>(loc, out,
                                               ArrayRef<int64_t>{0, 1, 3, 2});
    // Unit dims of the product's layout (or the folded batch) come back by
    // a reshape.
    out = rewriter.createOrFold<ReshapeOp>(loc, op.getType(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void trainc::recognize::populateAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<Attention>(patterns.getContext());
}
