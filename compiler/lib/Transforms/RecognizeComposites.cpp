//===- RecognizeComposites.cpp - Decomposed patterns to graph composites --===//
//
// See RecognizeComposites in Passes.td for what is recognized. Matchers look
// through explicit broadcasts (the canonicalizer has merged chains of them
// into one broadcast_in_dim) and accept commuted operands. Intermediate ops
// absorbed into a composite must have no other users; otherwise the
// decomposed form stays, since rewriting would compute them twice.
//
//===----------------------------------------------------------------------===//

#include "RecognizeUtil.h"
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
using namespace trainc::recognize;

//===----------------------------------------------------------------------===//
// Matching helpers shared with RecognizeAttention.cpp (RecognizeUtil.h)
//===----------------------------------------------------------------------===//

namespace trainc::recognize {

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

bool movesOnlyUnitDims(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t)
    return false;
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

} // namespace trainc::recognize

namespace {

//===----------------------------------------------------------------------===//
// Matching helpers
//===----------------------------------------------------------------------===//

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

/// `v` without a clamp at zero, max(v, 0) or max(0, v): Flax's and
/// Equinox's variances guard against a negative round-off (a variance is
/// never negative in exact arithmetic, which the norm ops compute).
Value withoutZeroClamp(Value v) {
  auto max = v.getDefiningOp<MaxOp>();
  if (!max || !hasOneUse(max))
    return v;
  auto split = pick(max.getLhs(), max.getRhs(), [](Value x) {
    std::optional<double> c = splatOf(x);
    return c && *c == 0.0;
  });
  return split ? split->second : v;
}

/// `var` is mean(x^2) - mean(x)^2 over `dims` ("fast variance", Flax's
/// LayerNorm default), with mean(x) the op `center`: whether it is.
bool isFastVariance(Value var, ReduceMeanOp center) {
  auto sub = var.getDefiningOp<SubOp>();
  if (!sub || !hasOneUse(sub))
    return false;
  auto meanOfSquares = sub.getLhs().getDefiningOp<ReduceMeanOp>();
  Value squaredMean = squareOf(sub.getRhs());
  if (!meanOfSquares || !hasOneUse(meanOfSquares) || !squaredMean ||
      !hasOneUse(sub.getRhs()) || !hasOneUse(meanOfSquares.getOperand()) ||
      squaredMean != center.getResult() ||
      meanOfSquares.getDims() != center.getDims())
    return false;
  return squareOf(meanOfSquares.getOperand()) == center.getOperand();
}

/// num * broadcast(rsqrt(var + eps)) or num / broadcast(sqrt(var + eps)),
/// where var = mean(s^2) over trailing dims: layer norm when num is
/// x - mean(x) and s == num, RMS norm when s == num == x. Also layer norm
/// when var = mean(x^2) - mean(x)^2 (isFastVariance); either variance may
/// be clamped at zero (withoutZeroClamp).
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
    auto [clampedVar, eps] = *varEps;
    Value var = withoutZeroClamp(clampedVar);
    auto type = cast<RankedTensorType>(num.getType());
    // Layer norm with the fast variance: num = x - broadcast(mean(x)) and
    // var = mean(x^2) - mean(x)^2, one mean(x) for both.
    if (auto sub = num.getDefiningOp<SubOp>();
        sub && hasOneUse(num) && hasOneUse(sub.getRhs())) {
      auto center =
          broadcastReductionOf<ReduceMeanOp>(sub.getRhs(), sub.getLhs());
      std::optional<int64_t> axis =
          center ? trailingAxis(center.getDims(), type.getRank())
                 : std::nullopt;
      if (center && axis && eps >= 0 && isFastVariance(var, center) &&
          broadcastBackFrom(den, center.getDims())) {
        rewriter.replaceOpWithNewOp<LayerNormOp>(op, sub.getLhs(), Value(),
                                                 Value(), *axis, APFloat(eps));
        return success();
      }
    }
    auto mean = var.getDefiningOp<ReduceMeanOp>();
    if (!mean || !hasOneUse(mean))
      return failure();
    Value squared = squareOf(mean.getOperand());
    if (!squared || squared != num)
      return failure();
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

/// num * (broadcast(rsqrt(v)) * broadcast(w)) -> (num * broadcast(rsqrt(v)))
/// * broadcast(w), w of the shape the rsqrt's broadcast adds (the
/// normalized dims): Flax's LayerNorm and RMSNorm multiply the scale into
/// the reciprocal before it meets the centred input, so that NormCore and
/// NormScale see the norm, then its scale. (Reassociating moves one
/// rounding.)
struct ScaleOutOfReciprocal : public OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [num, factor] : {std::pair(op.getLhs(), op.getRhs()),
                               std::pair(op.getRhs(), op.getLhs())}) {
      auto inner = factor.getDefiningOp<MulOp>();
      if (!inner || !hasOneUse(factor) || inner.getLhs() == inner.getRhs())
        continue;
      for (auto [den, w] : {std::pair(inner.getLhs(), inner.getRhs()),
                            std::pair(inner.getRhs(), inner.getLhs())}) {
        std::optional<std::pair<Value, double>> varEps =
            normDenominator<RsqrtOp>(den);
        // Only before a norm: a variance (a mean, or mean(x^2) - mean(x)^2,
        // either clamped at zero), and w a broadcast while num is not
        // (else the product, w * rsqrt * x, would match again with the two
        // swapped, for ever).
        Operation *var =
            varEps ? withoutZeroClamp(varEps->first).getDefiningOp() : nullptr;
        if (!isa_and_nonnull<ReduceMeanOp, SubOp>(var) ||
            !w.getDefiningOp<BroadcastInDimOp>() ||
            num.getDefiningOp<BroadcastInDimOp>())
          continue;
        // The reciprocal's broadcast adds the trailing dims [axis, rank).
        auto b = den.getDefiningOp<BroadcastInDimOp>();
        int64_t axis =
            cast<RankedTensorType>(b.getOperand().getType()).getRank();
        auto type = cast<RankedTensorType>(op.getType());
        if (ArrayRef<int64_t>(b.getDims()) !=
                ArrayRef<int64_t>(
                    llvm::to_vector(llvm::seq<int64_t>(0, axis))) ||
            !normalizedOperand(w, type, axis))
          continue;
        Value normed = rewriter.create<MulOp>(op.getLoc(), num, den);
        rewriter.replaceOpWithNewOp<MulOp>(op, normed, w);
        return success();
      }
    }
    return failure();
  }
};

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

