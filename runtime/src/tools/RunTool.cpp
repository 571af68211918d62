//===- RunTool.cpp - The trainc-run command line --------------------------===//
//
// trainc-run model.tcx --input NAME=FILE ... [--output-dir DIR]
//   runs an executable on the CPU device with inputs from .npy files (dtype
//   and shape checked) or raw files (size checked) and writes every output
//   as DIR/<name>.npy; with --steps N it runs N training steps on them.
// trainc-run step.tcx --data FILE... --steps N [--eval-executable fwd.tcx]
//   trains on batches drawn from token or text files (train/Trainer.h),
//   with a progress bar on a terminal, plain lines otherwise, a JSONL log,
//   and the trained weights as safetensors and ONNX at the end.
// --inspect prints the executable instead.
//
//===----------------------------------------------------------------------===//

#include "tools/RunTool.h"

#include "tools/Reporter.h"

#include "exec/Describe.h"
#include "exec/Session.h"
#include "io/AtomicFile.h"
#include "io/Json.h"
#include "io/Npy.h"
#include "io/OnnxExport.h"
#include "io/SafeTensors.h"
#include "train/RunState.h"
#include "train/Trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc {
namespace {

constexpr const char *kUsage = R"(Usage: trainc-run MODEL.tcx [options]

Runs a trainc executable on the CPU: once (writing its outputs as .npy
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
  --check-writes      debug mode: verify that no kernel writes outside its
                      result buffers (slow)
  --inspect           print the executable's tensors, instructions and
                      memory plan, and exit
  --profile           time every instruction and print, at the end, the
                      time per run by op and by op and operand shapes

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
                      memory, data_position, eval_loss)
  --log-every N       on a non-terminal, print every N-th step (default 1);
                      on a terminal a progress bar with ETA is drawn instead
  --no-progress       never draw the progress bar
  --save-state DIR    after the last step, write every parameter and
                      optimizer state as DIR/<name>.npy and the run state
                      (step, seed, data position) as DIR/run_state.json
  --resume DIR        start from a --save-state directory: weights, optimizer
                      state, step count and data position
  --save-safetensors FILE
                      after the last run, write the parameters (the trained
                      weights, by their model names) as a .safetensors file
  --export-onnx FILE  after the last run, write the source ONNX model with
                      its initializers replaced by the trained weights
  --onnx-source FILE  the ONNX model to export from (default: the model the
                      executable was compiled from)
  -h, --help          show this help
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "trainc-run: error: %s\n", message.c_str());
  return 1;
}

