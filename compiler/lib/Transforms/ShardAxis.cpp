//===- ShardAxis.cpp - Propagate shardings over one axis, then split ops --===//
//
// The partition phase's tensor axis (see Partition.h, shardAlongAxis):
// 1. Seeds: ops annotated `graph.sharding` (by hand, or by the Megatron
//    strategy, seedMegatron) split their result along one dimension.
//    Function arguments are whole on the axis.
// 2. Propagation: sweeps over @main, forward then backward, until nothing
//    changes. At each op, the first operand (then result) already split
//    along a dimension with a splittable factor of its ShardingRule picks
//    that factor; every undecided operand and result carrying it is split
//    along the dimension that carries it. That is the conflict rule: what
//    was decided first (seeds, then program order) stays; a value needed
//    otherwise by another op is converted there. Values still undecided at
//    the end are whole.
// 3. Per-rank rewriting, op by op in program order: the op splits the
//    factor propagation chose for it (that of its first split operand,
//    else result); each operand is
//    converted to what that needs (graph.shard_slice takes this rank's
//    block of a whole value, graph.all_gather joins blocks); the op is
//    rebuilt on blocks; a split reduction factor leaves partial sums. Those
//    pass whole-shaped through sums, negations and data movement whose
//    operands are all partial (so the three partial input gradients of a QKV
//    projection are added before one all_reduce), and are completed where a
//    user needs them: graph.all_reduce for a whole value, graph.reduce_scatter
//    for a split one. Function results are whole.
// A factor is splittable when the axis size divides it.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Partition.h"

#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace trainc::graph;
namespace train = trainc::train;

namespace {

/// Where a value is split: kWhole, the dimension, or (in the rewritten
/// program) kPartial: each rank holds a whole-shaped partial sum.
constexpr int64_t kWhole = -1;
constexpr int64_t kPartial = -2;

/// Ops linear in every operand that keep a partial sum partial: summed over
/// the ranks, op(partial parts) is op(whole). The rest complete it first.
bool keepsPartialSums(Operation *op) {
  return isa<AddOp, SubOp, NegOp, ReshapeOp, TransposeOp, BroadcastInDimOp,
             SliceOp, ConcatenateOp>(op);
}

/// Moves dimension `dim` of `v` to the front (or back, with `inverse`).
Value moveDim(OpBuilder &b, Location loc, Value v, int64_t dim, bool inverse) {
  auto type = cast<RankedTensorType>(v.getType());
  if (dim == 0)
    return v;
  SmallVector<int64_t> perm;
  if (!inverse) {
    perm.push_back(dim);
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != dim)
        perm.push_back(d);
  } else {
    for (int64_t d = 1; d <= dim; ++d)
      perm.push_back(d);
    perm.push_back(0);
    for (int64_t d = dim + 1; d < type.getRank(); ++d)
      perm.push_back(d);
  }
  return b.create<TransposeOp>(loc, v, perm);
}

/// `v` with dimension `dim` multiplied (`gather`) or divided by `n`.
RankedTensorType resized(Value v, int64_t dim, int64_t n, bool gather) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = gather ? shape[dim] * n : shape[dim] / n;
  return type.clone(shape);
}

class AxisSharder {
public:
  AxisSharder(func::FuncOp fn, StringRef axis, int64_t n, bool splitParameters)
      : fn(fn), axis(axis), n(n), splitParameters(splitParameters) {}

