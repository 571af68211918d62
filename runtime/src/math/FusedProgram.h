//===- FusedProgram.h - A fused loop's program, decoded ---------*- C++ -*-===//
//
// Opcode::FusedElementwise carries its program in its ints (layout in
// runtime/schema/executable.fbs): S steps of kFusedStepInts ints (opcode,
// dtype, a, b, c, attr), then a register per result, then, where some
// operand is broadcast, each operand's result dimensions.
// decodeFusedProgram reads and checks it once, for the validator when a
// file is loaded and for each device's kernel, which then trusts the
// decoded form:
//
//   registers 0..I-1     the operands' elements (I = the operand count),
//                        each read over the results' shape as
//                        math/BroadcastView.h says
//   register  I + k      step k's value, rounded to its dtype
//
// A step computes what the opcode's own instruction would compute for one
// element, so a fused loop gives the bits of the unfused instructions on
// every device. A program computes on floats (f64, f32, f16, bf16) and i1,
// or on integers (i32, i64, ui32, ui64: jax.random's threefry) and i1,
// never both: each device keeps one register file per program. No step
// can fail: integer division is not a step. FusedProgram is plain data of a
// fixed size: the CUDA kernel takes it whole as a __grid_constant__ parameter.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_FUSEDPROGRAM_H
#define TRAINC_RUNTIME_MATH_FUSEDPROGRAM_H

#include "base/HostDevice.h"
#include "math/Bits.h"
#include "math/BroadcastView.h"
#include "trainc/schema/ExecutableFormat.h"

#include <cstdint>
#include <string>

namespace trainc::math {

struct FusedStep {
  Opcode op;
  DType dtype;
  /// Operand registers, -1 where the opcode takes fewer.
  int16_t operand[3];
  /// Compare's direction; Gelu's and GeluGrad's approximation (1 tanh).
  int8_t attr;
};

struct FusedProgram {
  int numInputs = 0, numSteps = 0, numResults = 0;
  FusedStep steps[kFusedMaxSteps];
  /// The register each result is written from.
  int16_t results[kFusedMaxResults];
  DType registerDType[kFusedMaxInputs + kFusedMaxSteps];
  /// Per operand, the result dimensions it spans (bit d: dimension d):
  /// the dims section's or, without one, all of them (none when 0-d).
  uint64_t operandDims[kFusedMaxInputs];
  /// Whether the ints have a dims section (some operand is broadcast).
  bool hasDims = false;

