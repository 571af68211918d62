//===- Reduction.cpp - Reductions: sum, max, mean and product over dims ---===//
//
//   sum:  y[k] = sum_{r} x[k, r]
//   max:  y[k] = max_{r} x[k, r]        (NaN if any x[k, r] is NaN)
//   mean: y[k] = sum_{r} x[k, r] / R
//   prod: y[k] = prod_{r} x[k, r]
// where k runs over the kept dims (the result's, in order) and r over the
// R elements of the reduced dims (`ints`), which the result drops. An empty
// reduction (R = 0) gives 0 for sum, NaN for mean (0 / 0), 1 for prod and
// -inf (floats) or the lowest value (integers) for max.
//
// Shape legend: after dropping size-1 dims and merging neighbouring dims
// that are both kept or both reduced, the operand's innermost run of
// contiguous elements is either
//   - reduced (L elements): each output sums rows of L contiguous elements,
//     one row per combination of the other reduced dims; or
//   - kept (K elements): K neighbouring outputs read K contiguous elements
//     per reduced element, and accumulate side by side.
// Both shapes read memory sequentially; work is split over outputs, and
// when the innermost run is kept and there are many rows but few outputs
// (a bias gradient: [B, S, N] -> [N]), also over fixed blocks of rows,
// whose partial results are then combined in block order.
//
// Accumulation: float sums (and means) accumulate in double for every float
// dtype, not only f64. A double accumulator over at most 2^29 float terms
// has an error far below one float ulp of the sum's magnitude, so the f32
// result is the exact sum rounded once (up to cancellation), whatever the
// row length and summation order; an f32 accumulator loses ~n/2 ulps on a
// row of n similar values, and pairwise f32 summation would still lose
// ~log2(n). Converting float to double is exact and costs nothing next to
// the memory traffic. The sum is rounded to float before a 16-bit store, as
// if computed in f32; a 16-bit sum with an f32 result (the compiler's
// widened sum, where the 16-bit sum was only converted to f32) stores that
// float. Integer sums accumulate in int64 and wrap around in
// two's complement; storing to i32 keeps the low bits, which is the wrapped
// i32 sum. Max is exact in any type and works in the compute type.
// Products accumulate as sums do: in double for floats, wrapping int64
// for integers. Each double product rounds to 53 bits, so an f32 or 16-bit
// result is the exact product rounded once unless that lies within R 2^-53
// (relative) of a rounding boundary, or a partial product leaves double's
// range (2^-1074 .. 2^1024) where the whole product would not.
//
// Each output's terms are combined in a fixed order that depends only on
// the shape (row blocks included), so results do not depend on the thread
// count.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/KernelUtil.h"
#include "math/KeptRunBlocks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace trainc::cpu {
namespace {

/// Elements read per parallel chunk.
constexpr int64_t kGrain = 16384;

/// Neighbouring outputs accumulated together when the innermost dim is
/// kept: their accumulators stay in L1.
constexpr int64_t kTile = 2048;

// How each dtype is stored and loaded into its compute type.
struct F64 {
  using Storage = double;
  using Compute = double;
  static double load(double v) { return v; }
  static double store(double v) { return v; }
};
struct F32 {
  using Storage = float;
  using Compute = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};
struct F16 {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return f16ToFloat(v); }
  static uint16_t store(float v) { return floatToF16(v); }
};
struct BF16 {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return bf16ToFloat(v); }
  static uint16_t store(float v) { return floatToBf16(v); }
};
template <typename T> struct Int {
  using Storage = T;
  using Compute = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

template <typename Io>
constexpr bool kIsFloat = std::is_floating_point_v<typename Io::Compute>;

/// Sum (and mean): double for floats, wrapping int64 for integers.
template <typename Io> struct SumOp {
  using Acc = std::conditional_t<kIsFloat<Io>, double, int64_t>;
  static Acc init() { return 0; }
  static Acc load(typename Io::Storage v) { return Acc(Io::load(v)); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (kIsFloat<Io>)
      return a + b;
    else // Unsigned: overflow wraps instead of being undefined.
      return static_cast<int64_t>(uint64_t(a) + uint64_t(b));
  }
};

/// Product: double for floats, wrapping int64 for integers.
template <typename Io> struct ProdOp {
  using Acc = std::conditional_t<kIsFloat<Io>, double, int64_t>;
  static Acc init() { return 1; }
  static Acc load(typename Io::Storage v) { return Acc(Io::load(v)); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (kIsFloat<Io>)
      return a * b;
    else // Unsigned: overflow wraps instead of being undefined.
      return static_cast<int64_t>(uint64_t(a) * uint64_t(b));
  }
};

/// Max in the compute type; a NaN accumulator or operand wins.
template <typename Io> struct MaxOp {
  using Acc = typename Io::Compute;
  static Acc init() {
    if constexpr (kIsFloat<Io>)
      return -std::numeric_limits<Acc>::infinity();
    else
      return std::numeric_limits<Acc>::lowest();
  }
  static Acc load(typename Io::Storage v) { return Io::load(v); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (kIsFloat<Io>)
      return (a > b || std::isnan(a)) ? a : b;
    else
      return a > b ? a : b;
  }
};

/// The operand's dims, merged into the two layouts the header describes.
struct Geometry {
  /// The outer kept dims (sizes and strides in elements), row-major.
  std::vector<int64_t> keptSizes, keptStrides;
  /// Offset of each reduced row (or element, when the innermost run is
  /// kept), in the order the terms are combined.
  std::vector<int64_t> rowOffsets;
  /// Length of the innermost contiguous run and whether it is reduced.
  int64_t inner = 1;
  bool innerReduced = false;
};

Geometry analyze(const TensorRef &x, Span<int64_t> reducedDims) {
  std::vector<bool> reduced(x.rank, false);
  for (int64_t d : reducedDims)
    reduced[d] = true;
  std::vector<int64_t> strides = stridesOf(x);
  // Merged dims: in row-major order two neighbours (size-1 dims between
  // them aside) always merge into one of their product's size.
  struct Dim {
    int64_t size, stride;
    bool reduced;
  };
  std::vector<Dim> merged;
  for (int d = 0; d < x.rank; ++d) {
    if (x.dims[d] == 1)
      continue;
    if (!merged.empty() && merged.back().reduced == reduced[d]) {
      merged.back().size *= x.dims[d];
      merged.back().stride = strides[d];
    } else {
      merged.push_back({x.dims[d], strides[d], reduced[d]});
    }
  }

  Geometry g;
  if (!merged.empty()) {
    g.inner = merged.back().size;
    g.innerReduced = merged.back().reduced;
    merged.pop_back();
  }
  g.rowOffsets = {0};
  for (const Dim &d : merged) {
    if (!d.reduced) {
      g.keptSizes.push_back(d.size);
      g.keptStrides.push_back(d.stride);
      continue;
    }
    std::vector<int64_t> next;
    next.reserve(g.rowOffsets.size() * d.size);
    for (int64_t offset : g.rowOffsets)
      for (int64_t i = 0; i < d.size; ++i)
        next.push_back(offset + i * d.stride);
    g.rowOffsets = std::move(next);
  }
  return g;
}

/// Offset of the first element of kept-dims index `k` (row-major).
int64_t keptOffset(const Geometry &g, int64_t k) {
  int64_t offset = 0;
  for (int d = int(g.keptSizes.size()) - 1; d >= 0; --d) {
    offset += (k % g.keptSizes[d]) * g.keptStrides[d];
    k /= g.keptSizes[d];
  }
  return offset;
}

/// Reduces n contiguous elements. Eight independent partial results break
/// the dependency chain of the adds (and fit vector registers) while the
/// order stays fixed.
template <typename Op, typename S>
typename Op::Acc reduceRun(const S *p, int64_t n) {
  using Acc = typename Op::Acc;
  constexpr int kLanes = 8;
  Acc lanes[kLanes];
  std::fill(lanes, lanes + kLanes, Op::init());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k)
      lanes[k] = Op::combine(lanes[k], Op::load(p[i + k]));
  Acc acc = Op::init();
  for (int k = 0; k < kLanes; ++k)
    acc = Op::combine(acc, lanes[k]);
  for (; i < n; ++i)
    acc = Op::combine(acc, Op::load(p[i]));
  return acc;
}

