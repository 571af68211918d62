//===- FusedElementwise.cu - fused_elementwise, convert_group -------------===//
//
// Two ops that do in one launch what several elementwise instructions
// would: fused_elementwise (a program of steps per element) and, at the
// end, convert_group (N converts of one pair of dtypes).
//
// fused_elementwise runs a short program (math/FusedProgram.h, decoded and
// checked on the host) at every flat index i of the results' shape:
//   reg[r]     = operand r at i (a 0-d operand: its one element; a
//                broadcast one: math/BroadcastView.h's element), r < I
//   reg[I + k] = step k (neg, abs, exp, log, tanh, erf, sqrt, rsqrt, cos,
//                sin, add, sub, mul, div, pow, max, min, compare, select,
//                convert, gelu, gelu_grad, and, or, xor, not, the shifts,
//                pop_count, count_leading_zeros) of earlier registers,
//                rounded to the step's dtype
//   result[q][i] = reg[results[q]]
// Shape legend: I <= kFusedMaxInputs operands, each of the results' shape,
// 0-d, or broadcast over it (spanning some of its dimensions, size 1 in
// others); 1..kFusedMaxResults results of one shape, n elements, flat
// arrays. One thread per pack of kFusedPack consecutive elements
// (grid-stride), one launch for the whole program: the steps' values never
// leave the thread. A thread runs the program step by step over its pack
// (one decode of a step for kFusedPack elements) and moves each operand of
// the results' shape and each result by one vector load or store when all
// of them are aligned to it; a partial last pack, or unaligned memory, goes
// element by element. A broadcast operand is read element by element at
// the offsets of math/BroadcastView.h's cursor (started once per pack: a
// division per dimension of its view), which the CPU kernel shares.
//
// In place: a result may be the memory of an operand of its shape and
// dtype. Each thread reads all its operands' elements of its pack before it
// writes any result there, and touches no other index, so that is safe.
//
// Numerics: the same bits as the unfused instructions on this device. A
// step calls the device functions of the unfused kernels
// (ElementwiseMath.cuh's unaryOf, binaryOf, compareOf and convert rules,
// GeluMath.cuh's geluOf and geluGradOf) in the compute type they use for
// the step's dtype (f64 for f64, f32 for f32, f16 and bf16), and rounds
// its value with KernelUtil.cuh's store and load of that dtype, as writing
// it to memory and reading it back would: 16-bit values to nearest even,
// f64 -> 16-bit conversions through toFloatOdd, -> i1 tests non-zero (NaN
// -> true), i1 -> 0 or 1. The caveats of Elementwise.cu and Gelu.cu
// towards the CPU (f64 and some 16-bit results from CUDA's double
// library) hold here too, and are the same in both paths, which share
// those functions. Only NaN payloads may differ from the unfused kernels':
// a signaling NaN that select or a same-dtype convert moves through a
// register of another width (a 16-bit value in a float, an f32 value in
// the double register file) comes out quiet, where those kernels copy
// bytes; NaN-ness never differs.
//
// Registers: every value of f32, f16, bf16 or i1 (0 or 1) is exact in a
// float, and of f64 in a double; the kernel is instantiated for a float
// register file when no register is f64, and double otherwise. An integer
// program (i32, i64, ui32, ui64 and i1: FusedProgram.h keeps floats and
// integers apart) has a uint64_t register file, each value's bits sign-
// or zero-extended to 64; its steps compute in the step's storage type as
// Elementwise.cu's and Bitwise.cu's kernels do (wrapping arithmetic,
// unsigned order, math/Bits.h's bitOp, converts wrapping). Registers
// are a local array indexed by the program (kFusedMaxInputs +
// kFusedMaxSteps entries of kFusedPack values): the stack frame, not
// spills. Integer division is not a step, so no step can fault
// (binaryOf's FaultSite is never used).
//
// Launch: gridFor(n) blocks of kThreads on the call's stream; the program,
// the operand and result pointers and how each operand is read (its view)
// travel in one __grid_constant__ parameter, read in place.
//
// convert_group: result[t][i] = operand[t][i] in the results' dtype, for N
// operands of one float dtype (f64, f32, f16, bf16) and N results of one
// float dtype, result t of operand t's shape (the compiler's batching of
// the per-step casts of the parameters, f32 -> bf16 or f16). Launch as
// Optimizer.cu's multi-tensor ops: one per 32 tensors, their pointers and
// element counts in a __grid_constant__ parameter, which tensors a launch
// takes and which a block serves by math/TensorGroups.h (empty tensors
// take no block). A block converts kConvertBlock elements of one tensor,
// each thread kConvertPack consecutive ones at a time (one vector load
// and store where both tensors are aligned to it, else one by one),
// striding over the block's range. Numerics: each element by
// convertKernel's rules in Elementwise.cu (ElementwiseMath.cuh's toWide
// and toNarrow; to 16 bits from f64 through toFloatOdd), so the same bits
// as the unfused converts; the same dtype on both sides copies the bits
// (NaN payloads too), which the compiler never emits. Not in place: a
// result of another dtype differs in size from its operand, so sharing
// its memory would overwrite elements other threads have yet to read (a
// result that is its operand's memory in the same dtype is left alone).
//
//===----------------------------------------------------------------------===//

