//===- Patches.cpp - extract_patches and fold_patches ---------------------===//
//
// A convolution's patches (im2col) and their transpose (col2im), by the
// geometry and order of math/Patches.h. Both walk rows: a row of the
// patches is one (c, k..., n, o_1..o_{d-1}), whose elements run along the
// last output dimension and read one row of x (or padding) with the last
// dimension's stride.
//
// extract_patches copies each row's elements (any dtype: bytes of 1, 2,
// 4 or 8), zeros where the window is in the padding. fold_patches works
// on one (n, c) plane of x at a time: an accumulator plane (f32, or f64
// for f64) starts at 0 and takes the patch rows of every kernel position
// in row-major order, so each element of x sums its terms in math/
// Patches.h's order, which CUDA's one-thread-per-element kernel follows.
//
// Rows shorter than kTableWidth (a ResNet's last stages: 4x4 and 2x2
// images, rows of 4 and 2) cost more in their bookkeeping than in their
// copies. There both kernels read a table instead, made once per call:
// for each kernel position k and output position o, the plane offset
// that patch element (k, o) reads, or -1 (padding). extract_patches
// copies a (c, k, n) run of all O outputs through it; fold_patches adds
// each plane's patch elements through it, kernel position by kernel
// position, the same terms in the same order.
//
//===----------------------------------------------------------------------===//

#include "math/Patches.h"
#include "base/Parallel.h"
#include "cpu/Clones.h"
#include "cpu/KernelUtil.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace trainc::cpu {
namespace {

using math::PatchGeometry;

/// Row r of the patches (r over C K... N O_1..O_{d-1}) in its parts.
struct PatchRow {
  int64_t c, n, k[math::kMaxPatchDims], o[math::kMaxPatchDims];
};

PatchRow decodeRow(const PatchGeometry &g, int64_t r) {
  PatchRow row = {};
  for (int i = g.d - 2; i >= 0; --i) {
    row.o[i] = r % g.out[i];
    r /= g.out[i];
  }
  row.n = r % g.n;
  r /= g.n;
  for (int i = g.d - 1; i >= 0; --i) {
    row.k[i] = r % g.kernel[i];
    r /= g.kernel[i];
  }
  row.c = r;
  return row;
}

/// The row after `row`: the odometer of decodeRow's digits.
void nextRow(const PatchGeometry &g, PatchRow &row) {
  for (int i = g.d - 2; i >= 0; --i) {
    if (++row.o[i] < g.out[i])
      return;
    row.o[i] = 0;
  }
  if (++row.n < g.n)
    return;
  row.n = 0;
  for (int i = g.d - 1; i >= 0; --i) {
    if (++row.k[i] < g.kernel[i])
      return;
    row.k[i] = 0;
  }
  ++row.c;
}

/// The offset in x's plane of the row a patch row reads (its spatial
/// coordinates before the last), or -1 when that row is padding.
int64_t sourceRow(const PatchGeometry &g, const PatchRow &row) {
  int64_t at = 0;
  for (int i = 0; i + 1 < g.d; ++i) {
    int64_t s = math::patchSource(row.o[i], row.k[i], g.stride[i],
                                  g.dilation[i], g.padLow[i]);
    if (s < 0 || s >= g.spatial[i])
      return -1;
    at = at * g.spatial[i] + s;
  }
  return at * g.spatial[g.d - 1];
}

/// The output positions [lo, hi) of the last dimension whose reads at
/// kernel position k fall inside its `size` elements.
std::pair<int64_t, int64_t> insideRange(const PatchGeometry &g, int64_t k) {
  int last = g.d - 1;
  int64_t stride = g.stride[last],
          first = g.padLow[last] - k * g.dilation[last];
  // s = o * stride - first: s >= 0 from o = ceil(first / stride), s < size
  // below o = ceil((size + first) / stride).
  auto ceilDiv = [](int64_t a, int64_t b) {
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
  };
  int64_t lo = std::clamp<int64_t>(ceilDiv(first, stride), 0, g.out[last]);
  int64_t hi = std::clamp<int64_t>(ceilDiv(g.spatial[last] + first, stride), lo,
                                   g.out[last]);
  return {lo, hi};
}

/// insideRange for each kernel position of the last dimension, with the
/// input position its first output position reads.
struct LastRange {
  int64_t lo, hi, first;
};
std::vector<LastRange> lastRanges(const PatchGeometry &g) {
  int last = g.d - 1;
  std::vector<LastRange> ranges;
  for (int64_t k = 0; k < g.kernel[last]; ++k) {
    auto [lo, hi] = insideRange(g, k);
    ranges.push_back({lo, hi,
                      math::patchSource(lo, k, g.stride[last], g.dilation[last],
                                        g.padLow[last])});
  }
  return ranges;
}

/// Rows shorter than this read a table of source offsets.
constexpr int64_t kTableWidth = 8;

bool byTable(const PatchGeometry &g) {
  return g.out[g.d - 1] < kTableWidth &&
         g.kernelSize() * g.outSize() <= (int64_t(1) << 20);
}

/// For each kernel position k and output position o (K O entries, k
/// major, both row-major over their dimensions), the offset in x's plane
/// that patch element (k, o) reads, or -1 where it reads padding.
std::vector<int64_t> sourceTable(const PatchGeometry &g) {
  int64_t kernels = g.kernelSize(), outs = g.outSize();
  std::vector<int64_t> table(size_t(kernels * outs));
  int64_t k[math::kMaxPatchDims] = {}, o[math::kMaxPatchDims] = {};
  for (int64_t kk = 0; kk < kernels; ++kk) {
    for (int64_t oo = 0; oo < outs; ++oo) {
      int64_t at = 0;
      for (int i = 0; i < g.d && at >= 0; ++i) {
        int64_t s = math::patchSource(o[i], k[i], g.stride[i], g.dilation[i],
                                      g.padLow[i]);
        at = s < 0 || s >= g.spatial[i] ? -1 : at * g.spatial[i] + s;
      }
      table[size_t(kk * outs + oo)] = at;
      for (int i = g.d - 1; i >= 0 && ++o[i] == g.out[i]; --i)
        o[i] = 0;
    }
    for (int i = g.d - 1; i >= 0 && ++k[i] == g.kernel[i]; --i)
      k[i] = 0;
  }
  return table;
}

/// extract_patches through sourceTable: run (c, k, n) of the patches is
/// all O outputs of kernel position k of plane (n, c).
template <typename T>
void extractByTable(const PatchGeometry &g, const T *x, T *p) {
  std::vector<int64_t> table = sourceTable(g);
  int64_t kernels = g.kernelSize(), outs = g.outSize(), plane = g.spatialSize();
  parallelFor(g.c * kernels * g.n, std::max<int64_t>(1, 16384 / outs),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  int64_t n = r % g.n, k = r / g.n % kernels,
                          c = r / (g.n * kernels);
                  const T *in = x + (n * g.c + c) * plane;
                  const int64_t *at = table.data() + k * outs;
                  T *out = p + r * outs;
                  for (int64_t o = 0; o < outs; ++o)
                    out[o] = at[o] >= 0 ? in[at[o]] : T(0);
                }
              });
}

