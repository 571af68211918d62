//===- Elementwise.cpp - Unary and binary math, compare, select, convert --===//
//
// Every op here maps elements at one flat index i to the result at i:
//   unary   y[i] = f(x[i])       neg -x, abs |x|, exp, log, tanh, erf, cos,
//                                sin, sqrt,
//                                rsqrt 1/sqrt(x)
//   binary  z[i] = f(x[i], y[i]) add, sub, mul, div, pow x^y, max, min
//   compare p[i] = x[i] <dir> y[i]                 (result i1)
//   select  z[i] = p[i] ? t[i] : f[i]
//   convert y[i] = x[i] in the result dtype
// Shape legend: none is needed; operands and results share one shape, so
// every tensor is a flat array of n elements.
//
// Numerics (cpu/Kernels.h): f64 computes in double; f32, f16 and bf16 in
// float, 16-bit values loaded exactly and stored rounded to nearest even.
// For + - * / and sqrt that double rounding (exact op -> float -> 16 bits)
// equals one rounding: float's 24 bits are at least 2p + 2 for the 16-bit
// precisions p = 11 (f16) and 8 (bf16).
// max/min return NaN if either operand is NaN. Integer neg, abs, add, sub
// and mul wrap around in two's complement, as the graph folder's APInt
// arithmetic does; integer div truncates toward zero, and division by zero
// or INT_MIN / -1 is an error Status naming the first failing element.
//
// Convert follows graph.convert: float -> float and int -> float round to
// nearest even once (see toFloatOdd for the 16-bit targets), float -> int
// truncates toward zero and saturates (NaN -> 0, beyond the range -> the
// nearest bound, as the folder's APFloat does), int -> int wraps or
// sign-extends, -> i1 tests non-zero, i1 -> 0 or 1.
//
// Loops run over raw typed pointers so that they vectorize, in parallel
// chunks of kGrain elements. On f32, neg, abs, exp, tanh, erf, sqrt, rsqrt,
// add, sub, mul, div, max and min run VectorMath.h's array functions, which
// are also compiled for AVX-512 and AVX2 + FMA and picked at run time. Its exp,
// tanh and erf are polynomial approximations (at most 1.5 ulp from the
// exact result, see VectorMath.cpp), not libm's; the rest round as IEEE
// arithmetic does. log and pow, f64 and the 16-bit types call libm.
//
//===----------------------------------------------------------------------===//

#include "base/Parallel.h"
#include "cpu/Clones.h"
#include "cpu/KernelUtil.h"
#include "cpu/VectorMath.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

