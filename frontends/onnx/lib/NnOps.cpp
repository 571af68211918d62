//===- NnOps.cpp - ONNX linear algebra, softmax, norms and losses ---------===//

#include "ImportContext.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// log(softmax(x)) along `axis`, computed stably as
/// (x - max) - log(sum(exp(x - max))).
Value logSoftmax(NodeContext &ctx, Value x, int64_t axis) {
  ArrayRef<int64_t> shape = ctx.inputType(x).getShape();
  int64_t dims[] = {axis};
  Value max = expandReduced(ctx, ctx.create<ReduceMaxOp>(x, dims), shape, dims);
  Value shifted = ctx.create<SubOp>(x, max);
  Value sum = ctx.create<ReduceSumOp>(ctx.create<ExpOp>(shifted), dims);
  Value lse = expandReduced(ctx, ctx.create<LogOp>(sum), shape, dims);
  return ctx.create<SubOp>(shifted, lse);
}

/// The normalized shape's affine operand, broadcast to it if needed.
FailureOr<Value> affineOperand(NodeContext &ctx, int i, RankedTensorType input,
                               int64_t axis, StringRef what) {
  auto v = ctx.input(i);
  if (failed(v))
    return failure();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  auto type = ctx.inputType(*v);
  if (type.getElementType() != input.getElementType())
    return ctx.error() << what << " has element type " << type.getElementType()
                       << " but the input has " << input.getElementType();
  if (type.getShape() == normalized)
    return *v;
  // Drop leading unit dims, then broadcast into the normalized shape.
  ArrayRef<int64_t> shape = type.getShape();
  while (shape.size() > normalized.size() && shape.front() == 1)
    shape = shape.drop_front();
  bool ok = shape.size() <= normalized.size();
  for (size_t k = 0; ok && k < shape.size(); ++k) {
    int64_t n = normalized[normalized.size() - shape.size() + k];
    ok = shape[k] == 1 || shape[k] == n;
  }
  if (!ok)
    return ctx.error() << what << " " << v->getType()
                       << " does not broadcast to the normalized shape";
  return ctx.broadcastTo(ctx.reshape(*v, shape), normalized);
}

/// Input 0, which must be a float tensor, and the `axis` attribute
/// (default -1) normalized against its rank: the shared prologue of
/// softmax and the normalizations.
FailureOr<std::pair<Value, int64_t>> floatInputAndAxis(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "the input")))
    return failure();
  auto axis = ctx.normalizeAxis(ctx.intAttr("axis", -1),
                                ctx.inputType(*x).getRank(), "axis");
  if (failed(axis))
    return failure();
  return std::make_pair(*x, *axis);
}

/// Dropout's seed: the node's `seed` attribute, else one derived from the
/// import seed and the node's position (splitmix64), stable across runs.
int64_t dropoutSeed(NodeContext &ctx) {
  if (const auto *attr = ctx.attribute("seed"))
    return attr->i();
  uint64_t z = ctx.graph.dropoutSeed + 0x9E3779B97F4A7C15ull * (ctx.index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<int64_t>((z ^ (z >> 31)) >> 1);
}

/// "mean", "sum" or "none" as a LossReduction.
FailureOr<LossReduction> lossReduction(NodeContext &ctx) {
  std::string r = ctx.stringAttr("reduction", "mean");
  if (r == "mean")
    return LossReduction::mean;
  if (r == "sum")
    return LossReduction::sum;
  if (r == "none")
    return LossReduction::none;
  return ctx.error() << "unknown reduction '" << r << "'";
}

/// Moves dimension 1 (classes, as ONNX losses lay them out) to the end.
Value classesLast(NodeContext &ctx, Value x) {
  int64_t rank = ctx.inputType(x).getRank();
  if (rank <= 2)
    return x;
  SmallVector<int64_t> perm = {0};
  llvm::append_range(perm, iotaVector(2, rank));
  perm.push_back(1);
  return ctx.create<TransposeOp>(x, perm);
}

/// Checks [N, C, d...] scores against [N, d...] integer labels.
LogicalResult checkLossShapes(NodeContext &ctx, Value scores, Value labels) {
  auto s = ctx.inputType(scores), l = ctx.inputType(labels);
  if (failed(ctx.requireFloat(scores, "input 0")))
    return failure();
  Type le = l.getElementType();
  if (!(le.isInteger(32) || le.isInteger(64)))
    return ctx.error() << "labels must be int32 or int64, got "
                       << labels.getType();
  SmallVector<int64_t> expected(s.getShape());
  if (s.getRank() < 2)
    return ctx.error() << "input 0 must have rank at least 2 [N, C, ...], got "
                       << scores.getType();
  expected.erase(expected.begin() + 1);
  if (l.getShape() != ArrayRef<int64_t>(expected))
    return ctx.error() << "labels " << labels.getType()
                       << " must have the scores' shape without dimension 1";
  return success();
}

} // namespace