/// out[i] = in[i * stride] for i < count. A stride of 2 (a stride-2
/// convolution's or pool's rows) as its own loop, which the compiler
/// vectorizes (consecutive loads, then a shuffle) where the loop over any
/// stride moved one element at a time, waiting on each load; compiled for
/// AVX-512, AVX2 and the baseline (Clones.h), the same copy in each.
template <typename T>
TRAINC_CPU_CLONES void copyStrided(const T *in, T *out, int64_t count,
                                   int64_t stride) {
  if (stride == 2) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = in[2 * i];
    return;
  }
  for (int64_t i = 0; i < count; ++i)
    out[i] = in[i * stride];
}

template <typename T>
void extractRows(const PatchGeometry &g, const T *x, T *p) {
  if (byTable(g))
    return extractByTable(g, x, p);
  int last = g.d - 1;
  int64_t width = g.out[last], plane = g.spatialSize();
  int64_t stride = g.stride[last];
  std::vector<LastRange> ranges = lastRanges(g);
  int64_t rows = g.c * g.kernelSize() * g.n * (g.outSize() / width);
  parallelFor(rows, std::max<int64_t>(1, 16384 / width),
              [&](int64_t begin, int64_t end) {
                PatchRow row = decodeRow(g, begin);
                for (int64_t r = begin; r < end; ++r, nextRow(g, row)) {
                  T *out = p + r * width;
                  int64_t at = sourceRow(g, row);
                  const LastRange &range = ranges[size_t(row.k[last])];
                  int64_t lo = range.lo, hi = range.hi;
                  if (at < 0)
                    lo = hi = 0;
                  std::fill(out, out + lo, T(0));
                  std::fill(out + hi, out + width, T(0));
                  if (lo == hi)
                    continue;
                  const T *in =
                      x + (row.n * g.c + row.c) * plane + at + range.first;
                  if (stride == 1)
                    std::memcpy(out + lo, in, size_t(hi - lo) * sizeof(T));
                  else
                    copyStrided(in, out + lo, hi - lo, stride);
                }
              });
}

/// The patches' elements as Acc: f32 and f64 read in place, 16-bit floats
/// converted row by row.
template <typename Acc> struct PatchReader {
  const TensorRef &p;
  std::vector<Acc> row;
  const Acc *read(int64_t at, int64_t count) {
    if ((std::is_same_v<Acc, float> && p.dtype == DType::F32) ||
        (std::is_same_v<Acc, double> && p.dtype == DType::F64))
      return p.as<Acc>() + at;
    row.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i)
      row[size_t(i)] = loadAs<Acc>(p, at + i);
    return row.data();
  }
};

/// Plane nc's sums from `acc` into x.
template <typename Acc>
void storePlane(const TensorRef &x, int64_t nc, int64_t plane,
                const std::vector<Acc> &acc) {
  if constexpr (std::is_same_v<Acc, float>)
    if (x.dtype == DType::F32) {
      std::memcpy(x.as<float>() + nc * plane, acc.data(),
                  size_t(plane) * sizeof(float));
      return;
    }
  for (int64_t s = 0; s < plane; ++s)
    storeAs<Acc>(x, nc * plane + s, acc[size_t(s)]);
}

