//===- TensorData.cpp - ONNX TensorProto contents as MLIR elements --------===//
//
// A TensorProto holds its values in one of three places: `raw_data`
// (little-endian bytes), a typed repeated field (float_data, int32_data,
// ...), or an external file named in `external_data` (relative to the
// model's directory). All three become bytes in the layout of the MLIR
// element type; every size is checked against the tensor's shape first, so
// a corrupt file yields an error, never an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstdint>
#include <cstring>
#include <iterator>

using namespace mlir;

namespace trainc::onnx_import {

Type elementTypeFor(MLIRContext *ctx, int32_t onnxType) {
  Builder b(ctx);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  // Narrow and unsigned integers: signless for the signed ones, MLIR's
  // unsigned integer types for the rest (their division, comparison and
  // widening differ).
  case onnx::TensorProto::INT16:
    return b.getIntegerType(16);
  case onnx::TensorProto::INT8:
    return b.getIntegerType(8);
  case onnx::TensorProto::UINT64:
    return b.getIntegerType(64, /*isSigned=*/false);
  case onnx::TensorProto::UINT32:
    return b.getIntegerType(32, /*isSigned=*/false);
  case onnx::TensorProto::UINT16:
    return b.getIntegerType(16, /*isSigned=*/false);
  case onnx::TensorProto::UINT8:
    return b.getIntegerType(8, /*isSigned=*/false);
  // Storage-only types, newer than libonnx 1.12's enum (onnx 1.23 codes).
  case kOnnxFloat8E4M3FN:
    return b.getFloat8E4M3FNType();
  case kOnnxFloat8E4M3FNUZ:
    return b.getFloat8E4M3FNUZType();
  case kOnnxFloat8E5M2:
    return b.getFloat8E5M2Type();
  case kOnnxFloat8E5M2FNUZ:
    return b.getFloat8E5M2FNUZType();
  case kOnnxUint4:
    return b.getIntegerType(4, /*isSigned=*/false);
  case kOnnxInt4:
    return b.getIntegerType(4);
  case kOnnxUint2:
    return b.getIntegerType(2, /*isSigned=*/false);
  case kOnnxInt2:
    return b.getIntegerType(2);
  case kOnnxFloat4E2M1:
    return trainc::graph::F4E2M1FNType::get(ctx);
  case kOnnxFloat8E8M0:
    return trainc::graph::F8E8M0FNUType::get(ctx);
  default:
    return nullptr;
  }
}

std::string onnxTypeName(int32_t onnxType) {
  if (onnx::TensorProto::DataType_IsValid(onnxType))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(onnxType));
  // Types newer than libonnx 1.12's schema (onnx 1.23 numbering).
  static const char *const kNewer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",        "INT4",           "FLOAT4E2M1", "FLOAT8E8M0",
      "UINT2",        "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  if (onnxType >= 17 && onnxType < 17 + int32_t(std::size(kNewer)))
    return kNewer[onnxType - 17];
  return "data type " + std::to_string(onnxType);
}

/// Reads `length` bytes at `offset` of the external file of `tensor`.
static FailureOr<std::vector<char>>
readExternal(const onnx::TensorProto &tensor, StringRef baseDir, StringRef what,
             size_t expected,
             llvm::function_ref<InFlightDiagnostic()> emitError) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : tensor.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset" || kv.key() == "length") {
      char *end = nullptr;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end != '\0' || v < 0)
        return emitError() << "tensor '" << what << "': external data "
                           << kv.key() << " '" << kv.value()
                           << "' is not a non-negative integer";
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return emitError() << "tensor '" << what
                       << "': external data has no 'location'";
  // As the ONNX checker requires: a relative path inside the model's
  // directory, so a model cannot make trainc read arbitrary files.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::StringRef(location).contains(".."))
    return emitError() << "tensor '" << what << "': external data location '"
                       << location
                       << "' must be a relative path inside the model's "
                          "directory";
  llvm::SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return emitError() << "tensor '" << what << "': cannot read external data "
                       << path << ": " << file.getError().message();
  size_t size = (*file)->getBufferSize();
  if (length < 0)
    length = static_cast<int64_t>(size) - offset;
  if (offset > static_cast<int64_t>(size) ||
      length > static_cast<int64_t>(size) - offset)
    return emitError() << "tensor '" << what << "': external data " << path
                       << " has " << size << " bytes, fewer than offset "
                       << offset << " + length " << length;
  if (static_cast<size_t>(length) != expected)
    return emitError() << "tensor '" << what << "': external data holds "
                       << length << " bytes but the tensor needs " << expected;
  const char *start = (*file)->getBufferStart() + offset;
  return std::vector<char>(start, start + length);
}

