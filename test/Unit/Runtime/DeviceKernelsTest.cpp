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
//     CPU's summation order (layer/rms norm, norm_grad, scatter_add,
//     sum_of_squares, and softmax below f64);
//   - |got - want| <= rel * max |want| elementwise, per result: where the
//     CPU calls libm and the GPU its own math library, and where the GPU
//     sums in another order (GEMMs through cuBLASLt, reductions, attention,
//     cross-entropy, f64 softmax).
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "cpu/Kernels.h"
#include "device/Device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace trainc {
namespace {

using cpu::testing::computeEps;
using cpu::testing::DotDims;
using cpu::testing::dotInts;
using cpu::testing::randomValues;
using cpu::testing::storageEps;
using cpu::testing::TestTensor;

constexpr DType kF64 = DType::F64, kF32 = DType::F32, kF16 = DType::F16,
                kBF16 = DType::BF16, kI64 = DType::I64, kI32 = DType::I32,
                kI1 = DType::I1;
constexpr DType kFloatTypes[] = {kF32, kF64, kF16, kBF16};
constexpr DType kAllTypes[] = {kF64, kF32, kF16, kBF16, kI64, kI32, kI1};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

//===--- Tensors ----------------------------------------------------------===//

int64_t count(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

uint64_t bytesOf(const TestTensor &t) {
  return uint64_t(t.size()) * dtypeSize(t.dtype());
}

TestTensor zeros(DType t, std::vector<int64_t> dims) {
  return TestTensor(t, std::move(dims));
}

TestTensor scalar(DType t, double v) { return TestTensor(t, {}, {v}); }

/// Uniform values in [lo, hi), stored in `t` (integers floored; i1: 0 or 1
/// whatever lo and hi).
TestTensor uniform(DType t, std::vector<int64_t> dims, uint32_t seed,
                   double lo = -1, double hi = 1) {
  if (t == kI1)
    lo = 0, hi = 2;
  std::vector<double> v = randomValues(count(dims), seed, lo, hi);
  if (!isFloat(t))
    for (double &x : v)
      x = std::floor(x);
  return TestTensor(t, std::move(dims), v);
}

/// Random bit patterns (i1: 0 or 1): every exponent, subnormals,
/// infinities and NaNs of a float type, the full range of an integer type.
TestTensor randomBits(DType t, std::vector<int64_t> dims, uint32_t seed) {
  TestTensor x(t, std::move(dims));
  std::mt19937_64 gen(seed);
  auto *bytes = static_cast<uint8_t *>(x.ref().data);
  size_t width = dtypeSize(t);
  for (int64_t i = 0; i < x.size(); ++i) {
    uint64_t bits = gen();
    if (t == kI1)
      bits &= 1;
    std::memcpy(bytes + i * width, &bits, width); // The low bytes.
  }
  return x;
}

std::string indexString(const std::vector<int64_t> &dims, int64_t flat) {
  std::vector<int64_t> index(dims.size());
  for (int d = int(dims.size()) - 1; d >= 0; --d) {
    index[d] = dims[d] ? flat % dims[d] : 0;
    flat = dims[d] ? flat / dims[d] : 0;
  }
  return shapeString(index);
}

/// Element i as a number and as its bits: "0.5 (0x3f00)".
std::string elementString(const TestTensor &t, int64_t i) {
  uint64_t bits = 0;
  size_t width = dtypeSize(t.dtype());
  std::memcpy(&bits, static_cast<const uint8_t *>(t.ref().data) + i * width,
              width);
  std::ostringstream s;
  s << std::setprecision(17) << t.get(i) << " (0x" << std::hex
    << std::setw(int(2 * width)) << std::setfill('0') << bits << ")";
  return s.str();
}

//===--- Tolerances -------------------------------------------------------===//

/// How a device's result must match the reference. On the CPU device every
/// result must match byte for byte, whatever its tolerance.
struct Tolerance {
  /// 0: exactly; else |got - want| <= rel * max |want| (over the result's
  /// finite reference values), with NaN where the reference has NaN.
  double rel = 0;
  /// With rel 0: NaN payloads too (the kernel moves bytes).
  bool bytes = false;
};

const Tolerance kSameBytes{0, true};
const Tolerance kSameBits{0, false};

/// One ulp of the result type at max |want|: a difference in the compute
/// type that tips a value across a rounding boundary of its storage type
/// (16-bit results; for f32 and f64 this adds one ulp).
double oneUlp(DType t) { return 2 * storageEps(t); }

/// A function the CPU takes from libm (f64 everywhere; log, cos, sin, pow;
/// exp, tanh and erf below f32) and the GPU from CUDA's math library: each
/// within 1 to 4 ulp of the exact result (CUDA's documented bounds; glibc
/// is within 1-2), so the two within 8 ulp of the compute type (16 u),
/// plus one ulp of a 16-bit result.
Tolerance mathLibrary(DType t) { return {16 * computeEps(t) + oneUlp(t)}; }

/// Per-element math shared by both devices (runtime/src/math/, compiled
/// without FMA contraction): bit for bit, except f64, which the CUDA files
/// evaluate with CUDA's double exp, erf and tanh in place of libm's.
Tolerance sharedMath(DType t) { return t == kF64 ? mathLibrary(t) : kSameBits; }

/// A GEMM with K-term dot products (cuBLASLt picks its own blocking and
/// split-K order; OpenBLAS another). Either side's error is at most
/// gamma_K sum_k |a_k b_k| ~ K u sum |ab|, and typically sqrt(K) u sum |ab|
/// (random rounding). With operands uniform in [-1, 1], sum |ab| ~ K / 4
/// while max |c| over a result is ~ sqrt(K), so both typical errors
/// together are ~ K u / 2 of max |c|; 4 (K + 1) u leaves a factor of 8
/// (and is the worst-case bound up to K ~ 256). u is 2^-24 for f32, f16 and
/// bf16 (f32 accumulation, as the contract says: TF32 or 16-bit
/// accumulation fails here), 2^-53 for f64; 16-bit results add one ulp.
Tolerance gemmOf(DType t, int64_t k) {
  return {4 * double(k + 1) * computeEps(t) + oneUlp(t)};
}

/// reduce_sum / reduce_mean over n terms per result. The contract
/// (cpu/Kernels.h) is the exact sum rounded once, which the CPU gets by
/// accumulating in f64 in a fixed order. A device accumulating in f64 in
/// any other order is within n 2^-53 sum |x| of it before that rounding,
/// and sum |x| / max |sum| ~ sqrt(n) for random signs: at most one ulp of
/// the result type apart (a rounding tipped the other way) for f32 and
/// 16-bit results, and within 4 n sqrt(n) 2^-53 for f64. An f32
/// accumulator (~ log2(n) 2^-24 sum |x|) fails here, on purpose.
Tolerance sumOf(DType t, int64_t n) {
  return {oneUlp(t) + 4 * double(n) * std::sqrt(double(n)) * 0x1p-53};
}

/// softmax over rows of n: each p_j is within (n + 8) u p_j of the exact
/// value on either device (the n-term sum, exp, the division), so within
/// 4 (n + 8) u of max p together. Only f64 needs it (the CUDA file sums in
/// 16 partial sums with CUDA's exp; below f64 it matches the CPU's order).
Tolerance softmaxOf(DType t, int64_t n) {
  if (t != kF64)
    return kSameBits;
  return {4 * double(n + 8) * computeEps(t) + oneUlp(t)};
}

/// Cross-entropy over `classes` with `rows` positions: per position, a
/// C-term sum of exps (relative error C u, absolute C u after the log),
/// libm's or CUDA's log and a subtraction, on losses of magnitude ~ 1 to
/// 10: 4 (C + 8) u of the largest loss. The sum and mean reductions add R
/// positive losses in some order (R u relative); the gradient is the
/// softmax row times a weight (C u).
Tolerance crossEntropyOf(DType t, int64_t classes, int64_t rows,
                         DType resultType) {
  return {4 * double(classes + rows + 8) * computeEps(t) + oneUlp(resultType)};
}

//===--- Calls ------------------------------------------------------------===//

/// One kernel invocation, with its operands' values and its results' dtypes
/// and shapes (zero-filled).
struct Call {
  Opcode op;
  std::vector<TestTensor> inputs;
  std::vector<TestTensor> outputs;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// >= 0: the call carries a KernelContext with only this step set
  /// (dropout); -1: no context (a kernel then sees step 0).
  int64_t step = -1;
  /// For each result, the operand whose memory it is written to (-1, or
  /// absent: its own buffer).
  std::vector<int> aliases;
};

Call makeCall(Opcode op, std::vector<TestTensor> inputs,
              std::vector<TestTensor> outputs, std::vector<int64_t> ints = {},
              std::vector<double> floats = {}) {
  return Call{op,
              std::move(inputs),
              std::move(outputs),
              std::move(ints),
              std::move(floats),
              -1,
              {}};
}

int aliasOf(const Call &c, size_t result) {
  return result < c.aliases.size() ? c.aliases[result] : -1;
}

/// "add(f32[3, 129], f32[3, 129]) -> f32[3, 129] ints [] floats []".
std::string describe(const Call &c) {
  auto tensors = [](const std::vector<TestTensor> &ts) {
    std::string s;
    for (size_t i = 0; i < ts.size(); ++i)
      s += (i ? ", " : "") + std::string(dtypeName(ts[i].dtype())) +
           shapeString(ts[i].dims());
    return s;
  };
  std::ostringstream s;
  s << opcodeName(c.op) << "(" << tensors(c.inputs) << ") -> "
    << tensors(c.outputs) << " ints " << shapeString(c.ints) << " floats [";
  for (size_t i = 0; i < c.floats.size(); ++i)
    s << (i ? ", " : "") << c.floats[i];
  s << "]";
  if (c.step >= 0)
    s << " step " << c.step;
  for (size_t i = 0; i < c.aliases.size(); ++i)
    if (c.aliases[i] >= 0)
      s << " (result " << i << " in operand " << c.aliases[i] << ")";
  return s.str();
}

/// Runs `run` (cpu::runCpuKernel, or a device's launch) on `c`, with
/// operand i at in[i] and result i at out[i].
Status invoke(const Call &c, const std::vector<void *> &in,
              const std::vector<void *> &out,
              const std::function<Status(const KernelCall &)> &run) {
  std::vector<TensorRef> inputs, outputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    inputs.push_back(c.inputs[i].ref());
    inputs.back().data = in[i];
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    outputs.push_back(c.outputs[i].ref());
    outputs.back().data = out[i];
  }
  KernelContext context;
  context.step = c.step;
  KernelCall call{c.op,
                  {inputs.data(), int64_t(inputs.size())},
                  outputs.data(),
                  int(outputs.size()),
                  {c.ints.data(), int64_t(c.ints.size())},
                  {c.floats.data(), int64_t(c.floats.size())},
                  c.step >= 0 ? &context : nullptr};
  return run(call);
}

/// The reference: `c` through cpu::runCpuKernel on host copies.
Status runReference(const Call &c, std::vector<TestTensor> &results) {
  std::vector<TestTensor> operands = c.inputs; // Results may be their memory.
  results = c.outputs;
  std::vector<void *> in, out;
  for (TestTensor &t : operands)
    in.push_back(t.ref().data);
  for (size_t i = 0; i < results.size(); ++i)
    out.push_back(aliasOf(c, i) >= 0 ? in[aliasOf(c, i)]
                                     : results[i].ref().data);
  Status s = invoke(c, in, out, cpu::runCpuKernel);
  for (size_t i = 0; i < results.size(); ++i)
    if (aliasOf(c, i) >= 0)
      std::memcpy(results[i].ref().data, out[i], bytesOf(results[i]));
  return s;
}

/// `c` on `device`: a buffer per operand and result (a result that aliases
/// an operand uses its buffer), launch, then the results and the operands
/// copied back. The first error of launch and synchronize.
Status runOnDevice(Device &device, const Call &c,
                   std::vector<TestTensor> &results,
                   std::vector<TestTensor> &operands) {
  Stream &stream = device.computeStream();
  std::vector<std::unique_ptr<Buffer>> buffers;
  auto allocate = [&](const TestTensor &t, void *&data) {
    std::unique_ptr<Buffer> buffer;
    Status s = device.allocate(bytesOf(t), 64, buffer);
    if (s.ok()) {
      data = buffer->data();
      buffers.push_back(std::move(buffer));
    }
    return s;
  };
  std::vector<void *> in(c.inputs.size()), out(c.outputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    TRAINC_RETURN_IF_ERROR(allocate(c.inputs[i], in[i]));
    TRAINC_RETURN_IF_ERROR(device.copyToDevice(static_cast<char *>(in[i]),
                                               c.inputs[i].ref().data,
                                               bytesOf(c.inputs[i]), stream));
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    if (aliasOf(c, i) >= 0)
      out[i] = in[aliasOf(c, i)];
    else
      TRAINC_RETURN_IF_ERROR(allocate(c.outputs[i], out[i]));
  }
  Status status = invoke(
      c, in, out, [&](const KernelCall &call) { return device.launch(call); });
  results = c.outputs;
  operands = c.inputs;
  auto copyBack = [&](TestTensor &t, const void *from) {
    if (status.ok())
      status = device.copyToHost(t.ref().data, static_cast<const char *>(from),
                                 bytesOf(t), stream);
  };
  for (size_t i = 0; i < results.size(); ++i)
    copyBack(results[i], out[i]);
  for (size_t i = 0; i < operands.size(); ++i)
    copyBack(operands[i], in[i]);
  Status synced = stream.synchronize();
  return status.ok() ? synced : status;
}

/// Whether `got` matches the reference `want` (see Tolerance); `exact`
/// demands every byte whatever `tol` says. On failure: how many elements
/// differ, and the worst one with both values.
::testing::AssertionResult matches(const TestTensor &got,
                                   const TestTensor &want, Tolerance tol,
                                   bool exact) {
  if (got.dims() != want.dims() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "wrong dtype or shape";
  bool sameBits = exact || tol.rel == 0;
  bool nanIsNaN = !exact && !tol.bytes;
  double maxAbs = 0;
  for (int64_t i = 0; !sameBits && i < want.size(); ++i)
    if (std::isfinite(want.get(i)))
      maxAbs = std::max(maxAbs, std::fabs(want.get(i)));
  double bound = sameBits ? 0 : tol.rel * maxAbs;
  size_t width = dtypeSize(want.dtype());
  const auto *g = static_cast<const uint8_t *>(got.ref().data);
  const auto *w = static_cast<const uint8_t *>(want.ref().data);
  int64_t failures = 0, worst = -1;
  double worstError = -1;
  for (int64_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(g + i * width, w + i * width, width) == 0)
      continue;
    double a = got.get(i), b = want.get(i);
    bool bothNaN = std::isnan(a) && std::isnan(b);
    double error = std::isfinite(a) && std::isfinite(b) ? std::fabs(a - b)
                   : bothNaN                            ? 0
                                                        : kInf;
    bool ok = sameBits ? bothNaN && nanIsNaN : bothNaN || error <= bound;
    if (ok)
      continue;
    ++failures;
    if (error > worstError)
      worstError = error, worst = i;
  }
  if (!failures)
    return ::testing::AssertionSuccess();
  std::ostringstream how;
  if (exact || tol.bytes)
    how << "byte for byte";
  else if (sameBits)
    how << "bit for bit (any NaN matching any NaN)";
  else
    how << "within " << tol.rel << " * max |want| (" << maxAbs
        << ") = " << bound;
  return ::testing::AssertionFailure()
         << failures << " of " << want.size() << " elements of "
         << dtypeName(want.dtype()) << shapeString(want.dims())
         << " differ, expected " << how.str() << "; worst: element " << worst
         << " " << indexString(want.dims(), worst) << " got "
         << elementString(got, worst) << ", want " << elementString(want, worst)
         << ", |difference| " << worstError;
}

//===--- The fixture ------------------------------------------------------===//

/// One device per name for the whole run (a CUDA device costs a context,
/// streams, a cuBLASLt handle and a communicator), released before exit.
class DeviceCache : public ::testing::Environment {
public:
  static Status get(const std::string &name, std::shared_ptr<Device> &out) {
    auto it = entries().find(name);
    if (it == entries().end()) {
      Entry e;
      e.status = createDevice(name, nullptr, e.device);
      it = entries().emplace(name, std::move(e)).first;
    }
    out = it->second.device;
    return it->second.status;
  }
  void TearDown() override { entries().clear(); }

private:
  struct Entry {
    Status status;
    std::shared_ptr<Device> device;
  };
  static std::map<std::string, Entry> &entries() {
    static std::map<std::string, Entry> cache;
    return cache;
  }
};

[[maybe_unused]] ::testing::Environment *const kDeviceCache =
    ::testing::AddGlobalTestEnvironment(new DeviceCache);

class DeviceKernels : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    Status s = DeviceCache::get(GetParam(), device_);
    // The skip rule: no such device here is a skip for "cuda", never a pass.
    if (!s.ok() && GetParam() != "cpu" &&
        (s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kNotFound))
      GTEST_SKIP() << "no '" << GetParam() << "' device: " << s.toString();
    ASSERT_TRUE(s.ok()) << "createDevice(\"" << GetParam()
                        << "\"): " << s.toString();
  }

  /// The CPU device must reproduce the reference byte for byte.
  bool exact() const { return GetParam() == "cpu"; }

  /// Runs `c` on the reference and on the device; compares every result
  /// (within `tol`) and every operand that is no result's memory (bytes).
  void check(const Call &c, Tolerance tol = kSameBits) {
    SCOPED_TRACE(describe(c));
    std::vector<TestTensor> want, got, operands;
    Status ref = runReference(c, want);
    ASSERT_TRUE(ref.ok()) << "the CPU reference failed: " << ref.toString();
    Status s = runOnDevice(*device_, c, got, operands);
    ASSERT_TRUE(s.ok()) << device_->name() << ": " << s.toString();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(matches(got[i], want[i], tol, exact())) << "result " << i;
    for (size_t i = 0; i < operands.size(); ++i) {
      bool written = false;
      for (size_t r = 0; r < c.outputs.size(); ++r)
        written |= aliasOf(c, r) == int(i);
      if (!written) {
        EXPECT_TRUE(matches(operands[i], c.inputs[i], kSameBytes, true))
            << "operand " << i << " changed";
      }
    }
  }

  /// Expects `c` to fail on the reference and on the device (from launch or
  /// from synchronize) with an invalid-argument Status naming each of
  /// `words`; then the device must run a valid call again.
  void checkFails(const Call &c, const std::vector<std::string> &words) {
    SCOPED_TRACE(describe(c));
    std::vector<TestTensor> results, operands;
    Status ref = runReference(c, results);
    Status s = runOnDevice(*device_, c, results, operands);
    for (const Status &st : {ref, s}) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.toString();
      for (const std::string &word : words)
        EXPECT_NE(st.message().find(word), std::string::npos)
            << "'" << word << "' is not in: " << st.toString();
    }
    TestTensor x = uniform(kF32, {3, 37}, 99);
    check(makeCall(Opcode::Neg, {x}, {zeros(kF32, {3, 37})}));
  }

  std::shared_ptr<Device> device_;
};

