//===- Optimizer.cpp - The optimizer step after the backward pass ---------===//
//
// See Optimizer in Passes.td. Scalar arithmetic (bias corrections, the
// schedule, the clipping factor) is done on 0-d f64 tensors and converted
// once to each parameter's element type, as PyTorch does with its Python
// float scalars.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Partition.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstdio>

namespace trainc {
#define GEN_PASS_DEF_OPTIMIZER
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// Clean steps after which the dynamic loss scale doubles (GradScaler's
/// growth_interval).
constexpr int64_t kGrowthInterval = 2000;

/// Builds the step's ops before the function's return.
class StepBuilder {
public:
  StepBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  RankedTensorType f64Scalar() const {
    return RankedTensorType::get({}, b.getF64Type());
  }
  Value constant(RankedTensorType type, double v) {
    Type e = type.getElementType();
    Attribute a = isa<FloatType>(e)
                      ? Attribute(b.getFloatAttr(e, v))
                      : Attribute(b.getIntegerAttr(e, int64_t(v)));
    return b.create<ConstantOp>(loc, SplatElementsAttr::get(type, a));
  }
  Value f64(double v) { return constant(f64Scalar(), v); }
  /// A 0-d value converted to `e` and broadcast to `type`'s shape.
  Value spread(Value scalar, RankedTensorType type) {
    Value s = convert(scalar, type.getElementType());
    if (type.getRank() == 0)
      return s;
    return b.create<BroadcastInDimOp>(loc, type, s, ArrayRef<int64_t>{});
  }
  Value convert(Value v, Type e) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() == e)
      return v;
    return b.create<ConvertOp>(loc, RankedTensorType::get(t.getShape(), e), v);
  }
  template <typename OpT> Value op(Value x, Value y) {
    return b.create<OpT>(loc, x, y);
  }
  OpBuilder &b;
  Location loc;
};

