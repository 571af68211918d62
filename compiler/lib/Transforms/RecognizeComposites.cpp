//===- RecognizeComposites.cpp - Decomposed patterns to graph composites --===//
//
// See RecognizeComposites in Passes.td for what is recognized. Matchers look
// through explicit broadcasts (the canonicalizer has merged chains of them
// into one broadcast_in_dim) and accept commuted operands. Intermediate ops
// absorbed into a composite must have no other users; otherwise the
// decomposed form stays, since rewriting would compute them twice.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

namespace trainc {
#define GEN_PASS_DEF_RECOGNIZECOMPOSITES
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

//===----------------------------------------------------------------------===//
// Matching helpers
//===----------------------------------------------------------------------===//

/// The splat value of a constant, looking through broadcasts and reshapes.
std::optional<double> splatOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<BroadcastInDimOp, ReshapeOp>(def))
      v = def->getOperand(0);
    else
      break;
  }
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  if (isa<FloatType>(attr.getElementType()))
    return attr.getSplatValue<APFloat>().convertToDouble();
  return double(attr.getSplatValue<APInt>().getSExtValue());
}

/// `v` equals `expected` to within float32 rounding of the constant.
bool isSplatNear(Value v, double expected) {
  std::optional<double> s = splatOf(v);
  return s && std::abs(*s - expected) <= 1e-6 * std::abs(expected);
}

/// A mask fill value: -inf or a number so negative that softmax gives 0.
bool isMaskFill(Value v) {
  std::optional<double> s = splatOf(v);
  return s && (std::isinf(*s) ? *s < 0 : *s <= -1e4);
}

bool hasOneUse(Value v) { return v.hasOneUse(); }

/// If `v` is `broadcast_in_dim(r)` with `r` computed over `dims` of a value
/// of `v`'s shape (the reduced dims dropped, the rest in order), returns r.
Value broadcastBackFrom(Value v, ArrayRef<int64_t> dims) {
  auto b = v.getDefiningOp<BroadcastInDimOp>();
  if (!b)
    return {};
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < b.getType().getRank(); ++d)
    if (!llvm::is_contained(dims, d))
      kept.push_back(d);
  if (b.getDims() != ArrayRef<int64_t>(kept))
    return {};
  return b.getOperand();
}

/// `v` is reduce OpT of `x` over `dims`, broadcast back to x's shape.
template <typename OpT> OpT broadcastReductionOf(Value v, Value x) {
  auto b = v.getDefiningOp<BroadcastInDimOp>();
  if (!b)
    return {};
  auto r = b.getOperand().getDefiningOp<OpT>();
  if (!r || r.getOperand() != x || broadcastBackFrom(v, r.getDims()) != r)
    return {};
  return r;
}

/// The first dim of `dims` if they are exactly [axis, rank).
std::optional<int64_t> trailingAxis(ArrayRef<int64_t> dims, int64_t rank) {
  SmallVector<int64_t> sorted(dims);
  llvm::sort(sorted);
  if (sorted.empty())
    return std::nullopt;
  for (auto [i, d] : llvm::enumerate(sorted))
    if (d !=
        rank - static_cast<int64_t>(sorted.size()) + static_cast<int64_t>(i))
      return std::nullopt;
  return sorted.front();
}

/// `v` is s*s or s^2; returns s.
Value squareOf(Value v) {
  if (auto m = v.getDefiningOp<MulOp>(); m && m.getLhs() == m.getRhs())
    return m.getLhs();
  if (auto p = v.getDefiningOp<PowOp>(); p && isSplatNear(p.getRhs(), 2.0))
    return p.getLhs();
  return {};
}

