//===- Npy.cpp - Reading and writing numpy .npy files ---------------------===//

#include "io/Npy.h"

#include "io/AtomicFile.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace trainc {
namespace {

Status badNpy(const std::string &path, const std::string &why) {
  return invalidArgument(path + ": not a supported .npy file: " + why);
}

/// The value of `key` in the header dict, e.g. "'<f4'" or "(2, 3)".
std::string headerValue(const std::string &header, const std::string &key) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return "";
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return "";
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos)
    return "";
  size_t end = header[start] == '(' ? header.find(')', start) + 1
                                    : header.find_first_of(",}", start);
  return header.substr(start, end == std::string::npos ? std::string::npos
                                                       : end - start);
}

struct Descr {
  const char *text;
  DType dtype;
};
const Descr kDescrs[] = {
    {"'<f8'", DType::F64}, {"'<f4'", DType::F32}, {"'<f2'", DType::F16},
    {"'<i8'", DType::I64}, {"'<i4'", DType::I32}, {"'|b1'", DType::I1},
    {"'<i2'", DType::I16}, {"'|i1'", DType::I8},  {"'<u8'", DType::U64},
    {"'<u4'", DType::U32}, {"'<u2'", DType::U16}, {"'|u1'", DType::U8}};

} // namespace

Status readNpy(const std::string &path, NpyArray &out) {
  std::vector<char> bytes;
  TRAINC_RETURN_IF_ERROR(readRegularFile(path, "a .npy file", bytes));
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    return badNpy(path, "the magic string is missing");
  uint8_t major = uint8_t(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return badNpy(path, "truncated header");
    headerLen = 0;
    for (int i = 0; i < 4; ++i)
      headerLen |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return badNpy(path, "format version " + std::to_string(major));
  }
  if (headerStart + headerLen > bytes.size())
    return badNpy(path, "truncated header");
  std::string header(bytes.data() + headerStart, headerLen);
  std::string descr = headerValue(header, "descr");
  bool found = false;
  for (const Descr &d : kDescrs)
    if (descr == d.text) {
      out.dtype = d.dtype;
      found = true;
    }
  if (!found)
    return badNpy(path,
                  "dtype " + descr +
                      " (supported: <f8 <f4 <f2 <i8 <i4 <i2 |i1 <u8 <u4 <u2 "
                      "|u1 |b1)");
  if (headerValue(header, "fortran_order") != "False")
    return badNpy(path, "Fortran order");
  std::string shape = headerValue(header, "shape");
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return badNpy(path, "no shape");
  out.shape.clear();
  uint64_t count = 1;
  size_t pos = 1;
  while (pos < shape.size() - 1) {
    size_t next = shape.find(',', pos);
    std::string item = shape.substr(
        pos, (next == std::string::npos ? shape.size() - 1 : next) - pos);
    size_t first = item.find_first_not_of(' ');
    if (first != std::string::npos) {
      char *end = nullptr;
      long long d = std::strtoll(item.c_str() + first, &end, 10);
      if (d < 0 || end == item.c_str() + first)
        return badNpy(path, "bad shape " + shape);
      out.shape.push_back(d);
      count *= uint64_t(d);
    }
    if (next == std::string::npos)
      break;
    pos = next + 1;
  }
  size_t dataStart = headerStart + headerLen;
  uint64_t need = count * dtypeSize(out.dtype);
  if (bytes.size() - dataStart != need)
    return badNpy(path, "holds " + std::to_string(bytes.size() - dataStart) +
                            " data bytes, its shape needs " +
                            std::to_string(need));
  out.data.assign(bytes.begin() + dataStart, bytes.end());
  return okStatus();
}

Status writeNpy(const std::string &path, DType dtype,
                const std::vector<int64_t> &shape, const void *data,
                size_t bytes) {
  const char *descr = nullptr;
  for (const Descr &d : kDescrs)
    if (d.dtype == dtype)
      descr = d.text;
  // No numpy dtype: bf16 as its bit patterns in uint16, 8-bit floats as
  // theirs in uint8, 4- and 2-bit integers as their values in int8/uint8.
  if (!descr)
    descr = dtype == DType::BF16                       ? "'<u2'"
            : dtype == DType::I4 || dtype == DType::I2 ? "'|i1'"
                                                       : "'|u1'";
  std::string header = std::string("{'descr': ") + descr +
                       ", 'fortran_order': False, 'shape': (";
  for (int64_t d : shape)
    header += std::to_string(d) + ", ";
  if (shape.size() > 1)
    header.resize(header.size() - 2);
  else if (shape.size() == 1)
    header.pop_back();
  header += "), }";
  // Pad so the data starts 64-byte aligned; the header ends in a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  return writeFileAtomically(path, [&](std::ostream &file) {
    file.write("\x93NUMPY\x01\x00", 8);
    char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
    file.write(len, 2);
    file.write(header.data(), header.size());
    file.write(static_cast<const char *>(data), bytes);
  });
}

} // namespace trainc