#include "cuda/ElementwiseMath.cuh"
#include "cuda/GeluMath.cuh"
#include "cuda/KernelUtil.cuh"
#include "math/Bits.h"
#include "math/BroadcastView.h"
#include "math/FusedProgram.h"
#include "math/TensorGroups.h"

#include <cstdint>
#include <string>
#include <type_traits>

namespace trainc::cuda {
namespace {

/// How a thread reads an operand's elements of its pack.
enum class Read : uint8_t {
  kInPlace,  ///< at the pack's indices
  kConstant, ///< element 0, once per thread
  kGathered, ///< at its view's offsets
};

struct FusedArgs {
  /// Operands a step does not take name register 0 here (not -1), so that
  /// every step may read three registers.
  math::FusedProgram program;
  const void *operand[kFusedMaxInputs];
  Read read[kFusedMaxInputs];
  /// Operand r's offsets over the results' shape (kGathered only).
  math::BroadcastView view[kFusedMaxInputs];
  void *result[kFusedMaxResults];
  int64_t n;
  /// Whether every operand read in place and every result is aligned to a
  /// Pack of kFusedPack elements of its dtype.
  bool packed;
};
// The limit of a kernel parameter on every architecture this builds for.
static_assert(sizeof(FusedArgs) <= 4096, "FusedArgs is a kernel parameter");

/// Whether register type R holds f64 values (the double register file).
template <typename R> constexpr bool kWide = std::is_same_v<R, double>;
/// Whether register type R holds integers (the integer register file: each
/// value's bits sign-extended (i32) or zero-extended (ui32) to 64, i1 as 0
/// or 1).
template <typename R> constexpr bool kInteger = std::is_same_v<R, uint64_t>;

/// v as storing it to storage type S and loading it back gives it: rounded
/// to nearest even for the 16-bit floats, unchanged for f32 and f64.
template <typename S>
__device__ __forceinline__ Compute<S> rounded(Compute<S> v) {
  S s;
  store(&s, 0, v);
  return load(&s, 0);
}

/// fn(S()) for the storage type S of float dtype t (f64 only in the double
/// register file).
template <typename R, typename Fn>
__device__ __forceinline__ R withFloat(DType t, Fn fn) {
  switch (t) {
  case DType::F64:
    if constexpr (kWide<R>)
      return fn(double());
    else
      return R(0); // No f64 register in a float register file.
  case DType::F32:
    return fn(float());
  case DType::F16:
    return fn(Half());
  default:
    return fn(Bf16());
  }
}

/// Elements a thread takes at a time. Each step is decoded once per pack,
/// and each operand and result moves by one vector load or store where
/// aligned (8 bytes for the 16-bit floats).
constexpr int kFusedPack = 4;

/// fn(S()) for the storage type S of integer dtype t (i32, i64, ui32,
/// ui64).
template <typename Fn>
__device__ __forceinline__ void withInteger(DType t, Fn fn) {
  switch (t) {
  case DType::I32:
    return fn(int32_t());
  case DType::I64:
    return fn(int64_t());
  case DType::U32:
    return fn(uint32_t());
  default:
    return fn(uint64_t());
  }
}

/// fn(S()) for the storage type S of register dtype t: Bool for i1, an
/// integer type in the integer register file, a float type otherwise (f64
/// only in the double register file).
template <typename R, typename Fn>
__device__ __forceinline__ void withRegisterStorage(DType t, Fn fn) {
  if (t == DType::I1)
    fn(Bool());
  else if constexpr (kInteger<R>)
    withInteger(t, fn);
  else
    withFloat<R>(t, [&](auto zero) {
      fn(zero);
      return R(0);
    });
}

/// Elements i .. i + kFusedPack - 1 of operand p (dtype t) as registers:
/// one vector load when `whole` (the pack is in range and aligned), else
/// the first `count` one by one and zeros after them.
template <typename R>
__device__ __forceinline__ void loadPack(DType t, const void *p, int64_t i,
                                         int count, bool whole, R *out) {
  withRegisterStorage<R>(t, [&](auto zero) {
    using S = decltype(zero);
    const S *x = static_cast<const S *>(p);
    if (whole) {
      Pack<S, kFusedPack> u =
          *reinterpret_cast<const Pack<S, kFusedPack> *>(x + i);
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        out[j] = R(load(u.v, j));
    } else {
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        out[j] = j < count ? R(load(x, i + j)) : R(0);
    }
  });
}

/// Elements i .. i + count - 1 of operand p (dtype t) as registers, read
/// at view v's offsets; zeros after them.
template <typename R>
__device__ __forceinline__ void gatherPack(DType t, const void *p,
                                           const math::BroadcastView &v,
                                           int64_t i, int count, R *out) {
  withRegisterStorage<R>(t, [&](auto zero) {
    using S = decltype(zero);
    const S *x = static_cast<const S *>(p);
    math::BroadcastCursor cursor;
    cursor.start(v, i);
#pragma unroll
    for (int j = 0; j < kFusedPack; ++j) {
      out[j] = j < count ? R(load(x, cursor.offset)) : R(0);
      if (j + 1 < count)
        cursor.advance(v, 1);
    }
  });
}

/// Register v (a value of storage type S's dtype) as element j of p: exact,
/// the step rounded it already (an integer register: its low bits); i1 as
/// 0 or 1.
template <typename S, typename R>
__device__ __forceinline__ void storeValue(S *p, int64_t j, R v) {
  if constexpr (std::is_same_v<S, Bool>)
    store(p, j, v != R(0));
  else
    store(p, j, Compute<S>(v));
}

/// Registers v as elements i .. i + count - 1 of result p (dtype t), as
/// loadPack reads them.
template <typename R>
__device__ __forceinline__ void storePack(DType t, void *p, int64_t i,
                                          int count, bool whole, const R *v) {
  withRegisterStorage<R>(t, [&](auto zero) {
    using S = decltype(zero);
    S *y = static_cast<S *>(p);
    if (whole) {
      Pack<S, kFusedPack> u;
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        storeValue(u.v, j, v[j]);
      *reinterpret_cast<Pack<S, kFusedPack> *>(y + i) = u;
    } else {
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        if (j < count)
          storeValue(y, i + j, v[j]);
    }
  });
}

/// A step of float math (every opcode but compare, select and convert) on
/// u and v (v unused by the unary ops) in storage type S's compute type,
/// as the unfused kernel computes it.
template <typename S>
__device__ __forceinline__ Compute<S> mathOf(const math::FusedStep &s,
                                             Compute<S> u, Compute<S> v) {
  bool useTanh = s.attr == 1;
  switch (s.op) {
  case Opcode::Gelu:
    return geluOf(u, useTanh);
  case Opcode::GeluGrad:
    return geluGradOf(u, v, useTanh);
  default: // The other two-operand steps are binary math (compare and
           // select never reach here).
    return math::fusedStepArity(s.op) == 2
               ? binaryOf<S>(s.op, u, v, FaultSite())
               : unaryOf<S>(s.op, u);
  }
}

/// v (a value of compute type C, the source dtype's) in dtype `to`, other
/// than the source's, by convertKernel's rules.
template <typename R, typename C>
__device__ __forceinline__ R convertTo(DType to, C v) {
  switch (to) {
  case DType::F64:
    if constexpr (kWide<R>)
      return toWide<double>(v);
    else
      return R(0);
  case DType::F32:
    return toWide<float>(v);
  case DType::F16:
    return rounded<Half>(toNarrow(v));
  case DType::BF16:
    return rounded<Bf16>(toNarrow(v));
  default: // I1: NaN != 0, so NaN converts to true.
    return v != C(0) ? R(1) : R(0);
  }
}

/// An integer program's step s (FusedProgram.h: neg, abs, add, sub, mul,
/// max, min, the bitwise ops, compare, select, convert) on the registers
/// a, b, c, as Elementwise.cu's and Bitwise.cu's kernels compute it: in
/// the step's storage type S (wrapping, unsigned order for ui32 and ui64),
/// the value kept as its int64 bits (sign-extended from i32, zero-extended
/// from ui32), so that loading it back as S is exact.
__device__ __forceinline__ void
integerStepPack(const math::FusedStep &s, const DType *type, const uint64_t *a,
                const uint64_t *b, const uint64_t *c, uint64_t *y) {
  using R = uint64_t;
  DType from = type[s.operand[0]];
  switch (s.op) {
  case Opcode::Compare:
    withRegisterStorage<R>(from, [&](auto zero) {
      using C = Compute<decltype(zero)>;
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        y[j] = compareOf(s.attr, C(a[j]), C(b[j])) ? R(1) : R(0);
    });
    return;
  case Opcode::Select:
#pragma unroll
    for (int j = 0; j < kFusedPack; ++j)
      y[j] = a[j] != R(0) ? b[j] : c[j];
    return;
  case Opcode::Convert: // Integers wrap or extend; i1 -> 0 or 1, -> i1 != 0.
    withRegisterStorage<R>(from, [&](auto source) {
      using C = Compute<decltype(source)>;
      withRegisterStorage<R>(s.dtype, [&](auto target) {
        using D = decltype(target);
#pragma unroll
        for (int j = 0; j < kFusedPack; ++j) {
          if constexpr (std::is_same_v<D, Bool>)
            y[j] = C(a[j]) != C(0) ? R(1) : R(0);
          else
            y[j] = R(toInt<D>(C(a[j])));
        }
      });
    });
    return;
  default:
    withInteger(s.dtype, [&](auto zero) {
      using S = decltype(zero);
      math::BitOp bit;
      if (math::toBitOp(s.op, bit)) {
#pragma unroll
        for (int j = 0; j < kFusedPack; ++j)
          y[j] = R(math::bitOp<S>(bit, S(a[j]), S(b[j])));
      } else if (math::fusedStepArity(s.op) == 2) {
#pragma unroll
        for (int j = 0; j < kFusedPack; ++j)
          y[j] = R(binaryOf<S>(s.op, S(a[j]), S(b[j]), FaultSite()));
      } else {
#pragma unroll
        for (int j = 0; j < kFusedPack; ++j)
          y[j] = R(unaryOf<S>(s.op, S(a[j])));
      }
    });
  }
}

/// A float program's step s on the registers `reg` (kFusedPack elements
/// each) of dtypes `type`: one decode for the pack.
template <typename R>
__device__ __forceinline__ void
floatStepPack(const math::FusedStep &s, const DType *type,
              const R (*reg)[kFusedPack], R *y) {
  const R *a = reg[s.operand[0]], *b = reg[s.operand[1]];
  DType from = type[s.operand[0]];
  switch (s.op) {
  case Opcode::Compare:
#pragma unroll
    for (int j = 0; j < kFusedPack; ++j) {
      bool p;
      if constexpr (kWide<R>)
        p = from == DType::F64 ? compareOf(s.attr, double(a[j]), double(b[j]))
                               : compareOf(s.attr, float(a[j]), float(b[j]));
      else
        p = compareOf(s.attr, float(a[j]), float(b[j]));
      y[j] = p ? R(1) : R(0);
    }
    return;
  case Opcode::Select: {
    const R *c = reg[s.operand[2]];
#pragma unroll
    for (int j = 0; j < kFusedPack; ++j)
      y[j] = a[j] != R(0) ? b[j] : c[j];
    return;
  }
  case Opcode::Convert:
    if (from == s.dtype) { // Unfused: a byte copy.
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        y[j] = a[j];
    } else if (from == DType::I1) {
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        y[j] = convertTo<R>(s.dtype, a[j] != R(0));
    } else if (kWide<R> && from == DType::F64) {
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        y[j] = convertTo<R>(s.dtype, double(a[j]));
    } else {
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        y[j] = convertTo<R>(s.dtype, float(a[j]));
    }
    return;
  default:
    withFloat<R>(s.dtype, [&](auto zero) {
      using S = decltype(zero);
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        y[j] = R(rounded<S>(mathOf<S>(s, Compute<S>(a[j]), Compute<S>(b[j]))));
      return R(0);
    });
  }
}

/// Step s's values y[j] from the registers `reg` (kFusedPack elements
/// each) of dtypes `type`.
template <typename R>
__device__ __forceinline__ void stepPack(const math::FusedStep &s,
                                         const DType *type,
                                         const R (*reg)[kFusedPack], R *y) {
  if constexpr (kInteger<R>)
    integerStepPack(s, type, reg[s.operand[0]], reg[s.operand[1]],
                    reg[s.operand[2]], y);
  else
    floatStepPack(s, type, reg, y);
}

template <typename R>
__global__ void fusedElementwiseKernel(const __grid_constant__ FusedArgs a) {
  const math::FusedProgram &p = a.program;
  R reg[kFusedMaxInputs + kFusedMaxSteps][kFusedPack];
  // Constant operands once per thread: no step writes an operand's
  // register.
  for (int r = 0; r < p.numInputs; ++r)
    if (a.read[r] == Read::kConstant) {
      R v[kFusedPack];
      loadPack(p.registerDType[r], a.operand[r], 0, 1, false, v);
#pragma unroll
      for (int j = 0; j < kFusedPack; ++j)
        reg[r][j] = v[0];
    }
  int64_t packs = (a.n + kFusedPack - 1) / kFusedPack;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t pack = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       pack < packs; pack += stride) {
    int64_t i = pack * kFusedPack;
    int count = a.n - i < kFusedPack ? int(a.n - i) : kFusedPack;
    bool whole = a.packed && count == kFusedPack;
    for (int r = 0; r < p.numInputs; ++r)
      if (a.read[r] == Read::kInPlace)
        loadPack(p.registerDType[r], a.operand[r], i, count, whole, reg[r]);
      else if (a.read[r] == Read::kGathered)
        gatherPack(p.registerDType[r], a.operand[r], a.view[r], i, count,
                   reg[r]);
    for (int k = 0; k < p.numSteps; ++k)
      stepPack(p.steps[k], p.registerDType, reg, reg[p.numInputs + k]);
    for (int q = 0; q < p.numResults; ++q)
      storePack(p.registerDType[p.results[q]], a.result[q], i, count, whole,
                reg[p.results[q]]);
  }
}

/// Whether x and y have the same dims.
bool sameShape(const TensorRef &x, const TensorRef &y) {
  if (x.rank != y.rank)
    return false;
  for (int d = 0; d < x.rank; ++d)
    if (x.dims[d] != y.dims[d])
      return false;
  return true;
}

} // namespace