FailureOr<double> epsilonAttr(NodeContext &ctx) {
  double epsilon = ctx.floatAttr("epsilon", 1e-5f);
  if (!std::isfinite(epsilon) || epsilon < 0)
    return ctx.error() << "epsilon " << epsilon
                       << " must be finite and not negative";
  return epsilon;
}

/// numpy matmul: 1-D operands are promoted to matrices and the added
/// dimension removed after; batch dimensions broadcast. A rank-2 right
/// operand (a weight) is contracted directly, never broadcast, so the
/// gradient of the weight needs no reduction over a broadcast copy.
LogicalResult importMatMul(NodeContext &ctx) {
  auto a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b) || failed(ctx.requireFloat(*a, "input 0")))
    return failure();
  auto at = ctx.inputType(*a), bt = ctx.inputType(*b);
  if (at.getElementType() != bt.getElementType())
    return ctx.error() << "inputs have different element types: " << at
                       << " and " << bt;
  if (at.getRank() < 1 || bt.getRank() < 1)
    return ctx.error() << "inputs must have rank at least 1";
  Value lhs = *a, rhs = *b;
  bool lhsVector = at.getRank() == 1, rhsVector = bt.getRank() == 1;
  if (lhsVector)
    lhs = ctx.reshape(lhs, {1, at.getDimSize(0)});
  if (rhsVector)
    rhs = ctx.reshape(rhs, {bt.getDimSize(0), 1});
  auto lt = ctx.inputType(lhs), rt = ctx.inputType(rhs);
  int64_t lr = lt.getRank(), rr = rt.getRank();
  if (lt.getDimSize(lr - 1) != rt.getDimSize(rr - 2))
    return ctx.error() << "inner dimensions differ: " << at << " x " << bt;
  Value result;
  if (rr == 2) {
    result = ctx.create<DotGeneralOp>(
        lhs, rhs, ArrayRef<int64_t>{}, ArrayRef<int64_t>{},
        ArrayRef<int64_t>{lr - 1}, ArrayRef<int64_t>{0});
  } else {
    // Broadcast the batch dimensions (all but the last two).
    SmallVector<int64_t> lb(lt.getShape().drop_back(2)),
        rb(rt.getShape().drop_back(2));
    size_t nb = std::max(lb.size(), rb.size());
    lb.insert(lb.begin(), nb - lb.size(), 1);
    rb.insert(rb.begin(), nb - rb.size(), 1);
    SmallVector<int64_t> batch;
    for (size_t k = 0; k < nb; ++k) {
      if (lb[k] != rb[k] && lb[k] != 1 && rb[k] != 1)
        return ctx.error() << "batch dimensions do not broadcast: " << at
                           << " x " << bt;
      batch.push_back(lb[k] == 1 ? rb[k] : lb[k]);
    }
    SmallVector<int64_t> ls(batch), rs(batch);
    llvm::append_range(ls, lt.getShape().take_back(2));
    llvm::append_range(rs, rt.getShape().take_back(2));
    lhs = ctx.broadcastTo(lhs, ls);
    rhs = ctx.broadcastTo(rhs, rs);
    int64_t n = nb;
    SmallVector<int64_t> batchDims = iotaVector(0, n);
    result = ctx.create<DotGeneralOp>(lhs, rhs, batchDims, batchDims,
                                      ArrayRef<int64_t>{n + 1},
                                      ArrayRef<int64_t>{n});
  }
  if (lhsVector || rhsVector) {
    SmallVector<int64_t> shape(ctx.inputType(result).getShape());
    if (rhsVector)
      shape.pop_back();
    if (lhsVector)
      shape.erase(shape.end() - (rhsVector ? 1 : 2));
    result = ctx.reshape(result, shape);
  }
  ctx.setOutput(0, result);
  return success();
}

