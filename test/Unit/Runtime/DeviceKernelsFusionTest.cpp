//===- DeviceKernelsFusionTest.cpp - Fused loops on a device --------------===//
//
// The DeviceKernels suite (DeviceKernelsTest.cpp, which describes it and
// instantiates it for "cpu" and "cuda") for the ops the lower phase's
// fusion makes: fused_elementwise (against its steps run one by one, with
// 0-d and broadcast operands) and convert_group (against its converts).
//
//===----------------------------------------------------------------------===//

#include "DeviceKernelsHarness.h"

#include <algorithm>
#include <cstring>

namespace trainc {
namespace {

using namespace device_kernels;
//===--- FusedElementwise -------------------------------------------------===//

/// One step of a fused_elementwise program (math/FusedProgram.h): opcode,
/// dtype, operand registers (-1 for those the opcode does not take) and
/// Compare's direction or Gelu's and GeluGrad's approximation.
struct FusedStepSpec {
  Opcode op;
  DType dtype;
  int a, b, c, attr;
};

struct FusedOperandSpec {
  DType dtype;
  /// Uniform values in [lo, hi) (lo == hi: that value; i1: 0 or 1).
  double lo, hi;
  /// 0-d: one value for every element.
  bool scalar;
  /// Random bit patterns instead (an integer's whole range).
  bool bits = false;
  /// Broadcast (when not empty): the result dimensions the operand's
  /// dimensions span, and the operand's shape (each dimension 1 or the
  /// result's), read as broadcast_in_dim would expand it.
  std::vector<int64_t> spans = {}, shape = {};
};

struct FusedCase {
  const char *name;
  std::vector<FusedOperandSpec> operands;
  std::vector<FusedStepSpec> steps;
  /// The register of each result.
  std::vector<int64_t> results;
  /// For each result, the operand whose memory it is written to (-1: its
  /// own buffer).
  std::vector<int> aliases;
  /// Values set at the first elements of operand 0 and 2 (when they exist
  /// and are not 0-d), after the uniform ones.
  std::vector<double> special0, special2;
};

/// The program's ints for results of rank `rank`, with the dims section
/// where some operand is broadcast.
std::vector<int64_t> fusedInts(const FusedCase &fc, int64_t rank) {
  std::vector<int64_t> ints = {int64_t(fc.steps.size())};
  for (const FusedStepSpec &s : fc.steps)
    ints.insert(ints.end(),
                {int64_t(s.op), int64_t(s.dtype), s.a, s.b, s.c, s.attr});
  ints.insert(ints.end(), fc.results.begin(), fc.results.end());
  bool broadcast = false;
  for (const FusedOperandSpec &o : fc.operands)
    broadcast = broadcast || !o.spans.empty();
  for (const FusedOperandSpec &o : fc.operands) {
    if (!broadcast || o.scalar)
      continue;
    if (!o.spans.empty()) {
      ints.insert(ints.end(), o.spans.begin(), o.spans.end());
      continue;
    }
    for (int64_t d = 0; d < rank; ++d)
      ints.push_back(d);
  }
  return ints;
}

/// x (spanning result dimensions `spans`) expanded to `dims` by the
/// definition: the element at result index i is x's at j, j_k = 0 where
/// x's dimension k is 1, else i[spans[k]]. Byte for byte.
TestTensor expanded(const TestTensor &x, const std::vector<int64_t> &spans,
                    const std::vector<int64_t> &dims) {
  TestTensor t = zeros(x.dtype(), dims);
  size_t width = dtypeSize(t.dtype());
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < t.size(); ++i) {
    int64_t rest = i;
    for (size_t d = dims.size(); d-- > 0;) {
      index[d] = rest % dims[d];
      rest /= dims[d];
    }
    int64_t j = 0;
    for (size_t k = 0; k < spans.size(); ++k)
      j = j * x.dims()[k] + (x.dims()[k] == 1 ? 0 : index[size_t(spans[k])]);
    std::memcpy(static_cast<uint8_t *>(t.ref().data) + i * width,
                static_cast<const uint8_t *>(x.ref().data) + j * width, width);
  }
  return t;
}

/// The dtype of each register: the operands', then the steps'.
std::vector<DType> fusedRegisterTypes(const FusedCase &fc) {
  std::vector<DType> types;
  for (const FusedOperandSpec &o : fc.operands)
    types.push_back(o.dtype);
  for (const FusedStepSpec &s : fc.steps)
    types.push_back(s.dtype);
  return types;
}

/// A 0-d tensor's element repeated over `dims`, byte for byte.
TestTensor repeated(const TestTensor &scalar,
                    const std::vector<int64_t> &dims) {
  TestTensor t = zeros(scalar.dtype(), dims);
  size_t width = dtypeSize(t.dtype());
  for (int64_t i = 0; i < t.size(); ++i)
    std::memcpy(static_cast<uint8_t *>(t.ref().data) + i * width,
                scalar.ref().data, width);
  return t;
}

/// The step as its own instruction, on full-shape registers.
Call unfusedStep(const FusedStepSpec &s, const std::vector<TestTensor> &regs,
                 const std::vector<int64_t> &dims) {
  std::vector<TestTensor> in;
  for (int r : {s.a, s.b, s.c})
    if (r >= 0)
      in.push_back(regs[r]);
  std::vector<int64_t> ints;
  if (s.op == Opcode::Compare || s.op == Opcode::Gelu ||
      s.op == Opcode::GeluGrad)
    ints = {s.attr};
  return makeCall(s.op, in, {zeros(s.dtype, dims)}, ints);
}

/// bf16 add and mul, their product also converted to f32: two results.
FusedCase bf16AddConvert() {
  return {"bf16 add, mul, convert to f32",
          {{kBF16, -4, 4, false}, {kBF16, -4, 4, false}},
          {{Opcode::Add, kBF16, 0, 1, -1, 0},
           {Opcode::Mul, kBF16, 2, 0, -1, 0},
           {Opcode::Convert, kF32, 3, -1, -1, 0}},
          {3, 4},
          {},
          {},
          {}};
}

/// gelu_grad in f32, both forms, between converts from and to bf16.
FusedCase bf16GeluGrad() {
  return {"f32 gelu_grad between bf16 converts",
          {{kBF16, -6, 6, false}, {kBF16, -1, 1, false}},
          {{Opcode::Convert, kF32, 0, -1, -1, 0},
           {Opcode::Convert, kF32, 1, -1, -1, 0},
           {Opcode::GeluGrad, kF32, 2, 3, -1, 0},
           {Opcode::GeluGrad, kF32, 2, 3, -1, 1},
           {Opcode::Add, kF32, 4, 5, -1, 0},
           {Opcode::Convert, kBF16, 6, -1, -1, 0}},
          {7},
          {},
          {},
          {}};
}

/// compare against a 0-d threshold, select, i1 converts both ways (NaN
/// -> true, zeros -> false), and a 0-d i1 predicate; NaN, infinities and
/// signed zeros among x and y.
FusedCase compareSelect() {
  return {"compare, select, 0-d operands",
          {{kF32, -2, 2, false},                  // 0 x
           {kF32, 0.25, 0.25, true},              // 1 t, 0-d
           {kF32, -2, 2, false},                  // 2 y
           {kI1, 0, 2, true}},                    // 3 p, 0-d (0 or 1 by seed)
          {{Opcode::Compare, kI1, 0, 1, -1, 4},   // 4: x > t
           {Opcode::Select, kF32, 4, 0, 2, 0},    // 5
           {Opcode::Mul, kF32, 5, 1, -1, 0},      // 6
           {Opcode::Compare, kI1, 0, 0, -1, 1},   // 7: x != x
           {Opcode::Convert, kF16, 7, -1, -1, 0}, // 8: i1 -> f16
           {Opcode::Select, kF32, 7, 0, 6, 0},    // 9: NaN where x is
           {Opcode::Convert, kI1, 9, -1, -1, 0},  // 10: f32 -> i1
           {Opcode::Select, kF32, 3, 9, 0, 0}},   // 11
          {11, 4, 8, 10},
          {},
          {kNaN, kInf, -kInf, -1, 0, -0.0},
          {1, 2, 3, 0, -0.0, 0}};
}

/// An f64 program with f32 registers and steps (the double register file):
/// f64 math, compare and select, and converts f32 -> f64 -> f16, f32.
FusedCase f64Program() {
  return {"f64 program",
          {{kF64, -2, 2, false},                   // 0 a
           {kF32, 0.5, 4, false},                  // 1 b
           {kF64, 1.5, 1.5, true}},                // 2 c
          {{Opcode::Convert, kF64, 1, -1, -1, 0},  // 3
           {Opcode::Mul, kF64, 0, 3, -1, 0},       // 4
           {Opcode::Exp, kF64, 4, -1, -1, 0},      // 5
           {Opcode::Gelu, kF64, 0, -1, -1, 1},     // 6
           {Opcode::GeluGrad, kF64, 0, 5, -1, 0},  // 7
           {Opcode::Sqrt, kF32, 1, -1, -1, 0},     // 8
           {Opcode::Compare, kI1, 4, 2, -1, 2},    // 9: a * b < c
           {Opcode::Select, kF64, 9, 6, 7, 0},     // 10
           {Opcode::Convert, kF16, 10, -1, -1, 0}, // 11
           {Opcode::Convert, kF32, 10, -1, -1, 0}, // 12
           {Opcode::Pow, kF64, 3, 2, -1, 0},       // 13
           {Opcode::Div, kF32, 8, 12, -1, 0}},     // 14
          {10, 11, 14, 13},
          {},
          {},
          {}};
}

/// Every opcode a step may be but compare, select and convert's float
/// pairs (above), in f16, with a bf16 detour; x > 0 where log, sqrt and pow
/// need it.
FusedCase everyOpF16() {
  return {"every opcode in f16",
          {{kF16, 0.25, 4, false}, {kF16, -2, 2, false}},
          {{Opcode::Neg, kF16, 1, -1, -1, 0},       // 2
           {Opcode::Abs, kF16, 2, -1, -1, 0},       // 3
           {Opcode::Exp, kF16, 1, -1, -1, 0},       // 4
           {Opcode::Log, kF16, 0, -1, -1, 0},       // 5
           {Opcode::Tanh, kF16, 5, -1, -1, 0},      // 6
           {Opcode::Erf, kF16, 1, -1, -1, 0},       // 7
           {Opcode::Sqrt, kF16, 0, -1, -1, 0},      // 8
           {Opcode::Rsqrt, kF16, 0, -1, -1, 0},     // 9
           {Opcode::Cos, kF16, 1, -1, -1, 0},       // 10
           {Opcode::Sin, kF16, 1, -1, -1, 0},       // 11
           {Opcode::Sub, kF16, 10, 11, -1, 0},      // 12
           {Opcode::Div, kF16, 12, 8, -1, 0},       // 13
           {Opcode::Pow, kF16, 0, 1, -1, 0},        // 14
           {Opcode::Max, kF16, 13, 7, -1, 0},       // 15
           {Opcode::Min, kF16, 15, 6, -1, 0},       // 16
           {Opcode::Gelu, kF16, 16, -1, -1, 0},     // 17
           {Opcode::Add, kF16, 17, 9, -1, 0},       // 18
           {Opcode::Convert, kBF16, 18, -1, -1, 0}, // 19
           {Opcode::Mul, kBF16, 19, 19, -1, 0},     // 20
           {Opcode::Convert, kF16, 20, -1, -1, 0}}, // 21
          {21, 14, 4, 3},
          {},
          {},
          {}};
}

/// 0-d bf16 and f16 operands (2-byte elements repeated over the loop).
FusedCase scalar16() {
  return {"0-d bf16 and f16 operands",
          {{kBF16, -4, 4, false},                 // 0 x
           {kBF16, 0.75, 0.75, true},             // 1 s, 0-d
           {kF16, 1.5, 1.5, true}},               // 2 t, 0-d
          {{Opcode::Mul, kBF16, 0, 1, -1, 0},     // 3
           {Opcode::Convert, kF16, 3, -1, -1, 0}, // 4
           {Opcode::Add, kF16, 4, 2, -1, 0}},     // 5
          {5, 3},
          {},
          {},
          {}};
}

/// A threefry2x32 round in ui32 (jax.random): add, rotate by a 0-d amount
/// (a shift each way and an or), xor, add a 0-d key word; random bits.
FusedCase threefryRound() {
  return {"ui32 threefry round",
          {{kU32, 0, 0, false, true},                      // 0 x0
           {kU32, 0, 0, false, true},                      // 1 x1
           {kU32, 0, 0, true, true},                       // 2 key, 0-d
           {kU32, 13, 13, true},                           // 3 r, 0-d
           {kU32, 19, 19, true}},                          // 4 32 - r, 0-d
          {{Opcode::Add, kU32, 0, 1, -1, 0},               // 5
           {Opcode::ShiftLeft, kU32, 1, 3, -1, 0},         // 6
           {Opcode::ShiftRightLogical, kU32, 1, 4, -1, 0}, // 7
           {Opcode::Or, kU32, 6, 7, -1, 0},                // 8
           {Opcode::Xor, kU32, 8, 5, -1, 0},               // 9
           {Opcode::Add, kU32, 9, 2, -1, 0}},              // 10
          {10, 5},
          {},
          {},
          {}};
}

/// Every integer step on i32, u64 and i1, on random bits and shift amounts
/// below and beyond the width: wrapping neg, mul and sub (INT_MIN among
/// the values), both right shifts, signed and unsigned order (values with
/// the top bit set), the counts, converts that sign-extend, wrap and test
/// non-zero, a 0-d i1 choosing between i1 values.
FusedCase everyIntegerStep() {
  return {"every integer step",
          {{kI32, 0, 0, false, true},                         // 0 a
           {kI32, 0, 40, false},                              // 1 shift
           {kU64, 0, 0, false, true},                         // 2 c
           {kU64, 0, 70, false},                              // 3 shift
           {kI1, 0, 2, true}},                                // 4 p, 0-d
          {{Opcode::Neg, kI32, 0, -1, -1, 0},                 // 5
           {Opcode::Abs, kI32, 0, -1, -1, 0},                 // 6
           {Opcode::ShiftLeft, kI32, 0, 1, -1, 0},            // 7
           {Opcode::ShiftRightArithmetic, kI32, 0, 1, -1, 0}, // 8
           {Opcode::ShiftRightLogical, kI32, 0, 1, -1, 0},    // 9
           {Opcode::Mul, kI32, 0, 0, -1, 0},                  // 10
           {Opcode::Sub, kI32, 5, 10, -1, 0},                 // 11
           {Opcode::Max, kI32, 11, 8, -1, 0},                 // 12
           {Opcode::Min, kI32, 12, 7, -1, 0},                 // 13
           {Opcode::Xor, kI32, 13, 9, -1, 0},                 // 14
           {Opcode::Not, kI32, 14, -1, -1, 0},                // 15
           {Opcode::PopCount, kI32, 15, -1, -1, 0},           // 16
           {Opcode::CountLeadingZeros, kI32, 14, -1, -1, 0},  // 17
           {Opcode::Convert, kI64, 13, -1, -1, 0},            // 18
           {Opcode::Convert, kU64, 18, -1, -1, 0},            // 19
           {Opcode::Add, kU64, 19, 2, -1, 0},                 // 20
           {Opcode::ShiftRightLogical, kU64, 20, 3, -1, 0},   // 21
           {Opcode::ShiftLeft, kU64, 2, 3, -1, 0},            // 22
           {Opcode::Compare, kI1, 20, 2, -1, 2},              // 23: LT
           {Opcode::Select, kU64, 23, 21, 22, 0},             // 24
           {Opcode::Max, kU64, 24, 2, -1, 0},                 // 25
           {Opcode::Convert, kU32, 25, -1, -1, 0},            // 26
           {Opcode::Compare, kI1, 0, 1, -1, 4},               // 27: GT
           {Opcode::Select, kI1, 4, 27, 23, 0},               // 28
           {Opcode::Convert, kI32, 28, -1, -1, 0},            // 29
           {Opcode::And, kI32, 29, 16, -1, 0},                // 30
           {Opcode::Or, kI32, 30, 17, -1, 0},                 // 31
           {Opcode::Convert, kI1, 0, -1, -1, 0},              // 32
           {Opcode::Convert, kI32, 26, -1, -1, 0}},           // 33
          {31, 26, 32, 33, 24},
          {},
          {-2147483648.0, -1, 0, 2147483647.0, 1},
          {9223372036854775808.0, 0, 1}};
}

/// Runs `fc` on `dims` fused and step by step on the device under test and
/// expects the same results (bit for bit; byte for byte on the CPU
/// device), and operands that no result is written to unchanged.
void checkFused(Device &device, const FusedCase &fc,
                const std::vector<int64_t> &dims, uint32_t seed, bool exact) {
  SCOPED_TRACE(std::string(fc.name) + " on " + shapeString(dims));
  std::vector<TestTensor> operands, regs;
  for (size_t r = 0; r < fc.operands.size(); ++r) {
    const FusedOperandSpec &o = fc.operands[r];
    std::vector<int64_t> shape = o.scalar          ? std::vector<int64_t>{}
                                 : o.spans.empty() ? dims
                                                   : o.shape;
    TestTensor x =
        o.bits ? randomBits(o.dtype, shape, seed + uint32_t(r))
               : uniform(o.dtype, shape, seed + uint32_t(r), o.lo, o.hi);
    const std::vector<double> &special = r == 0   ? fc.special0
                                         : r == 2 ? fc.special2
                                                  : std::vector<double>{};
    for (size_t i = 0; !o.scalar && i < special.size() && int64_t(i) < x.size();
         ++i)
      x.set(int64_t(i), special[i]);
    regs.push_back(o.scalar          ? repeated(x, dims)
                   : o.spans.empty() ? x
                                     : expanded(x, o.spans, dims));
    operands.push_back(std::move(x));
  }
  // Unfused: each step its own instruction on the same device.
  for (const FusedStepSpec &s : fc.steps) {
    Call step = unfusedStep(s, regs, dims);
    std::vector<TestTensor> out, back;
    Status st = runOnDevice(device, step, out, back);
    ASSERT_TRUE(st.ok()) << describe(step) << ": " << st.toString();
    regs.push_back(out[0]);
  }
  std::vector<DType> types = fusedRegisterTypes(fc);
  std::vector<TestTensor> results;
  for (int64_t r : fc.results)
    results.push_back(zeros(types[r], dims));
  Call fused = makeCall(Opcode::FusedElementwise, operands, results,
                        fusedInts(fc, int64_t(dims.size())));
  fused.aliases = fc.aliases;
  SCOPED_TRACE(describe(fused));
  std::vector<TestTensor> got, back;
  Status st = runOnDevice(device, fused, got, back);
  ASSERT_TRUE(st.ok()) << st.toString();
  for (size_t q = 0; q < fc.results.size(); ++q)
    EXPECT_TRUE(matches(got[q], regs[fc.results[q]], kSameBits, exact))
        << "result " << q << " (register " << fc.results[q] << ")";
  for (size_t r = 0; r < operands.size(); ++r) {
    bool written = std::find(fc.aliases.begin(), fc.aliases.end(), int(r)) !=
                   fc.aliases.end();
    if (!written) {
      EXPECT_TRUE(matches(back[r], operands[r], kSameBytes, true))
          << "operand " << r << " changed";
    }
  }
}

/// fused_elementwise gives each step the bits of the step's own instruction
/// on the same device (cuda/FusedElementwise.cu and
/// cpu/FusedElementwise.cpp call the unfused kernels' element functions):
/// for every program, on odd sizes, one element and none, with 0-d
/// operands, and with results written over operands.
TEST_P(DeviceKernels, FusedElementwiseMatchesItsSteps) {
  FusedCase inPlaceAdd = bf16AddConvert();
  inPlaceAdd.name = "bf16 add, mul, convert to f32; mul over y";
  inPlaceAdd.aliases = {1, -1};
  FusedCase inPlaceGeluGrad = bf16GeluGrad();
  inPlaceGeluGrad.name = "f32 gelu_grad between bf16 converts; over x";
  inPlaceGeluGrad.aliases = {0};
  FusedCase inPlaceRound = threefryRound();
  inPlaceRound.name = "ui32 threefry round; over x0";
  inPlaceRound.aliases = {0, -1};
  const FusedCase cases[] = {
      bf16AddConvert(),   bf16GeluGrad(), compareSelect(), f64Program(),
      everyOpF16(),       inPlaceAdd,     inPlaceGeluGrad, threefryRound(),
      everyIntegerStep(), inPlaceRound,   scalar16()};
  // 8197 = two CPU chunks of 4096 and a tail, split over the threads.
  const std::vector<int64_t> shapes[] = {{1},    {7}, {1031},
                                         {8197}, {0}, {3, 129}};
  uint32_t seed = 1;
  for (const FusedCase &fc : cases)
    for (const std::vector<int64_t> &dims : shapes) {
      checkFused(*device_, fc, dims, seed, exact());
      seed += uint32_t(fc.operands.size());
    }
}

/// Operands broadcast over the results' shape (the dims section) read the
/// elements broadcast_in_dim would give them, byte for byte: per-channel
/// scales of NCHW, a dimension of size 1, the innermost dimension
/// broadcast, a 0-d operand among them, 2- and 4-byte elements, runs that
/// cross the CPU's chunks of 4096 and shapes that make short runs.
TEST_P(DeviceKernels, FusedElementwiseReadsBroadcastOperands) {
  auto perChannel = [](DType t, std::vector<int64_t> spans,
                       std::vector<int64_t> shape) {
    FusedOperandSpec o{t, -2, 2, false};
    o.spans = std::move(spans);
    o.shape = std::move(shape);
    return o;
  };
  struct Shaped {
    std::vector<int64_t> dims;
    FusedCase fc;
  };
  std::vector<Shaped> cases;
  // x * scale[c] + shift[n, 1, w] - 0-d, and the f32 sum in bf16.
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{3, 5, 7, 2}, {2, 33, 1, 129}, {1, 64, 1, 1}}) {
    FusedCase fc = {"x * scale[c] + shift[n, 1, w] - s",
                    {{kF32, -4, 4, false},             // 0 x
                     perChannel(kF32, {1}, {dims[1]}), // 1 scale
                     perChannel(kF32, {0, 2, 3}, {dims[0], 1, dims[3]}), // 2
                     {kF32, 0.5, 0.5, true}},                            // 3 s
                    {{Opcode::Mul, kF32, 0, 1, -1, 0},                   // 4
                     {Opcode::Add, kF32, 4, 2, -1, 0},                   // 5
                     {Opcode::Sub, kF32, 5, 3, -1, 0},                   // 6
                     {Opcode::Convert, kBF16, 6, -1, -1, 0}},            // 7
                    {6, 7},
                    {},
                    {},
                    {}};
    cases.push_back({dims, fc});
  }
  // Rows of 4099 (a run crosses a chunk): bf16 x - mean[row] over [2, 4099]
  // and * w[col] (the innermost dimension read, the outer broadcast).
  cases.push_back(
      {{2, 4099},
       {"bf16 (x - mean[row]) * w[col]",
        {{kBF16, -4, 4, false},
         perChannel(kBF16, {0}, {2}),
         perChannel(kBF16, {1}, {4099})},
        {{Opcode::Sub, kBF16, 0, 1, -1, 0}, {Opcode::Mul, kBF16, 3, 2, -1, 0}},
        {4},
        {},
        {},
        {}}});
  // Every operand broadcast, in place of none (the loop's shape is only
  // the results').
  cases.push_back(
      {{4, 3, 1111},
       {"a[c] + b[n, 1, 1]",
        {perChannel(kF32, {1}, {3}), perChannel(kF32, {0, 1, 2}, {4, 1, 1})},
        {{Opcode::Add, kF32, 0, 1, -1, 0}},
        {2},
        {},
        {},
        {}}});
  uint32_t seed = 11;
  for (const Shaped &c : cases) {
    checkFused(*device_, c.fc, c.dims, seed, exact());
    seed += 7;
  }
  // A broadcast operand whose dims do not fit the results: refused. The
  // program adds x [4, 6] (dims 0, 1) and b [5] (dims: `spanned`).
  TestTensor x = uniform(kF32, {4, 6}, 1), b = uniform(kF32, {5}, 2);
  auto adding = [&](int64_t spanned) {
    return makeCall(Opcode::FusedElementwise, {x, b}, {zeros(kF32, {4, 6})},
                    {1, int64_t(Opcode::Add), int64_t(kF32), 0, 1, -1, 0, 2, 0,
                     1, spanned});
  };
  checkFails(adding(1), {"fused_elementwise", "operand 1", "neither 1 nor"});
  checkFails(adding(2),
             {"fused_elementwise", "operand 1's dims must increase"});
}

