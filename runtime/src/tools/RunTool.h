//===- RunTool.h - The trainc-run command line ------------------*- C++ -*-===//

#ifndef TRAINC_RUNTIME_TOOLS_RUNTOOL_H
#define TRAINC_RUNTIME_TOOLS_RUNTOOL_H

namespace trainc {

/// Runs `trainc-run` with the given command line; returns the exit code.
int runRunTool(int argc, char **argv);

} // namespace trainc

#endif // TRAINC_RUNTIME_TOOLS_RUNTOOL_H
