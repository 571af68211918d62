//===- TrainDialect.cpp - The training contract ---------------------------===//

#include "trainc/Dialect/Train/TrainDialect.h"

#include "trainc/Dialect/Graph/GraphDialect.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>

using namespace mlir;
using namespace trainc::train;

#include "trainc/Dialect/Train/TrainDialect.cpp.inc"

void TrainDialect::initialize() {}

/// Checks that `attr` holds a non-empty string.
static LogicalResult verifyName(Operation *op, NamedAttribute attr,
                                StringRef where) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where << " must be a non-empty string";
  return success();
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  if (attr.getName().getValue() == kBatchStatisticAttr) {
    if (!isa<UnitAttr>(attr.getValue()) ||
        op->getName().getStringRef() != "graph.reduce_mean")
      return op->emitError() << "'" << kBatchStatisticAttr
                             << "' must be a unit attribute of a "
                                "graph.reduce_mean";
    return success();
  }
  // (On any op: the lower phase's fusion carries a fused chain's last
  // op's marks to its loop; trainc-sync-batch-statistics, which reads it
  // before then, checks what it multiplies.)
  if (attr.getName().getValue() == kBesselCorrectionAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kBesselCorrectionAttr << "' must be a unit attribute";
    return success();
  }
  return op->emitError() << "unknown train op attribute '"
                         << attr.getName().getValue() << "'";
}

std::optional<unsigned> TrainDialect::updatedArgument(Operation *op,
                                                      unsigned result) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto name = fn ? fn.getResultAttrOfType<StringAttr>(result, kUpdateAttr)
                 : StringAttr();
  if (!name)
    return std::nullopt;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    for (StringRef attr : {kParamAttr, kStateAttr})
      if (fn.getArgAttrOfType<StringAttr>(i, attr) == name)
        return i;
  return std::nullopt;
}

bool TrainDialect::isForwardUpdate(Operation *op, unsigned result) {
  std::optional<unsigned> arg = updatedArgument(op, result);
  auto fn = cast<FunctionOpInterface>(op);
  return arg && fn.getArgAttr(*arg, kParamAttr) &&
         fn.getArgAttr(*arg, kFrozenAttr);
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  std::string where = "argument " + std::to_string(argIndex);
  StringRef name = attr.getName().getValue();
  if (name == kParamAttr || name == kStateAttr)
    return verifyName(op, attr, where);
  if (name == kLossScaleAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto type = fn ? dyn_cast<RankedTensorType>(fn.getArgumentTypes()[argIndex])
                   : RankedTensorType();
    if (!isa<UnitAttr>(attr.getValue()) || !type || type.getRank() != 0 ||
        !type.getElementType().isF32() || !fn.getArgAttr(argIndex, kStateAttr))
      return op->emitError() << "'" << name << "' on " << where
                             << " must be a unit attribute of a 0-d f32 "
                                "train.state argument";
    return success();
  }
  if (name == kFrozenAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' on " << where << " must be a unit attribute";
    return success();
  }
  if (name == kDataAttr) {
    auto kind = dyn_cast<StringAttr>(attr.getValue());
    if (!kind || !isDataKind(kind.getValue()))
      return op->emitError() << "'" << name << "' on " << where
                             << " must be \"tokens\" or \"targets\"";
    return success();
  }
  if (name == kInitAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto init = dyn_cast<ElementsAttr>(attr.getValue());
    if (!fn || !init)
      return op->emitError() << "'" << name << "' on " << where
                             << " must be elements of a function argument";
    // A sharded argument's initial value is the whole tensor: every rank
    // runs the same program and keeps its part.
    auto argType = cast<ShapedType>(fn.getArgumentTypes()[argIndex]);
    if (auto global = fn.getArgAttrOfType<DenseI64ArrayAttr>(
            argIndex, trainc::graph::GraphDialect::kGlobalShapeAttr))
      argType = argType.clone(global.asArrayRef());
    if (init.getType() != argType)
      return op->emitError()
             << "'" << name << "' on " << where << " has type "
             << init.getType() << " but the argument has type " << argType;
    return success();
  }
  return op->emitError() << "unknown train argument attribute '" << name
                         << "' on " << where;
}

LogicalResult TrainDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  std::string where = "result " + std::to_string(resultIndex);
  StringRef name = attr.getName().getValue();
  if (name == kUpdateAttr)
    return verifyName(op, attr, where);
  auto fn = dyn_cast<FunctionOpInterface>(op);
  auto scalarFloat = [&] {
    auto type =
        fn ? dyn_cast<RankedTensorType>(fn.getResultTypes()[resultIndex])
           : RankedTensorType();
    return type && type.getRank() == 0 && isa<FloatType>(type.getElementType());
  };
  if (name == kLossAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' on " << where << " must be a unit attribute";
    if (!scalarFloat())
      return op->emitError() << "'" << name << "' on " << where
                             << ": the loss must be a scalar float";
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (i != resultIndex && fn.getResultAttr(i, kLossAttr))
        return op->emitError()
               << "'" << name << "' on results " << std::min(i, resultIndex)
               << " and " << std::max(i, resultIndex)
               << ": a function has one loss";
    return success();
  }
  if (name == kGradOfAttr) {
    if (failed(verifyName(op, attr, where)))
      return failure();
    StringRef param = cast<StringAttr>(attr.getValue()).getValue();
    for (unsigned i = 0; fn && i < fn.getNumArguments(); ++i)
      if (auto p = fn.getArgAttrOfType<StringAttr>(i, kParamAttr);
          p && p.getValue() == param)
        return success();
    return op->emitError() << "'" << name << "' on " << where << " names '"
                           << param << "', which is not a train.param";
  }
  if (name == kMetricAttr) {
    auto kind = dyn_cast<StringAttr>(attr.getValue());
    if (!kind || !isMetricKind(kind.getValue()))
      return op->emitError()
             << "'" << name << "' on " << where
             << " must be one of \"grad_norm\", \"lr\", \"loss_scale\", "
                "\"step_skipped\"";
    if (!scalarFloat())
      return op->emitError() << "'" << name << "' on " << where
                             << ": a metric must be a scalar float";
    return success();
  }
  return op->emitError() << "unknown train result attribute '" << name
                         << "' on " << where;
}
