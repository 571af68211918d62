//===- DType.h - Element types of runtime tensors ---------------*- C++ -*-===//
//
// The element types a trainc executable may use, with their storage. f16 and
// bf16 are stored as their 16-bit patterns and converted with
// round-to-nearest-even exactly as hardware does (see Float16.h); i1 is
// stored as one byte per element, 0 or 1.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_BASE_DTYPE_H
#define TRAINC_RUNTIME_BASE_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

/// Numbering is part of the executable format (schema DType): never reorder.
enum class DType : uint8_t {
  kF64 = 0,
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kI64 = 4,
  kI32 = 5,
  kI1 = 6,
};
constexpr int kNumDTypes = 7;

/// Bytes per element.
inline size_t dtypeSize(DType t) {
  switch (t) {
  case DType::kF64:
  case DType::kI64:
    return 8;
  case DType::kF32:
  case DType::kI32:
    return 4;
  case DType::kF16:
  case DType::kBF16:
    return 2;
  case DType::kI1:
    return 1;
  }
  return 0;
}

inline bool isFloat(DType t) {
  return t == DType::kF64 || t == DType::kF32 || t == DType::kF16 ||
         t == DType::kBF16;
}

/// "f32", "bf16", ... as in MLIR and numpy-ish names.
const char *dtypeName(DType t);
/// "[2, 32]": a shape as trainc's messages print it.
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace trainc

#endif // TRAINC_RUNTIME_BASE_DTYPE_H
