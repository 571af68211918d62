//===- DataMovement.cu - broadcast, reshape, transpose, slice, concat... --===//
//
// Ops that only move elements (never compute on them), as
// cpu/DataMovement.cpp:
//   broadcast_in_dim  y[i] = x[j], j_d = (x.shape[d] == 1 ? 0 : i_dims[d])
//   reshape           y = x (row-major order kept: a copy)
//   transpose         y[i] = x[j], j_perm[d] = i_d
//   slice             y[i] = x[start + i * strides]
//   concatenate       y = the operands placed one after another along dim
//   gather            y[a..., j..., b...] = x[a..., idx[j...], b...]
//   iota              y[i] = i_dim (converted to y's dtype)
//
// Shape legend: broadcast, transpose and slice are all "read x at the
// offset sum_d i_d * s_d" for per-result-dim strides s (0 for a broadcast
// dim), handled by stridedCopyKernel over the result's dims, merged on the
// host as on the CPU (size-1 dims dropped, a dim folded into its outer
// neighbour when the pair reads like one dim). Concatenate and gather view
// tensors as [outer, n, inner] around their dim. One thread per result
// element (grid-stride), so writes are coalesced; reads are coalesced
// wherever the result's innermost dim reads x contiguously (a transpose
// that moves the innermost dim reads strided).
//
// Every op but iota moves elements as unsigned words of the dtype's size
// (1, 2, 4 or 8 bytes), so it serves every dtype and the results are the
// CPU's bit for bit. Iota stores its index as the CPU's storeAs does
// (int64 -> f32, f16 and bf16 through float rounded to nearest even,
// i32 wrapping), for the storage types of KernelUtil.cuh but i1 (an error
// on the CPU too); the CPU's narrow, unsigned and storage-only integer and
// float types are unsupported here.
//
// Gather: an index outside [-n, n) (n the axis size) reports
// FaultKind::kIndexOutOfRange (value = the index, bound = n) and its
// result elements are 0; negative indices count from the end. Every index
// is checked, also when the result is empty, as on the CPU. The CPU's
// message names the first bad index and its position; the fault names
// one of them (the first thread's to report).
//
//===----------------------------------------------------------------------===//

#include "cuda/KernelUtil.cuh"

#include <cstdint>
#include <string>
#include <type_traits>

namespace trainc::cuda {
namespace {

/// out[i] = in[offsetOf(shape, i)]: shape holds the result's (merged) dims
/// and the input's strides for them.
template <typename W>
__global__ void stridedCopyKernel(const W *in, W *out, int64_t n, Dims shape) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    out[i] = in[offsetOf(shape, i)];
}

/// Rows of `rowIn` elements of one operand into rows of `rowOut` of the
/// result, at column `column`.
template <typename W>
__global__ void concatKernel(const W *in, W *out, int64_t n, int64_t rowIn,
                             int64_t rowOut, int64_t column) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    out[i / rowIn * rowOut + column + i % rowIn] = in[i];
}

/// Index j of the indices (i32 or i64).
__device__ __forceinline__ int64_t indexAt(const void *indices, bool indices64,
                                           int64_t j) {
  return indices64 ? static_cast<const int64_t *>(indices)[j]
                   : static_cast<const int32_t *>(indices)[j];
}

/// Result [outer, m, inner] from table [outer, axisSize, inner]: element
/// (o, j, i) is table (o, wrap(idx[j]), i), or 0 with a fault when idx[j]
/// is out of range.
template <typename W>
__global__ void gatherKernel(const W *table, const void *indices,
                             bool indices64, W *out, int64_t n, int64_t m,
                             int64_t axisSize, int64_t inner, FaultSite site) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += step) {
    int64_t i = e % inner, row = e / inner;
    int64_t j = row % m, o = row / m;
    int64_t index = indexAt(indices, indices64, j);
    if (index < -axisSize || index >= axisSize) {
      reportFault(site, FaultKind::kIndexOutOfRange, index, axisSize);
      out[e] = W(0);
      continue;
    }
    if (index < 0)
      index += axisSize;
    out[e] = table[(o * axisSize + index) * inner + i];
  }
}

/// Reports the indices out of range (for an empty result, which reads
/// none).
__global__ void checkIndicesKernel(const void *indices, bool indices64,
                                   int64_t m, int64_t axisSize,
                                   FaultSite site) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < m;
       j += step) {
    int64_t index = indexAt(indices, indices64, j);
    if (index < -axisSize || index >= axisSize)
      reportFault(site, FaultKind::kIndexOutOfRange, index, axisSize);
  }
}