  LogicalResult run() {
    if (failed(seed()))
      return failure();
    propagate();
    return rewrite();
  }

private:
  /// Reads the `graph.sharding` annotations of ops (result 0).
  LogicalResult seed() {
    Block &body = fn.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      auto dims = fn.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(),
                                                 GraphDialect::kShardingAttr);
      if (dims && llvm::any_of(dims, [&](Attribute a) {
            return cast<StringAttr>(a).getValue() == axis;
          }))
        return fn.emitError("partition: argument ")
               << arg.getArgNumber() << " is split over '" << axis
               << "', but arguments split over it are not supported yet: "
                  "annotate the ops that read it instead";
      split[arg] = kWhole;
    }
    for (Operation &op : body.without_terminator()) {
      auto dims = op.getAttrOfType<ArrayAttr>(GraphDialect::kShardingAttr);
      if (!dims)
        continue;
      op.removeAttr(GraphDialect::kShardingAttr);
      auto type = op.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(op.getResult(0).getType())
                      : RankedTensorType();
      if (!type || int64_t(dims.size()) != type.getRank())
        return op.emitError("partition: '")
               << GraphDialect::kShardingAttr
               << "' on an op must name one axis per dimension of its one "
                  "result";
      int64_t dim = kWhole;
      for (auto [d, a] : llvm::enumerate(dims)) {
        StringRef name = cast<StringAttr>(a).getValue();
        if (name.empty())
          continue;
        if (name != axis)
          return op.emitError("partition: '")
                 << GraphDialect::kShardingAttr << "' on an op may name only '"
                 << axis << "', not '" << name << "'";
        if (dim != kWhole)
          return op.emitError("partition: '")
                 << GraphDialect::kShardingAttr << "' splits dimensions " << dim
                 << " and " << d << " over '" << axis
                 << "'; a value is split along one dimension of an axis";
        dim = int64_t(d);
      }
      if (dim != kWhole && type.getDimSize(dim) % n != 0)
        return op.emitError("partition: cannot split dimension ")
               << dim << " (" << type.getDimSize(dim) << ") of " << type
               << " into " << n << " equal parts over '" << axis << "'";
      split[op.getResult(0)] = dim;
    }
    return success();
  }

  bool splittable(const ShardingRule &rule, int64_t f) const {
    return f != ShardingRule::kNoFactor && rule.factorSizes[f] % n == 0;
  }

  /// The factor `op` splits: that of the first operand, else result,
  /// already split along a dimension whose factor is splittable (absent
  /// from `split`: undecided, skipped); else kNoFactor. Propagation and
  /// the rewriting ask the same question, so the op runs as propagation
  /// decided.
  int64_t chosenFactor(Operation *op, const ShardingRule &rule) {
    // Partial sums are completed by collectives that take floats.
    bool floatResults = llvm::all_of(op->getResults(), [](Value r) {
      return isFloatTensorType(r.getType());
    });
    auto fromValues = [&](ValueRange values,
                          ArrayRef<SmallVector<int64_t>> dims) -> int64_t {
      for (auto [v, vdims] : llvm::zip(values, dims)) {
        auto it = split.find(v);
        if (it == split.end() || it->second == kWhole)
          continue;
        int64_t f = vdims[it->second];
        if (splittable(rule, f) && (floatResults || !rule.isReduction(f)))
          return f;
      }
      return ShardingRule::kNoFactor;
    };
    int64_t f = fromValues(op->getOperands(), rule.operandDims);
    return f != ShardingRule::kNoFactor
               ? f
               : fromValues(op->getResults(), rule.resultDims);
  }

  bool propagateAt(Operation *op) {
    auto sharded = dyn_cast<ShardingRuleOpInterface>(op);
    if (!sharded)
      return false;
    ShardingRule rule = sharded.getShardingRule();
    int64_t f = chosenFactor(op, rule);
    if (f == ShardingRule::kNoFactor)
      return false;
    bool changed = false;
    auto adopt = [&](ValueRange values, ArrayRef<SmallVector<int64_t>> dims) {
      for (auto [v, vdims] : llvm::zip(values, dims)) {
        int64_t d = ShardingRule::dimOf(vdims, f);
        if (d >= 0 && !split.count(v)) {
          split[v] = d;
          changed = true;
        }
      }
    };
    adopt(op->getOperands(), rule.operandDims);
    adopt(op->getResults(), rule.resultDims);
    return changed;
  }

  void propagate() {
    Block &body = fn.getBody().front();
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation &op : body)
        changed |= propagateAt(&op);
      for (Operation &op : llvm::reverse(body))
        changed |= propagateAt(&op);
    }
  }

  /// `v` (now split along `have`) split along `want` instead.
  Value convert(OpBuilder &b, Location loc, Value v, int64_t have,
                int64_t want) {
    if (have == want)
      return v;
    auto key = std::make_pair(v, want);
    if (Value done = converted.lookup(key))
      return done;
    Value out = v;
    if (have == kPartial) {
      // 16-bit partial sums (mixed precision) are summed in f32: more
      // accurate, and what MPI can sum.
      auto type = cast<RankedTensorType>(v.getType());
      Type element = type.getElementType();
      bool narrow = element.getIntOrFloatBitWidth() < 32;
      if (narrow)
        out = b.create<ConvertOp>(loc, type.clone(b.getF32Type()), out);
      if (want == kWhole) {
        out = b.create<AllReduceOp>(loc, out, axis);
      } else {
        // Summed and split in one: half the traffic of an all_reduce.
        Value front = moveDim(b, loc, out, want, /*inverse=*/false);
        Value mine = b.create<ReduceScatterOp>(
            loc, resized(front, 0, n, /*gather=*/false), front,
            b.getStringAttr(axis));
        out = moveDim(b, loc, mine, want, /*inverse=*/true);
      }
      if (narrow)
        out = b.create<ConvertOp>(
            loc, cast<RankedTensorType>(out.getType()).clone(element), out);
      converted[key] = out;
      return out;
    }
    if (have != kWhole) {
      Value front = moveDim(b, loc, out, have, /*inverse=*/false);
      Value gathered =
          b.create<AllGatherOp>(loc, resized(front, 0, n, /*gather=*/true),
                                front, b.getStringAttr(axis));
      out = moveDim(b, loc, gathered, have, /*inverse=*/true);
    }
    if (want != kWhole) {
      Value front = moveDim(b, loc, out, want, /*inverse=*/false);
      Value mine =
          b.create<ShardSliceOp>(loc, resized(front, 0, n, /*gather=*/false),
                                 front, b.getStringAttr(axis));
      out = moveDim(b, loc, mine, want, /*inverse=*/true);
    }
    converted[key] = out;
    return out;
  }

  /// The op rebuilt on blocks: result types divided along `f`, and the
  /// attributes that name sizes (a slice's limits, a splat's type).
  Operation *rebuild(OpBuilder &b, Operation *op, const ShardingRule &rule,
                     int64_t f, ArrayRef<Value> operands) {
    // Operand by operand: a value read twice may be converted two ways
    // (dot_general(x, x) with one side split).
    Operation *clone = b.clone(*op);
    for (auto [i, v] : llvm::enumerate(operands))
      clone->setOperand(unsigned(i), v);
    if (f == ShardingRule::kNoFactor)
      return clone;
    for (auto [r, dims] : llvm::zip(clone->getResults(), rule.resultDims)) {
      int64_t d = ShardingRule::dimOf(dims, f);
      if (d >= 0)
        r.setType(resized(r, d, n, /*gather=*/false));
    }
    if (auto slice = dyn_cast<SliceOp>(clone)) {
      SmallVector<int64_t> limit(slice.getLimit());
      int64_t d = ShardingRule::dimOf(rule.resultDims[0], f);
      if (d >= 0)
        limit[d] /= n;
      slice.setLimit(limit);
    }
    // A random op numbers its block of the split dimension in the whole:
    // attention's dropout the heads (the only factor its rule splits with
    // dropout), graph.dropout any one. head_blocks and blocks count the
    // blocks of the mesh's tensor axis, the only axis split here.
    assert(axis == "tensor" && "head_blocks and blocks name the tensor axis");
    if (auto attention = dyn_cast<AttentionOp>(clone);
        attention && attention.drawsMasks())
      attention.setHeadBlocks(n);
    if (auto grad = dyn_cast<AttentionGradOp>(clone); grad && grad.drawsMasks())
      grad.setHeadBlocks(n);
    if (auto dropout = dyn_cast<DropoutOp>(clone);
        dropout && !dropout.getRatio().isZero()) {
      dropout.setBlocks(n);
      dropout.setBlockDim(ShardingRule::dimOf(rule.resultDims[0], f));
    }
    if (auto constant = dyn_cast<ConstantOp>(clone)) {
      auto splat = cast<SplatElementsAttr>(constant.getValue());
      constant.setValueAttr(
          SplatElementsAttr::get(cast<ShapedType>(constant.getType()),
                                 splat.getSplatValue<Attribute>()));
    }
    return clone;
  }

  LogicalResult rewrite() {
    Block &body = fn.getBody().front();
    // Where each value of the rewritten program is split.
    DenseMap<Value, int64_t> actual;
    for (BlockArgument arg : body.getArguments())
      actual[arg] = kWhole;
    IRMapping mapping;
    for (BlockArgument arg : body.getArguments())
      mapping.map(arg, arg);
    SmallVector<Operation *> old;
    for (Operation &op : body)
      old.push_back(&op);
    OpBuilder b(fn.getContext());
    for (Operation *op : old) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      auto sharded = dyn_cast<ShardingRuleOpInterface>(op);
      ShardingRule rule;
      int64_t f = ShardingRule::kNoFactor;
      if (sharded) {
        rule = sharded.getShardingRule();
        f = chosenFactor(op, rule);
      }
      // Partial sums pass through linear ops whole-shaped, completed once
      // after them rather than once per operand.
      bool passPartial = keepsPartialSums(op) && op->getNumOperands() > 0 &&
                         llvm::all_of(op->getOperands(), [&](Value v) {
                           return actual.lookup(mapping.lookup(v)) == kPartial;
                         });
      if (passPartial)
        f = ShardingRule::kNoFactor;
      SmallVector<Value> operands;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        Value mapped = mapping.lookup(v);
        if (passPartial) {
          operands.push_back(mapped);
          continue;
        }
        int64_t want = f == ShardingRule::kNoFactor
                           ? kWhole
                           : ShardingRule::dimOf(rule.operandDims[i], f);
        operands.push_back(
            convert(b, loc, mapped, actual.lookup(mapped), want));
      }
      if (isa<func::ReturnOp>(op)) {
        for (Value v : op->getOperands()) {
          Value mapped = mapping.lookup(v);
          returned.push_back({mapped, actual.lookup(mapped)});
        }
        op->setOperands(operands);
        continue;
      }
      Operation *clone = rebuild(b, op, rule, f, operands);
      // A split reduction factor leaves partial sums, completed (by
      // convert) where a user needs them whole or split.
      bool partial =
          passPartial || (f != ShardingRule::kNoFactor && rule.isReduction(f));
      for (auto [i, r] : llvm::enumerate(clone->getResults())) {
        int64_t d = partial ? kPartial
                    : f == ShardingRule::kNoFactor
                        ? kWhole
                        : ShardingRule::dimOf(rule.resultDims[i], f);
        actual[r] = d;
        mapping.map(op->getResult(i), r);
      }
    }
    for (Operation *op : llvm::reverse(old))
      if (!isa<func::ReturnOp>(op)) {
        op->dropAllUses();
        op->erase();
      }
    if (splitParameters)
      keepParametersSplit();
    fn.setType(FunctionType::get(fn.getContext(), body.getArgumentTypes(),
                                 body.getTerminator()->getOperandTypes()));
    return success();
  }

  /// Erases the ops `convert` made from `from` to `to` once nothing reads
  /// them (collectives are not Pure: no later pass would).
  static void eraseConversion(Value from, Value to) {
    while (to != from && to.use_empty()) {
      Operation *op = to.getDefiningOp();
      to = op->getOperand(0);
      op->erase();
    }
  }

  /// A trainable parameter read only as one split (one conversion of the
  /// argument, along dimension d) whose gradient is made split along d
  /// becomes this rank's part: the argument is the part (its whole shape in
  /// graph.global_shape, as ZeRO's), the gradient is returned as a part,
  /// and the slice and the gather of the whole disappear. The optimizer
  /// phase then keeps its state as parts and updates the part (Megatron's
  /// split weights).
  void keepParametersSplit() {
    Block &body = fn.getBody().front();
    Operation *ret = body.getTerminator();
    llvm::StringMap<unsigned> gradOf;
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (auto name = fn.getResultAttrOfType<StringAttr>(
              i, train::TrainDialect::kGradOfAttr))
        gradOf[name.getValue()] = i;
    for (BlockArgument arg : body.getArguments()) {
      auto name = fn.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), train::TrainDialect::kParamAttr);
      auto grad = name ? gradOf.find(name.getValue()) : gradOf.end();
      if (grad == gradOf.end())
        continue;
      auto [source, sourceSplit] = returned[grad->second];
      if (sourceSplit < 0)
        continue;
      Value part = converted.lookup({arg, sourceSplit});
      // Read only through that conversion, whose first op is its one user.
      if (!part || !arg.hasOneUse() ||
          llvm::any_of(converted, [&](const auto &entry) {
            return entry.first.first == arg &&
                   entry.first.second != sourceSplit;
          }))
        continue;
      auto whole = cast<RankedTensorType>(arg.getType());
      Value gathered = ret->getOperand(grad->second);
      Type partType = part.getType();
      part.replaceAllUsesWith(arg);
      eraseConversion(arg, part);
      arg.setType(partType);
      ret->setOperand(grad->second, source);
      eraseConversion(source, gathered);
      for (NamedAttribute attr :
           trainc::partAttributes(whole, axis, sourceSplit)) {
        fn.setArgAttr(arg.getArgNumber(), attr.getName(), attr.getValue());
        fn.setResultAttr(grad->second, attr.getName(), attr.getValue());
      }
    }
  }

  func::FuncOp fn;
  StringRef axis;
  int64_t n;
  /// Propagation's decision for each value: kWhole or the split dimension
  /// (absent: undecided).
  DenseMap<Value, int64_t> split;
  /// Conversions made so far, so that two users share one collective.
  DenseMap<std::pair<Value, int64_t>, Value> converted;
  /// What the return received before conversion: the value and where it
  /// was split.
  SmallVector<std::pair<Value, int64_t>> returned;
  bool splitParameters;
};

} // namespace