/// Y = alpha * op(A) @ op(B) + beta * C.
LogicalResult importGemm(NodeContext &ctx) {
  auto a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b) || failed(ctx.requireFloat(*a, "input 0")))
    return failure();
  auto at = ctx.inputType(*a), bt = ctx.inputType(*b);
  if (at.getRank() != 2 || bt.getRank() != 2 ||
      at.getElementType() != bt.getElementType())
    return ctx.error() << "A and B must be matrices of one element type, got "
                       << at << " and " << bt;
  bool transA = ctx.intAttr("transA", 0), transB = ctx.intAttr("transB", 0);
  int64_t ka = transA ? 0 : 1, kb = transB ? 1 : 0;
  if (at.getDimSize(ka) != bt.getDimSize(kb))
    return ctx.error() << "inner dimensions differ: " << at << " x " << bt;
  Value y =
      ctx.create<DotGeneralOp>(*a, *b, ArrayRef<int64_t>{}, ArrayRef<int64_t>{},
                               ArrayRef<int64_t>{ka}, ArrayRef<int64_t>{kb});
  auto yt = ctx.inputType(y);
  float alpha = ctx.floatAttr("alpha", 1.0f),
        beta = ctx.floatAttr("beta", 1.0f);
  if (alpha != 1.0f)
    y = ctx.create<MulOp>(y, ctx.splat(yt, alpha));
  if (ctx.hasInput(2)) {
    auto c = ctx.input(2);
    if (failed(c))
      return failure();
    auto ct = ctx.inputType(*c);
    bool ok = ct.getRank() <= 2 && ct.getElementType() == yt.getElementType();
    for (int64_t k = 0; ok && k < ct.getRank(); ++k) {
      int64_t n = yt.getDimSize(2 - ct.getRank() + k);
      ok = ct.getDimSize(k) == 1 || ct.getDimSize(k) == n;
    }
    if (!ok)
      return ctx.error() << "C " << ct << " does not broadcast to " << yt;
    Value cb = ctx.broadcastTo(*c, yt.getShape());
    if (beta != 1.0f)
      cb = ctx.create<MulOp>(cb, ctx.splat(yt, beta));
    y = ctx.create<AddOp>(y, cb);
  }
  ctx.setOutput(0, y);
  return success();
}

LogicalResult importSoftmax(NodeContext &ctx) {
  auto xAxis = floatInputAndAxis(ctx);
  if (failed(xAxis))
    return failure();
  ctx.setOutput(0, ctx.create<SoftmaxOp>(xAxis->first, xAxis->second));
  return success();
}

LogicalResult importLogSoftmax(NodeContext &ctx) {
  auto xAxis = floatInputAndAxis(ctx);
  if (failed(xAxis))
    return failure();
  ctx.setOutput(0, logSoftmax(ctx, xAxis->first, xAxis->second));
  return success();
}

