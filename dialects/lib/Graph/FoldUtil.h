//===- FoldUtil.h - Helpers shared by the graph ops' folders ----*- C++ -*-===//
//
// Shared by GraphFolds.cpp (elementwise ops) and GraphMovementFolds.cpp
// (reductions and data movement). Private to lib/Graph.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_FOLDUTIL_H
#define TRAINC_DIALECT_GRAPH_FOLDUTIL_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace trainc::graph::fold {

/// Constants folded into the IR have at most this many elements (larger
/// ones are left for the runtime rather than bloating the IR).
constexpr int64_t kMaxFoldedElements = 1 << 16;

/// True when every operand is a known constant that is a splat or small.
bool cheapToFold(llvm::ArrayRef<mlir::Attribute> operands);

/// The elements of a cheap constant in row-major order (a splat expanded).
inline llvm::SmallVector<mlir::Attribute>
elementsOf(mlir::DenseElementsAttr attr) {
  return llvm::SmallVector<mlir::Attribute>(attr.getValues<mlir::Attribute>());
}

/// x + c == x exactly for every x, NaN and -0 included, when c is -0 (or
/// the integer 0). (+0 is not an identity: -0 + +0 = +0.)
bool isAdditiveIdentity(mlir::Attribute attr);

} // namespace trainc::graph::fold

#endif // TRAINC_DIALECT_GRAPH_FOLDUTIL_H
