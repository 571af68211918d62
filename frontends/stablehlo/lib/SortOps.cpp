//===- SortOps.cpp - stablehlo.sort and chlo.top_k as graph.argsort -------===//
//
// trainc sorts by permutation: graph.argsort gives, along the sorted
// dimension, the indices of a stable sort of one key operand, and every
// operand is then gathered at those indices (so sorted values have
// gather's gradient, a scatter_add). A sort by several keys (lax.sort with
// num_keys > 1) sorts stably by the last key first, then by each earlier
// key in the order already found, which is the lexicographic order.
//
// A sort's comparator is recognized, not evaluated: it must be
//   less(a, b) = key0(a) < key0(b)                       (or >: descending)
//              | key0(a) == key0(b) & less_rest(a, b)    (more keys)
// where each key is one operand's element, for floats optionally as JAX
// canonicalizes it (-0 as +0, NaN as one NaN) before a TOTALORDER compare.
// graph.argsort orders floats as that canonical total order does (-0 ==
// +0, NaN after every number), or, for a TOTALORDER compare of the
// elements as they are, in IEEE total order (total_order); integers by
// their signedness. A FLOAT compare (NaN unordered) sorts as the
// canonical order.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"
#include "trainc/Dialect/Graph/GraphBuilders.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace trainc::graph;

namespace trainc::stablehlo_import {
namespace {

/// One key of a sort's comparator: operand `operand`, largest first when
/// `descending`, read as it is or in JAX's canonical form (`canonical`)
/// by a compare of `compareType`.
struct SortKey {
  unsigned operand;
  bool descending;
  bool canonical;
  bool isFloat;
  StringRef compareType;
  /// Floats in IEEE total order: a TOTALORDER compare of the elements as
  /// they are.
  bool totalOrder() const {
    return isFloat && compareType == "TOTALORDER" && !canonical;
  }
};

StringRef opName(Value v) {
  Operation *op = v.getDefiningOp();
  return op ? op->getName().getStringRef() : StringRef();
}

StringRef stringAttr(Operation *op, StringRef name) {
  auto attr = dyn_cast_or_null<StringAttr>(op->getAttr(name));
  return attr ? attr.getValue() : StringRef();
}

/// Whether `v` is a stablehlo.constant whose every element satisfies
/// `pred` (a float splat).
template <typename Pred> bool isFloatConstant(Value v, Pred pred) {
  if (opName(v) != "stablehlo.constant")
    return false;
  auto value =
      dyn_cast_or_null<DenseElementsAttr>(v.getDefiningOp()->getAttr("value"));
  return value && value.isSplat() && isa<FloatType>(value.getElementType()) &&
         pred(value.getSplatValue<APFloat>());
}

/// `v` as a key of block argument `arg`: the argument itself, or JAX's
/// canonical form of it, select(x != x, NaN, select(x == 0, 0, x)).
struct KeyOf {
  BlockArgument arg;
  bool canonical;
};
std::optional<KeyOf> keyOf(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return KeyOf{arg, false};
  auto selectOf = [](Value s) -> Operation * {
    Operation *op = s.getDefiningOp();
    return op && op->getName().getStringRef() == "stablehlo.select" &&
                   op->getNumOperands() == 3
               ? op
               : nullptr;
  };
  // x != x and x == 0 as FLOAT compares (in TOTALORDER they would miss
  // NaN and -0).
  auto compareOf = [](Value c, StringRef direction) -> Operation * {
    Operation *op = c.getDefiningOp();
    StringRef type = op ? stringAttr(op, "compare_type") : "";
    return op && op->getName().getStringRef() == "stablehlo.compare" &&
                   stringAttr(op, "comparison_direction") == direction &&
                   (type.empty() || type == "FLOAT")
               ? op
               : nullptr;
  };
  // One positive NaN for every NaN: the last in total order, as
  // graph.argsort puts NaN.
  Operation *nanSelect = selectOf(v);
  if (!nanSelect ||
      !isFloatConstant(nanSelect->getOperand(1), [](const APFloat &f) {
        return f.isNaN() && !f.isNegative();
      }))
    return std::nullopt;
  Operation *zeroSelect = selectOf(nanSelect->getOperand(2));
  Operation *isNan = compareOf(nanSelect->getOperand(0), "NE");
  if (!zeroSelect || !isNan)
    return std::nullopt;
  auto arg = dyn_cast<BlockArgument>(zeroSelect->getOperand(2));
  Operation *isZero = compareOf(zeroSelect->getOperand(0), "EQ");
  auto zero = [](const APFloat &f) { return f.isZero(); };
  if (!arg || !isZero || isNan->getOperand(0) != arg ||
      isNan->getOperand(1) != arg || isZero->getOperand(0) != arg ||
      !isFloatConstant(isZero->getOperand(1), zero) ||
      !isFloatConstant(zeroSelect->getOperand(1), zero))
    return std::nullopt;
  return KeyOf{arg, true};
}

/// The comparator's keys, primary first, or an error naming what is not
/// understood.
class ComparatorReader {
public:
  ComparatorReader(OpContext &ctx) : ctx(ctx) {}

