//===- DType.cpp - Element types of runtime tensors -----------------------===//

#include "base/DType.h"

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
  }
  return "unknown";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace trainc
