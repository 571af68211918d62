//===- CpuPatchesTest.cpp - extract_patches and fold_patches --------------===//
//
// Both kernels against references written from the ops' definitions
// (GraphOps.td), on random windows of 1 to 3 spatial dimensions with
// padding wider than the kernel reach, strides, dilations and sizes down
// to 1, every result bracketed by guard bytes that must stay untouched:
// - extract_patches equals the definition exactly (it copies), in f32,
//   f16, i64 and i8;
// - fold_patches equals math::foldPatchesAt bit for bit (the per-element
//   sum the CUDA kernel computes), and the definition's float64 sum
//   within the f32 rounding of at most K terms;
// - fold_patches is extract_patches' transpose: <extract(x), p> equals
//   <x, fold(p)> (float64 data of small integers: exact).
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "math/Patches.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace trainc::cpu::testing {
namespace {

struct Window {
  int d = 0;
  int64_t n = 1, c = 1;
  std::vector<int64_t> spatial, kernel, stride, dilation, low, high, out;

  std::vector<int64_t> xDims() const {
    std::vector<int64_t> dims{n, c};
    dims.insert(dims.end(), spatial.begin(), spatial.end());
    return dims;
  }
  std::vector<int64_t> patchDims() const {
    std::vector<int64_t> dims{c};
    dims.insert(dims.end(), kernel.begin(), kernel.end());
    dims.push_back(n);
    dims.insert(dims.end(), out.begin(), out.end());
    return dims;
  }
  std::vector<int64_t> ints() const {
    std::vector<int64_t> v;
    for (const auto *list : {&kernel, &stride, &dilation, &low})
      v.insert(v.end(), list->begin(), list->end());
    return v;
  }
  std::string describe() const {
    std::string s = "n " + std::to_string(n) + " c " + std::to_string(c);
    for (int i = 0; i < d; ++i)
      s += " | S " + std::to_string(spatial[i]) + " K " +
           std::to_string(kernel[i]) + " stride " + std::to_string(stride[i]) +
           " dil " + std::to_string(dilation[i]) + " pad " +
           std::to_string(low[i]) + "/" + std::to_string(high[i]) + " O " +
           std::to_string(out[i]);
    return s;
  }
};

/// Whether the CPU kernels read w's patches through their table of
/// sources (cpu/Patches.cpp: rows of fewer than kTableWidth = 8 outputs)
/// rather than row by row.
bool byTable(const Window &w) { return w.out.back() < 8; }

/// A random window whose every output size is at least 1; its last
/// dimension is long (8 to 70 elements: rows of 8 outputs or more, and
/// with stride 2 rows past the 16 a vector copies at once) about half the
/// time.
Window randomWindow(std::mt19937 &rng) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  for (;;) {
    Window w;
    w.d = pick(1, 3);
    w.n = pick(1, 3);
    w.c = pick(1, 3);
    bool ok = true;
    bool longRows = pick(0, 1) == 1;
    for (int i = 0; i < w.d; ++i) {
      w.spatial.push_back(longRows && i == w.d - 1 ? pick(8, 70) : pick(1, 7));
      w.kernel.push_back(pick(1, 4));
      w.stride.push_back(pick(1, 3));
      w.dilation.push_back(pick(1, 2));
      w.low.push_back(pick(0, 4));
      w.high.push_back(pick(0, 4));
      int64_t padded = w.spatial[i] + w.low[i] + w.high[i];
      int64_t span = (w.kernel[i] - 1) * w.dilation[i] + 1;
      if (padded < span) {
        ok = false;
        break;
      }
      w.out.push_back((padded - span) / w.stride[i] + 1);
    }
    if (ok)
      return w;
  }
}

int64_t product(const std::vector<int64_t> &v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}

/// Calls `visit(patch index, x index or -1)` for every patch element, by
/// the definition: s_i = o_i stride_i + k_i dilation_i - low_i.
template <typename Visit>
void forEachPatchElement(const Window &w, Visit visit) {
  std::vector<int64_t> dims = w.patchDims(), index(dims.size(), 0);
  for (int64_t e = 0, total = product(dims); e < total; ++e) {
    int64_t c = index[0], n = index[w.d + 1], at = n * w.c + c;
    bool inside = true;
    for (int i = 0; i < w.d; ++i) {
      int64_t s = index[w.d + 2 + i] * w.stride[i] +
                  index[1 + i] * w.dilation[i] - w.low[i];
      inside = inside && s >= 0 && s < w.spatial[i];
      at = at * w.spatial[i] + s;
    }
    visit(e, inside ? at : int64_t(-1));
    for (int i = int(dims.size()) - 1; i >= 0 && ++index[i] == dims[i]; --i)
      index[i] = 0;
  }
}

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

/// Runs `op` on `input` into a result of `dims` and `dtype` bracketed by
/// guard bytes; fails the test when a guard byte changed.
TestTensor runGuarded(Opcode op, const TestTensor &input, DType dtype,
                      const std::vector<int64_t> &dims,
                      const std::vector<int64_t> &ints) {
  TestTensor result(dtype, dims);
  size_t bytes = size_t(product(dims)) * dtypeSize(dtype);
  std::vector<uint8_t> buffer(bytes + 2 * kGuard, kGuardByte);
  TensorRef in = input.ref(), out = result.ref();
  out.data = buffer.data() + kGuard;
  KernelContext context;
  KernelCall call{
      op,           {&in, 1}, &out, 1, {ints.data(), int64_t(ints.size())},
      {nullptr, 0}, &context};
  Status s = runPatches(call);
  EXPECT_TRUE(s.ok()) << s.toString();
  for (size_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(buffer[i], kGuardByte) << "wrote before the result";
    EXPECT_EQ(buffer[kGuard + bytes + i], kGuardByte)
        << "wrote past the result";
  }
  std::memcpy(result.ref().data, out.data, bytes);
  return result;
}

