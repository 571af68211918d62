//===- FusionUtil.h - Where two ops of one block may become one -*- C++ -*-===//
//
// The lower phase's pair fusions (trainc-fuse-bias-grad,
// trainc-fuse-loss-grad) replace two ops of a block by one op that gives
// both results. It must stand where both ops' operands are defined and
// before every user of both: at one of the two ops' places.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_TRANSFORMS_FUSIONUTIL_H
#define TRAINC_COMPILER_TRANSFORMS_FUSIONUTIL_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

namespace trainc {

/// Whether every user of `op`'s results is in `point`'s block after it.
inline bool usedOnlyAfter(mlir::Operation *op, mlir::Operation *point) {
  for (mlir::Operation *user : op->getUsers())
    if (user->getBlock() != point->getBlock() || !point->isBeforeInBlock(user))
      return false;
  return true;
}

/// Whether every operand of `op` is defined before `point` (by an op before
/// it in its block, an enclosing block, or as an argument).
inline bool operandsBefore(mlir::Operation *op, mlir::Operation *point) {
  for (mlir::Value v : op->getOperands()) {
    mlir::Operation *def = v.getDefiningOp();
    if (def ? def->getBlock() == point->getBlock() &&
                  !def->isBeforeInBlock(point)
            : mlir::cast<mlir::BlockArgument>(v).getOwner() !=
                  point->getBlock())
      return false;
  }
  return true;
}

/// The place for one op replacing `preferred` and `other` (two ops of one
/// block): `preferred`'s when `other`'s operands are defined before it and
/// its users follow it, else `other`'s on the same terms; null when
/// neither place will do.
inline mlir::Operation *fusionPoint(mlir::Operation *preferred,
                                    mlir::Operation *other) {
  if (usedOnlyAfter(other, preferred) && operandsBefore(other, preferred))
    return preferred;
  if (usedOnlyAfter(preferred, other) && operandsBefore(preferred, other))
    return other;
  return nullptr;
}

} // namespace trainc

#endif // TRAINC_COMPILER_TRANSFORMS_FUSIONUTIL_H
