//===- SafeTensors.cpp - Writing .safetensors files -----------------------===//

#include "io/SafeTensors.h"

#include "io/AtomicFile.h"
#include "io/Json.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace trainc {
namespace {

const char *safetensorsDType(DType t) {
  switch (t) {
  case DType::F64:
    return "F64";
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::I1:
    return "BOOL";
  case DType::I16:
    return "I16";
  case DType::I8:
    return "I8";
  case DType::U64:
    return "U64";
  case DType::U32:
    return "U32";
  case DType::U16:
    return "U16";
  case DType::U8:
    return "U8";
  case DType::F8E4M3FN:
    return "F8_E4M3";
  case DType::F8E5M2:
    return "F8_E5M2";
  // No safetensors dtype: the bytes as stored (parameters, the tensors
  // written here, are never of these types).
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2FNUZ:
  case DType::U4:
  case DType::U2:
  case DType::F4E2M1FN:
  case DType::F8E8M0FNU:
    return "U8";
  case DType::I4:
  case DType::I2:
    return "I8";
  }
  return "U8";
}

} // namespace

Status writeSafetensors(const std::string &path,
                        const std::vector<NamedTensor> &tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const NamedTensor &t : tensors) {
    if (header.size() > 1)
      header += ",";
    header += jsonString(t.name) + ":{\"dtype\":\"" +
              safetensorsDType(t.dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.bytes) + "]}";
    offset += t.bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');

  return writeFileAtomically(path, [&](std::ostream &file) {
    char length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
    file.write(length, 8);
    file.write(header.data(), header.size());
    for (const NamedTensor &t : tensors)
      file.write(static_cast<const char *>(t.data), t.bytes);
  });
}

} // namespace trainc
