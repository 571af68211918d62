//===- DeviceKernelsTest.cpp - Every opcode on a device vs the CPU --------===//
//
// A conformance suite for devices. Each test builds kernel calls from
// random inputs (odd sizes such as 1, 3, 37 and 129, every dtype an op
// takes), runs each call twice and compares the results:
//   - the reference: cpu::runCpuKernel on host memory;
//   - the device under test, through the Device interface only: one Buffer
//     per operand and result, copyToDevice, launch (a KernelCall whose
//     context is null, or carries only the step: the device fills in its
//     stream), copyToHost, computeStream().synchronize().
// It also checks that a kernel leaves its operands alone (unless a result
// is their memory), and that data-dependent errors (an index out of range)
// come back as a Status from launch or from synchronize.
//
// The suite is instantiated for "cpu" and "cuda":
//   - "cpu" proves the harness: the CPU device runs the reference kernels,
//     so every result must equal the reference byte for byte, whatever the
//     case's tolerance says;
//   - "cuda" checks the CUDA kernels. Where createDevice("cuda") fails with
//     `unavailable` (no GPU, or a runtime built without CUDA) or `not
//     found`, every test calls GTEST_SKIP() with that message, so ctest
//     reports Skipped, never Passed.
//
// Tolerances (for "cuda"; see the Tolerance helpers below for each bound):
//   - byte for byte: data movement (broadcast, reshape, transpose, slice,
//     concatenate, gather), which copies bytes, NaN payloads included;
//   - bit for bit (NaN matching any NaN: payloads are not part of the
//     contract): IEEE arithmetic, compare, select, convert, iota, and every
//     kernel whose math the two devices share (runtime/src/math/,
//     -fmad=false on the GPU): f32 exp, tanh and erf, gelu, gelu_grad,
//     dropout, adamw_update, and the kernels whose CUDA files state the
//     CPU's summation order (layer/rms norm, norm_grad, norm_grad_params,
//     scatter_add, sum_of_squares, and softmax below f64);
//   - |got - want| <= rel * max |want| elementwise, per result: where the
//     CPU calls libm and the GPU its own math library, and where the GPU
//     sums in another order (GEMMs through cuBLASLt, reductions, attention,
//     cross-entropy, f64 softmax).
//
//===----------------------------------------------------------------------===//

#include "DeviceKernelsHarness.h"

namespace trainc {
namespace {

using namespace device_kernels;

[[maybe_unused]] ::testing::Environment *const kDeviceCache =
    ::testing::AddGlobalTestEnvironment(new DeviceCache);

INSTANTIATE_TEST_SUITE_P(Devices, DeviceKernels,
                         ::testing::Values("cpu", "cuda"),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                           return i.param;
                         });

//===--- Elementwise ------------------------------------------------------===//

TEST_P(DeviceKernels, UnaryFloat) {
  struct Op {
    Opcode op;
    double lo, hi;
  } ops[] = {{Opcode::Neg, -4, 4},     {Opcode::Abs, -4, 4},
             {Opcode::Exp, -10, 10},   {Opcode::Log, 0, 8},
             {Opcode::Tanh, -6, 6},    {Opcode::Erf, -4, 4},
             {Opcode::Sqrt, 0, 8},     {Opcode::Rsqrt, 0.01, 8},
             {Opcode::Cos, -10, 10},   {Opcode::Sin, -10, 10},
             {Opcode::Floor, -10, 10}, {Opcode::Round, -10, 10}};
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const Op &o : ops)
      for (const auto &dims : kElementwiseShapes) {
        // neg, abs, sqrt and 1 / sqrt are IEEE operations, floor and
        // round exact; f32 exp, tanh and erf are math/Transcendental.h's
        // on both devices.
        bool ieee = o.op == Opcode::Neg || o.op == Opcode::Abs ||
                    o.op == Opcode::Sqrt || o.op == Opcode::Rsqrt ||
                    o.op == Opcode::Floor || o.op == Opcode::Round;
        bool shared =
            t == kF32 && (o.op == Opcode::Exp || o.op == Opcode::Tanh ||
                          o.op == Opcode::Erf);
        check(makeCall(o.op, {uniform(t, dims, seed++, o.lo, o.hi)},
                       {zeros(t, dims)}),
              ieee || shared ? kSameBits : mathLibrary(t));
      }
}

TEST_P(DeviceKernels, UnaryInteger) {
  uint32_t seed = 1;
  for (DType t : {kI32, kI64, DType::U32, DType::U64})
    for (Opcode op : {Opcode::Neg, Opcode::Abs})
      for (const auto &dims : kElementwiseShapes)
        check(makeCall(op, {randomBits(t, dims, seed++)}, {zeros(t, dims)}));
}

TEST_P(DeviceKernels, BinaryFloat) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (Opcode op : {Opcode::Add, Opcode::Sub, Opcode::Mul, Opcode::Div,
                      Opcode::Max, Opcode::Min})
      for (const auto &dims : kElementwiseShapes) {
        TestTensor a = uniform(t, dims, seed++, -4, 4);
        TestTensor b = uniform(t, dims, seed++, -4, 4);
        if (a.size() > 3) { // max and min propagate NaN from either side.
          a.set(0, kNaN);
          b.set(1, kNaN);
          a.set(2, kNaN);
          b.set(2, kNaN);
        }
        check(makeCall(op, {a, b}, {zeros(t, dims)}));
      }
  for (DType t : kFloatTypes)
    for (const auto &dims : kElementwiseShapes)
      check(makeCall(Opcode::Pow,
                     {uniform(t, dims, seed++, 0.1, 3),
                      uniform(t, dims, seed++, -3, 3)},
                     {zeros(t, dims)}),
            mathLibrary(t));
  // fmod is exact: the same bits on every device (quotients up to 2^20,
  // negative values and zero divisors among them).
  for (DType t : kFloatTypes)
    for (const auto &dims : kElementwiseShapes) {
      TestTensor a = uniform(t, dims, seed++, -1e6, 1e6);
      TestTensor b = uniform(t, dims, seed++, -3, 3);
      if (b.size() > 1)
        b.set(1, 0.0);
      check(makeCall(Opcode::Remainder, {a, b}, {zeros(t, dims)}));
    }
}

