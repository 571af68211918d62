//===- SafeTensors.cpp - Reading and writing .safetensors files -----------===//

#include "io/SafeTensors.h"

#include "base/Utf8.h"

#include "io/AtomicFile.h"
#include "io/Json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unordered_set>

namespace trainc {

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

Status writeSafetensors(const std::string &path,
                        const std::vector<NamedTensor> &tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const NamedTensor &t : tensors) {
    // The header is JSON, whose readers refuse other bytes (executables'
    // names are checked when they load: base/Utf8.h).
    if (!isUtf8(t.name))
      return Status(StatusCode::kInvalidArgument,
                    path + ": tensor name '" + t.name +
                        "' is not valid UTF-8; a safetensors header is JSON");
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

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

using Json = nlohmann::ordered_json;

/// The trainc type a safetensors dtype name reads as: the first type
/// writeSafetensors gives that name (so "U8" is u8, not one of the types
/// written as their bytes).
bool dtypeFromSafetensors(const std::string &name, DType &out) {
  for (int d = 0; d < kNumDTypes; ++d)
    if (name == safetensorsDType(DType(d))) {
      out = DType(d);
      return true;
    }
  return false;
}

/// "F64, F32, ...": the dtype names the reader knows.
std::string knownDTypes() {
  std::string names;
  for (int d = 0; d < kNumDTypes; ++d) {
    DType t;
    const char *name = safetensorsDType(DType(d));
    if (dtypeFromSafetensors(name, t) && t == DType(d))
      names += (names.empty() ? "" : ", ") + std::string(name);
  }
  return names;
}

/// `v` as JSON text, cut short: messages quote what a file holds, and a
/// hostile file may hold a lot.
std::string excerpt(const Json &v) {
  std::string text = v.dump();
  return text.size() > 64 ? text.substr(0, 60) + " ..." : text;
}

/// Parses and checks the header of `path`, a file of `fileSize` bytes whose
/// header length (bytes 0-7, already checked to fit) is `headerSize` and
/// whose header is [headerBegin, headerBegin + headerSize).
Status parseHeader(const std::string &path, const char *headerBegin,
                   uint64_t headerSize, uint64_t fileSize,
                   SafetensorsIndex &out) {
  auto damaged = [&](const std::string &what) {
    return Status(StatusCode::kDataLoss, path + ": " + what);
  };
  uint64_t dataStart = 8 + headerSize, dataSize = fileSize - dataStart;
  std::string headerBytes =
      "the header (bytes 8-" + std::to_string(dataStart) + ")";

  try {
    // The parser keeps the last of two equal keys without a word; a name
    // given twice is ambiguous, so the callback looks for one.
    std::unordered_set<std::string> seen;
    std::string duplicate;
    auto onEvent = [&](int depth, Json::parse_event_t event, Json &parsed) {
      if (event == Json::parse_event_t::key && depth == 1 &&
          duplicate.empty() && parsed.is_string() &&
          !seen.insert(parsed.get_ref<const std::string &>()).second)
        duplicate = parsed.get<std::string>();
      return true;
    };
    Json header = Json::parse(headerBegin, headerBegin + headerSize, onEvent,
                              /*allow_exceptions=*/false);
    if (header.is_discarded() || !header.is_object())
      return damaged(headerBytes + " is not a JSON object");
    if (!duplicate.empty())
      return damaged(headerBytes + " names tensor '" + duplicate + "' twice");

    for (auto entry = header.begin(); entry != header.end(); ++entry) {
      const std::string &name = entry.key();
      const Json &value = entry.value();
      if (name == "__metadata__") {
        if (!value.is_object())
          return damaged(headerBytes + ": \"__metadata__\" is " +
                         excerpt(value) + ", not an object");
        continue;
      }
      auto bad = [&](const std::string &what) {
        return damaged("tensor '" + name + "' " + what);
      };
      if (!value.is_object())
        return bad("is described by " + excerpt(value) + ", not an object");
      SafetensorsFile::Tensor t;
      t.name = name;

      auto dtype = value.find("dtype");
      if (dtype == value.end() || !dtype->is_string())
        return bad("has no dtype");
      t.fileDType = dtype->get<std::string>();
      if (!dtypeFromSafetensors(t.fileDType, t.dtype))
        return invalidArgument(
            path + ": tensor '" + name + "' has dtype " + excerpt(*dtype) +
            ", which trainc does not read (it reads " + knownDTypes() + ")");

      auto shape = value.find("shape");
      if (shape == value.end() || !shape->is_array())
        return bad("has no shape");
      // The element count, or `overflow` when it exceeds 2^64 (unless a
      // dimension is 0).
      uint64_t elements = 1;
      bool overflow = false, empty = false;
      for (const Json &d : *shape) {
        if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(INT64_MAX))
          return bad("has shape " + excerpt(*shape) +
                     ": dimensions are integers >= 0");
        uint64_t n = d.get<uint64_t>();
        t.shape.push_back(int64_t(n));
        empty |= n == 0;
        overflow |= __builtin_mul_overflow(elements, n, &elements);
      }
      uint64_t expected = 0;
      overflow |= __builtin_mul_overflow(elements, uint64_t(dtypeSize(t.dtype)),
                                         &expected);
      if (empty) {
        overflow = false;
        expected = 0;
      }

      auto offsets = value.find("data_offsets");
      if (offsets == value.end() || !offsets->is_array() ||
          offsets->size() != 2 || !offsets->at(0).is_number_unsigned() ||
          !offsets->at(1).is_number_unsigned())
        return bad("has no data_offsets [begin, end]");
      uint64_t begin = offsets->at(0).get<uint64_t>(),
               end = offsets->at(1).get<uint64_t>();
      std::string range =
          "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
      if (begin > end || end > dataSize)
        return bad("has data_offsets " + range + ", outside the " +
                   std::to_string(dataSize) + " data bytes (file bytes " +
                   std::to_string(dataStart) + "-" + std::to_string(fileSize) +
                   "; a truncated file?)");
      if (overflow || end - begin != expected)
        return bad(
            "has " + std::to_string(end - begin) + " bytes (data_offsets " +
            range + ") but " + t.fileDType + " " +
            (t.shape.size() <= 16 ? shapeString(t.shape) : excerpt(*shape)) +
            " is " + (overflow ? "more than 2^64" : std::to_string(expected)));
      t.offset = size_t(dataStart + begin);
      t.bytes = size_t(end - begin);
      out.tensors.push_back(std::move(t));
    }
    // The format's rule (which the safetensors library enforces): the
    // tensors' byte ranges, in order, tile the data section exactly. Two
    // that overlap would read each other's bytes as their own.
    std::vector<const SafetensorsFile::Tensor *> byOffset;
    for (const SafetensorsFile::Tensor &t : out.tensors)
      byOffset.push_back(&t);
    std::stable_sort(byOffset.begin(), byOffset.end(),
                     [](const auto *a, const auto *b) {
                       return std::make_pair(a->offset, a->bytes) <
                              std::make_pair(b->offset, b->bytes);
                     });
    uint64_t expected = dataStart;
    const SafetensorsFile::Tensor *previous = nullptr;
    for (const SafetensorsFile::Tensor *t : byOffset) {
      auto range = [&](const SafetensorsFile::Tensor *x) {
        return "'" + x->name + "' (data_offsets [" +
               std::to_string(x->offset - dataStart) + ", " +
               std::to_string(x->offset - dataStart + x->bytes) + "])";
      };
      if (t->offset < expected)
        return damaged("tensor " + range(t) + " overlaps tensor " +
                       range(previous));
      if (t->offset > expected)
        return damaged("the data bytes [" +
                       std::to_string(expected - dataStart) + ", " +
                       std::to_string(t->offset - dataStart) +
                       ") belong to no tensor (before " + range(t) + ")");
      expected = t->offset + t->bytes;
      previous = t;
    }
    if (expected != fileSize)
      return damaged("the data bytes [" + std::to_string(expected - dataStart) +
                     ", " + std::to_string(dataSize) +
                     ") at the end belong to no tensor");
  } catch (const Json::exception &e) {
    return damaged(headerBytes + " is malformed: " + e.what());
  }
  return okStatus();
}

/// The header length of a file of `fileSize` bytes that starts with
/// `first8`, checked to fit in the file.
Status headerLength(const std::string &path, const char *first8,
                    uint64_t fileSize, uint64_t &out) {
  if (fileSize < 8)
    return Status(StatusCode::kDataLoss,
                  path + ": truncated: " + std::to_string(fileSize) +
                      " bytes, not even the 8-byte header length");
  out = 0;
  for (int i = 0; i < 8; ++i)
    out |= uint64_t(uint8_t(first8[i])) << (8 * i);
  if (out > fileSize - 8)
    return Status(StatusCode::kDataLoss,
                  path + ": the header length (bytes 0-7) is " +
                      std::to_string(out) + " but only " +
                      std::to_string(fileSize - 8) +
                      " bytes follow (a truncated file, or not safetensors)");
  return okStatus();
}

} // namespace

