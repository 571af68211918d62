//===- Reporter.h - What trainc-run shows of a training run -----*- C++ -*-===//
//
// A progress bar with ETA on a terminal, plain lines otherwise (every
// --log-every-th step), and one JSON record per step in the --log-jsonl
// file.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TOOLS_REPORTER_H
#define TRAINC_RUNTIME_TOOLS_REPORTER_H

#include "io/Json.h"
#include "train/Trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace trainc {

struct ReportOptions {
  /// Append one JSON record per step here ("" = none).
  std::string jsonlPath;
  /// Draw a progress bar when standard error is a terminal.
  bool progress = true;
  /// On a non-terminal, print every N-th step.
  int64_t logEvery = 1;
};

/// "1.5s", "2m03s", "1h05m".
std::string duration(double seconds);

/// What the user sees of a training run: a progress bar with ETA on a
/// terminal, plain lines otherwise, and the JSONL log.
class Reporter {
public:
  Reporter(const ReportOptions &o, const Trainer &trainer, int64_t firstStep,
           int64_t lastStep)
      : o_(o), trainer_(trainer), firstStep_(firstStep), lastStep_(lastStep),
        start_(std::chrono::steady_clock::now()) {
    bar_ = o.progress && isatty(STDERR_FILENO);
  }

  Status open() {
    if (o_.jsonlPath.empty())
      return okStatus();
    jsonl_ = std::fopen(o_.jsonlPath.c_str(), "a");
    if (!jsonl_)
      return notFound(o_.jsonlPath +
                      ": cannot open the JSONL log: " + std::strerror(errno));
    return okStatus();
  }
  ~Reporter() {
    if (jsonl_)
      std::fclose(jsonl_);
  }

  Status onStep(const StepMetrics &m, uint64_t dataPosition) {
    stepTimes_.push_back(m.stepSeconds);
    if (std::isnan(firstLoss_))
      firstLoss_ = m.loss;
    lastLoss_ = m.loss;
    if (m.evaluated) {
      lastEval_ = m.evalLoss;
      lastEvalStep_ = m.step;
    }
    if (jsonl_ && !writeRecord(m, dataPosition))
      return Status(StatusCode::kDataLoss,
                    o_.jsonlPath + ": cannot write the JSONL log: " +
                        std::strerror(errno));
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    int64_t done = m.step - firstStep_;
    double eta = elapsed / double(done) * double(lastStep_ - m.step);
    if (bar_) {
      drawBar(m, eta);
      if (m.evaluated) {
        std::fprintf(stderr, "\r\033[K");
        std::printf("step %lld: eval_loss %.6g\n", (long long)m.step,
                    m.evalLoss);
        std::fflush(stdout);
        drawBar(m, eta);
      }
      if (m.step == lastStep_)
        std::fputc('\n', stderr);
      return okStatus();
    }
    if (m.step % o_.logEvery != 0 && m.step != lastStep_ && !m.evaluated)
      return okStatus();
    std::string line = "step " + std::to_string(m.step) + ":";
    const Executable &exe = trainer_.executable();
    // The executable's scalar outputs first, by name, in its order.
    for (size_t i = 0; i < exe.outputs().size(); ++i) {
      const TensorInfo &t = exe.tensors()[exe.outputs()[i]];
      const cpu::TensorRef out = trainer_.session().output(i);
      char buf[64];
      if (t.shape.empty() && t.dtype == DType::F32)
        std::snprintf(buf, sizeof buf, " %s %.9g", t.name.c_str(),
                      *static_cast<float *>(out.data));
      else if (t.shape.empty() && t.dtype == DType::F64)
        std::snprintf(buf, sizeof buf, " %s %.17g", t.name.c_str(),
                      *static_cast<double *>(out.data));
      else
        continue;
      line += buf;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, " step_ms %.2f", m.stepSeconds * 1e3);
    line += buf;
    if (trainer_.tokensPerStep()) {
      std::snprintf(buf, sizeof buf, " tokens/s %.0f", m.tokensPerSecond);
      line += buf;
    }
    if (!std::isnan(m.mfu)) {
      std::snprintf(buf, sizeof buf, " mfu %.2f%%", 100 * m.mfu);
      line += buf;
    }
    if (m.evaluated) {
      std::snprintf(buf, sizeof buf, " eval_loss %.9g", m.evalLoss);
      line += buf;
    }
    if (m.step != lastStep_)
      line += " eta " + duration(eta);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    return okStatus();
  }

