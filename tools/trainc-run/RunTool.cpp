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

constexpr const char *kUsage = R"(Usage: trainc-run MODEL.tcx [options]

Runs a trainc executable on the CPU or a GPU: once (writing its outputs as .npy
files), or as a training loop over a fixed batch (--input) or over batches
drawn from data files (--data).

Inputs and outputs:
  --input NAME=FILE   value of input NAME: a .npy file (dtype and shape must
                      match the executable) or raw little-endian bytes of
                      exactly the input's size; repeat for every input
  --output-dir DIR    where to write <output name>.npy, created when missing
                      (default: . ; with --data, outputs are written only
                      when this is given)
  --repeat N          run N times and report the median run time (default 1)
  --device D          where to run: auto (default: the GPU when this runtime
                      has CUDA and a GPU is present, else the CPU), cpu,
                      cuda (each rank takes the GPU of its local rank) or
                      cuda:N
  --verify-steps N    run the first N training steps also on the CPU, from
                      the same state and batches, and compare the loss,
                      the gradient norm and every parameter and optimizer
                      state tensor after each (relative L2 error against
                      the precision's limit); stop with an error naming
                      each tensor that differs. For checking a GPU
  --check-writes      debug mode: verify that no kernel writes outside its
                      result buffers (slow; CPU only)
  --inspect           print the executable's tensors, instructions and
                      memory plan, and exit
  --profile           time every instruction and print, at the end, the
                      time per run by op and by op and operand shapes (on
                      a GPU each instruction is waited for: slower runs,
                      but each time is that instruction's own); the first
                      run is left out when there are more (one-time costs)

Training (MODEL.tcx from `trainc model.onnx --train`):
  --steps N           run N training steps; parameters, optimizer state and
                      the learning-rate schedule carry over between steps
  --data FILE         train on the tokens of FILE (repeat to concatenate
                      files); batch and sequence length come from the
                      executable's token input [batch, seq]. Formats:
                        tokens: a trainc token file: "TRAINCTK", uint32
                                version 1, uint32 bytes per token (2 or 4),
                                uint64 count, then little-endian ids
                        bin:    headerless little-endian ids (--token-dtype)
                        bytes:  any file, one token per byte (ids 0-255)
  --data-format F     auto (default: token files by their magic, *.bin as
                      bin, anything else as bytes), tokens, bin or bytes
  --token-dtype T     uint16 or uint32: the ids of headerless .bin files
  --seed S            batch sampling seed (default 0); a batch depends only
                      on (seed, step), so runs are reproducible
  --eval-fraction F   share of the data held out for evaluation, taken from
                      its end (default 0.1)
  --eval-executable FILE
                      forward executable of the same model (`trainc
                      model.onnx -o FILE`) used to compute the held-out loss
                      with the current weights
  --eval-every M      evaluate every M steps and after the last (default:
                      only after the last)
  --eval-batches K    held-out batches per evaluation (default 16; 0 = all)
  --tokens-input NAME, --targets-input NAME
                      the inputs that take token and target ids (default:
                      those the compiler recorded in the executable's
                      training signature, inferred from the loss)
  --peak-flops F      the device's peak FLOP/s (e.g. 1.2e12) to report model
                      FLOPs utilization (FLOPs counted by the compiler)
  --log-jsonl FILE    append one JSON record per step (step, loss, grad_norm,
                      lr, step_time_s, tokens_per_s, flops_per_s, mfu,
                      memory, data_position, eval_loss); records of the steps
                      this run will do (after a resumed checkpoint's step,
                      or all for a fresh run) and a partial last line are
                      removed first, so no step is logged twice
  --log-every N       on a non-terminal, print every N-th step (default 1);
                      on a terminal a progress bar with ETA is drawn instead
  --no-progress       never draw the progress bar
  --save-state DIR    write checkpoints into DIR: after the last step, every
                      --save-every steps, and when stopped by Ctrl-C or
                      SIGTERM. A checkpoint (DIR/step-N/: the parameters
                      and optimizer state as one safetensors shard per
                      rank, and a checksummed manifest with step, seed,
                      data position and each tensor's parts) is
                      written atomically and durably; DIR/latest names the
                      newest. DIR is locked: a second run on it is refused
  --save-every N      also write a checkpoint every N steps, in the
                      background (training waits only for a copy of the
                      state); a kill loses at most 2 x N steps
  --on-nonfinite P    what to do after a step whose loss or gradients are
                      not finite (the executable skips such a step: no
                      weight or optimizer state changes): skip (default;
                      logged, and training stops after 25 in a row), stop
                      (stop at once; the outputs are written, with the
                      weights from before that step) or rollback (return to
                      the newest --save-state checkpoint and go on past the
                      data since it; at most 3 times)
  --keep-last K       keep the newest K checkpoints in DIR (default 3; 0:
                      all)
  --on-spike P        a loss spike is a step whose loss is more than
                      --spike-z standard deviations above the mean of the
                      last 64 (once 16 are known): warn (default; a warning
                      line and "spike":true in the JSONL), stop (stop
                      there with an error; the outputs are written),
                      rollback (return to the newest --save-state checkpoint
                      and go on past the data since it; at most 3 times) or
                      ignore
  --spike-z Z         the spike threshold (default 6)
  --supervise         run the training in a child process and, when it dies
                      (a signal such as kill -9 or an OOM kill, or a
                      non-zero exit after it made progress), restart it from
                      the newest checkpoint in the --save-state DIR until
                      the --steps are done; says why in each restart's line.
                      SIGINT/SIGTERM are passed to the child, which saves
                      and stops; no restart follows. Under mpirun, supervise
                      the whole job from outside instead
  --max-restarts R    with --supervise: give up after R restarts without
                      progress (default 3); restarts back off 1, 2, 4, ... s
  --resume DIR        continue from the newest checkpoint in DIR whose
                      checksums verify (a damaged newer one is skipped with
                      a warning): weights, optimizer state, step count and
                      data position; may be the --save-state DIR
  --save-safetensors FILE
                      after the last run, write the parameters (the trained
                      weights, by their model names) as a .safetensors file
  --export-onnx FILE  after the last run, write the source ONNX model with
                      its initializers replaced by the trained weights
  --onnx-source FILE  the ONNX model to export from (default: the model the
                      executable was compiled from)

Several ranks (MODEL.tcx from `trainc ... --mesh data=N --data-parallel`,
launched with `mpirun -np N trainc-run MODEL.tcx ...`): every rank runs the
same command; rank i trains on part i of each global batch (--data: windows
[i*B, (i+1)*B) of it; --input: the file holds the global batch). Rank 0
prints, logs and writes outputs; every rank writes its shard of each
checkpoint (with --zero, its parts) and rank 0 publishes it; a checkpoint
resumes on any number of ranks. An error on any rank ends the whole job.
  --collective-timeout S
                      fail (naming the step, the instruction and the ranks
                      that did not arrive) when a collective has waited S
                      seconds (default 300; 0: forever)
  --deterministic-reductions
                      sum gradients in rank order, so N ranks give the same
                      bits as one rank with `trainc --grad-accum N` (N times
                      the traffic)
  -h, --help          show this help
)";

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

struct Options {
  std::string model, outputDir = ".", saveStateDir, resumeDir;
  std::string safetensorsPath, onnxExportPath, onnxSource;
  std::string evalExecutable, jsonlPath;
  std::map<std::string, std::string> inputFiles;
  std::vector<std::string> dataPaths;
  std::string dataFormat = "auto", tokensInput, targetsInput;
  int binTokenBytes = 0;
  double evalFraction = 0.1, peakFlops = 0;
  uint64_t seed = 0;
  int64_t evalBatches = 16;
  bool checkWrites = false, profile = false;
  std::string device = "auto";
  int64_t verifySteps = 0;
  bool outputDirGiven = false, seedGiven = false, repeatGiven = false;
  bool doInspect = false, training = false, progress = true;
  int64_t repeat = 1, evalEvery = 0, logEvery = 1;
  int64_t saveEvery = 0, keepLast = 3;
  bool stopOnNonFinite = false, rollbackOnNonFinite = false;
  std::string onSpike = "warn";
  double spikeZ = 6;
  bool supervise = false;
  int64_t maxRestarts = 3;
  double collectiveTimeout = 300;
  bool deterministicReductions = false;
};

bool parseInt(const char *text, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno || end == text || *end)
    return false;
  out = v;
  return true;
}

bool parseDouble(const char *text, double &out) {
  char *end = nullptr;
  errno = 0;
  out = std::strtod(text, &end);
  return !errno && end != text && !*end && std::isfinite(out);
}

/// Parses the command line into `o`; returns -1 to go on, else an exit code.
int parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    const char *v = nullptr;
    // Flags that take a value read it through `value`.
    auto value = [&]() -> bool {
      if (i + 1 >= argc) {
        fail(arg + " needs a value");
        return false;
      }
      v = argv[++i];
      return true;
    };
    auto count = [&](int64_t min, int64_t &out) -> bool {
      if (!value())
        return false;
      if (!parseInt(v, out) || out < min) {
        fail(arg + " needs an integer >= " + std::to_string(min) + ", not '" +
             v + "'");
        return false;
      }
      return true;
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--input") {
      if (!value())
        return 1;
      std::string spec = v;
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return fail("--input '" + spec + "': expected NAME=FILE");
      if (!o.inputFiles.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
        return fail("--input gives '" + spec.substr(0, eq) + "' twice");
    } else if (arg == "--output-dir") {
      if (!value())
        return 1;
      o.outputDir = v;
      o.outputDirGiven = true;
    } else if (arg == "--repeat") {
      if (!count(1, o.repeat))
        return 1;
      o.repeatGiven = true;
    } else if (arg == "--steps") {
      if (!count(0, o.repeat))
        return 1;
      o.training = true;
    } else if (arg == "--data") {
      if (!value())
        return 1;
      o.dataPaths.push_back(v);
    } else if (arg == "--data-format") {
      if (!value())
        return 1;
      o.dataFormat = v;
      if (o.dataFormat != "auto" && o.dataFormat != "tokens" &&
          o.dataFormat != "bin" && o.dataFormat != "bytes")
        return fail("unknown data format '" + o.dataFormat +
                    "' (expected auto, tokens, bin or bytes)");
    } else if (arg == "--token-dtype") {
      if (!value())
        return 1;
      std::string t = v;
      if (t != "uint16" && t != "uint32")
        return fail("--token-dtype must be uint16 or uint32, not '" + t + "'");
      o.binTokenBytes = t == "uint16" ? 2 : 4;
    } else if (arg == "--seed") {
      int64_t seed;
      if (!count(0, seed))
        return 1;
      o.seed = uint64_t(seed);
      o.seedGiven = true;
    } else if (arg == "--eval-fraction") {
      if (!value())
        return 1;
      if (!parseDouble(v, o.evalFraction) || o.evalFraction < 0 ||
          o.evalFraction >= 1)
        return fail("--eval-fraction needs a number in [0, 1), not '" +
                    std::string(v) + "'");
    } else if (arg == "--eval-executable") {
      if (!value())
        return 1;
      o.evalExecutable = v;
    } else if (arg == "--eval-every") {
      if (!count(1, o.evalEvery))
        return 1;
    } else if (arg == "--eval-batches") {
      if (!count(0, o.evalBatches))
        return 1;
    } else if (arg == "--tokens-input") {
      if (!value())
        return 1;
      o.tokensInput = v;
    } else if (arg == "--targets-input") {
      if (!value())
        return 1;
      o.targetsInput = v;
    } else if (arg == "--peak-flops") {
      if (!value())
        return 1;
      if (!parseDouble(v, o.peakFlops) || o.peakFlops <= 0)
        return fail("--peak-flops needs a positive FLOP/s figure, not '" +
                    std::string(v) + "'");
    } else if (arg == "--log-jsonl") {
      if (!value())
        return 1;
      o.jsonlPath = v;
    } else if (arg == "--log-every") {
      if (!count(1, o.logEvery))
        return 1;
    } else if (arg == "--no-progress") {
      o.progress = false;
    } else if (arg == "--save-state") {
      if (!value())
        return 1;
      o.saveStateDir = v;
    } else if (arg == "--resume") {
      if (!value())
        return 1;
      o.resumeDir = v;
    } else if (arg == "--on-nonfinite") {
      if (!value())
        return 1;
      if (std::string(v) != "skip" && std::string(v) != "stop" &&
          std::string(v) != "rollback")
        return fail("--on-nonfinite needs skip, stop or rollback, not '" +
                    std::string(v) + "'");
      o.stopOnNonFinite = std::string(v) == "stop";
      o.rollbackOnNonFinite = std::string(v) == "rollback";
    } else if (arg == "--on-spike") {
      if (!value())
        return 1;
      o.onSpike = v;
      if (o.onSpike != "warn" && o.onSpike != "stop" &&
          o.onSpike != "rollback" && o.onSpike != "ignore")
        return fail("--on-spike needs warn, stop, rollback or ignore, not '" +
                    o.onSpike + "'");
    } else if (arg == "--spike-z") {
      if (!value())
        return 1;
      char *end = nullptr;
      o.spikeZ = std::strtod(v, &end);
      if (!end || *end || !(o.spikeZ > 0) || !std::isfinite(o.spikeZ))
        return fail("--spike-z needs a positive number, not '" +
                    std::string(v) + "'");
    } else if (arg == "--supervise") {
      o.supervise = true;
    } else if (arg == "--max-restarts") {
      if (!count(0, o.maxRestarts))
        return 1;
    } else if (arg == "--save-every") {
      if (!count(1, o.saveEvery))
        return 1;
    } else if (arg == "--keep-last") {
      if (!count(0, o.keepLast))
        return 1;
    } else if (arg == "--save-safetensors") {
      if (!value())
        return 1;
      o.safetensorsPath = v;
    } else if (arg == "--export-onnx") {
      if (!value())
        return 1;
      o.onnxExportPath = v;
    } else if (arg == "--onnx-source") {
      if (!value())
        return 1;
      o.onnxSource = v;
    } else if (arg == "--collective-timeout") {
      if (!value())
        return 1;
      if (!parseDouble(v, o.collectiveTimeout) || o.collectiveTimeout < 0)
        return fail("--collective-timeout needs a number of seconds >= 0, "
                    "not '" +
                    std::string(v) + "'");
    } else if (arg == "--deterministic-reductions") {
      o.deterministicReductions = true;
    } else if (arg == "--device") {
      if (!value())
        return 1;
      o.device = v;
    } else if (arg == "--verify-steps") {
      if (!value())
        return 1;
      if (!parseInt(v, o.verifySteps) || o.verifySteps < 0)
        return fail("--verify-steps needs a number of steps >= 0, not '" +
                    std::string(v) + "'");
    } else if (arg == "--check-writes") {
      o.checkWrites = true;
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (arg == "--inspect") {
      o.doInspect = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see trainc-run --help)");
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      return fail("more than one executable given ('" + o.model + "', '" + arg +
                  "')");
    }
  }
  if (o.model.empty())
    return fail("no executable given (see trainc-run --help)");
  if (o.saveEvery && o.saveStateDir.empty())
    return fail("--save-every needs --save-state DIR (where the checkpoints "
                "go)");
  if (o.training && o.repeat == 0 && o.resumeDir.empty())
    return fail("--steps 0 only makes sense with --resume DIR (to write the "
                "outputs of a checkpoint); give --steps N >= 1");
  if ((o.onSpike == "rollback" || o.rollbackOnNonFinite) &&
      o.saveStateDir.empty())
    return fail("rollback needs --save-state DIR (it returns to DIR's newest "
                "checkpoint)");
  if (o.supervise && (o.saveStateDir.empty() || !o.training))
    return fail("--supervise needs --steps N and --save-state DIR (it "
                "restarts the run from DIR's checkpoints)");
  if (!o.dataPaths.empty() && !o.inputFiles.empty())
    return fail("--data and --input both give inputs: use one");
  if (!o.dataPaths.empty() && !o.training)
    return fail("--data trains: give the number of steps with --steps N");
  if (!o.evalExecutable.empty() && o.dataPaths.empty())
    return fail("--eval-executable needs --data (it evaluates on the "
                "held-out part of the data)");
  if (o.evalEvery && o.evalExecutable.empty())
    return fail("--eval-every needs --eval-executable (the forward "
                "executable that computes the held-out loss)");
  if (o.repeatGiven && o.training)
    return fail("--repeat and --steps both set the number of runs: use one");
  return -1;
}

