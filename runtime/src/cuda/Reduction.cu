//===- Reduction.cu - Reductions: sum, max, mean and product over dims ----===//
//
//   sum:  y[k] = sum_{r} x[k, r]
//   max:  y[k] = max_{r} x[k, r]        (NaN if any x[k, r] is NaN)
//   mean: y[k] = sum_{r} x[k, r] / R
//   prod: y[k] = prod_{r} x[k, r]
// where k runs over the kept dims (the result's, in order) and r over the
// R elements of the reduced dims (`ints`), which the result drops. An empty
// reduction (R = 0) gives 0 for sum, NaN for mean (0 / 0), 1 for prod and
// -inf (floats) or the lowest value (integers) for max. Dtypes f32, f64,
// bf16, f16, i32, i64 (mean: floats only), as on the CPU.
//
// Shape legend (cpu/Reduction.cpp's): after dropping size-1 dims and
// merging neighbouring dims that are both kept or both reduced, the
// operand's innermost run of contiguous elements is either
//   - reduced (L elements): output k combines, for each combination of the
//     other reduced dims ("rows", row-major), its row of L contiguous
//     elements; or
//   - kept (K elements): output k (column k mod K) reads one element per
//     row.
//
// Accumulation, as on the CPU: float sums (and means) accumulate in f64
// for every float dtype and are rounded to the compute type once (f32 for
// the 16-bit floats, then to 16 bits, or not for a sum with an f32 result:
// the compiler's widened sum); integer sums accumulate in int64
// and wrap around (an i32 result keeps the low bits); max works in the
// compute type, a NaN accumulator or operand winning. Products accumulate
// as sums do (f64 for floats, wrapping int64), in the same orders.
//
// Order of the terms. The CPU combines each output's terms in a fixed
// order; the GPU follows it exactly, so results are the CPU's bit for bit:
//   - kept run (reduceKeptKernel): one thread per output adds its column's
//     terms row by row, from the empty value, in the blocks of rows of
//     math/KeptRunBlocks.h (where the CPU splits the rows: one kept run
//     over many rows, as a bias gradient), the blocks' results combined
//     in order; neighbouring threads read neighbouring elements.
//   - reduced run (reduceRunsKernel): the CPU's reduceRun splits each row
//     into 8 lanes (element i into lane i mod 8 over the whole blocks of
//     8), combines the lanes in order into the empty value, then the tail
//     in order, and adds each row's result to the output's in row order.
//     Here 8 threads of a warp serve one output, thread j computing lane j
//     of each row; the lanes meet through shuffles in the same order.
// That order is sequential per output (at most 8 threads of a chain), so
// when few outputs (fewer than kBusyThreads threads) each have a long
// chain (more than kChainLimit terms per thread) it would leave the GPU
// nearly idle: a gradient norm sums a whole parameter into one output.
// Those reductions take a parallel order instead, fixed by the shape
// alone (never by the launch), each output's terms split into chunks:
//   - reduced run (runChunkKernel): kChunk consecutive terms (in the CPU's
//     term order) per block, thread j adding terms j, j + 256, ..., then a
//     pairwise tree over the threads;
//   - kept run (columnChunkKernel): kChunkRows rows per block of 32
//     neighbouring outputs (coalesced reads), 8 threads per output, thread
//     r adding rows r, r + 8, ..., then the 8 in order;
// then each output's chunk results by one block (combineKernel), thread j
// adding chunks j, j + 256, ..., then a pairwise tree. Results are
// deterministic and accumulate in the same types, but the rounding of the
// f64 sum differs: f32 and 16-bit results equal the CPU's but when the sum
// lies within the f64 sums' error (about sqrt(R) 2^-53 relative) of a
// halfway point of the result type (rare), and f64 results may differ in
// the last bits (products likewise; and a product whose partial products
// leave f64's range, 2^-1074 .. 2^1024, in one grouping and not in the
// other gives 0, inf or NaN on one device only: factors that extreme are
// beyond f32's range many times over). Max and integer sums and products
// are exact in any order (max may pick another NaN when several are NaN).
// This is the one place the GPU differs.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "math/KeptRunBlocks.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace trainc::cuda {
namespace {

enum class Kind : int { kSum, kMean, kMax, kProd };

constexpr unsigned kFullMask = 0xffffffffu;
/// The CPU's lanes per reduced run (cpu/Reduction.cpp's reduceRun).
constexpr int kLanes = 8;
/// Above this many terms per thread in the CPU's order, and with fewer than
/// kBusyThreads threads, a reduction takes the parallel order.
constexpr int64_t kChainLimit = 2048;
constexpr int64_t kBusyThreads = int64_t(1) << 15;
/// The parallel order's chunks: kChunk terms of a reduced run; kChunkRows
/// rows of a kept run, for kTileColumns neighbouring outputs by kTileRows
/// row lanes (one block). Short chains keep enough blocks in flight: with
/// 1,024 rows a chunk, GPT-2's bias gradients (8,192 rows, 768 outputs)
/// made 192 blocks of 128-long chains and took 0.1 ms each on an H100.
constexpr int64_t kChunk = 2048;
constexpr int64_t kChunkRows = 128;
constexpr int kTileColumns = 32;
constexpr int kTileRows = kThreads / kTileColumns;

/// Sum (and mean): f64 for floats, wrapping int64 for integers.
template <typename S> struct SumOp {
  using Acc =
      std::conditional_t<std::is_floating_point_v<Compute<S>>, double, int64_t>;
  __device__ static Acc init() { return 0; }
  __device__ static Acc of(Compute<S> v) { return Acc(v); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_floating_point_v<Acc>)
      return a + b;
    else
      return int64_t(uint64_t(a) + uint64_t(b));
  }
};