/// Copies a repeated field of `T` into bytes of `Out` (same count).
template <typename Out, typename Field>
static std::vector<char> packField(const Field &field) {
  std::vector<char> bytes(field.size() * sizeof(Out));
  for (int i = 0; i < field.size(); ++i) {
    Out v = static_cast<Out>(field.Get(i));
    std::memcpy(bytes.data() + i * sizeof(Out), &v, sizeof(Out));
  }
  return bytes;
}

FailureOr<std::vector<char>>
tensorBytes(const onnx::TensorProto &tensor, Type elementType,
            int64_t numElements, StringRef baseDir, StringRef what,
            llvm::function_ref<InFlightDiagnostic()> emitError) {
  // Booleans and 2-/4-bit integers are held one per byte; others at their
  // natural width. FLOAT4E2M1 and FLOAT8E8M0 have no MLIR attribute, so no
  // constant can hold them.
  if (!elementType.isIntOrFloat())
    return emitError() << "tensor '" << what << "' has element type "
                       << onnxTypeName(tensor.data_type())
                       << ", which trainc supports for graph inputs, outputs "
                          "and Cast only, not as a constant";
  unsigned bits = elementType.getIntOrFloatBitWidth();
  size_t width = bits < 8 ? 1 : bits / 8;
  size_t expected = static_cast<size_t>(numElements) * width;
  if (tensor.has_data_location() &&
      tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (bits == 2 || bits == 4)
      return emitError() << "tensor '" << what
                         << "': external data of 4- and 2-bit integers is "
                            "not supported";
    return readExternal(tensor, baseDir, what, expected, emitError);
  }
  if ((bits == 2 || bits == 4) && tensor.has_raw_data()) {
    // ONNX packs them, the first element in the lowest bits of a byte.
    const std::string &raw = tensor.raw_data();
    int64_t perByte = 8 / bits;
    if (static_cast<int64_t>(raw.size()) !=
        (numElements + perByte - 1) / perByte)
      return emitError() << "tensor '" << what << "' has " << raw.size()
                         << " bytes of packed " << bits
                         << "-bit data but its shape needs "
                         << (numElements + perByte - 1) / perByte;
    std::vector<char> bytes(numElements);
    bool isSigned = !elementType.isUnsignedInteger();
    for (int64_t k = 0; k < numElements; ++k) {
      int v = (uint8_t(raw[k / perByte]) >> (bits * (k % perByte))) &
              ((1 << bits) - 1);
      if (isSigned && (v >> (bits - 1)))
        v -= 1 << bits;
      bytes[k] = char(v);
    }
    return bytes;
  }
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != expected)
      return emitError() << "tensor '" << what << "' has " << raw.size()
                         << " bytes of raw data but its shape needs "
                         << expected;
    return std::vector<char>(raw.begin(), raw.end());
  }
  // Typed fields, as onnx.proto assigns them to data types.
  std::vector<char> bytes;
  int64_t count = 0;
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    bytes = packField<float>(tensor.float_data());
    count = tensor.float_data_size();
    break;
  case onnx::TensorProto::DOUBLE:
    bytes = packField<double>(tensor.double_data());
    count = tensor.double_data_size();
    break;
  case onnx::TensorProto::INT64:
    bytes = packField<int64_t>(tensor.int64_data());
    count = tensor.int64_data_size();
    break;
  case onnx::TensorProto::INT32:
    bytes = packField<int32_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  case onnx::TensorProto::BOOL:
    bytes = packField<uint8_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    for (char &c : bytes)
      c = c != 0;
    break;
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    // The 16-bit patterns, one per int32.
    bytes = packField<uint16_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  // onnx.proto stores the narrow integers in int32_data and the 32- and
  // 64-bit unsigned ones in uint64_data.
  case onnx::TensorProto::INT16:
    bytes = packField<int16_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  case onnx::TensorProto::INT8:
    bytes = packField<int8_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  case onnx::TensorProto::UINT16:
    bytes = packField<uint16_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  case onnx::TensorProto::UINT8:
    bytes = packField<uint8_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  case onnx::TensorProto::UINT32:
    bytes = packField<uint32_t>(tensor.uint64_data());
    count = tensor.uint64_data_size();
    break;
  case onnx::TensorProto::UINT64:
    bytes = packField<uint64_t>(tensor.uint64_data());
    count = tensor.uint64_data_size();
    break;
  case kOnnxFloat8E4M3FN:
  case kOnnxFloat8E4M3FNUZ:
  case kOnnxFloat8E5M2:
  case kOnnxFloat8E5M2FNUZ:
    // The 8-bit patterns, one per int32.
    bytes = packField<uint8_t>(tensor.int32_data());
    count = tensor.int32_data_size();
    break;
  default:
    return emitError() << "tensor '" << what << "' has unsupported type "
                       << onnxTypeName(tensor.data_type())
                       << (bits < 8 ? " in typed fields (use raw_data)" : "");
  }
  if (count != numElements)
    return emitError() << "tensor '" << what << "' has " << count
                       << " values but its shape needs " << numElements;
  return bytes;
}

