//===- SampleData.cpp - Samples and the shuffled batches drawn from them --===//

#include "train/SampleData.h"

#include "exec/Session.h"
#include "io/SafeTensors.h"
#include "train/ScanCache.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <limits>
#include <map>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace trainc {
namespace {

std::string sampleType(const std::string &fileDType,
                       const std::vector<int64_t> &sampleShape) {
  return fileDType + " " + shapeString(sampleShape) + " per sample";
}

/// "a, b and 3 more" of at most eight items.
std::string listOf(const std::vector<std::string> &items) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < 8; ++i)
    s += (i ? ", " : "") + items[i];
  if (items.size() > 8)
    s += " and " + std::to_string(items.size() - 8) + " more";
  return s;
}

/// One input of an executable fed from one array.
struct Feed {
  size_t input = 0;
  const SampleData::Array *array = nullptr;
};

/// Binds the inputs of `exe` to the arrays of `data` by name. `all`: every
/// array must be an input (the training executable; an evaluation one may
/// take fewer). Fills `feeds` and the batch every input has.
Status bindInputs(const SampleData &data, const Executable &exe, bool all,
                  std::vector<Feed> &feeds, int64_t &batch) {
  std::map<std::string, const SampleData::Array *> byName;
  for (const SampleData::Array &a : data.arrays())
    byName.emplace(a.name, &a);
  std::vector<std::string> missing, mismatched, unused;
  std::map<std::string, bool> taken;
  batch = -1;
  for (size_t i = 0; i < exe.inputs().size(); ++i) {
    const TensorInfo &t = exe.tensors()[exe.inputs()[i]];
    std::string type = dtypeName(t.dtype) + shapeString(t.shape);
    auto it = byName.find(t.name);
    if (it == byName.end()) {
      missing.push_back("'" + t.name + "' " + type);
      continue;
    }
    const SampleData::Array &a = *it->second;
    taken[a.name] = true;
    std::vector<int64_t> sample =
        t.shape.empty()
            ? t.shape
            : std::vector<int64_t>(t.shape.begin() + 1, t.shape.end());
    int64_t b = t.shape.empty() ? 0 : t.shape[0];
    if (t.shape.empty() || b < 1 || a.fileDType != safetensorsDType(t.dtype) ||
        a.sampleShape != sample || a.sampleBytes * size_t(b) != t.size) {
      mismatched.push_back("'" + t.name + "' is " +
                           sampleType(a.fileDType, a.sampleShape) +
                           " in the data but " + type + " in the executable");
      continue;
    }
    if (batch >= 0 && b != batch)
      return invalidArgument(exe.origin() +
                             "'s inputs have batches of different sizes (" +
                             describeInputs(exe) +
                             "): sample data feeds "
                             "every input the same samples");
    batch = b;
    feeds.push_back({i, &a});
  }
  if (all)
    for (const SampleData::Array &a : data.arrays())
      if (!taken.count(a.name))
        unused.push_back("'" + a.name + "' (" +
                         sampleType(a.fileDType, a.sampleShape) + ")");
  if (missing.empty() && mismatched.empty() && unused.empty()) {
    if (feeds.empty())
      return invalidArgument(exe.origin() + " takes no inputs to feed");
    return okStatus();
  }
  std::string message = "the samples (" + data.description() +
                        ") do not match the inputs of " + exe.origin();
  if (!mismatched.empty())
    message += "; " + listOf(mismatched);
  if (!missing.empty())
    message += "; inputs with no array of that name: " + listOf(missing);
  if (!unused.empty())
    message += "; arrays that are no input: " + listOf(unused);
  return invalidArgument(message + " (its inputs: " + describeInputs(exe) +
                         ")");
}

/// The batches of sample data: shuffled epochs of the training samples,
/// and consecutive held-out samples.
class SampleBatches : public Batches {
public:
  SampleBatches(const SampleData &data) : data_(data) {}

  Status bind(const Session &session, const DataBinding &binding);