/// Product: f64 for floats, wrapping int64 for integers.
template <typename S> struct ProdOp {
  using Acc =
      std::conditional_t<std::is_floating_point_v<Compute<S>>, double, int64_t>;
  __device__ static Acc init() { return 1; }
  __device__ static Acc of(Compute<S> v) { return Acc(v); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_floating_point_v<Acc>)
      return a * b;
    else
      return int64_t(uint64_t(a) * uint64_t(b));
  }
};

/// Max in the compute type; a NaN accumulator or operand wins.
template <typename S> struct MaxOp {
  using Acc = Compute<S>;
  __device__ static Acc init() {
    if constexpr (std::is_floating_point_v<Acc>)
      return -Acc(INFINITY);
    else if constexpr (std::is_same_v<Acc, int32_t>)
      return INT32_MIN;
    else
      return INT64_MIN;
  }
  __device__ static Acc of(Compute<S> v) { return v; }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_floating_point_v<Acc>)
      return (a > b || a != a) ? a : b;
    else
      return a > b ? a : b;
  }
};

/// f(Op()) for the kind's accumulator: MaxOp, ProdOp, or SumOp (sum and
/// mean).
template <typename S, typename F>
__device__ __forceinline__ void withOp(Kind kind, F &&f) {
  if (kind == Kind::kMax)
    f(MaxOp<S>());
  else if (kind == Kind::kProd)
    f(ProdOp<S>());
  else
    f(SumOp<S>());
}

/// The operand's merged dims (see the header).
struct Layout {
  /// The outer kept dims: sizes and the operand's strides, row-major.
  Dims kept;
  /// The outer reduced dims: sizes and strides; rows = their product (0
  /// for an empty operand: no terms at all).
  Dims reduced;
  int64_t rows = 0;
  /// The innermost run's length, and whether it is reduced.
  int64_t inner = 1;
  bool innerReduced = false;
};

/// Steps `index` (and its offset) to the next row-major index of `dims`.
/// Unrolled, so that `index` lives in registers.
__device__ __forceinline__ void
advance(const Dims &dims, int64_t (&index)[kMaxRank], int64_t &offset) {
  bool carry = true;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (carry && d < dims.rank) {
      offset += dims.stride[d];
      if (++index[d] < dims.size[d]) {
        carry = false;
      } else {
        offset -= dims.stride[d] * dims.size[d];
        index[d] = 0;
      }
    }
  }
}

