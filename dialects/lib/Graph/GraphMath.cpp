//===- GraphMath.cpp - libm functions composed from graph ops -------------===//

#include "trainc/Dialect/Graph/GraphMath.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace trainc::graph {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kInf = std::numeric_limits<double>::infinity();

// atan(u) = u + u * z * p(z), z = u * u, for |u| <= tan(pi/8); p's
// coefficients lowest degree first, as tools/fit_atan_polynomial.py prints
// them (worst error of this step: 0.64 ulp in f32, 0.65 in f64; of its
// derivative 1.46 and 1.47 ulp).
constexpr double kAtanF32[] = {-0.3333333432674408,  0.19999977946281433,
                               -0.14284151792526245, 0.1107136532664299,
                               -0.08624675869941711, 0.05048138648271561};
constexpr double kAtanF64[] = {
    -0.3333333333333333,  0.19999999999999926,  -0.1428571428569601,
    0.11111111109234272,  -0.09090908987050621, 0.07692304205359586,
    -0.06666590673270124, 0.058812347159857226, -0.0525181843993635,
    0.04682233401043266,  -0.0396336442419705,  0.027553232635485668,
    -0.010966636308484549};

/// Graph ops on tensors of one float type, named as the math reads.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc, RankedTensorType type)
      : b(b), loc(loc), type(type) {}

  bool isF64() const { return type.getElementType().isF64(); }
  /// 1 / sqrt(epsilon) of the type: above it, 1 + x * x rounds to x * x.
  double largeAbove() const { return isF64() ? 0x1p26 : 0x1p12; }
  /// x itself where |x| is below a quarter of the type's epsilon, for an f
  /// with f(x) = x (1 + O(x)) (log1p, expm1, sinh, asinh, atanh): x
  /// rounds to f(x) there, and the compositions, which halve x or divide
  /// it, would lose the subnormals.
  Value identityNearZero(Value x, Value f) {
    double below = isF64() ? 0x1p-54 : 0x1p-26;
    return select(lt(op<AbsOp>(x), k(below)), x, f);
  }

  Value k(double v) {
    Type element = type.getElementType();
    Attribute a = isa<FloatType>(element)
                      ? Attribute(b.getFloatAttr(element, v))
                      : Attribute(b.getIntegerAttr(element, int64_t(v)));
    return b.create<ConstantOp>(loc, SplatElementsAttr::get(type, a));
  }
  template <typename OpT, typename... Args> Value op(Args... args) {
    return b.createOrFold<OpT>(loc, args...);
  }
  Value add(Value x, Value y) { return op<AddOp>(x, y); }
  Value sub(Value x, Value y) { return op<SubOp>(x, y); }
  Value mul(Value x, Value y) { return op<MulOp>(x, y); }
  Value div(Value x, Value y) { return op<DivOp>(x, y); }
  Value neg(Value x) { return op<NegOp>(x); }
  Value cmp(ComparisonDirection d, Value x, Value y) {
    return op<CompareOp>(d, x, y);
  }
  Value lt(Value x, Value y) { return cmp(ComparisonDirection::LT, x, y); }
  Value gt(Value x, Value y) { return cmp(ComparisonDirection::GT, x, y); }
  Value eq(Value x, Value y) { return cmp(ComparisonDirection::EQ, x, y); }
  Value select(Value p, Value x, Value y) { return op<SelectOp>(p, x, y); }
  Value either(Value p, Value q) {
    return select(p, p, q); // p OR q on i1
  }
  Value both(Value p, Value q) {
    return select(p, q, p); // p AND q on i1
  }
  /// |x| as select(signbit(x), -x, x): its derivative at 0 is 1, where
  /// abs's is 0, so an odd function f(x) = oddPart(x, g(|x|)) keeps g'(0).
  Value magnitude(Value x) { return select(signBit(x), neg(x), x); }
  /// r with x's sign bit: g(|x|) -> f(x) for an odd f (f(-0) = -0).
  Value oddPart(Value x, Value r) { return select(signBit(x), neg(r), r); }
  /// The sign bit: x < 0, or x is -0 (1 / -0 = -inf).
  Value signBit(Value x) {
    return either(lt(x, k(0)), both(eq(x, k(0)), lt(div(k(1), x), k(0))));
  }
  /// `positive` where x's sign bit is clear, -positive where it is set.
  Value withSignOf(Value x, double positive) {
    return select(signBit(x), k(-positive), k(positive));
  }

  OpBuilder &b;
  Location loc;
  RankedTensorType type;
};