  void summary() const {
    if (stepTimes_.empty())
      return;
    std::vector<double> t = stepTimes_;
    std::sort(t.begin(), t.end());
    double median = t[t.size() / 2];
    double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    std::printf("trained %zu step(s) in %s: loss %.4f -> %.4f", t.size(),
                duration(total).c_str(), firstLoss_, lastLoss_);
    if (lastEvalStep_ >= 0)
      std::printf(", held-out loss %.4f (after step %lld)", lastEval_,
                  (long long)lastEvalStep_);
    std::printf("; median step %.2f ms", median * 1e3);
    if (trainer_.tokensPerStep())
      std::printf(", %.0f tokens/s", double(trainer_.tokensPerStep()) / median);
    std::printf("\n");
  }

private:
  bool writeRecord(const StepMetrics &m, uint64_t dataPosition) {
    std::string r = "{\"step\":" + std::to_string(m.step) +
                    ",\"loss\":" + jsonNumber(m.loss) +
                    ",\"grad_norm\":" + jsonNumber(m.gradNorm) +
                    ",\"lr\":" + jsonNumber(m.learningRate) +
                    ",\"step_time_s\":" + jsonNumber(m.stepSeconds) +
                    ",\"tokens_per_s\":" + jsonNumber(m.tokensPerSecond) +
                    ",\"flops_per_s\":" + jsonNumber(m.flopsPerSecond) +
                    ",\"mfu\":" + jsonNumber(m.mfu) +
                    ",\"planned_bytes\":" + std::to_string(m.plannedBytes) +
                    ",\"measured_bytes\":" + std::to_string(m.measuredBytes) +
                    ",\"peak_rss_bytes\":" + std::to_string(m.peakRssBytes) +
                    ",\"data_position\":" + std::to_string(dataPosition);
    if (m.evaluated) // null when not finite
      r += ",\"eval_loss\":" + jsonNumber(m.evalLoss);
    r += "}\n";
    return std::fputs(r.c_str(), jsonl_) >= 0 && std::fflush(jsonl_) == 0;
  }

  void drawBar(const StepMetrics &m, double eta) const {
    constexpr int kWidth = 30;
    double frac = double(m.step - firstStep_) / double(lastStep_ - firstStep_);
    int filled = int(frac * kWidth);
    std::string bar(size_t(filled), '=');
    if (filled < kWidth)
      bar += '>' + std::string(size_t(kWidth - filled - 1), ' ');
    std::fprintf(stderr, "\r\033[K%lld/%lld [%s] %3.0f%% loss %.4f",
                 (long long)m.step, (long long)lastStep_, bar.c_str(),
                 100 * frac, m.loss);
    if (trainer_.tokensPerStep())
      std::fprintf(stderr, " | %.0f tok/s", m.tokensPerSecond);
    std::fprintf(stderr, " | %.1f ms/step | ETA %s", m.stepSeconds * 1e3,
                 duration(eta).c_str());
    std::fflush(stderr);
  }

  const ReportOptions o_;
  const Trainer &trainer_;
  int64_t firstStep_, lastStep_;
  std::chrono::steady_clock::time_point start_;
  bool bar_ = false;
  std::FILE *jsonl_ = nullptr;
  std::vector<double> stepTimes_;
  double firstLoss_ = kNoValue, lastLoss_ = kNoValue, lastEval_ = kNoValue;
  int64_t lastEvalStep_ = -1;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_TOOLS_REPORTER_H
