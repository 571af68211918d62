//===- Supervisor.h - trainc-run --supervise --------------------*- C++ -*-===//
//
// Runs trainc-run's own command line, without --supervise, in a child
// process and restarts it from the newest checkpoint of its --save-state
// directory whenever it dies, until its steps are done (see --help).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_TRAINC_RUN_SUPERVISOR_H
#define TRAINC_TOOLS_TRAINC_RUN_SUPERVISOR_H

#include <cstdint>
#include <string>

namespace trainc::run {

struct SuperviseOptions {
  std::string saveStateDir, resumeDir;
  /// The steps to train, from the --resume checkpoint (or 0) on.
  int64_t steps = 0;
  /// Restarts without progress after which it gives up.
  int64_t maxRestarts = 3;
};

/// Set in the supervised child's environment: its SIGINT/SIGTERM handler
/// then ignores repeats of the first signal (the supervisor passes on the
/// signal it receives, and turns a second one into SIGKILL).
constexpr const char *kSupervisedChild = "TRAINC_SUPERVISED_CHILD";

/// The exit code of the last run (0 once the steps are done).
int supervise(int argc, char **argv, const SuperviseOptions &options);

} // namespace trainc::run

#endif // TRAINC_TOOLS_TRAINC_RUN_SUPERVISOR_H