struct OptimizerPass : public trainc::impl::OptimizerBase<OptimizerPass> {
  using OptimizerBase::OptimizerBase;

  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("optimizer: no function @main");
      return signalPassFailure();
    }
    if (failed(checkOptions(fn)) || failed(build(fn)))
      signalPassFailure();
  }

  LogicalResult checkOptions(func::FuncOp fn) {
    if (optimizer != "adamw" && optimizer != "sgd")
      return fn.emitError("optimizer: unknown optimizer '")
             << optimizer << "' (adamw or sgd)";
    // Each hyper-parameter by its option name; infinities and NaN are never
    // valid (an infinite lr would train one step into non-finite weights).
    struct Check {
      const char *name;
      double value;
      bool ok;
      const char *want;
    };
    const Check checks[] = {
        {"lr", lr, lr > 0, "a finite number > 0"},
        {"min-lr", minLr, minLr >= 0, "a finite number >= 0"},
        {"weight-decay", weightDecay, weightDecay >= 0, "a finite number >= 0"},
        {"clip-grad-norm", clipGradNorm, clipGradNorm >= 0,
         "a finite number >= 0 (0: no clipping)"},
        {"momentum", momentum, momentum >= 0, "a finite number >= 0"},
        {"beta1", beta1, beta1 >= 0 && beta1 < 1, "a number in [0, 1)"},
        {"beta2", beta2, beta2 >= 0 && beta2 < 1, "a number in [0, 1)"},
        {"eps", eps, eps >= 0, "a finite number >= 0"},
    };
    for (const Check &c : checks)
      if (!c.ok || !std::isfinite(c.value)) {
        char value[32];
        std::snprintf(value, sizeof value, "%g", c.value);
        return fn.emitError("optimizer: --")
               << c.name << " " << value << " is invalid: it must be "
               << c.want;
      }
    if (warmupSteps < 0 || totalSteps < 0 || decaySteps < 0)
      return fn.emitError("optimizer: --warmup-steps, --total-steps and "
                          "--decay-steps must not be negative");
    if (schedule != "constant" && schedule != "cosine" && schedule != "wsd")
      return fn.emitError("optimizer: unknown schedule '")
             << schedule << "' (constant, cosine or wsd)";
    if (schedule == "wsd" &&
        (decaySteps <= 0 || warmupSteps + decaySteps > totalSteps))
      return fn.emitError("optimizer: the wsd schedule needs decay-steps > 0 "
                          "and warmup-steps + decay-steps <= total-steps");
    if (schedule != "constant" &&
        (totalSteps <= 0 || warmupSteps < 0 || warmupSteps >= totalSteps ||
         minLr < 0 || minLr > lr))
      return fn.emitError("optimizer: the cosine and wsd schedules need "
                          "0 <= warmup-steps < total-steps and "
                          "0 <= min-lr <= lr");
    return success();
  }

  /// PyTorch GradScaler's update: after a skipped step (an overflow) the
  /// scale halves and the count of clean steps restarts; after 2,000 clean
  /// steps in a row it doubles. Both change on skipped steps too; the new
  /// scale is the loss_scale metric.
  template <typename AddState, typename Named>
  void updateLossScale(StepBuilder &s, Value scale, Value skip,
                       AddState &addState, SmallVector<Value> &results,
                       SmallVector<DictionaryAttr> &resultAttrs, Named &named) {
    OpBuilder &b = s.b;
    auto i64Scalar = RankedTensorType::get({}, b.getI64Type());
    auto f32Scalar = cast<RankedTensorType>(scale.getType());
    Value clean = addState(i64Scalar, "loss_scale.growth_tracker");
    Value counted = s.op<AddOp>(clean, s.constant(i64Scalar, 1));
    Value grow = b.create<CompareOp>(s.loc, ComparisonDirection::GE, counted,
                                     s.constant(i64Scalar, kGrowthInterval));
    Value zero = s.constant(i64Scalar, 0);
    Value newClean = b.create<SelectOp>(
        s.loc, skip, zero, b.create<SelectOp>(s.loc, grow, zero, counted));
    Value newScale = b.create<SelectOp>(
        s.loc, skip, s.op<MulOp>(scale, s.constant(f32Scalar, 0.5)),
        b.create<SelectOp>(s.loc, grow,
                           s.op<MulOp>(scale, s.constant(f32Scalar, 2.0)),
                           scale));
    StringRef name = "loss_scale";
    results.push_back(newScale);
    resultAttrs.push_back(
        named(trainc::train::TrainDialect::kUpdateAttr, name));
    results.push_back(newClean);
    resultAttrs.push_back(named(trainc::train::TrainDialect::kUpdateAttr,
                                "loss_scale.growth_tracker"));
    Type lossElement = b.getF32Type();
    results.push_back(s.convert(newScale, lossElement));
    resultAttrs.push_back(
        named(GraphDialect::kOutputAttr, "loss_scale", "loss_scale"));
  }

  /// lr_t for the t-th step (1-based), as in Passes.td.
  double scheduledLr(int64_t t) const {
    if (t <= warmupSteps)
      return lr * double(t) / double(warmupSteps);
    if (schedule == "wsd") {
      int64_t decayStart = totalSteps - decaySteps;
      if (t <= decayStart)
        return lr;
      double p = double(t - decayStart) / double(decaySteps);
      return p >= 1 ? minLr : lr + (minLr - lr) * p;
    }
    double p = std::min(1.0, double(t - warmupSteps) /
                                 double(totalSteps - warmupSteps));
    return minLr + (lr - minLr) * (1 + std::cos(M_PI * p)) / 2;
  }

  LogicalResult build(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *ctx = fn.getContext();

    // Gradients by parameter name, and the loss: the training signature.
    llvm::StringMap<unsigned> gradIndex;
    std::optional<unsigned> lossIndex;
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      if (auto param = fn.getResultAttrOfType<StringAttr>(
              i, trainc::train::TrainDialect::kGradOfAttr))
        gradIndex[param.getValue()] = i;
      else if (fn.getResultAttr(i, trainc::train::TrainDialect::kLossAttr))
        lossIndex = i;
    }
    bool anyParam = false, anyTrained = false;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      bool param =
          fn.getArgAttr(i, trainc::train::TrainDialect::kParamAttr) != nullptr;
      anyParam |= param;
      anyTrained |=
          param && !fn.getArgAttr(i, trainc::train::TrainDialect::kFrozenAttr);
    }
    if (lossIndex && gradIndex.empty() && !anyParam)
      return fn.emitError(
          "optimizer: the model has no parameters to train (an ONNX model's "
          "are its float initializers; a StableHLO function's come from "
          "--params)");
    if (lossIndex && gradIndex.empty() && !anyTrained)
      return fn.emitError("optimizer: no parameter is trained: each is "
                          "frozen (by --freeze, or as a batch norm's running "
                          "statistic), so the step has nothing to update");
    if (gradIndex.empty() || !lossIndex)
      return fn.emitError("optimizer: @main has no loss and gradients "
                          "(run autodiff first)");

    // Embedding tables (gathered from) are not decayed by default.
    // (A ZeRO-3 parameter is gathered whole, and its padding sliced off,
    // before each read.)
    llvm::DenseSet<Value> embeddings;
    fn.walk([&](GatherOp g) {
      Value table = g.getOperand();
      if (auto slice = table.getDefiningOp<SliceOp>())
        table = slice.getOperand();
      if (auto whole = table.getDefiningOp<AllGatherOp>())
        table = whole.getOperand();
      embeddings.insert(table);
    });

    OpBuilder b(ret);
    StepBuilder s(b, fn.getLoc());
    SmallVector<Value> results;
    // Each result's attributes: the forward outputs keep theirs.
    SmallVector<DictionaryAttr> resultAttrs;
    auto named = [&](StringRef attr, StringRef name,
                     std::optional<StringRef> metric = std::nullopt) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(attr, b.getStringAttr(name))};
      if (metric)
        attrs.push_back(b.getNamedAttr(trainc::train::TrainDialect::kMetricAttr,
                                       b.getStringAttr(*metric)));
      return DictionaryAttr::get(ctx, attrs);
    };
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      if (fn.getResultAttr(i, trainc::train::TrainDialect::kGradOfAttr))
        continue;
      results.push_back(ret.getOperand(i));
      resultAttrs.push_back(fn.getResultAttrDict(i) ? fn.getResultAttrDict(i)
                                                    : DictionaryAttr::get(ctx));
    }

    // New state arguments are appended; each gets a zero initial value.
    // `part`: the attributes of a ZeRO part (partAttributes), or none.
    auto addState = [&](RankedTensorType type, StringRef name,
                        ArrayRef<NamedAttribute> part = {}) -> Value {
      unsigned index = fn.getNumArguments();
      Attribute zero =
          isa<FloatType>(type.getElementType())
              ? Attribute(b.getFloatAttr(type.getElementType(), 0))
              : Attribute(b.getIntegerAttr(type.getElementType(), 0));
      // The initial value is the whole tensor (of the global shape).
      RankedTensorType whole = type;
      for (NamedAttribute attr : part)
        if (auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue()))
          whole = type.clone(shape.asArrayRef());
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr(trainc::train::TrainDialect::kStateAttr,
                         b.getStringAttr(name)),
          b.getNamedAttr(trainc::train::TrainDialect::kInitAttr,
                         SplatElementsAttr::get(whole, zero))};
      attrs.append(part.begin(), part.end());
      (void)fn.insertArgument(index, type, DictionaryAttr::get(ctx, attrs),
                              fn.getLoc());
      return body.getArgument(index);
    };
    auto update = [&](Value v, StringRef name,
                      ArrayRef<NamedAttribute> part = {}) {
      results.push_back(v);
      SmallVector<NamedAttribute> attrs = {b.getNamedAttr(
          trainc::train::TrainDialect::kUpdateAttr, b.getStringAttr(name))};
      attrs.append(part.begin(), part.end());
      resultAttrs.push_back(DictionaryAttr::get(ctx, attrs));
    };

    // The step count and the learning rate of this step.
    auto i64Scalar = RankedTensorType::get({}, b.getI64Type());
    Value step = addState(i64Scalar, "step");
    Value next = s.op<AddOp>(step, s.constant(i64Scalar, 1));
    Value t = s.convert(next, b.getF64Type());
    Value lrNow = s.f64(lr);
    if (schedule == "constant" && warmupSteps > 0)
      lrNow = s.op<MulOp>(
          lrNow,
          s.op<MinOp>(s.f64(1.0), s.op<DivOp>(t, s.f64(double(warmupSteps)))));
    if (schedule != "constant") {
      SmallVector<double> table;
      for (int64_t k = 1; k <= totalSteps; ++k)
        table.push_back(scheduledLr(k));
      auto tableType = RankedTensorType::get({totalSteps}, b.getF64Type());
      Value lrTable = b.create<ConstantOp>(
          s.loc, DenseElementsAttr::get(tableType, ArrayRef<double>(table)));
      // Past total-steps the last value (min-lr) holds.
      Value index = s.op<MinOp>(step, s.constant(i64Scalar, totalSteps - 1));
      lrNow = b.create<GatherOp>(s.loc, lrTable, index, 0);
    }

    // The dynamic loss scale (fp16): autodiff seeded the backward pass
    // with it and divided it out of the gradients; the step updates it.
    Value lossScale;
    for (BlockArgument arg : body.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(),
                        trainc::train::TrainDialect::kLossScaleAttr))
        lossScale = arg;
    // Autodiff's unscaling, g = g_scaled * broadcast(1 / scale) (no
    // broadcast for a 0-d parameter), is folded into that parameter's
    // update (its grad_scale) and its share of the norm: no pass over the
    // gradients and no parameter-sized broadcast. A gradient of another
    // form is used as it is.
    Value invScale =
        lossScale ? s.op<DivOp>(s.f64(1), s.convert(lossScale, b.getF64Type()))
                  : Value();
    auto scaledGradient = [&](Value g) -> Value {
      auto mul = g.getDefiningOp<MulOp>();
      Value inverse = mul ? mul.getRhs() : Value();
      if (auto spread = inverse ? inverse.getDefiningOp<BroadcastInDimOp>()
                                : BroadcastInDimOp())
        inverse = spread.getOperand();
      if (auto convert =
              inverse ? inverse.getDefiningOp<ConvertOp>() : ConvertOp())
        inverse = convert.getOperand();
      auto div = inverse ? inverse.getDefiningOp<DivOp>() : DivOp();
      if (!div || div.getRhs() != lossScale)
        return Value();
      return mul.getLhs();
    };

    // The global gradient norm, and clipping. Each parameter with whether
    // its gradient still carries the loss scale, and, for a gradient that
    // is this rank's part (ZeRO's over data, tensor parallelism's over
    // tensor; Partition.cpp), the mesh axis and dimension it is split
    // along and the whole gradient's type. The squares of the parts are
    // summed over each axis once.
    struct Param {
      BlockArgument arg;
      Value grad;
      bool carriesScale;
      StringRef axis;
      int64_t dim;
      RankedTensorType whole;
    };
    SmallVector<Param> params;
    // The gradients whose squares are summed together: by the mesh axis
    // they are parts over (none: whole) and whether they carry the scale.
    // (And by element type: graph.sum_of_squares's operands share one.)
    llvm::MapVector<std::tuple<StringRef, unsigned, Type>, SmallVector<Value>>
        normGroups;
    for (BlockArgument arg : body.getArguments()) {
      auto name = fn.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), trainc::train::TrainDialect::kParamAttr);
      if (!name)
        continue;
      auto it = gradIndex.find(name.getValue());
      if (it == gradIndex.end())
        continue;
      Value g = ret.getOperand(it->second);
      auto [dim, axis] = trainc::splitOf(fn.getResultAttrOfType<ArrayAttr>(
          it->second, GraphDialect::kShardingAttr));
      RankedTensorType whole;
      if (!axis.empty()) {
        whole = cast<RankedTensorType>(g.getType())
                    .clone(fn.getResultAttrOfType<DenseI64ArrayAttr>(
                                 it->second, GraphDialect::kGlobalShapeAttr)
                               .asArrayRef());
      }
      Value scaled = lossScale ? scaledGradient(g) : Value();
      if (scaled)
        g = scaled;
      params.push_back({arg, g, bool(scaled), axis, dim, whole});
      normGroups[{axis, unsigned(bool(scaled)),
                  getElementTypeOrSelf(g.getType())}]
          .push_back(g);
    }
    // One graph.sum_of_squares per group (a multi-tensor reduction).
    Value sumSq;
    llvm::MapVector<StringRef, Value> partsSumSq;
    auto accumulate = [&](Value &sum, Value v) {
      sum = sum ? s.op<AddOp>(sum, v) : v;
    };
    for (auto &[key, grads] : normGroups) {
      auto [axis, scaled, element] = key;
      Value squares = b.create<SumOfSquaresOp>(s.loc, s.f64Scalar(), grads);
      if (scaled)
        squares = s.op<MulOp>(squares, s.op<MulOp>(invScale, invScale));
      accumulate(axis.empty() ? sumSq : partsSumSq[axis], squares);
    }
    for (auto [axis, parts] : partsSumSq)
      accumulate(sumSq, b.create<AllReduceOp>(s.loc, parts, axis));
    if (!sumSq)
      sumSq = s.f64(0);
    Value norm = b.create<SqrtOp>(s.loc, sumSq);
    Type lossElement =
        cast<RankedTensorType>(ret.getOperand(*lossIndex).getType())
            .getElementType();
    results.push_back(s.convert(norm, lossElement));
    resultAttrs.push_back(
        named(GraphDialect::kOutputAttr, "grad_norm", "grad_norm"));
    results.push_back(s.convert(lrNow, lossElement));
    resultAttrs.push_back(named(GraphDialect::kOutputAttr, "lr", "lr"));

    // A step whose loss or gradients are not finite changes nothing: no
    // parameter, moment or step count (PyTorch's GradScaler skips such steps
    // the same way), and says so in its step_skipped metric. x * 0 != 0
    // exactly when x is infinite or NaN; the sum of squares is not finite
    // when any gradient element is not.
    auto notFinite = [&](Value x) -> Value {
      return b.create<CompareOp>(s.loc, ComparisonDirection::NE,
                                 s.op<MulOp>(x, s.f64(0)), s.f64(0));
    };
    auto predScalar = RankedTensorType::get({}, b.getI1Type());
    Value skip = b.create<SelectOp>(
        s.loc, notFinite(sumSq),
        b.create<ConstantOp>(s.loc, DenseElementsAttr::get(predScalar, true)),
        notFinite(s.convert(ret.getOperand(*lossIndex), b.getF64Type())));
    results.push_back(s.convert(skip, lossElement));
    resultAttrs.push_back(
        named(GraphDialect::kOutputAttr, "step_skipped", "step_skipped"));
    /// `fresh`, or `old` when the step is skipped.
    auto unlessSkipped = [&](Value old, Value fresh) -> Value {
      auto type = cast<RankedTensorType>(fresh.getType());
      Value pred =
          s.spread(skip, RankedTensorType::get(type.getShape(), b.getI1Type()));
      return b.create<SelectOp>(s.loc, pred, old, fresh);
    };
    Value clip;
    if (clipGradNorm > 0)
      clip =
          s.op<MinOp>(s.f64(1.0), s.op<DivOp>(s.f64(clipGradNorm),
                                              s.op<AddOp>(norm, s.f64(1e-6))));
    // What multiplies a gradient that still carries the loss scale: the
    // clipping factor and 1 / scale (others: the clipping factor alone).
    Value unscaleAndClip;
    if (invScale)
      unscaleAndClip = clip ? s.op<MulOp>(clip, invScale) : invScale;
    if (lossScale)
      updateLossScale(s, lossScale, skip, addState, results, resultAttrs,
                      named);

    // Bias corrections (AdamW): 1 - beta^t, in f64.
    Value stepSize, bc2Sqrt;
    if (optimizer == "adamw") {
      Value bc1 = s.op<SubOp>(s.f64(1), s.op<PowOp>(s.f64(beta1), t));
      Value bc2 = s.op<SubOp>(s.f64(1), s.op<PowOp>(s.f64(beta2), t));
      stepSize = s.op<DivOp>(lrNow, bc1);
      bc2Sqrt = b.create<SqrtOp>(s.loc, bc2);
    }
    Value decayFactor =
        s.op<SubOp>(s.f64(1), s.op<MulOp>(lrNow, s.f64(weightDecay)));

    // The fused AdamW updates, one graph.adamw_update per group of
    // parameters sharing its scalars (a multi-tensor update), built after
    // the loop; each member's results take the places in `results` the
    // loop reserves for them, so the step's results keep their order.
    struct Member {
      Value p, g, m, v;
      unsigned pIndex, mIndex, vIndex;
      const Param *param;
      bool gatherAfter;
    };
    llvm::MapVector<std::tuple<Type, unsigned, unsigned>, SmallVector<Member>>
        adamwGroups;
    for (const Param &param : params) {
      BlockArgument arg = param.arg;
      Value gradScale = param.carriesScale ? unscaleAndClip : clip;
      auto type = cast<RankedTensorType>(arg.getType());
      std::string name =
          fn.getArgAttrOfType<StringAttr>(
                arg.getArgNumber(), trainc::train::TrainDialect::kParamAttr)
              .str();
      Value g = param.grad;
      bool decay =
          weightDecay > 0 &&
          (decayAll || (type.getRank() >= 2 && !embeddings.contains(arg)));
      // A ZeRO part: the state is split like the gradient, and the update
      // computes this rank's part of the parameter: the argument itself
      // when the parameter is split too (ZeRO-3), else this rank's slice of
      // it, gathered whole again after the update.
      SmallVector<NamedAttribute, 2> part;
      Value p = arg;
      bool gatherAfter = false;
      if (!param.axis.empty()) {
        part = trainc::partAttributes(param.whole, param.axis, param.dim);
        type = cast<RankedTensorType>(g.getType());
        int64_t ranks = getMesh(fn).size(param.axis);
        if (arg.getType() != type) {
          p = b.create<ShardSliceOp>(s.loc, type,
                                     trainc::padToParts(b, s.loc, arg, ranks),
                                     b.getStringAttr(param.axis));
          gatherAfter = true;
        }
      }
      // The new parameter (or part), as the update of `name` (null: a
      // place for a fused update's, gathered after it).
      auto updateParam = [&](Value fresh) {
        if (!gatherAfter)
          return update(fresh, name, part);
        if (!fresh)
          return update(fresh, name);
        update(trainc::gatherParts(b, s.loc, fresh, param.whole, param.axis),
               name);
      };
      Type element = type.getElementType();
      if (optimizer == "adamw" && (element.isF32() || element.isF64())) {
        // A member of a graph.adamw_update: the same arithmetic as below,
        // in one pass.
        Value m = addState(type, name + ".exp_avg", part);
        Value v = addState(type, name + ".exp_avg_sq", part);
        Member member{p, g, m, v, 0, 0, 0, &param, gatherAfter};
        member.mIndex = results.size();
        update(Value(), name + ".exp_avg", part);
        member.vIndex = results.size();
        update(Value(), name + ".exp_avg_sq", part);
        member.pIndex = results.size();
        updateParam(Value());
        adamwGroups[{element, unsigned(decay), unsigned(param.carriesScale)}]
            .push_back(member);
        continue;
      }
      if (gradScale)
        g = s.op<MulOp>(g, s.spread(gradScale, type));
      Value newP;
      if (optimizer == "adamw") {
        Value m = addState(type, name + ".exp_avg", part);
        Value v = addState(type, name + ".exp_avg_sq", part);
        Value pd = decay ? s.op<MulOp>(p, s.spread(decayFactor, type)) : p;
        Value m1 =
            s.op<AddOp>(s.op<MulOp>(m, s.spread(s.f64(beta1), type)),
                        s.op<MulOp>(s.spread(s.f64(1 - beta1), type), g));
        Value v1 = s.op<AddOp>(
            s.op<MulOp>(v, s.spread(s.f64(beta2), type)),
            s.op<MulOp>(s.spread(s.f64(1 - beta2), type), s.op<MulOp>(g, g)));
        Value denom = s.op<AddOp>(
            s.op<DivOp>(b.create<SqrtOp>(s.loc, v1), s.spread(bc2Sqrt, type)),
            s.spread(s.f64(eps), type));
        Value ratio = s.op<DivOp>(m1, denom);
        newP = s.op<AddOp>(
            pd, s.op<MulOp>(s.spread(b.create<NegOp>(s.loc, stepSize), type),
                            ratio));
        update(unlessSkipped(m, m1), name + ".exp_avg", part);
        update(unlessSkipped(v, v1), name + ".exp_avg_sq", part);
      } else {
        if (decay)
          g = s.op<AddOp>(g,
                          s.op<MulOp>(s.spread(s.f64(weightDecay), type), p));
        Value direction = g;
        if (momentum > 0) {
          Value buf = addState(type, name + ".momentum_buffer", part);
          Value buf1 =
              s.op<AddOp>(s.op<MulOp>(buf, s.spread(s.f64(momentum), type)), g);
          update(unlessSkipped(buf, buf1), name + ".momentum_buffer", part);
          direction =
              nesterov
                  ? s.op<AddOp>(
                        g, s.op<MulOp>(s.spread(s.f64(momentum), type), buf1))
                  : buf1;
        }
        newP = s.op<SubOp>(p, s.op<MulOp>(s.spread(lrNow, type), direction));
      }
      updateParam(unlessSkipped(p, newP));
    }
    for (auto &[key, members] : adamwGroups) {
      auto [element, decay, scaled] = key;
      auto scalar = RankedTensorType::get({}, element);
      Value gradScale = scaled ? unscaleAndClip : clip;
      SmallVector<Value> ps, gs, ms, vs;
      SmallVector<Type> types;
      for (const Member &member : members) {
        ps.push_back(member.p);
        gs.push_back(member.g);
        ms.push_back(member.m);
        vs.push_back(member.v);
        types.push_back(member.p.getType());
      }
      SmallVector<Type> resultTypes;
      for (int k = 0; k < 3; ++k)
        resultTypes.append(types);
      auto fused = b.create<AdamwUpdateOp>(
          s.loc, resultTypes, ps, gs, ms, vs,
          s.convert(b.create<NegOp>(s.loc, stepSize), element),
          s.convert(bc2Sqrt, element),
          decay ? s.convert(decayFactor, element) : s.constant(scalar, 1.0),
          gradScale ? s.convert(gradScale, element) : s.constant(scalar, 1.0),
          skip, b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
          b.getF64FloatAttr(eps));
      for (auto [i, member] : llvm::enumerate(members)) {
        results[member.mIndex] = fused.getNewExpAvgs()[i];
        results[member.vIndex] = fused.getNewExpAvgSqs()[i];
        Value fresh = fused.getNewParams()[i];
        const Param &param = *member.param;
        results[member.pIndex] =
            member.gatherAfter
                ? trainc::gatherParts(b, s.loc, fresh, param.whole, param.axis)
                : fresh;
      }
    }
    update(unlessSkipped(step, next), "step");

    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    fn.setType(FunctionType::get(ctx, fn.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
    for (unsigned i = 0; i < results.size(); ++i)
      fn.setResultAttrs(i, resultAttrs[i]);
    return success();
  }
};

} // namespace
