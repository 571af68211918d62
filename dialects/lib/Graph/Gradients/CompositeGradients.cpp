//===- CompositeGradients.cpp - VJP rules of dot_general and composites --===//
//
// dot_general, softmax, gelu, layer_norm, rms_norm, dropout, attention and
// softmax_cross_entropy. Each rule recomputes the forward intermediates it
// needs (row means, reciprocal standard deviations, attention probabilities)
// from the op's operands with graph ops; whether to keep or recompute them
// is decided later by the recompute phase, not here.
//
// Precision: the composites' kernels compute in at least f32, so their rules
// widen 16-bit operands to f32, do the gradient math there and round each
// operand cotangent once at the end. dot_general needs no widening: it
// already accumulates in at least f32.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <limits>
#include <numeric>

using namespace mlir;

namespace trainc::graph {
namespace {

/// [begin, end) as a list of dims.
SmallVector<int64_t> dimRange(int64_t begin, int64_t end) {
  SmallVector<int64_t> dims(end - begin);
  std::iota(dims.begin(), dims.end(), begin);
  return dims;
}

/// Builds graph ops at one location; a thin layer that keeps the rules
/// close to their formulas.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value add(Value x, Value y) { return b.createOrFold<AddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.createOrFold<SubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.createOrFold<MulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.createOrFold<DivOp>(loc, x, y); }

  /// A splat of `like`'s type.
  Value splat(Value like, double value) {
    return splatConstant(b, loc, typeOf(like), value);
  }
  Value scaled(Value x, double factor) { return mul(x, splat(x, factor)); }

  Value sum(Value x, ArrayRef<int64_t> dims) {
    return dims.empty() ? x : b.createOrFold<ReduceSumOp>(loc, x, dims);
  }
  Value mean(Value x, ArrayRef<int64_t> dims) {
    return dims.empty() ? x : b.createOrFold<ReduceMeanOp>(loc, x, dims);
  }
  /// `reduced` (x's shape without `dims`) broadcast back to `like`'s shape.
  Value back(Value reduced, Value like, ArrayRef<int64_t> dims) {
    return broadcastBack(b, loc, reduced, typeOf(like), dims);
  }
  /// mean(x, dims), broadcast back to x's shape.
  Value meanBack(Value x, ArrayRef<int64_t> dims) {
    return back(mean(x, dims), x, dims);
  }

  /// broadcast_in_dim of `x` to `shape` (element type kept).
  Value broadcast(Value x, ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
    auto type = RankedTensorType::get(shape, typeOf(x).getElementType());
    return b.createOrFold<BroadcastInDimOp>(loc, type, x, dims);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    auto type = RankedTensorType::get(shape, typeOf(x).getElementType());
    return b.createOrFold<ReshapeOp>(loc, type, x);
  }
  Value convert(Value x, Type elementType) {
    return b.createOrFold<ConvertOp>(loc, typeOf(x).clone(elementType), x);
  }
  Value dot(Value lhs, Value rhs, ArrayRef<int64_t> lhsBatch,
            ArrayRef<int64_t> rhsBatch, ArrayRef<int64_t> lhsContract,
            ArrayRef<int64_t> rhsContract, bool tf32 = false) {
    return b.create<DotGeneralOp>(loc, lhs, rhs, lhsBatch, rhsBatch,
                                  lhsContract, rhsContract, tf32);
  }
  Value compare(ComparisonDirection direction, Value x, Value y) {
    return b.createOrFold<CompareOp>(loc, direction, x, y);
  }
  Value select(Value pred, Value onTrue, Value onFalse) {
    return b.createOrFold<SelectOp>(loc, pred, onTrue, onFalse);
  }