/// Operands of a commutative binary op as (the one satisfying `pred`, the
/// other), or nullopt.
template <typename Pred>
std::optional<std::pair<Value, Value>> pick(Value a, Value b, Pred pred) {
  if (pred(a))
    return std::make_pair(a, b);
  if (pred(b))
    return std::make_pair(b, a);
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

/// `den` is broadcast(Root(add(var, eps))) with Root sqrt or rsqrt, all
/// single-use. Returns (var, eps).
template <typename RootOp>
std::optional<std::pair<Value, double>> normDenominator(Value den) {
  auto b = den.getDefiningOp<BroadcastInDimOp>();
  if (!b || !hasOneUse(b))
    return std::nullopt;
  auto root = b.getOperand().getDefiningOp<RootOp>();
  if (!root || !hasOneUse(root))
    return std::nullopt;
  auto add = root.getOperand().template getDefiningOp<AddOp>();
  if (!add || !hasOneUse(add))
    return std::nullopt;
  auto split = pick(add.getLhs(), add.getRhs(),
                    [](Value v) { return splatOf(v).has_value(); });
  if (!split)
    return std::nullopt;
  return std::make_pair(split->second, *splatOf(split->first));
}

/// 1 / sqrt(v) -> rsqrt(v): how exporters write torch.rsqrt (ONNX has no
/// Rsqrt: Reciprocal(Sqrt) or Div(1, Sqrt)), so that NormCore sees one form.
/// The sqrt must have no other use.
struct ReciprocalSqrt : public OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp op,
                                PatternRewriter &rewriter) const override {
    auto sqrt = op.getRhs().getDefiningOp<SqrtOp>();
    std::optional<double> one = splatOf(op.getLhs());
    if (!sqrt || !hasOneUse(sqrt) || !one || *one != 1.0)
      return failure();
    rewriter.replaceOpWithNewOp<RsqrtOp>(op, sqrt.getOperand());
    return success();
  }
};

/// num * broadcast(rsqrt(var + eps)) or num / broadcast(sqrt(var + eps)),
/// where var = mean(s^2) over trailing dims: layer norm when num is
/// x - mean(x) and s == num, RMS norm when s == num == x.
struct NormCore : public RewritePattern {
  NormCore(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    Value num, den;
    std::optional<std::pair<Value, double>> varEps;
    if (auto div = dyn_cast<DivOp>(op)) {
      num = div.getLhs();
      den = div.getRhs();
      varEps = normDenominator<SqrtOp>(den);
    } else if (auto mul = dyn_cast<MulOp>(op)) {
      auto split = pick(mul.getLhs(), mul.getRhs(), [](Value v) {
        return normDenominator<RsqrtOp>(v).has_value();
      });
      if (!split)
        return failure();
      num = split->second;
      den = split->first;
      varEps = normDenominator<RsqrtOp>(den);
    } else {
      return failure();
    }
    if (!varEps || !isFloatTensorType(num.getType()))
      return failure();
    auto [var, eps] = *varEps;
    auto mean = var.getDefiningOp<ReduceMeanOp>();
    if (!mean || !hasOneUse(mean))
      return failure();
    Value squared = squareOf(mean.getOperand());
    if (!squared || squared != num)
      return failure();
    auto type = cast<RankedTensorType>(num.getType());
    std::optional<int64_t> axis = trailingAxis(mean.getDims(), type.getRank());
    // The denominator broadcasts var back over the dims it reduced.
    if (!axis || eps < 0 || !broadcastBackFrom(den, mean.getDims()))
      return failure();

    // Layer norm: num = x - broadcast(mean(x)) over the same dims.
    if (auto sub = num.getDefiningOp<SubOp>()) {
      auto center =
          broadcastReductionOf<ReduceMeanOp>(sub.getRhs(), sub.getLhs());
      if (center && center.getDims() == mean.getDims()) {
        // `num` feeds the square and the quotient: nothing else may use it.
        if (!llvm::all_of(num.getUsers(), [&](Operation *u) {
              return u == op || u == mean.getOperand().getDefiningOp();
            }))
          return failure();
        rewriter.replaceOpWithNewOp<LayerNormOp>(op, sub.getLhs(), Value(),
                                                 Value(), *axis, APFloat(eps));
        return success();
      }
    }
    rewriter.replaceOpWithNewOp<RmsNormOp>(op, num, Value(), *axis,
                                           APFloat(eps));
    return success();
  }
};

/// `v` is broadcast_in_dim(w) over the trailing dims [axis, rank) of
/// `type`, with w of the normalized shape; returns w.
Value normalizedOperand(Value v, RankedTensorType type, int64_t axis) {
  ArrayRef<int64_t> normalized = type.getShape().drop_front(axis);
  if (auto b = v.getDefiningOp<BroadcastInDimOp>()) {
    Value w = b.getOperand();
    SmallVector<int64_t> dims;
    for (int64_t d = axis; d < type.getRank(); ++d)
      dims.push_back(d);
    if (cast<RankedTensorType>(w.getType()).getShape() == normalized &&
        b.getDims() == ArrayRef<int64_t>(dims))
      return w;
    return {};
  }
  if (axis == 0 && v.getType() == type)
    return v;
  return {};
}