Status readSafetensors(const std::string &path, SafetensorsFile &out) {
  out = SafetensorsFile();
  out.path = path;
  TRAINC_RETURN_IF_ERROR(
      readRegularFile(path, "the safetensors file", out.contents));
  const std::vector<char> &file = out.contents;
  uint64_t headerSize = 0;
  TRAINC_RETURN_IF_ERROR(
      headerLength(path, file.data(), file.size(), headerSize));
  return parseHeader(path, file.data() + 8, headerSize, file.size(), out);
}

Status readSafetensorsIndex(const FileReader &reader, SafetensorsIndex &out) {
  out = SafetensorsIndex();
  out.path = reader.path();
  char first8[8] = {};
  TRAINC_RETURN_IF_ERROR(
      reader.read(0, size_t(std::min<uint64_t>(reader.size(), 8)), first8));
  uint64_t headerSize = 0;
  TRAINC_RETURN_IF_ERROR(
      headerLength(out.path, first8, reader.size(), headerSize));
  if (headerSize > kMaxHeaderBytes)
    return Status(StatusCode::kDataLoss,
                  out.path + ": the header length (bytes 0-7) is " +
                      std::to_string(headerSize) + ", over the " +
                      std::to_string(kMaxHeaderBytes) +
                      " bytes a safetensors header may have");
  std::string header(size_t(headerSize), '\0');
  TRAINC_RETURN_IF_ERROR(reader.read(8, header.size(), header.data()));
  return parseHeader(out.path, header.data(), headerSize, reader.size(), out);
}

} // namespace trainc
