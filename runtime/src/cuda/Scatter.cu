//===- Scatter.cu - scatter_add: the transpose of gather ------------------===//
//
// out = 0; out[o, wrap(idx[k]), i] += updates[o, k, i]
//
// Shape legend: the result viewed as [O, A, I] around `axis` (O the product
// of the dims before it, A its size, I the product after), the indices
// flattened to [J], the updates as [O, J, I].
//
// Deterministic, and the CPU's sums bit for bit: cpu/Scatter.cpp adds the
// updates of one destination row into a zeroed accumulator in index order
// (k ascending). Here:
//   1. scatterKeysKernel wraps each index into its destination row a (key)
//      and pairs it with its position k; an index outside [-A, A) reports
//      kIndexOutOfRange (value = the index, bound = A) and gets the key A,
//      which no destination row reads.
//   2. CUB's radix sort, which is stable, orders the positions by key, so
//      each destination row's positions form one segment in ascending k.
//   3. segmentStartsKernel finds each row's segment (a binary search).
//   4. scatterSumKernel, one thread per result element (o, a, i), adds its
//      segment's updates into 0 in that order, in the compute type (f32 for
//      16-bit results, rounded once at the end, as on the CPU; i32 and i64
//      in uint64_t, wrapping, then truncated), and writes every element
//      (rows without updates get +0).
// The result bits depend only on the operands, never on the launch.
// Temporary memory (keys, positions, segment starts, CUB's workspace) is
// one Scratch allocation on the call's stream.
//
// Limits: J < 2^31 and A < 2^32 - 1 (32-bit keys and positions); beyond,
// an unimplemented error.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <climits>
#include <type_traits>

namespace trainc::cuda {
namespace {

/// keys[k] = the destination row of index k (A when out of range, with a
/// fault), positions[k] = k.
__global__ void scatterKeysKernel(const void *indices, bool indices64,
                                  int64_t count, int64_t axisSize,
                                  uint32_t *keys, uint32_t *positions,
                                  FaultSite site) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < count;
       k += step) {
    int64_t v = indices64 ? static_cast<const int64_t *>(indices)[k]
                          : static_cast<const int32_t *>(indices)[k];
    uint32_t key;
    if (v < -axisSize || v >= axisSize) {
      reportFault(site, FaultKind::kIndexOutOfRange, v, axisSize);
      key = uint32_t(axisSize);
    } else {
      key = uint32_t(v < 0 ? v + axisSize : v);
    }
    keys[k] = key;
    positions[k] = uint32_t(k);
  }
}

/// starts[a] = the first sorted position whose key is >= a, for a in
/// [0, A]: row a's updates are sorted positions [starts[a], starts[a + 1]).
__global__ void segmentStartsKernel(const uint32_t *sortedKeys, int64_t count,
                                    int64_t axisSize, uint32_t *starts) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t a = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       a <= axisSize; a += step) {
    int64_t lo = 0, hi = count;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (int64_t(sortedKeys[mid]) < a)
        lo = mid + 1;
      else
        hi = mid;
    }
    starts[a] = uint32_t(lo);
  }
}

/// The type scatterSumKernel adds S in: the compute type for floats,
/// uint64_t (two's-complement wrap-around) for integers.
template <typename S> struct SumOf { using type = Compute<S>; };
template <> struct SumOf<int32_t> { using type = uint64_t; };
template <> struct SumOf<int64_t> { using type = uint64_t; };

/// out[o, a, i] = 0 + the updates[o, k, i] of row a's segment, in order.
template <typename S>
__global__ void scatterSumKernel(const S *updates, const uint32_t *positions,
                                 const uint32_t *starts, S *out, int64_t n,
                                 int64_t axisSize, int64_t inner,
                                 int64_t count) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += step) {
    int64_t i = e % inner, row = e / inner;
    int64_t a = row % axisSize, o = row / axisSize;
    using Sum = typename SumOf<S>::type;
    Sum acc = 0;
    for (uint32_t s = starts[a], end = starts[a + 1]; s < end; ++s)
      acc += Sum(load(updates, (o * count + positions[s]) * inner + i));
    if constexpr (std::is_same_v<Sum, uint64_t>)
      out[e] = S(acc); // truncated: the sum's low bits
    else
      store(out, e, acc);
  }
}

} // namespace

