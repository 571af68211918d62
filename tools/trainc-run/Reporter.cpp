//===- Reporter.cpp - What trainc-run shows of a training run -------------===//

#include "Reporter.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc::run {

std::string duration(double seconds) {
  char buf[32];
  long s = long(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, s / 60 % 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  return buf;
}

std::string jsonNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  return std::isfinite(value) ? buf : "null";
}

/// `text` as a JSON string (the tool sees only runtime.h, so it has its own
/// few lines for what the runtime's io/Json.h does).
std::string jsonText(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

Reporter::Reporter(const ReportOptions &options, trainc_trainer *trainer,
                   const trainc_executable *step, int64_t firstStep,
                   int64_t lastStep)
    : options_(options), trainer_(trainer), step_(step), firstStep_(firstStep),
      lastStep_(lastStep),
      tokensPerStep_(trainc_trainer_tokens_per_step(trainer)),
      samplesPerStep_(trainc_trainer_samples_per_step(trainer)),
      start_(std::chrono::steady_clock::now()),
      firstLoss_(std::numeric_limits<double>::quiet_NaN()),
      lastLoss_(firstLoss_), lastEval_(firstLoss_) {
  bar_ = options.progress && isatty(STDERR_FILENO);
}

Reporter::~Reporter() {
  if (jsonl_)
    std::fclose(jsonl_);
  if (lockFd_ >= 0)
    ::close(lockFd_);
}

namespace {

/// The error for a JSONL log `path` that open() refused with `error`: not
/// found only when a directory on its path is missing, else a precondition
/// (a read-only filesystem, permissions).
std::string openError(const std::string &path, int error) {
  bool missing = error == ENOENT || error == ENOTDIR;
  return std::string(missing ? "not found: " : "failed precondition: ") + path +
         ": cannot open the JSONL log: " + std::strerror(error);
}

} // namespace

std::string Reporter::lockLog() {
  const std::string &path = options_.jsonlPath;
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return ""; // a device (/dev/stdout, a pipe): nothing to rewrite
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return openError(path, errno);
  struct stat now, held;
  if (lockFd_ >= 0 && fstat(lockFd_, &held) == 0 && fstat(fd, &now) == 0 &&
      held.st_dev == now.st_dev && held.st_ino == now.st_ino) {
    ::close(fd); // this run holds it already
    return "";
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    ::close(fd);
    return error == EWOULDBLOCK
               ? "failed precondition: " + path +
                     ": another run is writing this JSONL log (give each "
                     "run its own --log-jsonl)"
               : "failed precondition: " + path +
                     ": cannot lock the JSONL log: " + std::strerror(error);
  }
  if (lockFd_ >= 0)
    ::close(lockFd_);
  lockFd_ = fd;
  return "";
}

/// The step of a JSONL record line, or -1.
static int64_t recordStep(const std::string &line) {
  const char *key = "{\"step\":";
  if (line.compare(0, std::strlen(key), key) != 0)
    return -1;
  return std::strtoll(line.c_str() + std::strlen(key), nullptr, 10);
}

std::string Reporter::open() {
  if (options_.jsonlPath.empty())
    return "";
  if (std::string error = lockLog(); !error.empty())
    return error;
  // An existing log keeps only whole records (a crash or a full disk can
  // leave a partial last line) and only the steps up to this run's first
  // (the steps after the checkpoint it continues, or all of a run started
  // afresh, are run again and their records written again): a log never
  // holds a step twice.
  struct stat st;
  bool regular =
      stat(options_.jsonlPath.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (std::FILE *old =
          regular ? std::fopen(options_.jsonlPath.c_str(), "r") : nullptr) {
    std::string kept, line;
    bool changed = false;
    for (int c; (c = std::fgetc(old)) != EOF;) {
      line += char(c);
      if (c != '\n')
        continue;
      if (recordStep(line) > firstStep_)
        changed = true;
      else
        kept += line;
      line.clear();
    }
    std::fclose(old);
    if (!line.empty() || changed) {
      std::string tmp = options_.jsonlPath + ".tmp";
      std::FILE *out = std::fopen(tmp.c_str(), "w");
      if (!out ||
          std::fwrite(kept.data(), 1, kept.size(), out) != kept.size() ||
          std::fflush(out) != 0 || fsync(fileno(out)) != 0 ||
          std::fclose(out) != 0 ||
          std::rename(tmp.c_str(), options_.jsonlPath.c_str()) != 0)
        return "data loss: " + options_.jsonlPath +
               ": cannot rewrite the JSONL log: " + std::strerror(errno);
      // The lock follows the file to its new inode.
      if (std::string error = lockLog(); !error.empty())
        return error;
    }
  }
  jsonl_ = std::fopen(options_.jsonlPath.c_str(), "a");
  if (!jsonl_)
    return openError(options_.jsonlPath, errno);
  return "";
}

std::string Reporter::rewind(int64_t step) {
  if (jsonl_)
    std::fclose(jsonl_);
  jsonl_ = nullptr;
  firstStep_ = step;
  return open();
}

std::string Reporter::onStep(const trainc_step_metrics &m) {
  stepTimes_.push_back(m.step_seconds);
  if (std::isnan(firstLoss_))
    firstLoss_ = m.loss;
  lastLoss_ = m.loss;
  if (m.evaluated) {
    lastEval_ = m.eval_loss;
    lastEvalStep_ = m.step;
  }
  if (jsonl_ && !writeRecord(m))
    return "data loss: " + options_.jsonlPath +
           ": cannot write the JSONL log: " + std::strerror(errno);
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  int64_t done = m.step - firstStep_;
  double eta = elapsed / double(done) * double(lastStep_ - m.step);
  // A verified step (--verify-steps) always gets its line.
  if (m.verified) {
    if (bar_)
      std::fprintf(stderr, "\r\033[K");
    std::printf("verify: step %lld matches the CPU: worst %s, relative "
                "error %.3g (limit %.3g)\n",
                (long long)m.step, m.verify_worst, m.verify_worst_error,
                m.verify_worst_limit);
    std::fflush(stdout);
  }
  if (bar_) {
    drawBar(m, eta);
    if (m.evaluated) {
      std::fprintf(stderr, "\r\033[K");
      std::printf("step %lld: eval_loss %.6g\n", (long long)m.step,
                  m.eval_loss);
      std::fflush(stdout);
      drawBar(m, eta);
    }
    if (m.step == lastStep_)
      std::fputc('\n', stderr);
    return "";
  }
  if (m.step % options_.logEvery != 0 && m.step != lastStep_ && !m.evaluated)
    return "";
  printLine(m, eta);
  return "";
}

void Reporter::printLine(const trainc_step_metrics &m, double eta) const {
  std::string line = "step " + std::to_string(m.step) + ":";
  // The executable's scalar outputs first, by name, in its order.
  trainc_session *session = trainc_trainer_session(trainer_);
  for (size_t i = 0; i < trainc_executable_output_count(step_); ++i) {
    trainc_tensor_info info;
    trainc_status s = trainc_executable_output_info(step_, i, &info);
    if (s) {
      trainc_status_free(s);
      continue;
    }
    // Scalar floats, with the digits that tell their type's values apart.
    int digits = info.dtype == TRAINC_F64                                ? 17
                 : info.dtype == TRAINC_F32                              ? 9
                 : info.dtype == TRAINC_F16 || info.dtype == TRAINC_BF16 ? 5
                                                                         : 0;
    double value = 0;
    if (info.rank != 0 || digits == 0)
      continue;
    if ((s = trainc_session_output_scalar(session, i, &value))) {
      trainc_status_free(s);
      continue;
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s %.*g", info.name, digits, value);
    line += buf;
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, " step_ms %.2f", m.step_seconds * 1e3);
  line += buf;
  if (tokensPerStep_) {
    std::snprintf(buf, sizeof buf, " tokens/s %.0f", m.tokens_per_second);
    line += buf;
  }
  if (samplesPerStep_) {
    std::snprintf(buf, sizeof buf, " samples/s %.1f", m.samples_per_second);
    line += buf;
  }
  if (!std::isnan(m.mfu)) {
    std::snprintf(buf, sizeof buf, " mfu %.2f%%", 100 * m.mfu);
    line += buf;
  }
  if (m.evaluated) {
    std::snprintf(buf, sizeof buf, " eval_loss %.9g", m.eval_loss);
    line += buf;
  }
  if (m.slowest_rank >= 0) {
    std::snprintf(buf, sizeof buf, " comm_ms %.2f (of %.2f in flight)",
                  m.comm_seconds * 1e3, m.comm_total_seconds * 1e3);
    line += buf;
  }
  if (m.step != lastStep_)
    line += " eta " + duration(eta);
  std::printf("%s\n", line.c_str());
  // A straggler is worth a line of its own, bar or not.
  if (m.straggler && options_.warnings)
    std::fprintf(stderr,
                 "trainc-run: warning: step %lld: rank %d is a straggler: "
                 "%.2f ms of compute against the median rank's %.2f ms\n",
                 (long long)m.step, m.slowest_rank,
                 m.slowest_compute_seconds * 1e3,
                 m.median_compute_seconds * 1e3);
  std::fflush(stdout);
}

void Reporter::summary() const {
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
  if (tokensPerStep_)
    std::printf(", %.0f tokens/s", double(tokensPerStep_) / median);
  if (samplesPerStep_)
    std::printf(", %.1f samples/s", double(samplesPerStep_) / median);
  std::printf("\n");
}

bool Reporter::writeRecord(const trainc_step_metrics &m) {
  std::string r = "{\"step\":" + std::to_string(m.step) +
                  ",\"loss\":" + jsonNumber(m.loss) +
                  ",\"grad_norm\":" + jsonNumber(m.grad_norm) +
                  ",\"lr\":" + jsonNumber(m.learning_rate) +
                  ",\"step_time_s\":" + jsonNumber(m.step_seconds) +
                  ",\"tokens_per_s\":" + jsonNumber(m.tokens_per_second) +
                  ",\"samples_per_s\":" + jsonNumber(m.samples_per_second) +
                  ",\"flops_per_s\":" + jsonNumber(m.flops_per_second) +
                  ",\"mfu\":" + jsonNumber(m.mfu) +
                  ",\"planned_bytes\":" + std::to_string(m.planned_bytes) +
                  ",\"measured_bytes\":" + std::to_string(m.measured_bytes) +
                  ",\"peak_rss_bytes\":" + std::to_string(m.peak_rss_bytes) +
                  ",\"data_position\":" + std::to_string(m.data_position);
  if (m.evaluated) // null when not finite
    r += ",\"eval_loss\":" + jsonNumber(m.eval_loss);
  if (m.skipped)
    r += ",\"skipped\":true";
  if (std::isfinite(m.loss_scale))
    r += ",\"loss_scale\":" + jsonNumber(m.loss_scale);
  if (std::isfinite(m.loss_z))
    r += ",\"loss_z\":" + jsonNumber(m.loss_z);
  if (m.spike)
    r += ",\"spike\":true";
  if (m.slowest_rank >= 0)
    r += ",\"comm_s\":" + jsonNumber(m.comm_seconds) +
         ",\"comm_total_s\":" + jsonNumber(m.comm_total_seconds) +
         ",\"median_compute_s\":" + jsonNumber(m.median_compute_seconds) +
         ",\"slowest_rank\":" + std::to_string(m.slowest_rank) +
         ",\"slowest_compute_s\":" + jsonNumber(m.slowest_compute_seconds) +
         (m.straggler ? ",\"straggler\":true" : "");
  if (m.verified)
    r += ",\"verify_worst\":" + jsonText(m.verify_worst) +
         ",\"verify_error\":" + jsonNumber(m.verify_worst_error);
  r += "}\n";
  return std::fputs(r.c_str(), jsonl_) >= 0 && std::fflush(jsonl_) == 0;
}

void Reporter::drawBar(const trainc_step_metrics &m, double eta) const {
  constexpr int kWidth = 30;
  double frac = double(m.step - firstStep_) / double(lastStep_ - firstStep_);
  int filled = int(frac * kWidth);
  std::string bar(size_t(filled), '=');
  if (filled < kWidth)
    bar += '>' + std::string(size_t(kWidth - filled - 1), ' ');
  std::fprintf(stderr, "\r\033[K%lld/%lld [%s] %3.0f%% loss %.4f",
               (long long)m.step, (long long)lastStep_, bar.c_str(), 100 * frac,
               m.loss);
  if (tokensPerStep_)
    std::fprintf(stderr, " | %.0f tok/s", m.tokens_per_second);
  if (samplesPerStep_)
    std::fprintf(stderr, " | %.1f samples/s", m.samples_per_second);
  std::fprintf(stderr, " | %.1f ms/step | ETA %s", m.step_seconds * 1e3,
               duration(eta).c_str());
  std::fflush(stderr);
}

} // namespace trainc::run
