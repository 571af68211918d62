//===- DeviceKernelsHarness.h - The device conformance suite's harness -===//
//
// What DeviceKernelsTest.cpp and DeviceKernelsCompositeTest.cpp share:
// test tensors, tolerances, kernel calls run on the CPU reference and on a
// device, and the parameterized fixture. The suite and its tolerances are
// described at the top of DeviceKernelsTest.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TEST_UNIT_RUNTIME_DEVICEKERNELSHARNESS_H
#define TRAINC_TEST_UNIT_RUNTIME_DEVICEKERNELSHARNESS_H

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

namespace trainc::device_kernels {

using cpu::testing::computeEps;
using cpu::testing::DotDims;
using cpu::testing::dotInts;
using cpu::testing::randomValues;
using cpu::testing::storageEps;
using cpu::testing::TestTensor;

constexpr DType kF64 = DType::F64, kF32 = DType::F32, kF16 = DType::F16,
                kBF16 = DType::BF16, kI64 = DType::I64, kI32 = DType::I32,
                kI1 = DType::I1, kU32 = DType::U32, kU64 = DType::U64,
                kI16 = DType::I16;
constexpr DType kFloatTypes[] = {kF32, kF64, kF16, kBF16};
constexpr DType kAllTypes[] = {kF64, kF32, kF16, kBF16, kI64, kI32, kI1};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

//===--- Tensors ----------------------------------------------------------===//

inline int64_t count(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

inline uint64_t bytesOf(const TestTensor &t) {
  return uint64_t(t.size()) * dtypeSize(t.dtype());
}

inline TestTensor zeros(DType t, std::vector<int64_t> dims) {
  return TestTensor(t, std::move(dims));
}

inline TestTensor scalar(DType t, double v) { return TestTensor(t, {}, {v}); }

/// Uniform values in [lo, hi), stored in `t` (integers floored; i1: 0 or 1
/// whatever lo and hi).
inline TestTensor uniform(DType t, std::vector<int64_t> dims, uint32_t seed,
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
inline TestTensor randomBits(DType t, std::vector<int64_t> dims,
                             uint32_t seed) {
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

inline std::string indexString(const std::vector<int64_t> &dims, int64_t flat) {
  std::vector<int64_t> index(dims.size());
  for (int d = int(dims.size()) - 1; d >= 0; --d) {
    index[d] = dims[d] ? flat % dims[d] : 0;
    flat = dims[d] ? flat / dims[d] : 0;
  }
  return shapeString(index);
}

/// Element i as a number and as its bits: "0.5 (0x3f00)".
inline std::string elementString(const TestTensor &t, int64_t i) {
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
  /// When not 0, in place of rel: ||got - want||_2 <= relL2 ||want||_2
  /// over the result (NaN where the reference has NaN), for kernels whose
  /// error is a rounding per element of a 16-bit intermediate (cuDNN's
  /// attention) rather than bounded per element by the largest value.
  double relL2 = 0;
};

const Tolerance kSameBytes{0, true};
const Tolerance kSameBits{0, false};

/// One ulp of the result type at max |want|: a difference in the compute
/// type that tips a value across a rounding boundary of its storage type
/// (16-bit results; for f32 and f64 this adds one ulp).
inline double oneUlp(DType t) { return 2 * storageEps(t); }

/// A function the CPU takes from libm (f64 everywhere; log, cos, sin, pow;
/// exp, tanh and erf below f32) and the GPU from CUDA's math library: each
/// within 1 to 4 ulp of the exact result (CUDA's documented bounds; glibc
/// is within 1-2), so the two within 8 ulp of the compute type (16 u),
/// plus one ulp of a 16-bit result.
inline Tolerance mathLibrary(DType t) {
  return {16 * computeEps(t) + oneUlp(t)};
}

/// Per-element math shared by both devices (runtime/src/math/, compiled
/// without FMA contraction): bit for bit, except f64, which the CUDA files
/// evaluate with CUDA's double exp, erf and tanh in place of libm's.
inline Tolerance sharedMath(DType t) {
  return t == kF64 ? mathLibrary(t) : kSameBits;
}

/// A GEMM with K-term dot products (cuBLASLt picks its own blocking and
/// split-K order; OpenBLAS another). Either side's error is at most
/// gamma_K sum_k |a_k b_k| ~ K u sum |ab|, and typically sqrt(K) u sum |ab|
/// (random rounding). With operands uniform in [-1, 1], sum |ab| ~ K / 4
/// while max |c| over a result is ~ sqrt(K), so both typical errors
/// together are ~ K u / 2 of max |c|; 4 (K + 1) u leaves a factor of 8
/// (and is the worst-case bound up to K ~ 256). u is 2^-24 for f32, f16 and
/// bf16 (f32 accumulation, as the contract says: TF32 or 16-bit
/// accumulation fails here), 2^-53 for f64; 16-bit results add one ulp.
inline Tolerance gemmOf(DType t, int64_t k) {
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
inline Tolerance sumOf(DType t, int64_t n) {
  return {oneUlp(t) + 4 * double(n) * std::sqrt(double(n)) * 0x1p-53};
}

/// softmax over rows of n: each p_j is within (n + 8) u p_j of the exact
/// value on either device (the n-term sum, exp, the division), so within
/// 4 (n + 8) u of max p together. Only f64 needs it (the CUDA file sums in
/// math/SoftmaxSum.h's 128 partial sums with CUDA's exp; below f64 it
/// matches the CPU's order).
inline Tolerance softmaxOf(DType t, int64_t n) {
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
inline Tolerance crossEntropyOf(DType t, int64_t classes, int64_t rows,
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

inline Call makeCall(Opcode op, std::vector<TestTensor> inputs,
                     std::vector<TestTensor> outputs,
                     std::vector<int64_t> ints = {},
                     std::vector<double> floats = {}) {
  return Call{op,
              std::move(inputs),
              std::move(outputs),
              std::move(ints),
              std::move(floats),
              -1,
              {}};
}

inline int aliasOf(const Call &c, size_t result) {
  return result < c.aliases.size() ? c.aliases[result] : -1;
}

/// "add(f32[3, 129], f32[3, 129]) -> f32[3, 129] ints [] floats []".
inline std::string describe(const Call &c) {
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
inline Status invoke(const Call &c, const std::vector<void *> &in,
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
inline Status runReference(const Call &c, std::vector<TestTensor> &results) {
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
/// copied back. The first error of launch and synchronize. A result's own
/// buffer starts with every byte 0xff (NaN in every float type, -1 in the
/// integers), where the reference's start as zeros: an element the kernel
/// leaves unwritten differs, also where zero would be its right value (a
/// step's arenas hold the last instruction's bytes, not zeros).
inline Status runOnDevice(Device &device, const Call &c,
                          std::vector<TestTensor> &results,
                          std::vector<TestTensor> &operands) {
  Stream &stream = device.computeStream();
  std::vector<std::unique_ptr<Buffer>> buffers;
  // Alive until the stream is synchronized: copies may still read them.
  std::vector<std::vector<uint8_t>> poison;
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
    if (aliasOf(c, i) >= 0) {
      out[i] = in[aliasOf(c, i)];
      continue;
    }
    TRAINC_RETURN_IF_ERROR(allocate(c.outputs[i], out[i]));
    poison.emplace_back(bytesOf(c.outputs[i]), uint8_t(0xff));
    TRAINC_RETURN_IF_ERROR(device.copyToDevice(static_cast<char *>(out[i]),
                                               poison.back().data(),
                                               poison.back().size(), stream));
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
inline ::testing::AssertionResult matches(const TestTensor &got,
                                          const TestTensor &want, Tolerance tol,
                                          bool exact) {
  if (got.dims() != want.dims() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "wrong dtype or shape";
  if (!exact && tol.relL2 > 0) {
    double diff = 0, norm = 0;
    int64_t nanMismatches = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      double a = got.get(i), b = want.get(i);
      if (std::isnan(b) || std::isnan(a)) {
        nanMismatches += std::isnan(a) != std::isnan(b);
        continue;
      }
      diff += (a - b) * (a - b);
      norm += b * b;
    }
    double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
    if (nanMismatches == 0 && rel <= tol.relL2)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << dtypeName(want.dtype()) << shapeString(want.dims())
           << ": relative L2 error " << rel << ", expected at most "
           << tol.relL2 << "; " << nanMismatches
           << " elements NaN on one side only";
  }
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
    check(c, std::vector<Tolerance>(c.outputs.size(), tol));
  }
  /// The same with result i held to tols[i] (results of different types).
  void check(const Call &c, const std::vector<Tolerance> &tols) {
    SCOPED_TRACE(describe(c));
    ASSERT_EQ(tols.size(), c.outputs.size()) << "a tolerance per result";
    std::vector<TestTensor> want, got, operands;
    Status ref = runReference(c, want);
    ASSERT_TRUE(ref.ok()) << "the CPU reference failed: " << ref.toString();
    Status s = runOnDevice(*device_, c, got, operands);
    ASSERT_TRUE(s.ok()) << device_->name() << ": " << s.toString();
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(matches(got[i], want[i], tols[i], exact())) << "result " << i;
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

/// Shapes of the elementwise cases: one element, odd, and long rows.
inline const std::vector<std::vector<int64_t>> kElementwiseShapes = {
    {1}, {37}, {3, 129}, {2, 3, 4099}};

} // namespace trainc::device_kernels

#endif // TRAINC_TEST_UNIT_RUNTIME_DEVICEKERNELSHARNESS_H
