//===- GraphDialect.cpp - The graph dialect -------------------------------===//

#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"

using namespace mlir;
using namespace trainc::graph;

#include "trainc/Dialect/Graph/GraphDialect.cpp.inc"
#include "trainc/Dialect/Graph/GraphEnums.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "trainc/Dialect/Graph/GraphOps.cpp.inc"
      >();
}

Operation *GraphDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, type, elements);
}
