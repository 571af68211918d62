//===- DType.cpp - Element types of runtime tensors -----------------------===//

#include "base/DType.h"

#include <cinttypes>
#include <cstdio>

namespace trainc {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::F64:
    return "f64";
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I1:
    return "i1";
  case DType::I16:
    return "i16";
  case DType::I8:
    return "i8";
  case DType::U64:
    return "ui64";
  case DType::U32:
    return "ui32";
  case DType::U16:
    return "ui16";
  case DType::U8:
    return "ui8";
  case DType::F8E4M3FN:
    return "f8E4M3FN";
  case DType::F8E4M3FNUZ:
    return "f8E4M3FNUZ";
  case DType::F8E5M2:
    return "f8E5M2";
  case DType::F8E5M2FNUZ:
    return "f8E5M2FNUZ";
  case DType::I4:
    return "i4";
  case DType::U4:
    return "ui4";
  case DType::I2:
    return "i2";
  case DType::U2:
    return "ui2";
  case DType::F4E2M1FN:
    return "f4E2M1FN";
  case DType::F8E8M0FNU:
    return "f8E8M0FNU";
  }
  return "unknown";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

} // namespace trainc