LogicalResult importLayerNormalization(NodeContext &ctx) {
  auto xAxis = floatInputAndAxis(ctx);
  if (failed(xAxis))
    return failure();
  auto [x, axis] = *xAxis;
  auto type = ctx.inputType(x);
  auto epsilonOr = epsilonAttr(ctx);
  auto scale = affineOperand(ctx, 1, type, axis, "scale");
  if (failed(epsilonOr) || failed(scale))
    return failure();
  double epsilon = *epsilonOr;
  Value bias;
  if (ctx.hasInput(2)) {
    auto b = affineOperand(ctx, 2, type, axis, "bias");
    if (failed(b))
      return failure();
    bias = *b;
  }
  ctx.setOutput(
      0, ctx.create<LayerNormOp>(x, *scale, bias, axis, APFloat(epsilon)));
  if (ctx.outputRequested(1) || ctx.outputRequested(2)) {
    // Mean and 1/stddev over the normalized dims, kept as size 1, in f32
    // (stash_type 1) or the input type (stash_type 0).
    Type stash = ctx.intAttr("stash_type", 1) == 1 ? ctx.builder.getF32Type()
                                                   : type.getElementType();
    Value xs = ctx.convert(x, stash);
    SmallVector<int64_t> dims = iotaVector(axis, type.getRank());
    Value mean = ctx.create<ReduceMeanOp>(xs, dims);
    Value centered =
        ctx.create<SubOp>(xs, expandReduced(ctx, mean, type.getShape(), dims));
    Value var =
        ctx.create<ReduceMeanOp>(ctx.create<MulOp>(centered, centered), dims);
    auto varType = ctx.inputType(var);
    Value invStd = ctx.create<RsqrtOp>(
        ctx.create<AddOp>(var, ctx.splat(varType, epsilon)));
    SmallVector<int64_t> kept(type.getShape());
    for (int64_t d : dims)
      kept[d] = 1;
    ctx.setOutput(1, ctx.reshape(mean, kept));
    ctx.setOutput(2, ctx.reshape(invStd, kept));
  }
  return success();
}

/// InstanceNormalization: X [N, C, D...] normalized over its spatial
/// dimensions for each (n, c) (a graph.layer_norm over them, without
/// scale or bias), then scale [C] and B [C] along the channels. PyTorch exports
/// GroupNorm this way, on X reshaped to [N, groups, rest].
LogicalResult importInstanceNormalization(NodeContext &ctx) {
  auto x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (failed(x) || failed(scale) || failed(bias) ||
      failed(ctx.requireFloat(*x, "the input")))
    return failure();
  auto epsilon = epsilonAttr(ctx);
  if (failed(epsilon))
    return failure();
  auto type = ctx.inputType(*x);
  if (type.getRank() < 3)
    return ctx.error() << "needs an input [N, C, D...] with at least one "
                          "spatial dimension, got "
                       << type;
  int64_t c = type.getDimSize(1);
  for (Value v : {*scale, *bias}) {
    auto t = ctx.inputType(v);
    if (t.getRank() != 1 || t.getDimSize(0) != c ||
        t.getElementType() != type.getElementType())
      return ctx.error() << "needs scale and B of shape [" << c
                         << "] and the input's type, got " << t;
  }
  // No layer-norm scale (1): the per-channel scale follows.
  Value normalized = ctx.create<LayerNormOp>(*x, Value(), Value(), /*axis=*/2,
                                             APFloat(*epsilon));
  auto along = [&](Value v) {
    return ctx.create<BroadcastInDimOp>(type, v, ArrayRef<int64_t>{1});
  };
  ctx.setOutput(0,
                ctx.create<AddOp>(ctx.create<MulOp>(normalized, along(*scale)),
                                  along(*bias)));
  return success();
}

LogicalResult importRMSNormalization(NodeContext &ctx) {
  auto xAxis = floatInputAndAxis(ctx);
  if (failed(xAxis))
    return failure();
  auto [x, axis] = *xAxis;
  auto epsilon = epsilonAttr(ctx);
  auto scale = affineOperand(ctx, 1, ctx.inputType(x), axis, "scale");
  if (failed(epsilon) || failed(scale))
    return failure();
  ctx.setOutput(0, ctx.create<RmsNormOp>(x, *scale, axis, APFloat(*epsilon)));
  return success();
}

LogicalResult importGelu(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "the input")))
    return failure();
  std::string approximate = ctx.stringAttr("approximate", "none");
  GeluApproximation kind;
  if (approximate == "none")
    kind = GeluApproximation::erf;
  else if (approximate == "tanh")
    kind = GeluApproximation::tanh;
  else
    return ctx.error() << "unknown approximate '" << approximate << "'";
  ctx.setOutput(0, ctx.create<GeluOp>(*x, kind));
  return success();
}