/// norm * broadcast(scale) -> norm with scale.
struct NormScale : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [normSide, other] : {std::pair(op.getLhs(), op.getRhs()),
                                   std::pair(op.getRhs(), op.getLhs())}) {
      if (!hasOneUse(normSide))
        continue;
      if (auto ln = normSide.getDefiningOp<LayerNormOp>()) {
        if (ln.getScale() || ln.getBias())
          continue;
        Value w = normalizedOperand(other, ln.getType(), ln.getAxis());
        if (!w)
          continue;
        rewriter.replaceOpWithNewOp<LayerNormOp>(op, ln.getInput(), w, Value(),
                                                 ln.getAxis(), ln.getEpsilon());
        return success();
      }
      if (auto rms = normSide.getDefiningOp<RmsNormOp>()) {
        if (rms.getScale())
          continue;
        Value w = normalizedOperand(other, rms.getType(), rms.getAxis());
        if (!w)
          continue;
        rewriter.replaceOpWithNewOp<RmsNormOp>(op, rms.getInput(), w,
                                               rms.getAxis(), rms.getEpsilon());
        return success();
      }
    }
    return failure();
  }
};

/// layer_norm + broadcast(bias) -> layer_norm with bias.
struct NormBias : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [normSide, other] : {std::pair(op.getLhs(), op.getRhs()),
                                   std::pair(op.getRhs(), op.getLhs())}) {
      auto ln = normSide.getDefiningOp<LayerNormOp>();
      if (!ln || ln.getBias() || !hasOneUse(normSide))
        continue;
      Value b = normalizedOperand(other, ln.getType(), ln.getAxis());
      if (!b)
        continue;
      rewriter.replaceOpWithNewOp<LayerNormOp>(
          op, ln.getInput(), ln.getScale(), b, ln.getAxis(), ln.getEpsilon());
      return success();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

/// The factors of a product tree rooted at `v`; inner products must have
/// no other users.
void collectFactors(Value v, SmallVectorImpl<Value> &factors, bool isRoot) {
  auto mul = v.getDefiningOp<MulOp>();
  if (mul && (isRoot || hasOneUse(v)) && mul.getLhs() != mul.getRhs()) {
    collectFactors(mul.getLhs(), factors, false);
    collectFactors(mul.getRhs(), factors, false);
    return;
  }
  factors.push_back(v);
}

/// `v` is x / sqrt(2) or x * (1 / sqrt(2)).
bool isErfArgument(Value v, Value x) {
  if (auto div = v.getDefiningOp<DivOp>())
    return div.getLhs() == x && isSplatNear(div.getRhs(), std::sqrt(2.0));
  if (auto mul = v.getDefiningOp<MulOp>()) {
    auto s = pick(mul.getLhs(), mul.getRhs(),
                  [](Value w) { return isSplatNear(w, 1.0 / std::sqrt(2.0)); });
    return s && s->second == x;
  }
  return false;
}

/// `v` is sqrt(2/pi) * (x + 0.044715 * x^3), x^3 as x*x*x or pow(x, 3).
bool isTanhArgument(Value v, Value x) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul)
    return false;
  auto s = pick(mul.getLhs(), mul.getRhs(),
                [](Value w) { return isSplatNear(w, std::sqrt(2.0 / M_PI)); });
  if (!s)
    return false;
  auto add = s->second.getDefiningOp<AddOp>();
  if (!add)
    return false;
  auto cubic =
      pick(add.getLhs(), add.getRhs(), [&](Value w) { return w == x; });
  if (!cubic)
    return false;
  SmallVector<Value> factors;
  collectFactors(cubic->second, factors, true);
  int xs = 0;
  bool coefficient = false;
  for (Value f : factors) {
    if (f == x) {
      ++xs;
    } else if (auto p = f.getDefiningOp<PowOp>();
               p && p.getLhs() == x && isSplatNear(p.getRhs(), 3.0)) {
      xs += 3;
    } else if (!coefficient && isSplatNear(f, 0.044715)) {
      coefficient = true;
    } else if (auto inner = f.getDefiningOp<MulOp>();
               inner && inner.getLhs() == x && inner.getRhs() == x) {
      xs += 2; // x * x kept whole by collectFactors.
    } else {
      return false;
    }
  }
  return coefficient && xs == 3;
}