TEST_P(DeviceKernels, BinaryInteger) {
  uint32_t seed = 1;
  for (DType t : {kI32, kI64})
    for (const auto &dims : kElementwiseShapes) {
      // Full-range values: add, sub and mul wrap around.
      for (Opcode op :
           {Opcode::Add, Opcode::Sub, Opcode::Mul, Opcode::Max, Opcode::Min})
        check(makeCall(
            op, {randomBits(t, dims, seed), randomBits(t, dims, seed + 1)},
            {zeros(t, dims)}));
      // Division truncates toward zero; no divisor is 0 or -1 (INT_MIN / -1
      // is an error on the CPU).
      TestTensor divisor = uniform(t, dims, seed + 2, -1000, 1000);
      for (int64_t i = 0; i < divisor.size(); ++i)
        if (divisor.get(i) == 0 || divisor.get(i) == -1)
          divisor.set(i, 7);
      check(makeCall(Opcode::Div, {randomBits(t, dims, seed + 3), divisor},
                     {zeros(t, dims)}));
      seed += 4;
    }
  // ui32 and ui64 (jax.random's words and counters): wrapping arithmetic,
  // unsigned order and division (no divisor 0; 0 / all ones, the signed
  // INT_MIN / -1's bits, is no overflow).
  for (DType t : {DType::U32, DType::U64})
    for (const auto &dims : kElementwiseShapes) {
      for (Opcode op :
           {Opcode::Add, Opcode::Sub, Opcode::Mul, Opcode::Max, Opcode::Min})
        check(makeCall(
            op, {randomBits(t, dims, seed), randomBits(t, dims, seed + 1)},
            {zeros(t, dims)}));
      TestTensor dividend = randomBits(t, dims, seed + 3);
      TestTensor divisor = randomBits(t, dims, seed + 2);
      for (int64_t i = 0; i < divisor.size(); ++i)
        if (divisor.get(i) == 0)
          divisor.set(i, 7);
      dividend.set(0, 0);
      std::memset(divisor.ref().data, 0xff, dtypeSize(t)); // all ones
      check(makeCall(Opcode::Div, {dividend, divisor}, {zeros(t, dims)}));
      seed += 4;
    }
}

TEST_P(DeviceKernels, Bitwise) {
  // Full-range operands, so most shifts are by the width or more (0, or
  // every bit the sign bit); math/Bits.h on both devices: the same bits.
  uint32_t seed = 1;
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                  DType::U16, DType::U32, DType::U64})
    for (const auto &dims : kElementwiseShapes) {
      for (Opcode op :
           {Opcode::And, Opcode::Or, Opcode::Xor, Opcode::ShiftLeft,
            Opcode::ShiftRightLogical, Opcode::ShiftRightArithmetic}) {
        check(makeCall(
            op, {randomBits(t, dims, seed), randomBits(t, dims, seed + 1)},
            {zeros(t, dims)}));
        // Shifts within the width.
        double width = double(dtypeSize(t) * 8);
        check(makeCall(op,
                       {randomBits(t, dims, seed + 2),
                        uniform(t, dims, seed + 3, 0, width)},
                       {zeros(t, dims)}));
        seed += 4;
      }
      for (Opcode op :
           {Opcode::Not, Opcode::PopCount, Opcode::CountLeadingZeros})
        check(makeCall(op, {randomBits(t, dims, seed++)}, {zeros(t, dims)}));
    }
  for (const auto &dims : kElementwiseShapes)
    check(makeCall(Opcode::Bitcast, {randomBits(DType::U32, dims, seed++)},
                   {zeros(kF32, dims)}));
}

TEST_P(DeviceKernels, CompareEveryDirection) {
  uint32_t seed = 1;
  std::vector<int64_t> dims = {3, 129};
  for (DType t : kAllTypes) {
    // Small integers, so that many pairs are equal.
    TestTensor a = uniform(t, dims, seed++, -3, 3);
    TestTensor b = uniform(t, dims, seed++, -3, 3);
    if (isFloat(t))
      for (int64_t i = 0; i < a.size(); ++i) {
        a.set(i, std::floor(a.get(i)));
        b.set(i, std::floor(b.get(i)));
      }
    if (isFloat(t)) { // Ordered comparisons: NaN is false except for NE.
      a.set(0, kNaN);
      b.set(1, kNaN);
      a.set(2, kNaN);
      b.set(2, kNaN);
      a.set(3, kInf);
      b.set(3, kInf);
    }
    for (int64_t direction = 0; direction < 6; ++direction)
      check(makeCall(Opcode::Compare, {a, b}, {zeros(kI1, dims)}, {direction}));
  }
  // Unsigned order: small values (many ties) and values above 2^31.
  for (DType t : {DType::U32, DType::U64}) {
    TestTensor a = uniform(t, dims, seed++, 0, 6);
    TestTensor b = uniform(t, dims, seed++, 0, 6);
    a.set(0, 4294967295.0);
    b.set(1, 2147483648.0);
    // The top bit set (above every small value only in unsigned order).
    std::memset(static_cast<uint8_t *>(a.ref().data) + 2 * dtypeSize(t), 0xff,
                dtypeSize(t));
    for (int64_t direction = 0; direction < 6; ++direction)
      check(makeCall(Opcode::Compare, {a, b}, {zeros(kI1, dims)}, {direction}));
  }
}

TEST_P(DeviceKernels, Select) {
  uint32_t seed = 1;
  for (DType t : kAllTypes)
    for (const auto &dims : kElementwiseShapes) {
      check(
          makeCall(Opcode::Select,
                   {uniform(kI1, dims, seed), uniform(t, dims, seed + 1, -9, 9),
                    uniform(t, dims, seed + 2, -9, 9)},
                   {zeros(t, dims)}));
      seed += 3;
    }
}