INSTANTIATE_TEST_SUITE_P(Devices, DeviceKernels,
                         ::testing::Values("cpu", "cuda"),
                         [](const ::testing::TestParamInfo<std::string> &i) {
                           return i.param;
                         });

const std::vector<std::vector<int64_t>> kElementwiseShapes = {
    {1}, {37}, {3, 129}, {2, 3, 4099}};

//===--- Elementwise ------------------------------------------------------===//

TEST_P(DeviceKernels, UnaryFloat) {
  struct Op {
    Opcode op;
    double lo, hi;
  } ops[] = {{Opcode::Neg, -4, 4},   {Opcode::Abs, -4, 4},
             {Opcode::Exp, -10, 10}, {Opcode::Log, 0, 8},
             {Opcode::Tanh, -6, 6},  {Opcode::Erf, -4, 4},
             {Opcode::Sqrt, 0, 8},   {Opcode::Rsqrt, 0.01, 8},
             {Opcode::Cos, -10, 10}, {Opcode::Sin, -10, 10}};
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const Op &o : ops)
      for (const auto &dims : kElementwiseShapes) {
        // neg, abs, sqrt and 1 / sqrt are IEEE operations; f32 exp, tanh
        // and erf are math/Transcendental.h's on both devices.
        bool ieee = o.op == Opcode::Neg || o.op == Opcode::Abs ||
                    o.op == Opcode::Sqrt || o.op == Opcode::Rsqrt;
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
  for (DType t : {kI32, kI64})
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
  TestTensor u = uniform(t, dims, seed + 1, -300, 300);
  for (int64_t i = 0; i < x.size(); i += 2)
    x.set(i, u.get(i));
  const double floats[] = {
      kNaN,   kInf,        -kInf,  0.0,        -0.0,
      0.5,    -0.5,        1.5,    2.5,        -2.5,
      3e9,    -3e9,        65519,  65520,      1e-40,
      0x1p31, -0x1p31 - 1, 0x1p63, 1 + 0x1p-8, 1 + 0x1p-11 + 0x1p-40};
  const double ints[] = {0, 1, -1, 2049, 2051, 65519, 65520, 0x1p24 + 1};
  // At odd positions, so that the uniform half stays.
  int64_t i = 1;
  for (double v :
       isFloat(t) ? std::vector<double>(std::begin(floats), std::end(floats))
                  : std::vector<double>(std::begin(ints), std::end(ints))) {
    if (i >= x.size())
      break;
    x.set(i, v);
    i += 2;
  }
  return x;
}