/// The signal that asked training to stop (SIGINT or SIGTERM), or 0.
volatile std::sig_atomic_t gInterrupted = 0;
extern "C" void onInterrupt(int signal) { gInterrupted = signal; }

/// While alive: the first Ctrl-C or SIGTERM (a scheduler's preemption,
/// `timeout`, systemd) sets gInterrupted: training stops after the current
/// step and still writes its outputs and a checkpoint. The handler then
/// resets itself, so a second signal stops the process at once (a save in
/// progress then leaves the previous checkpoint intact). An inherited
/// "ignore" (a background job) is left alone.
class InterruptScope {
public:
  InterruptScope() {
    gInterrupted = 0;
    for (int i = 0; i < 2; ++i) {
      sigaction(kSignals[i], nullptr, &previous_[i]);
      if (previous_[i].sa_handler == SIG_IGN)
        continue;
      struct sigaction now;
      std::memset(&now, 0, sizeof now);
      now.sa_handler = onInterrupt;
      now.sa_flags = SA_RESETHAND;
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

/// The directory part of `path` ("." for a bare name).
std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "."
         : slash == 0               ? "/"
                                    : path.substr(0, slash);
}

/// Checks, before any work, that the outputs asked for can be written:
/// their directories exist (--save-state's is created).
std::string checkOutputPaths(const Options &o) {
  auto isDir = [](const std::string &dir) {
    struct stat st;
    return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  // (Another process may create it at the same moment.)
  if (!o.saveStateDir.empty() && !isDir(o.saveStateDir) &&
      mkdir(o.saveStateDir.c_str(), 0777) != 0 && !isDir(o.saveStateDir))
    return "not found: " + std::string("--save-state " + o.saveStateDir +
                                       ": cannot create the directory: " +
                                       std::strerror(errno));
  for (const std::string *file : {&o.safetensorsPath, &o.onnxExportPath}) {
    if (file->empty())
      continue;
    if (!isDir(parentOf(*file)))
      return "not found: " + std::string(*file + ": the directory " +
                                         parentOf(*file) + " does not exist");
    if (isDir(*file))
      return "failed precondition: " + *file +
             " is a directory; give the path of the file to write";
    if (access(parentOf(*file).c_str(), W_OK) != 0)
      return "failed precondition: " + *file + ": cannot write into " +
             parentOf(*file) + ": " + std::strerror(errno);
  }
  // A missing output directory is created (with its parents), as
  // `mkdir -p` would; an existing non-directory is an error.
  if (o.outputDirGiven && !isDir(o.outputDir)) {
    for (size_t slash = o.outputDir.find('/', 1);;
         slash = o.outputDir.find('/', slash + 1)) {
      std::string prefix = o.outputDir.substr(0, slash);
      struct stat st;
      if (stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        return "not found: " +
               std::string("--output-dir " + o.outputDir + ": " + prefix +
                           " is not a directory");
      // Another rank (or process) may create it at the same moment.
      if (!isDir(prefix) && mkdir(prefix.c_str(), 0777) != 0 &&
          !(errno == EEXIST && isDir(prefix)))
        return "not found: " +
               std::string("--output-dir " + o.outputDir + ": cannot create " +
                           prefix + ": " + std::strerror(errno));
      if (slash == std::string::npos)
        break;
    }
  }
  return "";
}

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
  /// Checkpoints written during training, and the seconds training waited.
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
      loop.saveError = take(s);
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

} // namespace

int runRunTool(int argc, char **argv) {
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
  if (gRank == 0 && !o.onnxExportPath.empty()) {
    struct stat source, target;
    if (stat(onnxSource.c_str(), &source) == 0 &&
        stat(o.onnxExportPath.c_str(), &target) == 0 &&
        source.st_dev == target.st_dev && source.st_ino == target.st_ino)
      return fail("--export-onnx " + o.onnxExportPath +
                  " is the source model itself; write the trained model to "
                  "another file");
  }
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
  // Lock the checkpoint directory before any work: a second run on it, or
  // one that cannot be written, fails now rather than after training.
  if (!o.saveStateDir.empty())
    if (trainc_status s = trainc_trainer_use_checkpoint_dir(
            trainer.get(), o.saveStateDir.c_str(), int(o.keepLast)))
      return fail(take(s));
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
      std::fprintf(stderr,
                   "trainc-run: rolled back from step %lld to the checkpoint "
                   "of step %lld; the data of the steps between is skipped\n",
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