/// Result [outer, axisSize, inner]: element (o, k, i) is k.
template <typename S>
__global__ void iotaKernel(S *y, int64_t n, int64_t axisSize, int64_t inner) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += step)
    store(y, e, Compute<S>(e / inner % axisSize));
}

//===--- Host side --------------------------------------------------------===//

/// Calls fn(W()) for the unsigned word W of t's element size.
template <typename Fn>
Status withWord(const KernelCall &call, DType t, Fn &&fn) {
  switch (dtypeSize(t)) {
  case 1:
    return fn(uint8_t());
  case 2:
    return fn(uint16_t());
  case 4:
    return fn(uint32_t());
  case 8:
    return fn(uint64_t());
  default:
    return unsupported(call, t);
  }
}

int64_t product(const int64_t *dims, int begin, int end) {
  int64_t n = 1;
  for (int d = begin; d < end; ++d)
    n *= dims[d];
  return n;
}

Status copyBytes(const KernelCall &call, void *out, const void *in,
                 uint64_t bytes) {
  std::string what = std::string(opcodeName(call.op)) + ": cudaMemcpyAsync";
  return fromCudaError(
      int(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice,
                          streamOf(call).handle())),
      what.c_str());
}

/// y[i] = in[sum_d i_d * strides[d]] over y's shape, y contiguous; `in`
/// points at x's data plus `first` elements. Strides count elements.
Status stridedCopy(const KernelCall &call, const TensorRef &x,
                   const TensorRef &y, int64_t first, const int64_t *strides) {
  // Drop size-1 dims and merge a dim into its outer neighbour when the pair
  // reads like one dim (cpu/DataMovement.cpp's stridedCopy).
  Dims merged;
  for (int d = 0; d < y.rank; ++d) {
    if (y.dims[d] == 1)
      continue;
    int last = merged.rank - 1;
    if (last >= 0 && merged.stride[last] == strides[d] * y.dims[d]) {
      merged.size[last] *= y.dims[d];
      merged.stride[last] = strides[d];
    } else {
      merged.size[merged.rank] = y.dims[d];
      merged.stride[merged.rank] = strides[d];
      ++merged.rank;
    }
  }
  int64_t n = y.numElements();
  if (n == 0)
    return okStatus();
  size_t size = dtypeSize(x.dtype);
  const char *in = x.as<const char>() + first * int64_t(size);
  if (merged.rank == 0 || (merged.rank == 1 && merged.stride[0] == 1))
    return copyBytes(call, y.data, in, uint64_t(n) * size);
  return withWord(call, x.dtype, [&](auto zero) -> Status {
    using W = decltype(zero);
    stridedCopyKernel<W><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
        reinterpret_cast<const W *>(in), y.as<W>(), n, merged);
    return checkLaunch(call, "stridedCopyKernel");
  });
}

Status broadcastInDim(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  Dims xd, yd;
  TRAINC_RETURN_IF_ERROR(dimsOf(call, x, xd));
  TRAINC_RETURN_IF_ERROR(dimsOf(call, y, yd));
  int64_t strides[kMaxRank] = {}; // New dims repeat: stride 0.
  for (int d = 0; d < x.rank; ++d) {
    int64_t to = call.ints[d];
    if (to < 0 || to >= y.rank)
      return kernelError(call, "dims[" + std::to_string(d) +
                                   "] = " + std::to_string(to) +
                                   " is out of range for the result's rank " +
                                   std::to_string(y.rank));
    strides[to] = x.dims[d] == 1 ? 0 : xd.stride[d];
  }
  return stridedCopy(call, x, y, 0, strides);
}

Status transpose(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  Dims xd, yd;
  TRAINC_RETURN_IF_ERROR(dimsOf(call, x, xd));
  TRAINC_RETURN_IF_ERROR(dimsOf(call, y, yd));
  int64_t strides[kMaxRank] = {};
  for (int d = 0; d < y.rank; ++d) {
    int64_t from = call.ints[d];
    if (from < 0 || from >= x.rank)
      return kernelError(call, "permutation[" + std::to_string(d) +
                                   "] = " + std::to_string(from) +
                                   " is out of range for rank " +
                                   std::to_string(x.rank));
    strides[d] = xd.stride[from];
  }
  return stridedCopy(call, x, y, 0, strides);
}