  /// The compute value of a composite's float operand: 16-bit floats
  /// widened to f32, f32 and f64 as they are.
  Value widen(Value x) {
    if (!x || typeOf(x).getElementType().getIntOrFloatBitWidth() >= 32)
      return x;
    return convert(x, b.getF32Type());
  }
  /// `x` rounded back to `elementType` (a no-op unless it was widened).
  Value narrow(Value x, Type elementType) {
    return x ? convert(x, elementType) : x;
  }
};

/// `x` transposed so that its dim i lands on dim `toOperand[i]`.
Value permuteTo(Emitter &e, Value x, ArrayRef<int64_t> toOperand) {
  SmallVector<int64_t> permutation(toOperand.size());
  for (auto [i, d] : llvm::enumerate(toOperand))
    permutation[d] = i;
  if (llvm::equal(permutation, dimRange(0, permutation.size())))
    return x;
  return e.b.createOrFold<TransposeOp>(e.loc, x, permutation);
}

//===----------------------------------------------------------------------===//
// dot_general
//===----------------------------------------------------------------------===//

/// With lhs dims split into batching (lb), contracting (lc) and free (lf),
/// and rhs likewise (rb, rc, rf), the result g has dims
/// [batch | lhs free | rhs free]. Each cotangent is one dot_general that
/// contracts g with the other operand over that operand's free dims, laid
/// out so that the common layouts need no transpose:
///   dLhs = dot_general(g, rhs), batch g[batch] x rb, contract g[rhs free] x rf
///          -> [batch | lhs free | rc dims in rhs order]
///   dRhs = dot_general(lhs, g), batch lb x g[batch], contract lf x g[lhs free]
///          -> [batch | lc dims in lhs order | rhs free]
/// and then a transpose into the operand's own dim order, which is the
/// identity for x[..., K] @ w[K, N] and for batched [b, m, k] x [b, k, n].
void dotGeneralVjp(DotGeneralOp dot, OpBuilder &b, Value g,
                   SmallVectorImpl<Value> &out) {
  Emitter e{b, dot.getLoc()};
  ArrayRef<int64_t> lb = dot.getLhsBatchingDimensions(),
                    rb = dot.getRhsBatchingDimensions(),
                    lc = dot.getLhsContractingDimensions(),
                    rc = dot.getRhsContractingDimensions();
  int64_t lhsRank = typeOf(dot.getLhs()).getRank(),
          rhsRank = typeOf(dot.getRhs()).getRank();
  SmallVector<int64_t> lf = dotFreeDims(lhsRank, lb, lc),
                       rf = dotFreeDims(rhsRank, rb, rc);
  int64_t nb = lb.size(), nlf = lf.size();
  SmallVector<int64_t> gBatch = dimRange(0, nb),
                       gLhsFree = dimRange(nb, nb + nlf),
                       gRhsFree = dimRange(nb + nlf, typeOf(g).getRank());

  // toLhs[i] / toRhs[i]: the operand dim that dim i of the product is.
  SmallVector<int64_t> toLhs(lb.begin(), lb.end());
  toLhs.append(lf);
  for (int64_t d = 0; d < rhsRank; ++d)
    if (const auto *it = llvm::find(rc, d); it != rc.end())
      toLhs.push_back(lc[it - rc.begin()]);
  SmallVector<int64_t> toRhs(rb.begin(), rb.end());
  for (int64_t d = 0; d < lhsRank; ++d)
    if (const auto *it = llvm::find(lc, d); it != lc.end())
      toRhs.push_back(rc[it - lc.begin()]);
  toRhs.append(rf);

  // A widened product's cotangent is narrowed to the operands' type first,
  // as the gradient of convert(product) would.
  if (dot.getF32Result())
    g = e.convert(g, typeOf(dot.getLhs()).getElementType());
  // The gradients' products round their operands as the forward's did.
  Value dLhs = e.dot(g, dot.getRhs(), gBatch, rb, gRhsFree, rf, dot.getTf32());
  Value dRhs = e.dot(dot.getLhs(), g, lb, gBatch, lf, gLhsFree, dot.getTf32());
  out.push_back(permuteTo(e, dLhs, toLhs));
  out.push_back(permuteTo(e, dRhs, toRhs));
}

//===----------------------------------------------------------------------===//
// softmax, gelu, dropout
//===----------------------------------------------------------------------===//

/// dx = y * (g - sum(g * y, dim)), from the forward result y.
void softmaxVjp(SoftmaxOp softmax, OpBuilder &b, Value cotangent,
                SmallVectorImpl<Value> &out) {
  Emitter e{b, softmax.getLoc()};
  Value g = e.widen(cotangent);
  Value y = e.widen(softmax.getResult());
  SmallVector<int64_t> dim = {int64_t(softmax.getDim())};
  Value rowDot = e.back(e.sum(e.mul(g, y), dim), y, dim);
  Value dx = e.mul(y, e.sub(g, rowDot));
  out.push_back(e.narrow(dx, softmax.getType().getElementType()));
}

/// dx = g * gelu'(x) as one graph.gelu_grad (its description has the
/// derivative of each approximation), in the compute type.
void geluVjp(GeluOp gelu, OpBuilder &b, Value cotangent,
             SmallVectorImpl<Value> &out) {
  Emitter e{b, gelu.getLoc()};
  Value g = e.widen(cotangent);
  Value x = e.widen(gelu.getOperand());
  Value dx = b.create<GeluGradOp>(e.loc, x, g, gelu.getApproximation());
  out.push_back(e.narrow(dx, gelu.getType().getElementType()));
}

/// dx = select(mask, g * scale, 0) with the forward's own mask result. The
/// kernel (runtime/src/cpu/Dropout.cpp) multiplies by scale = 1 / (1 - ratio)
/// computed in f64 and rounded to its compute type (f64 for f64, f32
/// otherwise), then rounds the product to the storage type; the rule does
/// the same, so a kept element's gradient is scaled exactly as its value was.
struct DropoutGradient
    : public GradientOpInterface::ExternalModel<DropoutGradient, DropoutOp> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b, ValueRange cotangents,
                         SmallVectorImpl<Value> &out) const {
    auto dropout = cast<DropoutOp>(op);
    Value g = cotangents[0];
    if (!g) {
      out.push_back(Value());
      return success();
    }
    Emitter e{b, op->getLoc()};
    double scale = 1.0 / (1.0 - dropout.getRatio().convertToDouble());
    Value scaled =
        e.narrow(e.scaled(e.widen(g), scale), typeOf(g).getElementType());
    out.push_back(e.select(dropout.getMask(), scaled, e.splat(g, 0.0)));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

/// Over the normalized dims N = axis..rank-1 (means below are over N), with
/// xhat the normalized input, rstd = 1 / sqrt(var + eps) and
/// dxhat = g * scale:
///   layer_norm: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
///   rms_norm:   dx = rstd * (dxhat - xhat * mean(dxhat * xhat))
///   dscale = sum over the leading dims of g * xhat;  dbias = sum of g.
/// (rms_norm is layer_norm without centring: xhat = x * rstd and the mean
/// term drops out because xhat no longer depends on a mean.)
LogicalResult buildNormVjp(Operation *op, OpBuilder &b, Value cotangent,
                           bool centre, Value input, Value scale, Value bias,
                           int64_t axis, double epsilon,
                           SmallVectorImpl<Value> &out) {
  Emitter e{b, op->getLoc()};
  Value g = e.widen(cotangent);
  if (!g) {
    out.append(op->getNumOperands(), Value());
    return success();
  }
  Value x = e.widen(input);
  SmallVector<int64_t> leading = dimRange(0, axis);
  // dx and xhat in one pass (graph.norm_grad; its kernel computes the
  // statistics as the forward's kernel does: two passes for the variance).
  auto grad = b.create<NormGradOp>(
      e.loc, x, scale ? e.widen(scale) : Value(), g, b.getI64IntegerAttr(axis),
      b.getF64FloatAttr(epsilon), b.getBoolAttr(centre));
  Value xhat = grad.getNormalized();
  out.push_back(e.narrow(grad.getInputGrad(), typeOf(input).getElementType()));
  if (scale)
    out.push_back(e.narrow(e.sum(e.mul(g, xhat), leading),
                           typeOf(scale).getElementType()));
  if (bias)
    out.push_back(e.narrow(e.sum(g, leading), typeOf(bias).getElementType()));
  return success();
}

struct LayerNormGradient
    : public GradientOpInterface::ExternalModel<LayerNormGradient,
                                                LayerNormOp> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b, ValueRange cotangents,
                         SmallVectorImpl<Value> &out) const {
    auto norm = cast<LayerNormOp>(op);
    return buildNormVjp(op, b, cotangents[0], /*centre=*/true, norm.getInput(),
                        norm.getScale(), norm.getBias(), norm.getAxis(),
                        norm.getEpsilon().convertToDouble(), out);
  }
};

