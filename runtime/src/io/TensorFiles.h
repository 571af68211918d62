//===- TensorFiles.h - Inputs and outputs of a session as files -*- C++ -*-===//
//
// What `trainc-run --input NAME=FILE` and `--output-dir` read and write: a
// .npy file (dtype and shape checked) or raw bytes of exactly the tensor's
// size in; .npy out.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_TENSORFILES_H
#define TRAINC_RUNTIME_IO_TENSORFILES_H

#include "exec/Session.h"

#include <string>

namespace trainc {

/// Sets input `index` of `session` from `file`. An input split over the
/// mesh (data parallelism) reads the whole tensor from the file and keeps
/// this rank's part.
Status setInputFromFile(Session &session, size_t index,
                        const std::string &file);

/// Writes output `index` of `session` as the .npy file `path`. On a run of
/// several ranks every rank calls it (an output split over the mesh is
/// gathered whole first) and rank 0 writes the file.
Status writeOutputNpy(const Session &session, size_t index,
                      const std::string &path);

/// A file name for a tensor: its name with path separators replaced.
std::string tensorFileName(const std::string &name);

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_TENSORFILES_H