/// acc[j] = the reduction of base[offsets[r] + j] over r < rows, in order,
/// for j < w: w neighbouring outputs side by side.
template <typename Op, typename S>
void accumulateRows(const S *base, const int64_t *offsets, int64_t rows,
                    int64_t w, typename Op::Acc *acc) {
  using Acc = typename Op::Acc;
  std::fill(acc, acc + w, Op::init());
  // Four rows per pass over acc (the same order of terms as one at a time)
  // to cut the loads and stores of the accumulators.
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const S *p0 = base + offsets[r], *p1 = base + offsets[r + 1];
    const S *p2 = base + offsets[r + 2], *p3 = base + offsets[r + 3];
    for (int64_t j = 0; j < w; ++j) {
      Acc a = Op::combine(acc[j], Op::load(p0[j]));
      a = Op::combine(a, Op::load(p1[j]));
      a = Op::combine(a, Op::load(p2[j]));
      acc[j] = Op::combine(a, Op::load(p3[j]));
    }
  }
  for (; r < rows; ++r) {
    const S *p = base + offsets[r];
    for (int64_t j = 0; j < w; ++j)
      acc[j] = Op::combine(acc[j], Op::load(p[j]));
  }
}

/// y[k] = finish(reduction of output k's terms) for every output.
template <typename Op, typename S, typename Y, typename Finish>
void reduce(const S *x, Y *y, int64_t outputs, const Geometry &g,
            Finish finish) {
  using Acc = typename Op::Acc;
  int64_t terms = int64_t(g.rowOffsets.size()) * (g.innerReduced ? g.inner : 1);
  int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(terms, 1));
  if (g.innerReduced) {
    parallelFor(outputs, grain, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const S *base = x + keptOffset(g, k);
        Acc acc = Op::init();
        for (int64_t offset : g.rowOffsets)
          acc = Op::combine(acc, reduceRun<Op>(base + offset, g.inner));
        y[k] = finish(acc);
      }
    });
    return;
  }
  int64_t rows = int64_t(g.rowOffsets.size());
  if (math::keptRunBlocked(!g.keptSizes.empty(), rows, outputs)) {
    // Few outputs (one kept run) over many rows: blocks of rows, fixed by
    // the shape (math/KeptRunBlocks.h), each summed over column tiles into
    // its own partials; then each output combines its blocks' partials in
    // order.
    int64_t per = math::keptRunBlockRows(rows);
    int64_t blocks = (rows + per - 1) / per;
    int64_t tiles = (outputs + kTile - 1) / kTile;
    std::vector<Acc> partial(size_t(blocks * outputs));
    parallelFor(blocks * tiles, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        int64_t block = t / tiles, column = (t % tiles) * kTile;
        int64_t w = std::min(kTile, outputs - column);
        Acc *acc = partial.data() + block * outputs + column;
        accumulateRows<Op>(x + column, g.rowOffsets.data() + block * per,
                           std::min(per, rows - block * per), w, acc);
      }
    });
    parallelFor(outputs, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        Acc acc = partial[k];
        for (int64_t block = 1; block < blocks; ++block)
          acc = Op::combine(acc, partial[block * outputs + k]);
        y[k] = finish(acc);
      }
    });
    return;
  }
  // Outputs k .. k + w - 1 share a kept row: accumulate them side by side.
  parallelFor(outputs, grain, [&](int64_t begin, int64_t end) {
    Acc acc[kTile];
    for (int64_t k = begin; k < end;) {
      int64_t row = k / g.inner, column = k % g.inner;
      int64_t w = std::min({end - k, g.inner - column, kTile});
      accumulateRows<Op>(x + keptOffset(g, row) + column, g.rowOffsets.data(),
                         rows, w, acc);
      for (int64_t j = 0; j < w; ++j)
        y[k + j] = finish(acc[j]);
      k += w;
    }
  });
}