Status runFusedElementwise(const KernelCall &call) {
  int numInputs = int(call.inputs.size), numResults = call.numOutputs;
  if (numInputs > kFusedMaxInputs || numResults > kFusedMaxResults ||
      numResults < 1)
    return kernelError(call, "takes at most " +
                                 std::to_string(kFusedMaxInputs) +
                                 " operands and 1 to " +
                                 std::to_string(kFusedMaxResults) + " results");
  DType inputTypes[kFusedMaxInputs], resultTypes[kFusedMaxResults];
  int inputRanks[kFusedMaxInputs];
  for (int r = 0; r < numInputs; ++r) {
    inputTypes[r] = call.inputs[r].dtype;
    inputRanks[r] = call.inputs[r].rank;
  }
  for (int q = 0; q < numResults; ++q)
    resultTypes[q] = call.outputs[q].dtype;
  const TensorRef &shape = call.outputs[0];
  FusedArgs args = {};
  std::string error = math::decodeFusedProgram(
      call.ints.data, call.ints.size, inputTypes, inputRanks, numInputs,
      resultTypes, numResults, shape.rank, args.program);
  if (!error.empty())
    return kernelError(call, error);

  for (int q = 1; q < numResults; ++q)
    if (!sameShape(call.outputs[q], shape))
      return kernelError(call, "result " + std::to_string(q) +
                                   " is not of result 0's shape");
  for (int r = 0; r < numInputs; ++r) {
    const TensorRef &x = call.inputs[r];
    math::BroadcastView &view = args.view[r];
    error = math::fusedOperandView(args.program, r, shape.dims, shape.rank,
                                   x.dims, x.rank, view);
    if (!error.empty())
      return kernelError(call, error);
    args.read[r] = view.constant()     ? Read::kConstant
                   : view.contiguous() ? Read::kInPlace
                                       : Read::kGathered;
    args.operand[r] = x.data;
  }
  args.packed = true;
  for (int r = 0; r < numInputs; ++r)
    args.packed =
        args.packed &&
        (args.read[r] != Read::kInPlace ||
         packAligned(args.operand[r], dtypeSize(inputTypes[r]) * kFusedPack));
  for (int q = 0; q < numResults; ++q) {
    args.result[q] = call.outputs[q].data;
    args.packed =
        args.packed &&
        packAligned(args.result[q], dtypeSize(resultTypes[q]) * kFusedPack);
  }
  args.n = shape.numElements();
  if (args.n == 0)
    return okStatus();

  bool wide = false;
  for (int r = 0; r < args.program.numRegisters(); ++r)
    wide = wide || args.program.registerDType[r] == DType::F64;
  bool integers = math::isIntegerProgram(args.program);
  // Operands a step does not take: register 0 (see FusedArgs).
  for (int k = 0; k < args.program.numSteps; ++k)
    for (int16_t &operand : args.program.steps[k].operand)
      operand = operand < 0 ? 0 : operand;
  cudaStream_t stream = streamOf(call).handle();
  unsigned grid = gridFor((args.n + kFusedPack - 1) / kFusedPack);
  if (integers)
    fusedElementwiseKernel<uint64_t><<<grid, kThreads, 0, stream>>>(args);
  else if (wide)
    fusedElementwiseKernel<double><<<grid, kThreads, 0, stream>>>(args);
  else
    fusedElementwiseKernel<float><<<grid, kThreads, 0, stream>>>(args);
  return checkLaunch(call, "fusedElementwiseKernel");
}