/// Builds `body` on x (and y) in f32 where their type is f16 or bf16, and
/// converts the result back.
template <typename Body>
Value inComputeType(OpBuilder &b, Location loc, ValueRange operands,
                    Body body) {
  auto type = cast<RankedTensorType>(operands.front().getType());
  Type element = type.getElementType();
  bool widen = element.isF16() || element.isBF16();
  auto computeType =
      widen ? RankedTensorType::get(type.getShape(), b.getF32Type()) : type;
  SmallVector<Value> args;
  for (Value v : operands)
    args.push_back(widen ? b.create<ConvertOp>(loc, computeType, v).getResult()
                         : v);
  Emitter e(b, loc, computeType);
  Value result = body(e, args);
  return widen ? b.create<ConvertOp>(loc, type, result).getResult() : result;
}

/// log1p: where 1 + x is within [1/sqrt(2), sqrt(2)], 2 atanh(s) for
/// s = x / (2 + x) (|s| <= 0.172) by its series in s^2, truncated where
/// the next term is below the type's half ulp; log(1 + x) elsewhere, which
/// is at least 0.34 in magnitude there, so 1 + x's rounding costs at most
/// about two ulps. A polynomial, so its derivative is as accurate as its
/// value (Kahan's log(u) * x / (u - 1) is not: autodiff differentiates
/// the rounding it cancels).
Value log1p(Emitter &e, Value x) {
  Value near = e.both(e.gt(x, e.k(-0.29289321881345248)),
                      e.lt(x, e.k(0.41421356237309504)));
  Value xs = e.select(near, x, e.k(0));
  Value s = e.div(xs, e.add(e.k(2), xs));
  Value s2 = e.mul(s, s);
  int terms = e.isF64() ? 11 : 6; // 0.0295^n / (2n + 1) < 2^-54 or 2^-25
  Value p = e.k(1.0 / (2 * terms - 1));
  for (int k = terms - 2; k >= 0; --k)
    p = e.add(e.mul(p, s2), e.k(1.0 / (2 * k + 1)));
  Value series = e.mul(e.add(s, s), p);
  return e.identityNearZero(
      x, e.select(near, series, e.op<LogOp>(e.add(e.k(1), x))));
}

/// expm1: 2t / (1 - t) with t = tanh(x / 2) for |x| <= 1/2 (tanh keeps
/// its relative precision near 0, and 1 - t >= 0.75); exp(x) - 1 beyond,
/// which loses at most a bit and a half there.
Value expm1(Emitter &e, Value x) {
  Value near = e.both(e.lt(x, e.k(0.5)), e.gt(x, e.k(-0.5)));
  Value xs = e.select(near, x, e.k(0));
  Value t = e.op<TanhOp>(e.mul(xs, e.k(0.5)));
  Value series = e.div(e.add(t, t), e.sub(e.k(1), t));
  return e.identityNearZero(
      x, e.select(near, series, e.sub(e.op<ExpOp>(x), e.k(1))));
}

/// atan(r) for |r| <= 1: reduced to |u| <= tan(pi/8) by
/// atan(r) = +-pi/4 + atan((|r| - 1) / (|r| + 1)), signs kept.
Value atanOfUnit(Emitter &e, Value r) {
  constexpr double kTanPiOver8 = 0.41421356237309504880;
  Value high = e.gt(r, e.k(kTanPiOver8));
  Value low = e.lt(r, e.k(-kTanPiOver8));
  Value rh = e.select(high, r, e.k(1));
  Value rl = e.select(low, r, e.k(-1));
  Value u =
      e.select(high, e.div(e.sub(rh, e.k(1)), e.add(rh, e.k(1))),
               e.select(low, e.div(e.add(rl, e.k(1)), e.sub(e.k(1), rl)), r));
  Value z = e.mul(u, u);
  ArrayRef<double> c = e.isF64() ? ArrayRef(kAtanF64) : ArrayRef(kAtanF32);
  Value p = e.k(c.back());
  for (double ci : llvm::reverse(c.drop_back()))
    p = e.add(e.mul(p, z), e.k(ci));
  // u + u z p, and u itself at +-0 (where u z p = +0 would lose -0's sign).
  Value a = e.select(e.eq(u, e.k(0)), u, e.add(u, e.mul(e.mul(u, z), p)));
  Value offset = e.select(high, e.k(kPi / 4), e.k(-kPi / 4));
  return e.select(e.either(high, low), e.add(offset, a), a);
}

