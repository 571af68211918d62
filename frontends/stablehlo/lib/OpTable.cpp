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
    {"chlo.erf", lowerErf, TypeClass::Floats, ""},
    {"chlo.cosh", lowerCosh, TypeClass::Floats, "as (exp(x) + exp(-x)) / 2"},
    {"chlo.erfc", lowerErfc, TypeClass::Floats, "as 1 - erf(x)"},
    {"chlo.sinh", lowerSinh, TypeClass::Floats, "as (exp(x) - exp(-x)) / 2"},
    {"chlo.square", lowerSquare, TypeClass::Any, "as x * x"},
    {"chlo.tan", lowerTan, TypeClass::Floats, "as sin(x) / cos(x)"},
    {"stablehlo.abs", lowerAbs, TypeClass::Any, ""},
    {"stablehlo.add", lowerAdd, TypeClass::Any, "on i1: or"},
    {"stablehlo.and", lowerAnd, TypeClass::Bool, "no bitwise integers"},
    {"stablehlo.broadcast", lowerBroadcast, TypeClass::Any, ""},
    {"stablehlo.broadcast_in_dim", lowerBroadcastInDim, TypeClass::Any, ""},
    {"stablehlo.clamp", lowerClamp, TypeClass::Any, ""},
    {"stablehlo.compare", lowerCompare, TypeClass::Any,
     "compare_type FLOAT, SIGNED, UNSIGNED (by the type's signedness); not "
     "TOTALORDER on floats"},
    {"stablehlo.concatenate", lowerConcatenate, TypeClass::Any, ""},
    {"stablehlo.constant", lowerConstant, TypeClass::Any, "dense values"},
    {"stablehlo.convert", lowerConvert, TypeClass::Any,
     "float to integer truncates and saturates (NaN gives 0)"},
    {"stablehlo.cosine", lowerCosine, TypeClass::Floats, ""},
    {"stablehlo.divide", lowerDivide, TypeClass::Any, ""},
    {"stablehlo.dot", lowerDot, TypeClass::Any,
     "i1 excluded; integers compute in f64 (exact below 2^53)"},
    {"stablehlo.dot_general", lowerDotGeneral, TypeClass::Any,
     "precision_config and algorithm ignored (GEMMs accumulate in f32); "
     "integers compute in f64 (exact below 2^53)"},
    {"stablehlo.dynamic_slice", lowerDynamicSlice, TypeClass::Any,
     "start indices must fold to constants"},
    {"stablehlo.dynamic_update_slice", lowerDynamicUpdateSlice, TypeClass::Any,
     "start indices must fold to constants"},
    {"stablehlo.exponential", lowerExponential, TypeClass::Floats, ""},
    {"stablehlo.exponential_minus_one", lowerExponentialMinusOne,
     TypeClass::Floats, "as exp(x) - 1"},
    {"stablehlo.gather", lowerGather, TypeClass::Any,
     "slice size 1 along indexed and batching dimensions (embeddings, "
     "take, take_along_axis)"},
    {"stablehlo.iota", lowerIota, TypeClass::Any, "not i1"},
    {"stablehlo.is_finite", lowerIsFinite, TypeClass::Floats, ""},
    {"stablehlo.log", lowerLog, TypeClass::Floats, ""},
    {"stablehlo.log_plus_one", lowerLogPlusOne, TypeClass::Floats,
     "as log(1 + x)"},
    {"stablehlo.logistic", lowerLogistic, TypeClass::Floats, ""},
    {"stablehlo.maximum", lowerMaximum, TypeClass::Any, ""},
    {"stablehlo.minimum", lowerMinimum, TypeClass::Any, ""},
    {"stablehlo.multiply", lowerMultiply, TypeClass::Any, "on i1: and"},
    {"stablehlo.negate", lowerNegate, TypeClass::Any, ""},
    {"stablehlo.not", lowerNot, TypeClass::Bool, ""},
    {"stablehlo.optimization_barrier", lowerOptimizationBarrier, TypeClass::Any,
     ""},
    {"stablehlo.or", lowerOr, TypeClass::Bool, ""},
    {"stablehlo.pad", lowerPad, TypeClass::Any, ""},
    {"stablehlo.power", lowerPower, TypeClass::Floats, ""},
    {"stablehlo.reduce", lowerReduce, TypeClass::Any,
     "one input; body one add, maximum, minimum, and or or (on i1: "
     "maximum is or, minimum and)"},
    {"stablehlo.reshape", lowerReshape, TypeClass::Any, ""},
    {"stablehlo.reverse", lowerReverse, TypeClass::Any, ""},
    {"stablehlo.rsqrt", lowerRsqrt, TypeClass::Floats, ""},
    {"stablehlo.select", lowerSelect, TypeClass::Any, ""},
    {"stablehlo.sign", lowerSign, TypeClass::Any, ""},
    {"stablehlo.sine", lowerSine, TypeClass::Floats, ""},
    {"stablehlo.slice", lowerSlice, TypeClass::Any, ""},
    {"stablehlo.sqrt", lowerSqrt, TypeClass::Floats, ""},
    {"stablehlo.subtract", lowerSubtract, TypeClass::Any, ""},
    {"stablehlo.tan", lowerTan, TypeClass::Floats, "as sin(x) / cos(x)"},
    {"stablehlo.tanh", lowerTanh, TypeClass::Floats, ""},
    {"stablehlo.transpose", lowerTranspose, TypeClass::Any, ""},
    {"stablehlo.xor", lowerXor, TypeClass::Bool, ""},
};

} // namespace

llvm::ArrayRef<OpEntry> opTable() { return kOps; }

llvm::StringRef typeClassName(TypeClass types) {
  switch (types) {
  case TypeClass::Any:
    return "any";
  case TypeClass::Floats:
    return "floats";
  case TypeClass::Bool:
    return "i1";
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