//===--- ConvertGroup -----------------------------------------------------===//

namespace {

using math::GroupLaunch;
using math::kGroupTensors;

/// Consecutive elements a thread converts at a time, and elements of one
/// tensor a block takes.
constexpr int kConvertPack = 8;
constexpr int64_t kConvertBlock = 2 * kConvertPack * kThreads;

template <typename S> using ConvertPack = Pack<S, kConvertPack>;

/// The tensors of one launch of convert_group, as kernel arguments.
template <typename S, typename D> struct ConvertGroupArgs {
  const S *x[kGroupTensors];
  D *y[kGroupTensors];
  int64_t n[kGroupTensors];
  /// Whether x[k] and y[k] are aligned to ConvertPack.
  bool packed[kGroupTensors];
  /// The launch's members and their blocks (math/TensorGroups.h).
  GroupLaunch launch;
};

/// Element i of x written as element j of y by convertKernel's rules
/// (float storage types; the same type: its bits).
template <typename S, typename D>
__device__ __forceinline__ void convertElement(const S *x, int64_t i, D *y,
                                               int64_t j) {
  if constexpr (std::is_same_v<S, D>)
    y[j] = x[i];
  else if constexpr (std::is_same_v<D, float> || std::is_same_v<D, double>)
    store(y, j, toWide<D>(load(x, i)));
  else
    store(y, j, toNarrow(load(x, i)));
}

template <typename S, typename D>
__global__ void
convertGroupKernel(const __grid_constant__ ConvertGroupArgs<S, D> a) {
  int k = math::memberOfUnit(a.launch, blockIdx.x);
  int64_t begin = (int64_t(blockIdx.x) - a.launch.firstUnit[k]) * kConvertBlock;
  int64_t end = begin + kConvertBlock < a.n[k] ? begin + kConvertBlock : a.n[k];
  const S *x = a.x[k];
  D *y = a.y[k];
  int64_t first = begin + int64_t(threadIdx.x) * kConvertPack;
  int64_t step = int64_t(blockDim.x) * kConvertPack;
  // Whole packs (begin is a multiple of kConvertPack), then the tail.
  int64_t packedEnd = a.packed[k] ? end / kConvertPack * kConvertPack : begin;
  for (int64_t i = first; i < packedEnd; i += step) {
    ConvertPack<S> u =
        reinterpret_cast<const ConvertPack<S> *>(x)[i / kConvertPack];
    ConvertPack<D> r;
#pragma unroll
    for (int j = 0; j < kConvertPack; ++j)
      convertElement(u.v, j, r.v, j);
    reinterpret_cast<ConvertPack<D> *>(y)[i / kConvertPack] = r;
  }
  for (int64_t i = packedEnd + threadIdx.x; i < end; i += blockDim.x)
    convertElement(x, i, y, i);
}

template <typename S, typename D> Status convertGroup(const KernelCall &call) {
  const Span<TensorRef> &in = call.inputs;
  const TensorRef *out = call.outputs;
  size_t count = size_t(in.size);
  // A same-dtype pair in one memory is done already (convert copies).
  auto blocksOf = [&](size_t i) -> int64_t {
    if (std::is_same_v<S, D> && in[i].data == out[i].data)
      return 0;
    return (in[i].numElements() + kConvertBlock - 1) / kConvertBlock;
  };
  ConvertGroupArgs<S, D> a;
  size_t next = 0;
  while (math::nextLaunch(count, next, blocksOf, a.launch)) {
    for (int k = 0; k < a.launch.count; ++k) {
      size_t i = size_t(a.launch.tensor[k]);
      a.x[k] = in[i].as<const S>();
      a.y[k] = out[i].as<D>();
      a.n[k] = in[i].numElements();
      a.packed[k] = packAligned(a.x[k], sizeof(ConvertPack<S>)) &&
                    packAligned(a.y[k], sizeof(ConvertPack<D>));
    }
    int64_t blocks = a.launch.firstUnit[a.launch.count];
    if (blocks > INT32_MAX)
      return kernelError(call, "a tensor group of " + std::to_string(blocks) +
                                   " blocks is too large for one launch");
    convertGroupKernel<S, D>
        <<<unsigned(blocks), kThreads, 0, streamOf(call).handle()>>>(a);
    TRAINC_RETURN_IF_ERROR(checkLaunch(call, "convertGroupKernel"));
  }
  return okStatus();
}

} // namespace