namespace trainc::cpu {
namespace {

/// Elements per parallel chunk: large enough that handing a chunk to a
/// thread costs little next to the work, small enough that a 1M-element
/// tensor spreads over every core.
constexpr int64_t kGrain = 16384;

enum class Kind { kFloat, kInt, kBool };

// How each dtype is stored and in which type it computes. load and store
// convert between the two (rounding to nearest even for 16-bit floats).
template <typename T> struct NativeFloat {
  using Storage = T;
  using Compute = T;
  static constexpr Kind kind = Kind::kFloat;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
using F64 = NativeFloat<double>;
using F32 = NativeFloat<float>;
struct F16 {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr Kind kind = Kind::kFloat;
  static float load(uint16_t v) { return f16ToFloat(v); }
  static uint16_t store(float v) { return floatToF16(v); }
};
struct BF16 {
  using Storage = uint16_t;
  using Compute = float;
  static constexpr Kind kind = Kind::kFloat;
  static float load(uint16_t v) { return bf16ToFloat(v); }
  static uint16_t store(float v) { return floatToBf16(v); }
};
template <typename T> struct Int {
  using Storage = T;
  using Compute = T;
  static constexpr Kind kind = Kind::kInt;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};
using I64 = Int<int64_t>;
using I32 = Int<int32_t>;
using I16 = Int<int16_t>;
using I8 = Int<int8_t>;
using U64 = Int<uint64_t>;
using U32 = Int<uint32_t>;
using U16 = Int<uint16_t>;
using U8 = Int<uint8_t>;
/// i1 is a byte holding 0 or 1; it computes as bool, so it compares as
/// unsigned (false < true).
struct I1 {
  using Storage = uint8_t;
  using Compute = bool;
  static constexpr Kind kind = Kind::kBool;
  static bool load(uint8_t v) { return v != 0; }
  static uint8_t store(bool v) { return v; }
};

/// Calls fn with the traits struct of dtype t.
template <typename Fn>
Status visitDType(const KernelCall &call, DType t, Fn &&fn) {
  switch (t) {
  case DType::F64:
    return fn(F64());
  case DType::F32:
    return fn(F32());
  case DType::F16:
    return fn(F16());
  case DType::BF16:
    return fn(BF16());
  case DType::I64:
    return fn(I64());
  case DType::I32:
    return fn(I32());
  case DType::I1:
    return fn(I1());
  case DType::I16:
    return fn(I16());
  case DType::I8:
    return fn(I8());
  case DType::U64:
    return fn(U64());
  case DType::U32:
    return fn(U32());
  case DType::U16:
    return fn(U16());
  case DType::U8:
    return fn(U8());
  // Storage-only types: only convert handles them (convertStorage).
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
  return unsupportedDType(call, t);
}

template <typename T> constexpr bool isF16OrBF16() {
  return std::is_same_v<T, F16> || std::is_same_v<T, BF16>;
}

//===--- Parallel loops ---------------------------------------------------===//

// The loops copy their pointers and functor into locals before iterating:
// a byte store (i1 results) may alias anything, and pointers read through
// the lambda's captures would be reloaded on every iteration, which stops
// vectorization.

/// y[i] = fn(x[i]) for i in [0, n).
template <typename A, typename R, typename Fn>
void map1(const A *x, R *y, int64_t n, Fn fn) {
  parallelFor(n, kGrain, [=](int64_t begin, int64_t end) {
    const A *xs = x;
    R *ys = y;
    Fn f = fn;
    for (int64_t i = begin; i < end; ++i)
      ys[i] = f(xs[i]);
  });
}

/// z[i] = fn(x[i], y[i]) for i in [0, n).
template <typename A, typename B, typename R, typename Fn>
void map2(const A *x, const B *y, R *z, int64_t n, Fn fn) {
  parallelFor(n, kGrain, [=](int64_t begin, int64_t end) {
    const A *xs = x;
    const B *ys = y;
    R *zs = z;
    Fn f = fn;
    for (int64_t i = begin; i < end; ++i)
      zs[i] = f(xs[i], ys[i]);
  });
}

// Integer loops are cloned (cpu/Clones.h): SSE2's 4 lanes made a fused
// threefry's adds its slowest steps.

/// z[i] = fn(x[i], y[i]) for i in [0, n), integers.
template <typename T, typename Fn>
TRAINC_CPU_CLONES void intSpan2(const T *x, const T *y, T *z, int64_t n,
                                Fn fn) {
  for (int64_t i = 0; i < n; ++i)
    z[i] = fn(x[i], y[i]);
}

/// map2 for integer types, through intSpan2.
template <typename T, typename Fn>
void intMap2(const T *x, const T *y, T *z, int64_t n, Fn fn) {
  parallelFor(n, kGrain, [=](int64_t begin, int64_t end) {
    intSpan2(x + begin, y + begin, z + begin, end - begin, fn);
  });
}

/// Runs fn, a VectorMath array function, over parallel chunks of [0, n).
void map1F32(void (*fn)(const float *, float *, int64_t), const float *x,
             float *y, int64_t n) {
  parallelFor(n, kGrain, [=](int64_t begin, int64_t end) {
    fn(x + begin, y + begin, end - begin);
  });
}
void map2F32(void (*fn)(const float *, const float *, float *, int64_t),
             const float *x, const float *y, float *z, int64_t n) {
  parallelFor(n, kGrain, [=](int64_t begin, int64_t end) {
    fn(x + begin, y + begin, z + begin, end - begin);
  });
}

/// Runs elementOk(i) for i in [0, n), where false means element i cannot
/// be computed. Returns the lowest such i, or -1. Chunks are contiguous and
/// each stops at its first failure, so the minimum over chunks is the first
/// failure overall and the message does not depend on the thread count.
template <typename Fn> int64_t firstFailure(int64_t n, Fn elementOk) {
  std::atomic<int64_t> first{n};
  parallelFor(n, kGrain, [&](int64_t begin, int64_t end) {
    Fn ok = elementOk;
    for (int64_t i = begin; i < end; ++i) {
      if (ok(i))
        continue;
      int64_t seen = first.load();
      while (i < seen && !first.compare_exchange_weak(seen, i)) {
      }
      return;
    }
  });
  return first.load() == n ? -1 : first.load();
}

//===--- Unary ------------------------------------------------------------===//

/// The VectorMath function computing unary `op` on f32, or null.
auto unaryF32Function(Opcode op) -> void (*)(const float *, float *, int64_t) {
  switch (op) {
  case Opcode::Neg:
    return negF32;
  case Opcode::Abs:
    return absF32;
  case Opcode::Exp:
    return expF32;
  case Opcode::Tanh:
    return tanhF32;
  case Opcode::Erf:
    return erfF32;
  case Opcode::Sqrt:
    return sqrtF32;
  case Opcode::Rsqrt:
    return rsqrtF32;
  default:
    return nullptr;
  }
}

/// Two's-complement wrap-around for integer ops whose overflow is undefined
/// behaviour on signed C++ types: computed in an unsigned type of at least
/// int's width (uint16_t alone would be promoted to int, where 0xffff *
/// 0xffff overflows), then cut to T.
template <typename T, typename Fn> T wrapped(T a, T b, Fn fn) {
  using U = std::common_type_t<std::make_unsigned_t<T>, unsigned>;
  return static_cast<T>(
      fn(static_cast<U>(static_cast<std::make_unsigned_t<T>>(a)),
         static_cast<U>(static_cast<std::make_unsigned_t<T>>(b))));
}

template <typename Io> Status unaryTyped(const KernelCall &call) {
  using S = typename Io::Storage;
  using C = typename Io::Compute;
  const TensorRef &x = call.inputs[0];
  auto apply = [&](auto fn) {
    map1(x.as<S>(), call.outputs[0].as<S>(), x.numElements(),
         [fn](S v) { return Io::store(fn(Io::load(v))); });
    return okStatus();
  };
  if constexpr (std::is_same_v<Io, F32>) {
    if (auto fn = unaryF32Function(call.op)) {
      map1F32(fn, x.as<float>(), call.outputs[0].as<float>(), x.numElements());
      return okStatus();
    }
  }
  if constexpr (Io::kind == Kind::kFloat) {
    switch (call.op) {
    case Opcode::Neg:
      return apply([](C v) { return -v; });
    case Opcode::Abs:
      return apply([](C v) { return std::abs(v); });
    case Opcode::Exp:
      return apply([](C v) { return std::exp(v); });
    case Opcode::Log:
      return apply([](C v) { return std::log(v); });
    case Opcode::Tanh:
      return apply([](C v) { return std::tanh(v); });
    case Opcode::Erf:
      return apply([](C v) { return std::erf(v); });
    case Opcode::Sqrt:
      return apply([](C v) { return std::sqrt(v); });
    case Opcode::Rsqrt:
      return apply([](C v) { return C(1) / std::sqrt(v); });
    case Opcode::Cos:
      return apply([](C v) { return std::cos(v); });
    case Opcode::Sin:
      return apply([](C v) { return std::sin(v); });
    case Opcode::Floor:
      return apply([](C v) { return std::floor(v); });
    case Opcode::Round: // Ties to even: the default rounding mode's.
      return apply([](C v) { return std::nearbyint(v); });
    default:
      break;
    }
  } else if constexpr (Io::kind == Kind::kInt) {
    auto neg = [](C v) { return wrapped(C(0), v, std::minus<>()); };
    if (call.op == Opcode::Neg)
      return apply(neg);
    if (call.op == Opcode::Abs) {
      if constexpr (std::is_signed_v<C>)
        return apply([neg](C v) { return v < 0 ? neg(v) : v; });
      else
        return apply([](C v) { return v; });
    }
  }
  return unsupportedDType(call, x.dtype);
}

//===--- Binary -----------------------------------------------------------===//

/// Integer a / b truncated toward zero, checking each element.
template <typename T>
Status divideChecked(const KernelCall &call, const T *a, const T *b, T *z,
                     int64_t n) {
  constexpr T kMin = std::numeric_limits<T>::min();
  int64_t bad = firstFailure(n, [=](int64_t i) {
    if (b[i] == 0)
      return false;
    if constexpr (std::is_signed_v<T>)
      if (a[i] == kMin && b[i] == T(-1))
        return false;
    z[i] = a[i] / b[i]; // C++ division truncates toward zero.
    return true;
  });
  if (bad < 0)
    return okStatus();
  std::string where = "element " + std::to_string(bad) + ": ";
  if (b[bad] == 0)
    return kernelError(call, where + "integer division by zero");
  return kernelError(call, where + "integer overflow in " +
                               std::to_string(a[bad]) + " / -1");
}

/// max and min that return NaN when either operand is NaN (std::max
/// returns its first argument when the comparison is false).
template <typename T> T maxOrNaN(T u, T v) {
  if constexpr (std::is_floating_point_v<T>)
    return (u > v || std::isnan(u)) ? u : v;
  else
    return u > v ? u : v;
}
template <typename T> T minOrNaN(T u, T v) {
  if constexpr (std::is_floating_point_v<T>)
    return (u < v || std::isnan(u)) ? u : v;
  else
    return u < v ? u : v;
}

/// The VectorMath function computing binary `op` on f32, or null.
auto binaryF32Function(Opcode op)
    -> void (*)(const float *, const float *, float *, int64_t) {
  switch (op) {
  case Opcode::Add:
    return addF32;
  case Opcode::Sub:
    return subF32;
  case Opcode::Mul:
    return mulF32;
  case Opcode::Div:
    return divF32;
  case Opcode::Max:
    return maxF32;
  case Opcode::Min:
    return minF32;
  default:
    return nullptr;
  }
}

template <typename Io> Status binaryTyped(const KernelCall &call) {
  using S = typename Io::Storage;
  using C = typename Io::Compute;
  const S *a = call.inputs[0].as<S>();
  const S *b = call.inputs[1].as<S>();
  S *z = call.outputs[0].as<S>();
  int64_t n = call.outputs[0].numElements();
  if constexpr (std::is_same_v<Io, F32>) {
    if (auto fn = binaryF32Function(call.op)) {
      map2F32(fn, a, b, z, n);
      return okStatus();
    }
  }
  auto apply = [&](auto fn) {
    map2(a, b, z, n,
         [fn](S u, S v) { return Io::store(fn(Io::load(u), Io::load(v))); });
    return okStatus();
  };
  if constexpr (Io::kind == Kind::kFloat) {
    switch (call.op) {
    case Opcode::Add:
      return apply([](C u, C v) { return u + v; });
    case Opcode::Sub:
      return apply([](C u, C v) { return u - v; });
    case Opcode::Mul:
      return apply([](C u, C v) { return u * v; });
    case Opcode::Div:
      return apply([](C u, C v) { return u / v; });
    case Opcode::Pow:
      return apply([](C u, C v) { return std::pow(u, v); });
    case Opcode::Remainder: // Exact: the result is one of C's values.
      return apply([](C u, C v) { return std::fmod(u, v); });
    case Opcode::Max:
      return apply([](C u, C v) { return maxOrNaN(u, v); });
    case Opcode::Min:
      return apply([](C u, C v) { return minOrNaN(u, v); });
    default:
      break;
    }
  } else if constexpr (Io::kind == Kind::kInt) {
    auto applyInt = [&](auto fn) {
      intMap2(a, b, z, n, fn);
      return okStatus();
    };
    switch (call.op) {
    case Opcode::Add:
      return applyInt([](C u, C v) { return wrapped(u, v, std::plus<>()); });
    case Opcode::Sub:
      return applyInt([](C u, C v) { return wrapped(u, v, std::minus<>()); });
    case Opcode::Mul:
      return applyInt(
          [](C u, C v) { return wrapped(u, v, std::multiplies<>()); });
    case Opcode::Div:
      return divideChecked(call, a, b, z, n);
    case Opcode::Max:
      return applyInt([](C u, C v) { return maxOrNaN(u, v); });
    case Opcode::Min:
      return applyInt([](C u, C v) { return minOrNaN(u, v); });
    default:
      break;
    }
  }
  return unsupportedDType(call, call.inputs[0].dtype);
}

//===--- Compare and select -----------------------------------------------===//

/// C++'s comparisons on floats are already the ordered ones graph.compare
/// wants: false whenever an operand is NaN, except !=.
template <typename Io> Status compareTyped(const KernelCall &call) {
  using S = typename Io::Storage;
  using C = typename Io::Compute;
  auto apply = [&](auto cmp) {
    map2(call.inputs[0].as<S>(), call.inputs[1].as<S>(),
         call.outputs[0].as<uint8_t>(), call.outputs[0].numElements(),
         [cmp](S u, S v) { return uint8_t(cmp(Io::load(u), Io::load(v))); });
    return okStatus();
  };
  switch (call.ints[0]) {
  case 0:
    return apply(std::equal_to<C>());
  case 1:
    return apply(std::not_equal_to<C>());
  case 2:
    return apply(std::less<C>());
  case 3:
    return apply(std::less_equal<C>());
  case 4:
    return apply(std::greater<C>());
  case 5:
    return apply(std::greater_equal<C>());
  }
  return kernelError(call, "unknown comparison direction " +
                               std::to_string(call.ints[0]));
}

/// Select only moves bits, so it works on unsigned words of the element's
/// size and serves every dtype.
template <typename W> void selectWords(const KernelCall &call) {
  const uint8_t *pred = call.inputs[0].as<uint8_t>();
  const W *onTrue = call.inputs[1].as<W>();
  const W *onFalse = call.inputs[2].as<W>();
  W *result = call.outputs[0].as<W>();
  parallelFor(call.outputs[0].numElements(), kGrain,
              [=](int64_t begin, int64_t end) {
                const uint8_t *p = pred;
                const W *t = onTrue, *f = onFalse;
                W *z = result;
                // Both loads unconditional, so the loop can blend vectors.
                for (int64_t i = begin; i < end; ++i) {
                  W a = t[i], b = f[i];
                  z[i] = p[i] ? a : b;
                }
              });
}

Status runSelect(const KernelCall &call) {
  switch (dtypeSize(call.outputs[0].dtype)) {
  case 1:
    selectWords<uint8_t>(call);
    return okStatus();
  case 2:
    selectWords<uint16_t>(call);
    return okStatus();
  case 4:
    selectWords<uint32_t>(call);
    return okStatus();
  case 8:
    selectWords<uint64_t>(call);
    return okStatus();
  }
  return unsupportedDType(call, call.outputs[0].dtype);
}

//===--- Convert ----------------------------------------------------------===//

// Rounding to f16 or bf16 from a wider value in two steps (to float to
// nearest, then to 16 bits to nearest) can round wrongly: a value just
// above a 16-bit halfway point may land exactly on it in float and then tie
// to even downward. Rounding to float *to odd* instead (truncate, and set
// the last bit if anything was cut off) keeps the information that matters:
// rounding the odd result to nearest even at p <= 22 bits equals rounding
// the original value (Boldo and Melquiond, "When double rounding is odd"),
// and f16 (11 bits) and bf16 (8 bits) are well within that.

/// d rounded to float by round-to-odd. Overflow gives FLT_MAX, which still
/// rounds to infinity in both 16-bit formats.
float toFloatOdd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d)
    return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d))
    f = std::nextafter(f, 0.0f); // Rounded away from zero: step back.
  return bitsFloat(floatBits(f) | 1u);
}