/// A program that breaks a rule of the layout (here: a step reading a
/// register it does not follow) is an error Status on the device, not a
/// launch.
TEST_P(DeviceKernels, FusedElementwiseRejectsABadProgram) {
  TestTensor x = uniform(kF32, {7}, 1);
  checkFails(
      makeCall(Opcode::FusedElementwise, {x}, {zeros(kF32, {7})},
               {1, int64_t(Opcode::Neg), int64_t(kF32), 1, -1, -1, 0, 1}),
      {"fused_elementwise", "step 0"});
  // Integer division (it could fault) and a float step on integers.
  TestTensor n = randomBits(kU32, {7}, 2);
  checkFails(makeCall(Opcode::FusedElementwise, {n}, {zeros(kU32, {7})},
                      {1, int64_t(Opcode::Div), int64_t(kU32), 0, 0, -1, 0, 1}),
             {"fused_elementwise", "step 0", "does not take these dtypes"});
  checkFails(
      makeCall(Opcode::FusedElementwise, {n}, {zeros(kU32, {7})},
               {1, int64_t(Opcode::Exp), int64_t(kU32), 0, -1, -1, 0, 1}),
      {"fused_elementwise", "step 0", "does not take these dtypes"});
  // Floats and integers in one program, even without a convert between.
  checkFails(
      makeCall(Opcode::FusedElementwise, {n, x},
               {zeros(kU32, {7}), zeros(kF32, {7})},
               {2, int64_t(Opcode::Not), int64_t(kU32), 0, -1, -1, 0,
                int64_t(Opcode::Neg), int64_t(kF32), 1, -1, -1, 0, 2, 3}),
      {"fused_elementwise", "both float and integer registers"});
  // A convert between them.
  checkFails(
      makeCall(Opcode::FusedElementwise, {n}, {zeros(kF32, {7})},
               {1, int64_t(Opcode::Convert), int64_t(kF32), 0, -1, -1, 0, 1}),
      {"fused_elementwise", "step 0", "does not take these dtypes"});
  // 16-bit integers are no register type.
  TestTensor h = randomBits(kI16, {7}, 3);
  checkFails(
      makeCall(Opcode::FusedElementwise, {h}, {zeros(kI16, {7})},
               {1, int64_t(Opcode::Not), int64_t(kI16), 0, -1, -1, 0, 1}),
      {"fused_elementwise", "operand 0"});
}