/// `v` is 0.044715 * x^n, the power as a product of x's, x * x or pow(x, k)
/// in any grouping.
bool isCubicCoefficientTimes(Value v, Value x, int n) {
  SmallVector<Value> factors;
  collectFactors(v, factors, true);
  int xs = 0;
  bool coefficient = false;
  for (Value f : factors) {
    if (f == x) {
      ++xs;
    } else if (auto p = f.getDefiningOp<PowOp>(); p && p.getLhs() == x) {
      // A whole power from 1 to n (x^-1 * x^3 is not x^2 at x = 0).
      std::optional<double> k = splatOf(p.getRhs());
      if (!k || *k < 1 || *k > n || *k != std::round(*k))
        return false;
      xs += int(*k);
    } else if (!coefficient && isSplatNear(f, 0.044715)) {
      coefficient = true;
    } else if (auto inner = f.getDefiningOp<MulOp>();
               inner && inner.getLhs() == x && inner.getRhs() == x) {
      xs += 2; // x * x kept whole by collectFactors.
    } else {
      return false;
    }
  }
  return coefficient && xs == n;
}

/// `v` is sqrt(2/pi) * (x + 0.044715 * x^3) (PyTorch's, x^3 as x*x*x or
/// pow(x, 3)), or sqrt(2/pi) * x * (1 + 0.044715 * x^2) (BLOOM's), the
/// factors in any order and grouping.
bool isTanhArgument(Value v, Value x) {
  SmallVector<Value> factors;
  collectFactors(v, factors, true);
  auto c = llvm::find_if(
      factors, [](Value w) { return isSplatNear(w, std::sqrt(2.0 / M_PI)); });
  if (c == factors.end())
    return false;
  factors.erase(c);
  if (factors.size() == 1) { // x + 0.044715 x^3
    auto add = factors[0].getDefiningOp<AddOp>();
    auto cubic =
        add ? pick(add.getLhs(), add.getRhs(), [&](Value w) { return w == x; })
            : std::nullopt;
    return cubic && isCubicCoefficientTimes(cubic->second, x, 3);
  }
  if (factors.size() != 2) // x * (1 + 0.044715 x^2)
    return false;
  auto onePlus = pick(factors[0], factors[1], [&](Value w) { return w == x; });
  auto add = onePlus ? onePlus->second.getDefiningOp<AddOp>() : AddOp();
  auto square = add ? pick(add.getLhs(), add.getRhs(),
                           [](Value w) { return isSplatNear(w, 1.0); })
                    : std::nullopt;
  return square && isCubicCoefficientTimes(square->second, x, 2);
}