/// y[k] = the result of output k's accumulator (the host checks that mean
/// is of a float).
/// Y is the operand's storage type S, or float for a 16-bit sum the
/// compiler widened (stored unrounded to 16 bits).
template <typename S, typename Y, typename Acc>
__device__ __forceinline__ void finish(Y *y, int64_t k, Acc acc, Kind kind,
                                       double count) {
  if (kind == Kind::kMean)
    store(y, k, Compute<S>(double(acc) / count));
  else
    store(y, k, Compute<S>(acc));
}

//===--- The CPU's order --------------------------------------------------===//

/// The terms of one column (kept innermost run), row by row, in blocks of
/// `per` rows (math/KeptRunBlocks.h; per >= rows: one block): the first
/// block's result, then each later one's combined in order.
template <typename Op, typename S>
__device__ __forceinline__ typename Op::Acc
reduceColumn(const S *base, const Layout &l, int64_t per) {
  typename Op::Acc acc = Op::init(), block = Op::init();
  int64_t index[kMaxRank] = {};
  int64_t offset = 0, left = per;
  bool first = true;
  for (int64_t r = 0; r < l.rows; ++r) {
    block = Op::combine(block, Op::of(load(base, offset)));
    advance(l.reduced, index, offset);
    if (--left == 0 || r + 1 == l.rows) {
      acc = first ? block : Op::combine(acc, block);
      first = false;
      block = Op::init();
      left = per;
    }
  }
  return acc;
}

template <typename S, typename Y>
__global__ void reduceKeptKernel(const S *x, Y *y, int64_t outputs, Layout l,
                                 int64_t per, Kind kind, double count) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < outputs;
       k += step) {
    const S *base = x + offsetOf(l.kept, k / l.inner) + k % l.inner;
    withOp<S>(kind, [&](auto op) {
      finish<S>(y, k, reduceColumn<decltype(op)>(base, l, per), kind, count);
    });
  }
}

/// The rows of one output (reduced innermost run), computed by the 8
/// lanes of a warp segment, lane j computing the CPU's lane j; every lane
/// returns the result.
template <typename Op, typename S>
__device__ __forceinline__ typename Op::Acc
reduceRuns(const S *base, const Layout &l, int lane) {
  using Acc = typename Op::Acc;
  int64_t whole = l.inner - l.inner % kLanes; // Elements in whole blocks.
  Acc acc = Op::init();
  int64_t index[kMaxRank] = {};
  int64_t offset = 0;
  for (int64_t r = 0; r < l.rows; ++r) {
    const S *p = base + offset;
    Acc partial = Op::init();
    for (int64_t i = lane; i < whole; i += kLanes)
      partial = Op::combine(partial, Op::of(load(p, i)));
    Acc run = Op::init();
#pragma unroll
    for (int j = 0; j < kLanes; ++j)
      run = Op::combine(run, __shfl_sync(kFullMask, partial, j, kLanes));
    for (int64_t i = whole; i < l.inner; ++i)
      run = Op::combine(run, Op::of(load(p, i)));
    acc = Op::combine(acc, run);
    advance(l.reduced, index, offset);
  }
  return acc;
}

template <typename S, typename Y>
__global__ void reduceRunsKernel(const S *x, Y *y, int64_t outputs, Layout l,
                                 Kind kind, double count) {
  constexpr int kGroupsPerWarp = 32 / kLanes;
  int lane = int(threadIdx.x % kLanes);
  int64_t group = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
  int64_t groups = int64_t(gridDim.x) * blockDim.x / kLanes;
  // The shuffles need the whole warp: every lane runs while the warp's
  // first group is in range, and groups past the end redo the last output
  // without storing it.
  for (int64_t first = group - group % kGroupsPerWarp; first < outputs;
       first += groups, group += groups) {
    int64_t k = group < outputs ? group : outputs - 1;
    const S *base = x + offsetOf(l.kept, k);
    bool stores = group < outputs && lane == 0;
    withOp<S>(kind, [&](auto op) {
      auto acc = reduceRuns<decltype(op)>(base, l, lane);
      if (stores)
        finish<S>(y, k, acc, kind, count);
    });
  }
}

