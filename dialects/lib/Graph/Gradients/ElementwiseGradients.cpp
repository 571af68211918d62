//===- ElementwiseGradients.cpp - VJP rules of elementwise ops ------------===//
//
// Unary and binary math, compare, select and convert. With `g` the result's
// cotangent, `x` (`a`, `b`) the operands and `y` the result:
//
//   neg    -g                      add  g, g
//   abs    g * sign(x) (0 at 0)    sub  g, -g
//   exp    g * y                   mul  g * b, g * a
//   log    g / x                   div  g / b, -(g / b) * y
//   tanh   g * (1 - y^2)           pow  g * b * a^(b-1)   (0 where b == 0),
//   erf    g * 2/sqrt(pi) * e^-x^2      g * y * log(a)    (0 where a == 0
//   sqrt   g / (2y)                                        and b >= 0)
//   rsqrt  -0.5 * g * y^3
//   cos    -g * sin(x)
//   sin    g * cos(x)
//
//   max/min  g to the operand that is strictly selected; see maxMinVjp for
//            ties.
//   select   pred: none; on_true: select(p, g, 0); on_false: select(p, 0, g)
//   convert  float to float: g converted back; otherwise none
//   compare  none (the result is i1)
//
// The masks of abs and pow follow PyTorch 1.13's derivatives.yaml, so that
// gradients agree with the reference at the points where the formula alone
// would give NaN or an arbitrary subgradient. Integer operands and results
// never carry cotangents.
//
//===----------------------------------------------------------------------===//