/// `v` is erf's argument for x negated: -(x / sqrt 2) in any of the forms
/// isErfArgument takes, or with the negation on x: (-x) / sqrt(2),
/// (-x) * (1 / sqrt 2).
bool isNegatedErfArgument(Value v, Value x) {
  if (auto neg = v.getDefiningOp<NegOp>())
    return isErfArgument(neg.getOperand(), x);
  Value negX;
  if (auto div = v.getDefiningOp<DivOp>();
      div && isSplatNear(div.getRhs(), std::sqrt(2.0)))
    negX = div.getLhs();
  if (auto mul = v.getDefiningOp<MulOp>())
    if (auto s = pick(mul.getLhs(), mul.getRhs(), [](Value w) {
          return isSplatNear(w, 1.0 / std::sqrt(2.0));
        }))
      negX = s->second;
  auto neg = negX ? negX.getDefiningOp<NegOp>() : NegOp();
  return neg && neg.getOperand() == x;
}

/// 0.5 * x * (1 + erf(x / sqrt 2)) or the tanh form -> graph.gelu. Also
/// 0.5 * x * (1 - erf(-x / sqrt 2)), the same function: jax.nn.gelu's
/// 0.5 x erfc(-x / sqrt 2) once RecognizeErfc.cpp has rewritten its erfc.
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
      if (auto sub = onePlus.getDefiningOp<SubOp>();
          sub && isSplatNear(sub.getLhs(), 1.0))
        if (auto erf = sub.getRhs().getDefiningOp<ErfOp>();
            erf && isNegatedErfArgument(erf.getOperand(), x)) {
          rewriter.replaceOpWithNewOp<GeluOp>(op, x, GeluApproximation::erf);
          return success();
        }
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
  Value logOfSum = broadcastBackFrom(sub.getRhs(), last);
  auto log = logOfSum ? logOfSum.getDefiningOp<LogOp>() : LogOp();
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

/// `v` is logsumexp(x) over the last dimension as jax.nn.logsumexp writes
/// it: log(|sum(exp(x - broadcast(m)))|) + m, with m = max(x) where finite
/// (select(m - m == 0, m, 0)) and the absolute value a select on the sum's
/// sign (or neither guard); returns x.
Value logSumExpInput(Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return {};
  for (auto [logSide, m] : {std::pair(add.getLhs(), add.getRhs()),
                            std::pair(add.getRhs(), add.getLhs())}) {
    auto log = logSide.getDefiningOp<LogOp>();
    if (!log || !hasOneUse(logSide) || !hasOneUse(log.getOperand()))
      continue;
    Value sumValue = log.getOperand();
    // |s| as select(s >= 0, s + 0, -s).
    if (auto abs = sumValue.getDefiningOp<SelectOp>()) {
      auto sign = abs.getPred().getDefiningOp<CompareOp>();
      auto neg = abs.getOnFalse().getDefiningOp<NegOp>();
      if (!sign || sign.getDirection() != ComparisonDirection::GE ||
          !isSplatNear(sign.getRhs(), 0) || !neg)
        continue;
      Value s0 = sign.getLhs();
      Value kept = abs.getOnTrue();
      if (auto plusZero = kept.getDefiningOp<AddOp>()) {
        auto split = pick(plusZero.getLhs(), plusZero.getRhs(),
                          [](Value x) { return isSplatNear(x, 0); });
        if (split)
          kept = split->second;
      }
      if (kept != s0 || neg.getOperand() != s0)
        continue;
      sumValue = s0;
    }
    auto sum = sumValue.getDefiningOp<ReduceSumOp>();
    auto type = sum ? dyn_cast<RankedTensorType>(sum.getOperand().getType())
                    : RankedTensorType();
    if (!sum || !type || sum.getDims() != ArrayRef<int64_t>{type.getRank() - 1})
      continue;
    auto exp = sum.getOperand().getDefiningOp<ExpOp>();
    auto shifted = exp ? exp.getOperand().getDefiningOp<SubOp>() : SubOp();
    if (!shifted || !hasOneUse(sum.getOperand()) ||
        !hasOneUse(exp.getOperand()) ||
        broadcastBackFrom(shifted.getRhs(), sum.getDims()) != m)
      continue;
    Value x = shifted.getLhs();
    // m: the max, or the max where finite.
    Value max = m;
    if (auto finite = m.getDefiningOp<SelectOp>()) {
      auto isFinite = finite.getPred().getDefiningOp<CompareOp>();
      auto diff = isFinite ? isFinite.getLhs().getDefiningOp<SubOp>() : SubOp();
      if (!isFinite || isFinite.getDirection() != ComparisonDirection::EQ ||
          !isSplatNear(isFinite.getRhs(), 0) || !diff ||
          diff.getLhs() != diff.getRhs() ||
          diff.getLhs() != finite.getOnTrue() ||
          !isSplatNear(finite.getOnFalse(), 0))
        continue;
      max = finite.getOnTrue();
    }
    auto reduceMax = max.getDefiningOp<ReduceMaxOp>();
    if (!reduceMax || reduceMax.getOperand() != x ||
        reduceMax.getDims() != sum.getDims())
      continue;
    return x;
  }
  return {};
}