/// atan2 with the ratio of the smaller magnitude to the larger, signed,
/// so that both partial derivatives come through (at y = 0 and x = 0 too).
Value atan2(Emitter &e, Value y, Value x) {
  Value ay = e.op<AbsOp>(y), ax = e.op<AbsOp>(x);
  Value swap = e.gt(ay, ax);
  Value bothInf = e.both(e.eq(ax, e.k(kInf)), e.eq(ay, e.k(kInf)));
  // Guarded: the larger magnitude is 0 only where both are, and both
  // infinite takes a constant below.
  Value num = e.select(bothInf, e.k(0), e.select(swap, x, y));
  Value den = e.select(swap, y, x);
  den = e.select(e.either(bothInf, e.eq(den, e.k(0))), e.k(1), den);
  Value t = atanOfUnit(e, e.div(num, den));
  double pi = kPi;
  Value angle =
      e.select(swap, e.sub(e.withSignOf(y, pi / 2), t),
               e.select(e.signBit(x), e.add(e.withSignOf(y, pi), t), t));
  Value corner = e.select(e.signBit(x), e.withSignOf(y, 3 * pi / 4),
                          e.withSignOf(y, pi / 4));
  return e.select(bothInf, corner, angle);
}

/// sqrt((1 - x)(1 + x)), without the rounding of 1 - x * x near |x| = 1.
Value cosOfAsin(Emitter &e, Value x) {
  return e.op<SqrtOp>(e.mul(e.sub(e.k(1), x), e.add(e.k(1), x)));
}

/// f(x) where f' is infinite at the ends of f's domain (x == ±1 for asin,
/// acos and atanh, x == 1 for acosh): there, `end` gives f from a form
/// whose derivative is that infinity (a square root or a logarithm of the
/// distance to the end), since the regular composition's product rule
/// gives 0 * inf = NaN. Each branch reads x only where it is taken, and
/// `inside` (a point of the domain where both are smooth) elsewhere.
template <typename Regular, typename End>
Value withInfiniteEnds(Emitter &e, Value x, Value atEnd, double inside,
                       Regular regular, End end) {
  Value xr = e.select(atEnd, e.k(inside), x);
  Value xe = e.select(atEnd, x, e.k(inside));
  return e.select(atEnd, end(xe), regular(xr));
}

/// |x| == 1.
Value atUnitEnds(Emitter &e, Value x) { return e.eq(e.op<AbsOp>(x), e.k(1)); }

} // namespace

Value buildLog1p(OpBuilder &b, Location loc, Value x) {
  return inComputeType(
      b, loc, x, [](Emitter &e, ArrayRef<Value> a) { return log1p(e, a[0]); });
}

Value buildExpm1(OpBuilder &b, Location loc, Value x) {
  return inComputeType(
      b, loc, x, [](Emitter &e, ArrayRef<Value> a) { return expm1(e, a[0]); });
}

Value buildSoftplus(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    Value positive = e.gt(x, e.k(0));
    Value xp = e.select(positive, x, e.k(0));
    Value xn = e.select(positive, e.k(0), x);
    Value above = e.add(xp, log1p(e, e.op<ExpOp>(e.neg(xp))));
    Value below = log1p(e, e.op<ExpOp>(xn));
    return e.select(positive, above, below);
  });
}

namespace {
constexpr double kHyperbolicLarge = 20; // e^-20 / e^20 < 2^-57

/// e^|x| / 2 as (e^t1 / 2) e^t2, t1 = |x| * 0.5 and t2 = |x| / 2 (both
/// exact): finite up to the type's largest sinh, not only its largest exp.
/// Two exps of two different ops (which CSE cannot merge), so that
/// autodiff's intermediates are g y / 2 at most, where the square h * h of
/// one exp would form g h^2 = 2 g y and overflow in the last half of the
/// range.
Value halfExpOfLarge(Emitter &e, Value ax) {
  Value t1 = e.mul(ax, e.k(0.5));
  Value t2 = e.div(ax, e.k(2));
  return e.mul(e.mul(e.op<ExpOp>(t1), e.k(0.5)), e.op<ExpOp>(t2));
}

/// sinh for |x| <= kHyperbolicLarge: (E + E / (E + 1)) / 2 with
/// E = expm1(|x|) >= 0 (no cancellation), x's sign.
Value sinhNear(Emitter &e, Value x) {
  Value m = expm1(e, e.magnitude(x));
  return e.oddPart(x, e.mul(e.add(m, e.div(m, e.add(m, e.k(1)))), e.k(0.5)));
}
} // namespace