//===--- The parallel order -----------------------------------------------===//

/// The block's values combined pairwise in a fixed tree (blockDim.x ==
/// kThreads); every thread gets the result.
template <typename Op>
__device__ __forceinline__ typename Op::Acc blockCombine(typename Op::Acc v) {
  __shared__ typename Op::Acc shared[kThreads];
  int t = int(threadIdx.x);
  shared[t] = v;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (t < width)
      shared[t] = Op::combine(shared[t], shared[t + width]);
    __syncthreads();
  }
  typename Op::Acc result = shared[0];
  __syncthreads(); // Before the array's next use.
  return result;
}

/// Terms [begin, end) of output k of a reduced run (term t: element t mod
/// L of row t / L), combined by the block.
template <typename Op, typename S>
__device__ __forceinline__ typename Op::Acc
runChunkOf(const S *x, const Layout &l, int64_t k, int64_t begin, int64_t end) {
  const S *base = x + offsetOf(l.kept, k);
  typename Op::Acc v = Op::init();
  for (int64_t t = begin + threadIdx.x; t < end; t += blockDim.x) {
    int64_t offset = l.reduced.rank == 0 // One row: no division.
                         ? t
                         : offsetOf(l.reduced, t / l.inner) + t % l.inner;
    v = Op::combine(v, Op::of(load(base, offset)));
  }
  return blockCombine<Op>(v);
}

/// partials[k * chunks + c] = chunk c (kChunk terms) of output k of a
/// reduced run, one block per chunk.
template <typename S>
__global__ void runChunkKernel(const S *x, void *partials, int64_t outputs,
                               int64_t terms, int64_t chunks, Layout l,
                               Kind kind) {
  for (int64_t b = blockIdx.x; b < outputs * chunks; b += gridDim.x) {
    int64_t k = b / chunks, begin = b % chunks * kChunk;
    int64_t end = terms - begin < kChunk ? terms : begin + kChunk;
    withOp<S>(kind, [&](auto op) {
      auto v = runChunkOf<decltype(op)>(x, l, k, begin, end);
      if (threadIdx.x == 0)
        static_cast<decltype(v) *>(partials)[b] = v;
    });
  }
}

/// Rows [begin, end) of output k of a kept run (k < outputs or not), for
/// a block of kTileColumns outputs by kTileRows row lanes: lane r adds rows
/// begin + r, begin + r + kTileRows, ..., then lane 0 the lanes in order.
/// The result is valid in lane 0 (threads below kTileColumns).
template <typename Op, typename S>
__device__ __forceinline__ typename Op::Acc
columnChunkOf(const S *x, const Layout &l, int64_t k, int64_t outputs,
              int64_t begin, int64_t end) {
  using Acc = typename Op::Acc;
  __shared__ Acc shared[kTileRows][kTileColumns];
  int column = int(threadIdx.x % kTileColumns);
  int lane = int(threadIdx.x / kTileColumns);
  Acc v = Op::init();
  if (k < outputs) {
    const S *base = x + offsetOf(l.kept, k / l.inner) + k % l.inner;
    for (int64_t r = begin + lane; r < end; r += kTileRows)
      v = Op::combine(v, Op::of(load(base, offsetOf(l.reduced, r))));
  }
  shared[lane][column] = v;
  __syncthreads();
  Acc result = Op::init();
  if (lane == 0)
    for (int j = 0; j < kTileRows; ++j)
      result = Op::combine(result, shared[j][column]);
  __syncthreads(); // Before the array's next use.
  return result;
}