Status slice(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  Dims xd;
  TRAINC_RETURN_IF_ERROR(dimsOf(call, x, xd));
  const int64_t *start = call.ints.data;
  const int64_t *step = call.ints.data + 2 * x.rank;
  int64_t strides[kMaxRank] = {};
  int64_t first = 0;
  for (int d = 0; d < x.rank; ++d) {
    strides[d] = xd.stride[d] * step[d];
    first += start[d] * xd.stride[d];
  }
  return stridedCopy(call, x, y, first, strides);
}

Status reshape(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  int64_t n = x.numElements();
  if (x.data == y.data || n == 0) // Aliased by the planner: nothing to move.
    return okStatus();
  return copyBytes(call, y.data, x.data, uint64_t(n) * dtypeSize(x.dtype));
}

/// Result viewed as [outer, sum of operand sizes along dim * inner]: each
/// operand's rows land at its column offset, one launch per operand.
Status concatenate(const KernelCall &call) {
  const TensorRef &y = call.outputs[0];
  int dim = int(call.ints[0]);
  int64_t inner = product(y.dims, dim + 1, y.rank);
  int64_t rowOut = y.dims[dim] * inner;
  return withWord(call, y.dtype, [&](auto zero) -> Status {
    using W = decltype(zero);
    int64_t column = 0;
    for (const TensorRef &x : call.inputs) {
      int64_t rowIn = x.dims[dim] * inner;
      int64_t n = x.numElements();
      if (n > 0) {
        concatKernel<W><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
            x.as<const W>(), y.as<W>(), n, rowIn, rowOut, column);
        TRAINC_RETURN_IF_ERROR(checkLaunch(call, "concatKernel"));
      }
      column += rowIn;
    }
    return okStatus();
  });
}

/// Operand viewed as [outer, n, inner] around `axis`, result as [outer,
/// m, inner] for m indices.
Status gather(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &indices = call.inputs[1];
  const TensorRef &y = call.outputs[0];
  if (indices.dtype != DType::I64 && indices.dtype != DType::I32)
    return unsupported(call, indices.dtype);
  int axis = int(call.ints[0]);
  int64_t axisSize = x.dims[axis];
  int64_t inner = product(x.dims, axis + 1, x.rank);
  int64_t m = indices.numElements();
  int64_t n = y.numElements();
  bool indices64 = indices.dtype == DType::I64;
  cudaStream_t stream = streamOf(call).handle();
  if (n == 0) {
    if (m == 0)
      return okStatus();
    checkIndicesKernel<<<gridFor(m), kThreads, 0, stream>>>(
        indices.data, indices64, m, axisSize, faultSiteOf(call));
    return checkLaunch(call, "checkIndicesKernel");
  }
  return withWord(call, x.dtype, [&](auto zero) -> Status {
    using W = decltype(zero);
    gatherKernel<W><<<gridFor(n), kThreads, 0, stream>>>(
        x.as<const W>(), indices.data, indices64, y.as<W>(), n, m, axisSize,
        inner, faultSiteOf(call));
    return checkLaunch(call, "gatherKernel");
  });
}

/// Result viewed as [outer, n, inner] around `dim`: element (o, k, i) is k.
Status iota(const KernelCall &call) {
  const TensorRef &y = call.outputs[0];
  int dim = int(call.ints[0]);
  int64_t axisSize = y.dims[dim];
  int64_t inner = product(y.dims, dim + 1, y.rank);
  int64_t n = y.numElements();
  return withStorage(call, y.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if constexpr (std::is_same_v<S, Bool>) {
      return unsupported(call, y.dtype);
    } else {
      if (n == 0)
        return okStatus();
      iotaKernel<S><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
          y.as<S>(), n, axisSize, inner);
      return checkLaunch(call, "iotaKernel");
    }
  });
}

} // namespace

Status runDataMovement(const KernelCall &call) {
  switch (call.op) {
  case Opcode::BroadcastInDim:
    return broadcastInDim(call);
  case Opcode::Reshape:
    return reshape(call);
  case Opcode::Transpose:
    return transpose(call);
  case Opcode::Slice:
    return slice(call);
  case Opcode::Concatenate:
    return concatenate(call);
  case Opcode::Gather:
    return gather(call);
  case Opcode::Iota:
    return iota(call);
  default:
    return kernelError(call, "not a data movement op");
  }
}

} // namespace trainc::cuda
