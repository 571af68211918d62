//===- AtomicFile.h - Writing files all at once, durably --------*- C++ -*-===//
//
// Every file trainc writes for a user to keep (weights, exported models,
// checkpoints) goes through here. writeFileAtomically writes PATH.tmp,
// fsyncs it, renames it over PATH and fsyncs the directory: a failed or
// interrupted write never leaves a truncated PATH, and once it returns the
// file survives a power cut. Every error names the path and the errno text.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_ATOMICFILE_H
#define TRAINC_RUNTIME_IO_ATOMICFILE_H

#include "base/Status.h"

#include <functional>
#include <ostream>
#include <string>

namespace trainc {

/// Calls `write` on a stream to PATH.tmp, then renames it to `path`, with
/// the file and its directory fsynced.
Status writeFileAtomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write);

/// fsyncs directory `dir` (so that a rename or a new entry in it is
/// durable).
Status syncDirectory(const std::string &dir);

/// The directory part of `path` ("." for a bare name).
std::string directoryOf(const std::string &path);

/// "<what> <path>: <strerror(errno)>" as a Status of the code errno
/// suggests (no space left and I/O errors are data loss).
Status ioError(const std::string &what, const std::string &path, int error);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_ATOMICFILE_H
