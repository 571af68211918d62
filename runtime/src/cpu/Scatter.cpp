//===- Scatter.cpp - scatter_add: the transpose of gather -----------------===//
//
// out = 0; out[o, wrap(idx[j]), i] += updates[o, j, i]
//
// Shape legend: the result viewed as [O, A, I] around `axis` (O the product
// of the dims before it, A its size, I the product after), the indices
// flattened to [J], the updates as [O, J, I]. Every index is checked before
// anything is written. Rows are accumulated in index order (deterministic);
// 16-bit results accumulate in an f32 copy and are rounded once at the end;
// i32 and i64 add with two's-complement wrap-around (in uint64_t, then
// truncated: the same bits as adding in the type itself).
//
//===----------------------------------------------------------------------===//

#include "cpu/KernelUtil.h"

#include <algorithm>

#include <vector>

namespace trainc::cpu {
namespace {

/// Accumulates in T, the compute type, into `acc` of O * A * I elements.
template <typename T>
void accumulate(const TensorRef &updates, const std::vector<int64_t> &rows,
                int64_t outer, int64_t axisSize, int64_t inner, T *acc) {
  int64_t j = static_cast<int64_t>(rows.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < j; ++k) {
      T *dst = acc + (o * axisSize + rows[k]) * inner;
      int64_t src = (o * j + k) * inner;
      for (int64_t i = 0; i < inner; ++i)
        dst[i] += loadAs<T>(updates, src + i);
    }
}

} // namespace

Status runScatterAdd(const KernelCall &call) {
  const TensorRef &updates = call.inputs[0], &indices = call.inputs[1];
  const TensorRef &out = call.outputs[0];
  int axis = static_cast<int>(call.ints[0]);
  int64_t outer = 1, inner = 1, axisSize = out.dims[axis];
  for (int d = 0; d < axis; ++d)
    outer *= out.dims[d];
  for (int d = axis + 1; d < out.rank; ++d)
    inner *= out.dims[d];
  std::vector<int64_t> rows(indices.numElements());
  for (size_t k = 0; k < rows.size(); ++k) {
    int64_t v = loadAs<int64_t>(indices, k);
    if (v < -axisSize || v >= axisSize)
      return kernelError(call, "index " + std::to_string(v) + " at position " +
                                   std::to_string(k) +
                                   " is out of range for axis " +
                                   std::to_string(axis) + " of size " +
                                   std::to_string(axisSize));
    rows[k] = v < 0 ? v + axisSize : v;
  }
  int64_t n = out.numElements();
  if (out.dtype == DType::F64 || out.dtype == DType::F32) {
    withFloatCompute(out.dtype, [&](auto zero) {
      using T = decltype(zero);
      T *acc = out.as<T>();
      std::fill(acc, acc + n, T(0));
      accumulate(updates, rows, outer, axisSize, inner, acc);
    });
    return okStatus();
  }
  if (out.dtype == DType::I32 || out.dtype == DType::I64) {
    std::vector<uint64_t> acc(n, 0);
    accumulate(updates, rows, outer, axisSize, inner, acc.data());
    for (int64_t i = 0; i < n; ++i) {
      if (out.dtype == DType::I32)
        out.as<int32_t>()[i] =
            static_cast<int32_t>(static_cast<uint32_t>(acc[i]));
      else
        out.as<int64_t>()[i] = static_cast<int64_t>(acc[i]);
    }
    return okStatus();
  }
  if (!isFloat(out.dtype))
    return unsupportedDType(call, out.dtype);
  std::vector<float> acc(n, 0.0f);
  accumulate(updates, rows, outer, axisSize, inner, acc.data());
  for (int64_t i = 0; i < n; ++i)
    storeAs(out, i, acc[i]);
  return okStatus();
}

} // namespace trainc::cpu
