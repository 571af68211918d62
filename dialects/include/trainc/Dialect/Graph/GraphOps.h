//===- GraphOps.h - Operations of the graph dialect ------------*- C++ -*-===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHOPS_H
#define TRAINC_DIALECT_GRAPH_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "trainc/Dialect/Graph/GraphDialect.h"
#include "trainc/Dialect/Graph/GraphEnums.h.inc"
#include "trainc/Dialect/Graph/GraphInterfaces.h"

namespace trainc::graph::OpTrait {

/// Verifies an op's numbered shape constraints before type inference runs
/// (see Graph_ShapeChecked in GraphBase.td).
template <typename ConcreteType>
class ShapeChecked
    : public mlir::OpTrait::TraitBase<ConcreteType, ShapeChecked> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    return llvm::cast<ConcreteType>(op).verifyShapeConstraints();
  }
};

} // namespace trainc::graph::OpTrait

#define GET_OP_CLASSES
#include "trainc/Dialect/Graph/GraphOps.h.inc"

#endif // TRAINC_DIALECT_GRAPH_GRAPHOPS_H
