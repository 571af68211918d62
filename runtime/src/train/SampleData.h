//===- SampleData.h - Samples and the shuffled batches drawn from them -*- C++
//-*-=//
//
// Training data of samples (a Dataset): one or more .safetensors files whose
// arrays are named after the executable's data inputs, each with the samples
// on its first axis (pixel_values [N, 3, 32, 32] f32 and labels [N] i64;
// input_ids [N, 128] and labels [N]). Every array of a file has the same N;
// the files hold the same names, dtypes and per-sample shapes and are
// concatenated in order. The last floor(N * evalFraction) samples are held
// out. The files are read through once when opened (for the content hash
// and the integer arrays' ranges) and then a sample at a time, so the data
// may be larger than memory; only arrays of small samples (labels) are
// held in memory, up to kHeldBytes.
//
// Batches (runtime/README.md, "Samples"): the training samples are drawn
// in epochs, each a permutation of them; of a global batch of G samples
// (the executable's batch B times the data-parallel ranks), batch p is
// samples [k*G, (k+1)*G) of epoch e's order, e = p / (T / G), k = p mod
// (T / G), T the training samples (the T mod G left over are not drawn in
// that epoch). Epoch e's order is the training sample indices i sorted by
// mixBits(seed, e, i), ties by i. Rank r reads samples [r*B, (r+1)*B) of
// each global batch. Held-out batch k is held-out samples [k*E, (k+1)*E),
// E the evaluation executable's batch.
//
// Inputs bind by name: the dtype must be the input's and each sample's
// shape the input's after its batch axis; an input with no array, or an
// array no input takes, is an error naming them all.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_SAMPLEDATA_H
#define TRAINC_RUNTIME_TRAIN_SAMPLEDATA_H

#include "base/DType.h"
#include "io/SafeTensors.h"
#include "train/Dataset.h"

#include <cstring>
#include <functional>
#include <optional>

namespace trainc {

class SampleData : public Dataset {
public:
  /// One named array of every sample, left in the files (each is read
  /// through once when opened, then a sample at a time: readSample) or,
  /// for small samples, held in memory (kSmallSample).
  struct Array {
    std::string name;
    /// The dtype as the files name it ("F32") and trainc's.
    std::string fileDType;
    DType dtype;
    std::vector<int64_t> sampleShape;
    size_t sampleBytes = 0;
    /// Per file, the byte where its samples of this array start.
    std::vector<uint64_t> offsets;
    /// Integer arrays (i32, i64): the smallest and largest element, for
    /// checking token ids without reading them again.
    int64_t minValue = 0, maxValue = 0;
    /// Whether its bytes (all files, in sample order) are `held` in memory
    /// rather than read a sample at a time (file comment).
    bool inMemory = false;
    std::vector<char> held;
  };

  /// Arrays of samples of at most kSmallSample bytes are held in memory
  /// while they total at most kHeldBytes: a pread per sample cost 4.5 ms
  /// for a batch of 4,096 samples of 48 bytes, where copying them from
  /// memory took 0.05 (labels of 8 bytes a sample are held, images are
  /// read).
  static constexpr size_t kSmallSample = 4096;
  static constexpr uint64_t kHeldBytes = uint64_t(1) << 30;

  static Status open(const DataOptions &options,
                     std::unique_ptr<SampleData> &out);

  const char *unit() const override { return "samples"; }
  uint64_t size() const override { return count_; }
  uint64_t trainSize() const override { return trainCount_; }
  const std::string &description() const override { return description_; }
  /// XXH3 of every array's name, dtype, sample shape and bytes, in name
  /// order; computed when the files are opened.
  uint64_t contentHash() const override { return hash_; }
  Status bind(const Session &train, const DataBinding &binding,
              std::unique_ptr<Batches> &out) const override;

  /// In name order.
  const std::vector<Array> &arrays() const { return arrays_; }
  /// The training sample indices in epoch `epoch`'s order (file comment);
  /// kOutOfRange when there is no memory for them.
  Status epochOrder(uint64_t seed, uint64_t epoch,
                    std::vector<uint32_t> &out) const;
  /// "FILE, sample 12" for sample `i` (counted over all files).
  std::string sampleName(uint64_t i) const;
  /// Reads the sampleBytes bytes of sample `i` (counted over all files) of
  /// `a` into `out`; kDataLoss when its file has shrunk since it was opened.
  Status readSample(const Array &a, uint64_t i, char *out) const {
    if (a.inMemory) {
      std::memcpy(out, a.held.data() + i * a.sampleBytes, a.sampleBytes);
      return okStatus();
    }
    size_t f = fileOf(i);
    return readers_[f].read(a.offsets[f] +
                                (i - fileStarts_[f].first) * a.sampleBytes,
                            a.sampleBytes, out);
  }
  /// Asks the file of sample `i` of `a` to start reading it (nothing for
  /// an array in memory).
  void willNeed(const Array &a, uint64_t i) const {
    if (a.inMemory)
      return;
    size_t f = fileOf(i);
    readers_[f].willNeed(a.offsets[f] +
                             (i - fileStarts_[f].first) * a.sampleBytes,
                         a.sampleBytes);
  }
  /// Every element of `a` (an id array: i32 or i64; others pass) is in
  /// [0, bound): an id is an embedding row, and a negative one would count
  /// from the table's end. Else an error naming the first one outside,
  /// its sample (file and index in it) and element.
  Status checkIds(const Array &a, int64_t bound) const;
  /// The same for class labels of a cross-entropy of `classes` classes:
  /// each is in [0, classes) or `ignored` (the loss's ignore_index, when it
  /// has one), checked when the data is bound, not at the step that draws
  /// the sample.
  Status checkLabels(const Array &a, int64_t classes,
                     std::optional<int64_t> ignored) const;
  /// Calls `chunk` on every byte of `a` in sample order (all files), in
  /// pieces of whole elements; `first` is the piece's first byte, counted
  /// over all samples.
  Status scanArray(const Array &a,
                   const std::function<Status(const char *, size_t,
                                              uint64_t first)> &chunk) const;

  /// The most samples the data may hold.
  static constexpr uint64_t kMaxSamples = uint64_t(1) << 32;

private:
  /// checkIds and checkLabels: [0, bound) or `ignored`.
  Status checkRange(const Array &a, int64_t bound,
                    std::optional<int64_t> ignored, bool labels) const;
  /// Reads every array through once (`total` bytes, told to `progress`):
  /// the content hash, the integer arrays' ranges and the held arrays; or,
  /// without `scan` (the data cache had the rest), the held arrays and
  /// their ranges alone.
  Status readThrough(uint64_t total,
                     const std::function<void(uint64_t, uint64_t)> &progress,
                     bool scan);
  /// The file holding sample `i`.
  size_t fileOf(uint64_t i) const;

  /// The files, open.
  std::vector<FileReader> readers_;
  std::vector<Array> arrays_;
  /// Where each file's samples start, for error messages.
  std::vector<std::pair<uint64_t, std::string>> fileStarts_;
  uint64_t count_ = 0, trainCount_ = 0;
  std::string description_;
  uint64_t hash_ = 0;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_SAMPLEDATA_H