Status runConvertGroup(const KernelCall &call) {
  const Span<TensorRef> &in = call.inputs;
  if (in.size < 1 || call.numOutputs != int(in.size))
    return kernelError(call, "takes N >= 1 operands and N results, not " +
                                 std::to_string(in.size) + " and " +
                                 std::to_string(call.numOutputs));
  DType from = in[0].dtype, to = call.outputs[0].dtype;
  for (int64_t i = 0; i < in.size; ++i) {
    const TensorRef &x = in[i], &y = call.outputs[i];
    if (x.dtype != from || y.dtype != to)
      return kernelError(call, "pair " + std::to_string(i) + " converts " +
                                   dtypeName(x.dtype) + " to " +
                                   dtypeName(y.dtype) + ", not pair 0's " +
                                   dtypeName(from) + " to " + dtypeName(to));
    if (!sameShape(x, y))
      return kernelError(call, "result " + std::to_string(i) +
                                   " is not of operand " + std::to_string(i) +
                                   "'s shape");
    if (from != to && x.data == y.data && x.numElements() > 0)
      return kernelError(call, "result " + std::to_string(i) + " is operand " +
                                   std::to_string(i) +
                                   "'s memory, but of another dtype");
  }
  return withFloatStorage(call, from, [&](auto source) {
    return withFloatStorage(call, to, [&](auto target) {
      return convertGroup<decltype(source), decltype(target)>(call);
    });
  });
}

} // namespace trainc::cuda
