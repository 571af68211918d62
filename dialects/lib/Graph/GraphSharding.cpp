//===- GraphSharding.cpp - The sharding rule of every graph op ------------===//
//
// ShardingRuleOpInterface (GraphInterfaces.td): which operand and result
// dimensions carry one factor. The rules are conservative where splitting
// would change what the op computes: a dimension the op reads whole (a
// softmax's axis, a norm's normalized dimensions, a slice's sliced one, a
// maximum's or a mean's reduced one) has no factor, and neither has the
// batch of attention with dropout, whose mask depends on each element's
// index in the whole tensor (graph.dropout's `blocks` and attention's
// `head_blocks` number a block of a split dimension in the whole). Tested
// by test/Dialect/Graph/sharding.mlir.
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphOps.h"

#include "llvm/ADT/STLExtras.h"

#include <numeric>

using namespace mlir;
using namespace trainc::graph;

//===----------------------------------------------------------------------===//
// ShardingRule
//===----------------------------------------------------------------------===//

bool ShardingRule::isReduction(int64_t factor) const {
  for (ArrayRef<int64_t> dims : resultDims)
    if (llvm::is_contained(dims, factor))
      return false;
  return true;
}

int64_t ShardingRule::dimOf(ArrayRef<int64_t> dims, int64_t factor) {
  for (auto [d, f] : llvm::enumerate(dims))
    if (f == factor)
      return int64_t(d);
  return -1;
}

void ShardingRule::print(llvm::raw_ostream &os) const {
  auto name = [&](int64_t f) {
    if (f < 18)
      os << char('i' + f);
    else
      os << 'f' << f;
  };
  auto list = [&](ArrayRef<SmallVector<int64_t>> values) {
    os << '(';
    llvm::interleaveComma(values, os, [&](ArrayRef<int64_t> dims) {
      os << '[';
      llvm::interleaveComma(dims, os, [&](int64_t f) {
        if (f == kNoFactor)
          os << '_';
        else
          name(f);
      });
      os << ']';
    });
    os << ')';
  };
  list(operandDims);
  os << " -> ";
  list(resultDims);
  if (!factorSizes.empty())
    os << " sizes ";
  llvm::interleaveComma(llvm::seq<int64_t>(0, factorSizes.size()), os,
                        [&](int64_t f) {
                          name(f);
                          os << '=' << factorSizes[f];
                        });
  SmallVector<int64_t> reductions;
  for (int64_t f = 0; f < int64_t(factorSizes.size()); ++f)
    if (isReduction(f))
      reductions.push_back(f);
  if (!reductions.empty()) {
    os << "; reduction ";
    llvm::interleaveComma(reductions, os, name);
  }
}

//===----------------------------------------------------------------------===//
// Building rules
//===----------------------------------------------------------------------===//

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}

/// A rule under construction: every dimension starts without a factor.
class RuleBuilder {
public:
  explicit RuleBuilder(Operation *op) : op(op) {
    for (Value v : op->getOperands())
      rule.operandDims.emplace_back(rankOf(v), ShardingRule::kNoFactor);
    for (Value v : op->getResults())
      rule.resultDims.emplace_back(rankOf(v), ShardingRule::kNoFactor);
  }

  /// A new factor of `size`.
  int64_t factor(int64_t size) {
    rule.factorSizes.push_back(size);
    return int64_t(rule.factorSizes.size()) - 1;
  }
  /// Dimension `dim` of every operand that is `v` carries `f`.
  void operand(Value v, int64_t dim, int64_t f) {
    for (OpOperand &use : op->getOpOperands())
      if (use.get() == v)
        rule.operandDims[use.getOperandNumber()][dim] = f;
  }
  void operand(unsigned index, int64_t dim, int64_t f) {
    rule.operandDims[index][dim] = f;
  }
  void result(unsigned index, int64_t dim, int64_t f) {
    rule.resultDims[index][dim] = f;
  }