/// v rounded to float by round-to-odd (int64 values above 2^53 are not
/// exact in double, so this works on the integer's bits directly).
float toFloatOdd(int64_t v) {
  uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (m < (uint64_t(1) << 24)) // Exact in float.
    return static_cast<float>(v);
  int shift = 0;
  while ((m >> shift) >= (uint64_t(1) << 24))
    ++shift;
  uint64_t kept = m >> shift;
  if ((kept << shift) != m)
    kept |= 1u;
  float f = std::ldexp(static_cast<float>(kept), shift);
  return v < 0 ? -f : f;
}

/// One element of graph.convert that cannot fail (all but float -> int).
template <typename From, typename To>
typename To::Storage convertValue(typename From::Storage v) {
  using D = typename To::Storage;
  auto x = From::load(v);
  if constexpr (To::kind == Kind::kBool) {
    return To::store(x != 0); // NaN != 0: NaN converts to true.
  } else if constexpr (From::kind == Kind::kBool) {
    return To::store(typename To::Compute(x ? 1 : 0));
  } else if constexpr (isF16OrBF16<To>()) {
    if constexpr (std::is_same_v<From, U64>)
      return To::store(toFloatOdd(static_cast<double>(x)));
    else if constexpr (From::kind == Kind::kInt)
      return To::store(toFloatOdd(static_cast<int64_t>(x)));
    else if constexpr (std::is_same_v<From, F64>)
      return To::store(toFloatOdd(x));
    else
      return To::store(x); // f32, f16, bf16: exact in float, rounded once.
  } else {
    // To f32 or f64 (one rounding to nearest even: static_cast of a double
    // or a 64-bit integer to float rounds once on IEEE targets), or int to
    // int (wraps or sign-extends).
    return static_cast<D>(x);
  }
}

