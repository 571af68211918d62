//===- OnnxExport.cpp - Writing trained weights back into ONNX ------------===//
//
// A protobuf wire-format reader and writer just large enough for ONNX's
// initializers. A message is a sequence of fields, each a varint tag
// (field number << 3 | wire type) followed by a varint (type 0), 8 bytes
// (type 1), a varint length and that many bytes (type 2), or 4 bytes
// (type 5). Groups (types 3 and 4) are deprecated and never used by ONNX,
// so they are errors.
//
// The output is built bottom-up in memory because replacing a tensor changes
// its length and so the length prefixes of the GraphProto and ModelProto
// around it. A message in which nothing changed is copied as it was, so an
// export without weights reproduces the source byte for byte.
//
// Every read is bounds-checked: a truncated or corrupt file gives a Status
// naming the file and byte offset, never a crash (the unit test fuzzes it).
//
//===----------------------------------------------------------------------===//

#include "io/OnnxExport.h"

#include "io/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>
#include <unordered_map>

namespace trainc {
namespace {

namespace fs = std::filesystem;

//===----------------------------------------------------------------------===//
// The wire format
//===----------------------------------------------------------------------===//

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Field numbers, from onnx/onnx.proto.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kTensorDims = 1;
constexpr uint32_t kTensorDataType = 2;
constexpr uint32_t kTensorSegment = 3;
constexpr uint32_t kTensorFloatData = 4;
constexpr uint32_t kTensorInt32Data = 5;
constexpr uint32_t kTensorStringData = 6;
constexpr uint32_t kTensorInt64Data = 7;
constexpr uint32_t kTensorName = 8;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kTensorDoubleData = 10;
constexpr uint32_t kTensorUint64Data = 11;
constexpr uint32_t kTensorExternalData = 13;
constexpr uint32_t kTensorDataLocation = 14;
constexpr uint32_t kEntryKey = 1;   // StringStringEntryProto.key
constexpr uint32_t kEntryValue = 2; // StringStringEntryProto.value
constexpr uint64_t kDataLocationExternal = 1;

/// Protobuf parsers refuse messages of 2 GiB or more.
constexpr uint64_t kMaxMessageBytes = std::numeric_limits<int32_t>::max();

Status corrupt(const std::string &message) {
  return Status(StatusCode::kDataLoss, message);
}

/// The file being read: its path and first byte, so that errors can give
/// the byte offset of any view into it.
struct SourceFile {
  std::string path;
  std::string bytes;

  size_t offsetOf(const char *p) const { return size_t(p - bytes.data()); }
  Status error(const char *at, const std::string &why) const {
    return corrupt(path + ": byte " + std::to_string(offsetOf(at)) + ": " +
                   why);
  }
};

/// Reads a varint at `p` (advanced past it); false if it runs past `end` or
/// over the 10 bytes a 64-bit varint may take.
bool readVarint(const char *&p, const char *end, uint64_t &value) {
  value = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t byte = uint8_t(*p++);
    value |= uint64_t(byte & 0x7f) << shift;
    if (!(byte & 0x80))
      return true;
  }
  return false;
}

/// One field of a message.
struct Field {
  uint32_t number = 0;
  uint32_t wireType = 0;
  uint64_t varint = 0;      ///< The value of a kVarint field.
  std::string_view payload; ///< The bytes of a kLengthDelimited field.
  std::string_view whole;   ///< Tag included: what a verbatim copy copies.
};

/// Iterates over the fields of one message; `what` names the message in
/// errors ("graph", "initializer 'wte'").
class FieldReader {
public:
  FieldReader(const SourceFile &file, std::string_view message,
              std::string what)
      : file_(file), p_(message.data()), end_(message.data() + message.size()),
        what_(std::move(what)) {}

  bool done() const { return p_ == end_; }

