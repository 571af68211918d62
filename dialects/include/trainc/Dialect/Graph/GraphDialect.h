//===- GraphDialect.h - The graph dialect ----------------------*- C++ -*-===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H
#define TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "trainc/Dialect/Graph/GraphDialect.h.inc"

#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "trainc/Dialect/Graph/GraphTypes.h.inc"

namespace trainc::graph {

/// Bytes one element of `type` takes in a trainc executable: i1, the 2- and
/// 4-bit integers and the dialect's storage types take one byte each.
unsigned elementStorageBytes(mlir::Type type);

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H
