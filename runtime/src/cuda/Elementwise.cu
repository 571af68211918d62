//===- Elementwise.cu - Unary and binary math, compare, select, convert ---===//
//
// Every op here maps elements at one flat index i to the result at i, as
// cpu/Elementwise.cpp (the reference, whose rules this file follows):
//   unary   y[i] = f(x[i])       neg -x, abs |x|, exp, log, tanh, erf, cos,
//                                sin, sqrt, rsqrt 1/sqrt(x)
//   binary  z[i] = f(x[i], y[i]) add, sub, mul, div, pow x^y, max, min
//   compare p[i] = x[i] <dir> y[i]                 (result i1)
//   select  z[i] = p[i] ? t[i] : f[i]
//   convert y[i] = x[i] in the result dtype
// Shape legend: operands and results share one shape, so every tensor is a
// flat array of n elements; one thread per element (grid-stride). Each
// thread reads its operands before it writes, so results may share an
// operand's memory.
//
// Dtypes: the storage types of KernelUtil.cuh (f32, f64, bf16, f16, i32,
// i64, ui32 and ui64 for jax.random's words and counters, i1); the CPU's
// other narrow integers are unsupported here.
// Integers take neg, abs and the binary ops but pow; i1 only compare,
// select and convert, as on the CPU. Kernels are instantiated per storage
// type; the op (or the compare direction, or convert's result dtype) is a
// kernel argument switched on per element, the same for every thread.
// Each element's math is ElementwiseMath.cuh's, which FusedElementwise.cu
// calls too.
//
// Numerics, compiled with -fmad=false (no contraction), IEEE division and
// square root:
//   - + - * /, sqrt, rsqrt (1/sqrt, two roundings), neg, abs, max, min and
//     compare compute in f32 for f32 and the 16-bit floats and in f64 for
//     f64, exactly as on the CPU: bit-identical results. max/min return NaN
//     if either operand is NaN; compare is ordered (NaN compares false,
//     except NE).
//   - f32 exp, tanh and erf are math/Transcendental.h's expCore, tanhCore
//     and erfCore, the formulas of the CPU's VectorMath: bit-identical.
//   - The CPU takes the rest from libm (glibc): f32 log, cos, sin and pow,
//     and exp, tanh, erf, log, cos, sin, pow of the 16-bit floats, in f32.
//     glibc's f32 functions are within 0.5 to 0.9 ulp (mostly correctly
//     rounded); CUDA's f32 library is within 1 to 4 ulp. So these compute
//     in f64 with CUDA's double library and round to f32 once, which is the
//     correctly rounded result but in rare near-halfway cases: they equal
//     the CPU's wherever glibc rounds correctly, and may differ from it by
//     an ulp of f32 elsewhere (rarely visible in a 16-bit result, rounded
//     again).
//   - f64 exp, log, tanh, erf, cos, sin and pow are CUDA's double library,
//     not glibc's: either may be an ulp off, so f64 results of these may
//     differ from the CPU's in the last bit.
//   - NaN payloads and signs may differ from the CPU's where an operation
//     creates a NaN (the GPU's canonical NaN is 0x7fffffff, x86's default
//     NaN is negative); NaN-ness never differs.
// Integer neg, abs, add, sub and mul wrap around in two's complement;
// integer div truncates toward zero. Division by zero reports
// FaultKind::kIntegerDivisionByZero (the CPU returns an error Status
// naming the first failing element; here the fault names the instruction)
// and writes 0. INT_MIN / -1, also an error on the CPU, reports
// FaultKind::kIntegerOverflow with value = the dividend, and writes
// INT_MIN.
//
// Convert follows graph.convert, as the CPU: float -> float and int ->
// float round to nearest even once (to f16/bf16 from f64 or an integer
// through f32 rounded to odd, see toFloatOdd), float -> int truncates
// toward zero and saturates (NaN -> 0, beyond the range -> the nearest
// bound), int -> int wraps, sign- or zero-extends, -> i1 tests non-zero (NaN ->
// true), i1 -> 0 or 1. Same dtype: a byte copy (any dtype).
//
//===----------------------------------------------------------------------===//

