//===- Parts.cpp - A tensor split along one dimension into parts ----------===//

#include "exec/Parts.h"

#include <algorithm>
#include <cstring>

namespace trainc {
namespace {

/// Bytes of one index of dimensions [0, dim) (`outer` of them) and of
/// dimensions after `dim`.
void blocks(const SplitLayout &l, int64_t &outer, uint64_t &inner) {
  outer = 1;
  for (int d = 0; d < l.dim; ++d)
    outer *= l.wholeShape[size_t(d)];
  inner = l.elementBytes;
  for (size_t d = size_t(l.dim) + 1; d < l.wholeShape.size(); ++d)
    inner *= uint64_t(l.wholeShape[d]);
}

/// Rows of part `index` that hold whole-tensor rows (the rest is padding).
int64_t filledRows(const SplitLayout &l, int64_t index) {
  int64_t first = index * l.partRows();
  return std::max<int64_t>(
      0, std::min(l.partRows(), l.wholeShape[size_t(l.dim)] - first));
}

} // namespace

int64_t SplitLayout::partRows() const {
  return (wholeShape[size_t(dim)] + parts - 1) / parts;
}

uint64_t SplitLayout::partBytes() const {
  int64_t outer;
  uint64_t inner;
  blocks(*this, outer, inner);
  return uint64_t(outer) * uint64_t(partRows()) * inner;
}

uint64_t SplitLayout::wholeBytes() const {
  uint64_t bytes = elementBytes;
  for (int64_t d : wholeShape)
    bytes *= uint64_t(d);
  return bytes;
}

Status splitLayout(const TensorInfo &t, const std::vector<MeshAxisInfo> &mesh,
                   SplitLayout &out) {
  out = SplitLayout();
  out.wholeShape = t.globalShape;
  out.elementBytes = dtypeSize(t.dtype);
  int found = -1;
  for (size_t d = 0; d < t.shardAxes.size(); ++d) {
    if (t.shardAxes[d] < 0)
      continue;
    if (found >= 0)
      return Status(StatusCode::kUnimplemented,
                    "'" + t.name + "' is split along dimensions " +
                        std::to_string(found) + " and " + std::to_string(d) +
                        "; tensors split along one dimension are supported");
    found = int(d);
    out.dim = found;
    out.parts = mesh[size_t(t.shardAxes[d])].size;
  }
  return okStatus();
}

std::vector<char> partOf(const SplitLayout &layout, const char *whole,
                         int64_t index) {
  int64_t outer;
  uint64_t inner;
  blocks(layout, outer, inner);
  uint64_t partBlock = uint64_t(layout.partRows()) * inner;
  uint64_t wholeBlock = uint64_t(layout.wholeShape[size_t(layout.dim)]) * inner;
  uint64_t first = uint64_t(index * layout.partRows()) * inner;
  uint64_t filled = uint64_t(filledRows(layout, index)) * inner;
  std::vector<char> part(uint64_t(outer) * partBlock, 0);
  for (int64_t o = 0; o < outer; ++o)
    if (filled > 0)
      std::memcpy(part.data() + uint64_t(o) * partBlock,
                  whole + uint64_t(o) * wholeBlock + first, filled);
  return part;
}

std::vector<char> wholeOf(const SplitLayout &layout, const char *parts) {
  int64_t outer;
  uint64_t inner;
  blocks(layout, outer, inner);
  uint64_t partBlock = uint64_t(layout.partRows()) * inner;
  uint64_t wholeBlock = uint64_t(layout.wholeShape[size_t(layout.dim)]) * inner;
  std::vector<char> whole(layout.wholeBytes());
  for (int64_t index = 0; index < layout.parts; ++index) {
    const char *part = parts + uint64_t(index) * layout.partBytes();
    uint64_t first = uint64_t(index * layout.partRows()) * inner;
    uint64_t filled = uint64_t(filledRows(layout, index)) * inner;
    for (int64_t o = 0; o < outer; ++o)
      if (filled > 0)
        std::memcpy(whole.data() + uint64_t(o) * wholeBlock + first,
                    part + uint64_t(o) * partBlock, filled);
  }
  return whole;
}

} // namespace trainc
