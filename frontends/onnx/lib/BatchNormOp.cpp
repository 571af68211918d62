//===- BatchNormOp.cpp - ONNX BatchNormalization --------------------------===//
//
// BatchNormalization normalizes X [N, C, D...] per channel. In inference
// mode it uses the statistics it is given (input_mean, input_var); in
// training mode it uses the batch's own (the mean and the population
// variance over every dimension but C) and also returns the running
// statistics, input * momentum + batch * (1 - momentum), as the ONNX
// specification defines them (with --unbiased-running-var, the batch's
// unbiased variance, n / (n - 1) times the population one, as PyTorch's
// BatchNorm blends it).
//
// The mode is the file's: opset 14's `training_mode`, or at opset 13
// whether the node has more than one output (PyTorch's TorchScript
// exporter writes five in training mode: Y, the running mean and variance,
// and the batch's mean and variance). `--eval-mode` imports a
// training-mode node in inference mode, as PyTorch's model.eval() runs it.
//
// Running statistics are state, not weights: an input_mean or input_var
// that is a parameter (an initializer) is frozen, and when a training step
// is compiled (--train) a training-mode node's new value for it becomes a
// `train.update` result of the step, which the runtime makes the
// parameter's value for the next step (and checkpoints). Without --train,
// and for a statistic that is a data input or a constant, the running
// outputs are ordinary values and nothing changes from run to run (what
// the ONNX node tests check).
//
// 16-bit inputs are normalized in f32, as PyTorch and cuDNN do.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "trainc/Dialect/Train/TrainDialect.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// The operands after their checks: scale, B, input_mean, input_var.
struct ChannelOperands {
  Value scale, bias, mean, var;
};

FailureOr<ChannelOperands> channelOperands(NodeContext &ctx, int64_t c) {
  ChannelOperands ops;
  Value *slots[] = {&ops.scale, &ops.bias, &ops.mean, &ops.var};
  const char *names[] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 4; ++i) {
    auto v = ctx.input(i + 1);
    if (failed(v) || failed(ctx.requireFloat(*v, names[i])))
      return failure();
    auto type = ctx.inputType(*v);
    if (type.getRank() != 1 || type.getDimSize(0) != c)
      return ctx.error() << names[i] << " must have shape [" << c
                         << "] (one entry per channel), got " << type;
    *slots[i] = *v;
  }
  if (ctx.inputType(ops.mean).getElementType() !=
      ctx.inputType(ops.var).getElementType())
    return ctx.error() << "input_mean and input_var must have one element "
                          "type, got "
                       << ctx.inputType(ops.mean).getElementType() << " and "
                       << ctx.inputType(ops.var).getElementType();
  return ops;
}

} // namespace