/// 0.5 * x * (1 + erf(x / sqrt 2)) or the tanh form -> graph.gelu.
struct Gelu : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    if (!isFloatTensorType(op.getType()))
      return failure();
    SmallVector<Value> factors;
    collectFactors(op.getResult(), factors, true);
    if (factors.size() != 3)
      return failure();
    auto half =
        llvm::find_if(factors, [](Value f) { return isSplatNear(f, 0.5); });
    if (half == factors.end())
      return failure();
    factors.erase(half);
    for (auto [x, onePlus] : {std::pair(factors[0], factors[1]),
                              std::pair(factors[1], factors[0])}) {
      if (x.getType() != op.getType())
        continue;
      auto add = onePlus.getDefiningOp<AddOp>();
      if (!add)
        continue;
      auto s = pick(add.getLhs(), add.getRhs(),
                    [](Value v) { return isSplatNear(v, 1.0); });
      if (!s)
        continue;
      Value t = s->second;
      if (auto erf = t.getDefiningOp<ErfOp>();
          erf && isErfArgument(erf.getOperand(), x)) {
        rewriter.replaceOpWithNewOp<GeluOp>(op, x, GeluApproximation::erf);
        return success();
      }
      if (auto tanh = t.getDefiningOp<TanhOp>();
          tanh && isTanhArgument(tanh.getOperand(), x)) {
        rewriter.replaceOpWithNewOp<GeluOp>(op, x, GeluApproximation::tanh);
        return success();
      }
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Softmax and attention
//===----------------------------------------------------------------------===//

/// exp(x - max(x)) / sum(exp(x - max(x))) (or without the max) over one dim.
struct Softmax : public OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DivOp op,
                                PatternRewriter &rewriter) const override {
    Value e = op.getLhs();
    auto exp = e.getDefiningOp<ExpOp>();
    if (!exp)
      return failure();
    auto sum = broadcastReductionOf<ReduceSumOp>(op.getRhs(), e);
    if (!sum || sum.getDims().size() != 1 || !hasOneUse(sum) ||
        !hasOneUse(op.getRhs()))
      return failure();
    int64_t dim = sum.getDims().front();
    // exp feeds the sum and the quotient only.
    if (llvm::any_of(e.getUsers(), [&](Operation *u) {
          return u != op && u != sum.getOperation();
        }))
      return failure();
    Value x = exp.getOperand();
    if (auto sub = x.getDefiningOp<SubOp>()) {
      auto max = broadcastReductionOf<ReduceMaxOp>(sub.getRhs(), sub.getLhs());
      if (max && max.getDims() == sum.getDims())
        x = sub.getLhs();
    }
    rewriter.replaceOpWithNewOp<SoftmaxOp>(op, x, dim);
    return success();
  }
};

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