Status runScatterAdd(const KernelCall &call) {
  const TensorRef &updates = call.inputs[0], &indices = call.inputs[1];
  const TensorRef &out = call.outputs[0];
  int axis = static_cast<int>(call.ints[0]);
  int64_t inner = 1, axisSize = out.dims[axis];
  for (int d = axis + 1; d < out.rank; ++d)
    inner *= out.dims[d];
  int64_t count = indices.numElements();
  int64_t n = out.numElements();
  if (indices.dtype != DType::I32 && indices.dtype != DType::I64)
    return unsupported(call, indices.dtype);
  if (count > INT_MAX || axisSize >= int64_t(UINT32_MAX))
    return Status(StatusCode::kUnimplemented,
                  std::string(opcodeName(call.op)) + ": " +
                      std::to_string(count) + " indices into an axis of " +
                      std::to_string(axisSize) +
                      " is beyond the CUDA kernel's 32-bit limits");
  cudaStream_t stream = streamOf(call).handle();

  auto run = [&](auto zero) -> Status {
    using S = decltype(zero);
    if (count == 0) {
      // Nothing to add: the result is +0 everywhere (all-zero bits).
      if (n == 0)
        return okStatus();
      return fromCudaError(
          int(cudaMemsetAsync(out.data, 0, uint64_t(n) * sizeof(S), stream)),
          "scatter_add: cudaMemsetAsync");
    }

    // The keys' bit width: enough for the out-of-range key A.
    int endBit = 1;
    while (endBit < 32 && (uint64_t(1) << endBit) <= uint64_t(axisSize))
      ++endBit;
    uint64_t keyBytes = aligned(uint64_t(count) * sizeof(uint32_t));
    uint64_t startBytes = aligned(uint64_t(axisSize + 1) * sizeof(uint32_t));
    size_t sortBytes = 0;
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cub::DeviceRadixSort::SortPairs(
            nullptr, sortBytes, static_cast<const uint32_t *>(nullptr),
            static_cast<uint32_t *>(nullptr),
            static_cast<const uint32_t *>(nullptr),
            static_cast<uint32_t *>(nullptr), int(count), 0, endBit, stream)),
        "scatter_add: cub::DeviceRadixSort::SortPairs (size query)"));
    Scratch scratch;
    TRAINC_RETURN_IF_ERROR(
        scratch.allocate(call, 4 * keyBytes + startBytes + aligned(sortBytes)));
    char *base = scratch.as<char>();
    uint32_t *keys = reinterpret_cast<uint32_t *>(base);
    uint32_t *positions = reinterpret_cast<uint32_t *>(base + keyBytes);
    uint32_t *sortedKeys = reinterpret_cast<uint32_t *>(base + 2 * keyBytes);
    uint32_t *sortedPositions =
        reinterpret_cast<uint32_t *>(base + 3 * keyBytes);
    uint32_t *starts = reinterpret_cast<uint32_t *>(base + 4 * keyBytes);
    void *sortScratch = base + 4 * keyBytes + startBytes;

    // Every index is checked, even when the result is empty.
    scatterKeysKernel<<<gridFor(count), kThreads, 0, stream>>>(
        indices.data, indices.dtype == DType::I64, count, axisSize, keys,
        positions, faultSiteOf(call));
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "scatterKeysKernel"));
    if (n == 0)
      return okStatus();

    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cub::DeviceRadixSort::SortPairs(
            sortScratch, sortBytes, static_cast<const uint32_t *>(keys),
            sortedKeys, static_cast<const uint32_t *>(positions),
            sortedPositions, int(count), 0, endBit, stream)),
        "scatter_add: cub::DeviceRadixSort::SortPairs"));
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "cub::DeviceRadixSort"));

    segmentStartsKernel<<<gridFor(axisSize + 1), kThreads, 0, stream>>>(
        sortedKeys, count, axisSize, starts);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "segmentStartsKernel"));

    scatterSumKernel<S><<<gridFor(n), kThreads, 0, stream>>>(
        updates.as<const S>(), sortedPositions, starts, out.as<S>(), n,
        axisSize, inner, count);
    return checkLaunch(call, "scatterSumKernel");
  };
  if (out.dtype == DType::I32)
    return run(int32_t());
  if (out.dtype == DType::I64)
    return run(int64_t());
  return withFloatStorage(call, out.dtype, run);
}

} // namespace trainc::cuda