  Status feedNext(Session &train) override;
  Status bindEval(const Executable &eval) override {
    evalFeeds_.clear();
    evalBuffers_.clear();
    TRAINC_RETURN_IF_ERROR(
        bindInputs(data_, eval, /*all=*/false, evalFeeds_, evalBatch_));
    for (const Feed &f : evalFeeds_)
      evalBuffers_.emplace_back(f.array->sampleBytes * size_t(evalBatch_));
    return okStatus();
  }
  int64_t evalBatchCount() const override {
    return evalBatch_ > 0 ? int64_t(data_.evalSize() / uint64_t(evalBatch_))
                          : 0;
  }
  Status feedEval(int64_t index, Session &eval,
                  const std::function<Status()> &runPiece) override {
    // Consecutive samples (which may span two files).
    uint64_t first = data_.trainSize() + uint64_t(index * evalBatch_);
    for (size_t e = 0; e < evalFeeds_.size(); ++e) {
      const SampleData::Array &a = *evalFeeds_[e].array;
      char *out = evalBuffers_[e].data();
      for (int64_t j = 0; j < evalBatch_; ++j)
        TRAINC_RETURN_IF_ERROR(data_.readSample(
            a, first + uint64_t(j), out + size_t(j) * a.sampleBytes));
      TRAINC_RETURN_IF_ERROR(
          eval.setInput(evalFeeds_[e].input, out, evalBuffers_[e].size()));
    }
    return runPiece();
  }
  std::string evalTooShort() const override {
    return "the held-out split has " + withCommas(data_.evalSize()) +
           " samples, fewer than one evaluation batch of " +
           std::to_string(evalBatch_) + ": " + data_.description() +
           " (raise the held-out fraction or give more samples)";
  }

  uint64_t position() const override { return position_; }
  void setPosition(uint64_t position) override { position_ = position; }
  uint64_t seed() const override { return seed_; }
  int64_t dataRanks() const override { return dataRanks_; }
  int64_t tokensPerStep() const override { return 0; }
  int64_t samplesPerStep() const override { return batch_ * dataRanks_; }
  std::string describe() const override {
    return "batch " + std::to_string(batch_) + " samples";
  }

private:
  const SampleData &data_;
  std::vector<Feed> feeds_, evalFeeds_;
  /// This rank's batch, the ranks, and where this rank's part of a global
  /// batch starts in it.
  int64_t batch_ = 0, dataRanks_ = 1, first_ = 0, evalBatch_ = 0;
  uint64_t seed_ = 0, position_ = 0;
  /// The epoch whose order is in order_ (none yet: UINT64_MAX).
  uint64_t epoch_ = UINT64_MAX;
  std::vector<uint32_t> order_;
  /// The next epoch's order, made on another thread during this epoch
  /// (sorting millions of keys would stall the step that starts it).
  uint64_t nextEpoch_ = UINT64_MAX;
  std::vector<uint32_t> nextOrder_;
  std::future<Status> next_;
  std::vector<std::vector<char>> buffers_, evalBuffers_;
};

