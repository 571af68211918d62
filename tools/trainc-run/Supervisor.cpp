//===- Supervisor.cpp - trainc-run --supervise ----------------------------===//

#include "Supervisor.h"

#include "trainc/runtime.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace trainc::run {
namespace {

/// The step of the newest good checkpoint in `dir`, or -1 when it has none.
int64_t checkpointStep(const std::string &dir) {
  int64_t step = -1;
  if (trainc_status s = trainc_saved_run_info(dir.c_str(), &step, nullptr)) {
    trainc_status_free(s);
    return -1;
  }
  return step;
}

/// The supervisor's child, and the SIGINT/SIGTERM that asked it to stop.
/// The first is passed on: the child saves and stops. A second stops the
/// child at once (SIGKILL), as a second Ctrl-C stops a run that is not
/// supervised. The child (kSupervisedChild set) ignores repeats of the
/// first: a terminal's Ctrl-C, or a scheduler that signals every process
/// of a job, reaches it both directly and through here.
volatile pid_t gChild = 0;
volatile std::sig_atomic_t gStopped = 0;
extern "C" void forwardSignal(int signal) {
  if (gStopped == 0) {
    gStopped = signal;
    if (gChild > 0)
      kill(gChild, signal);
  } else if (gChild > 0) {
    kill(gChild, SIGKILL);
  }
}

int exitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int fail(const std::string &message) {
  std::fprintf(stderr, "trainc-run: error: %s\n", message.c_str());
  return 1;
}

} // namespace

/// --supervise: runs this command without --supervise in a child, restarts
/// it from the newest checkpoint when it dies, and returns the exit code of
/// its last run. The steps are counted from where the supervised run began,
/// so a restarted child runs only what is left.
int supervise(int argc, char **argv, const SuperviseOptions &o) {
  setenv(kSupervisedChild, "1", 1);
  int64_t start = o.resumeDir.empty() ? 0 : checkpointStep(o.resumeDir);
  if (start < 0)
    start = 0;
  int64_t target = start + o.steps;
  // The child's arguments: the user's, without the supervisor's flags and
  // --steps/--resume, which each restart sets.
  std::vector<std::string> base;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--supervise")
      continue;
    if (a == "--max-restarts" || a == "--steps" || a == "--resume") {
      ++i;
      continue;
    }
    base.push_back(a);
  }
  struct sigaction forward;
  std::memset(&forward, 0, sizeof forward);
  forward.sa_handler = forwardSignal;
  sigemptyset(&forward.sa_mask);
  sigaction(SIGINT, &forward, nullptr);
  sigaction(SIGTERM, &forward, nullptr);

  int64_t restarts = 0;
  for (int attempt = 0;; ++attempt) {
    if (gStopped) // during a backoff
      return 128 + gStopped;
    // The first run starts as the command says: from --resume, or fresh
    // (and refuses a --save-state directory holding another run's
    // checkpoints). A restart continues from this run's newest checkpoint.
    int64_t saved = checkpointStep(o.saveStateDir);
    bool fromSaved = attempt > 0 && saved >= 0;
    std::vector<std::string> args = base;
    std::string resume = fromSaved ? o.saveStateDir : o.resumeDir;
    int64_t from = fromSaved ? saved : start;
    // A run killed after its last checkpoint is run once more with
    // --steps 0: it writes the outputs of that checkpoint.
    args.push_back("--steps");
    args.push_back(std::to_string(std::max<int64_t>(0, target - from)));
    if (!resume.empty()) {
      args.push_back("--resume");
      args.push_back(resume);
    }
    std::vector<char *> cargv{argv[0]};
    for (std::string &a : args)
      cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::fflush(stdout);
    pid_t parent = getpid();
    // SIGINT and SIGTERM wait (blocked) over the fork: the child must not
    // take one with the supervisor's handlers, which would forget it.
    sigset_t stops, before;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, &before);
    pid_t child = fork();
    if (child != 0) {
      gChild = child > 0 ? child : 0;
      sigprocmask(SIG_SETMASK, &before, nullptr);
    }
    if (child < 0)
      return fail(std::string("--supervise: cannot start the run: ") +
                  std::strerror(errno));
    if (child == 0) {
      // A supervisor killed outright (kill -9) cannot pass anything on:
      // the kernel sends the run SIGTERM then, which saves and stops it,
      // rather than leaving it training with no one to restart it and the
      // checkpoint directory locked. (It survives exec; a parent already
      // gone before it was set is checked for.) Until the exec, a stop
      // takes the default action (no step has run: nothing is lost).
      std::signal(SIGTERM, SIG_DFL);
      std::signal(SIGINT, SIG_DFL);
      sigprocmask(SIG_SETMASK, &before, nullptr);
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
        _exit(128 + SIGTERM);
      execv("/proc/self/exe", cargv.data());
      execvp(argv[0], cargv.data());
      std::fprintf(stderr,
                   "trainc-run: error: --supervise: cannot run %s: %s\n",
                   argv[0], std::strerror(errno));
      _exit(127);
    }
    gChild = child;
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    gChild = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      return 0;
    if (gStopped) // the user stopped it: no restart
      return exitCode(status);
    int64_t now = checkpointStep(o.saveStateDir);
    bool progress = now > saved;
    // An error exit before any progress is the command's own (a missing
    // file, a refused option): running it again would only repeat it.
    if (WIFEXITED(status) && !progress) {
      std::fprintf(stderr,
                   "trainc-run: supervisor: the run exited with status %d "
                   "before writing a %scheckpoint; not restarted\n",
                   WEXITSTATUS(status), saved >= 0 ? "new " : "");
      return exitCode(status);
    }
    std::string why =
        WIFSIGNALED(status)
            ? std::string("was killed by signal ") +
                  std::to_string(WTERMSIG(status)) + " (" +
                  strsignal(WTERMSIG(status)) + ")"
            : "exited with status " + std::to_string(WEXITSTATUS(status));
    // A restart that made no progress counts toward the limit; progress
    // resets it (a long run may be preempted many times).
    restarts = progress ? 1 : restarts + 1;
    if (restarts > o.maxRestarts) {
      std::fprintf(stderr,
                   "trainc-run: supervisor: the run %s; giving up after %lld "
                   "restart(s) without progress (--max-restarts %lld)\n",
                   why.c_str(), (long long)(restarts - 1),
                   (long long)o.maxRestarts);
      return exitCode(status);
    }
    unsigned delay = 1u << std::min<int64_t>(restarts - 1, 5);
    std::fprintf(
        stderr,
        "trainc-run: supervisor: the run %s; restarting from %s in "
        "%u s (attempt %d)\n",
        why.c_str(),
        now >= 0
            ? ("step " + std::to_string(now) + " of " + o.saveStateDir).c_str()
            : "the start",
        delay, attempt + 2);
    if (std::getenv("TRAINC_TEST_SUPERVISOR_NO_BACKOFF") == nullptr)
      sleep(delay);
  }
}

} // namespace trainc::run
