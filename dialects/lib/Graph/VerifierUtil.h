//===- VerifierUtil.h - Helpers of the graph ops' verifiers ----*- C++ -*-===//
//
// Shared by the files that verify and infer the graph ops' types
// (GraphOps.cpp, GraphAttention.cpp, GraphComposites.cpp). Private to
// lib/Graph.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_VERIFIERUTIL_H
#define TRAINC_DIALECT_GRAPH_VERIFIERUTIL_H

#include "trainc/Dialect/Graph/GraphDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/SmallBitVector.h"

#include <algorithm>
#include <optional>

namespace trainc::graph {

/// Produces the diagnostic a broken constraint is reported on: the op's
/// own error in the verifier, an error at the location during inference.
using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

/// Checks that each entry of `dims` is in [0, rank) and appears once.
/// `what` names the list in messages; `rangeC`/`uniqueC` are the constraint
/// numbers to cite.
inline mlir::LogicalResult checkDimList(llvm::ArrayRef<int64_t> dims,
                                        int64_t rank, llvm::StringRef what,
                                        llvm::StringRef rangeC,
                                        llvm::StringRef uniqueC,
                                        EmitErrorFn emitError) {
  llvm::SmallBitVector seen(std::max<int64_t>(rank, 0));
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return emitError() << rangeC << " " << what << " dimension " << d
                         << " is out of range [0, " << rank << ")";
    if (seen.test(d))
      return emitError() << uniqueC << " " << what << " dimension " << d
                         << " is listed twice";
    seen.set(d);
  }
  return mlir::success();
}

/// Whether `actual` is the `inferred` type, or one result of its shape
/// whose element type `accepts(inferred element, actual element)`: the
/// ops whose result may be wider or narrower than they infer.
inline bool
isInferredOr(mlir::TypeRange inferred, mlir::TypeRange actual,
             llvm::function_ref<bool(mlir::Type, mlir::Type)> accepts) {
  if (inferred == actual)
    return true;
  if (inferred.size() != 1 || actual.size() != 1)
    return false;
  auto want = mlir::dyn_cast<mlir::RankedTensorType>(inferred.front());
  auto got = mlir::dyn_cast<mlir::RankedTensorType>(actual.front());
  return want && got && want.getShape() == got.getShape() &&
         accepts(want.getElementType(), got.getElementType());
}

/// A 16-bit float widened to f32.
inline bool isWidenedTo32(mlir::Type from, mlir::Type to) {
  return (from.isBF16() || from.isF16()) && to.isF32();
}

/// The location errors found during type inference are reported at.
inline mlir::Location inferenceLoc(mlir::MLIRContext *ctx,
                                   std::optional<mlir::Location> loc) {
  return loc ? *loc : mlir::UnknownLoc::get(ctx);
}

/// Checks the blocks of the mesh's tensor axis that a random op's mask
/// numbers (`what`: graph.attention's `head_blocks`, graph.dropout's
/// `blocks`): at least 1, and above 1 only for an op that `draws` masks,
/// as the size of the tensor axis.
inline mlir::LogicalResult checkTensorBlocks(mlir::Operation *op,
                                             int64_t blocks, bool draws,
                                             llvm::StringRef what,
                                             llvm::StringRef constraint,
                                             EmitErrorFn emitError) {
  if (blocks == 1)
    return mlir::success();
  if (blocks < 1 || !draws)
    return emitError() << constraint << " " << what << " must be 1"
                       << (blocks < 1 ? "" : " without dropout") << ", got "
                       << blocks;
  int64_t tensor = getMesh(op).size("tensor");
  if (blocks != tensor)
    return emitError() << constraint << " " << what << " " << blocks
                       << " must be the size of the mesh's tensor axis ("
                       << tensor << ")";
  return mlir::success();
}

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_VERIFIERUTIL_H
