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

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace trainc {

/// Calls `write` on a stream to PATH.tmp, then renames it to `path`, with
/// the file and its directory fsynced. Writers that may race on one path
/// (processes sharing a cache) give each its own `temporarySuffix`.
Status writeFileAtomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write,
                           const std::string &temporarySuffix = ".tmp");

/// Opens `path` for reading into `fd` (the caller closes it) and gives its
/// `size`; it must be a regular file (not a directory, device or pipe);
/// `what` names it in errors ("the executable").
/// When it fails, `error` (if given) is the errno of the failed open or
/// stat, or 0 (not a regular file).
Status openRegularFile(const std::string &path, const std::string &what,
                       int &fd, uint64_t &size, int *error = nullptr);

/// Reads the whole of `path`, which must be a regular file (not a
/// directory, device or pipe: /dev/zero would never end) of at most
/// `maxBytes` bytes; `what` names it in errors ("the executable").
Status readRegularFile(const std::string &path, const std::string &what,
                       std::vector<char> &out, uint64_t maxBytes = UINT64_MAX);
Status readRegularFile(const std::string &path, const std::string &what,
                       std::string &out, uint64_t maxBytes = UINT64_MAX);

/// fsyncs directory `dir` (so that a rename or a new entry in it is
/// durable).
Status syncDirectory(const std::string &dir);

/// The directory part of `path` ("." for a bare name).
std::string directoryOf(const std::string &path);

/// "<path>: <what>: <strerror(errno)>" as a Status of the code errno
/// suggests (no space left and I/O errors are data loss).
Status ioError(const std::string &what, const std::string &path, int error);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_ATOMICFILE_H