/// `v` is a float one-hot of integer targets over the last dimension of
/// `type`: convert(targets' broadcast == iota) (jax.nn.one_hot), the iota
/// a graph.iota or its folded constant (each element its last index);
/// returns the targets, of `type`'s shape without the last dimension.
/// (A target outside [0, C) has a row of zeros in JAX, which adds 0 to the
/// loss; trainc's cross-entropy reports it as an error instead, as it does
/// where take_along_axis gives NaN.)
Value oneHotTargets(Value v, RankedTensorType type) {
  auto convert = v.getDefiningOp<ConvertOp>();
  auto eq =
      convert ? convert.getOperand().getDefiningOp<CompareOp>() : CompareOp();
  if (!eq || eq.getDirection() != ComparisonDirection::EQ)
    return {};
  int64_t last = type.getRank() - 1, classes = type.getShape().back();
  auto isIota = [&](Value x) {
    if (auto iota = x.getDefiningOp<IotaOp>())
      return int64_t(iota.getDim()) == last;
    DenseIntElementsAttr values;
    if (!matchPattern(x, m_Constant(&values)))
      return false;
    int64_t i = 0;
    for (const APInt &value : values.getValues<APInt>())
      if (value.getSExtValue() != i++ % classes)
        return false;
    return true;
  };
  auto split = pick(eq.getLhs(), eq.getRhs(), isIota);
  if (!split)
    return {};
  auto b = split->second.getDefiningOp<BroadcastInDimOp>();
  if (!b || b.getDims() !=
                ArrayRef<int64_t>(llvm::to_vector(llvm::seq<int64_t>(0, last))))
    return {};
  Value targets = b.getOperand();
  Type element = getElementTypeOrSelf(targets);
  if (!(element.isInteger(32) || element.isInteger(64)) ||
      cast<RankedTensorType>(targets.getType()).getShape() !=
          type.getShape().drop_back())
    return {};
  return targets;
}