TEST_P(DeviceKernels, Convert) {
  const std::pair<DType, DType> pairs[] = {
      {kF32, kBF16}, {kF32, kF16},  {kF32, kF64},  {kF32, kI32},  {kF32, kI64},
      {kF32, kI1},   {kBF16, kF32}, {kF16, kF32},  {kF64, kF32},  {kI32, kF32},
      {kI64, kF32},  {kI1, kF32},   {kF64, kBF16}, {kF64, kF16},  {kBF16, kF16},
      {kF16, kBF16}, {kF64, kI64},  {kF64, kI32},  {kBF16, kI32}, {kF16, kI64},
      {kI64, kBF16}, {kI32, kF16},  {kI64, kF64},  {kI64, kI32},  {kI32, kI64},
      {kI1, kBF16},  {kI64, kI1},   {kBF16, kF64}, {kI1, kI64},   {kF16, kI1}};
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

//===--- Reductions -------------------------------------------------------===//

std::vector<int64_t> keptDims(const std::vector<int64_t> &dims,
                              const std::vector<int64_t> &reduced) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < int64_t(dims.size()); ++d)
    if (!contains(reduced, d))
      kept.push_back(dims[d]);
  return kept;
}

TEST_P(DeviceKernels, Reductions) {
  const std::vector<std::vector<int64_t>> reductions = {
      {}, {0}, {1}, {2}, {0, 2}, {2, 1}, {0, 1, 2}};
  uint32_t seed = 1;
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{3, 37, 129}, {129, 1, 5}})
    for (DType t : {kF32, kF64, kBF16, kF16, kI32, kI64}) {
      // Integer sums of full-range values wrap around.
      TestTensor x =
          isFloat(t) ? uniform(t, shape, seed++) : randomBits(t, shape, seed++);
      for (const auto &reduced : reductions)
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
  for (DType t : {kF64, kF32, kF16, kBF16, kI64, kI32}) {
    for (int64_t dim : {0, 1})
      check(makeCall(Opcode::Iota, {}, {zeros(t, {3, 37})}, {dim}));
    check(makeCall(Opcode::Iota, {}, {zeros(t, {2, 3, 129})}, {2}));
    // Past 2^11 (f16) and 2^8 (bf16) the values round to even.
    check(makeCall(Opcode::Iota, {}, {zeros(t, {2100})}, {0}));
  }
}

