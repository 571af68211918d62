//===- Describe.h - Executables and profiles as text ------------*- C++ -*-===//
//
// What `trainc-run --inspect` and `--profile` print, as library functions
// (the C API returns the same text).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_EXEC_DESCRIBE_H
#define TRAINC_RUNTIME_EXEC_DESCRIBE_H

#include "exec/Session.h"

#include <string>

namespace trainc {

/// "input", "parameter", ... .
const char *roleName(TensorRole role);

/// The executable as text: its origin, memory plan, arenas, every tensor
/// (role, dtype, shape, where it lives, name) and every instruction.
std::string describeExecutable(const Executable &exe);

/// Where the time of `runs` runs of `session` (created with
/// SessionOptions::profile) went: per op, and the slowest instructions
/// grouped by op and operand shapes. Empty when nothing was timed.
std::string profileReport(const Session &session, size_t runs);

} // namespace trainc

#endif // TRAINC_RUNTIME_EXEC_DESCRIBE_H
