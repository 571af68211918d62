//===- Parts.h - A tensor split along one dimension into parts --*- C++ -*-===//
//
// The one layout of split tensors, shared by sessions (initial values,
// gathers), checkpoints (joining shards) and input files: dimension `dim`
// of the whole tensor cut into `parts` blocks of ceil(whole / parts) rows
// in rank order, the last ones padded with zeros past the end (ZeRO's
// parts; tensor-parallel parts divide evenly). Parts are row-major with the
// whole tensor's other dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_EXEC_PARTS_H
#define TRAINC_RUNTIME_EXEC_PARTS_H

#include "exec/Executable.h"

#include <cstdint>
#include <vector>

namespace trainc {

struct SplitLayout {
  std::vector<int64_t> wholeShape;
  int dim = 0;
  int64_t parts = 1;
  uint64_t elementBytes = 1;

  /// Rows of dimension `dim` in each part (padded).
  int64_t partRows() const;
  uint64_t partBytes() const;
  uint64_t wholeBytes() const;
};

/// The layout of `t` (split along exactly one dimension of `mesh`'s axes);
/// an error naming `t` when it is split along several.
Status splitLayout(const TensorInfo &t, const std::vector<MeshAxisInfo> &mesh,
                   SplitLayout &out);

/// Part `index` of `whole` (layout.wholeBytes() bytes).
std::vector<char> partOf(const SplitLayout &layout, const char *whole,
                         int64_t index);

/// The whole tensor from `parts`: every part (layout.partBytes() each) in
/// index order, as a gather over the axis delivers them.
std::vector<char> wholeOf(const SplitLayout &layout, const char *parts);

} // namespace trainc

#endif // TRAINC_RUNTIME_EXEC_PARTS_H