/// `v` below what sits between picked logits (or log-probabilities) and
/// the loss, each link of one reader: reshapes, transposes that move only
/// unit dims, jnp.take_along_axis's pick of its trailing unit dim (a gather
/// of index 0 of a transposed [1, ...] tensor), a NaN fill for out-of-range
/// targets (sets `sawFill`) and, when `negated` is given and false, one
/// negation (sets it). Null when a link has other readers or a select is
/// no NaN fill.
Value belowPickGuards(Value v, bool *negated, bool &sawFill) {
  while (Operation *def = v.getDefiningOp()) {
    if (!v.hasOneUse())
      return {};
    if (isa<ReshapeOp>(def) || movesOnlyUnitDims(v)) {
      v = def->getOperand(0);
    } else if (isa<NegOp>(def) && negated && !*negated) {
      *negated = true;
      v = def->getOperand(0);
    } else if (auto sel = dyn_cast<SelectOp>(def)) {
      std::optional<double> fill = splatOf(sel.getOnFalse());
      if (!fill || !std::isnan(*fill))
        return {};
      sawFill = true;
      v = sel.getOnTrue();
    } else if (auto g = dyn_cast<GatherOp>(def);
               g && g.getOperand().getType().getRank() ==
                        cast<RankedTensorType>(v.getType()).getRank()) {
      DenseIntElementsAttr index;
      auto t = g.getOperand().getDefiningOp<TransposeOp>();
      if (g.getAxis() != 0 ||
          !matchPattern(g.getIndices(), m_Constant(&index)) ||
          index.getNumElements() != 1 ||
          !(*index.getValues<APInt>().begin()).isZero() || !t ||
          !hasOneUse(g.getOperand()) || !movesOnlyUnitDims(g.getOperand()) ||
          g.getOperand().getType().getDimSize(0) != 1)
        return v;
      v = t.getOperand();
    } else {
      return v;
    }
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
    bool sawFill = false;
    Value v = belowPickGuards(op.getOperand(), &negated, sawFill);
    if (!v)
      return failure();
    Location loc = op.getLoc();
    // -sum(one_hot(targets) * log_softmax(logits), last) (Flax's examples,
    // optax.softmax_cross_entropy with one-hot labels).
    if (auto sum = v.getDefiningOp<ReduceSumOp>(); sum && negated) {
      // (take_along_axis's NaN fill guards picked values, not these sums.)
      if (sawFill)
        return failure();
      auto mul = sum.getOperand().getDefiningOp<MulOp>();
      auto type = cast<RankedTensorType>(sum.getOperand().getType());
      if (!mul || !hasOneUse(sum.getOperand()) ||
          sum.getDims() != ArrayRef<int64_t>{type.getRank() - 1})
        return failure();
      for (auto [hot, logp] : {std::pair(mul.getLhs(), mul.getRhs()),
                               std::pair(mul.getRhs(), mul.getLhs())}) {
        Value targets = oneHotTargets(hot, type);
        Value logits =
            targets && hasOneUse(logp) ? logSoftmaxInput(logp) : Value();
        if (!logits)
          continue;
        rewriter.replaceOpWithNewOp<SoftmaxCrossEntropyOp>(
            root, cast<RankedTensorType>(root->getResult(0).getType()), logits,
            targets, LossReduction::mean, IntegerAttr(),
            /*classes=*/IntegerAttr());
        return success();
      }
      return failure();
    }
    // logsumexp(logits) - logits[targets] (optax's integer labels): the
    // picked values are the logits' own.
    Value lseLogits;
    if (auto diff = v.getDefiningOp<SubOp>(); diff && !negated) {
      lseLogits = logSumExpInput(diff.getLhs());
      if (!lseLogits)
        return failure();
      negated = true;
      bool pickFill = false;
      v = belowPickGuards(diff.getRhs(), nullptr, pickFill);
      if (!v)
        return failure();
    }
    auto gather = v.getDefiningOp<GatherOp>();
    if (!negated || !gather || gather.getAxis() != 0)
      return failure();
    auto flat = gather.getOperand().getDefiningOp<ReshapeOp>();
    if (!flat || flat.getType().getRank() != 1)
      return failure();
    Value logits = lseLogits
                       ? (flat.getOperand() == lseLogits ? lseLogits : Value())
                       : logSoftmaxInput(flat.getOperand());
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
    targets = rewriter.createOrFold<ReshapeOp>(
        loc, RankedTensorType::get(logitsType.getShape().drop_back(), element),
        targets);
    rewriter.replaceOpWithNewOp<SoftmaxCrossEntropyOp>(
        root, cast<RankedTensorType>(root->getResult(0).getType()), logits,
        targets, LossReduction::mean, IntegerAttr(), /*classes=*/IntegerAttr());
    return success();
  }
};

struct RecognizeCompositesPass
    : public trainc::impl::RecognizeCompositesBase<RecognizeCompositesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<NormCore, ReciprocalSqrt, ScaleOutOfReciprocal>(&getContext());
    patterns.add<NormScale, NormBias, Gelu, Softmax, CrossEntropy>(
        &getContext());
    populateErfcPatterns(patterns);
    populateAttentionPatterns(patterns);
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