//===--- Softmax, norms, GELU, dropout ------------------------------------===//

TEST_P(DeviceKernels, Softmax) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes) {
    std::vector<int64_t> dims = {3, 37, 129};
    TestTensor x = uniform(t, dims, seed++, -8, 8);
    for (int64_t dim = 0; dim < 3; ++dim)
      check(makeCall(Opcode::Softmax, {x}, {zeros(t, dims)}, {dim}),
            softmaxOf(t, dims[dim]));
    check(makeCall(Opcode::Softmax, {uniform(t, {129, 1}, seed++, -8, 8)},
                   {zeros(t, {129, 1})}, {1}),
          softmaxOf(t, 1));
    check(makeCall(Opcode::Softmax, {uniform(t, {2, 4099}, seed++, -20, 20)},
                   {zeros(t, {2, 4099})}, {1}),
          softmaxOf(t, 4099));
  }
}

struct NormCase {
  std::vector<int64_t> dims;
  int64_t axis;
  bool scale, bias;
  double eps;
};

const NormCase kNormCases[] = {
    {{3, 37, 129}, 2, true, true, 1e-5},
    {{3, 37, 129}, 2, false, false, 0.25},
    {{3, 37, 129}, 1, true, false, 1e-5}, // normalized shape [37, 129]
    {{37, 129}, 1, false, true, 1e-6},
    {{129, 1}, 1, true, true, 1e-5}, // rows of one element
    {{5, 4099}, 1, true, true, 1e-5},
};