/// Inference mode (the default, and --eval-mode) is the identity with an
/// all-true mask; training mode becomes graph.dropout with a reproducible
/// seed. Without a training_mode input the node is in inference mode
/// (ONNX's definition), except in a training step with
/// --train-modeless-dropout.
LogicalResult importDropout(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "the input")))
    return failure();
  double ratio = 0.5;
  if (ctx.hasInput(1)) {
    auto r = ctx.scalarInput(1, "ratio");
    if (failed(r))
      return failure();
    ratio = *r;
  }
  bool training = false;
  if (ctx.hasInput(2)) {
    auto t = ctx.scalarInput(2, "training_mode");
    if (failed(t))
      return failure();
    training = *t != 0 && !ctx.graph.evalMode;
  } else if (ratio > 0 && ctx.graph.trainingStep && !ctx.graph.evalMode) {
    // What both PyTorch exporters write for scaled_dot_product_attention's
    // dropout_p, even in training mode.
    training = ctx.graph.trainModelessDropout;
    if (!training)
      ctx.graph.modelessDropouts.push_back(ctx.describe());
  }
  auto type = ctx.inputType(*x);
  auto maskType =
      RankedTensorType::get(type.getShape(), ctx.builder.getI1Type());
  if (!training || ratio == 0) {
    ctx.setOutput(0, *x);
    ctx.setOutput(1, ctx.splat(maskType, 1));
    return success();
  }
  if (!(ratio > 0 && ratio < 1))
    return ctx.error() << "ratio " << ratio << " is not in [0, 1)";
  auto op = ctx.builder.create<DropoutOp>(ctx.loc, *x, APFloat(ratio),
                                          dropoutSeed(ctx));
  ctx.setOutput(0, op.getResult());
  ctx.setOutput(1, op.getMask());
  return success();
}

/// The class weights (input 2) of a loss node, checked: a 1-D tensor of the
/// scores' element type with one weight per class; null when not given.
FailureOr<Value> classWeights(NodeContext &ctx, RankedTensorType scores) {
  if (!ctx.hasInput(2))
    return Value();
  auto w = ctx.input(2);
  if (failed(w))
    return failure();
  auto wt = ctx.inputType(*w);
  if (wt.getRank() != 1 || wt.getDimSize(0) != scores.getDimSize(1) ||
      wt.getElementType() != scores.getElementType())
    return ctx.error() << "input 2 (class weights) must be "
                       << RankedTensorType::get({scores.getDimSize(1)},
                                                scores.getElementType())
                       << ", one weight per class; got " << wt;
  return *w;
}

/// The reduction of a per-element loss that is 0 where the target is
/// ignored, with class weights (ONNX): each element is scaled by
/// weight[target] (0 when ignored); "sum" adds them, "mean" divides that by
/// the sum of the weights of the elements counted.
Value weightedLoss(NodeContext &ctx, Value loss, Value target, Value weights,
                   std::optional<int64_t> ignore, LossReduction reduction) {
  auto lt = ctx.inputType(loss), tt = ctx.inputType(target);
  int64_t rank = lt.getRank();
  // Ignored targets may be out of range: gather class 0 there, then zero.
  Value valid = ignore ? ctx.create<CompareOp>(ComparisonDirection::NE, target,
                                               ctx.splat(tt, double(*ignore)))
                       : ctx.splat(RankedTensorType::get(
                                       tt.getShape(), ctx.builder.getI1Type()),
                                   1);
  Value safe = ctx.create<SelectOp>(valid, target, ctx.splat(tt, 0));
  Value w = ctx.create<SelectOp>(valid, ctx.create<GatherOp>(weights, safe, 0),
                                 ctx.splat(lt, 0));
  loss = ctx.create<MulOp>(loss, w);
  if (reduction == LossReduction::none)
    return loss;
  Value total = ctx.create<ReduceSumOp>(loss, iotaVector(0, rank));
  if (reduction == LossReduction::sum)
    return total;
  return ctx.create<DivOp>(total,
                           ctx.create<ReduceSumOp>(w, iotaVector(0, rank)));
}

