//===- CompareElements.h - graph.compare on two elements --------*- C++ -*-===//
//
// graph.compare's semantics on one pair of element attributes: its folder
// uses it, and so do passes that evaluate a comparison of constants one
// element at a time rather than materialize it (RecognizeAttention.cpp's
// causal conditions, built from iotas too large to fold).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_COMPAREELEMENTS_H
#define TRAINC_DIALECT_GRAPH_COMPAREELEMENTS_H

#include "trainc/Dialect/Graph/GraphOps.h"

namespace trainc::graph {

/// `lhs <direction> rhs` for two IntegerAttr or two FloatAttr of one type:
/// floats ordered (NaN compares false, but NE true); i1 and unsigned
/// integers unsigned, signless integers signed.
bool compareElements(mlir::Attribute lhs, mlir::Attribute rhs,
                     ComparisonDirection direction);

/// The same on the values themselves (no attributes made): floats, and
/// integers of an element type that comparesUnsigned says how to order.
bool compareFloats(const llvm::APFloat &lhs, const llvm::APFloat &rhs,
                   ComparisonDirection direction);
bool compareIntegers(const llvm::APInt &lhs, const llvm::APInt &rhs,
                     bool isUnsigned, ComparisonDirection direction);
bool comparesUnsigned(mlir::Type elementType);

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_COMPAREELEMENTS_H