/// The CUDA file (cuda/Norm.cu) states the CPU's summation order for every
/// dtype, so norms are compared bit for bit.
TEST_P(DeviceKernels, LayerNormAndRmsNorm) {
  uint32_t seed = 1;
  for (bool layer : {true, false})
    for (DType t : kFloatTypes)
      for (const NormCase &c : kNormCases) {
        std::vector<int64_t> normalized(c.dims.begin() + c.axis, c.dims.end());
        std::vector<TestTensor> in = {uniform(t, c.dims, seed++, -2, 2)};
        if (c.scale)
          in.push_back(uniform(t, normalized, seed++, 0.5, 2));
        if (layer && c.bias)
          in.push_back(uniform(t, normalized, seed++, -1, 1));
        std::vector<int64_t> ints = {c.axis, c.scale};
        if (layer)
          ints.push_back(c.bias);
        check(makeCall(layer ? Opcode::LayerNorm : Opcode::RmsNorm, in,
                       {zeros(t, c.dims)}, ints, {c.eps}));
      }
}

TEST_P(DeviceKernels, NormGrad) {
  uint32_t seed = 1;
  for (bool centered : {true, false})
    for (DType t : kFloatTypes)
      for (const NormCase &c : kNormCases) {
        std::vector<int64_t> normalized(c.dims.begin() + c.axis, c.dims.end());
        std::vector<TestTensor> in = {uniform(t, c.dims, seed++, -2, 2)};
        if (c.scale)
          in.push_back(uniform(t, normalized, seed++, 0.5, 2));
        in.push_back(uniform(t, c.dims, seed++));
        check(makeCall(Opcode::NormGrad, in,
                       {zeros(t, c.dims), zeros(t, c.dims)},
                       {c.axis, c.scale, centered}, {c.eps}));
      }
}

TEST_P(DeviceKernels, GeluBothForms) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (int64_t approximation : {0, 1})
      for (const auto &dims : kElementwiseShapes)
        check(makeCall(Opcode::Gelu, {uniform(t, dims, seed++, -8, 8)},
                       {zeros(t, dims)}, {approximation}),
              sharedMath(t));
}

TEST_P(DeviceKernels, GeluGradBothForms) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (int64_t useTanh : {0, 1})
      for (const auto &dims : kElementwiseShapes) {
        check(makeCall(
                  Opcode::GeluGrad,
                  {uniform(t, dims, seed, -8, 8), uniform(t, dims, seed + 1)},
                  {zeros(t, dims)}, {useTanh}),
              sharedMath(t));
        seed += 2;
      }
}

