//===- SafeTensors.h - Reading and writing .safetensors files ---*- C++ -*-===//
//
// The format the ecosystem loads weights from (Hugging Face safetensors): an
// 8-byte little-endian header length, a JSON header mapping each tensor's
// name to its dtype, shape and [begin, end) byte range, padded with spaces
// to a multiple of 8, then the tensors' bytes back to back. An optional
// "__metadata__" entry maps strings to strings.
//
// The reader trusts no file: a header length past the end, a header that is
// not a JSON object, an unknown dtype, a negative shape, a byte range
// outside the data or of another size than dtype x shape, or a name given
// twice is an error naming the file and the tensor, never a read out of
// bounds.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_SAFETENSORS_H
#define TRAINC_RUNTIME_IO_SAFETENSORS_H

#include "base/DType.h"
#include "base/Status.h"
#include "io/FileReader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

struct NamedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
  size_t bytes;
};

/// Writes `tensors` to `path` (through a temporary file renamed at the end,
/// so a failure leaves no partial file).
Status writeSafetensors(const std::string &path,
                        const std::vector<NamedTensor> &tensors);

/// The safetensors dtype writeSafetensors writes for `t` ("F32", "BF16",
/// "BOOL", ...). The types safetensors has no name for are written as their
/// stored bytes: "U8" (or "I8" for the signed sub-byte integers).
const char *safetensorsDType(DType t);

/// What a .safetensors file's header says it holds, checked (see the file
/// comment).
struct SafetensorsIndex {
  struct Tensor {
    std::string name;
    /// The dtype as the file names it ("F32"), and the trainc type of that
    /// name (safetensorsDType(dtype) == fileDType).
    std::string fileDType;
    DType dtype;
    std::vector<int64_t> shape;
    /// Where its bytes are in the file (already checked to lie inside it
    /// and to be exactly dtype x shape).
    size_t offset;
    size_t bytes;
  };

  std::string path;
  /// In the order of the header; "__metadata__" is not among them.
  std::vector<Tensor> tensors;
};

/// A .safetensors file read into memory and checked.
struct SafetensorsFile : SafetensorsIndex {
  /// The whole file.
  std::vector<char> contents;

  const char *data(const Tensor &t) const { return contents.data() + t.offset; }
};

/// Reads and checks `path`. A missing file is kNotFound; a truncated or
/// malformed one is kDataLoss, naming the file (and the tensor).
Status readSafetensors(const std::string &path, SafetensorsFile &out);

/// Reads and checks only the header of the file `reader` has open: the
/// tensors' bytes stay in the file, to be read where the index says. A
/// header over kMaxHeaderBytes is kDataLoss.
Status readSafetensorsIndex(const FileReader &reader, SafetensorsIndex &out);

/// The longest header readSafetensorsIndex reads (the safetensors
/// library's own limit).
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_SAFETENSORS_H