LogicalResult trainc::shardAlongAxis(func::FuncOp fn, StringRef axis,
                                     int64_t size, bool splitParameters) {
  return AxisSharder(fn, axis, size, splitParameters).run();
}

/// Annotates the op that makes `v` to split it along `dim` over the tensor
/// axis. False when `v` has no such op (an argument).
static bool annotate(Value v, int64_t dim) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumResults() != 1)
    return false;
  auto type = cast<RankedTensorType>(v.getType());
  Builder b(v.getContext());
  SmallVector<Attribute> dims(type.getRank(), b.getStringAttr(""));
  dims[dim] = b.getStringAttr("tensor");
  def->setAttr(GraphDialect::kShardingAttr, b.getArrayAttr(dims));
  return true;
}

/// Whether `v` is made by elementwise ops (GELU, a gate's product, a bias
/// add, dropout) from at least one dot_general, the other leaves being
/// constants or broadcasts: an MLP's hidden activation.
static bool madeFromMatmuls(Value v) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  bool matmul = false;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def)
      return false;
    if (!seen.insert(def).second)
      continue;
    if (isa<DotGeneralOp>(def)) {
      matmul = true;
      continue;
    }
    if (isa<ConstantOp, BroadcastInDimOp>(def))
      continue;
    // Dropout (T5's, between the activation and the down projection) is
    // elementwise in its operand.
    if (!def->hasTrait<mlir::OpTrait::Elementwise>() && !isa<DropoutOp>(def))
      return false;
    llvm::append_range(work, def->getOperands());
  }
  return matmul;
}