#include "cuda/ElementwiseMath.cuh"
#include "cuda/KernelUtil.cuh"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace trainc::cuda {
namespace {

//===--- Packs ------------------------------------------------------------===//

// Large operands move kPack elements per thread and load (16 bytes of the
// 16-bit types, 32 of f32): on an H100 an add of two bf16 [8, 1024, 2304]
// tensors took 0.12 ms one element at a time, 3x its bytes' time. Each
// element's math is unchanged, so results are the same bits.

constexpr int kPack = 8;
/// KernelUtil.cuh's Pack of kPack elements.
template <typename S> using Packed = Pack<S, kPack>;
template <typename S>
__device__ __forceinline__ Packed<S> loadPack(const S *p, int64_t pack) {
  return reinterpret_cast<const Packed<S> *>(p)[pack];
}
template <typename S>
__device__ __forceinline__ void storePack(S *p, int64_t pack,
                                          const Packed<S> &value) {
  reinterpret_cast<Packed<S> *>(p)[pack] = value;
}
/// Whether every pointer is aligned to a pack and there is at least one.
template <typename S>
bool packable(std::initializer_list<const void *> pointers, int64_t n) {
  for (const void *p : pointers)
    if (!packAligned(p, sizeof(Packed<S>)))
      return false;
  return n >= kPack;
}

//===--- Unary ------------------------------------------------------------===//

template <typename S>
__global__ void unaryKernel(const S *x, S *y, int64_t n, Opcode op,
                            bool packed) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, done = 0;
  if (packed) {
    for (int64_t p = first; p < n / kPack; p += step) {
      Packed<S> u = loadPack(x, p), r;
#pragma unroll
      for (int j = 0; j < kPack; ++j)
        store(r.v, j, unaryOf<S>(op, load(u.v, j)));
      storePack(y, p, r);
    }
    done = n / kPack * kPack;
  }
  for (int64_t i = done + first; i < n; i += step)
    store(y, i, unaryOf<S>(op, load(x, i)));
}

//===--- Binary -----------------------------------------------------------===//

template <typename S>
__global__ void binaryKernel(const S *a, const S *b, S *z, int64_t n, Opcode op,
                             FaultSite site, bool packed) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, done = 0;
  if (packed) {
    for (int64_t p = first; p < n / kPack; p += step) {
      Packed<S> u = loadPack(a, p), v = loadPack(b, p), r;
#pragma unroll
      for (int j = 0; j < kPack; ++j)
        store(r.v, j, binaryOf<S>(op, load(u.v, j), load(v.v, j), site));
      storePack(z, p, r);
    }
    done = n / kPack * kPack;
  }
  for (int64_t i = done + first; i < n; i += step)
    store(z, i, binaryOf<S>(op, load(a, i), load(b, i), site));
}

//===--- Compare and select -----------------------------------------------===//

template <typename S>
__global__ void compareKernel(const S *a, const S *b, Bool *p, int64_t n,
                              int direction) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    store(p, i, compareOf(direction, load(a, i), load(b, i)));
}

/// Select only moves bits: W is an unsigned word of the element's size.
template <typename W>
__global__ void selectKernel(const uint8_t *pred, const W *onTrue,
                             const W *onFalse, W *z, int64_t n) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step)
    z[i] = pred[i] ? onTrue[i] : onFalse[i];
}

//===--- Convert ----------------------------------------------------------===//

