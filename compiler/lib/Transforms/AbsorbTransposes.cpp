//===- AbsorbTransposes.cpp - dot_generals read transposes in place -------===//
//
// See AbsorbTransposes in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Passes.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_ABSORBTRANSPOSES
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace {

/// A dot_general operand's (batch, contract) dims renumbered through the
/// transpose that made it, so the dot can read the transpose's source.
/// Possible when the operand's free dims keep their order in the source,
/// since the result lists them in operand order. Nothing otherwise.
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
throughTranspose(TransposeOp t, ArrayRef<int64_t> batch,
                 ArrayRef<int64_t> contract) {
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t last = -1;
  for (int64_t d = 0; d < int64_t(perm.size()); ++d) {
    if (llvm::is_contained(batch, d) || llvm::is_contained(contract, d))
      continue;
    if (perm[d] < last)
      return std::nullopt;
    last = perm[d];
  }
  SmallVector<int64_t> b, c;
  for (int64_t d : batch)
    b.push_back(perm[d]);
  for (int64_t d : contract)
    c.push_back(perm[d]);
  return std::make_pair(b, c);
}

/// The dims through `t` for `use`, when it is a dot_general operand.
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
dimsThrough(TransposeOp t, OpOperand &use) {
  auto dot = dyn_cast<DotGeneralOp>(use.getOwner());
  if (!dot)
    return std::nullopt;
  bool lhs = use.getOperandNumber() == 0;
  return throughTranspose(
      t, lhs ? dot.getLhsBatchingDimensions() : dot.getRhsBatchingDimensions(),
      lhs ? dot.getLhsContractingDimensions()
          : dot.getRhsContractingDimensions());
}

/// Whether `perm` on a dot_general's result puts rhs's free dims before
/// lhs's (batch dims staying first, each block in order): the result of the
/// same dot with its operands swapped.
bool swapsFreeDims(DotGeneralOp dot, ArrayRef<int64_t> perm) {
  int64_t batch = dot.getLhsBatchingDimensions().size();
  int64_t lhsFree = dot.getLhs().getType().getRank() - batch -
                    dot.getLhsContractingDimensions().size();
  int64_t rhsFree = int64_t(perm.size()) - batch - lhsFree;
  if (lhsFree == 0 || rhsFree == 0)
    return false;
  SmallVector<int64_t> swapped;
  for (int64_t d = 0; d < batch; ++d)
    swapped.push_back(d);
  for (int64_t d = 0; d < rhsFree; ++d)
    swapped.push_back(batch + lhsFree + d);
  for (int64_t d = 0; d < lhsFree; ++d)
    swapped.push_back(batch + d);
  return llvm::equal(perm, swapped);
}

/// transpose(dot_general(a, b)) -> dot_general(b, a) when the transpose
/// only swaps the two operands' free dims and is the dot's one use (a
/// weight gradient X^T dY transposed to the weight's layout): the product
/// is written in the transposed layout, and no copy is made. A dot with
/// attributes of its own (they may describe its result's layout) stays.
bool absorbIntoProducer(TransposeOp t) {
  auto dot = t.getOperand().getDefiningOp<DotGeneralOp>();
  if (!dot || !dot->hasOneUse() ||
      !dot->getDiscardableAttrDictionary().empty() ||
      !swapsFreeDims(dot, t.getPermutation()))
    return false;
  OpBuilder b(t);
  auto swapped = b.create<DotGeneralOp>(
      dot.getLoc(), t.getType(), dot.getRhs(), dot.getLhs(),
      dot.getRhsBatchingDimensions(), dot.getLhsBatchingDimensions(),
      dot.getRhsContractingDimensions(), dot.getLhsContractingDimensions(),
      dot.getTf32(), dot.getF32Result());
  t.getResult().replaceAllUsesWith(swapped.getResult());
  t.erase();
  dot.erase();
  return true;
}

struct AbsorbTransposesPass
    : public trainc::impl::AbsorbTransposesBase<AbsorbTransposesPass> {
  void runOnOperation() override {
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp t) { transposes.push_back(t); });
    for (TransposeOp t : transposes) {
      if (absorbIntoProducer(t))
        continue;
      // All uses or none: a transpose that stays is materialized anyway.
      if (t->use_empty() || !llvm::all_of(t->getUses(), [&](OpOperand &use) {
            return dimsThrough(t, use).has_value();
          }))
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(t->getUses())) {
        auto dot = cast<DotGeneralOp>(use.getOwner());
        auto [batch, contract] = *dimsThrough(t, use);
        bool lhs = use.getOperandNumber() == 0;
        if (lhs) {
          dot.setLhsBatchingDimensions(batch);
          dot.setLhsContractingDimensions(contract);
        } else {
          dot.setRhsBatchingDimensions(batch);
          dot.setRhsContractingDimensions(contract);
        }
        use.set(t.getOperand());
      }
      t.erase();
    }
  }
};

} // namespace