Value buildSinh(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    Value ax = e.op<AbsOp>(x);
    Value large = e.gt(ax, e.k(kHyperbolicLarge));
    Value near = sinhNear(e, e.select(large, e.k(0), x));
    Value far = halfExpOfLarge(e, e.select(large, ax, e.k(0)));
    return e.identityNearZero(
        x, e.select(large, e.select(e.lt(x, e.k(0)), e.neg(far), far), near));
  });
}

/// 1 + 2 sinh(x / 2)^2 near 0, whose derivative 2 sinh(x/2) cosh(x/2) =
/// sinh(x) keeps its relative precision there ((e^x + e^-x) / 2 would
/// differentiate to a difference of two numbers near 1).
Value buildCosh(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    Value ax = e.op<AbsOp>(x);
    Value large = e.gt(ax, e.k(kHyperbolicLarge));
    Value s = sinhNear(e, e.mul(e.select(large, e.k(0), x), e.k(0.5)));
    Value near = e.add(e.k(1), e.mul(e.add(s, s), s));
    return e.select(large, halfExpOfLarge(e, e.select(large, ax, e.k(0))),
                    near);
  });
}

Value buildTan(OpBuilder &b, Location loc, Value x) {
  return b.createOrFold<DivOp>(loc, b.createOrFold<SinOp>(loc, x),
                               b.createOrFold<CosOp>(loc, x));
}

Value buildAtan2(OpBuilder &b, Location loc, Value y, Value x) {
  return inComputeType(b, loc, {y, x}, [](Emitter &e, ArrayRef<Value> a) {
    return atan2(e, a[0], a[1]);
  });
}

Value buildAtan(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    return atan2(e, a[0], e.k(1));
  });
}

/// At x = ±1: ±(pi/2 - sqrt(2 - 2|x|)), whose derivative is +inf there.
Value buildAsin(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    return withInfiniteEnds(
        e, a[0], atUnitEnds(e, a[0]), 0.0,
        [&](Value x) { return atan2(e, x, cosOfAsin(e, x)); },
        [&](Value x) {
          Value gap =
              e.op<SqrtOp>(e.sub(e.k(2), e.mul(e.op<AbsOp>(x), e.k(2))));
          return e.oddPart(x, e.sub(e.k(kPi / 2), gap));
        });
  });
}

/// At x = 1: sqrt(2 - 2x); at x = -1: pi - sqrt(2 + 2x); both derivatives
/// are -inf there.
Value buildAcos(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    return withInfiniteEnds(
        e, a[0], atUnitEnds(e, a[0]), 0.0,
        [&](Value x) { return atan2(e, cosOfAsin(e, x), x); },
        [&](Value x) {
          Value high = e.op<SqrtOp>(e.sub(e.k(2), e.add(x, x)));
          Value low = e.sub(e.k(kPi), e.op<SqrtOp>(e.add(e.k(2), e.add(x, x))));
          return e.select(e.gt(x, e.k(0)), high, low);
        });
  });
}

Value buildAsinh(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    Value m = e.magnitude(x);
    Value large = e.gt(m, e.k(e.largeAbove()));
    // asinh(m) = log1p(m + m^2 / (1 + sqrt(1 + m^2))); log(2m) when m^2
    // would swamp 1 (or overflow).
    Value ms = e.select(large, e.k(0), m);
    Value m2 = e.mul(ms, ms);
    Value near = log1p(
        e,
        e.add(ms, e.div(m2, e.add(e.k(1), e.op<SqrtOp>(e.add(e.k(1), m2))))));
    Value far = e.add(e.op<LogOp>(e.select(large, m, e.k(1))), e.k(kLn2));
    return e.identityNearZero(x, e.oddPart(x, e.select(large, far, near)));
  });
}

