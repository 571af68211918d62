//===- KernelUtil.h - Shared helpers of the CPU kernels --------*- C++ -*-===//
//
// Helpers every kernel family shares: element access in any dtype (16-bit
// floats converted with round-to-nearest-even, see base/Float16.h), the
// compute type of a dtype, row-major strides, and uniform error messages.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_KERNELUTIL_H
#define TRAINC_RUNTIME_CPU_KERNELUTIL_H

#include "base/Float16.h"
#include "base/MiniFloat.h"
#include "cpu/Kernels.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc::cpu {

/// The format of an 8-bit float dtype.
inline MiniFloatFormat miniFloatFormat(DType t) {
  switch (t) {
  case DType::F8E4M3FNUZ:
    return kF8E4M3FNUZ;
  case DType::F8E5M2:
    return kF8E5M2;
  case DType::F8E5M2FNUZ:
    return kF8E5M2FNUZ;
  default:
    return kF8E4M3FN;
  }
}

/// Element i of `t` converted to T (float, double or int64_t). Floats
/// convert to integers by truncation; callers that need graph.convert's
/// checked semantics check first.
template <typename T> inline T loadAs(const TensorRef &t, int64_t i) {
  switch (t.dtype) {
  case DType::F64:
    return static_cast<T>(t.as<double>()[i]);
  case DType::F32:
    return static_cast<T>(t.as<float>()[i]);
  case DType::F16:
    return static_cast<T>(f16ToFloat(t.as<uint16_t>()[i]));
  case DType::BF16:
    return static_cast<T>(bf16ToFloat(t.as<uint16_t>()[i]));
  case DType::I64:
    return static_cast<T>(t.as<int64_t>()[i]);
  case DType::I32:
    return static_cast<T>(t.as<int32_t>()[i]);
  case DType::I1:
    return static_cast<T>(t.as<uint8_t>()[i] != 0);
  case DType::I16:
    return static_cast<T>(t.as<int16_t>()[i]);
  case DType::I8:
    return static_cast<T>(t.as<int8_t>()[i]);
  case DType::U64:
    return static_cast<T>(t.as<uint64_t>()[i]);
  case DType::U32:
    return static_cast<T>(t.as<uint32_t>()[i]);
  case DType::U16:
    return static_cast<T>(t.as<uint16_t>()[i]);
  case DType::U8:
  case DType::U4:
  case DType::U2:
    return static_cast<T>(t.as<uint8_t>()[i]);
  case DType::I4:
  case DType::I2:
    return static_cast<T>(t.as<int8_t>()[i]);
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
    return static_cast<T>(
        decodeMiniFloat(miniFloatFormat(t.dtype), t.as<uint8_t>()[i]));
  case DType::F4E2M1FN:
    return static_cast<T>(decodeF4E2M1(t.as<uint8_t>()[i]));
  case DType::F8E8M0FNU:
    return static_cast<T>(decodeE8M0(t.as<uint8_t>()[i]));
  }
  return T();
}

/// Stores `v` as element i of `t`: 16-bit floats round to nearest even
/// (a double rounds to float first, then to 16 bits: exact for values
/// computed in float, which is how 16-bit kernels compute); i1 stores v != 0.
template <typename T> inline void storeAs(const TensorRef &t, int64_t i, T v) {
  switch (t.dtype) {
  case DType::F64:
    t.as<double>()[i] = static_cast<double>(v);
    return;
  case DType::F32:
    t.as<float>()[i] = static_cast<float>(v);
    return;
  case DType::F16:
    t.as<uint16_t>()[i] = floatToF16(static_cast<float>(v));
    return;
  case DType::BF16:
    t.as<uint16_t>()[i] = floatToBf16(static_cast<float>(v));
    return;
  case DType::I64:
    t.as<int64_t>()[i] = static_cast<int64_t>(v);
    return;
  case DType::I32:
    t.as<int32_t>()[i] = static_cast<int32_t>(v);
    return;
  case DType::I1:
    t.as<uint8_t>()[i] = v != T(0);
    return;
  case DType::I16:
    t.as<int16_t>()[i] = static_cast<int16_t>(v);
    return;
  case DType::I8:
    t.as<int8_t>()[i] = static_cast<int8_t>(v);
    return;
  case DType::U64:
    t.as<uint64_t>()[i] = static_cast<uint64_t>(v);
    return;
  case DType::U32:
    t.as<uint32_t>()[i] = static_cast<uint32_t>(v);
    return;
  case DType::U16:
    t.as<uint16_t>()[i] = static_cast<uint16_t>(v);
    return;
  case DType::U8:
    t.as<uint8_t>()[i] = static_cast<uint8_t>(v);
    return;
  // Sub-byte integers wrap (callers pass integral values); 8-bit floats
  // round to nearest even (MiniFloat.h).
  case DType::I4:
    t.as<int8_t>()[i] = int8_t(wrapToBits(static_cast<int64_t>(v), 4, true));
    return;
  case DType::U4:
    t.as<uint8_t>()[i] = uint8_t(wrapToBits(static_cast<int64_t>(v), 4, false));
    return;
  case DType::I2:
    t.as<int8_t>()[i] = int8_t(wrapToBits(static_cast<int64_t>(v), 2, true));
    return;
  case DType::U2:
    t.as<uint8_t>()[i] = uint8_t(wrapToBits(static_cast<int64_t>(v), 2, false));
    return;
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
    t.as<uint8_t>()[i] =
        encodeMiniFloat(miniFloatFormat(t.dtype), static_cast<double>(v));
    return;
  case DType::F4E2M1FN:
    t.as<uint8_t>()[i] = encodeF4E2M1(static_cast<double>(v));
    return;
  case DType::F8E8M0FNU:
    t.as<uint8_t>()[i] = encodeE8M0(static_cast<double>(v));
    return;
  }
}

/// Calls fn with a value of the compute type of float dtype `t`: double
/// for f64, float for f32, f16 and bf16.
template <typename Fn> inline auto withFloatCompute(DType t, Fn &&fn) {
  if (t == DType::F64)
    return fn(double());
  return fn(float());
}

/// Row-major strides of `t`, in elements.
inline std::vector<int64_t> stridesOf(const TensorRef &t) {
  std::vector<int64_t> strides(t.rank, 1);
  for (int d = t.rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * t.dims[d + 1];
  return strides;
}

/// "<op>: <message>" as an invalid-argument Status.
inline Status kernelError(const KernelCall &call, const std::string &message) {
  return invalidArgument(std::string(opcodeName(call.op)) + ": " + message);
}

/// "<op>: dtype <name> is not supported".
inline Status unsupportedDType(const KernelCall &call, DType t) {
  return Status(StatusCode::kUnimplemented, std::string(opcodeName(call.op)) +
                                                ": dtype " + dtypeName(t) +
                                                " is not supported");
}

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_KERNELUTIL_H