/// Half the elements (the even ones) uniform in [-300, 300), the others
/// random bits; the first ones special values (ties, bounds, NaN, inf).
TestTensor convertInput(DType t, const std::vector<int64_t> &dims,
                        uint32_t seed) {
  TestTensor x = randomBits(t, dims, seed);
  if (t == kI1)
    return x;
  // ui32 holds no negative value to set.
  bool isUnsigned = t == DType::U32 || t == DType::U64;
  TestTensor u = uniform(t, dims, seed + 1, isUnsigned ? 0 : -300, 300);
  for (int64_t i = 0; i < x.size(); i += 2)
    x.set(i, u.get(i));
  const double floats[] = {kNaN, kInf, -kInf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5,
                           -2.5, 3e9, -3e9, 65519, 65520, 1e-40, 0x1p31,
                           -0x1p31 - 1, 0x1p63, 1 + 0x1p-8,
                           1 + 0x1p-11 + 0x1p-40,
                           // The unsigned bounds and just below them.
                           0x1p32, 4294967295.75, 0x1p64, 0x1.fffffffffffffp63};
  const double ints[] = {0, 1, -1, 2049, 2051, 65519, 65520, 0x1p24 + 1};
  // At odd positions, so that the uniform half stays.
  int64_t i = 1;
  for (double v :
       isFloat(t) ? std::vector<double>(std::begin(floats), std::end(floats))
                  : std::vector<double>(std::begin(ints), std::end(ints))) {
    if (i >= x.size())
      break;
    x.set(i, isUnsigned && v < 0 ? 4294967295.0 : v);
    i += 2;
  }
  return x;
}

TEST_P(DeviceKernels, Convert) {
  const std::pair<DType, DType> pairs[] = {
      {kF32, kBF16},
      {kF32, kF16},
      {kF32, kF64},
      {kF32, kI32},
      {kF32, kI64},
      {kF32, kI1},
      {kBF16, kF32},
      {kF16, kF32},
      {kF64, kF32},
      {kI32, kF32},
      {kI64, kF32},
      {kI1, kF32},
      {kF64, kBF16},
      {kF64, kF16},
      {kBF16, kF16},
      {kF16, kBF16},
      {kF64, kI64},
      {kF64, kI32},
      {kBF16, kI32},
      {kF16, kI64},
      {kI64, kBF16},
      {kI32, kF16},
      {kI64, kF64},
      {kI64, kI32},
      {kI32, kI64},
      {kI1, kBF16},
      {kI64, kI1},
      {kBF16, kF64},
      {kI1, kI64},
      {kF16, kI1},
      // ui32 and ui64, as jax.random converts its words and counters.
      {kI32, DType::U32},
      {DType::U32, kI32},
      {DType::U32, kF32},
      {kF32, DType::U32},
      {kF64, DType::U32},
      {DType::U32, kBF16},
      {DType::U64, DType::U32},
      {kF64, DType::U64},
      {DType::U64, kF32},
      {DType::U64, kBF16},
      {kI32, DType::U64},
      {kI1, DType::U32},
      {DType::U64, kF64},
      {kBF16, DType::U32},
      {kF16, DType::U64},
      {DType::U32, DType::U64},
      {DType::U64, kI64},
      {DType::U32, kI64},
      {kI64, DType::U32}};
  uint32_t seed = 1;
  for (auto [from, to] : pairs)
    for (const auto &dims : {std::vector<int64_t>{1}, {3, 129}}) {
      SCOPED_TRACE(std::string(dtypeName(from)) + " -> " + dtypeName(to));
      check(makeCall(Opcode::Convert, {convertInput(from, dims, seed++)},
                     {zeros(to, dims)}));
    }
}

//===--- DotGeneral -------------------------------------------------------===//

bool contains(const std::vector<int64_t> &v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

/// The dims of `dims` not in `reduced`, in order.
std::vector<int64_t> keptDims(const std::vector<int64_t> &dims,
                              const std::vector<int64_t> &reduced) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    if (!contains(reduced, d))
      kept.push_back(dims[d]);
  return kept;
}

/// dot_general of `lhs` and `rhs`: result dims batch, lhs free, rhs free.
Call dotCall(TestTensor lhs, TestTensor rhs, const DotDims &dd,
             OperandRounding rounding = OperandRounding::Exact) {
  std::vector<int64_t> dims;
  for (int64_t d : dd.lhsBatch)
    dims.push_back(lhs.dims()[d]);
  for (int64_t d = 0; d < int64_t(lhs.dims().size()); ++d)
    if (!contains(dd.lhsBatch, d) && !contains(dd.lhsContract, d))
      dims.push_back(lhs.dims()[d]);
  for (int64_t d = 0; d < int64_t(rhs.dims().size()); ++d)
    if (!contains(dd.rhsBatch, d) && !contains(dd.rhsContract, d))
      dims.push_back(rhs.dims()[d]);
  DType t = lhs.dtype();
  return makeCall(Opcode::DotGeneral, {std::move(lhs), std::move(rhs)},
                  {zeros(t, dims)}, dotInts(dd, rounding));
}

TEST_P(DeviceKernels, DotGeneral) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
  } cases[] = {
      {kF32, {37, 29}, {29, 23}, {{}, {}, {1}, {0}}},    // plain
      {kF32, {1, 129}, {129, 1}, {{}, {}, {1}, {0}}},    // 1 x 1
      {kF32, {3, 1}, {1, 37}, {{}, {}, {1}, {0}}},       // K = 1
      {kF32, {129, 257}, {257, 65}, {{}, {}, {1}, {0}}}, // tiles + remainders
      {kF32, {3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}},   // batched
      {kF32, {4, 6, 32}, {32, 24}, {{}, {}, {2}, {0}}},       // linear
      {kF32, {19, 11}, {13, 19}, {{}, {}, {0}, {1}}},         // A^T B^T
      {kF32, {2, 19, 11}, {2, 13, 19}, {{0}, {0}, {1}, {2}}}, // batched
      {kF32, {2, 37, 11}, {2, 37, 13}, {{0}, {0}, {1}, {1}}}, // A^T B
      {kF32, {7, 3, 10}, {10, 3, 6}, {{1}, {1}, {2}, {0}}},   // batch inside
      {kF32, {4, 5, 6}, {6, 7, 4}, {{}, {}, {2, 0}, {0, 2}}}, // 2 contracting
      {kF32, {2, 3, 4, 5, 2}, {3, 4, 5, 2}, {{0, 2}, {3, 1}, {3}, {2}}},
      {kF32, {6}, {4}, {{}, {}, {}, {}}}, // outer
      {kF64, {2, 33, 40}, {2, 40, 21}, {{0}, {0}, {2}, {1}}},
      {kF64, {40, 33}, {2, 40, 21}, {{}, {}, {0}, {1}}},
      {kBF16, {3, 5, 64}, {64, 9}, {{}, {}, {2}, {0}}},
      {kBF16, {64, 37}, {64, 9}, {{}, {}, {0}, {0}}},
      {kBF16, {2, 129, 64}, {2, 37, 64}, {{0}, {0}, {2}, {2}}}, // Q K^T
      {kF16, {3, 37, 64}, {3, 64, 129}, {{0}, {0}, {2}, {1}}},
  };
  uint32_t seed = 1;
  for (const Case &c : cases) {
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    check(dotCall(uniform(c.t, c.lhs, seed), uniform(c.t, c.rhs, seed + 1),
                  c.dims),
          gemmOf(c.t, k));
    seed += 2;
  }
}