  int numRegisters() const { return numInputs + numSteps; }
};

/// Operands a step of `op` reads; 0 when `op` cannot be a step.
TRAINC_HD int fusedStepArity(Opcode op) {
  BitOp bit;
  if (toBitOp(op, bit))
    return isBinaryBitOp(bit) ? 2 : 1;
  switch (op) {
  case Opcode::Neg:
  case Opcode::Abs:
  case Opcode::Exp:
  case Opcode::Log:
  case Opcode::Tanh:
  case Opcode::Erf:
  case Opcode::Sqrt:
  case Opcode::Rsqrt:
  case Opcode::Cos:
  case Opcode::Sin:
  case Opcode::Floor:
  case Opcode::Round:
  case Opcode::Convert:
  case Opcode::Gelu:
    return 1;
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Pow:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Compare:
  case Opcode::GeluGrad:
    return 2;
  case Opcode::Select:
    return 3;
  default:
    return 0;
  }
}

TRAINC_HD bool isFusedFloat(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 ||
         t == DType::BF16;
}

/// The integer dtypes of a fused loop: those the CUDA elementwise kernels
/// take (not the 8- and 16-bit ones).
TRAINC_HD bool isFusedInteger(DType t) {
  return t == DType::I32 || t == DType::I64 || t == DType::U32 ||
         t == DType::U64;
}

/// Which steps take which dtypes (beyond Compare, Select and Convert).
enum class FusedStepTypes {
  kFloats,   ///< float math: Exp ... Round, Div, Pow, Gelu, GeluGrad
  kNumbers,  ///< floats or integers: Neg, Abs, Add, Sub, Mul, Max, Min
  kIntegers, ///< the bitwise ops
};

inline FusedStepTypes fusedStepTypes(Opcode op) {
  BitOp bit;
  if (toBitOp(op, bit))
    return FusedStepTypes::kIntegers;
  switch (op) {
  case Opcode::Neg:
  case Opcode::Abs:
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Max:
  case Opcode::Min:
    return FusedStepTypes::kNumbers;
  default:
    return FusedStepTypes::kFloats;
  }
}

/// Whether a program's registers hold integers (i32, i64, ui32, ui64 and
/// i1) rather than floats (and i1). A program that has only i1 registers
/// is a float one.
inline bool isIntegerProgram(const FusedProgram &program) {
  for (int r = 0; r < program.numRegisters(); ++r)
    if (isFusedInteger(program.registerDType[r]))
      return true;
  return false;
}

/// Reads `ints` (count `numInts`) into `program` for an instruction whose
/// operands have the given dtypes and ranks and whose results have the
/// given dtypes and rank, and checks every rule of the layout: the limits,
/// each step's opcode, operand registers (defined before the step) and
/// their dtypes, the attribute, that each result is a distinct step
/// register of the result's dtype, and each operand's dims (as many as
/// its rank, increasing, below the results' rank). Returns "" or what is
/// wrong. Shapes are the caller's to check (fusedOperandView).
inline std::string decodeFusedProgram(const int64_t *ints, int64_t numInts,
                                      const DType *inputDTypes,
                                      const int *inputRanks, int numInputs,
                                      const DType *resultDTypes, int numResults,
                                      int resultRank, FusedProgram &program) {
  auto str = [](int64_t v) { return std::to_string(v); };
  if (numInputs < 1 || numInputs > kFusedMaxInputs)
    return "takes 1 to " + str(kFusedMaxInputs) + " operands, has " +
           str(numInputs);
  if (numResults < 1 || numResults > kFusedMaxResults)
    return "gives 1 to " + str(kFusedMaxResults) + " results, has " +
           str(numResults);
  if (numInts < 1 || ints[0] < 1 || ints[0] > kFusedMaxSteps)
    return "needs a step count from 1 to " + str(kFusedMaxSteps);
  int steps = int(ints[0]);
  int64_t programInts = 1 + int64_t(steps) * kFusedStepInts + numResults;
  int64_t dimsInts = 0;
  for (int i = 0; i < numInputs; ++i)
    dimsInts += inputRanks[i];
  if (numInts != programInts && numInts != programInts + dimsInts)
    return "has " + str(numInts) + " ints; " + str(steps) + " steps and " +
           str(numResults) + " results take " + str(programInts) +
           ", with the operands' dims " + str(programInts + dimsInts);
  program.numInputs = numInputs;
  program.numSteps = steps;
  program.numResults = numResults;
  for (int i = 0; i < numInputs; ++i) {
    if (!isFusedFloat(inputDTypes[i]) && !isFusedInteger(inputDTypes[i]) &&
        inputDTypes[i] != DType::I1)
      return "operand " + str(i) +
             " is not a float, i32, i64, ui32, ui64 or i1";
    program.registerDType[i] = inputDTypes[i];
  }
  for (int k = 0; k < steps; ++k) {
    const int64_t *s = ints + 1 + int64_t(k) * kFusedStepInts;
    std::string at = "step " + str(k) + ": ";
    if (s[0] < 0 || s[0] >= kNumOpcodes || fusedStepArity(Opcode(s[0])) == 0)
      return at + "opcode " + str(s[0]) + " cannot be a step";
    if (s[1] < 0 || s[1] >= kNumDTypes)
      return at + "dtype " + str(s[1]) + " is not a DType";
    FusedStep &step = program.steps[k];
    step.op = Opcode(s[0]);
    step.dtype = DType(s[1]);
    int arity = fusedStepArity(step.op);
    DType operandType[3] = {};
    for (int j = 0; j < 3; ++j) {
      int64_t r = s[2 + j];
      if (j >= arity) {
        if (r != -1)
          return at + "operand " + str(j) + " must be -1, is " + str(r);
        step.operand[j] = -1;
        continue;
      }
      if (r < 0 || r >= numInputs + k)
        return at + "operand register " + str(r) +
               " is not an operand or an earlier step";
      step.operand[j] = int16_t(r);
      operandType[j] = program.registerDType[r];
    }
    int64_t attr = s[5];
    int64_t maxAttr = step.op == Opcode::Compare ? 5
                      : step.op == Opcode::Gelu || step.op == Opcode::GeluGrad
                          ? 1
                          : 0;
    if (attr < 0 || attr > maxAttr)
      return at + "attribute " + str(attr) + " is out of range";
    step.attr = int8_t(attr);
    DType t = step.dtype;
    auto isRegisterType = [](DType d) {
      return isFusedFloat(d) || isFusedInteger(d) || d == DType::I1;
    };
    bool typed = true;
    switch (step.op) {
    case Opcode::Compare:
      typed = t == DType::I1 && operandType[1] == operandType[0];
      break;
    case Opcode::Select:
      typed = isRegisterType(t) && operandType[0] == DType::I1 &&
              operandType[1] == t && operandType[2] == t;
      break;
    case Opcode::Convert: // Within floats and i1, or integers and i1.
      typed = isRegisterType(t) &&
              !(isFusedFloat(t) && isFusedInteger(operandType[0])) &&
              !(isFusedInteger(t) && isFusedFloat(operandType[0]));
      break;
    default: { // Math of one dtype.
      FusedStepTypes types = fusedStepTypes(step.op);
      typed = (isFusedFloat(t) && types != FusedStepTypes::kIntegers) ||
              (isFusedInteger(t) && types != FusedStepTypes::kFloats);
      for (int j = 0; j < arity; ++j)
        typed = typed && operandType[j] == t;
      break;
    }
    }
    if (!typed)
      return at + opcodeName(step.op) + " does not take these dtypes";
    program.registerDType[numInputs + k] = t;
  }
  // One register file per program: floats and i1, or integers and i1.
  bool floats = false, integers = false;
  for (int r = 0; r < program.numRegisters(); ++r) {
    floats = floats || isFusedFloat(program.registerDType[r]);
    integers = integers || isFusedInteger(program.registerDType[r]);
  }
  if (floats && integers)
    return "has both float and integer registers";
  const int64_t *results = ints + 1 + int64_t(steps) * kFusedStepInts;
  for (int r = 0; r < numResults; ++r) {
    int64_t reg = results[r];
    if (reg < numInputs || reg >= numInputs + steps)
      return "result " + str(r) + "'s register " + str(reg) +
             " is not a step's";
    for (int q = 0; q < r; ++q)
      if (results[q] == reg)
        return "results " + str(q) + " and " + str(r) +
               " are the same register";
    if (program.registerDType[reg] != resultDTypes[r])
      return "result " + str(r) + "'s dtype is not its register's";
    program.results[r] = int16_t(reg);
  }
  // Each operand's result dimensions: the dims section, or all of them.
  if (resultRank < 0 || resultRank > 64)
    return "has results of rank " + str(resultRank) + "; a loop takes 0 to 64";
  uint64_t all =
      resultRank == 64 ? ~uint64_t(0) : (uint64_t(1) << resultRank) - 1;
  program.hasDims = numInts != programInts;
  const int64_t *dims = ints + programInts;
  for (int i = 0; i < numInputs; ++i) {
    if (!program.hasDims) {
      program.operandDims[i] = inputRanks[i] == 0 ? 0 : all;
      continue;
    }
    uint64_t mask = 0;
    for (int k = 0; k < inputRanks[i]; ++k, ++dims) {
      int64_t d = *dims;
      if (d < 0 || d >= resultRank || (k > 0 && d <= dims[-1]))
        return "operand " + str(i) +
               "'s dims must increase from 0 to the "
               "results' rank " +
               str(resultRank) + " (dim " + str(k) + " is " + str(d) + ")";
      mask |= uint64_t(1) << d;
    }
    program.operandDims[i] = mask;
  }
  return "";
}

/// How operand `r` of `program` (dims `operandDims`, rank `operandRank`)
/// is read over results of rank `resultRank` and dims `resultDims`
/// (math/BroadcastView.h). Returns "" or what is wrong. Without a dims
/// section every operand has the results' dims or is 0-d.
inline std::string fusedOperandView(const FusedProgram &program, int r,
                                    const int64_t *resultDims, int resultRank,
                                    const int64_t *operandDims, int operandRank,
                                    BroadcastView &view) {
  std::string at = "operand " + std::to_string(r) + " ";
  if (!program.hasDims && operandRank != 0) {
    bool same = operandRank == resultRank;
    for (int d = 0; same && d < resultRank; ++d)
      same = operandDims[d] == resultDims[d];
    if (!same)
      return at + "is neither 0-d nor of the results' shape, and the "
                  "program has no dims for it";
  }
  std::string invalid =
      makeBroadcastView(resultDims, resultRank, operandDims, operandRank,
                        program.operandDims[r], view);
  return invalid.empty() ? invalid : at + invalid;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_FUSEDPROGRAM_H