  Status next(Field &field) {
    const char *start = p_;
    uint64_t tag;
    if (!readVarint(p_, end_, tag))
      return file_.error(start, "truncated field tag in " + what_);
    if (tag >> 3 == 0 || tag >> 3 > (uint64_t(1) << 29) - 1)
      return file_.error(start, "invalid field number " +
                                    std::to_string(tag >> 3) + " in " + what_);
    field.number = uint32_t(tag >> 3);
    field.wireType = uint32_t(tag & 7);
    field.payload = {};
    std::string prefix =
        "field " + std::to_string(field.number) + " of " + what_ + " ";
    switch (field.wireType) {
    case kVarint:
      if (!readVarint(p_, end_, field.varint))
        return file_.error(start, prefix + "has a truncated varint");
      break;
    case kFixed64:
    case kFixed32: {
      size_t size = field.wireType == kFixed64 ? 8 : 4;
      if (size_t(end_ - p_) < size)
        return file_.error(start, prefix + "runs past the end of " + what_);
      p_ += size;
      break;
    }
    case kLengthDelimited: {
      uint64_t length;
      if (!readVarint(p_, end_, length))
        return file_.error(start, prefix + "has a truncated length");
      if (length > uint64_t(end_ - p_))
        return file_.error(start, prefix + "has length " +
                                      std::to_string(length) +
                                      ", past the end of " + what_);
      field.payload = std::string_view(p_, size_t(length));
      p_ += length;
      break;
    }
    case kStartGroup:
    case kEndGroup:
      return file_.error(start, prefix + "is a group (wire type " +
                                    std::to_string(field.wireType) +
                                    "), which ONNX never uses");
    default:
      return file_.error(start, prefix + "has invalid wire type " +
                                    std::to_string(field.wireType));
    }
    field.whole = std::string_view(start, size_t(p_ - start));
    return okStatus();
  }

  /// An error unless `field` has wire type `expected`.
  Status expect(const Field &field, uint32_t expected,
                const char *fieldName) const {
    if (field.wireType == expected)
      return okStatus();
    return file_.error(field.whole.data(),
                       "field " + std::to_string(field.number) + " (" +
                           fieldName + ") of " + what_ + " has wire type " +
                           std::to_string(field.wireType) + ", expected " +
                           std::to_string(expected));
  }

private:
  const SourceFile &file_;
  const char *p_;
  const char *end_;
  std::string what_;
};

void putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out += char(uint8_t(value) | 0x80);
    value >>= 7;
  }
  out += char(value);
}

void putTag(std::string &out, uint32_t number, WireType wireType) {
  putVarint(out, uint64_t(number) << 3 | wireType);
}