// --precision tf32: the CPU rounds each operand to TF32 (to nearest, ties
// away) and sums in f32; cuBLASLt's FAST_TF32 mode may convert by
// truncation, or, for some shapes, not use TF32 at all. Either way each
// product differs from the CPU's by at most 3 2^-11 |a b| (each operand by
// at most 2^-11 relative from its TF32 rounding, or 2^-10 when truncated),
// so the results by 3 2^-11 sum |ab| ~ 3 2^-11 K / 4 against max |c| ~
// sqrt(K) (uniform operands, as gemmOf): sqrt(K) 2^-11 covers it with the
// sums' own rounding on top. This bound cannot tell TF32 from plain f32 on
// the device (cuBLASLt may choose either); the rounding itself is checked
// bit for bit on the CPU (CpuDotGeneral.Tf32*).
TEST_P(DeviceKernels, DotGeneralTf32) {
  struct Case {
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
  } cases[] = {
      {{37, 29}, {29, 23}, {{}, {}, {1}, {0}}},
      {{129, 257}, {257, 65}, {{}, {}, {1}, {0}}},
      {{3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}},
      {{4, 6, 256}, {256, 24}, {{}, {}, {2}, {0}}},
  };
  uint32_t seed = 201;
  for (const Case &c : cases) {
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    Tolerance tol = gemmOf(kF32, k);
    tol.rel += std::sqrt(double(k)) * 0x1p-11;
    check(dotCall(uniform(kF32, c.lhs, seed), uniform(kF32, c.rhs, seed + 1),
                  c.dims, OperandRounding::Tf32),
          tol);
    seed += 2;
  }
}

// A widened 16-bit product (graph.dot_general's f32_result): bf16 or f16
// operands, the f32 sums as the result. Within f32's GEMM tolerance: the
// products of 16-bit operands are exact in f32, and only the order of the
// f32 sums differs.
TEST_P(DeviceKernels, DotGeneralF32Result) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
  } cases[] = {
      {kBF16, {37, 29}, {29, 23}, {{}, {}, {1}, {0}}},
      {kF16, {129, 257}, {257, 65}, {{}, {}, {1}, {0}}},
      {kBF16, {3, 9, 17}, {3, 17, 5}, {{0}, {0}, {2}, {1}}},
      {kF16, {24, 6}, {24, 40}, {{}, {}, {0}, {0}}}, // a weight gradient
  };
  uint32_t seed = 301;
  for (const Case &c : cases) {
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    Call call = dotCall(uniform(c.t, c.lhs, seed),
                        uniform(c.t, c.rhs, seed + 1), c.dims);
    call.outputs[0] = zeros(kF32, call.outputs[0].dims());
    check(call, gemmOf(kF32, k));
    seed += 2;
  }
}

// dot_general_bias: the bias added to each row of the product's sums, then
// one rounding (the CPU reference: CpuDotGeneral.BiasIsTheAddBitForBit; on
// the GPU cuBLASLt's bias epilogue). One rounding of the result type more
// in the tolerance covers the GPU's fallback, a separate kernel adding the
// bias to the rounded product where no algorithm has the epilogue.
TEST_P(DeviceKernels, DotGeneralBias) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs, bias;
    DotDims dims;
  } cases[] = {
      {kF32, {4, 6, 32}, {24, 32}, {24}, {{}, {}, {2}, {1}}},    // linear
      {kF32, {129, 257}, {257, 65}, {65}, {{}, {}, {1}, {0}}},   // remainders
      {kF32, {3, 9, 17}, {3, 17, 5}, {5}, {{0}, {0}, {2}, {1}}}, // batched
      {kF32, {2, 3, 7}, {7, 4, 5}, {4, 5}, {{}, {}, {2}, {0}}},  // bias 2-D
      {kF32, {3, 0}, {0, 5}, {5}, {{}, {}, {1}, {0}}},           // K = 0
      {kF64, {33, 40}, {40, 21}, {21}, {{}, {}, {1}, {0}}},
      {kBF16, {3, 5, 64}, {9, 64}, {9}, {{}, {}, {2}, {1}}},
      {kF16, {3, 37, 64}, {64, 129}, {129}, {{}, {}, {2}, {0}}},
  };
  uint32_t seed = 101;
  for (const Case &c : cases) {
    Call call = dotCall(uniform(c.t, c.lhs, seed),
                        uniform(c.t, c.rhs, seed + 1), c.dims);
    call.op = Opcode::DotGeneralBias;
    call.inputs.push_back(uniform(c.t, c.bias, seed + 2));
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    Tolerance tol = gemmOf(c.t, k);
    tol.rel += oneUlp(c.t);
    check(call, tol);
    seed += 3;
  }
}

