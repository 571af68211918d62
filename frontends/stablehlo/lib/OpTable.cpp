//===- OpTable.cpp - The StableHLO ops trainc lowers ----------------------===//
//
// One row per op: its lowering function and its limits. `trainc
// --list-stablehlo-ops` prints this table; an op that is not in it is an
// import error naming the op and its location.
//
//===----------------------------------------------------------------------===//

#include "LowerContext.h"

namespace trainc::stablehlo_import {
namespace {

const OpEntry kOps[] = {
    {"chlo.acos", lowerAcos, TypeClass::Floats, true,
     "as atan2(sqrt((1 - x)(1 + x)), x)"},
    {"chlo.acosh", lowerAcosh, TypeClass::Floats, true, "through log1p"},
    {"chlo.asin", lowerAsin, TypeClass::Floats, true,
     "as atan2(x, sqrt((1 - x)(1 + x)))"},
    {"chlo.asinh", lowerAsinh, TypeClass::Floats, true, "through log1p"},
    {"chlo.atan", lowerAtan, TypeClass::Floats, true, "as atan2(x, 1)"},
    {"chlo.atanh", lowerAtanh, TypeClass::Floats, true, "through log1p"},
    {"chlo.erf", lowerErf, TypeClass::Floats, true, ""},
    {"chlo.cosh", lowerCosh, TypeClass::Floats, true, ""},
    {"chlo.erfc", lowerErfc, TypeClass::Floats, true, "as 1 - erf(x)"},
    {"chlo.mulhi", lowerMulhi, TypeClass::Integers, true,
     "the product widened; 64 bits from 32-bit halves"},
    {"chlo.next_after", lowerNextAfter, TypeClass::Floats, true,
     "on the floats' bits; a NaN operand comes back as it is; f16 and "
     "bf16 step ui16 bits, which the GPU's integer kernels do not take"},
    {"chlo.erf_inv", lowerErfInv, TypeClass::Floats, true,
     "Giles' polynomials in -log((1 - x)(1 + x)), as XLA; f16 and bf16 in "
     "f32"},
    {"chlo.sinh", lowerSinh, TypeClass::Floats, true, ""},
    {"chlo.square", lowerSquare, TypeClass::Numbers, true, "as x * x"},
    {"chlo.tan", lowerTan, TypeClass::Floats, true, "as sin(x) / cos(x)"},
    {"chlo.top_k", lowerTopK, TypeClass::Any, false,
     "a stable descending sort's first k (floats in total order); no ui64"},
    {"stablehlo.abs", lowerAbs, TypeClass::Numbers, true, ""},
    {"stablehlo.add", lowerAdd, TypeClass::Any, true, "on i1: or"},
    {"stablehlo.and", lowerAnd, TypeClass::Bits, true, ""},
    {"stablehlo.atan2", lowerAtan2, TypeClass::Floats, true,
     "a polynomial atan after range reduction; C's signed zeros and "
     "infinities"},
    {"stablehlo.bitcast_convert", lowerBitcastConvert, TypeClass::Any, false,
     "between element types of one bit width (not i1)"},
    {"stablehlo.broadcast", lowerBroadcast, TypeClass::Any, false, ""},
    {"stablehlo.broadcast_in_dim", lowerBroadcastInDim, TypeClass::Any, false,
     ""},
    {"stablehlo.cbrt", lowerCbrt, TypeClass::Floats, true,
     "|x|^(1/3) and one Newton step"},
    {"stablehlo.clamp", lowerClamp, TypeClass::Numbers, true, ""},
    {"stablehlo.compare", lowerCompare, TypeClass::Any, true,
     "compare_type FLOAT, SIGNED, UNSIGNED (by the type's signedness); not "
     "TOTALORDER on floats"},
    {"stablehlo.concatenate", lowerConcatenate, TypeClass::Any, false, ""},
    {"stablehlo.constant", lowerConstant, TypeClass::Any, false,
     "dense values"},
    {"stablehlo.convert", lowerConvert, TypeClass::Any, true,
     "float to integer truncates and saturates (NaN gives 0)"},
    {"stablehlo.ceil", lowerCeil, TypeClass::Floats, true, "as -floor(-x)"},
    {"stablehlo.count_leading_zeros", lowerCountLeadingZeros,
     TypeClass::Integers, true, ""},
    {"stablehlo.convolution", lowerConvolution, TypeClass::Numbers, false,
     "as im2col and one product (GraphBuilders.h); any dimension numbers, "
     "padding, strides, dilations and groups; no window reversal; integers "
     "compute in f64: exact, and wrapping to the result type, while sums "
     "stay below 2^53 in magnitude"},
    {"stablehlo.cosine", lowerCosine, TypeClass::Floats, true, ""},
    {"stablehlo.divide", lowerDivide, TypeClass::Numbers, true, ""},
    {"stablehlo.dot", lowerDot, TypeClass::Numbers, false,
     "integers compute in f64: exact, and wrapping to the result type, "
     "while sums stay below 2^53 in magnitude"},
    {"stablehlo.dot_general", lowerDotGeneral, TypeClass::Numbers, false,
     "precision_config and algorithm ignored (GEMMs accumulate in f32); "
     "integers compute in f64: exact, and wrapping to the result type, "
     "while sums stay below 2^53 in magnitude"},
    {"stablehlo.dynamic_slice", lowerDynamicSlice, TypeClass::Any, false,
     "a start that is data gathers (clamped as the spec says)"},
    {"stablehlo.dynamic_update_slice", lowerDynamicUpdateSlice, TypeClass::Any,
     false, "a start that is data gathers (clamped as the spec says)"},
    {"stablehlo.exponential", lowerExponential, TypeClass::Floats, true, ""},
    {"stablehlo.exponential_minus_one", lowerExponentialMinusOne,
     TypeClass::Floats, true, "2t / (1 - t), t = tanh(x / 2), near 0"},
    {"stablehlo.floor", lowerFloor, TypeClass::Floats, true, ""},
    {"stablehlo.gather", lowerGather, TypeClass::Any, false,
     "slice size 1 along indexed and batching dimensions (embeddings, "
     "take, take_along_axis)"},
    {"stablehlo.iota", lowerIota, TypeClass::Any, false, "not i1"},
    {"stablehlo.is_finite", lowerIsFinite, TypeClass::Floats, true, ""},
    {"stablehlo.log", lowerLog, TypeClass::Floats, true, ""},
    {"stablehlo.log_plus_one", lowerLogPlusOne, TypeClass::Floats, true,
     "2 atanh(x / (2 + x)) by its series near 0"},
    {"stablehlo.logistic", lowerLogistic, TypeClass::Floats, true, ""},
    {"stablehlo.maximum", lowerMaximum, TypeClass::Any, true, ""},
    {"stablehlo.minimum", lowerMinimum, TypeClass::Any, true, ""},
    {"stablehlo.multiply", lowerMultiply, TypeClass::Any, true, "on i1: and"},
    {"stablehlo.negate", lowerNegate, TypeClass::Numbers, true, ""},
    {"stablehlo.not", lowerNot, TypeClass::Bits, true, ""},
    {"stablehlo.optimization_barrier", lowerOptimizationBarrier, TypeClass::Any,
     false, ""},
    {"stablehlo.or", lowerOr, TypeClass::Bits, true, ""},
    {"stablehlo.pad", lowerPad, TypeClass::Any, false, ""},
    {"stablehlo.popcnt", lowerPopcnt, TypeClass::Integers, true, ""},
    {"stablehlo.power", lowerPower, TypeClass::Numbers, true,
     "integers by squaring, wrapping around; a negative exponent gives 0 "
     "unless the base is 1 or -1"},
    {"stablehlo.reduce", lowerReduce, TypeClass::Any, false,
     "body one add, multiply, maximum, minimum, and or or per input (on "
     "i1: maximum is or, minimum and), or jnp.argmax/argmin's"},
    {"stablehlo.reduce_precision", lowerReducePrecision, TypeClass::Floats,
     true,
     "on the bits, as the reference interpreter (no subnormals in the "
     "format); the gradient is the cotangent, not rounded to the format; "
     "f16 and bf16 use ui16 ops, which the GPU's integer kernels do not "
     "take"},
    {"stablehlo.reduce_window", lowerReduceWindow, TypeClass::Numbers, false,
     "one input, body one add, multiply, maximum or minimum; a prefix scan "
     "(jnp.cumsum, cumprod, cummax, cummin) in log2 n steps, any other "
     "window (pooling) as one slice per position, at most 1024"},
    {"stablehlo.remainder", lowerRemainder, TypeClass::Numbers, true,
     "floats: graph.remainder (fmod, exact); integers: x - (x / y) * y, the "
     "quotient truncated"},
    {"stablehlo.reshape", lowerReshape, TypeClass::Any, false, ""},
    {"stablehlo.reverse", lowerReverse, TypeClass::Any, false, ""},
    {"stablehlo.round_nearest_afz", lowerRoundNearestAfz, TypeClass::Floats,
     true, "from floor(|x|)"},
    {"stablehlo.round_nearest_even", lowerRoundNearestEven, TypeClass::Floats,
     true, ""},
    {"stablehlo.rsqrt", lowerRsqrt, TypeClass::Floats, true, ""},
    {"stablehlo.scatter", lowerScatter, TypeClass::Numbers, false,
     "one input; a body that adds the update (x.at[i].add) or returns it "
     "(x.at[i].set, with unique_indices = true or constant distinct "
     "indices); floats, i32, i64; elements outside the operand are dropped"},
    {"stablehlo.select", lowerSelect, TypeClass::Any, true, ""},
    {"stablehlo.shift_left", lowerShiftLeft, TypeClass::Integers, true, ""},
    {"stablehlo.shift_right_arithmetic", lowerShiftRightArithmetic,
     TypeClass::Integers, true, ""},
    {"stablehlo.shift_right_logical", lowerShiftRightLogical,
     TypeClass::Integers, true, ""},
    {"stablehlo.sign", lowerSign, TypeClass::Numbers, true, ""},
    {"stablehlo.sine", lowerSine, TypeClass::Floats, true, ""},
    {"stablehlo.slice", lowerSlice, TypeClass::Any, false, ""},
    {"stablehlo.sort", lowerSort, TypeClass::Any, false,
     "stable; comparators of one or more keys (LT ascending, GT "
     "descending, EQ for ties); no ui64 keys"},
    {"stablehlo.sqrt", lowerSqrt, TypeClass::Floats, true, ""},
    {"stablehlo.subtract", lowerSubtract, TypeClass::Numbers, true, ""},
    {"stablehlo.tan", lowerTan, TypeClass::Floats, true, "as sin(x) / cos(x)"},
    {"stablehlo.tanh", lowerTanh, TypeClass::Floats, true, ""},
    {"stablehlo.transpose", lowerTranspose, TypeClass::Any, false, ""},
    {"stablehlo.triangular_solve", lowerTriangularSolve, TypeClass::Floats,
     false,
     "the triangle's inverse by doubling (2 n^3 log2 n multiply-adds) times "
     "b; real types; not backward stable where the inverse's entries grow "
     "far beyond the solution's (substitution is)"},
    {"stablehlo.xor", lowerXor, TypeClass::Bits, true, ""},
};

} // namespace

llvm::ArrayRef<OpEntry> opTable() { return kOps; }

llvm::StringRef typeClassName(TypeClass types) {
  switch (types) {
  case TypeClass::Any:
    return "any";
  case TypeClass::Numbers:
    return "numbers";
  case TypeClass::Floats:
    return "floats";
  case TypeClass::Bool:
    return "i1";
  case TypeClass::Integers:
    return "integers";
  case TypeClass::Bits:
    return "integers, i1";
  }
  return "any";
}

const OpEntry *findOp(llvm::StringRef name) {
  for (const OpEntry &e : kOps)
    if (name == e.name)
      return &e;
  return nullptr;
}

} // namespace trainc::stablehlo_import