TEST(CpuPatches, ExtractIsTheDefinitionInEveryDtype) {
  std::mt19937 rng(91);
  // The window ConvNeXt's depthwise 7x7 convolution has on a 2x2 map:
  // padding reaches past every output position for some kernel rows.
  std::vector<Window> windows;
  Window wide;
  wide.d = 2;
  wide.n = 2;
  wide.c = 3;
  wide.spatial = {2, 2};
  wide.kernel = {7, 7};
  wide.stride = {1, 1};
  wide.dilation = {1, 1};
  wide.low = {3, 3};
  wide.high = {3, 3};
  wide.out = {2, 2};
  windows.push_back(wide);
  for (int t = 0; t < 300; ++t)
    windows.push_back(randomWindow(rng));
  for (const Window &w : windows)
    for (DType dtype : {DType::F32, DType::F16, DType::I64, DType::I8}) {
      SCOPED_TRACE(w.describe() + " " + dtypeName(dtype));
      int64_t count = product(w.xDims());
      std::vector<double> values(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        values[size_t(i)] = double(i % 97) - 48; // exact in every dtype
      TestTensor x(dtype, w.xDims(), values);
      TestTensor p =
          runGuarded(Opcode::ExtractPatches, x, dtype, w.patchDims(), w.ints());
      int64_t wrong = 0;
      forEachPatchElement(w, [&](int64_t e, int64_t at) {
        double want = at < 0 ? 0.0 : values[size_t(at)];
        wrong += p.get(e) != want;
      });
      EXPECT_EQ(wrong, 0);
    }
}

TEST(CpuPatches, FoldIsTheSharedSumAndTheDefinitionsInEveryFloat) {
  std::mt19937 rng(92);
  std::uniform_real_distribution<double> value(-1, 1);
  int tables = 0;
  for (int t = 0; t < 300; ++t) {
    Window w = randomWindow(rng);
    tables += byTable(w);
    for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
      SCOPED_TRACE(w.describe() + " " + dtypeName(dtype));
      int64_t count = product(w.patchDims());
      std::vector<double> values(static_cast<size_t>(count));
      for (double &v : values)
        v = value(rng);
      TestTensor p(dtype, w.patchDims(), values);
      TestTensor x =
          runGuarded(Opcode::FoldPatches, p, dtype, w.xDims(), w.ints());
      // The definition in float64, with the sum of magnitudes for a bound.
      int64_t planes = product(w.xDims());
      std::vector<double> sum(static_cast<size_t>(planes), 0.0),
          magnitude(static_cast<size_t>(planes), 0.0);
      forEachPatchElement(w, [&](int64_t e, int64_t at) {
        if (at < 0)
          return;
        sum[size_t(at)] += p.get(e);
        magnitude[size_t(at)] += std::fabs(p.get(e));
      });
      std::vector<int64_t> xDims = w.xDims(), pDims = w.patchDims();
      math::PatchGeometry g =
          math::patchGeometry(w.ints().data(), w.d, xDims.data(), pDims.data());
      int64_t plane = product(w.spatial), kernels = product(w.kernel);
      int64_t notShared = 0, outside = 0;
      for (int64_t i = 0; i < planes; ++i) {
        double got = x.get(i);
        // math/Patches.h's sum, rounded as the kernel stores it.
        double shared =
            dtype == DType::F64
                ? math::foldPatchesAt<double>(
                      g, i / plane / w.c, i / plane % w.c, i % plane,
                      [&](int64_t e) { return p.get(e); })
                : double(math::foldPatchesAt<float>(
                      g, i / plane / w.c, i / plane % w.c, i % plane,
                      [&](int64_t e) { return float(p.get(e)); }));
        TestTensor rounded(dtype, {1}, {shared});
        notShared += got != rounded.get(0);
        // K additions in the compute type, then one rounding to storage.
        double bound = (kernels * computeEps(dtype)) * magnitude[size_t(i)] +
                       storageEps(dtype) * std::fabs(sum[size_t(i)]);
        outside += !(std::fabs(got - sum[size_t(i)]) <= bound);
      }
      EXPECT_EQ(notShared, 0);
      EXPECT_EQ(outside, 0);
    }
  }
  // Both of the kernel's ways are exercised.
  EXPECT_GE(tables, 60);
  EXPECT_LE(tables, 240);
}

TEST(CpuPatches, FoldIsTheTransposeOfExtract) {
  std::mt19937 rng(93);
  std::uniform_int_distribution<int> small(-8, 8);
  for (int t = 0; t < 100; ++t) {
    Window w = randomWindow(rng);
    SCOPED_TRACE(w.describe());
    std::vector<double> xv(size_t(product(w.xDims()))),
        pv(size_t(product(w.patchDims())));
    for (double &v : xv)
      v = small(rng);
    for (double &v : pv)
      v = small(rng);
    TestTensor x(DType::F64, w.xDims(), xv), p(DType::F64, w.patchDims(), pv);
    TestTensor ex = runGuarded(Opcode::ExtractPatches, x, DType::F64,
                               w.patchDims(), w.ints());
    TestTensor fp =
        runGuarded(Opcode::FoldPatches, p, DType::F64, w.xDims(), w.ints());
    double left = 0, right = 0;
    for (size_t i = 0; i < pv.size(); ++i)
      left += ex.get(int64_t(i)) * pv[i];
    for (size_t i = 0; i < xv.size(); ++i)
      right += xv[i] * fp.get(int64_t(i));
    EXPECT_EQ(left, right);
  }
}

} // namespace
} // namespace trainc::cpu::testing