  /// One factor per dimension of `like` in [0, rank) (all: -1) except
  /// those in `whole`, carried by every operand and result of exactly its
  /// shape: the rule of elementwise ops. Operands of another shape
  /// (scalars, a norm's scale) get none.
  void sameShape(Value like, ArrayRef<int64_t> whole = {}, int64_t rank = -1) {
    ArrayRef<int64_t> shape = shapeOf(like);
    if (rank < 0)
      rank = int64_t(shape.size());
    for (int64_t d = 0; d < rank; ++d) {
      if (llvm::is_contained(whole, d))
        continue;
      int64_t f = factor(shape[d]);
      for (OpOperand &use : op->getOpOperands())
        if (shapeOf(use.get()) == shape)
          rule.operandDims[use.getOperandNumber()][d] = f;
      for (OpResult r : op->getResults())
        if (shapeOf(r) == shape)
          rule.resultDims[r.getResultNumber()][d] = f;
    }
  }

  /// The factor of dimension `dim` of result `index`.
  int64_t resultFactor(unsigned index, int64_t dim) const {
    return rule.resultDims[index][dim];
  }

  ShardingRule take() { return std::move(rule); }

private:
  static int64_t rankOf(Value v) {
    return cast<ShapedType>(v.getType()).getRank();
  }

  Operation *op;
  ShardingRule rule;
};

ShardingRule elementwise(Operation *op) {
  RuleBuilder b(op);
  b.sameShape(op->getResult(0));
  return b.take();
}

/// Dimensions [0, axis) of `input` shared with every value of its shape;
/// the normalized dimensions [axis, rank) stay whole.
ShardingRule leadingDims(Operation *op, Value input, int64_t axis) {
  RuleBuilder b(op);
  b.sameShape(input, {}, axis);
  return b.take();
}

/// Dimension 0 whole (the collectives and shard_slice split or join it),
/// the others shared between operand 0 and result 0.
ShardingRule allButFirst(Operation *op) {
  RuleBuilder b(op);
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  for (int64_t d = 1; d < int64_t(shape.size()); ++d) {
    int64_t f = b.factor(shape[d]);
    b.operand(0u, d, f);
    b.result(0, d, f);
  }
  return b.take();
}

/// A reduction over `dims`: kept dimensions shared with the result; the
/// reduced ones are reduction factors when `sum`, else whole.
ShardingRule reduction(Operation *op, ArrayRef<int64_t> dims, bool sum) {
  RuleBuilder b(op);
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  int64_t next = 0;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (llvm::is_contained(dims, d)) {
      if (sum)
        b.operand(0u, d, b.factor(shape[d]));
      continue;
    }
    int64_t f = b.factor(shape[d]);
    b.operand(0u, d, f);
    b.result(0, next++, f);
  }
  return b.take();
}

/// Attention's factors: batch, and the key/value heads (the major part of
/// the query heads under grouped-query attention). Sequence and head
/// dimensions are whole: the softmax reads every key, and the causal mask
/// the absolute positions. `operands` are q, k, v (and the cotangent), the
/// tensors numbered as `seq_major` numbers them, results next: a tensor's
/// heads are its dimension 2 where it is stored [B, S, H, D].
///
/// With dropout only the heads: their blocks are numbered in the whole
/// (`head_blocks`, set by the partitioner), a batch's blocks are not.
ShardingRule attentionRule(Operation *op, ValueRange operands, Value mask,
                           std::optional<ArrayRef<int64_t>> seqMajor,
                           bool dropout) {
  RuleBuilder b(op);
  auto headsDim = [&](int64_t tensor) -> int64_t {
    return seqMajor && llvm::is_contained(*seqMajor, tensor) ? 2 : 1;
  };
  ArrayRef<int64_t> q = shapeOf(operands[0]), k = shapeOf(operands[1]);
  int64_t qHeads = q[headsDim(0)];
  // (kNoFactor maps a dimension to no factor: whole.)
  int64_t batch = dropout ? ShardingRule::kNoFactor : b.factor(q[0]);
  int64_t heads = b.factor(k[headsDim(1)]);
  for (auto [i, v] : llvm::enumerate(operands)) {
    b.operand(v, 0, batch);
    b.operand(v, headsDim(i), heads);
  }
  if (mask) {
    ArrayRef<int64_t> m = shapeOf(mask);
    if (m[0] == q[0])
      b.operand(mask, 0, batch);
    if (m[1] == qHeads)
      b.operand(mask, 1, heads);
  }
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    b.result(r, 0, batch);
    b.result(r, headsDim(operands.size() + r), heads);
  }
  return b.take();
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define TRAINC_ELEMENTWISE_RULE(OP)                                            \
  ShardingRule OP::getShardingRule() { return elementwise(*this); }