/// The mask is a function of (seed, step, index): the launch carries a
/// context with the step, which the device must keep when it fills in its
/// stream (a device that dropped it would draw step 0's mask).
TEST_P(DeviceKernels, DropoutWithStep) {
  struct Case {
    int64_t seed;
    double ratio;
    int64_t step; // -1: no context at all (step 0)
  } cases[] = {{42, 0.3, 7}, {42, 0.3, -1}, {-3, 0.25, 123456789},
               {7, 0.0, 3},  {7, 0.9, 1},   {42, 0.3, 0}};
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const Case &c : cases)
      for (const auto &dims : {std::vector<int64_t>{1}, {3, 37, 129}}) {
        Call call =
            makeCall(Opcode::Dropout, {uniform(t, dims, seed++, -4, 4)},
                     {zeros(t, dims), zeros(kI1, dims)}, {c.seed}, {c.ratio});
        call.step = c.step;
        check(call);
      }
}

//===--- Attention --------------------------------------------------------===//

struct AttentionShape {
  DType t;
  int64_t b, hq, hk, sq, sk, d, dv;
  bool causal;
  std::vector<int64_t> mask; // Empty: no mask.
};

const AttentionShape kAttentionShapes[] = {
    {kF32, 2, 3, 3, 5, 5, 8, 6, false, {}},             // plain
    {kF32, 1, 2, 2, 3, 37, 16, 8, false, {}},           // Sq < Sk
    {kF32, 2, 2, 2, 37, 37, 16, 16, true, {}},          // causal
    {kF32, 1, 2, 2, 3, 37, 8, 4, true, {}},             // causal, Sq < Sk
    {kF32, 1, 1, 1, 5, 3, 4, 4, true, {}},              // causal, Sq > Sk
    {kF32, 2, 2, 2, 4, 37, 8, 8, false, {1, 1, 4, 37}}, // masks broadcast
    {kF32, 2, 2, 2, 4, 6, 8, 8, true, {2, 1, 1, 6}},
    {kF32, 2, 2, 2, 4, 6, 8, 8, false, {2, 2, 4, 6}},
    {kF32, 2, 4, 2, 5, 5, 8, 8, true, {1, 4, 1, 1}}, // grouped-query heads
    {kF32, 1, 4, 1, 3, 129, 8, 8, false, {1, 4, 3, 129}},
    {kF32, 1, 2, 2, 129, 129, 64, 64, true, {}}, // whole tiles
    {kF32, 1, 1, 1, 1, 1, 1, 1, false, {}},
    {kF64, 2, 4, 2, 5, 7, 8, 8, true, {1, 1, 5, 7}},
    {kBF16, 1, 2, 1, 37, 37, 16, 8, true, {}},
    {kF16, 1, 2, 2, 4, 37, 16, 8, false, {1, 1, 1, 37}},
    // bf16 with head sizes <= 64 runs on the tensor cores on a GPU
    // (AttentionTensorCore.cu): several 64-row tiles, grouped heads,
    // partial tiles, masks, causal with Sq > Sk (rows that see nothing).
    {kBF16, 2, 4, 2, 129, 129, 64, 64, true, {}},
    {kBF16, 1, 2, 2, 70, 150, 48, 40, false, {1, 2, 70, 150}},
    {kBF16, 1, 2, 2, 100, 37, 64, 64, true, {}},
    {kBF16, 1, 2, 1, 33, 40, 20, 12, true, {}}, // rows read 2 at a time
    {kBF16, 1, 1, 1, 3, 5, 65, 65, false, {}},  // the scalar kernels again
};

/// attention (or attention_grad) on random q, k, v (cotangent) and mask.
Call attentionCall(const AttentionShape &a, bool grad, uint32_t seed) {
  std::vector<int64_t> qDims = {a.b, a.hq, a.sq, a.d},
                       kDims = {a.b, a.hk, a.sk, a.d},
                       vDims = {a.b, a.hk, a.sk, a.dv},
                       oDims = {a.b, a.hq, a.sq, a.dv};
  std::vector<TestTensor> in = {uniform(a.t, qDims, seed),
                                uniform(a.t, kDims, seed + 1),
                                uniform(a.t, vDims, seed + 2)};
  if (grad)
    in.push_back(uniform(a.t, oDims, seed + 3));
  if (!a.mask.empty())
    in.push_back(uniform(a.t, a.mask, seed + 4, -2, 2));
  std::vector<TestTensor> out;
  if (grad)
    out = {zeros(a.t, qDims), zeros(a.t, kDims), zeros(a.t, vDims)};
  else
    out = {zeros(a.t, oDims)};
  return makeCall(grad ? Opcode::AttentionGrad : Opcode::Attention, in, out,
                  {a.causal, !a.mask.empty()}, {1 / std::sqrt(double(a.d))});
}

/// Scores are D-term dot products (|q|, |k| <= 1, scaled by 1 / sqrt(D):
/// error ~ D u); the softmax adds an Sk-term sum and the output an Sk-term
/// sum of p v (|v| <= 1), each summed in the GPU's own order (tiles, online
/// softmax): ~ (D + 2 Sk) u absolute, while max |o| is rarely below 0.1.
/// The gradient adds Dv-term products (dP) and, for dK and dV, sums over
/// the Sq rows of each of the `group` query heads. Hence 8 (terms) u of the
/// largest value: an f32 evaluation in numpy's order stays within 1% of it
/// on these shapes (f64 as the truth), while probabilities rounded to bf16
/// (2^-9) or a wrong index or mask exceed it.
Tolerance attentionOf(const AttentionShape &a, bool grad) {
  double terms = double(a.d + 2 * a.sk + 16) +
                 (grad ? double(a.dv + a.sq * (a.hq / a.hk)) : 0.0);
  return {8 * terms * computeEps(a.t) + oneUlp(a.t)};
}