LogicalResult importBatchNormalization(NodeContext &ctx) {
  auto x = ctx.input(0);
  if (failed(x) || failed(ctx.requireFloat(*x, "the input")))
    return failure();
  auto type = ctx.inputType(*x);
  if (type.getRank() < 2)
    return ctx.error() << "needs an input [N, C, D...], got " << type;
  auto ops = channelOperands(ctx, type.getDimSize(1));
  if (failed(ops))
    return failure();
  auto epsilon = epsilonAttr(ctx);
  if (failed(epsilon))
    return failure();
  double momentum = ctx.floatAttr("momentum", 0.9f);
  if (!(momentum >= 0 && momentum <= 1))
    return ctx.error() << "momentum " << momentum << " is not in [0, 1]";

  bool training;
  if (ctx.opset() >= 14) {
    int64_t mode = ctx.intAttr("training_mode", 0);
    if (mode != 0 && mode != 1)
      return ctx.error() << "training_mode " << mode << " is not 0 or 1";
    training = mode == 1;
    if (!training && (ctx.outputRequested(1) || ctx.outputRequested(2)))
      return ctx.error() << "running_mean and running_var are outputs of "
                            "training mode (training_mode = 1) only";
    if (ctx.numOutputs() > 3)
      return ctx.error() << "has " << ctx.numOutputs()
                         << " outputs; opset 14 defines at most 3";
  } else {
    training = ctx.numOutputs() > 1;
  }
  // Statistics that are parameters are state, never trained; so they
  // cannot also be the scale or B (an exporter that shares equal
  // initializers would otherwise freeze the scale).
  for (Value v : {ops->mean, ops->var}) {
    auto param = ctx.graph.parameterIndex(v);
    if (!param)
      continue;
    if (v == ops->scale || v == ops->bias)
      return ctx.error() << "'" << ctx.graph.parameterName(*param)
                         << "' is both a running statistic, which is frozen "
                            "state, and the "
                         << (v == ops->scale ? "scale" : "B")
                         << ", a trained weight: give them separate "
                            "initializers";
    ctx.graph.markStatistic(*param);
  }

  // The work type: f32 for 16-bit inputs.
  Type element = type.getElementType();
  Type work = element.getIntOrFloatBitWidth() < 32
                  ? Type(ctx.builder.getF32Type())
                  : element;
  Type stats = ctx.inputType(ops->mean).getElementType();
  auto workType = RankedTensorType::get(type.getShape(), work);
  auto channels = RankedTensorType::get({type.getDimSize(1)}, work);
  auto along = [&](Value perChannel) {
    return ctx.create<BroadcastInDimOp>(workType, perChannel,
                                        ArrayRef<int64_t>{1});
  };
  auto toWork = [&](Value v) { return ctx.convert(v, work); };
  Value xw = toWork(*x);
  // (x - mean) * (scale / sqrt(var + epsilon)) + B.
  auto normalize = [&](Value centered, Value var) {
    Value inv = ctx.create<RsqrtOp>(
        ctx.create<AddOp>(var, ctx.splat(channels, *epsilon)));
    Value factor = ctx.create<MulOp>(toWork(ops->scale), inv);
    Value y = ctx.create<AddOp>(ctx.create<MulOp>(centered, along(factor)),
                                along(toWork(ops->bias)));
    return ctx.convert(y, element);
  };

  // The batch's statistics: in training mode, and for --eval-mode's
  // saved_mean and saved_var (opset 13's training outputs, which PyTorch's
  // export names and nothing reads).
  bool inference = !training || ctx.graph.evalMode;
  Value mean, centered, var;
  int64_t count = 0;
  if (training &&
      (!inference || ctx.outputRequested(3) || ctx.outputRequested(4))) {
    SmallVector<int64_t> dims = {0};
    count = type.getDimSize(0);
    for (int64_t d = 2; d < type.getRank(); ++d) {
      dims.push_back(d);
      count *= type.getDimSize(d);
    }
    if (count == 0)
      return ctx.error() << "training mode needs at least one element per "
                            "channel for the batch statistics, got "
                         << type;
    // Marked as the batch's statistics: --sync-batch-norm takes them over
    // every data-parallel rank's part of the batch.
    auto statistic = [&](Value of) {
      auto op = ctx.builder.create<ReduceMeanOp>(ctx.loc, of, dims);
      op->setAttr(trainc::train::TrainDialect::kBatchStatisticAttr,
                  ctx.builder.getUnitAttr());
      return op.getResult();
    };
    mean = statistic(xw);
    centered = ctx.create<SubOp>(xw, along(mean));
    var = statistic(ctx.create<MulOp>(centered, centered));
    ctx.setOutput(3, ctx.convert(mean, element));
    ctx.setOutput(4, ctx.convert(var, element));
  }

  if (inference) {
    ctx.setOutput(0, normalize(ctx.create<SubOp>(xw, along(toWork(ops->mean))),
                               toWork(ops->var)));
    // A training-mode node read in eval mode: the statistics stay.
    if (training) {
      ctx.setOutput(1, ops->mean);
      ctx.setOutput(2, ops->var);
    }
    return success();
  }
  ctx.setOutput(0, normalize(centered, var));

  // The running statistics, in their own type.
  auto statsType = RankedTensorType::get({type.getDimSize(1)}, stats);
  auto blend = [&](Value running, Value batch) {
    return ctx.create<AddOp>(
        ctx.create<MulOp>(running, ctx.splat(statsType, momentum)),
        ctx.create<MulOp>(ctx.convert(batch, stats),
                          ctx.splat(statsType, 1 - momentum)));
  };
  Value runningMean = blend(ops->mean, mean);
  // --unbiased-running-var: PyTorch's blend, of the unbiased variance.
  Value blendedVar = var;
  if (ctx.graph.unbiasedRunningVar) {
    if (count < 2)
      return ctx.error() << "--unbiased-running-var needs at least 2 "
                            "elements per channel (the unbiased variance "
                            "divides by n - 1; the PyTorch bridge sets it "
                            "unless given unbiased_running_var=False), got "
                         << type;
    // Marked: with --sync-batch-norm the count is every rank's.
    auto correction = ctx.builder.create<MulOp>(
        ctx.loc, var,
        ctx.splat(cast<RankedTensorType>(var.getType()),
                  double(count) / double(count - 1)));
    correction->setAttr(trainc::train::TrainDialect::kBesselCorrectionAttr,
                        ctx.builder.getUnitAttr());
    blendedVar = correction.getResult();
  }
  Value runningVar = blend(ops->var, blendedVar);
  ctx.setOutput(1, runningMean);
  ctx.setOutput(2, runningVar);
  if (!ctx.graph.trainingStep)
    return success();
  // As the step's state, a channel whose new statistic is not finite (a
  // NaN or an infinity in the batch) keeps the old one: one bad batch
  // would otherwise spoil it for the rest of training. (The outputs above
  // are the specification's.)
  auto keepFinite = [&](Value next, Value old) {
    Value zero = ctx.splat(statsType, 0);
    Value finite = ctx.create<CompareOp>(ComparisonDirection::EQ,
                                         ctx.create<MulOp>(next, zero), zero);
    return ctx.create<SelectOp>(finite, next, old);
  };
  GraphImporter &graph = ctx.graph;
  for (auto [statistic, next] :
       {std::pair(ops->mean, runningMean), std::pair(ops->var, runningVar)}) {
    std::optional<unsigned> param = graph.parameterIndex(statistic);
    bool chained = false;
    if (!param) {
      // Another node's new value of a statistic: this node updates it
      // again, from that value, as PyTorch blends twice.
      auto it = graph.statisticOutputs.find(statistic);
      if (it == graph.statisticOutputs.end())
        continue;
      param = it->second;
      chained = graph.latestStatistic.lookup(*param) == statistic;
    }
    Value update = keepFinite(next, chained ? graph.getUpdates().lookup(*param)
                                            : statistic);
    if (chained)
      graph.replaceUpdate(*param, update);
    else if (failed(graph.addUpdate(*param, update)))
      return ctx.error() << "updates the running statistic '"
                         << graph.parameterName(*param)
                         << "' from its value before another "
                            "BatchNormalization's update of it in this step "
                            "(a module called twice: torch.export's exporter "
                            "chains the updates, as PyTorch makes them; the "
                            "TorchScript exporter's file drops one)";
    graph.statisticOutputs[next] = *param;
    graph.latestStatistic[*param] = next;
  }
  return success();
}

} // namespace trainc::onnx_import