TRAINC_ELEMENTWISE_RULE(NegOp)
TRAINC_ELEMENTWISE_RULE(AbsOp)
TRAINC_ELEMENTWISE_RULE(ExpOp)
TRAINC_ELEMENTWISE_RULE(LogOp)
TRAINC_ELEMENTWISE_RULE(TanhOp)
TRAINC_ELEMENTWISE_RULE(ErfOp)
TRAINC_ELEMENTWISE_RULE(SqrtOp)
TRAINC_ELEMENTWISE_RULE(RsqrtOp)
TRAINC_ELEMENTWISE_RULE(CosOp)
TRAINC_ELEMENTWISE_RULE(SinOp)
TRAINC_ELEMENTWISE_RULE(FloorOp)
TRAINC_ELEMENTWISE_RULE(RoundOp)
TRAINC_ELEMENTWISE_RULE(AddOp)
TRAINC_ELEMENTWISE_RULE(SubOp)
TRAINC_ELEMENTWISE_RULE(MulOp)
TRAINC_ELEMENTWISE_RULE(DivOp)
TRAINC_ELEMENTWISE_RULE(PowOp)
TRAINC_ELEMENTWISE_RULE(RemainderOp)
TRAINC_ELEMENTWISE_RULE(MaxOp)
TRAINC_ELEMENTWISE_RULE(MinOp)
TRAINC_ELEMENTWISE_RULE(AndOp)
TRAINC_ELEMENTWISE_RULE(OrOp)
TRAINC_ELEMENTWISE_RULE(XorOp)
TRAINC_ELEMENTWISE_RULE(NotOp)
TRAINC_ELEMENTWISE_RULE(ShiftLeftOp)
TRAINC_ELEMENTWISE_RULE(ShiftRightLogicalOp)
TRAINC_ELEMENTWISE_RULE(ShiftRightArithmeticOp)
TRAINC_ELEMENTWISE_RULE(PopCountOp)
TRAINC_ELEMENTWISE_RULE(CountLeadingZerosOp)
TRAINC_ELEMENTWISE_RULE(BitcastOp)
TRAINC_ELEMENTWISE_RULE(CompareOp)
TRAINC_ELEMENTWISE_RULE(SelectOp)
TRAINC_ELEMENTWISE_RULE(ConvertOp)
TRAINC_ELEMENTWISE_RULE(GeluOp)
TRAINC_ELEMENTWISE_RULE(GeluGradOp)
// The scalars (step size, bias corrections, skip) have no dimensions.
// Sums over ranks, element by element.
TRAINC_ELEMENTWISE_RULE(AllReduceOp)
TRAINC_ELEMENTWISE_RULE(AllReduceStartOp)
// The pending value; the source (the start's operand) only if it has the
// result's shape.
TRAINC_ELEMENTWISE_RULE(CollectiveDoneOp)
#undef TRAINC_ELEMENTWISE_RULE

/// Elementwise (0-d operands have no dimensions), and each dimension of a
/// broadcast operand (operand_dims) that is not of size 1 carries the
/// factor of the results' dimension it spans.
ShardingRule FusedElementwiseOp::getShardingRule() {
  RuleBuilder b(*this);
  b.sameShape(getResult(0));
  std::optional<ArrayAttr> operandDims = getOperandDims();
  if (!operandDims)
    return b.take();
  ArrayRef<int64_t> out = shapeOf(getResult(0));
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> in = shapeOf(v);
    ArrayRef<int64_t> dims =
        cast<DenseI64ArrayAttr>((*operandDims)[i]).asArrayRef();
    for (auto [k, d] : llvm::enumerate(dims))
      if (in[k] == out[d])
        b.operand(unsigned(i), int64_t(k), b.resultFactor(0, d));
  }
  return b.take();
}

