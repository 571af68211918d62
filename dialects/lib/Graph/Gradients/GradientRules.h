//===- GradientRules.h - Shared helpers of the VJP rules -------*- C++ -*-===//
//
// Each graph op's vector-Jacobian product is a GradientOpInterface external
// model, attached when the dialect loads; rules live by op family:
//   ElementwiseGradients.cpp   unary/binary math, compare, select, convert
//   DataMovementGradients.cpp  reductions, broadcast, reshape, transpose,
//                              slice, concatenate, gather, scatter_add
//   CompositeGradients.cpp     dot_general, softmax, norms, gelu, dropout,
//                              attention, softmax_cross_entropy
// A rule receives the cotangents of the op's results (null where a result
// does not reach the loss) and appends one cotangent per operand (null for
// operands that carry no gradient: integers, predicates, or an operand the
// rule leaves out). Rules emit graph ops at the builder's insertion point,
// read the op's operands and results as the forward values, and never
// mutate the forward ops.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRADIENTS_GRADIENTRULES_H
#define TRAINC_DIALECT_GRAPH_GRADIENTS_GRADIENTRULES_H

#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc::graph {

void attachElementwiseGradients(mlir::MLIRContext &context);
void attachDataMovementGradients(mlir::MLIRContext &context);
void attachCompositeGradients(mlir::MLIRContext &context);

/// A constant of `type` with every element `value`.
mlir::Value splatConstant(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::RankedTensorType type, double value);

/// Sums `grad` (of a broadcast result's shape) back to `type`: the
/// cotangent of broadcast_in_dim(x : type, dims).
mlir::Value sumToOperand(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value grad, mlir::RankedTensorType type,
                         llvm::ArrayRef<int64_t> dims);

/// Broadcasts `reduced` (x's shape with `dims` dropped) back to `type`.
mlir::Value broadcastBack(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value reduced, mlir::RankedTensorType type,
                          llvm::ArrayRef<int64_t> dims);

/// The rule of a single-result op: `Vjp(op, b, g, out)` appends one
/// cotangent per operand, and runs only when the result has a float
/// cotangent `g`; otherwise every operand gets none.
template <typename OpT>
using VjpFn = void (*)(OpT op, mlir::OpBuilder &b, mlir::Value g,
                       llvm::SmallVectorImpl<mlir::Value> &);

/// The external model of a single-result op's rule.
template <typename OpT, VjpFn<OpT> Vjp>
struct Gradient
    : public GradientOpInterface::ExternalModel<Gradient<OpT, Vjp>, OpT> {
  mlir::LogicalResult buildVjp(mlir::Operation *op, mlir::OpBuilder &b,
                               mlir::ValueRange resultCotangents,
                               llvm::SmallVectorImpl<mlir::Value> &out) const {
    mlir::Value g =
        resultCotangents.empty() ? mlir::Value() : resultCotangents.front();
    if (!g || !isFloatTensorType(g.getType())) {
      out.append(op->getNumOperands(), mlir::Value());
      return mlir::success();
    }
    Vjp(llvm::cast<OpT>(op), b, g, out);
    return mlir::success();
  }
};

inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRADIENTS_GRADIENTRULES_H