/// fold_patches through sourceTable: plane (n, c) adds the runs (c, k, n)
/// for k in order.
template <typename Acc>
void foldByTable(const PatchGeometry &g, const TensorRef &p,
                 const TensorRef &x) {
  std::vector<int64_t> table = sourceTable(g);
  int64_t kernels = g.kernelSize(), outs = g.outSize(), plane = g.spatialSize();
  parallelFor(g.n * g.c, std::max<int64_t>(1, 4096 / (kernels * outs)),
              [&](int64_t begin, int64_t end) {
                std::vector<Acc> acc(static_cast<size_t>(plane));
                PatchReader<Acc> reader{p, {}};
                for (int64_t nc = begin; nc < end; ++nc) {
                  int64_t n = nc / g.c, c = nc % g.c;
                  std::fill(acc.begin(), acc.end(), Acc(0));
                  for (int64_t k = 0; k < kernels; ++k) {
                    const Acc *in =
                        reader.read(((c * kernels + k) * g.n + n) * outs, outs);
                    const int64_t *at = table.data() + k * outs;
                    for (int64_t o = 0; o < outs; ++o)
                      if (at[o] >= 0)
                        acc[size_t(at[o])] += in[o];
                  }
                  storePlane(x, nc, plane, acc);
                }
              });
}

template <typename Acc>
void foldPlanes(const PatchGeometry &g, const TensorRef &p,
                const TensorRef &x) {
  if (byTable(g))
    return foldByTable<Acc>(g, p, x);
  int last = g.d - 1;
  int64_t width = g.out[last], plane = g.spatialSize();
  int64_t stride = g.stride[last];
  int64_t outerOuts = g.outSize() / width, kernels = g.kernelSize();
  std::vector<LastRange> ranges = lastRanges(g);
  parallelFor(g.n * g.c, 1, [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc(static_cast<size_t>(plane));
    PatchReader<Acc> reader{p, {}};
    for (int64_t nc = begin; nc < end; ++nc) {
      int64_t n = nc / g.c, c = nc % g.c;
      std::fill(acc.begin(), acc.end(), Acc(0));
      // The rows of plane (n, c): kernel positions in row-major order
      // (an odometer over row.k), output rows within each.
      PatchRow row = {};
      row.c = c;
      row.n = n;
      // The output rows' odometer: back to all zeros after outerOuts steps.
      auto nextOuter = [&](PatchRow &at) {
        for (int i = last - 1; i >= 0; --i) {
          if (++at.o[i] < g.out[i])
            return;
          at.o[i] = 0;
        }
      };
      for (int64_t k = 0; k < kernels; ++k) {
        int64_t first = ((c * kernels + k) * g.n + n) * outerOuts;
        const LastRange &range = ranges[size_t(row.k[last])];
        int64_t lo = range.lo, hi = range.hi;
        for (int64_t r = first; r < first + outerOuts; ++r, nextOuter(row)) {
          int64_t at = sourceRow(g, row);
          if (at < 0 || lo == hi)
            continue;
          const Acc *in = reader.read(r * width + lo, hi - lo);
          Acc *out = acc.data() + at + range.first;
          if (stride == 1)
            for (int64_t o = 0; o < hi - lo; ++o)
              out[o] += in[o];
          else
            for (int64_t o = 0; o < hi - lo; ++o)
              out[o * stride] += in[o];
        }
        for (int i = last; i >= 0; --i) {
          if (++row.k[i] < g.kernel[i])
            break;
          row.k[i] = 0;
        }
      }
      storePlane(x, nc, plane, acc);
    }
  });
}

} // namespace

Status runPatches(const KernelCall &call) {
  bool extract = call.op == Opcode::ExtractPatches;
  const TensorRef &x = extract ? call.inputs[0] : call.outputs[0];
  const TensorRef &p = extract ? call.outputs[0] : call.inputs[0];
  PatchGeometry g =
      math::patchGeometry(call.ints.data, x.rank - 2, x.dims, p.dims);
  if (extract) {
    switch (dtypeSize(x.dtype)) {
    case 1:
      extractRows(g, x.as<uint8_t>(), p.as<uint8_t>());
      return okStatus();
    case 2:
      extractRows(g, x.as<uint16_t>(), p.as<uint16_t>());
      return okStatus();
    case 4:
      extractRows(g, x.as<uint32_t>(), p.as<uint32_t>());
      return okStatus();
    case 8:
      extractRows(g, x.as<uint64_t>(), p.as<uint64_t>());
      return okStatus();
    }
    return unsupportedDType(call, x.dtype);
  }
  switch (x.dtype) {
  case DType::F64:
    foldPlanes<double>(g, p, x);
    return okStatus();
  case DType::F32:
  case DType::F16:
  case DType::BF16:
    foldPlanes<float>(g, p, x);
    return okStatus();
  default:
    return unsupportedDType(call, x.dtype);
  }
}

} // namespace trainc::cpu
