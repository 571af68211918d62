//===- Sort.cu - argsort: a stable sort's permutation ---------------------===//
//
// out[o, j, i] = the index along `axis` of the element that a stable sort of
// row (o, i) puts at position j.
//
// Shape legend: the operand viewed as [O, A, I] around `axis`; rows are the
// O * I pairs (o, i), row r = o * I + i. The same indices as the CPU's
// cpu/Sort.cpp, by the same keys:
//   1. sortKeysKernel writes each element's math/SortKey.h key (of its
//      value, or of its stored bits in total order) and its
//      position j into row-contiguous scratch (row r at [r * A, r * A + A)).
//   2. CUB's DeviceSegmentedSort::StableSortPairs sorts each row's keys,
//      carrying the positions: ties keep index order, as std::stable_sort's.
//   3. writeOrderKernel stores the sorted positions at their strided
//      places in the result.
// Temporary memory (keys, positions, row offsets, CUB's workspace) is one
// Scratch allocation on the call's stream.
//
// Limits: A < 2^31 (32-bit positions); beyond, an unimplemented error.
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"
#include "math/SortKey.h"

#include <cub/device/device_segmented_sort.cuh>

#include <climits>
#include <type_traits>

namespace trainc::cuda {
namespace {

/// keys[r * A + j] = the key of x[o, j, i], positions[r * A + j] = j.
template <typename S>
__global__ void sortKeysKernel(const S *x, int64_t n, int64_t axisSize,
                               int64_t inner, bool descending, bool totalOrder,
                               uint64_t *keys, uint32_t *positions) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += step) {
    int64_t i = e % inner, j = (e / inner) % axisSize,
            o = e / (inner * axisSize);
    int64_t slot = (o * inner + i) * axisSize + j;
    if constexpr (std::is_integral_v<S>)
      keys[slot] = math::sortKeyOfInt(int64_t(x[e]), descending);
    else if (totalOrder)
      keys[slot] =
          math::sortKeyOfStoredFloat(x, e, int(sizeof(S)) * 8, descending);
    else
      keys[slot] = math::sortKeyOfFloat(double(load(x, e)), descending);
    positions[slot] = uint32_t(j);
  }
}

/// offsets[r] = r * A for r in [0, rows]: row r is [offsets[r],
/// offsets[r + 1]).
__global__ void rowOffsetsKernel(int64_t rows, int64_t axisSize,
                                 int64_t *offsets) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r <= rows;
       r += step)
    offsets[r] = r * axisSize;
}

/// out[o, j, i] = sortedPositions[r * A + j].
__global__ void writeOrderKernel(const uint32_t *sortedPositions, int64_t n,
                                 int64_t axisSize, int64_t inner,
                                 int64_t *out) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += step) {
    int64_t i = e % inner, j = (e / inner) % axisSize,
            o = e / (inner * axisSize);
    out[e] = int64_t(sortedPositions[(o * inner + i) * axisSize + j]);
  }
}

} // namespace

Status runArgsort(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &out = call.outputs[0];
  int axis = static_cast<int>(call.ints[0]);
  bool descending = call.ints[1] != 0, totalOrder = call.ints[2] != 0;
  int64_t inner = 1, axisSize = x.dims[axis];
  for (int d = axis + 1; d < x.rank; ++d)
    inner *= x.dims[d];
  int64_t n = x.numElements();
  if (n == 0)
    return okStatus();
  if (axisSize > INT_MAX)
    return Status(StatusCode::kUnimplemented,
                  std::string(opcodeName(call.op)) + ": an axis of " +
                      std::to_string(axisSize) +
                      " is beyond the CUDA kernel's 32-bit positions");
  int64_t rows = n / axisSize;
  cudaStream_t stream = streamOf(call).handle();

  auto run = [&](auto zero) -> Status {
    using S = decltype(zero);
    uint64_t keyBytes = aligned(uint64_t(n) * sizeof(uint64_t));
    uint64_t positionBytes = aligned(uint64_t(n) * sizeof(uint32_t));
    uint64_t offsetBytes = aligned(uint64_t(rows + 1) * sizeof(int64_t));
    size_t sortBytes = 0;
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cub::DeviceSegmentedSort::StableSortPairs(
            nullptr, sortBytes, static_cast<const uint64_t *>(nullptr),
            static_cast<uint64_t *>(nullptr),
            static_cast<const uint32_t *>(nullptr),
            static_cast<uint32_t *>(nullptr), n, rows,
            static_cast<const int64_t *>(nullptr),
            static_cast<const int64_t *>(nullptr), stream)),
        "argsort: cub::DeviceSegmentedSort::StableSortPairs (size query)"));
    Scratch scratch;
    TRAINC_RETURN_IF_ERROR(
        scratch.allocate(call, 2 * keyBytes + 2 * positionBytes + offsetBytes +
                                   aligned(sortBytes)));
    char *base = scratch.as<char>();
    auto *keys = reinterpret_cast<uint64_t *>(base);
    auto *sortedKeys = reinterpret_cast<uint64_t *>(base + keyBytes);
    base += 2 * keyBytes;
    auto *positions = reinterpret_cast<uint32_t *>(base);
    auto *sortedPositions = reinterpret_cast<uint32_t *>(base + positionBytes);
    base += 2 * positionBytes;
    auto *offsets = reinterpret_cast<int64_t *>(base);
    void *sortScratch = base + offsetBytes;

    sortKeysKernel<S><<<gridFor(n), kThreads, 0, stream>>>(
        x.as<const S>(), n, axisSize, inner, descending, totalOrder, keys,
        positions);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "sortKeysKernel"));
    rowOffsetsKernel<<<gridFor(rows + 1), kThreads, 0, stream>>>(rows, axisSize,
                                                                 offsets);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "rowOffsetsKernel"));
    TRAINC_RETURN_IF_ERROR(fromCudaError(
        int(cub::DeviceSegmentedSort::StableSortPairs(
            sortScratch, sortBytes, static_cast<const uint64_t *>(keys),
            sortedKeys, static_cast<const uint32_t *>(positions),
            sortedPositions, n, rows, static_cast<const int64_t *>(offsets),
            static_cast<const int64_t *>(offsets + 1), stream)),
        "argsort: cub::DeviceSegmentedSort::StableSortPairs"));
    TRAINC_RETURN_IF_ERROR(
        checkLaunch(call, "cub::DeviceSegmentedSort::StableSortPairs"));
    writeOrderKernel<<<gridFor(n), kThreads, 0, stream>>>(
        sortedPositions, n, axisSize, inner, out.as<int64_t>());
    return checkLaunch(call, "writeOrderKernel");
  };
  if (x.dtype == DType::I32)
    return run(int32_t());
  if (x.dtype == DType::I64)
    return run(int64_t());
  return withFloatStorage(call, x.dtype, run);
}

} // namespace trainc::cuda
