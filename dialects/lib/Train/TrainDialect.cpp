//===- TrainDialect.cpp - The training contract ---------------------------===//

#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

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

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  std::string where = "argument " + std::to_string(argIndex);
  StringRef name = attr.getName().getValue();
  if (name == kParamAttr || name == kStateAttr)
    return verifyName(op, attr, where);
  if (name == kFrozenAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' on " << where << " must be a unit attribute";
    return success();
  }
  if (name == kInitAttr) {
    auto fn = dyn_cast<FunctionOpInterface>(op);
    auto init = dyn_cast<ElementsAttr>(attr.getValue());
    if (!fn || !init)
      return op->emitError() << "'" << name << "' on " << where
                             << " must be elements of a function argument";
    Type argType = fn.getArgumentTypes()[argIndex];
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
  if (attr.getName().getValue() == kUpdateAttr)
    return verifyName(op, attr, where);
  return op->emitError() << "unknown train result attribute '"
                         << attr.getName().getValue() << "' on " << where;
}
