//===- ElementwiseMath.cuh - Per-element math of the elementwise ops ------===//
//
// One element of each elementwise op in its compute type: unary and binary
// math, compare, and convert's value rules. Elementwise.cu's kernels (one
// op per launch) and FusedElementwise.cu's (a program of steps per
// element) both call these, so a fused step gives the unfused op's bits.
// The numerics (what is shared with the CPU, what comes from CUDA's math
// library) are written at the top of Elementwise.cu.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_ELEMENTWISEMATH_CUH
#define TRAINC_RUNTIME_CUDA_ELEMENTWISEMATH_CUH

#include "cuda/KernelUtil.cuh"
#include "math/Transcendental.h"

#include <cstdint>
#include <type_traits>

namespace trainc::cuda {

/// Two's-complement wrap-around for integer ops whose overflow is undefined
/// on signed types.
template <typename T> __device__ __forceinline__ T wrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return T(U(a) + U(b));
}
template <typename T> __device__ __forceinline__ T wrapSub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return T(U(a) - U(b));
}
template <typename T> __device__ __forceinline__ T wrapMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return T(U(a) * U(b));
}

/// The bounds of the integer storage types (std::numeric_limits is host
/// code to nvcc).
template <typename T> struct IntRange;
template <> struct IntRange<int32_t> {
  static constexpr int32_t kMin = INT32_MIN, kMax = INT32_MAX;
};
template <> struct IntRange<int64_t> {
  static constexpr int64_t kMin = INT64_MIN, kMax = INT64_MAX;
};
template <> struct IntRange<uint32_t> {
  static constexpr uint32_t kMin = 0, kMax = UINT32_MAX;
};
template <> struct IntRange<uint64_t> {
  static constexpr uint64_t kMin = 0, kMax = UINT64_MAX;
};

//===--- Unary ------------------------------------------------------------===//

/// y = op(v) for storage type S in its compute type (the host checks that
/// op applies to S).
template <typename S>
__device__ __forceinline__ Compute<S> unaryOf(Opcode op, Compute<S> v) {
  using C = Compute<S>;
  if constexpr (std::is_integral_v<C>) {
    C negated = wrapSub(C(0), v);
    if (op == Opcode::Neg)
      return negated;
    if constexpr (std::is_unsigned_v<C>)
      return v; // Abs of an unsigned value.
    else
      return v < 0 ? negated : v; // Abs.
  } else if constexpr (std::is_same_v<C, double>) {
    switch (op) {
    case Opcode::Neg:
      return -v;
    case Opcode::Abs:
      return fabs(v);
    case Opcode::Exp:
      return exp(v);
    case Opcode::Log:
      return log(v);
    case Opcode::Tanh:
      return tanh(v);
    case Opcode::Erf:
      return erf(v);
    case Opcode::Sqrt:
      return sqrt(v);
    case Opcode::Rsqrt:
      return 1.0 / sqrt(v);
    case Opcode::Cos:
      return cos(v);
    case Opcode::Sin:
      return sin(v);
    case Opcode::Floor:
      return floor(v);
    case Opcode::Round: // Ties to even, as the CPU's nearbyint.
      return rint(v);
    default:
      return v;
    }
  } else {
    // f32 exp/tanh/erf: the CPU's VectorMath formulas. The 16-bit floats
    // and the functions the CPU takes from libm: f64, rounded once.
    constexpr bool kF32 = std::is_same_v<S, float>;
    double d = v;
    switch (op) {
    case Opcode::Neg:
      return -v;
    case Opcode::Abs:
      return math::absOf(v);
    case Opcode::Exp:
      return kF32 ? math::expCore(v) : float(exp(d));
    case Opcode::Log:
      return float(log(d));
    case Opcode::Tanh:
      return kF32 ? math::tanhCore(v) : float(tanh(d));
    case Opcode::Erf:
      return kF32 ? math::erfCore(v) : float(erf(d));
    case Opcode::Sqrt:
      return sqrtf(v);
    case Opcode::Rsqrt:
      return 1.0f / sqrtf(v);
    case Opcode::Cos:
      return float(cos(d));
    case Opcode::Sin:
      return float(sin(d));
    case Opcode::Floor: // Exact: v is already a float.
      return floorf(v);
    case Opcode::Round:
      return rintf(v);
    default:
      return v;
    }
  }
}

//===--- Binary -----------------------------------------------------------===//