/// At x = 1: sqrt(2x - 2), whose derivative is +inf there.
Value buildAcosh(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    auto regular = [&](Value x) {
      Value large = e.gt(x, e.k(e.largeAbove()));
      // acosh(x) = log1p((x - 1) + sqrt((x - 1)(x + 1))); NaN below 1.
      Value xs = e.select(large, e.k(1), x);
      Value t = e.sub(xs, e.k(1));
      Value near =
          log1p(e, e.add(t, e.op<SqrtOp>(e.mul(t, e.add(xs, e.k(1))))));
      Value far = e.add(e.op<LogOp>(e.select(large, x, e.k(1))), e.k(kLn2));
      return e.select(large, far, near);
    };
    return withInfiniteEnds(
        e, a[0], e.eq(a[0], e.k(1)), 2.0, regular,
        [&](Value x) { return e.op<SqrtOp>(e.sub(e.add(x, x), e.k(2))); });
  });
}

/// At x = ±1: ∓log(1 - |x|) / 2 = ±inf, whose derivative is +inf there.
Value buildAtanh(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    auto regular = [&](Value x) {
      Value m = e.magnitude(x);
      // atanh(m) = log1p(2m / (1 - m)) / 2; NaN beyond 1.
      return e.identityNearZero(
          x, e.oddPart(x, e.mul(log1p(e, e.div(e.add(m, m), e.sub(e.k(1), m))),
                                e.k(0.5))));
    };
    return withInfiniteEnds(
        e, a[0], atUnitEnds(e, a[0]), 0.0, regular, [&](Value x) {
          Value l = e.op<LogOp>(e.sub(e.k(1), e.magnitude(x)));
          return e.oddPart(x, e.mul(l, e.k(-0.5)));
        });
  });
}

Value buildCbrt(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    Value m = e.magnitude(x);
    Value y = e.op<PowOp>(m, e.k(1.0 / 3));
    // One Newton step on y^3 = m, y' = (2y + m / y^2) / 3; 0 and inf stay.
    Value fixed = e.either(e.eq(m, e.k(0)), e.eq(m, e.k(kInf)));
    Value ys = e.select(fixed, e.k(1), y);
    Value ms = e.select(fixed, e.k(1), m);
    Value refined =
        e.mul(e.add(e.add(ys, ys), e.div(ms, e.mul(ys, ys))), e.k(1.0 / 3));
    return e.oddPart(x, e.select(fixed, y, refined));
  });
}

Value buildMish(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    // x n / (n + 2), n = e^x (e^x + 2); x itself above 20, where the ratio
    // is 1 to f64 precision (and e^2x would overflow f32 beyond 44).
    Value large = e.gt(x, e.k(20));
    Value u = e.op<ExpOp>(e.select(large, e.k(0), x));
    Value n = e.mul(u, e.add(u, e.k(2)));
    return e.select(large, x, e.mul(x, e.div(n, e.add(n, e.k(2)))));
  });
}

/// 1 / (1 + t) for x >= 0 and t / (1 + t) below, t = e^-|x| in (0, 1]:
/// one exp that cannot overflow. 1 / (1 + e^-x) is as accurate, but below
/// the type's smallest exp argument (x < -88.7 in f32) its e^-x is inf and
/// its gradient 0 * inf = NaN; here the gradient t / (1 + t)^2 is 0 there.
Value buildLogistic(OpBuilder &b, Location loc, Value x) {
  return inComputeType(b, loc, x, [](Emitter &e, ArrayRef<Value> a) {
    Value x = a[0];
    Value nonNegative = e.cmp(ComparisonDirection::GE, x, e.k(0));
    Value t = e.op<ExpOp>(e.select(nonNegative, e.neg(x), x));
    Value d = e.add(e.k(1), t);
    return e.select(nonNegative, e.div(e.k(1), d), e.div(t, d));
  });
}

Value buildSign(OpBuilder &b, Location loc, Value x) {
  Emitter e(b, loc, cast<RankedTensorType>(x.getType()));
  // x * 0 keeps -0 and NaN, and its gradient is 0, as everywhere.
  Value rest = e.select(e.lt(x, e.k(0)), e.k(-1), e.mul(x, e.k(0)));
  return e.select(e.gt(x, e.k(0)), e.k(1), rest);
}

} // namespace trainc::graph
