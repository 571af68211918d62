//===- Npy.h - Reading and writing numpy .npy files -------------*- C++ -*-===//
//
// The subset trainc needs: little-endian C-order arrays of f64, f32, f16,
// i64, i32 and bool ('<f8', '<f4', '<f2', '<i8', '<i4', '|b1'), npy format
// versions 1.0 to 3.0. Anything else is an error naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_NPY_H
#define TRAINC_RUNTIME_IO_NPY_H

#include "base/DType.h"
#include "base/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> data; ///< Row-major element bytes.
};

Status readNpy(const std::string &path, NpyArray &out);
Status writeNpy(const std::string &path, DType dtype,
                const std::vector<int64_t> &shape, const void *data,
                size_t bytes);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_NPY_H