#include "GradientRules.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace trainc::graph {
namespace {

/// A splat constant of `v`'s type.
Value splatLike(OpBuilder &b, Location loc, Value v, double value) {
  return splatConstant(b, loc, typeOf(v), value);
}

Value compare(OpBuilder &b, Location loc, ComparisonDirection direction,
              Value lhs, Value rhs) {
  return b.createOrFold<CompareOp>(loc, direction, lhs, rhs);
}

/// `mask ? zero : v`, as the where(mask, 0, v) of PyTorch's formulas.
Value zeroWhere(OpBuilder &b, Location loc, Value mask, Value v) {
  return b.createOrFold<SelectOp>(loc, mask, splatLike(b, loc, v, 0.0), v);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

void negVjp(NegOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(b.createOrFold<NegOp>(op.getLoc(), g));
}

/// g * sign(x), with sign(0) = 0 as PyTorch's abs backward (sgn).
void absVjp(AbsOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getOperand();
  Value zero = splatLike(b, loc, x, 0.0);
  Value negative = b.createOrFold<SelectOp>(
      loc, compare(b, loc, ComparisonDirection::LT, x, zero),
      b.createOrFold<NegOp>(loc, g), zero);
  out.push_back(b.createOrFold<SelectOp>(
      loc, compare(b, loc, ComparisonDirection::GT, x, zero), g, negative));
}

void expVjp(ExpOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(b.createOrFold<MulOp>(op.getLoc(), g, op.getResult()));
}

void logVjp(LogOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(b.createOrFold<DivOp>(op.getLoc(), g, op.getOperand()));
}

void tanhVjp(TanhOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  Value ySquared = b.createOrFold<MulOp>(loc, y, y);
  Value slope = b.createOrFold<SubOp>(loc, splatLike(b, loc, y, 1.0), ySquared);
  out.push_back(b.createOrFold<MulOp>(loc, g, slope));
}

void cosVjp(CosOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value sin = b.createOrFold<SinOp>(loc, op.getOperand());
  out.push_back(b.createOrFold<NegOp>(loc, b.createOrFold<MulOp>(loc, g, sin)));
}

void sinVjp(SinOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value cos = b.createOrFold<CosOp>(loc, op.getOperand());
  out.push_back(b.createOrFold<MulOp>(loc, g, cos));
}

/// floor and round are piecewise constant: 0 (where they jump too, as
/// PyTorch's and JAX's).
template <typename OpT>
void zeroVjp(OpT op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  out.push_back(splatLike(b, op.getLoc(), g, 0.0));
}

/// A bitcast's derivative is 0 (JAX's too): the bits of a float read as
/// another type move by no smooth rule. Only a float operand asks for one
/// (autodiff skips integer operands), of its own type.
void bitcastVjp(BitcastOp op, OpBuilder &b, Value,
                SmallVectorImpl<Value> &out) {
  out.push_back(splatLike(b, op.getLoc(), op.getOperand(), 0.0));
}

void erfVjp(ErfOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value x = op.getOperand();
  Value negSquare =
      b.createOrFold<NegOp>(loc, b.createOrFold<MulOp>(loc, x, x));
  Value slope = b.createOrFold<MulOp>(
      loc, b.createOrFold<ExpOp>(loc, negSquare),
      splatLike(b, loc, x, 2.0 * llvm::numbers::inv_sqrtpi));
  out.push_back(b.createOrFold<MulOp>(loc, g, slope));
}

void sqrtVjp(SqrtOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  out.push_back(
      b.createOrFold<DivOp>(loc, g, b.createOrFold<AddOp>(loc, y, y)));
}

/// d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 y^3.
void rsqrtVjp(RsqrtOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  Value yCubed =
      b.createOrFold<MulOp>(loc, b.createOrFold<MulOp>(loc, y, y), y);
  Value slope = b.createOrFold<MulOp>(loc, yCubed, splatLike(b, loc, y, -0.5));
  out.push_back(b.createOrFold<MulOp>(loc, g, slope));
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

void addVjp(AddOp, OpBuilder &, Value g, SmallVectorImpl<Value> &out) {
  out.append({g, g});
}

void subVjp(SubOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  out.append({g, b.createOrFold<NegOp>(op.getLoc(), g)});
}

/// When lhs and rhs are the same value each gets its term; the autodiff
/// pass adds them (g * x + g * x).
void mulVjp(MulOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  out.append({b.createOrFold<MulOp>(loc, g, op.getRhs()),
              b.createOrFold<MulOp>(loc, g, op.getLhs())});
}

/// d(a/b)/db = -a/b^2 = -(1/b) * y, reusing g / b from the lhs term.
void divVjp(DivOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value gOverB = b.createOrFold<DivOp>(loc, g, op.getRhs());
  out.append(
      {gOverB, b.createOrFold<NegOp>(
                   loc, b.createOrFold<MulOp>(loc, gOverB, op.getResult()))});
}

/// Base: g * b * a^(b-1), zero where b == 0 (PyTorch's pow_backward_self,
/// which avoids 0 * a^-1 = NaN at a == 0). Exponent: g * y * log(a), zero
/// where a == 0 and b >= 0 (pow_backward_exponent); built only when the
/// exponent is not a constant, which is the common case (x^2, x^0.5) and
/// would otherwise cost a log and a select per element for nothing.
/// x - n y with n = trunc(x / y), n piecewise constant (JAX's rem rule): x
/// gets g, y gets -g n, n as floor(|x / y|) with x / y's sign.
void remainderVjp(RemainderOp op, OpBuilder &b, Value g,
                  SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value quotient = b.createOrFold<DivOp>(loc, op.getLhs(), op.getRhs());
  Value zero = splatLike(b, loc, quotient, 0.0);
  Value magnitude =
      b.createOrFold<FloorOp>(loc, b.createOrFold<AbsOp>(loc, quotient));
  Value n = b.createOrFold<SelectOp>(
      loc, compare(b, loc, ComparisonDirection::LT, quotient, zero),
      b.createOrFold<NegOp>(loc, magnitude), magnitude);
  out.append({g, b.createOrFold<NegOp>(loc, b.createOrFold<MulOp>(loc, g, n))});
}

void powVjp(PowOp op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value base = op.getLhs(), exponent = op.getRhs();
  Value zero = splatLike(b, loc, base, 0.0);
  Value exponentMinusOne =
      b.createOrFold<SubOp>(loc, exponent, splatLike(b, loc, base, 1.0));
  Value slope = b.createOrFold<MulOp>(
      loc, exponent, b.create<PowOp>(loc, base, exponentMinusOne));
  out.push_back(zeroWhere(
      b, loc, compare(b, loc, ComparisonDirection::EQ, exponent, zero),
      b.createOrFold<MulOp>(loc, g, slope)));

  if (matchPattern(exponent, m_Constant())) {
    out.push_back(Value());
    return;
  }
  Value logBase = b.createOrFold<LogOp>(loc, base);
  Value dExponent = b.createOrFold<MulOp>(
      loc, g, b.createOrFold<MulOp>(loc, op.getResult(), logBase));
  // where((a == 0) & (b >= 0), 0, d) as two float selects (no i1 logic).
  Value baseIsZero = compare(b, loc, ComparisonDirection::EQ, base, zero);
  Value exponentNonNegative =
      compare(b, loc, ComparisonDirection::GE, exponent, zero);
  out.push_back(b.createOrFold<SelectOp>(
      loc, baseIsZero, zeroWhere(b, loc, exponentNonNegative, dExponent),
      dExponent));
}

/// max and min. The operand strictly selected gets g. At ties:
///  - between two computed values, each gets g/2, as torch.maximum and
///    torch.minimum do;
///  - against a constant (ReLU imported from ONNX is max(x, 0)), the
///    constant keeps the tie and x gets 0: PyTorch's relu, relu6 and
///    hardtanh backward all give 0 at the threshold, so this reproduces
///    PyTorch's ReLU'(0) = 0 instead of 1/2.
/// A NaN operand compares false both ways, so neither operand gets a
/// gradient there.
template <typename OpT, bool isMax>
void maxMinVjp(OpT op, OpBuilder &b, Value g, SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs();
  ComparisonDirection wins =
      isMax ? ComparisonDirection::GT : ComparisonDirection::LT;
  ComparisonDirection loses =
      isMax ? ComparisonDirection::LT : ComparisonDirection::GT;
  Value zero = splatLike(b, loc, g, 0.0);
  bool lhsConstant = matchPattern(lhs, m_Constant());
  bool rhsConstant = matchPattern(rhs, m_Constant());
  if (lhsConstant || rhsConstant) {
    out.push_back(lhsConstant
                      ? Value()
                      : b.createOrFold<SelectOp>(
                            loc, compare(b, loc, wins, lhs, rhs), g, zero));
    out.push_back(rhsConstant
                      ? Value()
                      : b.createOrFold<SelectOp>(
                            loc, compare(b, loc, loses, lhs, rhs), g, zero));
    return;
  }
  Value tie = b.createOrFold<SelectOp>(
      loc, compare(b, loc, ComparisonDirection::EQ, lhs, rhs),
      b.createOrFold<MulOp>(loc, g, splatLike(b, loc, g, 0.5)), zero);
  out.push_back(
      b.createOrFold<SelectOp>(loc, compare(b, loc, wins, lhs, rhs), g, tie));
  out.push_back(
      b.createOrFold<SelectOp>(loc, compare(b, loc, loses, lhs, rhs), g, tie));
}

//===----------------------------------------------------------------------===//
// Compare, select, convert
//===----------------------------------------------------------------------===//

void compareVjp(CompareOp, OpBuilder &, Value, SmallVectorImpl<Value> &out) {
  out.append({Value(), Value()});
}

void selectVjp(SelectOp op, OpBuilder &b, Value g,
               SmallVectorImpl<Value> &out) {
  Location loc = op.getLoc();
  Value zero = splatLike(b, loc, g, 0.0);
  out.append({Value(), b.createOrFold<SelectOp>(loc, op.getPred(), g, zero),
              b.createOrFold<SelectOp>(loc, op.getPred(), zero, g)});
}

/// Float to float: the cotangent is converted back to the operand's
/// precision. From an integer or i1 there is nothing to differentiate.
void convertVjp(ConvertOp op, OpBuilder &b, Value g,
                SmallVectorImpl<Value> &out) {
  Value x = op.getOperand();
  out.push_back(isFloatTensorType(x.getType())
                    ? b.createOrFold<ConvertOp>(op.getLoc(), x.getType(), g)
                    : Value());
}

} // namespace

void attachElementwiseGradients(MLIRContext &context) {
  NegOp::attachInterface<Gradient<NegOp, negVjp>>(context);
  AbsOp::attachInterface<Gradient<AbsOp, absVjp>>(context);
  ExpOp::attachInterface<Gradient<ExpOp, expVjp>>(context);
  LogOp::attachInterface<Gradient<LogOp, logVjp>>(context);
  TanhOp::attachInterface<Gradient<TanhOp, tanhVjp>>(context);
  ErfOp::attachInterface<Gradient<ErfOp, erfVjp>>(context);
  SqrtOp::attachInterface<Gradient<SqrtOp, sqrtVjp>>(context);
  RsqrtOp::attachInterface<Gradient<RsqrtOp, rsqrtVjp>>(context);
  CosOp::attachInterface<Gradient<CosOp, cosVjp>>(context);
  SinOp::attachInterface<Gradient<SinOp, sinVjp>>(context);
  FloorOp::attachInterface<Gradient<FloorOp, zeroVjp<FloorOp>>>(context);
  RoundOp::attachInterface<Gradient<RoundOp, zeroVjp<RoundOp>>>(context);
  BitcastOp::attachInterface<Gradient<BitcastOp, bitcastVjp>>(context);
  AddOp::attachInterface<Gradient<AddOp, addVjp>>(context);
  SubOp::attachInterface<Gradient<SubOp, subVjp>>(context);
  MulOp::attachInterface<Gradient<MulOp, mulVjp>>(context);
  DivOp::attachInterface<Gradient<DivOp, divVjp>>(context);
  PowOp::attachInterface<Gradient<PowOp, powVjp>>(context);
  RemainderOp::attachInterface<Gradient<RemainderOp, remainderVjp>>(context);
  MaxOp::attachInterface<Gradient<MaxOp, maxMinVjp<MaxOp, true>>>(context);
  MinOp::attachInterface<Gradient<MinOp, maxMinVjp<MinOp, false>>>(context);
  CompareOp::attachInterface<Gradient<CompareOp, compareVjp>>(context);
  SelectOp::attachInterface<Gradient<SelectOp, selectVjp>>(context);
  ConvertOp::attachInterface<Gradient<ConvertOp, convertVjp>>(context);
}

} // namespace trainc::graph
