//===- Sort.cpp - argsort: a stable sort's permutation --------------------===//
//
// out[o, j, i] = the index along `axis` of the element that a stable sort of
// row (o, i) puts at position j.
//
// Shape legend: the operand viewed as [O, A, I] around `axis`. Each row's
// elements become math/SortKey.h's unsigned keys (the order of numbers,
// -0 == +0, NaN last, or floats' total order of their stored bits;
// reversed when descending), and a stable sort of the keys gives the
// permutation, ties in index order. The CUDA kernel sorts
// the same keys stably, so both devices give the same indices.
//
//===----------------------------------------------------------------------===//

#include "cpu/KernelUtil.h"
#include "math/SortKey.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace trainc::cpu {

Status runArgsort(const KernelCall &call) {
  const TensorRef &x = call.inputs[0];
  const TensorRef &out = call.outputs[0];
  int axis = static_cast<int>(call.ints[0]);
  bool descending = call.ints[1] != 0, totalOrder = call.ints[2] != 0;
  bool floats = isFloat(x.dtype);
  int width = int(dtypeSize(x.dtype)) * 8;
  if (!floats && x.dtype != DType::I32 && x.dtype != DType::I64)
    return unsupportedDType(call, x.dtype);
  int64_t outer = 1, inner = 1, axisSize = x.dims[axis];
  for (int d = 0; d < axis; ++d)
    outer *= x.dims[d];
  for (int d = axis + 1; d < x.rank; ++d)
    inner *= x.dims[d];

  std::vector<uint64_t> keys(axisSize);
  std::vector<int64_t> order(axisSize);
  int64_t *result = out.as<int64_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * axisSize * inner + i;
      for (int64_t j = 0; j < axisSize; ++j) {
        int64_t at = base + j * inner;
        if (!floats)
          keys[j] = math::sortKeyOfInt(loadAs<int64_t>(x, at), descending);
        else if (totalOrder)
          keys[j] = math::sortKeyOfStoredFloat(x.data, at, width, descending);
        else
          keys[j] = math::sortKeyOfFloat(loadAs<double>(x, at), descending);
      }
      std::iota(order.begin(), order.end(), int64_t(0));
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
      for (int64_t j = 0; j < axisSize; ++j)
        result[base + j * inner] = order[j];
    }
  return okStatus();
}

} // namespace trainc::cpu