Status SampleBatches::bind(const Session &session, const DataBinding &binding) {
  const Executable &exe = session.executable();
  if (!binding.tokensInput.empty() || !binding.targetsInput.empty())
    return invalidArgument("--tokens-input and --targets-input name the "
                           "inputs of token data; sample data feeds each "
                           "input the array of its name");
  TRAINC_RETURN_IF_ERROR(bindInputs(data_, exe, /*all=*/true, feeds_, batch_));
  // The token input the compiler found (the ids an embedding gathers):
  // ids below the vocabulary when the targets are the next tokens (a
  // language model: both of one shape), else at least non-negative.
  const TrainingSignature &sig = exe.signature();
  for (const Feed &f : feeds_) {
    if (sig.tokens < 0 || f.input != size_t(sig.tokens))
      continue;
    int64_t bound = std::numeric_limits<int64_t>::max();
    if (sig.targets >= 0 && sig.vocabulary > 0 &&
        exe.tensors()[exe.inputs()[size_t(sig.targets)]].shape ==
            exe.tensors()[exe.inputs()[f.input]].shape)
      bound = sig.vocabulary;
    TRAINC_RETURN_IF_ERROR(data_.checkIds(*f.array, bound));
  }
  // The class labels a cross-entropy reads straight from an input: each
  // in range (or the loss's ignore_index) now, where the kernel would stop
  // the run at the step that drew a bad one, naming neither file nor
  // sample.
  for (const Feed &f : feeds_) {
    uint32_t tensor = exe.inputs()[f.input];
    for (const InstructionInfo &inst : exe.instructions()) {
      bool loss = inst.op == Opcode::SoftmaxCrossEntropy ||
                  inst.op == Opcode::SoftmaxCrossEntropyAndGrad;
      if (!loss || inst.operands.size() < 2 || inst.operands[1] != tensor ||
          inst.ints.size() < 3)
        continue;
      const TensorInfo &logits = exe.tensors()[inst.operands[0]];
      int64_t classes = inst.ints.size() > 3 && inst.ints[3] > 0
                            ? inst.ints[3]
                            : (logits.shape.empty() ? 0 : logits.shape.back());
      std::optional<int64_t> ignored;
      if (inst.ints[1] != 0)
        ignored = inst.ints[2];
      TRAINC_RETURN_IF_ERROR(data_.checkLabels(*f.array, classes, ignored));
      break;
    }
  }
  // Data parallelism: the inputs are this rank's part of the global batch,
  // split over one mesh axis; rank i on it reads part i.
  int axis = -1;
  for (size_t k = 0; k < feeds_.size(); ++k) {
    const TensorInfo &t = exe.tensors()[exe.inputs()[feeds_[k].input]];
    int a = t.shardAxes.empty() ? -1 : t.shardAxes[0];
    if (k > 0 && a != axis)
      return invalidArgument(exe.origin() +
                             "'s inputs split their batches over different "
                             "mesh axes: sample data feeds every input the "
                             "same samples");
    axis = a;
  }
  if (axis >= 0) {
    dataRanks_ = exe.mesh()[axis].size;
    first_ = batch_ * session.device().collective().coordinate(axis);
  }
  uint64_t global = uint64_t(batch_ * dataRanks_);
  if (data_.trainSize() < global)
    return invalidArgument(
        "the training split has " + withCommas(data_.trainSize()) +
        " samples but one batch needs " + withCommas(global) +
        (dataRanks_ > 1 ? " (" + std::to_string(batch_) + " on each of " +
                              std::to_string(dataRanks_) + " ranks)"
                        : std::string()) +
        ": " + data_.description());
  seed_ = binding.seed;
  for (const Feed &f : feeds_)
    buffers_.emplace_back(f.array->sampleBytes * size_t(batch_));
  return okStatus();
}

Status SampleBatches::feedNext(Session &train) {
  uint64_t global = uint64_t(batch_ * dataRanks_);
  uint64_t perEpoch = data_.trainSize() / global;
  uint64_t epoch = position_ / perEpoch, k = position_ % perEpoch;
  if (epoch != epoch_) {
    // The order made ahead when it is this epoch's (a run resumed elsewhere
    // has none), else now.
    Status made = next_.valid() ? next_.get() : okStatus();
    if (nextEpoch_ == epoch && made.ok())
      order_.swap(nextOrder_);
    else
      TRAINC_RETURN_IF_ERROR(data_.epochOrder(seed_, epoch, order_));
    epoch_ = epoch;
    nextEpoch_ = UINT64_MAX;
  }
  // From halfway through an epoch, the next one's order is made on another
  // thread (not before: a short run would sort for nothing, and wait for
  // it at its end). Without a thread, it is made when it starts.
  if (k >= perEpoch / 2 && nextEpoch_ != epoch + 1) {
    try {
      next_ = std::async(std::launch::async,
                         [this, seed = seed_, next = epoch + 1] {
                           return data_.epochOrder(seed, next, nextOrder_);
                         });
      nextEpoch_ = epoch + 1;
    } catch (const std::exception &) {
      nextEpoch_ = UINT64_MAX;
    }
  }
  const uint32_t *samples = order_.data() + k * global + uint64_t(first_);
  for (size_t f = 0; f < feeds_.size(); ++f) {
    const SampleData::Array &a = *feeds_[f].array;
    char *out = buffers_[f].data();
    for (int64_t j = 0; j < batch_; ++j)
      TRAINC_RETURN_IF_ERROR(
          data_.readSample(a, samples[j], out + size_t(j) * a.sampleBytes));
    TRAINC_RETURN_IF_ERROR(
        train.setInput(feeds_[f].input, out, buffers_[f].size()));
  }
  ++position_;
  // The next batch's samples, for the page cache to fetch during the step
  // (when it is of this epoch).
  if (k + 1 < perEpoch)
    for (const Feed &f : feeds_)
      for (int64_t j = 0; j < batch_; ++j)
        data_.willNeed(*f.array, samples[uint64_t(j) + global]);
  return okStatus();
}

} // namespace