/// y[i] = x[i] in dtype `to` (a storage dtype other than x's; the host
/// checks).
template <typename S>
__global__ void convertKernel(const S *x, void *y, int64_t n, DType to) {
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += step) {
    Compute<S> v = load(x, i);
    switch (to) {
    case DType::F32:
      store(static_cast<float *>(y), i, toWide<float>(v));
      break;
    case DType::F64:
      store(static_cast<double *>(y), i, toWide<double>(v));
      break;
    case DType::F16:
      store(static_cast<Half *>(y), i, toNarrow(v));
      break;
    case DType::BF16:
      store(static_cast<Bf16 *>(y), i, toNarrow(v));
      break;
    case DType::I32:
      store(static_cast<int32_t *>(y), i, toInt<int32_t>(v));
      break;
    case DType::I64:
      store(static_cast<int64_t *>(y), i, toInt<int64_t>(v));
      break;
    case DType::U32:
      store(static_cast<uint32_t *>(y), i, toInt<uint32_t>(v));
      break;
    case DType::U64:
      store(static_cast<uint64_t *>(y), i, toInt<uint64_t>(v));
      break;
    default: // I1: NaN != 0, so NaN converts to true.
      store(static_cast<Bool *>(y), i, v != Compute<S>(0));
      break;
    }
  }
}

/// convertKernel between two of f32, bf16 and f16 (the precision phase's
/// casts), kPack elements per thread and load: the same bits.
template <typename S, typename D>
__global__ void convertPackedKernel(const S *x, D *y, int64_t n) {
  auto convert = [](Compute<S> v) {
    if constexpr (std::is_same_v<D, float>)
      return toWide<float>(v);
    else
      return toNarrow(v);
  };
  int64_t step = int64_t(gridDim.x) * blockDim.x;
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t p = first; p < n / kPack; p += step) {
    Packed<S> u = loadPack(x, p);
    Packed<D> r;
#pragma unroll
    for (int j = 0; j < kPack; ++j)
      store(r.v, j, convert(load(u.v, j)));
    storePack(y, p, r);
  }
  for (int64_t i = n / kPack * kPack + first; i < n; i += step)
    store(y, i, convert(load(x, i)));
}

/// Launches convertPackedKernel when x's storage type S and the result
/// dtype are two of f32, bf16 and f16 and both tensors are pack-aligned;
/// false otherwise.
template <typename S>
bool convertPacked(const S *x, void *y, int64_t n, DType to,
                   cudaStream_t stream) {
  constexpr bool kFloat = std::is_same_v<S, float> || std::is_same_v<S, Bf16> ||
                          std::is_same_v<S, Half>;
  if constexpr (!kFloat) {
    return false;
  } else {
    auto launch = [&](auto *out) {
      using D = std::remove_pointer_t<decltype(out)>;
      if (!packable<S>({x}, n) || !packable<D>({out}, n))
        return false;
      convertPackedKernel<S, D>
          <<<gridFor(n / kPack), kThreads, 0, stream>>>(x, out, n);
      return true;
    };
    switch (to) {
    case DType::F32:
      return launch(static_cast<float *>(y));
    case DType::BF16:
      return launch(static_cast<Bf16 *>(y));
    case DType::F16:
      return launch(static_cast<Half *>(y));
    default:
      return false;
    }
  }
}

//===--- Host side --------------------------------------------------------===//

Status runUnary(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  int64_t n = x.numElements();
  return withStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if constexpr (std::is_same_v<S, Bool>) {
      return unsupported(call, x.dtype);
    } else {
      if (std::is_integral_v<Compute<S>> && call.op != Opcode::Neg &&
          call.op != Opcode::Abs)
        return unsupported(call, x.dtype);
      if (n == 0)
        return okStatus();
      bool packed = packable<S>({x.data, y.data}, n);
      unaryKernel<S><<<gridFor(packed ? n / kPack : n), kThreads, 0,
                       streamOf(call).handle()>>>(x.as<const S>(), y.as<S>(), n,
                                                  call.op, packed);
      return checkLaunch(call, "unaryKernel");
    }
  });
}

Status runBinary(const KernelCall &call) {
  const TensorRef &a = call.inputs[0], &b = call.inputs[1];
  const TensorRef &z = call.outputs[0];
  int64_t n = z.numElements();
  return withStorage(call, a.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if constexpr (std::is_same_v<S, Bool>) {
      return unsupported(call, a.dtype);
    } else {
      if (std::is_integral_v<Compute<S>> &&
          (call.op == Opcode::Pow || call.op == Opcode::Remainder))
        return unsupported(call, a.dtype);
      if (n == 0)
        return okStatus();
      bool packed = packable<S>({a.data, b.data, z.data}, n);
      binaryKernel<S><<<gridFor(packed ? n / kPack : n), kThreads, 0,
                        streamOf(call).handle()>>>(
          a.as<const S>(), b.as<const S>(), z.as<S>(), n, call.op,
          faultSiteOf(call), packed);
      return checkLaunch(call, "binaryKernel");
    }
  });
}