/// Loads the bytes for input `index` from `file`.
Status loadInput(const Executable &exe, size_t index, const std::string &file,
                 std::vector<char> &bytes) {
  const TensorInfo &t = exe.tensors()[exe.inputs()[index]];
  if (file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0) {
    NpyArray array;
    TRAINC_RETURN_IF_ERROR(readNpy(file, array));
    if (array.dtype != t.dtype || array.shape != t.shape)
      return invalidArgument(file + " holds " + dtypeName(array.dtype) + " " +
                             shapeString(array.shape) + " but input '" +
                             t.name + "' is " + dtypeName(t.dtype) + " " +
                             shapeString(t.shape));
    bytes = std::move(array.data);
    return okStatus();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return notFound(file + ": cannot open");
  bytes.assign(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
  if (bytes.size() != t.size)
    return invalidArgument(file + " has " + std::to_string(bytes.size()) +
                           " bytes but input '" + t.name + "' (" +
                           dtypeName(t.dtype) + " " + shapeString(t.shape) +
                           ") needs " + std::to_string(t.size));
  return okStatus();
}

/// A file name for an output: its name with path separators replaced.
std::string fileNameFor(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return s.empty() ? "output" : s;
}

struct Options {
  std::string model, outputDir = ".", saveStateDir, resumeDir;
  std::string safetensorsPath, onnxExportPath, onnxSource;
  std::string evalExecutable, jsonlPath;
  std::map<std::string, std::string> inputFiles;
  TokenDataOptions data;
  TrainerOptions trainer;
  bool outputDirGiven = false, seedGiven = false, repeatGiven = false;
  bool doInspect = false, training = false, progress = true;
  int64_t repeat = 1, evalEvery = 0, logEvery = 1;
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
  o.trainer.evalBatches = 16;
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
      if (!count(1, o.repeat))
        return 1;
      o.training = true;
    } else if (arg == "--data") {
      if (!value())
        return 1;
      o.data.paths.push_back(v);
    } else if (arg == "--data-format") {
      if (!value())
        return 1;
      Status s = parseTokenFormat(v, o.data.format);
      if (!s.ok())
        return fail(s.message());
    } else if (arg == "--token-dtype") {
      if (!value())
        return 1;
      std::string t = v;
      if (t != "uint16" && t != "uint32")
        return fail("--token-dtype must be uint16 or uint32, not '" + t + "'");
      o.data.binTokenBytes = t == "uint16" ? 2 : 4;
    } else if (arg == "--seed") {
      int64_t seed;
      if (!count(0, seed))
        return 1;
      o.trainer.seed = uint64_t(seed);
      o.seedGiven = true;
    } else if (arg == "--eval-fraction") {
      if (!value())
        return 1;
      if (!parseDouble(v, o.data.evalFraction) || o.data.evalFraction < 0 ||
          o.data.evalFraction >= 1)
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
      if (!count(0, o.trainer.evalBatches))
        return 1;
    } else if (arg == "--tokens-input") {
      if (!value())
        return 1;
      o.trainer.tokensInput = v;
    } else if (arg == "--targets-input") {
      if (!value())
        return 1;
      o.trainer.targetsInput = v;
    } else if (arg == "--peak-flops") {
      if (!value())
        return 1;
      if (!parseDouble(v, o.trainer.peakFlops) || o.trainer.peakFlops <= 0)
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
    } else if (arg == "--check-writes") {
      o.trainer.session.checkWrites = true;
    } else if (arg == "--profile") {
      o.trainer.session.profile = true;
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
  if (!o.data.paths.empty() && !o.inputFiles.empty())
    return fail("--data and --input both give inputs: use one");
  if (!o.data.paths.empty() && !o.training)
    return fail("--data trains: give the number of steps with --steps N");
  if (!o.evalExecutable.empty() && o.data.paths.empty())
    return fail("--eval-executable needs --data (it evaluates on the "
                "held-out part of the data)");
  if (o.evalEvery && o.evalExecutable.empty())
    return fail("--eval-every needs --eval-executable (the forward "
                "executable that computes the held-out loss)");
  if (o.repeatGiven && o.training)
    return fail("--repeat and --steps both set the number of runs: use one");
  return -1;
}

volatile std::sig_atomic_t gInterrupted = 0;
extern "C" void onInterrupt(int) { gInterrupted = 1; }

/// While alive: the first Ctrl-C sets gInterrupted (training stops after
/// the current step and still writes its outputs); the handler then resets
/// itself, so a second Ctrl-C stops the process at once. An inherited
/// "ignore" (a background job) is left alone.
class InterruptScope {
public:
  InterruptScope() {
    gInterrupted = 0;
    struct sigaction now;
    sigaction(SIGINT, nullptr, &previous_);
    if (previous_.sa_handler == SIG_IGN)
      return;
    std::memset(&now, 0, sizeof now);
    now.sa_handler = onInterrupt;
    now.sa_flags = SA_RESETHAND;
    sigemptyset(&now.sa_mask);
    sigaction(SIGINT, &now, nullptr);
  }
  ~InterruptScope() { sigaction(SIGINT, &previous_, nullptr); }

private:
  struct sigaction previous_;
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
Status checkOutputPaths(const Options &o) {
  auto isDir = [](const std::string &dir) {
    struct stat st;
    return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  if (!o.saveStateDir.empty() && !isDir(o.saveStateDir) &&
      mkdir(o.saveStateDir.c_str(), 0777) != 0)
    return notFound("--save-state " + o.saveStateDir +
                    ": cannot create the directory: " + std::strerror(errno));
  for (const std::string *file : {&o.safetensorsPath, &o.onnxExportPath})
    if (!file->empty() && !isDir(parentOf(*file)))
      return notFound(*file + ": the directory " + parentOf(*file) +
                      " does not exist");
  // A missing output directory is created (with its parents), as
  // `mkdir -p` would; an existing non-directory is an error.
  if (o.outputDirGiven && !isDir(o.outputDir)) {
    for (size_t slash = o.outputDir.find('/', 1);;
         slash = o.outputDir.find('/', slash + 1)) {
      std::string prefix = o.outputDir.substr(0, slash);
      struct stat st;
      if (stat(prefix.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        return notFound("--output-dir " + o.outputDir + ": " + prefix +
                        " is not a directory");
      if (!isDir(prefix) && mkdir(prefix.c_str(), 0777) != 0)
        return notFound("--output-dir " + o.outputDir + ": cannot create " +
                        prefix + ": " + std::strerror(errno));
      if (slash == std::string::npos)
        break;
    }
  }
  return okStatus();
}

Status loadExecutable(const std::string &path,
                      std::shared_ptr<const Executable> &out) {
  std::unique_ptr<Executable> loaded;
  TRAINC_RETURN_IF_ERROR(Executable::load(path, loaded));
  out = std::move(loaded);
  return okStatus();
}

} // namespace

int runRunTool(int argc, char **argv) {
  Options o;
  if (int code = parseArgs(argc, argv, o); code >= 0)
    return code;

  std::shared_ptr<const Executable> exe, evalExe;
  Status status = loadExecutable(o.model, exe);
  if (!status.ok())
    return fail(status.toString());
  if (o.doInspect) {
    std::fputs(describeExecutable(*exe).c_str(), stdout);
    return 0;
  }
  if (!o.evalExecutable.empty()) {
    status = loadExecutable(o.evalExecutable, evalExe);
    if (!status.ok())
      return fail(status.toString());
  }
  bool withData = !o.data.paths.empty();
  status = checkOutputPaths(o);
  if (!status.ok())
    return fail(status.toString());
  std::string onnxSource = o.onnxSource.empty() ? exe->source() : o.onnxSource;
  if (!o.onnxExportPath.empty() && access(onnxSource.c_str(), R_OK) != 0)
    return fail("--export-onnx: the source model " +
                (onnxSource.empty() ? std::string("(none recorded)")
                                    : "'" + onnxSource + "'") +
                (o.onnxSource.empty() ? " recorded in " + o.model : "") +
                " cannot be read; give it with --onnx-source model.onnx");
  RunState resumed;
  if (!o.resumeDir.empty()) {
    status = readRunState(o.resumeDir, resumed);
    if (!status.ok())
      return fail(status.toString());
    if (o.seedGiven && resumed.seed != o.trainer.seed)
      return fail("--seed " + std::to_string(o.trainer.seed) +
                  " differs from the resumed run's seed " +
                  std::to_string(resumed.seed));
    o.trainer.seed = resumed.seed;
  }

  std::unique_ptr<TokenData> data;
  if (withData) {
    status = TokenData::open(o.data, data);
    if (!status.ok())
      return fail(status.toString());
  }
  std::unique_ptr<Trainer> trainer;
  status = Trainer::create(exe, evalExe, data.get(), o.trainer, trainer);
  if (!status.ok())
    return fail(status.toString());
  Session &session = trainer->session();
  if (!o.resumeDir.empty()) {
    status = restoreRun(o.resumeDir, *trainer, data.get());
    if (!status.ok())
      return fail(status.toString());
  }

  if (!withData) {
    for (size_t i = 0; i < exe->inputs().size(); ++i) {
      const std::string &name = exe->tensors()[exe->inputs()[i]].name;
      auto it = o.inputFiles.find(name);
      if (it == o.inputFiles.end())
        return fail("input '" + name + "' is missing: give it with --input " +
                    name + "=FILE");
      std::vector<char> bytes;
      status = loadInput(*exe, i, it->second, bytes);
      if (status.ok())
        status = session.setInput(i, bytes.data(), bytes.size());
      if (!status.ok())
        return fail(status.toString());
      o.inputFiles.erase(it);
    }
    if (!o.inputFiles.empty())
      return fail("--input names '" + o.inputFiles.begin()->first +
                  "', which is not an input of the executable");
  }

  std::vector<double> times;
  // Set when training stopped early but its weights are sound (Ctrl-C, a
  // log that could not be written): the outputs are still written, and the
  // exit code says it stopped.
  int stoppedCode = 0;
  if (o.training) {
    int64_t first = session.stepCount();
    Reporter reporter({o.jsonlPath, o.progress, o.logEvery}, *trainer, first,
                      first + o.repeat);
    status = reporter.open();
    if (!status.ok())
      return fail(status.toString());
    if (data) {
      std::printf("data: %s; batch %lld x %lld tokens\n",
                  data->description().c_str(), (long long)trainer->batch(),
                  (long long)trainer->sequence());
      if (evalExe)
        std::printf("held-out loss: %lld batches, with %s\n",
                    (long long)trainer->evalBatchesPerEvaluation(),
                    o.evalExecutable.c_str());
      std::fflush(stdout);
    }
    // Without --eval-every: after the last step only.
    int64_t evalEvery = !evalExe      ? 0
                        : o.evalEvery ? o.evalEvery
                                      : std::numeric_limits<int64_t>::max();
    Status logError;
    bool diverged = false;
    {
      InterruptScope interrupts;
      status = trainer->run(o.repeat, evalEvery, [&](const StepMetrics &m) {
        times.push_back(m.stepSeconds * 1e3);
        logError = reporter.onStep(m, trainer->state().dataPosition);
        if (!logError.ok())
          return logError;
        if (m.hasLoss && !std::isfinite(m.loss)) {
          diverged = true;
          return Status(StatusCode::kFailedPrecondition, "diverged");
        }
        if (gInterrupted)
          return Status(StatusCode::kUnavailable, "interrupted");
        return okStatus();
      });
    }
    if (diverged)
      return fail("training diverged: the loss is not finite at step " +
                  std::to_string(trainer->state().step) +
                  "; stopping without writing outputs (the weights are not "
                  "finite). Lower the learning rate or clip gradients "
                  "(trainc --clip-grad-norm).");
    if (!logError.ok()) {
      std::fprintf(stderr,
                   "trainc-run: error: %s\ntrainc-run: stopped after step "
                   "%lld; writing what was asked for\n",
                   logError.toString().c_str(),
                   (long long)trainer->state().step);
      stoppedCode = 1;
    } else if (gInterrupted) {
      std::fprintf(stderr,
                   "\ntrainc-run: interrupted after step %lld; writing what "
                   "was asked for, then stopping\n",
                   (long long)trainer->state().step);
      stoppedCode = 130;
    } else if (!status.ok()) {
      // A kernel failed mid-step: parameters may be half updated.
      return fail(status.toString() + " (nothing was written)");
    }
    reporter.summary();
  } else {
    for (int64_t r = 0; r < o.repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      status = session.run();
      if (!status.ok())
        return fail(status.toString());
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
  }

  // Every requested output is attempted, even after one fails.
  int failures = 0;
  auto report = [&](const Status &s) {
    if (!s.ok()) {
      fail(s.toString());
      ++failures;
    }
  };
  if (!o.saveStateDir.empty())
    report(saveRun(o.saveStateDir, *trainer, data.get()));
  if (!o.safetensorsPath.empty()) {
    std::vector<NamedTensor> weights = parameterTensors(session);
    status = writeSafetensors(o.safetensorsPath, weights);
    report(status);
    if (status.ok())
      std::printf("parameters: %zu tensors -> %s\n", weights.size(),
                  o.safetensorsPath.c_str());
  }
  if (!o.onnxExportPath.empty()) {
    status = exportOnnxWithWeights(onnxSource, o.onnxExportPath,
                                   parameterTensors(session));
    report(status);
    if (status.ok())
      std::printf("onnx: %s with trained weights -> %s\n", onnxSource.c_str(),
                  o.onnxExportPath.c_str());
  }
  if (!withData || o.outputDirGiven) {
    for (size_t i = 0; i < exe->outputs().size(); ++i) {
      const TensorInfo &t = exe->tensors()[exe->outputs()[i]];
      cpu::TensorRef out = session.output(i);
      std::string path = o.outputDir + "/" + fileNameFor(t.name) + ".npy";
      status = writeNpy(path, t.dtype, t.shape, out.data, t.size);
      report(status);
      if (!status.ok())
        continue;
      std::printf("%s: %s %s -> %s", t.name.c_str(), dtypeName(t.dtype),
                  shapeString(t.shape).c_str(), path.c_str());
      if (t.shape.empty() && t.dtype == DType::F32)
        std::printf(" = %.9g", *static_cast<float *>(out.data));
      else if (t.shape.empty() && t.dtype == DType::F64)
        std::printf(" = %.17g", *static_cast<double *>(out.data));
      std::printf("\n");
    }
  }
  if (o.trainer.session.profile)
    std::fputs(profileReport(session, times.size()).c_str(), stdout);
  std::sort(times.begin(), times.end());
  std::printf("run: median %.3f ms over %zu run(s); memory peak planned %llu, "
              "measured %llu bytes\n",
              times[times.size() / 2], times.size(),
              (unsigned long long)exe->memoryPlan().peak,
              (unsigned long long)session.measuredPeak());
  return failures ? 1 : stoppedCode;
}

} // namespace trainc