/// partials[k * chunks + c] = chunk c (kChunkRows rows) of output k of a
/// kept run, one block per kTileColumns outputs and chunk.
template <typename S>
__global__ void columnChunkKernel(const S *x, void *partials, int64_t outputs,
                                  int64_t chunks, Layout l, Kind kind) {
  int64_t tiles = (outputs + kTileColumns - 1) / kTileColumns;
  for (int64_t b = blockIdx.x; b < tiles * chunks; b += gridDim.x) {
    int64_t c = b % chunks, begin = c * kChunkRows;
    int64_t end = l.rows - begin < kChunkRows ? l.rows : begin + kChunkRows;
    int64_t k = b / chunks * kTileColumns + threadIdx.x % kTileColumns;
    bool stores = threadIdx.x < kTileColumns && k < outputs;
    withOp<S>(kind, [&](auto op) {
      auto v = columnChunkOf<decltype(op)>(x, l, k, outputs, begin, end);
      if (stores)
        static_cast<decltype(v) *>(partials)[k * chunks + c] = v;
    });
  }
}

/// Output k's chunks combined by the block.
template <typename Op>
__device__ __forceinline__ typename Op::Acc
combineChunks(const void *partials, int64_t k, int64_t chunks) {
  using Acc = typename Op::Acc;
  const Acc *p = static_cast<const Acc *>(partials) + k * chunks;
  Acc v = Op::init();
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
    v = Op::combine(v, p[c]);
  return blockCombine<Op>(v);
}

/// y[k] from output k's chunks, one block per output.
template <typename S, typename Y>
__global__ void combineKernel(const void *partials, Y *y, int64_t outputs,
                              int64_t chunks, Kind kind, double count) {
  for (int64_t k = blockIdx.x; k < outputs; k += gridDim.x) {
    withOp<S>(kind, [&](auto op) {
      auto v = combineChunks<decltype(op)>(partials, k, chunks);
      if (threadIdx.x == 0)
        finish<S>(y, k, v, kind, count);
    });
  }
}

//===--- Host side --------------------------------------------------------===//

/// x's dims merged as the header describes (cpu/Reduction.cpp's analyze).
Status layoutOf(const KernelCall &call, const TensorRef &x, Layout &out) {
  Dims xd;
  TRAINC_RETURN_IF_ERROR(dimsOf(call, x, xd));
  bool reduced[kMaxRank] = {};
  for (int64_t d : call.ints) {
    if (d < 0 || d >= x.rank)
      return kernelError(call, "reduced dim " + std::to_string(d) +
                                   " is out of range for rank " +
                                   std::to_string(x.rank));
    reduced[d] = true;
  }
  out = Layout();
  if (x.numElements() == 0) // No terms: every output is the empty value.
    return okStatus();
  int64_t size[kMaxRank], stride[kMaxRank];
  bool isReduced[kMaxRank];
  int merged = 0;
  for (int d = 0; d < x.rank; ++d) {
    if (x.dims[d] == 1)
      continue;
    if (merged > 0 && isReduced[merged - 1] == reduced[d]) {
      size[merged - 1] *= x.dims[d];
      stride[merged - 1] = xd.stride[d];
    } else {
      size[merged] = x.dims[d];
      stride[merged] = xd.stride[d];
      isReduced[merged] = reduced[d];
      ++merged;
    }
  }
  if (merged > 0) {
    --merged;
    out.inner = size[merged];
    out.innerReduced = isReduced[merged];
  }
  out.rows = 1;
  for (int m = 0; m < merged; ++m) {
    Dims &dims = isReduced[m] ? out.reduced : out.kept;
    dims.size[dims.rank] = size[m];
    dims.stride[dims.rank] = stride[m];
    ++dims.rank;
    if (isReduced[m])
      out.rows *= size[m];
  }
  return okStatus();
}