// dot_general_bias_gelu: the GELU of dot_general_bias's result and that
// result (the CPU reference: dot_general_bias, then gelu of its rounded
// result). On the GPU, 16-bit tanh GELUs whose rows are a multiple of 8
// (GPT-2's MLP) take cuBLASLt's GELU_AUX_BIAS epilogue, which applies its
// own GELU to the unrounded f32 sums; the rest run dot_general_bias and
// the gelu kernel. The pre-activation is held to DotGeneralBias's bound;
// the GELU, whose slope is at most 1.13, to twice that and one ulp more
// for the epilogue's own GELU (a tanh.approx-class tanh is within 2^-11,
// below a 16-bit ulp). An f32 case takes the fallback, so an erf form or
// an approximation used in its place would fail there.
TEST_P(DeviceKernels, DotGeneralBiasGelu) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs, bias;
    DotDims dims;
    bool tanh;
  } cases[] = {
      {kBF16, {4, 16, 64}, {96, 64}, {96}, {{}, {}, {2}, {1}}, true}, // MLP
      {kBF16, {3, 9, 40}, {3, 40, 24}, {24}, {{0}, {0}, {2}, {1}}, true},
      {kF16, {2, 33, 64}, {64, 256}, {256}, {{}, {}, {2}, {0}}, true},
      {kF16, {3, 37, 64}, {64, 129}, {129}, {{}, {}, {2}, {0}}, true},
      {kBF16, {5, 64}, {40, 64}, {40}, {{}, {}, {1}, {1}}, false}, // erf
      {kF32, {4, 6, 32}, {24, 32}, {24}, {{}, {}, {2}, {1}}, true},
      {kF32, {7, 33}, {33, 17}, {17}, {{}, {}, {1}, {0}}, false},
      {kF64, {9, 20}, {20, 11}, {11}, {{}, {}, {1}, {0}}, true},
      {kBF16, {3, 0}, {0, 16}, {16}, {{}, {}, {1}, {0}}, true}, // K = 0
  };
  uint32_t seed = 151;
  for (const Case &c : cases) {
    Call call = dotCall(uniform(c.t, c.lhs, seed),
                        uniform(c.t, c.rhs, seed + 1), c.dims);
    call.op = Opcode::DotGeneralBiasGelu;
    call.inputs.push_back(uniform(c.t, c.bias, seed + 2));
    call.ints.push_back(c.tanh);
    call.outputs.push_back(zeros(c.t, call.outputs[0].dims()));
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    Tolerance pre = gemmOf(c.t, k);
    pre.rel += oneUlp(c.t);
    Tolerance gelu = pre;
    gelu.rel = 2 * pre.rel + oneUlp(c.t);
    check(call, std::vector<Tolerance>{gelu, pre});
    seed += 3;
  }
}

// dot_general_gelu_grad: the product times gelu' of the pre-activation
// (the CPU reference: dot_general rounded, then gelu_grad). On the GPU,
// bf16 tanh cases whose rows are a multiple of 8 take cuBLASLt's DGELU
// epilogue, its own gelu' applied to the unrounded f32 sums; the rest
// (f16 included) run the product and the gelu_grad kernel in place. gelu'
// lies in [-0.13, 1.13], so the result is held to the product's bound
// scaled by 1.13, one ulp more, and for the epilogue's own derivative an
// error of its tanh (2^-11 for a tanh.approx-class one) times
// |d gelu' / d t|, at most 10 over the pre-activations drawn (uniform in
// [-4, 4], the size a GELU sees).
TEST_P(DeviceKernels, DotGeneralGeluGrad) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
    bool tanh;
  } cases[] = {
      {kBF16, {4, 16, 64}, {64, 96}, {{}, {}, {2}, {0}}, true}, // MLP
      {kBF16, {3, 9, 40}, {3, 40, 24}, {{0}, {0}, {2}, {1}}, true},
      {kF16, {2, 33, 64}, {64, 256}, {{}, {}, {2}, {0}}, true},
      {kF16, {3, 37, 64}, {64, 129}, {{}, {}, {2}, {0}}, true},
      {kBF16, {5, 64}, {40, 64}, {{}, {}, {1}, {1}}, false}, // erf
      {kF32, {4, 6, 32}, {24, 32}, {{}, {}, {2}, {1}}, true},
      {kF64, {9, 20}, {20, 11}, {{}, {}, {1}, {0}}, false},
      {kBF16, {3, 0}, {0, 16}, {{}, {}, {1}, {0}}, true}, // K = 0
  };
  uint32_t seed = 181;
  for (const Case &c : cases) {
    Call call = dotCall(uniform(c.t, c.lhs, seed),
                        uniform(c.t, c.rhs, seed + 1), c.dims);
    call.op = Opcode::DotGeneralGeluGrad;
    call.inputs.push_back(
        uniform(c.t, call.outputs[0].dims(), seed + 2, -4.0, 4.0));
    call.ints.push_back(c.tanh);
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    Tolerance tol = gemmOf(c.t, k);
    tol.rel = 2 * tol.rel + oneUlp(c.t) + (c.t == kBF16 ? 10 * 0x1p-11 : 0);
    check(call, tol);
    seed += 3;
  }
}

