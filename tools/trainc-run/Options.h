//===- Options.h - trainc-run's command line --------------------*- C++ -*-===//
//
// Every flag of trainc-run, its --help text and its checks: parsing
// happens before the run starts (and before MPI), so its errors are plain
// messages and an exit code.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_TRAINC_RUN_OPTIONS_H
#define TRAINC_TOOLS_TRAINC_RUN_OPTIONS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainc {

/// $XDG_CACHE_HOME/trainc/data, else $HOME/.cache/trainc/data, else "".
std::string defaultDataCacheDir();

/// The settings of one trainc-run, a field per flag (--help lists them).
struct Options {
  std::string model, outputDir = ".", saveStateDir, resumeDir;
  std::string safetensorsPath, onnxExportPath, onnxSource;
  std::string evalExecutable, jsonlPath;
  std::map<std::string, std::string> inputFiles;
  std::vector<std::string> dataPaths;
  std::string dataFormat = "auto", tokensInput, targetsInput;
  int binTokenBytes = 0;
  /// --data-cache: "" for none (--data-cache none).
  std::string dataCacheDir = defaultDataCacheDir();
  double evalFraction = 0.1, peakFlops = 0;
  uint64_t seed = 0;
  int64_t evalBatches = 16;
  bool checkWrites = false, profile = false;
  std::string device = "auto";
  int64_t verifySteps = 0;
  bool outputDirGiven = false, seedGiven = false, repeatGiven = false;
  bool keepLastGiven = false, maxRestartsGiven = false;
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

/// Parses the command line into `o`; returns -1 to go on, else an exit
/// code (0 after --help; 1 after an error, printed).
int parseArgs(int argc, char **argv, Options &o);

/// Whether two paths name the same existing file or directory (device and
/// inode, so other spellings of a path match).
bool sameFile(const std::string &a, const std::string &b);

/// Checks, before any work, that the outputs asked for can be written:
/// their directories exist (--save-state's is created). "" or the error.
std::string checkOutputPaths(const Options &o);

} // namespace trainc

#endif // TRAINC_TOOLS_TRAINC_RUN_OPTIONS_H