TEST_P(DeviceKernels, Attention) {
  uint32_t seed = 1;
  for (const AttentionShape &a : kAttentionShapes) {
    check(attentionCall(a, false, seed), attentionOf(a, false));
    seed += 5;
  }
}

TEST_P(DeviceKernels, AttentionGrad) {
  uint32_t seed = 1;
  for (const AttentionShape &a : kAttentionShapes) {
    check(attentionCall(a, true, seed), attentionOf(a, true));
    seed += 5;
  }
}

/// A row whose every key is masked (-inf) gives zeros, forward and back.
TEST_P(DeviceKernels, AttentionFullyMaskedRows) {
  for (DType t : {kF32, kBF16})
    for (bool grad : {false, true}) {
      AttentionShape a{t, 2, 2, 2, 3, 4, 8, 8, false, {2, 1, 3, 4}};
      Call c = attentionCall(a, grad, 1);
      TestTensor &mask = c.inputs.back();
      for (int64_t j = 0; j < 4; ++j)
        mask.set((0 * 3 + 1) * 4 + j, -kInf); // Batch 0, query 1: no key.
      mask.set((1 * 3 + 2) * 4 + 0, -kInf);   // Batch 1, query 2: not key 0.
      check(c, attentionOf(a, grad));
    }
}

//===--- Cross-entropy ----------------------------------------------------===//

Call crossEntropyCall(DType t, const std::vector<int64_t> &logitDims,
                      DType targetType, int64_t reduction, bool hasIgnore,
                      int64_t ignoreIndex, uint32_t seed) {
  int64_t classes = logitDims.back();
  std::vector<int64_t> positions(logitDims.begin(), logitDims.end() - 1);
  TestTensor targets =
      uniform(targetType, positions, seed + 1, 0, double(classes));
  if (hasIgnore)
    for (int64_t r = 0; r < targets.size(); r += 3)
      targets.set(r, double(ignoreIndex));
  DType resultType = t == kF16 || t == kBF16 ? kF32 : t;
  return makeCall(
      Opcode::SoftmaxCrossEntropy,
      {uniform(t, logitDims, seed, -5, 5), targets},
      {zeros(resultType, reduction == 0 ? positions : std::vector<int64_t>{})},
      {reduction, hasIgnore, ignoreIndex});
}

TEST_P(DeviceKernels, SoftmaxCrossEntropyReductionsAndIgnoreIndex) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const auto &dims :
         {std::vector<int64_t>{3, 37, 129}, {37, 1}, {1, 4099}})
      for (int64_t reduction : {0, 1, 2})
        for (auto [hasIgnore, ignoreIndex] :
             {std::pair<bool, int64_t>{false, 0}, {true, -100}, {true, 0}}) {
          DType targetType = seed % 2 ? kI64 : kI32;
          Call c = crossEntropyCall(t, dims, targetType, reduction, hasIgnore,
                                    ignoreIndex, seed++);
          int64_t rows = count(dims) / dims.back();
          check(c, crossEntropyOf(t, dims.back(), reduction ? rows : 0,
                                  c.outputs[0].dtype()));
        }
}

TEST_P(DeviceKernels, SoftmaxCrossEntropyGrad) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes)
    for (const auto &dims : {std::vector<int64_t>{3, 37, 129}, {37, 1}})
      for (bool inPlace : {false, true}) {
        int64_t classes = dims.back();
        std::vector<int64_t> positions(dims.begin(), dims.end() - 1);
        TestTensor targets = uniform(inPlace ? kI32 : kI64, positions, seed + 1,
                                     0, double(classes));
        // An ignored position (out of range): no one-hot term, weight 0.
        TestTensor weight =
            uniform(t == kBF16 ? kF32 : t, positions, seed + 2, 0, 1);
        for (int64_t r = 0; r < targets.size(); r += 4) {
          targets.set(r, -100);
          weight.set(r, 0);
        }
        Call c = makeCall(Opcode::SoftmaxCrossEntropyGrad,
                          {uniform(t, dims, seed, -5, 5), targets, weight},
                          {zeros(t, dims)});
        if (inPlace)
          c.aliases = {0}; // The result in the logits' memory.
        check(c, crossEntropyOf(t, classes, 0, t));
        seed += 3;
      }
}

//===--- ScatterAdd -------------------------------------------------------===//

/// The CUDA file (cuda/Scatter.cu) adds each row's updates in index order
/// into 0, as the CPU does: bit for bit, repeated indices included.
TEST_P(DeviceKernels, ScatterAddWithRepeatedIndices) {
  uint32_t seed = 1;
  for (DType t : kFloatTypes) {
    // 129 updates into 4 rows: each row gets ~32, from negative and
    // non-negative indices.
    check(makeCall(
        Opcode::ScatterAdd,
        {uniform(t, {129, 5}, seed), uniform(kI64, {129}, seed + 1, -4, 4)},
        {zeros(t, {4, 5})}, {0}));
    // Axis 1 with rank-2 i32 indices: result [3, 7, 2], indices [2, 3].
    check(makeCall(Opcode::ScatterAdd,
                   {uniform(t, {3, 2, 3, 2}, seed + 2),
                    uniform(kI32, {2, 3}, seed + 3, -7, 7)},
                   {zeros(t, {3, 7, 2})}, {1}));
    // The innermost axis, and rows that receive nothing.
    check(makeCall(Opcode::ScatterAdd,
                   {uniform(t, {5, 37}, seed + 4),
                    uniform(kI64, {37}, seed + 5, -129, 64)},
                   {zeros(t, {5, 129})}, {1}));
    seed += 6;
  }
}

