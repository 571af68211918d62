//===- GraphDialect.h - The graph dialect ----------------------*- C++ -*-===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H
#define TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "trainc/Dialect/Graph/GraphDialect.h.inc"

#include "mlir/IR/Types.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <utility>

#define GET_TYPEDEF_CLASSES
#include "trainc/Dialect/Graph/GraphTypes.h.inc"

namespace trainc::graph {

/// Bytes one element of `type` takes in a trainc executable: i1, the 2- and
/// 4-bit integers and the dialect's storage types take one byte each.
unsigned elementStorageBytes(mlir::Type type);

/// The device mesh of a module (`graph.mesh`), axes in rank order; an axis
/// the attribute does not name has size 1.
struct Mesh {
  /// (name, size) for every axis of GraphDialect::meshAxisNames().
  llvm::SmallVector<std::pair<llvm::StringRef, int64_t>, 2> axes;

  int64_t numRanks() const;
  /// The size of axis `name`, or 0 when the mesh has no such axis.
  int64_t size(llvm::StringRef name) const;
  /// The index of axis `name` in `axes`, or -1.
  int axisIndex(llvm::StringRef name) const;
};

/// The mesh of the module that holds `op` (every axis of size 1 when the
/// module has no `graph.mesh`).
Mesh getMesh(mlir::Operation *op);

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRAPHDIALECT_H
