//===- SafeTensors.h - Writing .safetensors files ---------------*- C++ -*-===//
//
// The format the ecosystem loads weights from (Hugging Face safetensors): an
// 8-byte little-endian header length, a JSON header mapping each tensor's
// name to its dtype, shape and [begin, end) byte range, padded with spaces
// to a multiple of 8, then the tensors' bytes back to back.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_SAFETENSORS_H
#define TRAINC_RUNTIME_IO_SAFETENSORS_H

#include "base/DType.h"
#include "base/Status.h"

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

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_SAFETENSORS_H