/// Whether transpose `t` moves only dims of size 1 (the others keep their
/// order): as a reshape would, it changes no element's place.
bool movesOnlyUnitDims(TransposeOp t) {
  auto type = cast<RankedTensorType>(t.getOperand().getType());
  int64_t last = -1;
  for (int64_t d : t.getPermutation()) {
    if (type.getDimSize(d) == 1)
      continue;
    if (d < last)
      return false;
    last = d;
  }
  return true;
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

/// True when constant `cond` masks exactly the keys after each query
/// (j > i + Sk - Sq), i.e. causal attention; `maskedWhen` is the value of
/// cond at masked positions.
bool isCausalCondition(Value cond, int64_t sq, int64_t sk, bool maskedWhen) {
  // Broadcasts and reshapes keep each [Sq, Sk] slice's elements in order.
  while (isa_and_nonnull<BroadcastInDimOp, ReshapeOp>(cond.getDefiningOp()))
    cond = cond.getDefiningOp()->getOperand(0);
  DenseElementsAttr attr;
  if (!matchPattern(cond, m_Constant(&attr)))
    return false;
  auto shape = attr.getType().getShape();
  if (shape.size() < 2 || shape[shape.size() - 2] != sq || shape.back() != sk)
    return false;
  // Every [Sq, Sk] slice (over leading batch/head dims) must be causal.
  int64_t k = 0;
  for (bool v : attr.getValues<bool>()) {
    int64_t i = (k / sk) % sq, j = k % sk;
    if ((v == maskedWhen) != (j > i + sk - sq))
      return false;
    ++k;
  }
  return true;
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

/// softmax(scale * q @ k^T [mask]) @ v -> graph.attention, also with the
/// NaN guard above between the softmax and the product. The products may
/// read their operands in any per-head layout (headLayout: [b, h, s, d],
/// [b, s, h, d], ...), the probabilities in theirs, [b, h, q, k], from
/// either side of the second product; the operands are transposed into
/// graph.attention's layout and its result into the product's.
struct Attention : public OpRewritePattern<DotGeneralOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotGeneralOp op,
                                PatternRewriter &rewriter) const override {
    // The probabilities: a softmax (possibly behind the guard) over k, read
    // in its own [b, h, q, k] order (unit dims aside) with k contracted, as
    // the lhs (the product is [b, h, q, d]) or the rhs ([b, h, d, q]).
    auto isProbs = [](Value v) {
      if (Operation *guard = nanToZeroGuard(v))
        v = guard->getOperand(2);
      return v.getDefiningOp<SoftmaxOp>() != nullptr;
    };
    bool probsOnLeft = isProbs(op.getLhs());
    if (!probsOnLeft && !isProbs(op.getRhs()))
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
    SmallVector<int64_t> valueDims =
        headDims(values, batch(!probsOnLeft), contract(!probsOnLeft));
    SmallVector<int64_t> probsDims =
        headDims(probs, batch(probsOnLeft), contract(probsOnLeft));
    // (headDims' dims are distinct, so sorted means [b, h, q, k] in order.)
    if (valueDims.empty() || probsDims.empty() || !llvm::is_sorted(probsDims))
      return failure();
    Operation *nanGuard = nanToZeroGuard(probs);
    if (nanGuard)
      probs = nanGuard->getOperand(2);
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax || int64_t(softmax.getDim()) != probsDims[3])
      return failure();
    // The softmax feeds only this product (through the guard, if any).
    if (llvm::any_of(softmax->getUsers(), [&](Operation *u) {
          return nanGuard ? u != nanGuard &&
                                u != nanGuard->getOperand(0).getDefiningOp()
                          : u != op.getOperation();
        }))
      return failure();
    Value scores = softmax.getOperand();
    auto scoresType = cast<RankedTensorType>(scores.getType());
    Location loc = op.getLoc();

    // The mask, if any: select(cond, fill, s) / select(cond, s, fill) with
    // fill = -inf, or s + mask.
    Value maskCond, additive, s = scores;
    bool maskedWhen = true;
    if (auto sel = scores.getDefiningOp<SelectOp>()) {
      if (isMaskFill(sel.getOnTrue())) {
        s = sel.getOnFalse();
      } else if (isMaskFill(sel.getOnFalse())) {
        s = sel.getOnTrue();
        maskedWhen = false;
      } else {
        return failure();
      }
      maskCond = sel.getPred();
    } else if (auto add = scores.getDefiningOp<AddOp>()) {
      auto split = pick(add.getLhs(), add.getRhs(), [](Value v) {
        Operation *d = v.getDefiningOp();
        return d && isa<DotGeneralOp, MulOp, DivOp, TransposeOp>(d);
      });
      if (!split)
        return failure();
      s = split->first;
      additive = split->second;
      if (getElementTypeOrSelf(additive) != scoresType.getElementType())
        return failure();
    }
    if (s != scores && !hasOneUse(s))
      return failure();
    // jax.nn.dot_product_attention moves a unit dim between the product
    // and the mask: a transpose that is a reshape.
    if (auto t = s.getDefiningOp<TransposeOp>()) {
      if (!movesOnlyUnitDims(t) || !hasOneUse(t.getOperand()))
        return failure();
      s = t.getOperand();
    }

    // The scale: s = qk * c, c * qk, qk / c or qk.
    double scale = 1.0;
    Value qk = s;
    if (auto mul = s.getDefiningOp<MulOp>()) {
      auto split = pick(mul.getLhs(), mul.getRhs(),
                        [](Value v) { return splatOf(v).has_value(); });
      if (!split)
        return failure();
      scale = *splatOf(split->first);
      qk = split->second;
    } else if (auto div = s.getDefiningOp<DivOp>()) {
      std::optional<double> c = splatOf(div.getRhs());
      if (!c || *c == 0)
        return failure();
      scale = 1.0 / *c;
      qk = div.getLhs();
    }
    auto dot = qk.getDefiningOp<DotGeneralOp>();
    if (!dot || (qk != s && !hasOneUse(qk)) || !std::isfinite(scale))
      return failure();
    SmallVector<int64_t> queryDims =
        headDims(dot.getLhs(), dot.getLhsBatchingDimensions(),
                 dot.getLhsContractingDimensions());
    SmallVector<int64_t> keyDims =
        headDims(dot.getRhs(), dot.getRhsBatchingDimensions(),
                 dot.getRhsContractingDimensions());
    if (queryDims.empty() || keyDims.empty())
      return failure();

    // [b, h, s, d] each: the value's contracted dim is its sequence.
    Value query = toHeads(rewriter, loc, dot.getLhs(), queryDims);
    Value key = toHeads(rewriter, loc, dot.getRhs(), keyDims);
    Value value = toHeads(rewriter, loc, values, valueDims,
                          /*contractedFirst=*/true);
    int64_t sq = scoresType.getDimSize(probsDims[2]),
            sk = scoresType.getDimSize(probsDims[3]);
    auto headScores =
        RankedTensorType::get({scoresType.getDimSize(probsDims[0]),
                               scoresType.getDimSize(probsDims[1]), sq, sk},
                              scoresType.getElementType());
    bool causal = false;
    Value mask;
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
        Value fill = rewriter.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     fillType, rewriter.getFloatAttr(
                                   fillType.getElementType(),
                                   -std::numeric_limits<double>::infinity())));
        Value zero = rewriter.create<ConstantOp>(
            loc, DenseElementsAttr::get(
                     fillType,
                     rewriter.getFloatAttr(fillType.getElementType(), 0.0)));
        mask = maskedWhen ? rewriter.create<SelectOp>(loc, cond, fill, zero)
                          : rewriter.create<SelectOp>(loc, cond, zero, fill);
      }
    } else if (additive) {
      mask = rank4Mask(rewriter, loc,
                       scoresToHeads(rewriter, loc, additive, probsDims),
                       headScores);
    }
    Value out = rewriter.create<AttentionOp>(loc, query, key, value, mask,
                                             APFloat(scale), causal);
    if (!probsOnLeft) // the product is [b, h, d, q]
      out = rewriter.createOrFold<TransposeOp>(loc, out,
                                               ArrayRef<int64_t>{0, 1, 3, 2});
    // Unit dims of the product's layout come back by a reshape.
    out = rewriter.createOrFold<ReshapeOp>(loc, op.getType(), out);
    rewriter.replaceOp(op, out);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

