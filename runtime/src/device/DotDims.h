//===- DotDims.h - dot_general's dimensions grouped for a GEMM --*- C++ -*-===//
//
// Host-side bookkeeping both devices' dot_general kernels share: an
// operand's dims split into batch, free and contracting groups (each in the
// order its elements are flattened), and the concatenation of groups into a
// permutation.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_DEVICE_DOTDIMS_H
#define TRAINC_RUNTIME_DEVICE_DOTDIMS_H

#include "device/KernelContext.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace trainc {

struct DimGroups {
  std::vector<int> batch, free, contract;
};

/// t's dims grouped: `batch` and `contract` (nb and nc dims, in the given
/// order) and the rest, in order, as free.
inline DimGroups groupDims(const TensorRef &t, const int64_t *batch,
                           const int64_t *contract, int64_t nb, int64_t nc) {
  DimGroups g;
  std::vector<bool> used(t.rank, false);
  for (int64_t i = 0; i < nb; ++i) {
    g.batch.push_back(int(batch[i]));
    used[batch[i]] = true;
  }
  for (int64_t i = 0; i < nc; ++i) {
    g.contract.push_back(int(contract[i]));
    used[contract[i]] = true;
  }
  for (int d = 0; d < t.rank; ++d)
    if (!used[d])
      g.free.push_back(d);
  return g;
}

/// The groups one after another.
inline std::vector<int>
concat(std::initializer_list<const std::vector<int> *> parts) {
  std::vector<int> out;
  for (const std::vector<int> *p : parts)
    out.insert(out.end(), p->begin(), p->end());
  return out;
}

} // namespace trainc

#endif // TRAINC_RUNTIME_DEVICE_DOTDIMS_H
