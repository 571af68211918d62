//===- GraphMath.h - libm functions composed from graph ops ----*- C++ -*-===//
//
// Functions that no graph op computes, composed from graph ops, so that
// autodiff differentiates them through the composition and every device
// runs them with the kernels it already has. Both frontends build them.
//
// Each takes float tensors of one type and returns that type; f16 and bf16
// compute in f32. Where a function selects between branches, the branch not
// taken reads a guarded operand (a denominator, a root's or an exponential's
// argument replaced by a harmless value), so that no inf or NaN from it
// reaches the gradient as 0 * inf. Where the derivative itself is
// infinite, at the ends of asin's, acos's, acosh's and atanh's domains,
// the gradient is that infinity, as JAX's (a form of the function there
// whose derivative is it); everywhere inside, and up to the largest finite
// sinh and cosh, it is finite. Accuracy against a
// long-double reference is measured by
// test/Frontends/Stablehlo/libm_compositions.test.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_DIALECT_GRAPH_GRAPHMATH_H
#define TRAINC_DIALECT_GRAPH_GRAPHMATH_H

#include "mlir/IR/Builders.h"

namespace trainc::graph {

/// log(1 + x), accurate for |x| << 1 (2 atanh(x / (2 + x)) by its series).
mlir::Value buildLog1p(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// exp(x) - 1, accurate for |x| << 1 (2t / (1 - t), t = tanh(x / 2)).
mlir::Value buildExpm1(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// log(1 + exp(x)) without overflow: x + log1p(exp(-x)) for x > 0.
mlir::Value buildSoftplus(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value x);
/// sin(x) / cos(x).
mlir::Value buildTan(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// sinh and cosh: from expm1 near 0, from exp(|x| / 2)^2 / 2 for large |x|
/// (finite up to the type's largest sinh, not only its largest exp).
mlir::Value buildSinh(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildCosh(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// The angle of (x, y) in [-pi, pi], with C's atan2 signed zeros and
/// infinities: a polynomial atan on [-tan(pi/8), tan(pi/8)] after range
/// reduction (coefficients fitted by tools/fit_atan_polynomial.py).
mlir::Value buildAtan2(mlir::OpBuilder &b, mlir::Location loc, mlir::Value y,
                       mlir::Value x);
mlir::Value buildAtan(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// atan2(x, sqrt((1 - x)(1 + x))) and atan2(sqrt((1 - x)(1 + x)), x).
mlir::Value buildAsin(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildAcos(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// The inverse hyperbolic functions through log1p (log(2x) for large x).
mlir::Value buildAsinh(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildAcosh(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildAtanh(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// x tanh(softplus(x)) as x n / (n + 2), n = e^x (e^x + 2).
mlir::Value buildMish(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// The logistic sigmoid 1 / (1 + e^-x), from e^-|x| (its gradient is 0, not
/// NaN, where e^-x would overflow).
mlir::Value buildLogistic(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value x);
/// 1, -1, or x * 0 (keeping -0 and NaN) by x's sign; its gradient is 0
/// everywhere. Any number type (integers too).
mlir::Value buildSign(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// The real cube root: |x|^(1/3) refined by one Newton step, x's sign.
mlir::Value buildCbrt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);

} // namespace trainc::graph

#endif // TRAINC_DIALECT_GRAPH_GRAPHMATH_H