/// `v` is log_softmax(x) over the last dimension, written as
/// s - broadcast(log(sum(exp(s)))) with s = x - broadcast(max(x)) or s = x
/// (jax.nn.log_softmax); returns x.
Value logSoftmaxInput(Value v) {
  auto sub = v.getDefiningOp<SubOp>();
  if (!sub)
    return {};
  Value shifted = sub.getLhs();
  auto type = cast<RankedTensorType>(shifted.getType());
  SmallVector<int64_t> last = {type.getRank() - 1};
  auto log = broadcastBackFrom(sub.getRhs(), last).getDefiningOp<LogOp>();
  if (!log)
    return {};
  auto sum = log.getOperand().getDefiningOp<ReduceSumOp>();
  if (!sum || sum.getDims() != ArrayRef<int64_t>(last))
    return {};
  auto exp = sum.getOperand().getDefiningOp<ExpOp>();
  if (!exp || exp.getOperand() != shifted)
    return {};
  if (auto center = shifted.getDefiningOp<SubOp>()) {
    auto max =
        broadcastReductionOf<ReduceMaxOp>(center.getRhs(), center.getLhs());
    if (max && max.getDims() == ArrayRef<int64_t>(last))
      return center.getLhs();
  }
  return shifted;
}

/// The integer tensor an index was computed from by reshapes, widening,
/// clamping into range and wrapping negatives (x < 0 ? x + n : x), the
/// forms jnp.take_along_axis writes around its gather.
Value indexSource(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<ReshapeOp>(def) ||
        (isa<ConvertOp>(def) &&
         isa<IntegerType>(getElementTypeOrSelf(def->getOperand(0))))) {
      v = def->getOperand(0);
      continue;
    }
    if (isa<MaxOp, MinOp>(def)) {
      auto split = pick(def->getOperand(0), def->getOperand(1),
                        [](Value x) { return splatOf(x).has_value(); });
      if (!split)
        return v;
      v = split->second;
      continue;
    }
    if (auto sel = dyn_cast<SelectOp>(def)) {
      auto isNegative = sel.getPred().getDefiningOp<CompareOp>();
      auto wrapped = sel.getOnTrue().getDefiningOp<AddOp>();
      Value x = sel.getOnFalse();
      if (!isNegative || isNegative.getDirection() != ComparisonDirection::LT ||
          isNegative.getLhs() != x || !isSplatNear(isNegative.getRhs(), 0) ||
          !wrapped || !pick(wrapped.getLhs(), wrapped.getRhs(), [&](Value y) {
            return y == x;
          }))
        return v;
      v = x;
      continue;
    }
    return v;
  }
  return v;
}

