//===- Dataset.h - Training data and the batches drawn from it --*- C++ -*-===//
//
// What a Trainer trains on. A Dataset is data in files, split into a
// training part and a held-out part, read through once when opened (checked
// and hashed) and then a batch at a time, so it may be larger than memory
// (io/FileReader.h); it binds itself to a training
// executable's data inputs as a Batches, which sets those inputs for every
// step and feeds the held-out part to an evaluation executable.
//
// Two kinds (runtime/README.md, "Training: data, batches, metrics"):
//   TokenData   one stream of token ids (formats tokens, bin, bytes) for
//               language models: windows of consecutive tokens.
//   SampleData  samples: .safetensors files of arrays named after the
//               executable's inputs, one sample per index of their first
//               axis (images and labels, token rows and labels, ...),
//               drawn in a shuffled order per epoch.
//
// A batch depends only on the seed and the batch's position, so a run
// resumed at position p sees exactly the batches it would have seen.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_DATASET_H
#define TRAINC_RUNTIME_TRAIN_DATASET_H

#include "base/Status.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace trainc {

class Executable;
class Session;

enum class DataFormat { kAuto, kTokens, kBin, kBytes, kSamples };

/// Parses "auto", "tokens", "bin", "bytes", "samples".
Status parseDataFormat(const std::string &text, DataFormat &out);
const char *dataFormatName(DataFormat format);

struct DataOptions {
  /// The files, in order; a path that names no file and holds '*', '?' or
  /// '[' is a glob pattern for the regular files it matches, in byte order
  /// of their names (shards: "fineweb_train_*.bin").
  std::vector<std::string> paths;
  /// kAuto: `samples` for names ending in .safetensors, `tokens` for files
  /// that start with the token file magic, `bin` for *.bin, else `bytes`.
  DataFormat format = DataFormat::kAuto;
  /// Bytes per token of headerless .bin files (2 or 4; 0 = not given).
  int binTokenBytes = 0;
  /// The share of the data held out for evaluation, taken from the end.
  double evalFraction = 0.1;
  /// Called during the opening pass (which reads the data through) after
  /// each piece, with the bytes read so far and in all; none: not called.
  std::function<void(uint64_t done, uint64_t total)> progress;
  /// Where the opening pass's results are kept (ScanCache.h), so that
  /// opening the same unchanged files again skips it; "": nowhere.
  std::string cacheDir;
};

/// How a Dataset binds to a training executable.
struct DataBinding {
  /// Token data: the token and target inputs by name ("" = those of the
  /// executable's training signature). Sample data binds by the arrays'
  /// names and refuses these.
  std::string tokensInput, targetsInput;
  uint64_t seed = 0;
};

/// The batches of one Dataset bound to one training executable (and, after
/// bindEval, one evaluation executable).
class Batches {
public:
  virtual ~Batches() = default;

  /// Sets the training session's data inputs to the next training batch
  /// and advances the position.
  virtual Status feedNext(Session &train) = 0;
  /// Checks that `eval` takes the held-out batches and binds its inputs.
  virtual Status bindEval(const Executable &eval) = 0;
  /// Held-out batches (0 when the held-out part is too short for one).
  virtual int64_t evalBatchCount() const = 0;
  /// Feeds held-out batch `index` to `eval`, calling `runPiece` after each
  /// piece of it the evaluation's batch takes (one piece of equal size or
  /// more, so the mean of the pieces' losses is the batch's).
  virtual Status feedEval(int64_t index, Session &eval,
                          const std::function<Status()> &runPiece) = 0;
  /// Why evalBatchCount() is 0, for an error.
  virtual std::string evalTooShort() const = 0;

  /// Training batches drawn so far: part of the run state.
  virtual uint64_t position() const = 0;
  virtual void setPosition(uint64_t position) = 0;
  virtual uint64_t seed() const = 0;

  /// The data-parallel ranks that each read part of every batch (1 without
  /// data parallelism).
  virtual int64_t dataRanks() const = 0;
  /// Tokens, or samples, of one step on all ranks together (one of them is
  /// 0: sample data of token rows counts samples).
  virtual int64_t tokensPerStep() const = 0;
  virtual int64_t samplesPerStep() const = 0;
  /// This rank's batch, for logs ("batch 8 x 64 tokens").
  virtual std::string describe() const = 0;
};

class Dataset {
public:
  /// Opens every file of `options` (concatenated in order, patterns
  /// expanded) as one kind and reads it through once.
  static Status open(const DataOptions &options, std::unique_ptr<Dataset> &out);
  virtual ~Dataset() = default;

  /// What size() counts: "tokens" or "samples".
  virtual const char *unit() const = 0;
  virtual uint64_t size() const = 0;
  virtual uint64_t trainSize() const = 0;
  uint64_t evalSize() const { return size() - trainSize(); }
  /// A hash (XXH3) of the content, for ranks and resumed runs to check
  /// that they read the same data.
  virtual uint64_t contentHash() const = 0;
  /// How the data was read, for logs ("120,000 tokens (bytes) from ...").
  virtual const std::string &description() const = 0;

  /// Binds the data to the training session's inputs (this rank's part of
  /// each global batch when the inputs are split over a data-parallel mesh
  /// axis). The Batches refer to this Dataset, which must outlive them.
  virtual Status bind(const Session &train, const DataBinding &binding,
                      std::unique_ptr<Batches> &out) const = 0;
};

/// The first `n - floor(n * fraction)` of `n` items are for training.
uint64_t trainingShare(uint64_t n, double evalFraction);
/// "'tokens' i64[8, 64], 'targets' i64[8, 64]" ("none"), for errors.
std::string describeInputs(const Executable &exe);
/// Whether `path` ends with `suffix` (".safetensors").
bool pathEndsWith(const std::string &path, const char *suffix);
/// "1,234,567".
std::string withCommas(uint64_t v);
/// A data's description: "120,000 tokens (bytes) from FILE; 108,000 for
/// training, 12,000 held out" (`what` is "tokens (bytes)"; several paths
/// are "N files").
std::string describeData(uint64_t count, const std::string &what,
                         const std::vector<std::string> &paths,
                         uint64_t training, uint64_t heldOut);
/// "; read through in 3.4 s (880 MB/s)" for `bytes` read since `start`
/// when that took a second or more (large data, or a slow disk), else "";
/// "; checks and hash from the data cache DIR" when `cached`; then
/// `cacheNote` (why the cache was not written), if any: for the data's
/// description.
std::string readThroughNote(uint64_t bytes,
                            std::chrono::steady_clock::time_point start,
                            bool cached, const std::string &cacheDir,
                            const std::string &cacheNote);
/// The splitmix64 finalizer of a linear mix of (seed, a, b): the random
/// bits that batches are drawn with (README: "Batches").
uint64_t mixBits(uint64_t seed, uint64_t a, uint64_t b);

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_DATASET_H
