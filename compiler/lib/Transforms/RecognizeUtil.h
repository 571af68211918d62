//===- RecognizeUtil.h - What the recognition patterns share -----*- C++
//-*-===//
//
// Internal to the recognize phase: the matching helpers that
// RecognizeComposites.cpp (norms, gelu, softmax, cross-entropy),
// RecognizeAttention.cpp (with CausalMask.cpp) and RecognizeErfc.cpp use,
// and the entry points of the latter two's patterns.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_LIB_TRANSFORMS_RECOGNIZEUTIL_H
#define TRAINC_COMPILER_LIB_TRANSFORMS_RECOGNIZEUTIL_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace trainc::recognize {

/// The splat value of a constant, looking through broadcasts and reshapes.
std::optional<double> splatOf(mlir::Value v);

/// `v` equals `expected` to within float32 rounding of the constant.
bool isSplatNear(mlir::Value v, double expected);

/// A mask fill value: -inf or a number so negative that softmax gives 0.
bool isMaskFill(mlir::Value v);

/// Causal masks (CausalMask.cpp), for scores whose last dims are [Sq, Sk]:
/// whether `cond`, made from constants and iotas, masks exactly the keys
/// after each query (j > i + Sk - Sq), `maskedWhen` being its value there;
/// whether a fill `f`, scaled by the scores' outer scale, still masks
/// (-1e4 or less); and whether additive term `t` is a causal mask that
/// graph.attention's `causal` can replace (Sk >= Sq).
bool isCausalCondition(mlir::Value cond, int64_t sq, int64_t sk,
                       bool maskedWhen);
bool masksAfterScale(double f, double outerScale);
bool isCausalTerm(mlir::Value t, int64_t sq, int64_t sk, double outerScale);

inline bool hasOneUse(mlir::Value v) { return v.hasOneUse(); }

/// Whether `v` is a transpose that moves only dims of size 1 (the others
/// keep their order): as a reshape would, it changes no element's place.
bool movesOnlyUnitDims(mlir::Value v);

/// Operands of a commutative binary op as (the one satisfying `pred`, the
/// other), or nullopt.
template <typename Pred>
std::optional<std::pair<mlir::Value, mlir::Value>>
pick(mlir::Value a, mlir::Value b, Pred pred) {
  if (pred(a))
    return std::make_pair(a, b);
  if (pred(b))
    return std::make_pair(b, a);
  return std::nullopt;
}

/// Adds the pattern that recognizes graph.attention (RecognizeAttention.cpp).
void populateAttentionPatterns(mlir::RewritePatternSet &patterns);
/// Adds the pattern that turns XLA's spelled-out f32 erfc into 1 - graph.erf
/// (RecognizeErfc.cpp).
void populateErfcPatterns(mlir::RewritePatternSet &patterns);

} // namespace trainc::recognize

#endif // TRAINC_COMPILER_LIB_TRANSFORMS_RECOGNIZEUTIL_H