/// Parameter i's dimensions shared with its gradient, moments and results,
/// element by element; the parameters of a group share nothing.
ShardingRule AdamwUpdateOp::getShardingRule() {
  RuleBuilder b(*this);
  unsigned n = getParams().size();
  for (unsigned i = 0; i < n; ++i) {
    ArrayRef<int64_t> shape = shapeOf(getParams()[i]);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
      int64_t f = b.factor(shape[d]);
      for (unsigned k = 0; k < 4; ++k)
        b.operand(k * n + i, d, f);
      for (unsigned k = 0; k < 3; ++k)
        b.result(k * n + i, d, f);
    }
  }
  return b.take();
}
/// Operand i's dimensions shared with result i; the pairs share nothing.
ShardingRule ConvertGroupOp::getShardingRule() {
  RuleBuilder b(*this);
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> shape = shapeOf(v);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
      int64_t f = b.factor(shape[d]);
      b.operand(unsigned(i), d, f);
      b.result(unsigned(i), d, f);
    }
  }
  return b.take();
}
/// Every dimension summed over: each a factor of its own, a reduction.
ShardingRule SumOfSquaresOp::getShardingRule() {
  RuleBuilder b(*this);
  for (auto [i, v] : llvm::enumerate(getOperands())) {
    ArrayRef<int64_t> shape = shapeOf(v);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      b.operand(unsigned(i), d, b.factor(shape[d]));
  }
  return b.take();
}

ShardingRule ReduceScatterOp::getShardingRule() { return allButFirst(*this); }
ShardingRule AllGatherOp::getShardingRule() { return allButFirst(*this); }
ShardingRule ShardSliceOp::getShardingRule() { return allButFirst(*this); }
ShardingRule ReduceScatterStartOp::getShardingRule() {
  return allButFirst(*this);
}
ShardingRule AllGatherStartOp::getShardingRule() { return allButFirst(*this); }

/// The mask is a function of each element's index in the whole tensor: a
/// block of one dimension draws its part of it where `blocks` numbers the
/// block in the whole (the partitioner sets it), so every dimension may
/// split, once.
ShardingRule DropoutOp::getShardingRule() {
  RuleBuilder b(*this);
  if (getBlocks() == 1)
    b.sameShape(getOperand());
  return b.take();
}

/// Each row is sorted whole; the other dimensions are independent.
ShardingRule ArgsortOp::getShardingRule() {
  RuleBuilder b(*this);
  b.sameShape(getResult(), {int64_t(getAxis())});
  return b.take();
}

ShardingRule SoftmaxOp::getShardingRule() {
  RuleBuilder b(*this);
  b.sameShape(getResult(), {int64_t(getDim())});
  return b.take();
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

/// dot_general's factors: batch dimensions shared by both operands and the
/// result (first), then each operand's free dimensions in order. The
/// contraction is a sum over a factor of its own when `sumContraction`;
/// otherwise its dimensions have no factor (they stay whole).
static void dotGeneralRule(RuleBuilder &b, Value lhsValue, Value rhsValue,
                           ArrayRef<int64_t> lhsBatch,
                           ArrayRef<int64_t> rhsBatch,
                           ArrayRef<int64_t> lhsContract,
                           ArrayRef<int64_t> rhsContract, bool sumContraction,
                           SmallVectorImpl<int64_t> &rhsFreeFactors) {
  ArrayRef<int64_t> lhs = cast<ShapedType>(lhsValue.getType()).getShape();
  ArrayRef<int64_t> rhs = cast<ShapedType>(rhsValue.getType()).getShape();
  int64_t next = 0;
  for (auto [l, r] : llvm::zip(lhsBatch, rhsBatch)) {
    int64_t f = b.factor(lhs[l]);
    b.operand(0u, l, f);
    b.operand(1u, r, f);
    b.result(0, next++, f);
  }
  if (sumContraction)
    for (auto [l, r] : llvm::zip(lhsContract, rhsContract)) {
      int64_t f = b.factor(lhs[l]);
      b.operand(0u, l, f);
      b.operand(1u, r, f);
    }
  auto free = [&](unsigned index, ArrayRef<int64_t> shape,
                  ArrayRef<int64_t> batching, ArrayRef<int64_t> contracting,
                  SmallVectorImpl<int64_t> *factors) {
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
      if (llvm::is_contained(batching, d) || llvm::is_contained(contracting, d))
        continue;
      int64_t f = b.factor(shape[d]);
      b.operand(index, d, f);
      b.result(0, next++, f);
      if (factors)
        factors->push_back(f);
    }
  };
  free(0, lhs, lhsBatch, lhsContract, nullptr);
  free(1, rhs, rhsBatch, rhsContract, &rhsFreeFactors);
}

