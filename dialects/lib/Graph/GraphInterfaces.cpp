//===- GraphInterfaces.cpp - Op interfaces of the graph dialect -----------===//

#include "trainc/Dialect/Graph/GraphInterfaces.h"
#include "trainc/Dialect/Graph/GraphDialect.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace trainc::graph {

bool isFloatTensorType(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

int64_t numElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

int64_t tensorBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getNumElements() * elementStorageBytes(type.getElementType());
}

int64_t operandAndResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes += tensorBytes(v);
  for (Value v : op->getResults())
    bytes += tensorBytes(v);
  return bytes;
}

} // namespace trainc::graph

#include "trainc/Dialect/Graph/GraphOpInterfaces.cpp.inc"