  LogicalResult read(Value less, SmallVectorImpl<SortKey> &keys) {
    Operation *op = less.getDefiningOp();
    if (!op)
      return refuse();
    StringRef name = op->getName().getStringRef();
    if (name == "stablehlo.compare") {
      FailureOr<SortKey> key = readCompare(op, /*equal=*/false);
      if (failed(key))
        return failure();
      keys.push_back(*key);
      return success();
    }
    // first | (first's keys equal & rest), the operands in either order.
    if (name != "stablehlo.or" || op->getNumOperands() != 2)
      return refuse();
    for (int first = 0; first < 2; ++first) {
      Operation *compare = op->getOperand(first).getDefiningOp();
      Operation *both = op->getOperand(1 - first).getDefiningOp();
      if (!compare || !both ||
          compare->getName().getStringRef() != "stablehlo.compare" ||
          both->getName().getStringRef() != "stablehlo.and" ||
          both->getNumOperands() != 2)
        continue;
      for (int eq = 0; eq < 2; ++eq) {
        Operation *equal = both->getOperand(eq).getDefiningOp();
        if (!equal || equal->getName().getStringRef() != "stablehlo.compare" ||
            stringAttr(equal, "comparison_direction") != "EQ")
          continue;
        FailureOr<SortKey> key = readCompare(compare, /*equal=*/false);
        FailureOr<SortKey> same = readCompare(equal, /*equal=*/true);
        if (failed(key) || failed(same))
          return failure();
        if (same->operand != key->operand)
          return refuse();
        // Float ties go on to the next key where argsort's order sees
        // equal keys: an EQ in TOTALORDER of the key in the form the
        // ordering compare read (FLOAT's NaN != NaN, or -0 != +0 against
        // a canonical order, would stop where argsort goes on).
        if (key->isFloat &&
            (same->compareType != "TOTALORDER" ||
             same->canonical != key->canonical ||
             (!key->canonical && key->compareType != "TOTALORDER"))) {
          ctx.error() << "breaks ties of float operand " << key->operand
                      << " with an EQ that does not match its ordering "
                         "(trainc needs EQ in TOTALORDER, of the key as "
                         "the LT/GT compares it, and that compare in "
                         "TOTALORDER unless the key is canonicalized)";
          return failure();
        }
        keys.push_back(*key);
        return read(both->getOperand(1 - eq), keys);
      }
    }
    return refuse();
  }

private:
  /// A compare LT or GT (EQ when `equal`) of one operand's two elements.
  FailureOr<SortKey> readCompare(Operation *op, bool equal) {
    StringRef direction = stringAttr(op, "comparison_direction");
    if (equal ? direction != "EQ" : direction != "LT" && direction != "GT")
      return refuse();
    std::optional<KeyOf> lhs = keyOf(op->getOperand(0));
    std::optional<KeyOf> rhs = keyOf(op->getOperand(1));
    if (!lhs || !rhs || lhs->canonical != rhs->canonical ||
        lhs->arg.getArgNumber() / 2 != rhs->arg.getArgNumber() / 2 ||
        lhs->arg.getArgNumber() == rhs->arg.getArgNumber())
      return refuse();
    unsigned operand = lhs->arg.getArgNumber() / 2;
    // less(a, b) = a < b ascends; b < a (the arguments swapped) descends.
    bool swapped = lhs->arg.getArgNumber() % 2 == 1;
    Type element = lhs->arg.getType();
    if (auto t = dyn_cast<RankedTensorType>(element))
      element = t.getElementType();
    StringRef compareType = stringAttr(op, "compare_type");
    bool isFloat = isa<FloatType>(element);
    // Signedness does not change equality.
    if (!equal && ((compareType == "UNSIGNED" && element.isSignlessInteger() &&
                    !element.isInteger(1)) ||
                   (compareType == "SIGNED" &&
                    (element.isUnsignedInteger() || element.isInteger(1))))) {
      ctx.error() << "sorts " << element << " with compare_type " << compareType
                  << "; trainc orders integers by their type's signedness "
                     "(i1 unsigned)";
      return failure();
    }
    return SortKey{operand, (direction == "GT") != swapped, lhs->canonical,
                   isFloat, compareType};
  }

  LogicalResult refuse() {
    return ctx.error()
           << "has a comparator trainc does not lower: it must compare one "
              "operand's two elements (LT ascending, GT descending; floats "
              "as they are or as JAX canonicalizes them), with EQ of that "
              "key and the next key's comparison for ties (lax.sort with "
              "num_keys)";
  }