LogicalResult importSoftmaxCrossEntropyLoss(NodeContext &ctx) {
  auto scores = ctx.input(0), labels = ctx.input(1);
  if (failed(scores) || failed(labels) ||
      failed(checkLossShapes(ctx, *scores, *labels)))
    return failure();
  auto weights = classWeights(ctx, ctx.inputType(*scores));
  auto reduction = lossReduction(ctx);
  if (failed(weights) || failed(reduction))
    return failure();
  IntegerAttr ignore;
  std::optional<int64_t> ignoreIndex;
  if (ctx.attribute("ignore_index")) {
    ignoreIndex = ctx.intAttr("ignore_index", 0);
    ignore = ctx.builder.getI64IntegerAttr(*ignoreIndex);
  }
  Value logits = classesLast(ctx, *scores);
  if (*weights)
    // Per element (0 where ignored), then weighted and reduced.
    ctx.setOutput(0,
                  weightedLoss(ctx,
                               ctx.create<SoftmaxCrossEntropyOp>(
                                   logits, *labels, LossReduction::none, ignore,
                                   /*classes=*/IntegerAttr()),
                               *labels, *weights, ignoreIndex, *reduction));
  else
    ctx.setOutput(0, ctx.create<SoftmaxCrossEntropyOp>(
                         logits, *labels, *reduction, ignore,
                         /*classes=*/IntegerAttr()));
  if (ctx.outputRequested(1))
    ctx.setOutput(1, logSoftmax(ctx, *scores, 1));
  return success();
}

/// loss[i] = -input[i, target[i]] (input holds log-probabilities), as a
/// one-hot select and sum over the classes, masked by ignore_index.
LogicalResult importNegativeLogLikelihoodLoss(NodeContext &ctx) {
  auto input = ctx.input(0), target = ctx.input(1);
  if (failed(input) || failed(target) ||
      failed(checkLossShapes(ctx, *input, *target)))
    return failure();
  auto weights = classWeights(ctx, ctx.inputType(*input));
  auto reduction = lossReduction(ctx);
  if (failed(weights) || failed(reduction))
    return failure();
  Value x = classesLast(ctx, *input);
  auto xt = ctx.inputType(x), tt = ctx.inputType(*target);
  int64_t rank = xt.getRank();
  auto iotaType = RankedTensorType::get(xt.getShape(), tt.getElementType());
  Value classes = ctx.create<IotaOp>(iotaType, rank - 1);
  Value wanted =
      ctx.create<BroadcastInDimOp>(iotaType, *target, iotaVector(0, rank - 1));
  Value onehot =
      ctx.create<CompareOp>(ComparisonDirection::EQ, classes, wanted);
  Value picked =
      ctx.create<ReduceSumOp>(ctx.create<SelectOp>(onehot, x, ctx.splat(xt, 0)),
                              ArrayRef<int64_t>{rank - 1});
  Value loss = ctx.create<NegOp>(picked);
  auto lossType = ctx.inputType(loss);
  if (*weights) {
    std::optional<int64_t> ignore;
    if (ctx.attribute("ignore_index"))
      ignore = ctx.intAttr("ignore_index", 0);
    if (ignore) {
      Value valid = ctx.create<CompareOp>(ComparisonDirection::NE, *target,
                                          ctx.splat(tt, double(*ignore)));
      loss = ctx.create<SelectOp>(valid, loss, ctx.splat(lossType, 0));
    }
    ctx.setOutput(
        0, weightedLoss(ctx, loss, *target, *weights, ignore, *reduction));
    return success();
  }
  Value count;
  if (ctx.attribute("ignore_index")) {
    Value valid = ctx.create<CompareOp>(
        ComparisonDirection::NE, *target,
        ctx.splat(tt, double(ctx.intAttr("ignore_index", 0))));
    loss = ctx.create<SelectOp>(valid, loss, ctx.splat(lossType, 0));
    count = ctx.create<ReduceSumOp>(ctx.convert(valid, xt.getElementType()),
                                    iotaVector(0, lossType.getRank()));
  } else {
    count = ctx.splat(RankedTensorType::get({}, xt.getElementType()),
                      double(lossType.getNumElements()));
  }
  if (*reduction != LossReduction::none) {
    loss = ctx.create<ReduceSumOp>(loss, iotaVector(0, lossType.getRank()));
    if (*reduction == LossReduction::mean)
      loss = ctx.create<DivOp>(loss, count);
  }
  ctx.setOutput(0, loss);
  return success();
}

} // namespace trainc::onnx_import
