//===- Driver.h - The trainc compiler command line -------------*- C++ -*-===//

#ifndef TRAINC_TOOLS_TRAINC_DRIVER_H
#define TRAINC_TOOLS_TRAINC_DRIVER_H

namespace trainc {

/// Runs `trainc` with the given command line; returns the exit code (0 on
/// success, 1 on any error, which has been printed to stderr).
int runCompilerCli(int argc, char **argv);

} // namespace trainc

#endif // TRAINC_TOOLS_TRAINC_DRIVER_H