int64_t trainc::seedMegatron(func::FuncOp fn, int64_t size) {
  int64_t seeds = 0;
  fn.walk([&](Operation *op) {
    // Attention: query, key and value split by heads; propagation carries
    // that back to the projections (column-parallel) and forward to the
    // output projection, whose contraction over heads is then split
    // (row-parallel).
    // Heads are dimension 1, or 2 for a tensor stored [B, S, H, D].
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      auto headsDim = [&](int64_t tensor) -> int64_t {
        return attention.isSeqMajor(tensor) ? 2 : 1;
      };
      if (attention.getKey().getType().getDimSize(headsDim(1)) % size != 0)
        return;
      Value operands[] = {attention.getQuery(), attention.getKey(),
                          attention.getValue()};
      for (int64_t i = 0; i < 3; ++i)
        seeds += annotate(operands[i], headsDim(i));
      return;
    }
    // MLP: the operand whose features a matmul contracts (the down
    // projection), made by elementwise ops from matmuls (the up and gate
    // projections, an activation, a gate's product): split by features,
    // so the up projections are column-parallel and the down projection
    // row-parallel.
    if (auto dot = dyn_cast<DotGeneralOp>(op)) {
      for (auto [input, contracting] :
           {std::make_pair(dot.getLhs(), dot.getLhsContractingDimensions()),
            std::make_pair(dot.getRhs(), dot.getRhsContractingDimensions())}) {
        auto type = cast<RankedTensorType>(input.getType());
        int64_t last = type.getRank() - 1;
        if (contracting.size() != 1 || contracting[0] != last ||
            type.getDimSize(last) % size != 0 ||
            input.getDefiningOp<DotGeneralOp>() || !madeFromMatmuls(input))
          continue;
        // A dropout's input (an op of one result), which the dropout's rule
        // then carries to the dot; not a matmul's result, as above.
        Value seeded = input;
        while (auto dropout = seeded.getDefiningOp<DropoutOp>())
          seeded = dropout.getOperand();
        if (seeded.getDefiningOp<DotGeneralOp>())
          continue;
        seeds += annotate(seeded, last);
      }
    }
  });
  return seeds;
}