/// The contraction is a sum.
ShardingRule DotGeneralOp::getShardingRule() {
  RuleBuilder b(*this);
  SmallVector<int64_t> rhsFree;
  dotGeneralRule(b, getLhs(), getRhs(), getLhsBatchingDimensions(),
                 getRhsBatchingDimensions(), getLhsContractingDimensions(),
                 getRhsContractingDimensions(), /*sumContraction=*/true,
                 rhsFree);
  return b.take();
}

/// The bias follows rhs's free dimensions. The contraction stays whole:
/// partial products would each get the bias.
ShardingRule DotGeneralBiasOp::getShardingRule() {
  RuleBuilder b(*this);
  SmallVector<int64_t> rhsFree;
  dotGeneralRule(b, getLhs(), getRhs(), getLhsBatchingDimensions(),
                 getRhsBatchingDimensions(), getLhsContractingDimensions(),
                 getRhsContractingDimensions(), /*sumContraction=*/false,
                 rhsFree);
  for (auto [d, f] : llvm::enumerate(rhsFree))
    b.operand(2u, int64_t(d), f);
  return b.take();
}

/// Formed after partitioning (in the lower phase): every dimension whole.
ShardingRule DotGeneralBiasGeluOp::getShardingRule() {
  return RuleBuilder(*this).take();
}

/// Formed after partitioning (in the lower phase): every dimension whole.
ShardingRule DotGeneralGeluGradOp::getShardingRule() {
  return RuleBuilder(*this).take();
}

/// Formed after partitioning (in the lower phase): every dimension whole.
ShardingRule DotGeneralBiasGradOp::getShardingRule() {
  return RuleBuilder(*this).take();
}

/// Formed after partitioning (in the lower phase): every dimension whole.
ShardingRule SoftmaxCrossEntropyAndGradOp::getShardingRule() {
  return RuleBuilder(*this).take();
}

ShardingRule ReduceSumOp::getShardingRule() {
  return reduction(*this, getDims(), /*sum=*/true);
}
ShardingRule ReduceMaxOp::getShardingRule() {
  return reduction(*this, getDims(), /*sum=*/false);
}
/// No collective multiplies parts: the reduced dimensions are kept whole.
ShardingRule ReduceProdOp::getShardingRule() {
  return reduction(*this, getDims(), /*sum=*/false);
}
/// A mean of parts is not the mean of the whole unless the parts are
/// divided again; kept whole instead.
ShardingRule ReduceMeanOp::getShardingRule() {
  return reduction(*this, getDims(), /*sum=*/false);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Operand dimension i shares the factor of result dimension dims[i]
/// unless it is a broadcast size 1.
ShardingRule BroadcastInDimOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = getOperand().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  SmallVector<int64_t> factors;
  for (int64_t d = 0; d < int64_t(out.size()); ++d) {
    factors.push_back(b.factor(out[d]));
    b.result(0, d, factors.back());
  }
  for (auto [i, d] : llvm::enumerate(getDims()))
    if (in[i] == out[d])
      b.operand(0u, int64_t(i), factors[d]);
  return b.take();
}

/// The shapes fall into groups of dimensions with equal products (size-1
/// dimensions aside). In each group, the first dimension of each side
/// carries one factor of the size both divide (their gcd): a split of it
/// into contiguous blocks is the same split of the group's elements on
/// both sides. The other dimensions of a group stay whole.
ShardingRule ReshapeOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = getOperand().getType().getShape();
  ArrayRef<int64_t> out = getType().getShape();
  // An empty tensor has nothing to split.
  if (llvm::is_contained(in, 0) || llvm::is_contained(out, 0))
    return b.take();
  size_t i = 0, o = 0;
  auto skipOnes = [](ArrayRef<int64_t> shape, size_t &k) {
    while (k < shape.size() && shape[k] == 1)
      ++k;
  };
  while (true) {
    skipOnes(in, i);
    skipOnes(out, o);
    if (i >= in.size() || o >= out.size())
      break;
    size_t firstIn = i, firstOut = o;
    int64_t productIn = in[i++], productOut = out[o++];
    while (productIn != productOut) {
      if (productIn < productOut)
        productIn *= in[i++];
      else
        productOut *= out[o++];
    }
    int64_t f = b.factor(std::gcd(in[firstIn], out[firstOut]));
    b.operand(0u, int64_t(firstIn), f);
    b.result(0, int64_t(firstOut), f);
  }
  return b.take();
}