/// mean(-logp[targets]) over every position, with logp = log_softmax(logits)
/// read at each row's target through a gather of the flattened logp at
/// row * C + target (the form jnp.take_along_axis takes through the
/// StableHLO importer) -> graph.softmax_cross_entropy, reduction mean. The
/// negation may come before or after the mean, and an out-of-range fill
/// (select(valid, picked, NaN)) may guard the picked values: trainc's
/// cross-entropy reports such targets as errors instead.
struct CrossEntropy : public OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceMeanOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getType().getRank() != 0)
      return failure();
    Operation *root = op;
    bool negated = false;
    if (op->hasOneUse())
      if (auto neg = dyn_cast<NegOp>(*op->getUsers().begin())) {
        root = neg;
        negated = true;
      }
    // Down to the gather: reshapes, a negation, the fill guard.
    Value v = op.getOperand();
    while (Operation *def = v.getDefiningOp()) {
      if (!v.hasOneUse())
        return failure();
      if (isa<ReshapeOp>(def)) {
        v = def->getOperand(0);
      } else if (isa<NegOp>(def) && !negated) {
        negated = true;
        v = def->getOperand(0);
      } else if (auto sel = dyn_cast<SelectOp>(def)) {
        std::optional<double> fill = splatOf(sel.getOnFalse());
        if (!fill || !std::isnan(*fill))
          return failure();
        v = sel.getOnTrue();
      } else {
        break;
      }
    }
    auto gather = v.getDefiningOp<GatherOp>();
    if (!negated || !gather || gather.getAxis() != 0)
      return failure();
    auto flat = gather.getOperand().getDefiningOp<ReshapeOp>();
    if (!flat || flat.getType().getRank() != 1)
      return failure();
    Value logits = logSoftmaxInput(flat.getOperand());
    if (!logits)
      return failure();
    auto logitsType = cast<RankedTensorType>(logits.getType());
    int64_t classes = logitsType.getShape().back();
    int64_t rows = logitsType.getNumElements() / std::max<int64_t>(classes, 1);
    if (gather.getIndices().getType().getNumElements() != rows)
      return failure();
    // Positions: row * C + target, row in order.
    auto add = gather.getIndices().getDefiningOp<AddOp>();
    if (!add)
      return failure();
    DenseIntElementsAttr offsets;
    Value index;
    if (matchPattern(add.getRhs(), m_Constant(&offsets)))
      index = add.getLhs();
    else if (matchPattern(add.getLhs(), m_Constant(&offsets)))
      index = add.getRhs();
    else
      return failure();
    int64_t row = 0;
    for (const APInt &offset : offsets.getValues<APInt>())
      if (offset.getSExtValue() != classes * row++)
        return failure();
    Value targets = indexSource(index);
    auto targetsType = cast<RankedTensorType>(targets.getType());
    Type element = targetsType.getElementType();
    if (targetsType.getNumElements() != rows ||
        !(element.isInteger(32) || element.isInteger(64)))
      return failure();
    Location loc = op.getLoc();
    targets = rewriter.createOrFold<ReshapeOp>(
        loc, RankedTensorType::get(logitsType.getShape().drop_back(), element),
        targets);
    rewriter.replaceOpWithNewOp<SoftmaxCrossEntropyOp>(
        root, cast<RankedTensorType>(root->getResult(0).getType()), logits,
        targets, LossReduction::mean, IntegerAttr());
    return success();
  }
};

struct RecognizeCompositesPass
    : public trainc::impl::RecognizeCompositesBase<RecognizeCompositesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<NormCore, ReciprocalSqrt>(&getContext());
    patterns.add<NormScale, NormBias, Gelu, Softmax, Attention, CrossEntropy>(
        &getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