  OpContext &ctx;
};

/// `key` in a type graph.argsort takes, with the same order: 16- to 64-bit
/// floats and i32/i64 as they are, narrower integers, unsigned ones below
/// 64 bits and i1 widened to i64.
FailureOr<Value> sortable(OpContext &ctx, Value key) {
  RankedTensorType type = tensorType(key);
  Type element = type.getElementType();
  if (isa<FloatType>(element) || element.isSignlessInteger(32) ||
      element.isSignlessInteger(64))
    return key;
  if (element.isUnsignedInteger(64))
    return ctx.error() << "sorts ui64 keys, which trainc cannot order "
                          "(graph.argsort takes signed 64-bit integers)";
  return ctx.create<ConvertOp>(type.clone(ctx.builder.getI64Type()), key);
}

/// x[..., order[..., j, ...], ...] along `axis`: each row of x permuted by
/// the same row of `order` (i64, x's shape but `axis`, whose size it may
/// shorten).
Value takeAlong(OpContext &ctx, Value x, Value order, int64_t axis) {
  return buildTakeAlongAxis(ctx.builder, ctx.loc, x, order, axis);
}

/// The permutation along `axis` that sorts lexicographically by `keys`
/// (primary first), stably.
FailureOr<Value> sortOrder(OpContext &ctx, ArrayRef<SortKey> keys,
                           int64_t axis) {
  Value order;
  for (const SortKey &key : llvm::reverse(keys)) {
    FailureOr<Value> k = sortable(ctx, ctx.operand(key.operand));
    if (failed(k))
      return failure();
    Value keyed = order ? takeAlong(ctx, *k, order, axis) : *k;
    RankedTensorType keyType = tensorType(keyed);
    Value step =
        ctx.create<ArgsortOp>(keyType.clone(ctx.builder.getI64Type()), keyed,
                              uint64_t(axis), key.descending, key.totalOrder());
    order = order ? takeAlong(ctx, order, step, axis) : step;
  }
  return order;
}

} // namespace

LogicalResult lowerSort(OpContext &ctx) {
  unsigned n = ctx.numOperands();
  RankedTensorType first = ctx.operandType(0);
  for (unsigned i = 0; i < n; ++i)
    if (ctx.operandType(i).getShape() != first.getShape() ||
        ctx.resultType(i) != ctx.operandType(i))
      return ctx.error() << "must sort operands of one shape into results "
                            "of their types";
  FailureOr<int64_t> dimension = ctx.integer("dimension");
  if (failed(dimension))
    return failure();
  int64_t axis = *dimension < 0 ? *dimension + first.getRank() : *dimension;
  if (axis < 0 || axis >= first.getRank())
    return ctx.error() << "has dimension " << *dimension
                       << " outside its operands' rank " << first.getRank();
  Region &region = ctx.op->getRegion(0);
  if (!region.hasOneBlock() || region.front().getNumArguments() != 2 * n ||
      region.front().back().getName().getStringRef() != "stablehlo.return" ||
      region.front().back().getNumOperands() != 1)
    return ctx.error() << "must have a comparator of " << 2 * n
                       << " scalars returning one i1";
  if (first.getNumElements() == 0 || first.getDimSize(axis) == 1) {
    for (unsigned i = 0; i < n; ++i)
      ctx.setResult(i, ctx.operand(i));
    return success();
  }
  SmallVector<SortKey> keys;
  ComparatorReader reader(ctx);
  if (failed(reader.read(region.front().back().getOperand(0), keys)))
    return failure();
  FailureOr<Value> order = sortOrder(ctx, keys, axis);
  if (failed(order))
    return failure();
  for (unsigned i = 0; i < n; ++i)
    ctx.setResult(i, takeAlong(ctx, ctx.operand(i), *order, axis));
  return success();
}

LogicalResult lowerTopK(OpContext &ctx) {
  RankedTensorType type = ctx.operandType(0);
  FailureOr<int64_t> k = ctx.integer("k");
  if (failed(k))
    return failure();
  int64_t rank = type.getRank();
  if (rank < 1 || *k < 0 || *k > type.getDimSize(rank - 1) ||
      ctx.op->getNumResults() != 2)
    return ctx.error() << "needs 0 <= k <= the last dimension's size and two "
                          "results (values, indices)";
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = *k;
  RankedTensorType indexType = ctx.resultType(1);
  if (ctx.resultType(0) !=
          RankedTensorType::get(shape, type.getElementType()) ||
      indexType.getShape() != ArrayRef<int64_t>(shape) ||
      !isa<IntegerType>(indexType.getElementType()))
    return ctx.error() << "must give values and integer indices of shape "
                          "[..., k]";
  FailureOr<Value> key = sortable(ctx, ctx.operand(0));
  if (failed(key))
    return failure();
  RankedTensorType keyType = tensorType(*key);
  // Descending in total order: +NaN first, -NaN last, as chlo.top_k.
  Value order = ctx.create<ArgsortOp>(keyType.clone(ctx.builder.getI64Type()),
                                      *key, uint64_t(rank - 1),
                                      /*descending=*/true,
                                      /*total_order=*/true);
  SmallVector<int64_t> from(rank, 0), to(type.getShape());
  to.back() = *k;
  Value top = ctx.slice(order, from, to);
  ctx.setResult(0, takeAlong(ctx, ctx.operand(0), top, rank - 1));
  ctx.setResult(1, indexType == tensorType(top)
                       ? top
                       : ctx.create<ConvertOp>(indexType, top));
  return success();
}

} // namespace trainc::stablehlo_import
