//===- Reporter.h - What trainc-run shows of a training run -----*- C++ -*-===//
//
// A progress bar with ETA on a terminal, plain lines otherwise (every
// --log-every-th step), and one JSON record per step in the --log-jsonl
// file. Written against the C API (trainc/runtime.h) alone.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_TRAINC_RUN_REPORTER_H
#define TRAINC_TOOLS_TRAINC_RUN_REPORTER_H

#include "trainc/runtime.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace trainc::run {

struct ReportOptions {
  /// Append one JSON record per step here ("" = none).
  std::string jsonlPath;
  /// Draw a progress bar when standard error is a terminal.
  bool progress = true;
  /// On a non-terminal, print every N-th step.
  int64_t logEvery = 1;
  /// Print warnings about the run (stragglers): rank 0 speaks for all.
  bool warnings = true;
};

/// "1.5s", "2m03s", "1h05m".
std::string duration(double seconds);

/// A JSON number, or null when not finite.
std::string jsonNumber(double value);

class Reporter {
public:
  /// Reports steps firstStep+1 .. lastStep of `trainer`, whose step
  /// executable is `step`.
  Reporter(const ReportOptions &options, trainc_trainer *trainer,
           const trainc_executable *step, int64_t firstStep, int64_t lastStep);
  ~Reporter();

  /// Opens the JSONL log, locked: another run writing it is refused (its
  /// records would be lost when this one rewrites the file); an error
  /// message, or "".
  std::string open();
  /// After a rollback to `step`: drops the log records after it (they are
  /// run again); an error message, or "".
  std::string rewind(int64_t step);
  /// After each step; an error message (the log could not be written), or "".
  std::string onStep(const trainc_step_metrics &m);
  /// The line after the last step.
  void summary() const;

private:
  bool writeRecord(const trainc_step_metrics &m);
  /// Holds an exclusive flock on the log file now at its path (a regular
  /// file, created when missing); an error message, or "".
  std::string lockLog();
  void drawBar(const trainc_step_metrics &m, double eta) const;
  void printLine(const trainc_step_metrics &m, double eta) const;

  const ReportOptions options_;
  trainc_trainer *trainer_;
  const trainc_executable *step_;
  int64_t firstStep_, lastStep_, tokensPerStep_, samplesPerStep_;
  std::chrono::steady_clock::time_point start_;
  bool bar_ = false;
  std::FILE *jsonl_ = nullptr;
  int lockFd_ = -1;
  std::vector<double> stepTimes_;
  double firstLoss_, lastLoss_, lastEval_;
  int64_t lastEvalStep_ = -1;
};

} // namespace trainc::run

#endif // TRAINC_TOOLS_TRAINC_RUN_REPORTER_H