/// u op v for storage type S in its compute type (the host checks that op
/// applies to S). Integer division faults on a zero divisor and on
/// INT_MIN / -1.
template <typename S>
__device__ __forceinline__ Compute<S>
binaryOf(Opcode op, Compute<S> u, Compute<S> v, const FaultSite &site) {
  using C = Compute<S>;
  if constexpr (std::is_integral_v<C>) {
    switch (op) {
    case Opcode::Add:
      return wrapAdd(u, v);
    case Opcode::Sub:
      return wrapSub(u, v);
    case Opcode::Mul:
      return wrapMul(u, v);
    case Opcode::Div:
      if (v == 0) {
        reportFault(site, FaultKind::kIntegerDivisionByZero, 0, 0);
        return 0;
      }
      if constexpr (std::is_signed_v<C>)
        if (u == IntRange<C>::kMin && v == C(-1)) {
          reportFault(site, FaultKind::kIntegerOverflow, int64_t(u), -1);
          return u;
        }
      return u / v; // Truncates toward zero.
    case Opcode::Max:
      return u > v ? u : v;
    case Opcode::Min:
      return u < v ? u : v;
    default:
      return u;
    }
  } else {
    switch (op) {
    case Opcode::Add:
      return u + v;
    case Opcode::Sub:
      return u - v;
    case Opcode::Mul:
      return u * v;
    case Opcode::Div:
      return u / v;
    case Opcode::Pow:
      // f32 and 16-bit: glibc's powf is (nearly) correctly rounded; f64
      // rounded once comes closest.
      return C(pow(double(u), double(v)));
    case Opcode::Remainder: // Exact, so the same bits in any precision.
      return C(fmod(double(u), double(v)));
    case Opcode::Max:
      return (u > v || u != u) ? u : v;
    case Opcode::Min:
      return (u < v || u != u) ? u : v;
    default:
      return u;
    }
  }
}

//===--- Compare ----------------------------------------------------------===//

/// C++'s comparisons on floats are the ordered ones graph.compare wants:
/// false whenever an operand is NaN, except !=. i1 compares as bool
/// (false < true), as on the CPU.
template <typename C>
__device__ __forceinline__ bool compareOf(int direction, C u, C v) {
  switch (direction) {
  case 0:
    return u == v;
  case 1:
    return u != v;
  case 2:
    return u < v;
  case 3:
    return u <= v;
  case 4:
    return u > v;
  default:
    return u >= v;
  }
}

//===--- Convert ----------------------------------------------------------===//

// Rounding to f16 or bf16 from a wider value in two steps (to float to
// nearest, then to 16 bits) can round wrongly at a 16-bit halfway point;
// rounding to float *to odd* first (truncate, and set the last bit if
// anything was cut off) makes the second rounding equal a single one
// (cpu/Elementwise.cpp's toFloatOdd, which this computes with the GPU's
// round-toward-zero conversions: the same bits).

/// d rounded to float by round-to-odd (overflow gives FLT_MAX, which still
/// rounds to infinity in both 16-bit formats).
__device__ __forceinline__ float toFloatOdd(double d) {
  if (d != d)
    return float(d);
  float f = __double2float_rz(d);
  return double(f) == d ? f : bitsFloat(floatBits(f) | 1u);
}

/// v rounded to float by round-to-odd (exact on the integer: int64 values
/// above 2^53 are not exact in double). |f| <= |v| fits int64.
__device__ __forceinline__ float toFloatOdd(int64_t v) {
  float f = __ll2float_rz(v);
  return int64_t(f) == v ? f : bitsFloat(floatBits(f) | 1u);
}

/// Float -> int: truncates toward zero; NaN gives 0 and values beyond the
/// range the nearest bound (cpu/Elementwise.cpp's truncateSaturating; the
/// bounds -2^(b-1) and 2^(b-1), or 0 and 2^b unsigned, are exact in
/// double).
template <typename D>
__device__ __forceinline__ D truncateSaturating(double x) {
  constexpr double lo = double(IntRange<D>::kMin);
  constexpr double hi =
      std::is_signed_v<D> ? -lo : 2.0 * double(IntRange<D>::kMax / 2 + 1);
  if (x != x)
    return 0;
  if (x < lo)
    return IntRange<D>::kMin;
  if (x >= hi)
    return IntRange<D>::kMax;
  return D(x);
}

// One element converted from a compute value of each source kind to each
// result kind, as cpu/Elementwise.cpp's convertValue and
// truncateSaturating.

/// To f32 or f64: one rounding (int64 -> float and double -> float round
/// once to nearest even); i1 -> 0 or 1.
template <typename T, typename C> __device__ __forceinline__ T toWide(C v) {
  if constexpr (std::is_same_v<C, bool>)
    return v ? T(1) : T(0);
  else
    return T(v);
}

/// To f16 or bf16: the float that store() rounds to 16 bits once.
__device__ __forceinline__ float toNarrow(float v) { return v; }
__device__ __forceinline__ float toNarrow(double v) { return toFloatOdd(v); }
__device__ __forceinline__ float toNarrow(int32_t v) {
  return toFloatOdd(int64_t(v));
}
__device__ __forceinline__ float toNarrow(int64_t v) { return toFloatOdd(v); }
__device__ __forceinline__ float toNarrow(uint32_t v) {
  return toFloatOdd(int64_t(v));
}
/// ui64 through double, as the CPU's convertValue rounds it.
__device__ __forceinline__ float toNarrow(uint64_t v) {
  return toFloatOdd(double(v));
}
__device__ __forceinline__ float toNarrow(bool v) { return v ? 1.0f : 0.0f; }

/// To i32, i64, ui32 or ui64: floats truncate and saturate, integers wrap or
/// extend, i1 -> 0 or 1.
template <typename D, typename C> __device__ __forceinline__ D toInt(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return truncateSaturating<D>(double(v));
  else if constexpr (std::is_same_v<C, bool>)
    return v ? D(1) : D(0);
  else
    return D(v);
}

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_ELEMENTWISEMATH_CUH