//===--- ConvertGroup -----------------------------------------------------===//

/// Values a float -> float convert can get wrong: NaN, infinities, signed
/// zeros; halfway points of bf16 (1 + 2^-8), f16 (1 + 2^-11) and f32
/// (1 + 2^-24) and values just above them (f64 -> 16-bit through a
/// rounding to nearest f32 would land on the tie); f16's overflow
/// (65504 is its largest, 65520 rounds to infinity) and bf16's largest;
/// beyond f32 (an f64 source only); subnormals and underflow.
const double kConvertSpecials[] = {kNaN,
                                   -kNaN,
                                   kInf,
                                   -kInf,
                                   0.0,
                                   -0.0,
                                   1 + 0x1p-8,
                                   -(1 + 3 * 0x1p-8),
                                   1 + 0x1p-8 + 0x1p-23,
                                   1 + 0x1p-8 + 0x1p-40,
                                   1 + 0x1p-11,
                                   -(1 + 3 * 0x1p-11),
                                   1 + 0x1p-11 + 0x1p-23,
                                   1 + 0x1p-11 + 0x1p-40,
                                   1 + 0x1p-24,
                                   1 + 0x1p-24 + 0x1p-50,
                                   65504,
                                   65519.99,
                                   -65520,
                                   70000,
                                   0x1.fep127,
                                   0x1.ff8p127,
                                   -1e39,
                                   1e300,
                                   6e-8,
                                   1e-40,
                                   -1e-46,
                                   1.5 * 0x1p-149,
                                   1e-300};