template <typename Io> Status reduceTyped(const KernelCall &call) {
  using S = typename Io::Storage;
  using C = typename Io::Compute;
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  int64_t count = 1; // R: terms per output, 0 for an empty reduction.
  for (int64_t d : call.ints)
    count *= x.dims[d];
  // An empty operand has no terms (a Geometry without rows), so every
  // output gets the empty reduction's value; analyze() assumes no zero-size
  // dims.
  Geometry g = x.numElements() == 0 ? Geometry() : analyze(x, call.ints);
  auto run = [&](auto op, auto finish) {
    reduce<decltype(op)>(x.as<S>(), y.as<S>(), y.numElements(), g, finish);
    return okStatus();
  };
  switch (call.op) {
  case Opcode::ReduceSum:
    // A 16-bit sum may be f32 (the compiler's widened sum): the f32 sum,
    // not rounded to 16 bits.
    if constexpr (kIsFloat<Io> && sizeof(S) == 2)
      if (y.dtype == DType::F32) {
        reduce<SumOp<Io>>(x.as<S>(), y.as<float>(), y.numElements(), g,
                          [](double a) { return float(a); });
        return okStatus();
      }
    return run(SumOp<Io>(), [](typename SumOp<Io>::Acc a) {
      return Io::store(static_cast<C>(a));
    });
  case Opcode::ReduceMax:
    return run(MaxOp<Io>(), [](C a) { return Io::store(a); });
  case Opcode::ReduceProd:
    return run(ProdOp<Io>(), [](typename ProdOp<Io>::Acc a) {
      return Io::store(static_cast<C>(a));
    });
  case Opcode::ReduceMean:
    if constexpr (kIsFloat<Io>)
      return run(SumOp<Io>(), [count](double a) {
        return Io::store(static_cast<C>(a / double(count)));
      });
    break;
  default:
    break;
  }
  return unsupportedDType(call, x.dtype);
}

} // namespace

Status runReduction(const KernelCall &call) {
  switch (call.inputs[0].dtype) {
  case DType::F64:
    return reduceTyped<F64>(call);
  case DType::F32:
    return reduceTyped<F32>(call);
  case DType::F16:
    return reduceTyped<F16>(call);
  case DType::BF16:
    return reduceTyped<BF16>(call);
  case DType::I64:
    return reduceTyped<Int<int64_t>>(call);
  case DType::I32:
    return reduceTyped<Int<int32_t>>(call);
  case DType::I1:
  // Narrow and unsigned integers are data-movement, comparison and
  // elementwise types only (ONNX's uses of them); no reductions.
  case DType::I16:
  case DType::I8:
  case DType::U64:
  case DType::U32:
  case DType::U16:
  case DType::U8:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::I4:
  case DType::U4:
  case DType::I2:
  case DType::U2:
  case DType::F4E2M1FN:
  case DType::F8E8M0FNU:
    break;
  }
  return unsupportedDType(call, call.inputs[0].dtype);
}

} // namespace trainc::cpu