/// Float -> int: truncates toward zero; NaN gives 0 and values beyond the
/// range the nearest bound. The bounds (-2^(b-1) and 2^(b-1) signed, 0 and
/// 2^b unsigned) are exact in double. ONNX leaves out-of-range casts undefined
/// and onnxruntime and PyTorch carry on (T5's relative-position buckets cast
/// log(0) = -inf and discard it), so this is not an error.
template <typename D> D truncateSaturating(double x) {
  constexpr double lo = static_cast<double>(std::numeric_limits<D>::min());
  constexpr double hi =
      std::is_signed_v<D>
          ? -lo
          : 2.0 * static_cast<double>(std::numeric_limits<D>::max() / 2 + 1);
  if (std::isnan(x))
    return 0;
  if (x < lo)
    return std::numeric_limits<D>::min();
  if (x >= hi)
    return std::numeric_limits<D>::max();
  return static_cast<D>(x);
}

template <typename From, typename To>
Status convertTyped(const KernelCall &call) {
  using S = typename From::Storage;
  using D = typename To::Storage;
  const S *x = call.inputs[0].as<S>();
  D *y = call.outputs[0].as<D>();
  int64_t n = call.outputs[0].numElements();
  if constexpr (From::kind == Kind::kFloat && To::kind == Kind::kInt)
    map1(x, y, n, [](S v) { return truncateSaturating<D>(From::load(v)); });
  else
    map1(x, y, n, [](S v) { return convertValue<From, To>(v); });
  return okStatus();
}