Status SampleData::open(const DataOptions &options,
                        std::unique_ptr<SampleData> &out) {
  auto data = std::unique_ptr<SampleData>(new SampleData());
  std::map<std::string, Array> arrays;
  for (const std::string &path : options.paths) {
    FileReader reader;
    TRAINC_RETURN_IF_ERROR(
        FileReader::open(path, "the safetensors file", reader));
    SafetensorsIndex file;
    TRAINC_RETURN_IF_ERROR(readSafetensorsIndex(reader, file));
    if (file.tensors.empty())
      return invalidArgument(path + ": holds no arrays, so no samples");
    const std::string &firstName = file.tensors.front().name;
    int64_t n = -1;
    for (const SafetensorsIndex::Tensor &t : file.tensors) {
      if (t.shape.empty())
        return invalidArgument(path + ": '" + t.name +
                               "' is a scalar; each array holds its samples "
                               "on its first axis");
      if (n >= 0 && t.shape[0] != n)
        return invalidArgument(path + ": '" + t.name + "' holds " +
                               std::to_string(t.shape[0]) + " samples but '" +
                               firstName + "' " + std::to_string(n) +
                               ": every array needs one entry per sample");
      n = t.shape[0];
    }
    if (n == 0)
      return invalidArgument(path + ": holds no samples (its arrays' first "
                                    "axis is 0)");
    if (uint64_t(n) > kMaxSamples - data->count_)
      return invalidArgument(path + ": the data would hold more than " +
                             withCommas(kMaxSamples) + " samples");
    data->fileStarts_.push_back({data->count_, path});
    bool firstFile = arrays.empty();
    for (const SafetensorsIndex::Tensor &t : file.tensors) {
      std::vector<int64_t> sample(t.shape.begin() + 1, t.shape.end());
      if (t.bytes % size_t(n))
        return invalidArgument(path + ": '" + t.name + "' (" + t.fileDType +
                               ") does not split into whole bytes per sample");
      size_t sampleBytes = t.bytes / size_t(n);
      auto it = arrays.find(t.name);
      if (firstFile) {
        Array &a = arrays[t.name];
        a.name = t.name;
        a.fileDType = t.fileDType;
        a.dtype = t.dtype;
        a.sampleShape = sample;
        a.sampleBytes = sampleBytes;
        it = arrays.find(t.name);
      } else if (it == arrays.end()) {
        return invalidArgument(path + ": '" + t.name + "' is not in " +
                               options.paths.front() +
                               ": every file needs the same arrays");
      } else if (it->second.fileDType != t.fileDType ||
                 it->second.sampleShape != sample) {
        return invalidArgument(
            path + ": '" + t.name + "' is " + sampleType(t.fileDType, sample) +
            " but " + sampleType(it->second.fileDType, it->second.sampleShape) +
            " in " + options.paths.front());
      }
      it->second.offsets.push_back(t.offset);
    }
    if (!firstFile && file.tensors.size() != arrays.size())
      return invalidArgument(
          path + " holds " + std::to_string(file.tensors.size()) +
          " arrays but " + options.paths.front() + " " +
          std::to_string(arrays.size()) + ": every file needs the same arrays");
    data->count_ += uint64_t(n);
    data->readers_.push_back(std::move(reader));
  }
  for (auto &[name, a] : arrays)
    data->arrays_.push_back(std::move(a));
  // Small samples are held in memory, in name order while they fit.
  uint64_t held = 0;
  for (Array &a : data->arrays_) {
    uint64_t bytes = data->count_ * a.sampleBytes;
    if (a.sampleBytes > kSmallSample || bytes > kHeldBytes - held)
      continue;
    try {
      a.held.reserve(size_t(bytes));
    } catch (const std::bad_alloc &) {
      continue; // Read a sample at a time instead.
    }
    a.inMemory = true;
    held += bytes;
  }
  // The pass's results from the data cache when it has them: then only the
  // arrays held in memory are read.
  auto start = std::chrono::steady_clock::now();
  std::string layout = "samples " + std::to_string(data->count_);
  for (const auto &[first, path] : data->fileStarts_)
    layout += " " + std::to_string(first);
  for (const Array &a : data->arrays_) {
    layout += "\n" + std::to_string(a.name.size()) + ":" + a.name + " " +
              a.fileDType + " " + std::to_string(a.sampleBytes) + " " +
              shapeString(a.sampleShape);
    for (uint64_t offset : a.offsets)
      layout += " " + std::to_string(offset);
  }
  std::vector<const FileReader *> readers;
  for (const FileReader &reader : data->readers_)
    readers.push_back(&reader);
  ScanCache cache = ScanCache::begin(options.cacheDir, layout, readers);
  std::vector<uint64_t> values;
  bool cached =
      cache.find(values) && values.size() == 1 + 2 * data->arrays_.size();
  uint64_t bytes = 0;
  for (const Array &a : data->arrays_)
    if (!cached || a.inMemory)
      bytes += data->count_ * a.sampleBytes;
  TRAINC_RETURN_IF_ERROR(data->readThrough(bytes, options.progress, !cached));
  std::string cacheNote;
  if (cached) {
    // The ranges of the arrays held are those of the bytes read now.
    data->hash_ = values[0];
    for (size_t i = 0; i < data->arrays_.size(); ++i) {
      if (data->arrays_[i].inMemory)
        continue;
      data->arrays_[i].minValue = int64_t(values[1 + 2 * i]);
      data->arrays_[i].maxValue = int64_t(values[2 + 2 * i]);
    }
  } else {
    values = {data->hash_};
    for (const Array &a : data->arrays_) {
      values.push_back(uint64_t(a.minValue));
      values.push_back(uint64_t(a.maxValue));
    }
    cacheNote = cache.store(values);
  }
  data->trainCount_ = trainingShare(data->count_, options.evalFraction);
  std::string names;
  for (const Array &a : data->arrays_)
    names += (names.empty() ? "" : ", ") + a.name;
  data->description_ =
      describeData(data->count_, "samples (" + names + ")", options.paths,
                   data->trainCount_, data->evalSize()) +
      readThroughNote(bytes, start, cached, cache.dir(), cacheNote);
  out = std::move(data);
  return okStatus();
}