ShardingRule TransposeOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = getOperand().getType().getShape();
  for (auto [d, from] : llvm::enumerate(getPermutation())) {
    int64_t f = b.factor(in[from]);
    b.operand(0u, from, f);
    b.result(0, int64_t(d), f);
  }
  return b.take();
}

/// Dimensions taken whole (from 0 to the end, stride 1) share a factor;
/// a sliced dimension is whole.
ShardingRule SliceOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = getOperand().getType().getShape();
  for (int64_t d = 0; d < int64_t(in.size()); ++d) {
    if (getStart()[d] != 0 || getLimit()[d] != in[d] || getStrides()[d] != 1)
      continue;
    int64_t f = b.factor(in[d]);
    b.operand(0u, d, f);
    b.result(0, d, f);
  }
  return b.take();
}

/// The joined dimension is whole; the inputs share the others.
ShardingRule ConcatenateOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> out = getType().getShape();
  for (int64_t d = 0; d < int64_t(out.size()); ++d) {
    if (d == int64_t(getDim()))
      continue;
    int64_t f = b.factor(out[d]);
    b.result(0, d, f);
    for (unsigned i = 0; i < getInputs().size(); ++i)
      b.operand(i, d, f);
  }
  return b.take();
}

/// The looked-up dimension is whole (any rank may need any row); the
/// others, and the indices' dimensions, map to the result's.
ShardingRule GatherOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> in = getOperand().getType().getShape();
  ArrayRef<int64_t> idx = getIndices().getType().getShape();
  int64_t axis = int64_t(getAxis()), next = 0;
  for (int64_t d = 0; d < axis; ++d) {
    int64_t f = b.factor(in[d]);
    b.operand(0u, d, f);
    b.result(0, next++, f);
  }
  for (int64_t d = 0; d < int64_t(idx.size()); ++d) {
    int64_t f = b.factor(idx[d]);
    b.operand(1u, d, f);
    b.result(0, next++, f);
  }
  for (int64_t d = axis + 1; d < int64_t(in.size()); ++d) {
    int64_t f = b.factor(in[d]);
    b.operand(0u, d, f);
    b.result(0, next++, f);
  }
  return b.take();
}

/// The batch and the channels each carry a factor; the spatial and window
/// dimensions are whole (a window reads its neighbours).
ShardingRule ExtractPatchesOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> x = getOperand().getType().getShape();
  int64_t d = int64_t(x.size()) - 2;
  int64_t n = b.factor(x[0]), c = b.factor(x[1]);
  b.operand(0u, 0, n);
  b.operand(0u, 1, c);
  b.result(0, d + 1, n);
  b.result(0, 0, c);
  return b.take();
}

ShardingRule FoldPatchesOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> y = getType().getShape();
  int64_t d = int64_t(y.size()) - 2;
  int64_t n = b.factor(y[0]), c = b.factor(y[1]);
  b.result(0, 0, n);
  b.result(0, 1, c);
  b.operand(0u, d + 1, n);
  b.operand(0u, 0, c);
  return b.take();
}

/// Gather's transpose: the index dimensions are summed into the result's
/// rows (reduction factors); the scattered dimension is whole.
ShardingRule ScatterAddOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> out = getType().getShape();
  ArrayRef<int64_t> idx = getIndices().getType().getShape();
  int64_t axis = int64_t(getAxis()), next = 0;
  for (int64_t d = 0; d < axis; ++d) {
    int64_t f = b.factor(out[d]);
    b.operand(0u, next++, f);
    b.result(0, d, f);
  }
  for (int64_t d = 0; d < int64_t(idx.size()); ++d) {
    int64_t f = b.factor(idx[d]);
    b.operand(0u, next++, f);
    b.operand(1u, d, f);
  }
  for (int64_t d = axis + 1; d < int64_t(out.size()); ++d) {
    int64_t f = b.factor(out[d]);
    b.operand(0u, next++, f);
    b.result(0, d, f);
  }
  return b.take();
}

