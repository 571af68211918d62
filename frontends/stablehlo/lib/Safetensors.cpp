//===- Safetensors.cpp - Initial parameter values from a safetensors file -===//
//
// The format: an 8-byte little-endian header size N, N bytes of JSON
// mapping each tensor name to {dtype, shape, data_offsets: [begin, end]}
// (offsets into the data after the header; an optional "__metadata__"
// entry), then the data. Every size and offset is checked against the file
// before a byte is read, so a corrupt file is an error, never an
// out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "Safetensors.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace mlir;

namespace trainc::stablehlo_import {
namespace {

/// The MLIR element type of a safetensors dtype; null if unsupported.
Type elementType(MLIRContext *ctx, StringRef dtype) {
  Builder b(ctx);
  if (dtype == "F64")
    return b.getF64Type();
  if (dtype == "F32")
    return b.getF32Type();
  if (dtype == "F16")
    return b.getF16Type();
  if (dtype == "BF16")
    return b.getBF16Type();
  if (dtype == "I64")
    return b.getI64Type();
  if (dtype == "I32")
    return b.getI32Type();
  return {};
}

} // namespace

FailureOr<std::vector<SafetensorsEntry>> readSafetensors(MLIRContext *ctx,
                                                         StringRef path) {
  Location loc = FileLineColLoc::get(ctx, path, 0, 0);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return emitError(loc) << path << ": cannot read the parameters file: "
                          << file.getError().message();
  StringRef bytes = (*file)->getBuffer();
  if (bytes.size() < 8)
    return emitError(loc) << path
                          << ": not a safetensors file (shorter than its "
                             "8-byte header size)";
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | static_cast<unsigned char>(bytes[i]);
  if (headerSize > bytes.size() - 8)
    return emitError(loc) << path << ": not a safetensors file (header size "
                          << headerSize << " exceeds the file's "
                          << bytes.size() << " bytes)";
  StringRef data = bytes.drop_front(8 + headerSize);
  llvm::Expected<llvm::json::Value> header =
      llvm::json::parse(bytes.substr(8, headerSize));
  if (!header)
    return emitError(loc) << path << ": the safetensors header is not JSON: "
                          << llvm::toString(header.takeError());
  const llvm::json::Object *tensors = header->getAsObject();
  if (!tensors)
    return emitError(loc) << path
                          << ": the safetensors header is not an object";
  std::vector<SafetensorsEntry> entries;
  for (const auto &[key, value] : *tensors) {
    if (key == "__metadata__")
      continue;
    auto bad = [&, name = key.str()](const Twine &why) {
      return emitError(loc) << path << ": tensor '" << name << "': " << why;
    };
    const llvm::json::Object *info = value.getAsObject();
    if (!info)
      return bad("not an object");
    std::optional<StringRef> dtype = info->getString("dtype");
    const llvm::json::Array *shape = info->getArray("shape");
    const llvm::json::Array *offsets = info->getArray("data_offsets");
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return bad("needs dtype, shape and data_offsets [begin, end]");
    Type element = elementType(ctx, *dtype);
    if (!element)
      return bad("dtype " + *dtype +
                 " is not supported (F64, F32, F16, BF16, I64, I32)");
    SmallVector<int64_t> dims;
    uint64_t count = 1;
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> size = d.getAsInteger();
      if (!size || *size < 0 || *size > (int64_t(1) << 40))
        return bad("has an invalid dimension");
      dims.push_back(*size);
      count *= static_cast<uint64_t>(*size);
      if (count > (uint64_t(1) << 40))
        return bad("is too large");
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger();
    std::optional<int64_t> end = (*offsets)[1].getAsInteger();
    uint64_t expected = count * element.getIntOrFloatBitWidth() / 8;
    if (!begin || !end || *begin < 0 || *end < *begin ||
        static_cast<uint64_t>(*end) > data.size())
      return bad("data_offsets lie outside the file's data");
    if (static_cast<uint64_t>(*end - *begin) != expected)
      return bad("holds " + Twine(*end - *begin) + " bytes, but its dtype " +
                 "and shape need " + Twine(expected));
    SafetensorsEntry entry;
    entry.name = key.str();
    entry.type = RankedTensorType::get(dims, element);
    entry.bytes.assign(data.begin() + *begin, data.begin() + *end);
    entries.push_back(std::move(entry));
  }
  return entries;
}

} // namespace trainc::stablehlo_import
