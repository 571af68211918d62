//===- KernelUtil.cuh - Shared helpers of the CUDA kernels ------*- CUDA
//-*-===//
//
// What every CUDA kernel family shares: element loads and stores in each
// float dtype (16-bit floats through base/Float16.h's conversions, the
// CPU's), dispatch from a DType to a storage type, shapes passed to
// kernels by value, launch sizes, the call's stream, scratch memory,
// fault reporting and uniform error messages.
//
// Storage types: float (f32), double (f64), Bf16 and Half (16-bit floats
// as their bits), int32_t, int64_t, uint32_t, uint64_t, and Bool (i1, one
// byte 0/1). The
// compute type of a float storage type is double for f64 and float
// otherwise, as on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_KERNELUTIL_CUH
#define TRAINC_RUNTIME_CUDA_KERNELUTIL_CUH

#include "base/DType.h"
#include "base/Float16.h"
#include "cuda/CudaDevice.h"
#include "cuda/CudaStatus.h"
#include "cuda/Kernels.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace trainc::cuda {

struct Bf16 {
  uint16_t bits;
};
struct Half {
  uint16_t bits;
};
struct Bool {
  uint8_t value;
};

template <typename S> struct ComputeOf { using type = float; };
template <> struct ComputeOf<double> { using type = double; };
template <> struct ComputeOf<int32_t> { using type = int32_t; };
template <> struct ComputeOf<int64_t> { using type = int64_t; };
template <> struct ComputeOf<uint32_t> { using type = uint32_t; };
template <> struct ComputeOf<uint64_t> { using type = uint64_t; };
template <> struct ComputeOf<Bool> { using type = bool; };
/// The type a kernel computes in for storage type S.
template <typename S> using Compute = typename ComputeOf<S>::type;

__host__ __device__ __forceinline__ float load(const float *p, int64_t i) {
  return p[i];
}
__host__ __device__ __forceinline__ double load(const double *p, int64_t i) {
  return p[i];
}
__host__ __device__ __forceinline__ float load(const Bf16 *p, int64_t i) {
  return bf16ToFloat(p[i].bits);
}
__host__ __device__ __forceinline__ float load(const Half *p, int64_t i) {
  return f16ToFloat(p[i].bits);
}
__host__ __device__ __forceinline__ int32_t load(const int32_t *p, int64_t i) {
  return p[i];
}
__host__ __device__ __forceinline__ int64_t load(const int64_t *p, int64_t i) {
  return p[i];
}
__host__ __device__ __forceinline__ uint32_t load(const uint32_t *p,
                                                  int64_t i) {
  return p[i];
}
__host__ __device__ __forceinline__ uint64_t load(const uint64_t *p,
                                                  int64_t i) {
  return p[i];
}
__host__ __device__ __forceinline__ bool load(const Bool *p, int64_t i) {
  return p[i].value != 0;
}

/// Stores v rounded to nearest even (16-bit floats: a double rounds to
/// float first, as on the CPU).
__host__ __device__ __forceinline__ void store(float *p, int64_t i, float v) {
  p[i] = v;
}
__host__ __device__ __forceinline__ void store(double *p, int64_t i, double v) {
  p[i] = v;
}
__host__ __device__ __forceinline__ void store(Bf16 *p, int64_t i, float v) {
  p[i].bits = floatToBf16(v);
}
__host__ __device__ __forceinline__ void store(Half *p, int64_t i, float v) {
  p[i].bits = floatToF16(v);
}
__host__ __device__ __forceinline__ void store(int32_t *p, int64_t i,
                                               int32_t v) {
  p[i] = v;
}
__host__ __device__ __forceinline__ void store(int64_t *p, int64_t i,
                                               int64_t v) {
  p[i] = v;
}
__host__ __device__ __forceinline__ void store(uint32_t *p, int64_t i,
                                               uint32_t v) {
  p[i] = v;
}
__host__ __device__ __forceinline__ void store(uint64_t *p, int64_t i,
                                               uint64_t v) {
  p[i] = v;
}
__host__ __device__ __forceinline__ void store(Bool *p, int64_t i, bool v) {
  p[i].value = v ? 1 : 0;
}

/// Calls fn(S()) for the storage type S of float dtype `t` and returns its
/// Status; any other dtype is `unsupported(call, t)`.
template <typename Fn>
Status withFloatStorage(const KernelCall &call, DType t, Fn &&fn);
/// As withFloatStorage, also for i32, i64, ui32, ui64 and i1.
template <typename Fn>
Status withStorage(const KernelCall &call, DType t, Fn &&fn);