FailureOr<AsmResourceBlob>
tensorBlob(onnx::TensorProto &tensor, Type elementType, int64_t numElements,
           StringRef baseDir, StringRef what,
           llvm::function_ref<InFlightDiagnostic()> emitError) {
  constexpr size_t kAlign = alignof(double);
  bool external = tensor.has_data_location() &&
                  tensor.data_location() == onnx::TensorProto::EXTERNAL;
  if (elementType.isIntOrFloat() && !external && tensor.has_raw_data()) {
    unsigned bits = elementType.getIntOrFloatBitWidth();
    size_t expected = static_cast<size_t>(numElements) * (bits / 8);
    const std::string &raw = tensor.raw_data();
    // Whole bytes per element, the right size, and a heap buffer aligned
    // for any element (short strings live inside the string object).
    if (bits >= 8 && bits % 8 == 0 && raw.size() == expected &&
        raw.size() >= 64 &&
        reinterpret_cast<uintptr_t>(raw.data()) % kAlign == 0) {
      std::string *taken = tensor.release_raw_data();
      return AsmResourceBlob(
          ArrayRef<char>(taken->data(), taken->size()), kAlign,
          [taken](void *, size_t, size_t) { delete taken; },
          /*dataIsMutable=*/true);
    }
  }
  auto bytes =
      tensorBytes(tensor, elementType, numElements, baseDir, what, emitError);
  if (failed(bytes))
    return failure();
  auto *owned = new std::vector<char>(std::move(*bytes));
  return AsmResourceBlob(
      ArrayRef<char>(owned->data(), owned->size()), kAlign,
      [owned](void *, size_t, size_t) { delete owned; },
      /*dataIsMutable=*/true);
}

FailureOr<DenseElementsAttr>
tensorToElements(const onnx::TensorProto &tensor, StringRef baseDir,
                 MLIRContext *ctx, StringRef what,
                 llvm::function_ref<InFlightDiagnostic()> emitError) {
  Type elementType = elementTypeFor(ctx, tensor.data_type());
  if (!elementType)
    return emitError() << "tensor '" << what << "' has element type "
                       << onnxTypeName(tensor.data_type())
                       << ", which trainc does not support (supported: "
                       << kSupportedOnnxTypes << ")";
  llvm::SmallVector<int64_t> shape;
  int64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d > 0 && numElements > (int64_t(1) << 40) / d))
      return emitError() << "tensor '" << what << "' has invalid dimension "
                         << d;
    shape.push_back(d);
    numElements *= d;
  }
  auto type = RankedTensorType::get(shape, elementType);
  auto bytes =
      tensorBytes(tensor, elementType, numElements, baseDir, what, emitError);
  if (failed(bytes))
    return failure();
  if (elementType.isInteger(1)) {
    llvm::SmallVector<bool> values;
    for (char c : *bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, llvm::ArrayRef<char>(bytes->data(), bytes->size()));
}

} // namespace trainc::onnx_import