// dot_general_bias_grad: the product and the sum of one operand over the
// contraction (the CPU reference: CpuDotGeneral.
// BiasGradIsTheProductAndTheSumBitForBit; on the GPU cuBLASLt's BGRADB or
// BGRADA epilogue where the sum has the product's type and no TF32, else
// the ReduceSum kernel after the product). The sum is held to the
// product's K-term bound in its result type (the epilogue sums over K in
// f32 in cuBLASLt's order, not in f64); an f32 result is held to f32's, so
// a widened product or sum rounded to 16 bits fails. TF32 adds
// DotGeneralTf32's bound.
TEST_P(DeviceKernels, DotGeneralBiasGrad) {
  struct Case {
    DType t;
    std::vector<int64_t> lhs, rhs;
    DotDims dims;
    bool sumRhs;
    DType product, sum;
    OperandRounding rounding = OperandRounding::Exact;
  } cases[] = {
      // dy^T x, db = sum(dy): a linear layer's gradients.
      {kF32,
       {4, 33, 40},
       {4, 33, 24},
       {{}, {}, {0, 1}, {0, 1}},
       false,
       kF32,
       kF32},
      // x^T dy (Conv1D): rhs summed.
      {kF32,
       {4, 33, 24},
       {4, 33, 40},
       {{}, {}, {0, 1}, {0, 1}},
       true,
       kF32,
       kF32},
      // bf16 training: f32 product and sum, at GPT-like sizes with
      // remainders (the epilogue).
      {kBF16,
       {8, 128, 97},
       {8, 128, 64},
       {{}, {}, {0, 1}, {0, 1}},
       false,
       kF32,
       kF32},
      {kBF16,
       {8, 128, 64},
       {8, 128, 97},
       {{}, {}, {0, 1}, {0, 1}},
       true,
       kF32,
       kF32},
      // fp16 training: an f32 product and an f16 sum (the fallback).
      {kF16, {1024, 48}, {1024, 40}, {{}, {}, {0}, {0}}, false, kF32, kF16},
      {kF16, {1024, 48}, {1024, 40}, {{}, {}, {0}, {0}}, true, kF32, kF16},
      // 16-bit product and sum; f64; TF32 (the fallback); operands
      // contracting their last dim, read in place: cuBLASLt's BGRADB takes
      // only a transposed B and BGRADA only an untransposed A, so these
      // take the fallback (an H200 refused both, and the first of them
      // then failed with the epilogue's bias pointer left set).
      {kF16, {257, 33}, {257, 65}, {{}, {}, {0}, {0}}, false, kF16, kF16},
      {kF64, {40, 21}, {40, 33}, {{}, {}, {0}, {0}}, true, kF64, kF64},
      {kF32,
       {300, 21},
       {300, 33},
       {{}, {}, {0}, {0}},
       false,
       kF32,
       kF32,
       OperandRounding::Tf32},
      {kF32, {24, 129}, {9, 129}, {{}, {}, {1}, {1}}, false, kF32, kF32},
      {kF32, {9, 129}, {24, 129}, {{}, {}, {1}, {1}}, true, kF32, kF32},
      {kBF16, {24, 129}, {9, 129}, {{}, {}, {1}, {1}}, false, kF32, kF32},
      // Empty: a contraction (zeros), a product with a sum (no lhs free
      // elements, rhs summed), a product without one.
      {kF32, {0, 5}, {0, 7}, {{}, {}, {0}, {0}}, false, kF32, kF32},
      {kF32, {6, 0}, {6, 7}, {{}, {}, {0}, {0}}, true, kF32, kF32},
      {kBF16, {6, 0}, {6, 7}, {{}, {}, {0}, {0}}, false, kF32, kF32},
  };
  uint32_t seed = 401;
  for (const Case &c : cases) {
    Call call = dotCall(uniform(c.t, c.lhs, seed),
                        uniform(c.t, c.rhs, seed + 1), c.dims, c.rounding);
    call.op = Opcode::DotGeneralBiasGrad;
    call.ints.push_back(c.sumRhs);
    const std::vector<int64_t> &summed = c.sumRhs ? c.rhs : c.lhs;
    std::vector<int64_t> sumDims =
        keptDims(summed, c.sumRhs ? c.dims.rhsContract : c.dims.lhsContract);
    call.outputs[0] = zeros(c.product, call.outputs[0].dims());
    call.outputs.push_back(zeros(c.sum, sumDims));
    int64_t k = 1;
    for (int64_t d : c.dims.lhsContract)
      k *= c.lhs[d];
    // The looser of the two results' bounds (a 16-bit one adds its ulp).
    Tolerance tol = gemmOf(c.product, k);
    tol.rel = std::max(tol.rel, gemmOf(c.sum, k).rel);
    if (c.rounding == OperandRounding::Tf32)
      tol.rel += std::sqrt(double(k)) * 0x1p-11;
    check(call, tol);
    seed += 2;
  }
}

//===--- Reductions -------------------------------------------------------===//

/// The reduced dims the reduction tests take of a rank-3 operand: none,
/// each, pairs (one unsorted) and all.
const std::vector<std::vector<int64_t>> kReductions = {
    {}, {0}, {1}, {2}, {0, 2}, {2, 1}, {0, 1, 2}};

TEST_P(DeviceKernels, Reductions) {
  uint32_t seed = 1;
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{3, 37, 129}, {129, 1, 5}})
    for (DType t : {kF32, kF64, kBF16, kF16, kI32, kI64}) {
      // Integer sums of full-range values wrap around.
      TestTensor x =
          isFloat(t) ? uniform(t, shape, seed++) : randomBits(t, shape, seed++);
      for (const auto &reduced : kReductions)
        for (Opcode op :
             {Opcode::ReduceSum, Opcode::ReduceMax, Opcode::ReduceMean}) {
          if (op == Opcode::ReduceMean && !isFloat(t))
            continue;
          int64_t n = 1;
          for (int64_t d : reduced)
            n *= shape[d];
          bool exactOp = op == Opcode::ReduceMax || !isFloat(t);
          check(
              makeCall(op, {x}, {zeros(t, keptDims(shape, reduced))}, reduced),
              exactOp ? kSameBits : sumOf(t, n));
        }
    }
}

/// reduce_prod in every dtype over the reductions above. Floats near 1
/// (products of up to 14,000 factors stay in range) accumulate in f64, in
/// the CPU's order or the GPU's parallel one: each within R 2^-53 of the
/// exact product, so within 2 R 2^-53 of each other, plus one ulp of the
/// result's rounding. Integers wrap around, exactly; the second shape's
/// factors are in [-2, 2), zeros and signs included.
TEST_P(DeviceKernels, ReduceProd) {
  uint32_t seed = 40;
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{3, 37, 129}, {9, 1, 5}})
    for (DType t : {kF32, kF64, kBF16, kF16, kI32, kI64}) {
      bool small = shape[0] == 9;
      TestTensor x = !isFloat(t) && !small ? randomBits(t, shape, seed++)
                     : small               ? uniform(t, shape, seed++, -2, 2)
                             : uniform(t, shape, seed++, 0.999, 1.001);
      for (const auto &reduced : kReductions) {
        int64_t n = 1;
        for (int64_t d : reduced)
          n *= shape[d];
        check(makeCall(Opcode::ReduceProd, {x},
                       {zeros(t, keptDims(shape, reduced))}, reduced),
              isFloat(t) ? Tolerance{oneUlp(t) + 2 * double(n) * 0x1p-53}
                         : kSameBits);
      }
    }
  check(makeCall(Opcode::ReduceProd, {zeros(kF32, {2, 0})}, {zeros(kF32, {2})},
                 {1})); // 1
}

/// One kept run over 128 to 2,048 rows (a small model's bias gradients):
/// the GPU adds in the CPU's order, the rows in math/KeptRunBlocks.h's
/// blocks (200 rows: three of 64 and one of 8; 1,000: fifteen of 64 and
/// one of 40; 900 in two dims), so the sums are the CPU's bit for bit;
/// 127 rows are one block. f64, where another grouping of the terms shows
/// in the last bits (f32 terms are summed in f64, and the one rounding to
/// f32 hides the grouping almost always).
TEST_P(DeviceKernels, KeptRunSumsInTheCpusBlocks) {
  uint32_t seed = 70;
  const std::pair<std::vector<int64_t>, std::vector<int64_t>> cases[] = {
      {{200, 5}, {0}},
      {{1000, 37}, {0}},
      {{3, 300, 7}, {0, 1}},
      {{127, 9}, {0}}};
  for (const auto &[shape, reduced] : cases)
    check(makeCall(Opcode::ReduceSum, {uniform(kF64, shape, seed++)},
                   {zeros(kF64, keptDims(shape, reduced))}, reduced));
}

