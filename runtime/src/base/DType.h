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

#include "trainc/schema/ExecutableFormat.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

// DType is the schema's enum (trainc/schema/ExecutableFormat.h).

/// Bytes per element.
inline size_t dtypeSize(DType t) {
  switch (t) {
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I1:
  case DType::I8:
  case DType::U8:
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
    return 1;
  }
  return 0;
}

/// The floats that only convert: 8-bit, FLOAT4E2M1 and FLOAT8E8M0.
inline bool isStorageFloat(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ || t == DType::F8E5M2 ||
         t == DType::F8E5M2FNUZ || t == DType::F4E2M1FN ||
         t == DType::F8E8M0FNU;
}

/// The storage-only types: 8-bit floats and 4-/2-bit integers, which only
/// graph.convert (and data movement) reads and writes.
inline bool isStorageOnly(DType t) {
  return t == DType::F8E4M3FN || t == DType::F8E4M3FNUZ || t == DType::F8E5M2 ||
         t == DType::F8E5M2FNUZ || t == DType::I4 || t == DType::U4 ||
         t == DType::I2 || t == DType::U2 || t == DType::F4E2M1FN ||
         t == DType::F8E8M0FNU;
}

inline bool isFloat(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 ||
         t == DType::BF16;
}

/// "f32", "bf16", ... as in MLIR and numpy-ish names.
const char *dtypeName(DType t);
/// "[2, 32]": a shape as trainc's messages print it.
std::string shapeString(const std::vector<int64_t> &shape);
/// "00ab...": a 64-bit hash (XXH3) as trainc's messages and manifests print
/// it, 16 hex digits.
std::string hex64(uint64_t v);

} // namespace trainc

#endif // TRAINC_RUNTIME_BASE_DTYPE_H
