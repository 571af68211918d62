//===- GraphInterfaces.h - Op interfaces of the graph dialect --*- C++ -*-===//
//
// Declares the gradient, sharding-rule and cost interfaces (see
// GraphInterfaces.td) and the small helpers their default methods use.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHINTERFACES_H
#define TRAINC_DIALECT_GRAPH_GRAPHINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace trainc::graph {

/// True for a ranked tensor of f64, f32, f16 or bf16.
bool isFloatTensorType(mlir::Type type);

/// Number of elements of a statically shaped tensor value.
int64_t numElements(mlir::Value value);

/// Bytes of a statically shaped tensor value (i1 counts one byte, as stored).
int64_t tensorBytes(mlir::Value value);

/// Sum of tensorBytes over all operands and results of `op`.
int64_t operandAndResultBytes(mlir::Operation *op);

/// An op's sharding factors (see ShardingRuleOpInterface). Each operand and
/// result dimension names the factor it carries, or kNoFactor.
struct ShardingRule {
  static constexpr int64_t kNoFactor = -1;
  /// Size of each factor.
  llvm::SmallVector<int64_t> factorSizes;
  /// operandDims[i][d]: the factor of dimension d of operand i.
  llvm::SmallVector<llvm::SmallVector<int64_t>> operandDims;
  /// resultDims[i][d]: the factor of dimension d of result i.
  llvm::SmallVector<llvm::SmallVector<int64_t>> resultDims;

  /// True when `factor` appears in no result (a sum over it).
  bool isReduction(int64_t factor) const;
  /// The dimension of `dims` that carries `factor`, or -1.
  static int64_t dimOf(llvm::ArrayRef<int64_t> dims, int64_t factor);
  /// Shardy's notation, for tests and messages:
  /// "([i, j], [j, k]) -> ([i, k]) sizes i=4, j=8, k=16; reduction j",
  /// with "_" for a dimension without a factor.
  void print(llvm::raw_ostream &os) const;
};

} // namespace trainc::graph

#include "trainc/Dialect/Graph/GraphOpInterfaces.h.inc"

#endif // TRAINC_DIALECT_GRAPH_GRAPHINTERFACES_H