/// Operand `t` of a group: every fourth one random bits (every exponent,
/// NaN payloads), the others uniform in a range of their own with the
/// special values at both ends.
TestTensor convertOperand(DType from, const std::vector<int64_t> &dims,
                          size_t t, uint32_t seed) {
  if (t % 4 == 3)
    return randomBits(from, dims, seed);
  const double range[] = {4, 1e5, 1e-6};
  TestTensor x = uniform(from, dims, seed, -range[t % 4], range[t % 4]);
  int64_t n = x.size(), count = int64_t(std::size(kConvertSpecials));
  for (int64_t j = 0; j < count && j < n; ++j) {
    x.set(j, kConvertSpecials[j]);
    x.set(n - 1 - j, kConvertSpecials[j]);
  }
  return x;
}

/// `c` on `device` as runOnDevice runs it, but with every tensor one
/// element past an aligned address, so that no operand or result is
/// aligned to more than its element (the CUDA kernel's unpacked path).
Status runMisaligned(Device &device, const Call &c,
                     std::vector<TestTensor> &results) {
  Stream &stream = device.computeStream();
  std::vector<std::unique_ptr<Buffer>> buffers;
  auto place = [&](const TestTensor &t, void *&data) {
    std::unique_ptr<Buffer> buffer;
    uint64_t width = dtypeSize(t.dtype());
    TRAINC_RETURN_IF_ERROR(device.allocate(bytesOf(t) + width, 64, buffer));
    data = static_cast<char *>(buffer->data()) + width;
    buffers.push_back(std::move(buffer));
    return okStatus();
  };
  std::vector<void *> in(c.inputs.size()), out(c.outputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    TRAINC_RETURN_IF_ERROR(place(c.inputs[i], in[i]));
    TRAINC_RETURN_IF_ERROR(device.copyToDevice(static_cast<char *>(in[i]),
                                               c.inputs[i].ref().data,
                                               bytesOf(c.inputs[i]), stream));
  }
  for (size_t i = 0; i < c.outputs.size(); ++i)
    TRAINC_RETURN_IF_ERROR(place(c.outputs[i], out[i]));
  TRAINC_RETURN_IF_ERROR(invoke(
      c, in, out, [&](const KernelCall &call) { return device.launch(call); }));
  results = c.outputs;
  for (size_t i = 0; i < results.size(); ++i)
    TRAINC_RETURN_IF_ERROR(device.copyToHost(results[i].ref().data,
                                             static_cast<const char *>(out[i]),
                                             bytesOf(results[i]), stream));
  return stream.synchronize();
}

