//===- AtomicFile.h - Writing a file all at once or not at all --*- C++ -*-===//
//
// Every file trainc-run writes for a user to keep (weights, exported
// models, run state) goes through writeFileAtomically: the bytes go to
// PATH.tmp, which is renamed over PATH only once it is complete, so a
// failed or interrupted write never leaves a truncated PATH (and the
// staging file is removed on failure).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_ATOMICFILE_H
#define TRAINC_RUNTIME_IO_ATOMICFILE_H

#include "base/Status.h"

#include <functional>
#include <ostream>
#include <string>

namespace trainc {

/// Calls `write` on a stream to PATH.tmp, then renames it to `path`.
Status writeFileAtomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_ATOMICFILE_H
