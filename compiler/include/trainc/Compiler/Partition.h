//===- Partition.h - The device mesh and its strategies --------*- C++ -*-===//
//
// The partition phase (Partition in Passes.td): the per-rank program of a
// device mesh. The CLI and the pass read --mesh with parseMesh, so the
// option has one syntax and one set of messages.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PARTITION_H
#define TRAINC_COMPILER_PARTITION_H

#include "trainc/Dialect/Graph/GraphDialect.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace trainc {

/// Parses the partition pass's `mesh`: comma-separated `axis=size` entries
/// over the axes data and tensor ("" or an absent axis: size 1). On
/// failure returns none and sets `error` to a message that quotes `text`.
std::optional<graph::Mesh> parseMesh(llvm::StringRef text, std::string &error);

} // namespace trainc

#endif // TRAINC_COMPILER_PARTITION_H