//===--- AdamwUpdate ------------------------------------------------------===//

/// One AdamW step on n elements; `skip` -1: no skip flag, else its value;
/// `inPlace`: the results are the memory of param, exp_avg, exp_avg_sq.
Call adamwCall(DType t, int64_t n, int skip, bool inPlace, uint32_t seed) {
  std::vector<TestTensor> in = {
      uniform(t, {n}, seed, -1, 1),         // param
      uniform(t, {n}, seed + 1, -1, 1),     // grad
      uniform(t, {n}, seed + 2, -0.1, 0.1), // exp_avg
      uniform(t, {n}, seed + 3, 0, 0.01),   // exp_avg_sq
      scalar(t, -1e-3),                     // neg_step_size
      scalar(t, 0.3),                       // bias_correction2_sqrt
      scalar(t, 0.9999),                    // decay_factor
      scalar(t, 0.5)};                      // grad_scale
  if (skip >= 0)
    in.push_back(scalar(kI1, skip));
  Call c = makeCall(Opcode::AdamwUpdate, in,
                    {zeros(t, {n}), zeros(t, {n}), zeros(t, {n})}, {},
                    {0.9, 0.999, 1e-8});
  if (inPlace)
    c.aliases = {0, 2, 3};
  return c;
}

/// math/AdamW.h's element update on both devices: bit for bit.
TEST_P(DeviceKernels, AdamwUpdateInPlaceAndSkipped) {
  uint32_t seed = 1;
  for (DType t : {kF32, kF64})
    for (int64_t n : {1, 37, 4099})
      for (int skip : {-1, 0, 1})
        for (bool inPlace : {true, false}) {
          check(adamwCall(t, n, skip, inPlace, seed));
          seed += 4;
        }
}

/// A multi-tensor update: `sizes.size()` parameters of those element
/// counts (0 included), more than the CUDA kernel takes per launch.
Call adamwGroupCall(DType t, const std::vector<int64_t> &sizes, int skip,
                    bool inPlace, uint32_t seed) {
  size_t n = sizes.size();
  std::vector<TestTensor> in(4 * n, zeros(t, {0})), out(3 * n, zeros(t, {0}));
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> shape = {sizes[i]};
    in[i] = uniform(t, shape, seed + 4 * i, -1, 1);
    in[n + i] = uniform(t, shape, seed + 4 * i + 1, -1, 1);
    in[2 * n + i] = uniform(t, shape, seed + 4 * i + 2, -0.1, 0.1);
    in[3 * n + i] = uniform(t, shape, seed + 4 * i + 3, 0, 0.01);
    for (size_t k = 0; k < 3; ++k)
      out[k * n + i] = zeros(t, shape);
  }
  for (double v : {-1e-3, 0.3, 0.9999, 0.5})
    in.push_back(scalar(t, v));
  if (skip >= 0)
    in.push_back(scalar(kI1, skip));
  Call c = makeCall(Opcode::AdamwUpdate, in, out, {}, {0.9, 0.999, 1e-8});
  if (inPlace)
    for (size_t k : {0, 2, 3})
      for (size_t i = 0; i < n; ++i)
        c.aliases.push_back(int(k * n + i));
  return c;
}

/// 40 parameters: two launches of the CUDA kernel, empty ones among them.
TEST_P(DeviceKernels, AdamwUpdateGroup) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 40; ++i)
    sizes.push_back(i % 7 == 3 ? 0 : (i * 611) % 3001 + 1);
  uint32_t seed = 1;
  for (DType t : {kF32, kF64})
    for (int skip : {-1, 0, 1})
      for (bool inPlace : {true, false}) {
        check(adamwGroupCall(t, sizes, skip, inPlace, seed));
        seed += 200;
      }
}

//===--- SumOfSquares -----------------------------------------------------===//

/// math/SumOfSquares.h's order on both devices: bit for bit. Sizes around
/// the chunk (2,048) and the 1,024 accumulators (3,000,000 elements make
/// 1,465 chunks), 0 included, and 40 operands (two CUDA launches).
TEST_P(DeviceKernels, SumOfSquares) {
  uint32_t seed = 1;
  for (DType t : {kF32, kF64, kBF16, kF16}) {
    for (std::vector<int64_t> sizes : {std::vector<int64_t>{1},
                                       {0, 7},
                                       {2047, 2048, 2049},
                                       {3000000, 129}}) {
      std::vector<TestTensor> in;
      for (int64_t n : sizes)
        in.push_back(uniform(t, {n}, seed++, -2, 2));
      check(makeCall(Opcode::SumOfSquares, in, {zeros(kF64, {})}));
    }
    std::vector<TestTensor> many;
    for (int i = 0; i < 40; ++i)
      many.push_back(uniform(t, {i % 5 == 0 ? 0 : i * 97 + 5, 3}, seed++));
    check(makeCall(Opcode::SumOfSquares, many, {zeros(kF64, {})}));
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
                      {2, 1, -100}),
             {"softmax_cross_entropy", "target 7"});
}

TEST_P(DeviceKernels, IntegerDivisionByZeroIsAnError) {
  for (DType t : {kI32, kI64})
    checkFails(
        makeCall(Opcode::Div,
                 {TestTensor(t, {3}, {1, 2, 3}), TestTensor(t, {3}, {1, 1, 0})},
                 {zeros(t, {3})}),
        {"div", "division by zero"});
}

} // namespace
} // namespace trainc
