//===- RunTool.h - The trainc-run command line ------------------*- C++ -*-===//

#ifndef TRAINC_TOOLS_TRAINC_RUN_RUNTOOL_H
#define TRAINC_TOOLS_TRAINC_RUN_RUNTOOL_H

namespace trainc {

/// Runs `trainc-run` with the given command line; returns the exit code.
int runRunTool(int argc, char **argv);

} // namespace trainc

#endif // TRAINC_TOOLS_TRAINC_RUN_RUNTOOL_H