Status runCompare(const KernelCall &call) {
  const TensorRef &a = call.inputs[0], &b = call.inputs[1];
  const TensorRef &p = call.outputs[0];
  int64_t direction = call.ints[0];
  if (direction < 0 || direction > 5)
    return kernelError(call, "unknown comparison direction " +
                                 std::to_string(direction));
  int64_t n = p.numElements();
  return withStorage(call, a.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if (n == 0)
      return okStatus();
    compareKernel<S><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
        a.as<const S>(), b.as<const S>(), p.as<Bool>(), n, int(direction));
    return checkLaunch(call, "compareKernel");
  });
}

template <typename W> Status selectWords(const KernelCall &call, int64_t n) {
  selectKernel<W><<<gridFor(n), kThreads, 0, streamOf(call).handle()>>>(
      call.inputs[0].as<const uint8_t>(), call.inputs[1].as<const W>(),
      call.inputs[2].as<const W>(), call.outputs[0].as<W>(), n);
  return checkLaunch(call, "selectKernel");
}

Status runSelect(const KernelCall &call) {
  DType t = call.outputs[0].dtype;
  int64_t n = call.outputs[0].numElements();
  if (n == 0)
    return okStatus();
  switch (dtypeSize(t)) {
  case 1:
    return selectWords<uint8_t>(call, n);
  case 2:
    return selectWords<uint16_t>(call, n);
  case 4:
    return selectWords<uint32_t>(call, n);
  case 8:
    return selectWords<uint64_t>(call, n);
  default:
    return unsupported(call, t);
  }
}

/// Whether convertKernel writes dtype t.
bool isStorageDType(DType t) {
  switch (t) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::I32:
  case DType::I64:
  case DType::U32:
  case DType::U64:
  case DType::I1:
    return true;
  default:
    return false;
  }
}

Status runConvert(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  int64_t n = x.numElements();
  cudaStream_t stream = streamOf(call).handle();
  if (x.dtype == y.dtype) {
    if (x.data == y.data || n == 0)
      return okStatus();
    uint64_t bytes = uint64_t(n) * dtypeSize(x.dtype);
    return fromCudaError(int(cudaMemcpyAsync(y.data, x.data, bytes,
                                             cudaMemcpyDeviceToDevice, stream)),
                         "convert: cudaMemcpyAsync");
  }
  if (!isStorageDType(y.dtype))
    return unsupported(call, y.dtype);
  return withStorage(call, x.dtype, [&](auto zero) -> Status {
    using S = decltype(zero);
    if (n == 0)
      return okStatus();
    if (!convertPacked(x.as<const S>(), y.data, n, y.dtype, stream))
      convertKernel<S><<<gridFor(n), kThreads, 0, stream>>>(x.as<const S>(),
                                                            y.data, n, y.dtype);
    return checkLaunch(call, "convertKernel");
  });
}

} // namespace

Status runElementwise(const KernelCall &call) {
  switch (call.op) {
  case Opcode::Neg:
  case Opcode::Abs:
  case Opcode::Exp:
  case Opcode::Log:
  case Opcode::Tanh:
  case Opcode::Erf:
  case Opcode::Sqrt:
  case Opcode::Rsqrt:
  case Opcode::Cos:
  case Opcode::Sin:
  case Opcode::Floor:
  case Opcode::Round:
    return runUnary(call);
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Pow:
  case Opcode::Remainder:
  case Opcode::Max:
  case Opcode::Min:
    return runBinary(call);
  case Opcode::Compare:
    return runCompare(call);
  case Opcode::Select:
    return runSelect(call);
  case Opcode::Convert:
    return runConvert(call);
  default:
    return kernelError(call, "not an elementwise op");
  }
}

} // namespace trainc::cuda
