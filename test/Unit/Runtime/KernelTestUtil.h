//===- KernelTestUtil.h - Tensors and calls for kernel tests ---*- C++ -*-===//
//
// A tensor that owns its bytes, filled from doubles (rounded to its dtype
// exactly as the kernels store), and a helper that builds a KernelCall and
// runs one kernel family on it. References in the tests read the rounded
// inputs back with get(), so they compute on the values the kernel saw.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TEST_UNIT_RUNTIME_KERNELTESTUTIL_H
#define TRAINC_TEST_UNIT_RUNTIME_KERNELTESTUTIL_H

#include "cpu/KernelUtil.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace trainc::cpu::testing {

class TestTensor {
public:
  TestTensor(DType dtype, std::vector<int64_t> dims)
      : dtype_(dtype), dims_(std::move(dims)) {
    bytes_.assign(size() * dtypeSize(dtype_), 0);
  }
  TestTensor(DType dtype, std::vector<int64_t> dims,
             const std::vector<double> &values)
      : TestTensor(dtype, std::move(dims)) {
    for (int64_t i = 0; i < size(); ++i)
      set(i, values[i]);
  }

  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : dims_)
      n *= d;
    return n;
  }
  const std::vector<int64_t> &dims() const { return dims_; }
  DType dtype() const { return dtype_; }

  TensorRef ref() const {
    TensorRef r;
    r.dtype = dtype_;
    r.rank = int(dims_.size());
    r.dims = dims_.data();
    r.data = const_cast<uint8_t *>(bytes_.data());
    return r;
  }
  double get(int64_t i) const { return loadAs<double>(ref(), i); }
  void set(int64_t i, double v) { storeAs(ref(), i, v); }
  std::vector<double> values() const {
    std::vector<double> v(size());
    for (int64_t i = 0; i < size(); ++i)
      v[i] = get(i);
    return v;
  }

private:
  DType dtype_;
  std::vector<int64_t> dims_;
  std::vector<uint8_t> bytes_;
};

/// `n` values uniform in [lo, hi), reproducible from `seed`.
inline std::vector<double> randomValues(int64_t n, uint32_t seed,
                                        double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

/// A tensor of `dims` with random values in [lo, hi).
inline TestTensor randomTensor(DType dtype, std::vector<int64_t> dims,
                               uint32_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return TestTensor(dtype, std::move(dims), randomValues(n, seed, lo, hi));
}

/// A dot_general's dimension numbers.
struct DotDims {
  std::vector<int64_t> lhsBatch, rhsBatch, lhsContract, rhsContract;
};

/// DotGeneral's (and DotGeneralBias's) ints for `dd`, the operand rounding
/// last.
inline std::vector<int64_t>
dotInts(const DotDims &dd, OperandRounding rounding = OperandRounding::Exact) {
  std::vector<int64_t> ints = {int64_t(dd.lhsBatch.size()),
                               int64_t(dd.lhsContract.size())};
  for (const auto *list :
       {&dd.lhsBatch, &dd.rhsBatch, &dd.lhsContract, &dd.rhsContract})
    ints.insert(ints.end(), list->begin(), list->end());
  ints.push_back(int64_t(rounding));
  return ints;
}

/// The number of elements of `a` and `b` (one shape) whose values differ
/// (compared as doubles, which hold every dtype's values exactly).
inline int64_t countDifferent(const TestTensor &a, const TestTensor &b) {
  int64_t n = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    n += a.get(i) != b.get(i);
  return n;
}

/// Builds a KernelCall for `op` and passes it to `family` (runSoftmax, ...).
inline Status runKernel(Status (*family)(const KernelCall &), Opcode op,
                        const std::vector<const TestTensor *> &inputs,
                        const std::vector<TestTensor *> &outputs,
                        const std::vector<int64_t> &ints,
                        const std::vector<double> &floats = {},
                        int64_t step = 0, Collective *collective = nullptr) {
  std::vector<TensorRef> in, out;
  for (const TestTensor *t : inputs)
    in.push_back(t->ref());
  for (TestTensor *t : outputs)
    out.push_back(t->ref());
  KernelContext context;
  context.step = step;
  context.collective = collective;
  KernelCall call{op,
                  {in.data(), int64_t(in.size())},
                  out.data(),
                  int(out.size()),
                  {ints.data(), int64_t(ints.size())},
                  {floats.data(), int64_t(floats.size())},
                  &context};
  return family(call);
}

/// Unit roundoff (half an ulp at 1) of the compute type for `t`: f64 for
/// f64, f32 otherwise.
inline double computeEps(DType t) {
  return t == DType::F64 ? 0x1p-53 : 0x1p-24;
}

/// Unit roundoff of storing a value in `t`.
inline double storageEps(DType t) {
  switch (t) {
  case DType::F64:
    return 0x1p-53;
  case DType::F16:
    return 0x1p-11;
  case DType::BF16:
    return 0x1p-8;
  default:
    return 0x1p-24;
  }
}

} // namespace trainc::cpu::testing

#endif // TRAINC_TEST_UNIT_RUNTIME_KERNELTESTUTIL_H