/// The counted dimension is whole; along the others the values repeat.
ShardingRule IotaOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> shape = getType().getShape();
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (d != int64_t(getDim()))
      b.result(0, d, b.factor(shape[d]));
  return b.take();
}

/// A splat has the same value everywhere, so any part of it is a splat;
/// other constants are whole.
ShardingRule ConstantOp::getShardingRule() {
  RuleBuilder b(*this);
  auto splat = dyn_cast<SplatElementsAttr>(getValue());
  if (!splat)
    return b.take();
  ArrayRef<int64_t> shape = cast<ShapedType>(getType()).getShape();
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    b.result(0, d, b.factor(shape[d]));
  return b.take();
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

ShardingRule LayerNormOp::getShardingRule() {
  return leadingDims(*this, getInput(), int64_t(getAxis()));
}
ShardingRule RmsNormOp::getShardingRule() {
  return leadingDims(*this, getInput(), int64_t(getAxis()));
}
ShardingRule NormGradOp::getShardingRule() {
  return leadingDims(*this, getInput(), int64_t(getAxis()));
}

/// Formed after partitioning (the lower phase). Every dimension whole:
/// the leading dims would be split in input_grad but summed in the
/// parameters' gradients, which one factor cannot say.
ShardingRule NormGradParamsOp::getShardingRule() {
  return RuleBuilder(*this).take();
}

/// With `qkv_heads` (formed after partitioning, in the lower phase) every
/// dimension is whole: one stored head dimension holds the query's, the
/// key's and the value's heads, which one factor cannot split.
///
/// With `dropout` only the heads may split, once: the mask depends on each
/// probability's index in the whole [B, Hq, Sq, Sk], which `head_blocks`
/// gives for a block of the heads (the partitioner sets it) but nothing
/// gives for a block of the batch.
ShardingRule AttentionOp::getShardingRule() {
  if (getQkvHeads() || (drawsMasks() && getHeadBlocks() != 1))
    return RuleBuilder(*this).take();
  return attentionRule(*this, {getQuery(), getKey(), getValue()}, getMask(),
                       getSeqMajor(), drawsMasks());
}
ShardingRule AttentionGradOp::getShardingRule() {
  if (getQkvHeads() || (drawsMasks() && getHeadBlocks() != 1))
    return RuleBuilder(*this).take();
  return attentionRule(*this,
                       {getQuery(), getKey(), getValue(), getCotangent()},
                       getMask(), getSeqMajor(), drawsMasks());
}

/// Positions are independent; the classes are whole (logsumexp over
/// them). A `sum` over positions is a reduction factor; a `mean` divides
/// by the count of every rank's positions, so it keeps them whole.
ShardingRule SoftmaxCrossEntropyOp::getShardingRule() {
  RuleBuilder b(*this);
  ArrayRef<int64_t> targets = getTargets().getType().getShape();
  LossReduction reduction = getReduction();
  if (reduction == LossReduction::mean)
    return b.take();
  for (int64_t d = 0; d < int64_t(targets.size()); ++d) {
    int64_t f = b.factor(targets[d]);
    b.operand(0u, d, f);
    b.operand(1u, d, f);
    if (reduction == LossReduction::none)
      b.result(0, d, f);
  }
  return b.take();
}

/// Positions are independent (targets and weight have one per row); the
/// classes are whole.
ShardingRule SoftmaxCrossEntropyGradOp::getShardingRule() {
  RuleBuilder b(*this);
  int64_t rows = getLogits().getType().getRank() - 1;
  b.sameShape(getLogits(), {}, rows);
  for (int64_t d = 0; d < rows; ++d) {
    b.operand(1u, d, b.resultFactor(0, d));
    b.operand(2u, d, b.resultFactor(0, d));
  }
  return b.take();
}