/// Convert from or to a storage-only type, element by element through
/// KernelUtil's loadAs/storeAs (which decode and encode 8-bit floats and
/// wrap sub-byte integers), with graph.convert's rules: float -> integer
/// truncates and saturates to the integer's range, integer -> integer
/// wraps, -> i1 tests non-zero.
Status convertStorage(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  bool fromFloat = isFloat(x.dtype) || isStorageFloat(x.dtype);
  bool toFloat = isFloat(y.dtype) || isStorageFloat(y.dtype);
  int bits = int(dtypeSize(y.dtype) * 8);
  bool isSigned = true;
  switch (y.dtype) {
  case DType::I4:
    bits = 4;
    break;
  case DType::U4:
    bits = 4, isSigned = false;
    break;
  case DType::I2:
    bits = 2;
    break;
  case DType::U2:
    bits = 2, isSigned = false;
    break;
  case DType::U64:
  case DType::U32:
  case DType::U16:
  case DType::U8:
    isSigned = false;
    break;
  default:
    break;
  }
  // The integer range of y as doubles (exact: powers of two).
  double lo = isSigned ? -std::ldexp(1.0, bits - 1) : 0.0;
  double hi = isSigned ? std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits);
  uint64_t maxValue = isSigned     ? (uint64_t(1) << (bits - 1)) - 1
                      : bits == 64 ? ~uint64_t(0)
                                   : (uint64_t(1) << bits) - 1;
  parallelFor(y.numElements(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (y.dtype == DType::I1) {
        storeAs<double>(y, i, loadAs<double>(x, i) != 0 ? 1.0 : 0.0);
      } else if (toFloat) {
        storeAs<double>(y, i, loadAs<double>(x, i));
      } else if (fromFloat) {
        double v = std::trunc(loadAs<double>(x, i));
        if (std::isnan(v) || v < lo)
          storeAs<int64_t>(y, i, std::isnan(v) ? 0 : int64_t(lo));
        else if (v >= hi)
          storeAs<uint64_t>(y, i, maxValue);
        else if (v >= std::ldexp(1.0, 63)) // only for u64
          storeAs<uint64_t>(y, i, uint64_t(v));
        else
          storeAs<int64_t>(y, i, int64_t(v));
      } else {
        storeAs<int64_t>(y, i, loadAs<int64_t>(x, i));
      }
    }
  });
  return okStatus();
}

