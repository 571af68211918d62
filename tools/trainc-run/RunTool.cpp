//===- RunTool.cpp - The trainc-run command line --------------------------===//
//
// trainc-run model.tcx --input NAME=FILE ... [--output-dir DIR]
//   runs an executable on a device (--device) with inputs from .npy files
//   (dtype and shape checked) or raw files (size checked) and writes every
//   output as DIR/<name>.npy; with --steps N it runs N training steps on them.
// trainc-run step.tcx --data FILE... --steps N [--eval-executable fwd.tcx]
//   trains on batches drawn from token or text files, with a progress bar
//   on a terminal, plain lines otherwise, a JSONL log, and the trained
//   weights as safetensors and ONNX at the end.
// --inspect prints the executable instead.
//
// Written against the C API (trainc/runtime.h) alone: what this tool does,
// any program that embeds the runtime can do.
//
//===----------------------------------------------------------------------===//

#include "RunTool.h"

#include "Options.h"
#include "Reporter.h"
#include "Supervisor.h"

#include "trainc/runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace trainc {
namespace {

using run::Reporter;

/// This process's rank and the run's ranks (trainc_world_init).
int gRank = 0, gWorldSize = 1;

/// Prints `message`; on a run of several ranks, also ends the other ranks,
/// which would otherwise wait for this one in their next collective.
int fail(const std::string &message) {
  if (gWorldSize > 1) {
    std::fprintf(stderr, "trainc-run: rank %d: error: %s\n", gRank,
                 message.c_str());
    std::fflush(stderr);
    trainc_world_abort(1);
  }
  std::fprintf(stderr, "trainc-run: error: %s\n", message.c_str());
  return 1;
}

/// "invalid argument: <message>" of `status`, which it frees.
std::string take(trainc_status status) {
  std::string text =
      std::string(trainc_status_code_name(trainc_status_get_code(status))) +
      ": " + trainc_status_message(status);
  trainc_status_free(status);
  return text;
}

/// A string the runtime allocated, as std::string (freed).
std::string takeText(char *text) {
  std::string s = text ? text : "";
  trainc_string_free(text);
  return s;
}

struct ExecutableDeleter {
  void operator()(trainc_executable *e) const { trainc_executable_release(e); }
};
struct TrainerDeleter {
  void operator()(trainc_trainer *t) const { trainc_trainer_release(t); }
};
using ExecutablePtr = std::unique_ptr<trainc_executable, ExecutableDeleter>;
using TrainerPtr = std::unique_ptr<trainc_trainer, TrainerDeleter>;

/// A file name for an output: its name with path separators replaced.
std::string fileNameFor(const std::string &name) {
  std::string s = name;
  std::replace_if(
      s.begin(), s.end(),
      [](char c) { return c == '/' || c == '\\' || c == ':'; }, '_');
  return s.empty() ? "output" : s;
}

/// The signal that asked training to stop (SIGINT or SIGTERM), or 0.
volatile std::sig_atomic_t gInterrupted = 0;
extern "C" void onInterrupt(int signal) { gInterrupted = signal; }

/// While alive: the first Ctrl-C or SIGTERM (a scheduler's preemption,
/// `timeout`, systemd) sets gInterrupted: training stops after the current
/// step and still writes its outputs and a checkpoint. The handler then
/// resets itself, so a second signal stops the process at once (a save in
/// progress then leaves the previous checkpoint intact); under --supervise
/// it stays, and the supervisor stops the run at once on a second signal
/// (Supervisor.h). An inherited "ignore" (a background job) is left alone.
class InterruptScope {
public:
  InterruptScope() {
    gInterrupted = 0;
    bool supervised = std::getenv(run::kSupervisedChild) != nullptr;
    for (int i = 0; i < 2; ++i) {
      sigaction(kSignals[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler == SIG_IGN)
        continue;
      struct sigaction now;
      std::memset(&now, 0, sizeof now);
      now.sa_handler = onInterrupt;
      now.sa_flags = supervised ? 0 : SA_RESETHAND;
      sigemptyset(&now.sa_mask);
      sigaction(kSignals[i], &now, nullptr);
    }
  }
  ~InterruptScope() {
    for (int i = 0; i < 2; ++i)
      sigaction(kSignals[i], &previous_[i], nullptr);
  }

private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction previous_[2];
};

/// Consecutive skipped steps after which --on-nonfinite skip gives up.
constexpr int64_t kMaxSkippedInARow = 25;
/// Overflows in a row after which a skipped fp16 step counts as
/// non-finite: the scale has fallen from 2^16 to 2^-24 by then.
constexpr int64_t kMaxOverflowsInARow = 40;
/// Rollbacks after which one run gives up.
constexpr int kMaxRollbacks = 3;

/// What the training loop's callback sees and decides.
struct Loop {
  Reporter *reporter;
  std::vector<double> *times;
  trainc_trainer *trainer;
  const Options *options;
  std::string logError, saveError, rollbackError;
  bool diverged = false;
  /// Steps the executable skipped (loss or gradients not finite): in all,
  /// in a row now, and the step that made training stop (0: none).
  int64_t skipped = 0, skippedInARow = 0, stoppedAtSkip = 0;
  /// Steps skipped because the loss-scaled gradients overflowed (fp16), in
  /// all and in a row now.
  int64_t overflows = 0, overflowsInARow = 0;
  /// Loss spikes seen, and the step a spike stopped training at (0: none).
  int64_t spikes = 0, stoppedAtSpike = 0;
  /// The step whose spike or non-finite loss asks for a rollback (0: none).
  int64_t rollbackAt = 0;
  /// Checkpoints written during training (a save that failed in the
  /// background is taken back when its error comes), and the seconds
  /// training waited.
  int saves = 0;
  double saveSeconds = 0;
  int64_t savedStep = -1;
};

int decideStep(const trainc_step_metrics *m, void *user) {
  Loop &loop = *static_cast<Loop *>(user);
  loop.times->push_back(m->step_seconds * 1e3);
  loop.logError = loop.reporter->onStep(*m);
  if (!loop.logError.empty())
    return 1;
  const Options &options = *loop.options;
  // With dynamic loss scaling, a skipped step whose loss is finite is an
  // overflow of the scaled gradients: the executable halved the scale, and
  // that is the whole remedy (as PyTorch's GradScaler).
  // Only so many in a row, though: the scale halves each time, and
  // gradients that stay non-finite at any scale are a divergence.
  if (m->skipped && std::isfinite(m->loss_scale) && std::isfinite(m->loss) &&
      ++loop.overflowsInARow <= kMaxOverflowsInARow) {
    ++loop.overflows;
    return gInterrupted ? 1 : 0;
  }
  if (!m->skipped)
    loop.overflowsInARow = 0;
  if (m->skipped) {
    ++loop.skipped;
    if (options.rollbackOnNonFinite) {
      loop.rollbackAt = m->step;
      return 1;
    }
    if (options.stopOnNonFinite || ++loop.skippedInARow >= kMaxSkippedInARow) {
      loop.stoppedAtSkip = m->step;
      return 1;
    }
    return gInterrupted ? 1 : 0;
  }
  loop.skippedInARow = 0;
  if (m->spike) {
    ++loop.spikes;
    std::fprintf(stderr,
                 "trainc-run: warning: step %lld: loss %.6g is %.1f standard "
                 "deviations above the recent mean (a loss spike)\n",
                 (long long)m->step, m->loss, m->loss_z);
    if (options.onSpike == "stop") {
      loop.stoppedAtSpike = m->step;
      return 1;
    }
    if (options.onSpike == "rollback") {
      loop.rollbackAt = m->step;
      return 1;
    }
  }
  // An executable without the skip flag (compiled before it existed) may
  // have applied a non-finite update.
  if (m->has_loss && !std::isfinite(m->loss)) {
    loop.diverged = true;
    return 1;
  }
  const Options &o = options;
  if (o.saveEvery && m->step % o.saveEvery == 0 && !gInterrupted) {
    // Written on a background thread: training waits for the copy of the
    // state (and for the previous checkpoint, if it is still being written).
    auto start = std::chrono::steady_clock::now();
    if (trainc_status s =
            trainc_trainer_save_async(loop.trainer, o.saveStateDir.c_str())) {
      // The previous background save failed (counted when it started).
      loop.saveError = take(s);
      --loop.saves;
      loop.savedStep = -1;
      return 1;
    }
    ++loop.saves;
    loop.savedStep = m->step;
    loop.saveSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
  }
  return gInterrupted ? 1 : 0;
}

/// decideStep, agreed by every rank: the ranks stop together after the same
/// step, or a rank that went on would wait for the others in its next
/// collective. The metrics that decide (the loss, skips, spikes) are the
/// same on every rank; what is not (a SIGTERM to one rank, rank 0's log or
/// checkpoint errors) stops all, the others as if interrupted.
int onStep(const trainc_step_metrics *m, void *user) {
  int stop = decideStep(m, user);
  if (gWorldSize == 1)
    return stop;
  int any = stop;
  if (trainc_status s = trainc_world_any(stop, &any)) {
    // A rank did not arrive (its collective timed out, naming it): end
    // the job now; waiting to finish with it would hang.
    fail("after step " + std::to_string(m->step) + ": " + take(s));
    return 1;
  }
  if (any && !stop && !gInterrupted)
    gInterrupted = SIGTERM;
  return any;
}

/// The opening pass over the data (trainc_train_config.data_progress): a
/// line every 5 s once it has taken 2 s, so that a long read of large data
/// says how far it is.
struct DataProgress {
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();
  double lastPrinted = -3;
};

void onDataProgress(void *context, uint64_t done, uint64_t total) {
  auto *p = static_cast<DataProgress *>(context);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - p->start)
          .count();
  if (gRank != 0 || seconds < 2 || seconds - p->lastPrinted < 5 ||
      done >= total)
    return;
  p->lastPrinted = seconds;
  double rate = double(done) / seconds;
  std::printf("data: checking and hashing: %.1f of %.1f GB (%.0f%%), %.0f "
              "MB/s, about %.0f s left\n",
              double(done) / 1e9, double(total) / 1e9,
              100.0 * double(done) / double(total), rate / 1e6,
              double(total - done) / rate);
  std::fflush(stdout);
}

} // namespace

