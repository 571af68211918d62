//===- TokenData.h - Token streams and the batches drawn from them -*- C++
//-*-=//
//
// Training data for language models (a Dataset): one stream of token ids
// from one or more files, split into a training part and a held-out part
// (its last `evalFraction`). The files are read once when opened (every id
// checked and hashed) and then a window at a time (FileReader), so the data
// may be larger than memory.
//
// File formats (runtime/README.md, "Training: data, batches, metrics"):
//   tokens  a trainc token file: the 8 bytes "TRAINCTK", a little-endian
//           uint32 format version (1), a uint32 token width in bytes (2 or
//           4), a uint64 token count, then that many little-endian
//           uint16/uint32 token ids.
//   bin     headerless little-endian uint16 or uint32 token ids (the token
//           dtype must be given).
//   bytes   any file: each byte is one token (ids 0..255).
//
// Batches: a training batch is `batch` windows of `seq + 1` consecutive
// tokens from the training part: tokens = window[0:seq], targets =
// window[1:seq+1]. Window b of batch p starts at
//     uniform(mixBits(seed, p, b), trainTokens - seq)
// (mixBits is Dataset.h's, uniform is defined in TokenData.cpp; both are
// documented in the README so other tools can reproduce a run's batches). A
// batch depends only on (seed, p), so a run that resumes at position p sees
// exactly the batches it would have seen. With N data-parallel ranks of
// batch B, the global batch is N*B windows and rank i reads windows
// [i*B, (i+1)*B) of it: the windows one rank with --grad-accum N reads,
// micro-batch i on rank i. Held-out batches are the consecutive windows
// of the held-out part: window k starts at trainTokens + k*seq.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_TOKENDATA_H
#define TRAINC_RUNTIME_TRAIN_TOKENDATA_H

#include "io/FileReader.h"
#include "train/Dataset.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace trainc {

class TokenData : public Dataset {
public:
  /// Opens every file (concatenated in order) and reads it through once;
  /// `options.format` is auto, tokens, bin or bytes.
  static Status open(const DataOptions &options,
                     std::unique_ptr<TokenData> &out);

  /// Whether the file at `path` starts with the token file magic.
  static bool hasMagic(const std::string &path);

  const char *unit() const override { return "tokens"; }
  uint64_t size() const override { return count_; }
  uint64_t trainSize() const override { return trainTokens_; }
  const std::string &description() const override { return description_; }

  /// Reads tokens [start, start + count) of the stream (across files) into
  /// `out`; kDataLoss when a file has shrunk since it was opened.
  Status read(uint64_t start, size_t count, uint32_t *out) const;
  /// Asks the files to start reading tokens [start, start + count).
  void willNeed(uint64_t start, size_t count) const;
  /// Every token id is below `vocab`; else an error naming the file, the
  /// token's position and id.
  Status checkVocabulary(int64_t vocab) const;
  /// A hash (XXH3) of the token ids as little-endian uint32, computed when
  /// the files are opened.
  uint64_t contentHash() const override { return hash_; }
  /// The executable's token and target inputs ([batch, seq] ids); every id
  /// must be inside its vocabulary.
  Status bind(const Session &train, const DataBinding &binding,
              std::unique_ptr<Batches> &out) const override;

private:
  /// One file's ids: `count` of `width` bytes from byte `payload`, tokens
  /// [first, first + count) of the stream.
  struct File {
    FileReader reader;
    uint64_t payload = 0, first = 0, count = 0;
    int width = 1;
    /// The largest id in it.
    uint32_t maxId = 0;
  };
  /// Calls `ids` on every id of `file`, in order, in chunks.
  Status
  scanIds(const File &file,
          const std::function<Status(const uint32_t *, size_t)> &ids) const;
  /// The file holding token `i`.
  size_t fileOf(uint64_t i) const;

  std::vector<File> files_;
  uint64_t count_ = 0, trainTokens_ = 0;
  std::string description_;
  uint64_t hash_ = 0;
};

/// Writes one batch of token and target ids (int64 or int32, `batch` x `seq`
/// each) into caller-provided buffers.
class BatchSampler {
public:
  /// Errors when the training part is too short for one window (the
  /// held-out part is checked by whoever evaluates: evalBatchCount()).
  static Status create(const TokenData &data, int64_t batch, int64_t seq,
                       uint64_t seed, std::unique_ptr<BatchSampler> &out);

  /// The next training batch; advances the position (and asks the files
  /// for the batch after it).
  Status nextTrain(void *tokens, void *targets, bool int64Ids);
  /// Held-out batch `index` (< evalBatchCount()).
  Status evalBatch(int64_t index, void *tokens, void *targets, bool int64Ids);
  int64_t evalBatchCount() const;

  /// This rank's part of each global batch with data parallelism: windows
  /// [first, first + batch) of it (0 by default: the batch is global).
  void setFirstWindow(int64_t first) { firstWindow_ = first; }
  /// Training batches drawn so far: part of the run state.
  uint64_t position() const { return position_; }
  void setPosition(uint64_t position) { position_ = position; }
  uint64_t seed() const { return seed_; }

  /// Where window `b` of training batch `p` starts (for tests).
  uint64_t windowStart(uint64_t p, int64_t b) const;

private:
  BatchSampler(const TokenData &data) : data_(data) {}
  Status copyWindow(uint64_t start, int64_t row, void *tokens, void *targets,
                    bool int64Ids);

  const TokenData &data_;
  int64_t batch_ = 0, seq_ = 0;
  uint64_t seed_ = 0, position_ = 0;
  int64_t firstWindow_ = 0;
  /// One window's ids.
  std::vector<uint32_t> window_;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_TOKENDATA_H