template <typename S, typename Y = S>
Status reduceTyped(const KernelCall &call, Kind kind) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  Layout l;
  TRAINC_RETURN_IF_ERROR(layoutOf(call, x, l));
  int64_t outputs = y.numElements();
  if (outputs == 0)
    return okStatus();
  int64_t count = 1; // R: terms per output, 0 for an empty reduction.
  for (int64_t d : call.ints)
    count *= x.dims[d];
  cudaStream_t stream = streamOf(call).handle();

  // Threads and terms per thread in the CPU's order.
  int64_t threads = l.innerReduced ? outputs * kLanes : outputs;
  int64_t chain =
      l.innerReduced ? l.rows * (l.inner / kLanes + kLanes) : l.rows;
  if (chain <= kChainLimit || threads >= kBusyThreads) {
    if (l.innerReduced) {
      reduceRunsKernel<S, Y><<<gridFor(threads), kThreads, 0, stream>>>(
          x.as<const S>(), y.as<Y>(), outputs, l, kind, double(count));
      return checkLaunch(call, "reduceRunsKernel");
    }
    int64_t per = math::keptRunBlocked(l.kept.rank > 0, l.rows, outputs)
                      ? math::keptRunBlockRows(l.rows)
                      : std::max<int64_t>(l.rows, 1);
    reduceKeptKernel<S, Y><<<gridFor(threads), kThreads, 0, stream>>>(
        x.as<const S>(), y.as<Y>(), outputs, l, per, kind, double(count));
    return checkLaunch(call, "reduceKeptKernel");
  }

  // The parallel order: chunk results in scratch (one accumulator, at most
  // 8 bytes, per output and chunk), then combined per output.
  int64_t terms = l.innerReduced ? l.rows * l.inner : l.rows;
  int64_t chunks = l.innerReduced ? (terms + kChunk - 1) / kChunk
                                  : (terms + kChunkRows - 1) / kChunkRows;
  Scratch partials;
  TRAINC_RETURN_IF_ERROR(
      partials.allocate(call, uint64_t(outputs * chunks) * 8));
  if (l.innerReduced) {
    int64_t blocks = outputs * chunks;
    runChunkKernel<S>
        <<<unsigned(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
            x.as<const S>(), partials.as<void>(), outputs, terms, chunks, l,
            kind);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "runChunkKernel"));
  } else {
    int64_t blocks = (outputs + kTileColumns - 1) / kTileColumns * chunks;
    columnChunkKernel<S>
        <<<unsigned(blocks < 65536 ? blocks : 65536), kThreads, 0, stream>>>(
            x.as<const S>(), partials.as<void>(), outputs, chunks, l, kind);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "columnChunkKernel"));
  }
  combineKernel<S, Y>
      <<<unsigned(outputs < 65536 ? outputs : 65536), kThreads, 0, stream>>>(
          partials.as<const void>(), y.as<Y>(), outputs, chunks, kind,
          double(count));
  return checkLaunch(call, "combineKernel");
}

} // namespace

Status runReduction(const KernelCall &call) {
  Kind kind;
  switch (call.op) {
  case Opcode::ReduceSum:
    kind = Kind::kSum;
    break;
  case Opcode::ReduceMax:
    kind = Kind::kMax;
    break;
  case Opcode::ReduceMean:
    kind = Kind::kMean;
    break;
  case Opcode::ReduceProd:
    kind = Kind::kProd;
    break;
  default:
    return kernelError(call, "not a reduction");
  }
  DType t = call.inputs[0].dtype;
  return withStorage(call, t, [&](auto zero) -> Status {
    using S = decltype(zero);
    // i1 and unsigned integers have no reductions, and integers no mean,
    // as on the CPU.
    if constexpr (std::is_same_v<S, Bool> || std::is_unsigned_v<S>) {
      return unsupported(call, t);
    } else {
      if (kind == Kind::kMean && !std::is_floating_point_v<Compute<S>>)
        return unsupported(call, t);
      // A 16-bit sum the compiler widened writes its f32 sum.
      if constexpr (std::is_same_v<S, Bf16> || std::is_same_v<S, Half>)
        if (call.outputs[0].dtype == DType::F32) {
          if (kind != Kind::kSum)
            return kernelError(call, "only a sum of 16-bit floats may be f32");
          return reduceTyped<S, float>(call, kind);
        }
      return reduceTyped<S>(call, kind);
    }
  });
}

} // namespace trainc::cuda