int runRunTool(int argc, char **argv) {
  // Past a file size limit (ulimit -f) a write fails with EFBIG, which is
  // reported naming the file, instead of SIGXFSZ killing the process
  // without a word (half-written temporary files left behind).
  std::signal(SIGXFSZ, SIG_IGN);
  Options o;
  if (int code = parseArgs(argc, argv, o); code >= 0)
    return code;
  if (o.supervise)
    return run::supervise(
        argc, argv, {o.saveStateDir, o.resumeDir, o.repeat, o.maxRestarts});
  // Ctrl-C and SIGTERM stop training at a step boundary, from start-up on.
  InterruptScope interrupts;
  {
    trainc_world_config world;
    trainc_world_config_init(&world);
    world.collective_timeout_seconds = o.collectiveTimeout;
    world.deterministic_reductions = o.deterministicReductions;
    if (trainc_status s = trainc_world_init(&world, &gRank, &gWorldSize))
      return fail(take(s));
  }
  if (gWorldSize > 1) {
    // Rank 0 speaks and writes for the run; the others compute quietly.
    // Every rank still takes part in each save and output, at the same
    // step (ZeRO's parts are gathered); the library writes on rank 0 only.
    if (gRank != 0) {
      if (!std::freopen("/dev/null", "w", stdout))
        return fail("cannot silence the output of rank " +
                    std::to_string(gRank));
      o.progress = false;
      o.jsonlPath.clear();
    }
  }

  ExecutablePtr exe, evalExe;
  {
    trainc_executable *raw = nullptr;
    if (trainc_status s = trainc_executable_open(o.model.c_str(), &raw))
      return fail(take(s));
    exe.reset(raw);
  }
  if (o.doInspect) {
    char *text = nullptr;
    if (trainc_status s = trainc_executable_describe(exe.get(), &text))
      return fail(take(s));
    std::fputs(takeText(text).c_str(), stdout);
    return 0;
  }
  if (!o.evalExecutable.empty()) {
    trainc_executable *raw = nullptr;
    if (trainc_status s =
            trainc_executable_open(o.evalExecutable.c_str(), &raw))
      return fail(take(s));
    evalExe.reset(raw);
  }
  bool withData = !o.dataPaths.empty();
  // Rank 0 writes every file of the run, so only its paths must exist.
  if (std::string error = gRank == 0 ? checkOutputPaths(o) : ""; !error.empty())
    return fail(error);
  std::string onnxSource =
      o.onnxSource.empty() ? trainc_executable_source(exe.get()) : o.onnxSource;
  if (gRank == 0 && !o.onnxExportPath.empty() &&
      access(onnxSource.c_str(), R_OK) != 0)
    return fail("--export-onnx: the source model " +
                (onnxSource.empty() ? std::string("(none recorded)")
                                    : "'" + onnxSource + "'") +
                (o.onnxSource.empty() ? " recorded in " + o.model : "") +
                " cannot be read; give it with --onnx-source model.onnx");
  if (gRank == 0 && sameFile(onnxSource, o.onnxExportPath))
    return fail("--export-onnx " + o.onnxExportPath +
                " is the source model itself; write the trained model to "
                "another file");
  if (!o.resumeDir.empty()) {
    uint64_t seed = 0;
    if (trainc_status s =
            trainc_saved_run_info(o.resumeDir.c_str(), nullptr, &seed))
      return fail(take(s));
    if (o.seedGiven && seed != o.seed)
      return fail("--seed " + std::to_string(o.seed) +
                  " differs from the resumed run's seed " +
                  std::to_string(seed));
    o.seed = seed;
  }

  trainc_train_config config;
  trainc_train_config_init(&config);
  std::vector<const char *> paths;
  for (const std::string &p : o.dataPaths)
    paths.push_back(p.c_str());
  config.data_paths = paths.data();
  config.data_path_count = paths.size();
  config.data_format = o.dataFormat.c_str();
  config.bin_token_bytes = o.binTokenBytes;
  config.data_cache_dir =
      o.dataCacheDir.empty() ? nullptr : o.dataCacheDir.c_str();
  config.eval_fraction = o.evalFraction;
  config.eval_batches = o.evalBatches;
  config.seed = o.seed;
  config.peak_flops = o.peakFlops;
  config.tokens_input = o.tokensInput.empty() ? nullptr : o.tokensInput.c_str();
  config.targets_input =
      o.targetsInput.empty() ? nullptr : o.targetsInput.c_str();
  config.session.check_writes = o.checkWrites;
  config.session.profile = o.profile;
  // --check-writes reads every buffer on the host: the CPU.
  config.device =
      o.checkWrites && o.device == "auto" ? "cpu" : o.device.c_str();
  config.verify_steps = o.verifySteps;
  DataProgress dataProgress;
  config.data_progress = onDataProgress;
  config.data_progress_context = &dataProgress;
  config.spike_z = o.onSpike == "ignore" ? 0 : o.spikeZ;
  TrainerPtr trainer;
  {
    trainc_trainer *raw = nullptr;
    if (trainc_status s =
            trainc_trainer_create(exe.get(), evalExe.get(), &config, &raw))
      return fail(take(s));
    trainer.reset(raw);
  }
  trainc_session *session = trainc_trainer_session(trainer.get());
  // The model --export-onnx writes the trained weights into must take them:
  // a wrong one is found now, before training (and before the checkpoint
  // directory is made), not after it.
  if (!o.onnxExportPath.empty())
    if (trainc_status s = trainc_trainer_check_onnx_export(
            trainer.get(), onnxSource.c_str(), o.onnxExportPath.c_str()))
      return fail("--export-onnx: " + take(s));
  // Lock the checkpoint directory before any work: a second run on it, or
  // one that cannot be written, fails now rather than after training.
  if (!o.saveStateDir.empty())
    if (trainc_status s = trainc_trainer_use_checkpoint_dir(
            trainer.get(), o.saveStateDir.c_str(), int(o.keepLast)))
      return fail(take(s));
  // A fresh run, or one resumed from elsewhere, in a directory holding a
  // run's checkpoints would mix its own with them: a later --resume would
  // take one of either run's. (A checkpoint of step 0,
  // a run stopped before its first step, holds no training: every step
  // this run saves is newer.)
  if (!o.saveStateDir.empty() && !sameFile(o.saveStateDir, o.resumeDir)) {
    int64_t step = -1;
    if (trainc_status s =
            trainc_saved_run_info(o.saveStateDir.c_str(), &step, nullptr))
      trainc_status_free(s);
    else if (step > 0)
      return fail("failed precondition: --save-state " + o.saveStateDir +
                  " holds the checkpoints of another run (the newest at "
                  "step " +
                  std::to_string(step) + "): continue it with --resume " +
                  o.saveStateDir +
                  ", or give an empty directory (nothing was written)");
  }
  if (!o.resumeDir.empty()) {
    trainc_status s =
        trainc_trainer_restore(trainer.get(), o.resumeDir.c_str());
    std::string note = trainc_trainer_restore_note(trainer.get());
    size_t newline = note.find('\n');
    for (size_t at = newline; at != std::string::npos;) {
      size_t next = note.find('\n', at + 1);
      std::fprintf(stderr, "trainc-run: warning: %s\n",
                   note.substr(at + 1, next - at - 1).c_str());
      at = next;
    }
    if (s)
      return fail(take(s));
    std::printf("resumed: %s/%s at step %lld\n", o.resumeDir.c_str(),
                note.substr(0, newline).c_str(),
                (long long)trainc_trainer_step_count(trainer.get()));
  }

  if (!withData) {
    for (size_t i = 0; i < trainc_executable_input_count(exe.get()); ++i) {
      trainc_tensor_info info;
      if (trainc_status s = trainc_executable_input_info(exe.get(), i, &info))
        return fail(take(s));
      auto it = o.inputFiles.find(info.name);
      if (it == o.inputFiles.end())
        return fail(std::string("input '") + info.name +
                    "' is missing: give it with --input " + info.name +
                    "=FILE");
      if (trainc_status s =
              trainc_session_set_input_file(session, i, it->second.c_str()))
        return fail(take(s));
      o.inputFiles.erase(it);
    }
    if (!o.inputFiles.empty())
      return fail("--input names '" + o.inputFiles.begin()->first +
                  "', which is not an input of the executable");
  }

  std::vector<double> times;
  int64_t savedStep = -1; // a checkpoint of the final step exists already
  // Set when training stopped early but its weights are sound (Ctrl-C, a
  // log that could not be written): the outputs are still written, and the
  // exit code says it stopped.
  int stoppedCode = 0;
  if (o.training) {
    int64_t first = trainc_trainer_step_count(trainer.get());
    Reporter reporter({o.jsonlPath, o.progress, o.logEvery, gRank == 0},
                      trainer.get(), exe.get(), first, first + o.repeat);
    if (std::string error = reporter.open(); !error.empty())
      return fail(error);
    if (withData) {
      char *text = nullptr;
      if (trainc_status s = trainc_trainer_describe_data(trainer.get(), &text))
        return fail(take(s));
      std::string lines = takeText(text);
      size_t newline = lines.find('\n');
      std::printf("data: %s\n", lines.substr(0, newline).c_str());
      if (newline != std::string::npos)
        std::printf("%s, with %s\n", lines.substr(newline + 1).c_str(),
                    o.evalExecutable.c_str());
      std::fflush(stdout);
    }
    // Without --eval-every: after the last step only.
    int64_t evalEvery = !evalExe      ? 0
                        : o.evalEvery ? o.evalEvery
                                      : std::numeric_limits<int64_t>::max();
    Loop loop{&reporter, &times, trainer.get(), &o};
    // A signal during start-up stops the run before its first step. A
    // rollback (--on-spike/--on-nonfinite rollback) returns to the newest
    // checkpoint, keeps the data position, and runs the steps still to do.
    int64_t end = first + o.repeat;
    trainc_status status = nullptr;
    for (int rollbacks = 0; !gInterrupted;) {
      int64_t left = end - trainc_trainer_step_count(trainer.get());
      status = left > 0 ? trainc_trainer_run(trainer.get(), left, evalEvery,
                                             onStep, &loop)
                        : nullptr;
      if (status || !loop.rollbackAt)
        break;
      if (++rollbacks > kMaxRollbacks) {
        loop.rollbackError = "step " + std::to_string(loop.rollbackAt) +
                             " asks for a rollback after " +
                             std::to_string(kMaxRollbacks) + "; giving up";
        break;
      }
      if (trainc_status s =
              trainc_trainer_rollback(trainer.get(), o.saveStateDir.c_str())) {
        loop.rollbackError = take(s);
        break;
      }
      int64_t back = trainc_trainer_step_count(trainer.get());
      // Every rank rolls back to the same step: rank 0 says so.
      if (gRank == 0)
        std::fprintf(stderr,
                     "trainc-run: rolled back from step %lld to the "
                     "checkpoint of step %lld; the data of the steps between "
                     "is skipped\n",
                     (long long)loop.rollbackAt, (long long)back);
      if (std::string error = reporter.rewind(back); !error.empty()) {
        loop.logError = error;
        break;
      }
      loop.rollbackAt = 0;
      loop.savedStep = -1;
    }
    int64_t done = trainc_trainer_step_count(trainer.get());
    // The last background checkpoint must be on disk before anything else.
    if (trainc_status s = trainc_trainer_save_wait(trainer.get())) {
      if (loop.saveError.empty())
        loop.saveError = take(s);
      else
        trainc_status_free(s);
      --loop.saves; // The last save, counted when it started, failed.
      loop.savedStep = -1;
    }
    if (loop.diverged)
      return fail("training diverged: the loss is not finite at step " +
                  std::to_string(done) +
                  "; stopping without writing outputs (the weights are not "
                  "finite). Lower the learning rate or clip gradients "
                  "(trainc --clip-grad-norm).");
    if (!loop.logError.empty()) {
      std::fprintf(stderr,
                   "trainc-run: error: %s\ntrainc-run: stopped after step "
                   "%lld; writing what was asked for\n",
                   loop.logError.c_str(), (long long)done);
      stoppedCode = 1;
    } else if (loop.skippedInARow && !loop.stoppedAtSkip && !gInterrupted) {
      std::fprintf(stderr,
                   "trainc-run: error: training ended with %lld skipped "
                   "step(s) in a row (their loss or gradients are not "
                   "finite: the run has diverged); the weights are those "
                   "from before them. Lower the learning rate or clip "
                   "gradients (trainc --clip-grad-norm). Writing what was "
                   "asked for\n",
                   (long long)loop.skippedInARow);
      stoppedCode = 1;
    } else if (!loop.rollbackError.empty()) {
      std::fprintf(stderr,
                   "trainc-run: error: rollback: %s; writing what was asked "
                   "for\n",
                   loop.rollbackError.c_str());
      stoppedCode = 1;
    } else if (loop.stoppedAtSpike) {
      std::fprintf(stderr,
                   "trainc-run: error: stopped at the loss spike of step "
                   "%lld (--on-spike stop); writing what was asked for\n",
                   (long long)loop.stoppedAtSpike);
      stoppedCode = 1;
    } else if (loop.stoppedAtSkip) {
      std::fprintf(stderr,
                   "trainc-run: error: step %lld's loss or gradients are not "
                   "finite (%s); it was skipped, so the weights are those "
                   "from before it. Lower the learning rate or clip "
                   "gradients (trainc --clip-grad-norm). Writing what was "
                   "asked for\n",
                   (long long)loop.stoppedAtSkip,
                   o.stopOnNonFinite ? "--on-nonfinite stop"
                                     : "25 such steps in a row");
      stoppedCode = 1;
    } else if (!loop.saveError.empty()) {
      std::fprintf(stderr,
                   "trainc-run: error: %s\ntrainc-run: stopped after step "
                   "%lld (the previous checkpoint is intact); writing what "
                   "was asked for\n",
                   loop.saveError.c_str(), (long long)done);
      stoppedCode = 1;
    } else if (gInterrupted) {
      std::fprintf(stderr,
                   "\ntrainc-run: %s after step %lld; writing what was asked "
                   "for, then stopping\n",
                   gInterrupted == SIGTERM ? "terminated" : "interrupted",
                   (long long)done);
      stoppedCode = 128 + gInterrupted;
    } else if (status) {
      // A kernel failed mid-step: parameters may be half updated.
      return fail(take(status) + " (nothing was written)");
    }
    reporter.summary();
    savedStep = loop.savedStep;
    if (loop.spikes)
      std::printf("spikes: %lld step(s) with a loss spike\n",
                  (long long)loop.spikes);
    if (loop.overflows)
      std::printf("overflows: %lld step(s) skipped because the loss-scaled "
                  "gradients overflowed (the loss scale was halved each "
                  "time)\n",
                  (long long)loop.overflows);
    if (loop.skipped)
      std::printf("skipped: %lld step(s) with a loss or gradients that are "
                  "not finite (they changed no weights)\n",
                  (long long)loop.skipped);
    if (loop.saves)
      std::printf("checkpoints: %d during training, written in the "
                  "background; training waited %.3f s for them (%.3f s "
                  "each)\n",
                  loop.saves, loop.saveSeconds, loop.saveSeconds / loop.saves);
  } else {
    for (int64_t r = 0; r < o.repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      if (trainc_status s = trainc_session_run(session))
        return fail(take(s));
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
  }

  // Every requested output is attempted, even after one fails.
  int failures = 0;
  auto report = [&](trainc_status s) {
    if (!s)
      return true;
    fail(take(s));
    ++failures;
    return false;
  };
  if (!o.saveStateDir.empty() &&
      savedStep != trainc_trainer_step_count(trainer.get()))
    report(trainc_trainer_save(trainer.get(), o.saveStateDir.c_str()));
  if (!o.safetensorsPath.empty() &&
      report(trainc_trainer_save_safetensors(trainer.get(),
                                             o.safetensorsPath.c_str())))
    std::printf("parameters: %zu tensors -> %s\n",
                trainc_executable_parameter_count(exe.get()),
                o.safetensorsPath.c_str());
  if (!o.onnxExportPath.empty() &&
      report(trainc_trainer_export_onnx(trainer.get(), onnxSource.c_str(),
                                        o.onnxExportPath.c_str())))
    std::printf("onnx: %s with trained weights -> %s\n", onnxSource.c_str(),
                o.onnxExportPath.c_str());
  if (!withData || o.outputDirGiven) {
    for (size_t i = 0; i < trainc_executable_output_count(exe.get()); ++i) {
      trainc_tensor_info info;
      if (!report(trainc_executable_output_info(exe.get(), i, &info)))
        continue;
      std::string path = o.outputDir + "/" + fileNameFor(info.name) + ".npy";
      if (!report(trainc_session_write_output_npy(session, i, path.c_str())))
        continue;
      // The file holds the whole tensor (a split output is gathered).
      const int64_t *dims = info.dims;
      if (!report(trainc_executable_output_whole_dims(exe.get(), i, &dims)))
        continue;
      std::string shape = "[";
      for (size_t d = 0; d < info.rank; ++d)
        shape += (d ? ", " : "") + std::to_string(dims[d]);
      shape += "]";

      std::printf("%s: %s %s -> %s", info.name, trainc_dtype_name(info.dtype),
                  shape.c_str(), path.c_str());
      const void *data = nullptr;
      size_t bytes = 0;
      if (info.rank == 0 &&
          (info.dtype == TRAINC_F32 || info.dtype == TRAINC_F64) &&
          report(trainc_session_output(session, i, &data, &bytes))) {
        if (info.dtype == TRAINC_F32)
          std::printf(" = %.9g", *static_cast<const float *>(data));
        else
          std::printf(" = %.17g", *static_cast<const double *>(data));
      }
      std::printf("\n");
    }
  }
  if (o.profile) {
    char *text = nullptr;
    if (report(trainc_session_profile(session, 0, &text)))
      std::fputs(takeText(text).c_str(), stdout);
  }
  std::sort(times.begin(), times.end());
  // No run at all when a signal came before the first step.
  std::printf("run: median %.3f ms over %zu run(s); memory peak planned %llu, "
              "measured %llu bytes\n",
              times.empty() ? 0.0 : times[times.size() / 2], times.size(),
              (unsigned long long)trainc_executable_planned_bytes(exe.get()),
              (unsigned long long)trainc_session_measured_bytes(session));
  return failures ? 1 : stoppedCode;
}

} // namespace trainc