Status SampleData::scanArray(
    const Array &a,
    const std::function<Status(const char *, size_t, uint64_t)> &chunk) const {
  for (size_t f = 0; f < readers_.size(); ++f) {
    uint64_t end =
        f + 1 < fileStarts_.size() ? fileStarts_[f + 1].first : count_;
    uint64_t first = fileStarts_[f].first * a.sampleBytes;
    TRAINC_RETURN_IF_ERROR(readers_[f].scan(
        a.offsets[f], (end - fileStarts_[f].first) * a.sampleBytes,
        [&](const char *p, size_t size) {
          TRAINC_RETURN_IF_ERROR(chunk(p, size, first));
          first += size;
          return okStatus();
        }));
  }
  return okStatus();
}

Status
SampleData::readThrough(uint64_t total,
                        const std::function<void(uint64_t, uint64_t)> &progress,
                        bool scan) {
  uint64_t done = 0;
  XXH3_state_t hashState; // on the stack: nothing to allocate or free
  XXH3_INITSTATE(&hashState);
  XXH3_state_t *state = &hashState;
  XXH3_64bits_reset(state);
  Status status = okStatus();
  for (Array &a : arrays_) {
    std::string key =
        a.name + '\0' + a.fileDType + '\0' + shapeString(a.sampleShape) + '\0';
    XXH3_64bits_update(state, key.data(), key.size());
    bool i64 = a.dtype == DType::I64, i32 = a.dtype == DType::I32;
    int64_t lo = std::numeric_limits<int64_t>::max(),
            hi = std::numeric_limits<int64_t>::min();
    if (!scan && !a.inMemory)
      continue;
    status = scanArray(a, [&](const char *p, size_t size, uint64_t) {
      done += size;
      if (progress)
        progress(done, total);
      if (a.inMemory)
        a.held.insert(a.held.end(), p, p + size);
      if (scan)
        XXH3_64bits_update(state, p, size);
      if (i64)
        for (size_t k = 0; k < size / 8; ++k) {
          int64_t v;
          std::memcpy(&v, p + 8 * k, 8);
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
      if (i32)
        for (size_t k = 0; k < size / 4; ++k) {
          int32_t v;
          std::memcpy(&v, p + 4 * k, 4);
          lo = std::min<int64_t>(lo, v);
          hi = std::max<int64_t>(hi, v);
        }
      return okStatus();
    });
    if (!status.ok())
      break;
    a.minValue = lo;
    a.maxValue = hi;
  }
  hash_ = XXH3_64bits_digest(state);
  return status;
}

Status SampleData::checkIds(const Array &a, int64_t bound) const {
  return checkRange(a, bound, std::nullopt, /*labels=*/false);
}

Status SampleData::checkLabels(const Array &a, int64_t classes,
                               std::optional<int64_t> ignored) const {
  return checkRange(a, classes, ignored, /*labels=*/true);
}

Status SampleData::checkRange(const Array &a, int64_t bound,
                              std::optional<int64_t> ignored,
                              bool labels) const {
  if (a.dtype != DType::I64 && a.dtype != DType::I32)
    return okStatus();
  if (a.minValue >= 0 && a.maxValue < bound)
    return okStatus();
  // Which one is outside (read again: this is an error).
  size_t width = dtypeSize(a.dtype), perSample = a.sampleBytes / width;
  Status bad = okStatus();
  Status scanned =
      scanArray(a, [&](const char *p, size_t size, uint64_t first) {
        for (size_t k = 0; k < size / width; ++k) {
          int64_t id;
          if (width == 8) {
            std::memcpy(&id, p + k * 8, 8);
          } else {
            int32_t v;
            std::memcpy(&v, p + k * 4, 4);
            id = v;
          }
          if ((id >= 0 && id < bound) || (ignored && id == *ignored))
            continue;
          uint64_t element = first / width + k;
          std::string where = sampleName(element / perSample) + ": " +
                              (labels ? "class label " : "token id ") +
                              std::to_string(id) + " at element " +
                              std::to_string(element % perSample) + " of '" +
                              a.name + "' is ";
          if (labels)
            bad = Status(StatusCode::kOutOfRange,
                         where + "outside the loss's " + std::to_string(bound) +
                             " classes" +
                             (ignored ? " (and not its ignore_index " +
                                            std::to_string(*ignored) + ")"
                                      : std::string()));
          else
            bad = Status(
                StatusCode::kOutOfRange,
                where + (id < 0 ? std::string("negative (token ids index the "
                                              "embedding's rows)")
                                : "outside the model's vocabulary "
                                  "of " +
                                      std::to_string(bound) + " ids"));
          return bad; // Stops the scan.
        }
        return okStatus();
      });
  if (!bad.ok())
    return bad;
  TRAINC_RETURN_IF_ERROR(scanned);
  // The range [min, max] held the ignored value, which the scan accepts.
  if (ignored)
    return okStatus();
  return internalError("'" + a.name + "': an id outside [0, " +
                       std::to_string(bound) + ") was not found again");
}

Status SampleData::epochOrder(uint64_t seed, uint64_t epoch,
                              std::vector<uint32_t> &out) const {
  // Indices fit 32 bits: at most kMaxSamples = 2^32 samples.
  try {
    std::vector<std::pair<uint64_t, uint32_t>> keyed(trainCount_);
    for (uint64_t i = 0; i < trainCount_; ++i)
      keyed[i] = {mixBits(seed, epoch, i), uint32_t(i)};
    std::sort(keyed.begin(), keyed.end());
    out.resize(trainCount_);
    for (uint64_t i = 0; i < trainCount_; ++i)
      out[i] = keyed[i].second;
  } catch (const std::bad_alloc &) {
    return Status(StatusCode::kOutOfRange,
                  "not enough memory to order the " + withCommas(trainCount_) +
                      " training samples of epoch " + std::to_string(epoch));
  }
  return okStatus();
}

size_t SampleData::fileOf(uint64_t i) const {
  if (fileStarts_.size() == 1)
    return 0;
  // The last file starting at or before i.
  auto after = std::upper_bound(
      fileStarts_.begin(), fileStarts_.end(), i,
      [](uint64_t v, const std::pair<uint64_t, std::string> &start) {
        return v < start.first;
      });
  return size_t(after - fileStarts_.begin()) - 1;
}

std::string SampleData::sampleName(uint64_t i) const {
  size_t f = fileOf(i);
  return fileStarts_[f].second + ", sample " +
         withCommas(i - fileStarts_[f].first);
}

Status SampleData::bind(const Session &train, const DataBinding &binding,
                        std::unique_ptr<Batches> &out) const {
  auto batches = std::make_unique<SampleBatches>(*this);
  TRAINC_RETURN_IF_ERROR(batches->bind(train, binding));
  out = std::move(batches);
  return okStatus();
}

} // namespace trainc