/// convert_group gives each pair the bits of its own convert on the same
/// device (cuda/FusedElementwise.cu calls the unfused kernel's element
/// rules; the CPU runs the convert): groups of one tensor, of a launch's
/// 32 and past it (the CUDA kernel's 33rd and 40th tensors start another
/// launch), empty tensors among them, with tensors at aligned and
/// misaligned addresses.
TEST_P(DeviceKernels, ConvertGroupMatchesItsConverts) {
  const std::pair<DType, DType> pairs[] = {
      {kF32, kBF16}, {kF32, kF16}, {kF64, kBF16}, {kF64, kF32}, {kBF16, kF32}};
  const std::vector<int64_t> shapes[] = {{1031}, {0},    {7},   {3, 129},
                                         {1},    {8197}, {2, 0}};
  uint32_t seed = 1;
  for (auto [from, to] : pairs)
    for (size_t size : {1, 3, 32, 33, 40}) {
      std::vector<TestTensor> operands, results, want;
      for (size_t t = 0; t < size; ++t) {
        const std::vector<int64_t> &dims = shapes[t % std::size(shapes)];
        operands.push_back(convertOperand(from, dims, t, seed++));
        results.push_back(zeros(to, dims));
        // Unfused: the pair's convert as its own instruction.
        Call convert =
            makeCall(Opcode::Convert, {operands.back()}, {zeros(to, dims)});
        std::vector<TestTensor> out, back;
        Status s = runOnDevice(*device_, convert, out, back);
        ASSERT_TRUE(s.ok()) << describe(convert) << ": " << s.toString();
        want.push_back(out[0]);
      }
      Call group = makeCall(Opcode::ConvertGroup, operands, results);
      SCOPED_TRACE(describe(group));
      std::vector<TestTensor> got, back, gotMisaligned;
      Status s = runOnDevice(*device_, group, got, back);
      ASSERT_TRUE(s.ok()) << s.toString();
      s = runMisaligned(*device_, group, gotMisaligned);
      ASSERT_TRUE(s.ok()) << "misaligned: " << s.toString();
      for (size_t t = 0; t < size; ++t) {
        EXPECT_TRUE(matches(got[t], want[t], kSameBits, exact()))
            << "result " << t;
        EXPECT_TRUE(matches(gotMisaligned[t], want[t], kSameBits, exact()))
            << "result " << t << ", misaligned";
        EXPECT_TRUE(matches(back[t], operands[t], kSameBytes, true))
            << "operand " << t << " changed";
      }
    }
}

/// Pairs of different dtypes in one group are an error Status naming the
/// pair, on both devices (the executable's validation rejects such a
/// group before any kernel runs).
TEST_P(DeviceKernels, ConvertGroupRejectsMixedDTypes) {
  Call c = makeCall(Opcode::ConvertGroup,
                    {uniform(kF32, {7}, 1), uniform(kF64, {7}, 2)},
                    {zeros(kBF16, {7}), zeros(kBF16, {7})});
  SCOPED_TRACE(describe(c));
  std::vector<TestTensor> results, operands;
  Status s = runOnDevice(*device_, c, results, operands);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
  for (const char *word : {"convert_group", "pair 1"})
    EXPECT_NE(s.message().find(word), std::string::npos)
        << "'" << word << "' is not in: " << s.toString();
  // The device runs a valid call again.
  check(makeCall(Opcode::Neg, {uniform(kF32, {3, 37}, 99)},
                 {zeros(kF32, {3, 37})}));
}

} // namespace
} // namespace trainc