struct RmsNormGradient
    : public GradientOpInterface::ExternalModel<RmsNormGradient, RmsNormOp> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b, ValueRange cotangents,
                         SmallVectorImpl<Value> &out) const {
    auto norm = cast<RmsNormOp>(op);
    return buildNormVjp(op, b, cotangents[0], /*centre=*/false, norm.getInput(),
                        norm.getScale(), /*bias=*/Value(), norm.getAxis(),
                        norm.getEpsilon().convertToDouble(), out);
  }
};

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

/// dQ, dK and dV are one graph.attention_grad (see its description). The
/// mask's cotangent is decomposed: it recomputes the probabilities
/// P = softmax(S) of the scores S = scale * q k^T + mask (causal entries
/// -inf; soft-capped, c * tanh(scale * q k^T / c) + mask), as the kernel
/// does, then dP = g V^T, dS = P * (dP - sum(dP * P,
/// keys)), and dMask = dS summed over the dims the mask broadcasts along;
/// with dropout, dP is g V^T through the forward's mask (graph.dropout of
/// the same stream: D_i = sum(dP * P) is then the kernel's sum).
/// Grouped-query attention (Hq = G * Hk, query head h reading key head
/// h / G) needs no copies of K and V: [B, Hq, Sq, X] reshapes to
/// [B, Hk, G * Sq, X], so each key head meets its G query heads as extra
/// rows. A row with no key to attend to (every score -inf) has P = 0, as
/// the kernel's output is 0 there, not softmax's NaN.
struct AttentionGradient
    : public GradientOpInterface::ExternalModel<AttentionGradient,
                                                AttentionOp> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b, ValueRange cotangents,
                         SmallVectorImpl<Value> &out) const {
    auto attention = cast<AttentionOp>(op);
    if (attention.getQkvHeads() || attention.getWithLse())
      return op->emitOpError(
          "with qkv_heads or with_lse has no gradient rule: the lower phase "
          "forms it, after differentiation");
    if (!cotangents[0]) {
      out.append(op->getNumOperands(), Value());
      return success();
    }
    // Query, key and value: the fused op, which never materializes the
    // scores. The mask's cotangent (a learned bias such as T5's relative
    // positions has one) is dS summed to the mask's shape, decomposed
    // below; when nothing needs it, it is dead and the canonicalizer
    // removes it.
    // Layouts: the cotangent is stored as the result (3), each gradient as
    // its operand (dq 4 as q 0, and so on).
    SmallVector<int64_t> seqMajor;
    for (int64_t i : {0, 1, 2, 3})
      if (attention.isSeqMajor(i))
        seqMajor.push_back(i);
    for (int64_t i : {0, 1, 2})
      if (attention.isSeqMajor(i))
        seqMajor.push_back(4 + i);
    auto fused = b.create<AttentionGradOp>(
        op->getLoc(),
        TypeRange{attention.getQuery().getType(), attention.getKey().getType(),
                  attention.getValue().getType()},
        attention.getQuery(), attention.getKey(), attention.getValue(),
        cotangents[0], attention.getMask(), /*stats=*/ValueRange(),
        attention.getScaleAttr(), attention.getCausalAttr(),
        attention.getSoftcapAttr(), attention.getDropoutAttr(),
        attention.getSeedAttr(), attention.getDataSeedStrideAttr(),
        seqMajor.empty() ? DenseI64ArrayAttr()
                         : b.getDenseI64ArrayAttr(seqMajor),
        /*qkv_heads=*/DenseI64ArrayAttr(), attention.getHeadBlocksAttr());
    out.append(fused->getResults().begin(), fused->getResults().end());
    if (!attention.getMask())
      return success();
    Emitter e{b, op->getLoc()};
    // The mask's gradient below reads every tensor as [B, H, S, D].
    auto headMajor = [&](Value x, int64_t tensor) {
      return attention.isSeqMajor(tensor)
                 ? b.createOrFold<TransposeOp>(e.loc, x,
                                               ArrayRef<int64_t>{0, 2, 1, 3})
                 : x;
    };
    Value g = e.widen(headMajor(cotangents[0], 3));
    Value q = e.widen(headMajor(attention.getQuery(), 0)),
          k = e.widen(headMajor(attention.getKey(), 1)),
          v = e.widen(headMajor(attention.getValue(), 2)),
          mask = e.widen(attention.getMask());
    double scale = attention.getScale().convertToDouble();
    ArrayRef<int64_t> qShape = typeOf(q).getShape();
    int64_t batch = qShape[0], hq = qShape[1], sq = qShape[2];
    int64_t hk = typeOf(k).getDimSize(1), sk = typeOf(k).getDimSize(2);
    int64_t group = hq / hk;
    SmallVector<int64_t> scoresShape = {batch, hq, sq, sk};
    SmallVector<int64_t> keys = {3};

    // [B, Hq, Sq, X] <-> [B, Hk, G * Sq, X].
    auto grouped = [&](Value x) {
      return e.reshape(x, {batch, hk, group * sq, typeOf(x).getDimSize(3)});
    };
    auto ungrouped = [&](Value x) {
      return e.reshape(x, {batch, hq, sq, typeOf(x).getDimSize(3)});
    };
    // Products batched over [B, Hk] contracting dim c of x and dim d of y.
    auto headDot = [&](Value x, Value y, int64_t c, int64_t d) {
      return e.dot(x, y, {0, 1}, {0, 1}, {c}, {d});
    };

    Value qg = grouped(q), gg = grouped(g);
    Value scores = e.scaled(ungrouped(headDot(qg, k, 3, 3)), scale);
    if (std::optional<APFloat> softcap = attention.getSoftcap()) {
      double c = softcap->convertToDouble();
      scores = e.scaled(b.create<TanhOp>(e.loc, e.scaled(scores, 1.0 / c)), c);
    }
    if (mask)
      scores = e.add(scores, e.broadcast(mask, scoresShape, {0, 1, 2, 3}));
    const double negInf = -std::numeric_limits<double>::infinity();
    if (attention.getCausal()) {
      // Key j is visible to query i when j <= i + (Sk - Sq).
      auto indexType = RankedTensorType::get({sq, sk}, b.getI64Type());
      Value i = b.createOrFold<IotaOp>(e.loc, indexType, 0);
      Value j = b.createOrFold<IotaOp>(e.loc, indexType, 1);
      if (sk != sq)
        i = e.add(i, e.splat(i, double(sk - sq)));
      Value visible = e.broadcast(e.compare(ComparisonDirection::LE, j, i),
                                  scoresShape, {2, 3});
      scores = e.select(visible, scores, e.splat(scores, negInf));
    }
    Value p = b.create<SoftmaxOp>(e.loc, scores, 3);
    // Rows can be empty only through the mask or a causal Sq > Sk.
    if (mask || (attention.getCausal() && sq > sk)) {
      Value rowMax = b.createOrFold<ReduceMaxOp>(e.loc, scores, keys);
      Value live =
          e.compare(ComparisonDirection::NE, rowMax, e.splat(rowMax, negInf));
      p = e.select(e.broadcast(live, scoresShape, {0, 1, 2}), p,
                   e.splat(p, 0.0));
    }

    Value dp = ungrouped(headDot(gg, v, 3, 3)); // [B, Hq, Sq, Sk]
    // Dropout: dp so far is the dropped probabilities' cotangent; the
    // probabilities' own is it through the forward's mask, which
    // graph.dropout of the same stream over [B, Hq, Sq, Sk] draws again.
    if (std::optional<APFloat> ratio = attention.getDropout()) {
      // The dropout numbers its operand as a whole: a block of the heads
      // would need its `blocks` (autodiff runs before partitioning, which
      // sets both ops' blocks).
      if (attention.getHeadBlocks() != 1)
        return op->emitOpError("the gradient of a mask under dropout needs "
                               "the whole heads, not a block of ")
               << attention.getHeadBlocks();
      auto drop = b.create<DropoutOp>(e.loc, dp, *ratio, attention.getSeed());
      drop.setDataSeedStride(attention.getDataSeedStride());
      dp = drop.getResult();
    }
    Value rowDot = e.back(e.sum(e.mul(dp, p), keys), dp, keys);
    Value ds = e.mul(p, e.sub(dp, rowDot)); // d(scores)
    out.push_back(
        e.narrow(sumToOperand(b, e.loc, ds, typeOf(mask), {0, 1, 2, 3}),
                 typeOf(attention.getMask()).getElementType()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// softmax_cross_entropy
//===----------------------------------------------------------------------===//

/// dlogits = (softmax(logits) - onehot(targets)) * w, w the weight of each
/// position in the reduction: g itself (none), g (sum) or g / n (mean, n
/// the number of positions not ignored), and 0 at ignored positions.
/// Targets are integers: no cotangent.
struct SoftmaxCrossEntropyGradient
    : public GradientOpInterface::ExternalModel<SoftmaxCrossEntropyGradient,
                                                SoftmaxCrossEntropyOp> {
  LogicalResult buildVjp(Operation *op, OpBuilder &b, ValueRange cotangents,
                         SmallVectorImpl<Value> &out) const {
    auto ce = cast<SoftmaxCrossEntropyOp>(op);
    Emitter e{b, op->getLoc()};
    Value g = e.widen(cotangents[0]);
    if (!g) {
      out.append(2, Value());
      return success();
    }
    // 16-bit logits stay 16-bit: the gradient op computes each row in f32
    // and rounds the result once, with weights in the loss's type.
    Value logits = ce.getLogits(), targets = ce.getTargets();
    RankedTensorType logitsType = typeOf(logits);
    int64_t classDim = logitsType.getRank() - 1;
    ArrayRef<int64_t> positionShape = typeOf(targets).getShape();
    Type computeType = typeOf(g).getElementType();

    // The weight of each position.
    Value live;
    if (IntegerAttr ignore = ce.getIgnoreIndexAttr())
      live = e.compare(ComparisonDirection::NE, targets,
                       e.splat(targets, double(ignore.getInt())));
    Value scalar = g;
    if (ce.getReduction() == LossReduction::mean) {
      Value count =
          live ? e.sum(e.convert(live, computeType), dimRange(0, classDim))
               : e.splat(g, double(typeOf(targets).getNumElements()));
      scalar = e.div(g, count);
    }
    Value weight = ce.getReduction() == LossReduction::none
                       ? g
                       : e.broadcast(scalar, positionShape, {});
    if (live)
      weight = e.select(live, weight, e.splat(weight, 0.0));

    // (softmax - onehot) * weight, one pass over the logits.
    Value dlogits = b.create<SoftmaxCrossEntropyGradOp>(
        e.loc, logitsType, logits, targets, weight, ce.getClassesAttr());
    out.push_back(dlogits);
    out.push_back(Value());
    return success();
  }
};

} // namespace

void attachCompositeGradients(MLIRContext &context) {
  DotGeneralOp::attachInterface<Gradient<DotGeneralOp, dotGeneralVjp>>(context);
  SoftmaxOp::attachInterface<Gradient<SoftmaxOp, softmaxVjp>>(context);
  GeluOp::attachInterface<Gradient<GeluOp, geluVjp>>(context);
  DropoutOp::attachInterface<DropoutGradient>(context);
  LayerNormOp::attachInterface<LayerNormGradient>(context);
  RmsNormOp::attachInterface<RmsNormGradient>(context);
  AttentionOp::attachInterface<AttentionGradient>(context);
  SoftmaxCrossEntropyOp::attachInterface<SoftmaxCrossEntropyGradient>(context);
}

} // namespace trainc::graph