Status runConvert(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &y = call.outputs[0];
  if (x.dtype == y.dtype) {
    if (x.data != y.data)
      std::memcpy(y.data, x.data, x.numElements() * dtypeSize(x.dtype));
    return okStatus();
  }
  if (isStorageOnly(x.dtype) || isStorageOnly(y.dtype))
    return convertStorage(call);
  return visitDType(call, x.dtype, [&](auto from) {
    return visitDType(call, y.dtype, [&](auto to) {
      return convertTyped<decltype(from), decltype(to)>(call);
    });
  });
}

} // namespace

Status runElementwise(const KernelCall &call) {
  DType t = call.inputs[0].dtype;
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
    return visitDType(call, t,
                      [&](auto io) { return unaryTyped<decltype(io)>(call); });
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Pow:
  case Opcode::Remainder:
  case Opcode::Max:
  case Opcode::Min:
    return visitDType(call, t,
                      [&](auto io) { return binaryTyped<decltype(io)>(call); });
  case Opcode::Compare:
    return visitDType(
        call, t, [&](auto io) { return compareTyped<decltype(io)>(call); });
  case Opcode::Select:
    return runSelect(call);
  case Opcode::Convert:
    return runConvert(call);
  default:
    return kernelError(call, "not an elementwise op");
  }
}

} // namespace trainc::cpu
