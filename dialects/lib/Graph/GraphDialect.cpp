//===- GraphDialect.cpp - The graph dialect -------------------------------===//

#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "Gradients/GradientRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"

using namespace mlir;
using namespace trainc::graph;

#include "trainc/Dialect/Graph/GraphDialect.cpp.inc"
#include "trainc/Dialect/Graph/GraphEnums.cpp.inc"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#define GET_TYPEDEF_CLASSES
#include "trainc/Dialect/Graph/GraphTypes.cpp.inc"

unsigned trainc::graph::elementStorageBytes(Type type) {
  if (!type.isIntOrFloat())
    return 1; // f4E2M1FN, f8E8M0FNU
  unsigned bits = type.getIntOrFloatBitWidth();
  return bits < 8 ? 1 : bits / 8;
}

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "trainc/Dialect/Graph/GraphOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "trainc/Dialect/Graph/GraphTypes.cpp.inc"
      >();
  // Known gradients: the VJP rules, by op family (Gradients/).
  attachElementwiseGradients(*getContext());
  attachDataMovementGradients(*getContext());
  attachCompositeGradients(*getContext());
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}

/// Checks that `attr` holds a non-empty string.
static LogicalResult verifyNameAttr(Operation *op, NamedAttribute attr,
                                    StringRef where) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (!name || name.getValue().empty())
    return op->emitError() << "'" << attr.getName().getValue() << "' on "
                           << where << " must be a non-empty string";
  return success();
}

LogicalResult GraphDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  std::string where = "argument " + std::to_string(argIndex);
  if (attr.getName().getValue() == kInputAttr)
    return verifyNameAttr(op, attr, where);
  return op->emitError() << "unknown graph argument attribute '"
                         << attr.getName().getValue() << "' on " << where;
}

LogicalResult GraphDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  std::string where = "result " + std::to_string(resultIndex);
  if (attr.getName().getValue() == kOutputAttr)
    return verifyNameAttr(op, attr, where);
  return op->emitError() << "unknown graph result attribute '"
                         << attr.getName().getValue() << "' on " << where;
}
