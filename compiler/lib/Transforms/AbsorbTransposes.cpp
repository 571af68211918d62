//===- AbsorbTransposes.cpp - Ops read and write transposes in place ------===//
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

/// Whether `perm` swaps an attention tensor's heads and sequence.
bool swapsHeadsAndSeq(ArrayRef<int64_t> perm) {
  return llvm::equal(perm, ArrayRef<int64_t>{0, 2, 1, 3});
}

/// Whether `op` is an attention or attention_grad with `qkv_heads`.
bool readsQkvWindows(Operation *op) {
  if (auto a = dyn_cast<AttentionOp>(op))
    return bool(a.getQkvHeads());
  if (auto g = dyn_cast<AttentionGradOp>(op))
    return bool(g.getQkvHeads());
  return false;
}

/// The tensor number (graph.attention's `seq_major` numbering) of `use`
/// when it is an attention or attention_grad operand other than the mask
/// (and other than query, key and value read as windows of `qkv_heads`,
/// which stay sequence-major).
std::optional<int64_t> attentionTensor(OpOperand &use) {
  Operation *op = use.getOwner();
  int64_t n = use.getOperandNumber();
  if (n < 3 && readsQkvWindows(op))
    return std::nullopt;
  if (isa<AttentionOp>(op) && n < 3)
    return n;
  if (isa<AttentionGradOp>(op) && n < 4)
    return n;
  return std::nullopt;
}

/// `op`'s seq_major list with tensor `i` flipped.
DenseI64ArrayAttr flipSeqMajor(Operation *op, int64_t i) {
  auto list = op->getAttrOfType<DenseI64ArrayAttr>("seq_major");
  SmallVector<int64_t> numbers;
  if (list)
    numbers.assign(list.asArrayRef().begin(), list.asArrayRef().end());
  if (llvm::is_contained(numbers, i))
    llvm::erase(numbers, i);
  else
    numbers.insert(llvm::upper_bound(numbers, i), i);
  return DenseI64ArrayAttr::get(op->getContext(), numbers);
}

void setSeqMajor(Operation *op, DenseI64ArrayAttr list) {
  if (list.empty())
    op->removeAttr("seq_major");
  else
    op->setAttr("seq_major", list);
}

/// transpose(attention result) with heads and sequence swapped, every use
/// of the result such a transpose: the op writes that layout itself
/// (`seq_major` flipped for the result) and the transposes go. Results
/// are numbered after the operands (3 for attention, 4..6 for the
/// gradient).
bool absorbIntoAttention(TransposeOp t) {
  auto result = dyn_cast<OpResult>(t.getOperand());
  if (!result || !isa<AttentionOp, AttentionGradOp>(result.getOwner()) ||
      readsQkvWindows(result.getOwner()) ||
      !swapsHeadsAndSeq(t.getPermutation()))
    return false;
  if (!llvm::all_of(result.getUsers(), [](Operation *user) {
        auto other = dyn_cast<TransposeOp>(user);
        return other && swapsHeadsAndSeq(other.getPermutation());
      }))
    return false;
  Operation *op = result.getOwner();
  int64_t first = isa<AttentionOp>(op) ? 3 : 4;
  setSeqMajor(op, flipSeqMajor(op, first + result.getResultNumber()));
  result.setType(t.getType());
  for (Operation *user : llvm::make_early_inc_range(result.getUsers())) {
    user->getResult(0).replaceAllUsesWith(result);
    user->erase();
  }
  return true;
}

struct AbsorbTransposesPass
    : public trainc::impl::AbsorbTransposesBase<AbsorbTransposesPass> {
  void runOnOperation() override {
    SmallVector<TransposeOp> transposes;
    getOperation().walk([&](TransposeOp t) { transposes.push_back(t); });
    DenseSet<Operation *> erased;
    for (TransposeOp t : transposes) {
      if (erased.contains(t))
        continue;
      if (absorbIntoProducer(t))
        continue;
      // Transposes of one attention result go together.
      if (auto result = dyn_cast<OpResult>(t.getOperand())) {
        SmallVector<Operation *> users(result.getUsers());
        if (absorbIntoAttention(t)) {
          erased.insert(users.begin(), users.end());
          continue;
        }
      }
      // All uses or none: a transpose that stays is materialized anyway.
      bool heads = swapsHeadsAndSeq(t.getPermutation());
      if (t->use_empty() || !llvm::all_of(t->getUses(), [&](OpOperand &use) {
            return dimsThrough(t, use).has_value() ||
                   (heads && attentionTensor(use));
          }))
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(t->getUses())) {
        if (std::optional<int64_t> tensor = attentionTensor(use)) {
          setSeqMajor(use.getOwner(), flipSeqMajor(use.getOwner(), *tensor));
          use.set(t.getOperand());
          continue;
        }
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
