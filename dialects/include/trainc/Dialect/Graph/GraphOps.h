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

/// Verifies an op's numbered shape constraints, then that its result type is
/// the inferred one, before InferTypeOpInterface's own check runs (see
/// Graph_ShapeChecked in GraphBase.td): each broken constraint yields one
/// error that names it.
template <typename ConcreteType>
class ShapeChecked
    : public mlir::OpTrait::TraitBase<ConcreteType, ShapeChecked> {
public:
  static llvm::LogicalResult verifyTrait(mlir::Operation *op) {
    auto concrete = llvm::cast<ConcreteType>(op);
    if (mlir::failed(concrete.verifyShapeConstraints()))
      return mlir::failure();
    llvm::SmallVector<mlir::Type> inferred;
    if (mlir::failed(ConcreteType::inferReturnTypes(
            op->getContext(), op->getLoc(),
            typename ConcreteType::Adaptor(concrete), inferred)))
      return mlir::failure();
    if (!ConcreteType::isCompatibleReturnTypes(inferred, op->getResultTypes()))
      return op->emitOpError("result type ")
             << op->getResultTypes() << " differs from the inferred type "
             << inferred;
    return mlir::success();
  }
};

} // namespace trainc::graph::OpTrait

#define GET_OP_CLASSES
#include "trainc/Dialect/Graph/GraphOps.h.inc"

namespace trainc::graph {

/// An attention tensor's logical [B, H, S, D] sizes from its stored shape,
/// or the reverse: with `seqMajor` (graph.attention's `seq_major`) the
/// tensor is stored [B, S, H, D], and heads and sequence swap places.
inline llvm::SmallVector<int64_t, 4>
attentionDims(llvm::ArrayRef<int64_t> shape, bool seqMajor) {
  llvm::SmallVector<int64_t, 4> dims(shape);
  if (seqMajor && dims.size() == 4)
    std::swap(dims[1], dims[2]);
  return dims;
}

/// The heads [first, first + count) of a fused projection's output that
/// attention tensor `i` (0 query, 1 key, 2 value) reads under `qkv_heads`
/// = [Hq, Hk] (graph.attention's C11): the query first, then the key,
/// then the value.
inline std::pair<int64_t, int64_t> qkvWindow(llvm::ArrayRef<int64_t> qkvHeads,
                                             int64_t i) {
  int64_t hq = qkvHeads[0], hk = qkvHeads[1];
  return i == 0 ? std::make_pair(int64_t(0), hq)
                : std::make_pair(hq + (i - 1) * hk, hk);
}

/// The logical [B, H, S, D] sizes of attention tensor `i` (the ops'
/// numbering) stored as `shape`: attentionDims through `seqMajor`, or, for
/// query, key and value under `qkvHeads`, their window of the stored
/// [B, S, Hq + 2 Hk, D] heads.
inline llvm::SmallVector<int64_t, 4>
attentionTensorDims(llvm::ArrayRef<int64_t> shape,
                    std::optional<llvm::ArrayRef<int64_t>> seqMajor,
                    std::optional<llvm::ArrayRef<int64_t>> qkvHeads,
                    int64_t i) {
  llvm::SmallVector<int64_t, 4> dims =
      attentionDims(shape, seqMajor && llvm::is_contained(*seqMajor, i));
  if (qkvHeads && qkvHeads->size() == 2 && i < 3 && dims.size() == 4)
    dims[1] = qkvWindow(*qkvHeads, i).second;
  return dims;
}

/// The dims of a dot_general operand of `rank` that are neither batching
/// nor contracting, in order: the ones the result keeps (after the
/// batching dims, lhs's then rhs's).
inline llvm::SmallVector<int64_t>
dotFreeDims(int64_t rank, llvm::ArrayRef<int64_t> batching,
            llvm::ArrayRef<int64_t> contracting) {
  llvm::SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(batching, d) && !llvm::is_contained(contracting, d))
      dims.push_back(d);
  return dims;
}

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRAPHOPS_H