/// The largest rank a kernel takes a shape of (Dims).
constexpr int kMaxRank = 8;

/// A shape (and, filled by the kernel that needs them, strides) passed to a
/// kernel by value.
struct Dims {
  int rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};
};

/// Offset of row-major index `index` (below the product of `dims`' sizes)
/// by `dims`' strides. The outermost dim takes what is left of the index
/// without a division.
__device__ __forceinline__ int64_t offsetOf(const Dims &dims, int64_t index) {
  int64_t offset = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d > 0; --d) {
    if (d < dims.rank) {
      offset += (index % dims.size[d]) * dims.stride[d];
      index /= dims.size[d];
    }
  }
  return dims.rank > 0 ? offset + index * dims.stride[0] : offset;
}

/// t's dims and row-major strides; an error naming the op when t's rank is
/// above kMaxRank.
Status dimsOf(const KernelCall &call, const TensorRef &t, Dims &out);

/// P consecutive elements of storage type S, moved by one vector load or
/// store (two or more for packs over 16 bytes). An elementwise kernel reads
/// 16-bit tensors in packs: one 2-byte load per thread leaves too few bytes
/// in flight to reach the GPU's memory bandwidth.
template <typename S, int P> struct alignas(sizeof(S) * P) Pack { S v[P]; };

/// Whether p is aligned to a Pack<S, P> (byte size `size`: so that the
/// host may ask for a dtype it holds as a value).
inline bool packAligned(const void *p, size_t size) {
  return reinterpret_cast<uintptr_t>(p) % size == 0;
}

/// Threads per block of the elementwise kernels, and a grid for n elements
/// (capped: kernels loop with a grid stride).
constexpr int kThreads = 256;
inline unsigned gridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks < 1)
    blocks = 1;
  return unsigned(blocks < 65536 ? blocks : 65536);
}

/// The call's stream (the device's compute stream unless the context says
/// otherwise).
CudaStream &streamOf(const KernelCall &call);

/// Where the call's kernels report a data-dependent fault.
FaultSite faultSiteOf(const KernelCall &call);

/// Records a fault unless the stream has one already (device code).
__device__ __forceinline__ void reportFault(const FaultSite &site,
                                            FaultKind kind, int64_t value,
                                            int64_t bound) {
  if (atomicCAS(reinterpret_cast<int *>(&site.record->kind), 0, int(kind)) ==
      0) {
    site.record->opcode = site.opcode;
    site.record->instruction = site.instruction;
    site.record->value = value;
    site.record->bound = bound;
  }
}

/// The launch error of the kernels just queued, as a Status naming the op
/// and `kernel` (call after every <<<...>>>).
Status checkLaunch(const KernelCall &call, const char *kernel);

/// "<op>: dtype <name> is not supported on the CUDA device".
Status unsupported(const KernelCall &call, DType t);
/// "<op>: <message>" as an invalid-argument Status.
Status kernelError(const KernelCall &call, const std::string &message);

/// `bytes` rounded up to a multiple of 256: the alignment of each part
/// when one Scratch allocation holds several arrays.
inline uint64_t aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

/// Device memory for one call's intermediate values, stream-ordered (the
/// device's scratch pool, CudaStream::allocateScratch, on the call's
/// stream): freed when the object goes out of scope, after the work queued
/// before that point.
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch();
  /// `bytes` of device memory (uninitialized) for `call`.
  Status allocate(const KernelCall &call, uint64_t bytes);
  template <typename T> T *as() const { return static_cast<T *>(data_); }

private:
  void *data_ = nullptr;
  const CudaStream *stream_ = nullptr;
};

//===--- Template definitions ---------------------------------------------===//

template <typename Fn>
Status withFloatStorage(const KernelCall &call, DType t, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(float());
  case DType::F64:
    return fn(double());
  case DType::BF16:
    return fn(Bf16());
  case DType::F16:
    return fn(Half());
  default:
    return unsupported(call, t);
  }
}

template <typename Fn>
Status withStorage(const KernelCall &call, DType t, Fn &&fn) {
  switch (t) {
  case DType::I32:
    return fn(int32_t());
  case DType::I64:
    return fn(int64_t());
  case DType::U32: // jax.random's words and counters
    return fn(uint32_t());
  case DType::U64:
    return fn(uint64_t());
  case DType::I1:
    return fn(Bool());
  default:
    return withFloatStorage(call, t, fn);
  }
}

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_KERNELUTIL_CUH
