//===- Options.cpp - trainc-run's command line ----------------------------===//

#include "Options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc {
namespace {

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
  --data FILE         train on the tokens or samples of FILE (repeat to
                      concatenate files of one format; a quoted pattern,
                      'shards/train_*.bin', gives the files it matches in
                      name order). Files are read a batch at a time, so
                      data may be larger than memory. Formats:
                        tokens: a trainc token file: "TRAINCTK", uint32
                                version 1, uint32 bytes per token (2 or 4),
                                uint64 count, then little-endian ids
                        bin:    headerless little-endian ids (--token-dtype)
                        bytes:  any file, one token per byte (ids 0-255)
                        samples: a .safetensors file of arrays named after
                                the executable's inputs, one sample per
                                index of their first axis (pixel_values
                                [N, 3, 32, 32] and labels [N]); each input
                                gets a batch of its array's samples, in a
                                shuffled order per epoch
                      Tokens fill the executable's token and target inputs
                      [batch, seq] with windows of the stream.
  --data-format F     auto (default: *.safetensors as samples, token files
                      by their magic, *.bin as bin, anything else as
                      bytes), tokens, bin, bytes or samples
  --token-dtype T     uint16 or uint32: the ids of headerless .bin files
  --data-cache DIR    where to keep what reading the data through found
                      (its checks and hash, a few numbers), so that the
                      next start or resume on the same unchanged files
                      skips that read; `none` keeps nothing (default:
                      $XDG_CACHE_HOME/trainc/data, else
                      ~/.cache/trainc/data); entries unused for 30 days
                      are removed
  --seed S            batch sampling seed (default 0); a batch depends only
                      on (seed, step), so runs are reproducible (samples:
                      the seed shuffles each epoch)
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
                      lr, step_time_s, tokens_per_s, samples_per_s,
                      flops_per_s, mfu,
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
                      newest. DIR is locked: a second run on it is
                      refused, and so is a run that does not --resume DIR
                      when DIR holds checkpoints of trained steps
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
                      and stops (a second one stops it at once); no restart
                      follows. Under mpirun, supervise
                      the whole job from outside instead
  --max-restarts R    with --supervise: give up after R restarts without
                      progress (default 3); restarts back off 1, 2, 4, ... s
  --resume DIR        continue from the checkpoint DIR/latest names (the
                      last save that completed and verified) or, if that
                      one does not load, the newest other one that does
                      (a warning names the damaged one): weights,
                      optimizer state, step count and data position; may
                      be the --save-state DIR
  --save-safetensors FILE
                      after the last run, write the parameters (the trained
                      weights, by their model names) as a .safetensors file
  --export-onnx FILE  after the last run, write the source ONNX model with
                      its initializers replaced by the trained weights; the
                      model is checked before the first step: each
                      parameter must be one of its initializers, of the
                      same type and shape
  --onnx-source FILE  the ONNX model to export from (default: the model the
                      executable was compiled from)

Several ranks (MODEL.tcx from `trainc ... --mesh data=N --data-parallel`,
launched with `mpirun -np N trainc-run MODEL.tcx ...`): every rank runs the
same command; rank i trains on part i of each global batch (--data: windows
or samples [i*B, (i+1)*B) of it; --input: the file holds the global batch). Rank 0
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

/// Prints an error about the command line; the exit code.
int fail(const std::string &message) {
  std::fprintf(stderr, "trainc-run: error: %s\n", message.c_str());
  return 1;
}

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

/// The directory part of `path` ("." for a bare name).
std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "."
         : slash == 0               ? "/"
                                    : path.substr(0, slash);
}

} // namespace

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
      o.dataFormat = v; // checked by the runtime, which reads the data
    } else if (arg == "--data-cache") {
      if (!value())
        return 1;
      std::string dir = v;
      if (dir.empty())
        return fail("--data-cache needs a directory, or `none`");
      o.dataCacheDir = dir == "none" ? "" : dir;
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
      o.maxRestartsGiven = true;
    } else if (arg == "--save-every") {
      if (!count(1, o.saveEvery))
        return 1;
    } else if (arg == "--keep-last") {
      if (!count(0, o.keepLast))
        return 1;
      o.keepLastGiven = true;
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
  // A flag that modifies another, given alone, would be ignored.
  if (o.keepLastGiven && o.saveStateDir.empty())
    return fail("--keep-last needs --save-state DIR (whose checkpoints it "
                "keeps)");
  if (o.maxRestartsGiven && !o.supervise)
    return fail("--max-restarts needs --supervise (it bounds the restarts)");
  if (!o.onnxSource.empty() && o.onnxExportPath.empty())
    return fail("--onnx-source needs --export-onnx FILE (it is the model "
                "the trained weights are written into)");
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

std::string defaultDataCacheDir() {
  const char *cache = std::getenv("XDG_CACHE_HOME");
  if (cache && *cache == '/')
    return std::string(cache) + "/trainc/data";
  const char *home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.cache/trainc/data" : "";
}

bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  return !a.empty() && !b.empty() && stat(a.c_str(), &sa) == 0 &&
         stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

std::string checkOutputPaths(const Options &o) {
  auto isDir = [](const std::string &dir) {
    struct stat st;
    return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  // An output that is an input (or another output) would destroy it: the
  // executable turned into a weights file, the data into JSON lines.
  std::vector<std::pair<std::string, std::string>> reads = {
      {"the executable", o.model},
      {"--eval-executable", o.evalExecutable},
      {"--onnx-source", o.onnxSource}};
  for (const auto &[name, file] : o.inputFiles)
    reads.push_back({"--input " + name, file});
  for (const std::string &file : o.dataPaths)
    reads.push_back({"--data", file});
  std::vector<std::pair<std::string, std::string>> writes = {
      {"--save-safetensors", o.safetensorsPath},
      {"--export-onnx", o.onnxExportPath},
      {"--log-jsonl", o.jsonlPath}};
  for (size_t w = 0; w < writes.size(); ++w) {
    const auto &[flag, out] = writes[w];
    if (out.empty())
      continue;
    for (const auto &[what, in] : reads)
      if (sameFile(out, in))
        return "failed precondition: " + flag + " " + out + " is " + what +
               " (" + in + "): writing it would destroy it";
    for (size_t v = 0; v < w; ++v)
      if (sameFile(out, writes[v].second))
        return "failed precondition: " + flag + " " + out +
               " is also the file of " + writes[v].first;
  }
  // (Another process may create it at the same moment.)
  if (!o.saveStateDir.empty() && !isDir(o.saveStateDir)) {
    struct stat st;
    if (stat(o.saveStateDir.c_str(), &st) == 0)
      return "failed precondition: --save-state " + o.saveStateDir +
             " is a file, not a directory";
    if (mkdir(o.saveStateDir.c_str(), 0777) != 0) {
      int error = errno; // before isDir's stat
      if (!isDir(o.saveStateDir))
        return std::string(error == ENOENT ? "not found"
                                           : "failed precondition") +
               ": --save-state " + o.saveStateDir +
               ": cannot create the directory: " + std::strerror(error);
    }
  }
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
  // Checked now, not when the outputs are written after training.
  if (o.outputDirGiven && access(o.outputDir.c_str(), W_OK) != 0)
    return "failed precondition: --output-dir " + o.outputDir +
           ": cannot write into it: " + std::strerror(errno);
  return "";
}

} // namespace trainc