/// A 16-bit sum the compiler widened writes f32: in both of the GPU's
/// orders (the CPU's, and chunks for few long outputs).
TEST_P(DeviceKernels, WidenedSums) {
  uint32_t seed = 90;
  const std::pair<std::vector<int64_t>, std::vector<int64_t>> cases[] = {
      {{3, 37, 129}, {0, 1}},
      {{3, 37, 129}, {2}},
      {{8, 1024, 40}, {0, 1}},
      {{3, 40000}, {1}}};
  for (const auto &[shape, reduced] : cases)
    for (DType t : {kBF16, kF16}) {
      int64_t n = 1;
      for (int64_t d : reduced)
        n *= shape[d];
      check(makeCall(Opcode::ReduceSum, {uniform(t, shape, seed++)},
                     {zeros(kF32, keptDims(shape, reduced))}, reduced),
            sumOf(kF32, n));
    }
}

/// Few outputs with long sums take the GPU's parallel order (chunks, then
/// a tree: Reduction.cu); the contract is still the sum rounded once.
TEST_P(DeviceKernels, LongReductionsWithFewOutputs) {
  uint32_t seed = 1;
  const std::pair<std::vector<int64_t>, std::vector<int64_t>> cases[] = {
      {{20000, 3}, {0}},    // kept run: 3 columns of 20,000 rows
      {{3, 40000}, {1}},    // reduced run: 3 rows of 40,000 terms
      {{300, 301}, {0, 1}}, // everything into one output
      {{8, 1024, 40}, {0, 1}}};
  for (const auto &[shape, reduced] : cases)
    for (DType t : {kF32, kBF16}) {
      int64_t n = 1;
      for (int64_t d : reduced)
        n *= shape[d];
      for (Opcode op : {Opcode::ReduceSum, Opcode::ReduceMean})
        check(makeCall(op, {uniform(t, shape, seed++)},
                       {zeros(t, keptDims(shape, reduced))}, reduced),
              sumOf(t, n));
    }
}

TEST_P(DeviceKernels, ReduceMaxPropagatesNaN) {
  for (DType t : kFloatTypes) {
    TestTensor x = uniform(t, {5, 37}, 1);
    x.set(0, kNaN);           // First of row 0.
    x.set(2 * 37 + 36, kNaN); // Last of row 2.
    x.set(3 * 37 + 4, -kInf);
    for (int64_t d : {0, 1})
      check(
          makeCall(Opcode::ReduceMax, {x}, {zeros(t, {d == 0 ? 37 : 5})}, {d}));
  }
}

//===--- Data movement ----------------------------------------------------===//

TEST_P(DeviceKernels, BroadcastInDim) {
  struct Case {
    std::vector<int64_t> from, to, dims;
  } cases[] = {
      {{3, 1, 37}, {3, 5, 4, 37}, {0, 1, 3}}, // size 1 repeats, a new dim
      {{}, {129}, {}},                        // a scalar
      {{37}, {3, 37}, {1}},
      {{5}, {5, 129}, {0}},
      {{1, 1}, {3, 7}, {0, 1}},
  };
  uint32_t seed = 1;
  for (DType t : kAllTypes)
    for (const Case &c : cases)
      check(makeCall(Opcode::BroadcastInDim, {randomBits(t, c.from, seed++)},
                     {zeros(t, c.to)}, c.dims),
            kSameBytes);
}

TEST_P(DeviceKernels, Reshape) {
  uint32_t seed = 1;
  for (DType t : kAllTypes) {
    check(makeCall(Opcode::Reshape, {randomBits(t, {3, 37, 4}, seed++)},
                   {zeros(t, {111, 4})}),
          kSameBytes);
    check(makeCall(Opcode::Reshape, {randomBits(t, {129}, seed++)},
                   {zeros(t, {3, 1, 43})}),
          kSameBytes);
  }
}

TEST_P(DeviceKernels, Transpose) {
  uint32_t seed = 1;
  const std::vector<int64_t> dims = {3, 37, 45}; // Not multiples of tiles.
  for (DType t : kAllTypes) {
    TestTensor x = randomBits(t, dims, seed++);
    std::vector<int64_t> perm = {0, 1, 2};
    do {
      check(makeCall(Opcode::Transpose, {x},
                     {zeros(t, {dims[perm[0]], dims[perm[1]], dims[perm[2]]})},
                     perm),
            kSameBytes);
    } while (std::next_permutation(perm.begin(), perm.end()));
    TestTensor y = randomBits(t, {2, 3, 5, 7}, seed++);
    check(makeCall(Opcode::Transpose, {y}, {zeros(t, {2, 5, 3, 7})},
                   {0, 2, 1, 3}),
          kSameBytes);
    check(makeCall(Opcode::Transpose, {y}, {zeros(t, {7, 3, 2, 5})},
                   {3, 1, 0, 2}),
          kSameBytes);
    check(makeCall(Opcode::Transpose, {randomBits(t, {129, 129}, seed++)},
                   {zeros(t, {129, 129})}, {1, 0}),
          kSameBytes);
  }
}

TEST_P(DeviceKernels, StridedSlice) {
  struct Case {
    std::vector<int64_t> from, to, ints; // ints: start, limit, strides
  } cases[] = {
      {{5, 37, 6}, {2, 37, 1}, {1, 0, 5, 5, 37, 6, 3, 1, 1}},
      {{129}, {25}, {3, 128, 5}},
      {{4, 37}, {2, 12}, {0, 2, 4, 37, 2, 3}},
      {{3, 129}, {3, 129}, {0, 0, 3, 129, 1, 1}}, // the whole operand
      {{37, 3}, {1, 1}, {36, 2, 37, 3, 1, 1}},    // one element
  };
  uint32_t seed = 1;
  for (DType t : kAllTypes)
    for (const Case &c : cases)
      check(makeCall(Opcode::Slice, {randomBits(t, c.from, seed++)},
                     {zeros(t, c.to)}, c.ints),
            kSameBytes);
}