void putBytes(std::string &out, uint32_t number, std::string_view bytes) {
  putTag(out, number, kLengthDelimited);
  putVarint(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

/// The bytes putBytes appends for a payload of `size` bytes.
uint64_t bytesFieldSize(uint32_t number, uint64_t size) {
  std::string header;
  putTag(header, number, kLengthDelimited);
  putVarint(header, size);
  return header.size() + size;
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

/// The fields of a TensorProto that export reads.
struct TensorFields {
  std::string name;
  std::string what; ///< "initializer 'name'", for messages.
  uint64_t dataType = 0;
  std::vector<int64_t> dims;
  bool hasRawData = false;
  std::string_view rawData;
  uint64_t dataLocation = 0;
  std::vector<std::pair<std::string, std::string>> externalData;
};

Status parseEntry(const SourceFile &file, std::string_view entry,
                  const std::string &what,
                  std::pair<std::string, std::string> &out) {
  FieldReader reader(file, entry, "an external_data entry of " + what);
  while (!reader.done()) {
    Field field;
    TRAINC_RETURN_IF_ERROR(reader.next(field));
    if (field.number == kEntryKey || field.number == kEntryValue) {
      TRAINC_RETURN_IF_ERROR(
          reader.expect(field, kLengthDelimited,
                        field.number == kEntryKey ? "key" : "value"));
      (field.number == kEntryKey ? out.first : out.second) =
          std::string(field.payload);
    }
  }
  return okStatus();
}

/// Parses the initializer `tensor`, the `index`th of the graph. Repeated
/// singular fields take the last value, as protobuf does.
Status parseTensor(const SourceFile &file, std::string_view tensor,
                   size_t index, TensorFields &out) {
  // The name first, so that all later messages can give it.
  out.what = "initializer #" + std::to_string(index);
  {
    FieldReader reader(file, tensor, out.what);
    while (!reader.done()) {
      Field field;
      TRAINC_RETURN_IF_ERROR(reader.next(field));
      if (field.number == kTensorName) {
        TRAINC_RETURN_IF_ERROR(reader.expect(field, kLengthDelimited, "name"));
        out.name = std::string(field.payload);
        out.what = "initializer '" + out.name + "'";
      }
    }
  }
  FieldReader reader(file, tensor, out.what);
  while (!reader.done()) {
    Field field;
    TRAINC_RETURN_IF_ERROR(reader.next(field));
    switch (field.number) {
    case kTensorDims:
      if (field.wireType == kVarint) {
        out.dims.push_back(int64_t(field.varint));
        break;
      }
      // Packed: a run of varints.
      TRAINC_RETURN_IF_ERROR(reader.expect(field, kLengthDelimited, "dims"));
      for (const char *p = field.payload.data(),
                      *end = p + field.payload.size();
           p < end;) {
        uint64_t dim;
        const char *at = p;
        if (!readVarint(p, end, dim))
          return file.error(at, "truncated packed dims of " + out.what);
        out.dims.push_back(int64_t(dim));
      }
      break;
    case kTensorDataType:
      TRAINC_RETURN_IF_ERROR(reader.expect(field, kVarint, "data_type"));
      out.dataType = field.varint;
      break;
    case kTensorRawData:
      TRAINC_RETURN_IF_ERROR(
          reader.expect(field, kLengthDelimited, "raw_data"));
      out.hasRawData = true;
      out.rawData = field.payload;
      break;
    case kTensorDataLocation:
      TRAINC_RETURN_IF_ERROR(reader.expect(field, kVarint, "data_location"));
      out.dataLocation = field.varint;
      break;
    case kTensorExternalData: {
      TRAINC_RETURN_IF_ERROR(
          reader.expect(field, kLengthDelimited, "external_data"));
      std::pair<std::string, std::string> entry;
      TRAINC_RETURN_IF_ERROR(parseEntry(file, field.payload, out.what, entry));
      out.externalData.push_back(std::move(entry));
      break;
    }
    default:
      break;
    }
  }
  return okStatus();
}

/// TensorProto.DataType for `t`.
uint64_t onnxDataType(DType t) {
  switch (t) {
  case DType::F64:
    return 11;
  case DType::F32:
    return 1;
  case DType::F16:
    return 10;
  case DType::BF16:
    return 16;
  case DType::I64:
    return 7;
  case DType::I32:
    return 6;
  case DType::I1:
    return 9;
  case DType::I16:
    return 5;
  case DType::I8:
    return 3;
  case DType::U64:
    return 13;
  case DType::U32:
    return 12;
  case DType::U16:
    return 4;
  case DType::U8:
    return 2;
  case DType::F8E4M3FN:
    return 17;
  case DType::F8E4M3FNUZ:
    return 18;
  case DType::F8E5M2:
    return 19;
  case DType::F8E5M2FNUZ:
    return 20;
  // ONNX packs 4- and 2-bit integers; trainc stores a byte per element, so
  // such a tensor is not replaced in place (0 matches no data type).
  case DType::I4:
  case DType::U4:
  case DType::I2:
  case DType::U2:
  case DType::F4E2M1FN:
    return 0;
  case DType::F8E8M0FNU:
    return 24;
  }
  return 0;
}

std::string onnxDataTypeName(uint64_t t) {
  static const char *const kNames[] = {
      "UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
      "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (t < sizeof kNames / sizeof kNames[0])
    return kNames[t];
  return "data type " + std::to_string(t);
}

/// The value of `key` in an external_data list, or null.
const std::string *
externalValue(const std::vector<std::pair<std::string, std::string>> &entries,
              const std::string &key) {
  const std::string *value = nullptr;
  for (const auto &entry : entries)
    if (entry.first == key)
      value = &entry.second;
  return value;
}

bool parseDecimal(const std::string &text, uint64_t &value) {
  if (text.empty() || text.size() > 19)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + uint64_t(c - '0');
  }
  return true;
}

/// The directory holding `path` ("." for a bare file name).

bool sameFile(const fs::path &a, const fs::path &b) {
  std::error_code error;
  return fs::equivalent(a, b, error) && !error;
}

//===----------------------------------------------------------------------===//
// The export
//===----------------------------------------------------------------------===//

class Exporter {
public:
  /// With `measureOnly`, the exporter checks what it would check but writes
  /// nothing and reads no external data: the weights need no data (only
  /// their names, dtypes, shapes and byte counts), and measured() is the
  /// size of the model it would make.
  Exporter(const SourceFile &file, const std::vector<NamedTensor> &weights,
           bool inlineExternal, bool measureOnly = false)
      : file_(file), weights_(weights), inlineExternal_(inlineExternal),
        measureOnly_(measureOnly) {
    for (const NamedTensor &w : weights)
      replacements_.emplace(w.name, Replacement{&w, 0});
  }

  /// Rewrites the ModelProto (the whole file) into `out` (nothing when
  /// measuring).
  Status rewriteModel(std::string &out) {
    FieldReader reader(file_, file_.bytes, "the model");
    while (!reader.done()) {
      Field field;
      TRAINC_RETURN_IF_ERROR(reader.next(field));
      if (field.number != kModelGraph) {
        emit(out, field.whole);
        continue;
      }
      TRAINC_RETURN_IF_ERROR(reader.expect(field, kLengthDelimited, "graph"));
      std::string graph;
      bool changed = false;
      uint64_t before = measured_;
      TRAINC_RETURN_IF_ERROR(rewriteGraph(field.payload, graph, changed));
      if (measureOnly_) // the graph's own bytes are counted: its header
        measured_ =
            before + (changed ? bytesFieldSize(kModelGraph, measured_ - before)
                              : field.whole.size());
      else if (changed)
        putBytes(out, kModelGraph, graph);
      else
        out.append(field.whole);
    }
    for (const NamedTensor &w : weights_)
      if (replacements_.at(w.name).found == 0)
        return notFound("parameter '" + w.name + "' is not an initializer of " +
                        file_.path);
    return okStatus();
  }

  /// The external data files the output refers to or was built from.
  const std::vector<fs::path> &externalFiles() const { return external_; }

  /// When measuring: the bytes of the model it would make.
  uint64_t measured() const { return measured_; }

private:
  /// Appends `bytes` to `out`, or, when measuring, counts them.
  void emit(std::string &out, std::string_view bytes) {
    if (measureOnly_)
      measured_ += bytes.size();
    else
      out.append(bytes);
  }

  struct Replacement {
    const NamedTensor *tensor;
    int found;
  };

  Status rewriteGraph(std::string_view graph, std::string &out, bool &changed) {
    FieldReader reader(file_, graph, "the graph");
    size_t index = 0;
    while (!reader.done()) {
      Field field;
      TRAINC_RETURN_IF_ERROR(reader.next(field));
      if (field.number != kGraphInitializer) {
        emit(out, field.whole);
        continue;
      }
      TRAINC_RETURN_IF_ERROR(
          reader.expect(field, kLengthDelimited, "initializer"));
      TRAINC_RETURN_IF_ERROR(rewriteInitializer(field, index++, out, changed));
    }
    return okStatus();
  }

  Status rewriteInitializer(const Field &field, size_t index, std::string &out,
                            bool &changed) {
    TensorFields tensor;
    TRAINC_RETURN_IF_ERROR(parseTensor(file_, field.payload, index, tensor));
    auto it = replacements_.find(tensor.name);
    if (it != replacements_.end()) {
      if (++it->second.found > 1)
        return corrupt(file_.path + ": " + tensor.what +
                       " appears more than once");
      std::string replaced;
      TRAINC_RETURN_IF_ERROR(
          replaceTensor(field.payload, tensor, *it->second.tensor, replaced));
      if (measureOnly_) // `replaced` lacks only the data's bytes
        measured_ += bytesFieldSize(kGraphInitializer,
                                    replaced.size() + it->second.tensor->bytes);
      else
        putBytes(out, kGraphInitializer, replaced);
      changed = true;
      return okStatus();
    }
    if (tensor.dataLocation != kDataLocationExternal) {
      emit(out, field.whole);
      return okStatus();
    }
    fs::path location;
    TRAINC_RETURN_IF_ERROR(externalLocation(tensor, location));
    external_.push_back(location);
    if (!inlineExternal_) {
      emit(out, field.whole);
      return okStatus();
    }
    // The data read (or, measuring, only its range checked), then the
    // tensor's other fields, in the same order either way.
    std::string bytes;
    uint64_t offset = 0, length = 0;
    if (measureOnly_)
      TRAINC_RETURN_IF_ERROR(externalRange(tensor, location, offset, length));
    else
      TRAINC_RETURN_IF_ERROR(readExternal(tensor, location, bytes));
    std::string inlined;
    TRAINC_RETURN_IF_ERROR(copyWithout(
        field.payload, tensor,
        {kTensorRawData, kTensorExternalData, kTensorDataLocation}, inlined));
    changed = true;
    if (measureOnly_) {
      measured_ += bytesFieldSize(kGraphInitializer,
                                  inlined.size() +
                                      bytesFieldSize(kTensorRawData, length));
      return okStatus();
    }
    putBytes(inlined, kTensorRawData, bytes);
    putBytes(out, kGraphInitializer, inlined);
    return okStatus();
  }

  /// `tensor` as dims, data_type, name and raw_data holding `value`,
  /// followed by the fields that do not describe data (doc_string,
  /// metadata_props, unknown ones). Field-number order, as protobuf writes.
  Status replaceTensor(std::string_view payload, const TensorFields &tensor,
                       const NamedTensor &value, std::string &out) {
    uint64_t dataType = onnxDataType(value.dtype);
    if (dataType != tensor.dataType || value.shape != tensor.dims)
      return invalidArgument(tensor.what + " of " + file_.path + " is " +
                             onnxDataTypeName(tensor.dataType) + " " +
                             shapeString(tensor.dims) +
                             " but its new value is " + dtypeName(value.dtype) +
                             " " + shapeString(value.shape));
    uint64_t elements = 1;
    for (int64_t dim : value.shape) {
      if (dim < 0 ||
          (dim > 0 &&
           elements > std::numeric_limits<uint64_t>::max() / uint64_t(dim)))
        return invalidArgument(tensor.what + ": invalid shape " +
                               shapeString(value.shape));
      elements *= uint64_t(dim);
    }
    if (elements > std::numeric_limits<uint64_t>::max() / 8 ||
        elements * dtypeSize(value.dtype) != value.bytes)
      return invalidArgument("the new value of " + tensor.what + " has " +
                             std::to_string(value.bytes) + " bytes, but " +
                             dtypeName(value.dtype) + " " +
                             shapeString(value.shape) + " takes " +
                             std::to_string(elements * dtypeSize(value.dtype)));

    for (int64_t dim : tensor.dims) {
      putTag(out, kTensorDims, kVarint);
      putVarint(out, uint64_t(dim));
    }
    putTag(out, kTensorDataType, kVarint);
    putVarint(out, dataType);
    putBytes(out, kTensorName, tensor.name);
    // The runtime's tensors are little-endian, as raw_data is. Measuring,
    // the data's header only (the caller counts its bytes).
    if (measureOnly_) {
      putTag(out, kTensorRawData, kLengthDelimited);
      putVarint(out, value.bytes);
    } else {
      putBytes(
          out, kTensorRawData,
          std::string_view(static_cast<const char *>(value.data), value.bytes));
    }
    return copyWithout(payload, tensor,
                       {kTensorDims, kTensorDataType, kTensorSegment,
                        kTensorFloatData, kTensorInt32Data, kTensorStringData,
                        kTensorInt64Data, kTensorName, kTensorRawData,
                        kTensorDoubleData, kTensorUint64Data,
                        kTensorExternalData, kTensorDataLocation},
                       out);
  }

  /// Appends the fields of `payload` whose numbers are not in `dropped`.
  Status copyWithout(std::string_view payload, const TensorFields &tensor,
                     std::initializer_list<uint32_t> dropped,
                     std::string &out) {
    FieldReader reader(file_, payload, tensor.what);
    while (!reader.done()) {
      Field field;
      TRAINC_RETURN_IF_ERROR(reader.next(field));
      if (std::find(dropped.begin(), dropped.end(), field.number) ==
          dropped.end())
        out.append(field.whole);
    }
    return okStatus();
  }

  /// The file holding `tensor`'s external data. Like onnx's own loader,
  /// accepts only relative locations that stay inside the model's directory.
  Status externalLocation(const TensorFields &tensor, fs::path &out) {
    const std::string *location =
        externalValue(tensor.externalData, "location");
    if (!location || location->empty())
      return corrupt(file_.path + ": " + tensor.what +
                     " has external data without a location");
    fs::path relative(*location);
    bool escapes = relative.is_absolute();
    for (const fs::path &part : relative)
      escapes |= part == "..";
    if (escapes)
      return invalidArgument(file_.path + ": " + tensor.what +
                             " has external data at '" + *location +
                             "', outside the model's directory");
    out = fs::path(directoryOf(file_.path)) / relative;
    return okStatus();
  }

  /// The byte range [offset, offset + length) of `tensor`'s external data
  /// in `location`, checked against the file's size and inlining's limit.
  Status externalRange(const TensorFields &tensor, const fs::path &location,
                       uint64_t &offset, uint64_t &length) {
    std::string path = location.string();
    offset = 0;
    length = 0;
    const std::string *offsetText =
        externalValue(tensor.externalData, "offset");
    const std::string *lengthText =
        externalValue(tensor.externalData, "length");
    if ((offsetText && !parseDecimal(*offsetText, offset)) ||
        (lengthText && !parseDecimal(*lengthText, length)))
      return corrupt(file_.path + ": " + tensor.what +
                     " has an invalid external data offset or length");
    std::error_code error;
    uint64_t size = fs::file_size(location, error);
    if (error)
      return notFound(path + ": cannot open (external data of " + tensor.what +
                      " in " + file_.path + "): " + error.message());
    if (!lengthText)
      length = offset <= size ? size - offset : 0;
    if (offset > size || length > size - offset)
      return corrupt(path + ": has " + std::to_string(size) + " bytes, but " +
                     tensor.what + " of " + file_.path + " needs " +
                     std::to_string(length) + " bytes at offset " +
                     std::to_string(offset));
    if (length > kMaxMessageBytes)
      return Status(StatusCode::kOutOfRange,
                    path + ": " + tensor.what + " has " +
                        std::to_string(length) +
                        " bytes, too many to inline in an ONNX file");
    return okStatus();
  }

  Status readExternal(const TensorFields &tensor, const fs::path &location,
                      std::string &out) {
    std::string path = location.string();
    uint64_t offset = 0, length = 0;
    TRAINC_RETURN_IF_ERROR(externalRange(tensor, location, offset, length));
    out.resize(size_t(length));
    std::ifstream file(location, std::ios::binary);
    if (!file.seekg(std::streamoff(offset)) ||
        !file.read(out.data(), std::streamsize(length)))
      return corrupt(path + ": cannot read the external data of " +
                     tensor.what + " in " + file_.path);
    return okStatus();
  }

  const SourceFile &file_;
  const std::vector<NamedTensor> &weights_;
  bool inlineExternal_, measureOnly_;
  uint64_t measured_ = 0;
  std::unordered_map<std::string, Replacement> replacements_;
  std::vector<fs::path> external_;
};

/// exportOnnxWithWeights up to the write: the new model's bytes in `out`,
/// or, with `measureOnly`, its checks alone (the weights need no data).
Status exportedModel(const std::string &sourcePath, const std::string &outPath,
                     const std::vector<NamedTensor> &weights, std::string &out,
                     bool measureOnly, uint64_t *measured = nullptr) {
  std::string temporary = outPath + ".tmp";
  // The output is renamed over `outPath` and the temporary truncated; neither
  // may be the model being exported.
  if (sameFile(outPath, sourcePath) || sameFile(temporary, sourcePath))
    return invalidArgument("cannot export " + sourcePath + " onto " + outPath +
                           ", which would overwrite it: choose another path");
  for (size_t i = 0; i < weights.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (weights[i].name == weights[j].name)
        return invalidArgument("parameter '" + weights[i].name +
                               "' is given twice");

  SourceFile file;
  file.path = sourcePath;
  TRAINC_RETURN_IF_ERROR(
      readRegularFile(sourcePath, "the ONNX model", file.bytes));
  // External data stays where it is when the output's relative locations
  // still resolve, i.e. when it is written next to the source.
  bool inlineExternal =
      !sameFile(directoryOf(sourcePath), directoryOf(outPath));
  Exporter exporter(file, weights, inlineExternal, measureOnly);
  TRAINC_RETURN_IF_ERROR(exporter.rewriteModel(out));
  uint64_t size = measureOnly ? exporter.measured() : out.size();
  if (measured)
    *measured = size;
  if (size > kMaxMessageBytes)
    return Status(StatusCode::kOutOfRange,
                  outPath + ": the exported model would take " +
                      std::to_string(size) +
                      " bytes, over protobuf's 2 GiB limit");
  for (const fs::path &external : exporter.externalFiles())
    if (sameFile(outPath, external) || sameFile(temporary, external))
      return invalidArgument("cannot export onto " + outPath + ": " +
                             sourcePath + " keeps external data in " +
                             external.string());
  return okStatus();
}

} // namespace

Status exportOnnxWithWeights(const std::string &sourcePath,
                             const std::string &outPath,
                             const std::vector<NamedTensor> &weights) {
  std::string out;
  TRAINC_RETURN_IF_ERROR(exportedModel(sourcePath, outPath, weights, out,
                                       /*measureOnly=*/false));
  return writeFileAtomically(outPath, [&](std::ostream &stream) {
    stream.write(out.data(), std::streamsize(out.size()));
  });
}

Status checkOnnxExport(const std::string &sourcePath,
                       const std::string &outPath,
                       const std::vector<NamedTensor> &weights,
                       uint64_t *size) {
  std::string unused;
  return exportedModel(sourcePath, outPath, weights, unused,
                       /*measureOnly=*/true, size);
}

Status readOnnxInitializers(const std::string &path,
                            std::vector<OnnxInitializer> &out) {
  SourceFile file;
  file.path = path;
  TRAINC_RETURN_IF_ERROR(readRegularFile(path, "the ONNX model", file.bytes));
  out.clear();
  FieldReader model(file, file.bytes, "the model");
  while (!model.done()) {
    Field graphField;
    TRAINC_RETURN_IF_ERROR(model.next(graphField));
    if (graphField.number != kModelGraph)
      continue;
    TRAINC_RETURN_IF_ERROR(model.expect(graphField, kLengthDelimited, "graph"));
    FieldReader graph(file, graphField.payload, "the graph");
    size_t index = 0;
    while (!graph.done()) {
      Field field;
      TRAINC_RETURN_IF_ERROR(graph.next(field));
      if (field.number != kGraphInitializer)
        continue;
      TRAINC_RETURN_IF_ERROR(
          graph.expect(field, kLengthDelimited, "initializer"));
      TensorFields tensor;
      TRAINC_RETURN_IF_ERROR(parseTensor(file, field.payload, index++, tensor));
      OnnxInitializer init;
      init.name = tensor.name;
      init.dataType = int32_t(tensor.dataType);
      init.dims = tensor.dims;
      init.hasRawData = tensor.hasRawData;
      init.rawData = std::string(tensor.rawData);
      init.external = tensor.dataLocation == kDataLocationExternal;
      out.push_back(std::move(init));
    }
  }
  return okStatus();
}

} // namespace trainc
