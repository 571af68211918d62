//===- RecognizeErfc.cpp - XLA's spelled-out erfc to 1 - graph.erf --------===//
//
// The erfc pattern of the recognize phase (RecognizeComposites in
// Passes.td). JAX's export writes lax.erfc (and with it exact
// jax.nn.gelu) as StableHLO's chlo decomposition, whose op-by-op gradient
// is NaN at 0; RecognizeComposites.cpp's Gelu then finds graph.gelu in
// 0.5 x (1 - erf(-x / sqrt 2)). Matching helpers are RecognizeUtil.h's.
//
//===----------------------------------------------------------------------===//

#include "RecognizeUtil.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::recognize {
namespace {

/// `v` is the Horner polynomial ((c0 t + c1) t + ...) + cN in `t`, with
/// `coefficients` c0..cN (to float rounding), products and sums commuted.
bool isHorner(Value v, Value t, ArrayRef<double> coefficients) {
  if (coefficients.size() == 1)
    return isSplatNear(v, coefficients[0]);
  auto add = v.getDefiningOp<AddOp>();
  auto c =
      add ? pick(add.getLhs(), add.getRhs(),
                 [&](Value w) { return isSplatNear(w, coefficients.back()); })
          : std::nullopt;
  auto mul = c ? c->second.getDefiningOp<MulOp>() : MulOp();
  auto inner =
      mul ? pick(mul.getLhs(), mul.getRhs(), [&](Value w) { return w == t; })
          : std::nullopt;
  return inner && isHorner(inner->second, t, coefficients.drop_back());
}

/// XLA's f32 erfc(z), as StableHLO's chlo.erfc decomposition writes it (and
/// with it JAX's export of lax.erfc and of jax.nn.gelu(approximate=False)):
///   select(|z| < 1, 1 - z P(z^2), L(z))
/// with P the Horner polynomial of kSmall and L(z) a function of z alone
/// (exp(-z^2) / |z| times one of two polynomials in 1/z^2, kLarge's
/// coefficients, and its reflections). Differentiated op by op, its
/// gradient is NaN at z = 0: L's 1/z^2 and 1/|z| are infinite there, and
/// the select multiplies them by zero. 1 - erf(z) is the same function
/// (chlo.erfc's own lowering) with erf's gradient -> graph.erf.
struct ErfcExpansion : public OpRewritePattern<SelectOp> {
  using OpRewritePattern::OpRewritePattern;

  static constexpr double kSmall[] = {
      7.85386146E-5, -8.0101937E-4, 0.00518832775, -0.0268538129,
      0.112835854,   -0.37612626,   1.12837911};
  static constexpr double kLarge[] = {
      0.564189494,  -0.282076746, 0.42184633,  -1.01526523,  2.92101908,
      -7.49551868,  12.9772,      -10.477664,  0.563825965,  -0.274112701,
      0.340488,     -0.494451523, 0.621000468, -0.582473278, 0.368742466,
      -0.138703942, 0.0232682};

  LogicalResult matchAndRewrite(SelectOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.getElementType().isF32())
      return failure();
    // |z| < 1 -> 1 - z P(z^2).
    auto lt = op.getPred().getDefiningOp<CompareOp>();
    Value z = lt ? absOperand(lt.getLhs()) : Value();
    if (!z || lt.getDirection() != ComparisonDirection::LT ||
        !isSplatNear(lt.getRhs(), 1.0))
      return failure();
    auto small = op.getOnTrue().getDefiningOp<SubOp>();
    auto product = small && isSplatNear(small.getLhs(), 1.0)
                       ? small.getRhs().getDefiningOp<MulOp>()
                       : MulOp();
    auto poly = product ? pick(product.getLhs(), product.getRhs(),
                               [&](Value w) { return w == z; })
                        : std::nullopt;
    auto square = poly ? findSquare(poly->second, z) : Value();
    if (!square || !isHorner(poly->second, square, kSmall) ||
        !isFunctionOfWithLarge(op.getOnFalse(), z))
      return failure();
    Location loc = op.getLoc();
    Value one = rewriter.create<ConstantOp>(
        loc, SplatElementsAttr::get(type, rewriter.getF32FloatAttr(1.0f)));
    Value erf = rewriter.create<ErfOp>(loc, z);
    rewriter.replaceOpWithNewOp<SubOp>(op, one, erf);
    return success();
  }

  /// z if `v` is |z|: graph.abs, or the StableHLO import's float abs
  /// select(z >= 0, z + 0, -z).
  static Value absOperand(Value v) {
    if (auto abs = v.getDefiningOp<AbsOp>())
      return abs.getOperand();
    auto select = v.getDefiningOp<SelectOp>();
    auto ge =
        select ? select.getPred().getDefiningOp<CompareOp>() : CompareOp();
    if (!ge || ge.getDirection() != ComparisonDirection::GE ||
        !isSplatNear(ge.getRhs(), 0.0))
      return {};
    Value z = ge.getLhs();
    auto plusZero = select.getOnTrue().getDefiningOp<AddOp>();
    auto neg = select.getOnFalse().getDefiningOp<NegOp>();
    bool positive =
        select.getOnTrue() == z || (plusZero && plusZero.getLhs() == z &&
                                    isSplatNear(plusZero.getRhs(), 0.0));
    return positive && neg && neg.getOperand() == z ? z : Value();
  }

  /// The z * z that the Horner polynomial `poly` (an add of a product and
  /// a constant) multiplies by, if any.
  static Value findSquare(Value poly, Value z) {
    auto add = poly.getDefiningOp<AddOp>();
    if (!add)
      return {};
    for (Value side : {add.getLhs(), add.getRhs()})
      if (auto mul = side.getDefiningOp<MulOp>())
        for (Value f : {mul.getLhs(), mul.getRhs()})
          if (auto square = f.getDefiningOp<MulOp>();
              square && square.getLhs() == z && square.getRhs() == z)
            return f;
    return {};
  }

  /// `v` is computed from z and constants alone (at most 120 ops), among
  /// them an exp and every coefficient of kLarge.
  static bool isFunctionOfWithLarge(Value v, Value z) {
    SmallVector<Value> stack{v};
    llvm::SmallPtrSet<Operation *, 32> seen;
    SmallVector<double> constants;
    bool hasExp = false;
    while (!stack.empty()) {
      Value w = stack.pop_back_val();
      if (w == z)
        continue;
      Operation *def = w.getDefiningOp();
      if (!def)
        return false; // another block argument: not z alone
      if (!seen.insert(def).second)
        continue;
      if (seen.size() > 120)
        return false;
      if (std::optional<double> c = splatOf(w)) {
        constants.push_back(*c);
        continue;
      }
      if (def->getNumRegions() != 0 || def->getNumResults() != 1)
        return false;
      hasExp |= isa<ExpOp>(def);
      for (Value operand : def->getOperands())
        stack.push_back(operand);
    }
    return hasExp && llvm::all_of(kLarge, [&](double k) {
             return llvm::any_of(constants, [&](double c) {
               return std::abs(c - k) <= 1e-6 * std::abs(k);
             });
           });
  }
};

} // namespace

void populateErfcPatterns(RewritePatternSet &patterns) {
  patterns.add<ErfcExpansion>(patterns.getContext());
}

} // namespace trainc::recognize
