//===- Verify.cpp - A device's training steps checked against the CPU's ---===//

#include "train/Verify.h"

#include "base/Float16.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace trainc {
namespace {

/// Element i of `data` as a double (floats and the common integers).
double elementAt(const void *data, int64_t i, DType dtype) {
  const char *p = static_cast<const char *>(data);
  switch (dtype) {
  case DType::F64: {
    double v;
    std::memcpy(&v, p + i * 8, 8);
    return v;
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  case DType::BF16:
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p + i * 2, 2);
    return dtype == DType::BF16 ? bf16ToFloat(v) : f16ToFloat(v);
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, p + i * 8, 8);
    return double(v);
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return double(v);
  }
  default:
    return double(static_cast<const uint8_t *>(data)[i]);
  }
}

} // namespace

double relativeL2Error(const void *a, const void *b, int64_t count,
                       DType dtype) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < count; ++i) {
    double x = elementAt(a, i, dtype), y = elementAt(b, i, dtype);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // Non-finite values must agree exactly (NaN with NaN).
      bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      if (!same)
        return kInf;
      continue;
    }
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  if (diff == 0)
    return 0;
  if (norm == 0)
    return kInf;
  return std::sqrt(diff / norm);
}

VerifyLimits verifyLimits(const Executable &exe) {
  for (const TensorInfo &t : exe.tensors())
    if (t.dtype == DType::BF16 || t.dtype == DType::F16)
      return {2e-2, 5e-2, 5e-2};
  return {1e-4, 1e-4, 2e-3};
}

} // namespace trainc