TEST_P(DeviceKernels, Concatenate) {
  uint32_t seed = 1;
  for (DType t : kAllTypes) {
    check(makeCall(Opcode::Concatenate,
                   {randomBits(t, {3, 1, 5}, seed),
                    randomBits(t, {3, 37, 5}, seed + 1),
                    randomBits(t, {3, 2, 5}, seed + 2)},
                   {zeros(t, {3, 40, 5})}, {1}),
          kSameBytes);
    check(makeCall(Opcode::Concatenate,
                   {randomBits(t, {1, 129}, seed + 3),
                    randomBits(t, {4, 129}, seed + 4)},
                   {zeros(t, {5, 129})}, {0}),
          kSameBytes);
    check(makeCall(Opcode::Concatenate,
                   {randomBits(t, {2, 3, 1}, seed + 5),
                    randomBits(t, {2, 3, 37}, seed + 6)},
                   {zeros(t, {2, 3, 38})}, {2}),
          kSameBytes);
    seed += 7;
  }
}

TEST_P(DeviceKernels, GatherWithNegativeIndices) {
  uint32_t seed = 1;
  for (DType t : kAllTypes) {
    // Indices in [-37, 37): negative ones count from the end.
    check(makeCall(Opcode::Gather,
                   {randomBits(t, {37, 5}, seed),
                    uniform(kI64, {3, 4}, seed + 1, -37, 37)},
                   {zeros(t, {3, 4, 5})}, {0}),
          kSameBytes);
    check(makeCall(Opcode::Gather,
                   {randomBits(t, {3, 37, 2}, seed + 2),
                    uniform(kI32, {129}, seed + 3, -37, 37)},
                   {zeros(t, {3, 129, 2})}, {1}),
          kSameBytes);
    check(makeCall(Opcode::Gather,
                   {randomBits(t, {4, 129}, seed + 4),
                    TestTensor(kI64, {4}, {-129, 128, 0, -1})},
                   {zeros(t, {4, 4})}, {1}),
          kSameBytes);
    seed += 5;
  }
}

TEST_P(DeviceKernels, Iota) {
  for (DType t :
       {kF64, kF32, kF16, kBF16, kI64, kI32, DType::U32, DType::U64}) {
    for (int64_t dim : {0, 1})
      check(makeCall(Opcode::Iota, {}, {zeros(t, {3, 37})}, {dim}));
    check(makeCall(Opcode::Iota, {}, {zeros(t, {2, 3, 129})}, {2}));
    // Past 2^11 (f16) and 2^8 (bf16) the values round to even.
    check(makeCall(Opcode::Iota, {}, {zeros(t, {2100})}, {0}));
  }
}

//===--- Empty tensors ----------------------------------------------------===//

/// No element to compute: the device must not launch an empty grid (an
/// error on CUDA) and must still write identities where there are results.
TEST_P(DeviceKernels, EmptyTensors) {
  TestTensor none = zeros(kF32, {0});
  check(makeCall(Opcode::Add, {none, none}, {zeros(kF32, {0})}));
  TestTensor rows = zeros(kF32, {2, 0});
  check(makeCall(Opcode::ReduceSum, {rows}, {zeros(kF32, {2})}, {1}));  // 0
  check(makeCall(Opcode::ReduceMax, {rows}, {zeros(kF32, {2})}, {1}));  // -inf
  check(makeCall(Opcode::ReduceMean, {rows}, {zeros(kF32, {2})}, {1})); // NaN
  // K = 0: every element is an empty sum.
  check(dotCall(zeros(kF32, {4, 0}), zeros(kF32, {0, 5}), {{}, {}, {1}, {0}}));
  check(makeCall(Opcode::Transpose, {zeros(kF32, {0, 3})},
                 {zeros(kF32, {3, 0})}, {1, 0}),
        kSameBytes);
  check(makeCall(Opcode::Concatenate,
                 {zeros(kF32, {2, 0}), uniform(kF32, {2, 3}, 1)},
                 {zeros(kF32, {2, 3})}, {1}),
        kSameBytes);
  check(makeCall(Opcode::Gather, {uniform(kF32, {4, 3}, 2), zeros(kI64, {0})},
                 {zeros(kF32, {0, 3})}, {0}),
        kSameBytes);
}

//===--- Data-dependent errors --------------------------------------------===//

TEST_P(DeviceKernels, GatherIndexOutOfRangeIsAnError) {
  for (DType indexType : {kI64, kI32})
    for (double bad : {4.0, -5.0}) {
      TestTensor indices(indexType, {2, 2}, {0, 1, bad, 2});
      checkFails(makeCall(Opcode::Gather, {uniform(kF32, {4, 3}, 1), indices},
                          {zeros(kF32, {2, 2, 3})}, {0}),
                 {"gather", "index " + std::to_string(int64_t(bad))});
    }
}

TEST_P(DeviceKernels, ScatterAddIndexOutOfRangeIsAnError) {
  checkFails(makeCall(Opcode::ScatterAdd,
                      {uniform(kF32, {2, 2}, 1), TestTensor(kI64, {2}, {0, 4})},
                      {zeros(kF32, {4, 2})}, {0}),
             {"scatter_add", "index 4"});
}

TEST_P(DeviceKernels, CrossEntropyTargetOutOfRangeIsAnError) {
  TestTensor targets(kI64, {2, 3}, {0, 1, 2, 3, 4, 7});
  checkFails(makeCall(Opcode::SoftmaxCrossEntropy,
                      {uniform(kF32, {2, 3, 7}, 1), targets}, {zeros(kF32, {})},
                      {2, 1, -100, 7}),
             {"softmax_cross_entropy", "target 7"});
  checkFails(
      makeCall(Opcode::SoftmaxCrossEntropyAndGrad,
               {uniform(kF32, {2, 3, 7}, 1), targets, uniform(kF32, {2, 3}, 2)},
               {zeros(kF32, {}), zeros(kF32, {2, 3, 7})}, {2, 1, -100, 7}),
      {"softmax_cross_entropy_and_grad", "target 7"});
}

TEST_P(DeviceKernels, IntegerDivisionByZeroIsAnError) {
  for (DType t : {kI32, kI64, DType::U32, DType::U64})
    checkFails(
        makeCall(Opcode::Div,
                 {TestTensor(t, {3}, {1, 2, 3}), TestTensor(t, {3}, {1, 1, 0})},
                 {zeros(t, {3})}),
        {"div", "division by zero"});
}

} // namespace
} // namespace trainc
