//===- TokenData.cpp - Token streams and the batches drawn from them ------===//

#include "train/TokenData.h"

#include "exec/Session.h"
#include "train/ScanCache.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace trainc {
namespace {

constexpr char kMagic[8] = {'T', 'R', 'A', 'I', 'N', 'C', 'T', 'K'};
constexpr uint32_t kTokenFileVersion = 1;
constexpr size_t kHeaderBytes = 24;

template <typename T> T readLE(const char *p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= T(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

/// Widens `n` little-endian ids of `width` bytes from `bytes` into `out`
/// (loops the compiler vectorizes: the scan reads every id of the data).
void widen(const char *bytes, size_t n, int width, uint32_t *out) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "token files are little-endian, read as the host's order");
  if (width == 4) {
    std::memcpy(out, bytes, n * 4);
  } else if (width == 2) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * i, 2);
      out[i] = v;
    }
  } else {
    for (size_t i = 0; i < n; ++i)
      out[i] = static_cast<unsigned char>(bytes[i]);
  }
}

/// A uniform integer in [0, n) from 64 random bits (multiply-shift).
uint64_t uniform(uint64_t bits, uint64_t n) {
  return uint64_t((unsigned __int128)bits * n >> 64);
}

} // namespace

bool TokenData::hasMagic(const std::string &path) {
  char head[sizeof kMagic] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(head, sizeof head) &&
         std::memcmp(head, kMagic, sizeof kMagic) == 0;
}

Status TokenData::open(const DataOptions &options,
                       std::unique_ptr<TokenData> &out) {
  if (options.paths.empty())
    return invalidArgument("no data files given");
  if (options.format == DataFormat::kSamples)
    return internalError("TokenData::open given sample data");
  auto data = std::unique_ptr<TokenData>(new TokenData());
  DataFormat first = DataFormat::kAuto;
  for (const std::string &path : options.paths) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return invalidArgument(path + ": is a directory, not a data file");
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      return invalidArgument(path + ": not a regular file (a device, pipe or "
                                    "socket), so not a data file");
    File file;
    TRAINC_RETURN_IF_ERROR(FileReader::open(path, "data file", file.reader));
    uint64_t size = file.reader.size();
    if (size == 0)
      return invalidArgument(path + ": data file is empty");
    char head[kHeaderBytes] = {};
    TRAINC_RETURN_IF_ERROR(file.reader.read(
        0, size_t(std::min<uint64_t>(size, kHeaderBytes)), head));
    DataFormat format = options.format;
    if (format == DataFormat::kAuto)
      format =
          size >= sizeof kMagic && std::memcmp(head, kMagic, sizeof kMagic) == 0
              ? DataFormat::kTokens
          : pathEndsWith(path, ".bin") ? DataFormat::kBin
                                       : DataFormat::kBytes;
    if (first == DataFormat::kAuto)
      first = format;
    else if (format != first)
      return invalidArgument(path + " is read as " + dataFormatName(format) +
                             " but " + options.paths.front() + " as " +
                             dataFormatName(first) +
                             ": give files of one format");
    switch (format) {
    case DataFormat::kTokens: {
      if (size < sizeof kMagic || std::memcmp(head, kMagic, sizeof kMagic) != 0)
        return invalidArgument(path +
                               ": not a trainc token file (no TRAINCTK magic)");
      if (size < kHeaderBytes)
        return Status(StatusCode::kDataLoss,
                      path + ": truncated token file header (" +
                          std::to_string(size) + " of " +
                          std::to_string(kHeaderBytes) + " bytes)");
      uint32_t version = readLE<uint32_t>(head + 8);
      uint32_t width = readLE<uint32_t>(head + 12);
      uint64_t count = readLE<uint64_t>(head + 16);
      if (version != kTokenFileVersion)
        return Status(StatusCode::kUnimplemented,
                      path + ": token file version " + std::to_string(version) +
                          ", but this runtime reads version " +
                          std::to_string(kTokenFileVersion));
      if (width != 2 && width != 4)
        return Status(StatusCode::kDataLoss,
                      path + ": token width " + std::to_string(width) +
                          " bytes in the header (expected 2 or 4)");
      uint64_t payload = size - kHeaderBytes;
      if (count > payload / width || count * width != payload)
        return Status(StatusCode::kDataLoss,
                      path + ": the header says " + withCommas(count) +
                          " tokens of " + std::to_string(width) +
                          " bytes but the file holds " + withCommas(payload) +
                          " bytes after the header");
      if (count == 0)
        return invalidArgument(path + ": token file holds no tokens");
      file.payload = kHeaderBytes;
      file.width = int(width);
      file.count = count;
      break;
    }
    case DataFormat::kBin: {
      int width = options.binTokenBytes;
      if (width != 2 && width != 4)
        return invalidArgument(path + ": a headerless .bin file needs its "
                                      "token dtype (--token-dtype uint16 or "
                                      "uint32)");
      if (size % uint64_t(width))
        return Status(StatusCode::kDataLoss,
                      path + ": " + withCommas(size) +
                          " bytes is not a whole number of " +
                          std::to_string(width) + "-byte tokens");
      file.width = width;
      file.count = size / uint64_t(width);
      break;
    }
    case DataFormat::kBytes:
      file.count = size;
      break;
    case DataFormat::kAuto:
    case DataFormat::kSamples:
      break;
    }
    file.first = data->count_;
    data->count_ += file.count;
    data->files_.push_back(std::move(file));
  }
  // One pass over every id: the hash, and each file's largest id for the
  // vocabulary check; or both from the data cache.
  auto start = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  std::vector<const FileReader *> readers;
  std::string layout = std::string("tokens ") + dataFormatName(first);
  for (const File &file : data->files_) {
    bytes += file.count * uint64_t(file.width);
    readers.push_back(&file.reader);
    layout += " " + std::to_string(file.payload) + ":" +
              std::to_string(file.width) + ":" + std::to_string(file.count);
  }
  ScanCache cache = ScanCache::begin(options.cacheDir, layout, readers);
  std::vector<uint64_t> values;
  bool cached = cache.find(values) && values.size() == data->files_.size() + 1;
  std::string cacheNote;
  if (cached) {
    data->hash_ = values[0];
    for (size_t f = 0; f < data->files_.size(); ++f)
      data->files_[f].maxId = uint32_t(values[f + 1]);
  } else {
    XXH3_state_t hashState; // on the stack: nothing to allocate or free
    XXH3_INITSTATE(&hashState);
    XXH3_state_t *state = &hashState;
    XXH3_64bits_reset(state);
    uint64_t done = 0;
    for (File &file : data->files_) {
      Status s = data->scanIds(file, [&](const uint32_t *ids, size_t n) {
        done += n * uint64_t(file.width);
        if (options.progress)
          options.progress(done, bytes);
        XXH3_64bits_update(state, ids, n * sizeof(uint32_t));
        uint32_t largest = file.maxId; // a local: ids may alias a member
        for (size_t i = 0; i < n; ++i)
          largest = std::max(largest, ids[i]);
        file.maxId = largest;
        return okStatus();
      });
      TRAINC_RETURN_IF_ERROR(s);
    }
    data->hash_ = XXH3_64bits_digest(state);
    values = {data->hash_};
    for (const File &file : data->files_)
      values.push_back(file.maxId);
    cacheNote = cache.store(values);
  }
  uint64_t n = data->count_;
  data->trainTokens_ = trainingShare(n, options.evalFraction);
  data->description_ =
      describeData(n, std::string("tokens (") + dataFormatName(first) + ")",
                   options.paths, data->trainTokens_, data->evalSize()) +
      readThroughNote(bytes, start, cached, cache.dir(), cacheNote);
  out = std::move(data);
  return okStatus();
}

Status TokenData::scanIds(
    const File &file,
    const std::function<Status(const uint32_t *, size_t)> &ids) const {
  // Chunks of whole ids.
  uint64_t perChunk = FileReader::kScanChunk / uint64_t(file.width);
  std::vector<uint32_t> chunk(size_t(std::min(perChunk, file.count)));
  return file.reader.scan(file.payload, file.count * uint64_t(file.width),
                          [&](const char *bytes, size_t size) {
                            size_t n = size / size_t(file.width);
                            widen(bytes, n, file.width, chunk.data());
                            return ids(chunk.data(), n);
                          });
}

size_t TokenData::fileOf(uint64_t i) const {
  auto after =
      std::upper_bound(files_.begin(), files_.end(), i,
                       [](uint64_t v, const File &f) { return v < f.first; });
  return size_t(after - files_.begin()) - 1;
}

Status TokenData::read(uint64_t start, size_t count, uint32_t *out) const {
  if (start > count_ || count > count_ - start)
    return internalError("tokens " + std::to_string(start) + "-" +
                         std::to_string(start + count) + " of " +
                         withCommas(count_) + " read");
  // Through a buffer on the stack (a window of 4,096 uint32 ids, or more
  // narrower ones, in one read), widened as the scan widens.
  char bytes[16384];
  while (count > 0) {
    const File &file = files_[fileOf(start)];
    size_t n =
        size_t(std::min<uint64_t>({count, file.first + file.count - start,
                                   sizeof bytes / size_t(file.width)}));
    TRAINC_RETURN_IF_ERROR(file.reader.read(
        file.payload + (start - file.first) * uint64_t(file.width),
        n * size_t(file.width), bytes));
    widen(bytes, n, file.width, out);
    start += n;
    count -= n;
    out += n;
  }
  return okStatus();
}

void TokenData::willNeed(uint64_t start, size_t count) const {
  if (start > count_)
    return;
  count = size_t(std::min<uint64_t>(count, count_ - start));
  while (count > 0) {
    const File &file = files_[fileOf(start)];
    size_t n =
        size_t(std::min<uint64_t>(count, file.first + file.count - start));
    file.reader.willNeed(file.payload +
                             (start - file.first) * uint64_t(file.width),
                         n * uint64_t(file.width));
    start += n;
    count -= n;
  }
}

Status TokenData::checkVocabulary(int64_t vocab) const {
  for (const File &file : files_) {
    if (int64_t(file.maxId) < vocab)
      continue;
    // Where the first id outside it is (read again: this is an error).
    uint64_t at = 0;
    uint32_t id = 0;
    Status found = scanIds(file, [&](const uint32_t *ids, size_t n) {
      for (size_t i = 0; i < n; ++i)
        if (int64_t(ids[i]) >= vocab) {
          id = ids[i];
          at += i;
          return Status(StatusCode::kOutOfRange, "found");
        }
      at += n;
      return okStatus();
    });
    if (found.code() != StatusCode::kOutOfRange)
      return found.ok() ? internalError(file.reader.path() +
                                        ": its largest id was not found again")
                        : found;
    return Status(StatusCode::kOutOfRange,
                  file.reader.path() + ": token " + withCommas(at) + " is id " +
                      std::to_string(id) +
                      ", outside the model's vocabulary of " +
                      std::to_string(vocab) + " ids");
  }
  return okStatus();
}

Status BatchSampler::create(const TokenData &data, int64_t batch, int64_t seq,
                            uint64_t seed, std::unique_ptr<BatchSampler> &out) {
  if (batch < 1 || seq < 1)
    return invalidArgument("batches need a positive size and length");
  if (data.trainSize() < size_t(seq) + 1)
    return invalidArgument(
        "the training data has " + withCommas(data.trainSize()) +
        " tokens but one sequence needs " + withCommas(uint64_t(seq) + 1) +
        " (the model's sequence length " + std::to_string(seq) +
        " plus the shifted target): " + data.description());
  auto sampler = std::unique_ptr<BatchSampler>(new BatchSampler(data));
  sampler->batch_ = batch;
  sampler->seq_ = seq;
  sampler->seed_ = seed;
  out = std::move(sampler);
  return okStatus();
}

uint64_t BatchSampler::windowStart(uint64_t p, int64_t b) const {
  return uniform(mixBits(seed_, p, uint64_t(b)), data_.trainSize() - seq_);
}

Status BatchSampler::copyWindow(uint64_t start, int64_t row, void *tokens,
                                void *targets, bool int64Ids) {
  window_.resize(size_t(seq_) + 1);
  TRAINC_RETURN_IF_ERROR(data_.read(start, window_.size(), window_.data()));
  const uint32_t *w = window_.data();
  for (int64_t t = 0; t < seq_; ++t) {
    size_t at = size_t(row * seq_ + t);
    if (int64Ids) {
      static_cast<int64_t *>(tokens)[at] = w[t];
      static_cast<int64_t *>(targets)[at] = w[t + 1];
    } else {
      static_cast<int32_t *>(tokens)[at] = int32_t(w[t]);
      static_cast<int32_t *>(targets)[at] = int32_t(w[t + 1]);
    }
  }
  return okStatus();
}

Status BatchSampler::nextTrain(void *tokens, void *targets, bool int64Ids) {
  for (int64_t b = 0; b < batch_; ++b)
    TRAINC_RETURN_IF_ERROR(copyWindow(windowStart(position_, firstWindow_ + b),
                                      b, tokens, targets, int64Ids));
  ++position_;
  // The next batch's windows, for the page cache to fetch during the step.
  for (int64_t b = 0; b < batch_; ++b)
    data_.willNeed(windowStart(position_, firstWindow_ + b), size_t(seq_) + 1);
  return okStatus();
}

int64_t BatchSampler::evalBatchCount() const {
  size_t held = data_.evalSize();
  if (held < size_t(seq_) + 1)
    return 0;
  return int64_t((held - 1) / size_t(seq_)) / batch_;
}

Status BatchSampler::evalBatch(int64_t index, void *tokens, void *targets,
                               bool int64Ids) {
  for (int64_t b = 0; b < batch_; ++b)
    TRAINC_RETURN_IF_ERROR(
        copyWindow(data_.trainSize() + uint64_t(index * batch_ + b) * seq_, b,
                   tokens, targets, int64Ids));
  return okStatus();
}

namespace {

bool isIdInput(const TensorInfo &t) {
  return (t.dtype == DType::I64 || t.dtype == DType::I32) &&
         t.shape.size() == 2;
}

/// The input named `name`; -1 when there is none.
int inputNamed(const Executable &exe, const std::string &name) {
  for (size_t i = 0; i < exe.inputs().size(); ++i)
    if (exe.tensors()[exe.inputs()[i]].name == name)
      return int(i);
  return -1;
}

/// Token and target windows fed to a language model's [batch, seq] id
/// inputs (BatchSampler draws them).
class TokenBatches : public Batches {
public:
  TokenBatches(const TokenData &data) : data_(data) {}

  Status bind(const Session &session, const DataBinding &binding);

  Status feedNext(Session &train) override {
    TRAINC_RETURN_IF_ERROR(
        sampler_->nextTrain(tokens_.data(), targets_.data(), int64Ids_));
    size_t bytes = size_t(batch_ * seq_) * (int64Ids_ ? 8 : 4);
    TRAINC_RETURN_IF_ERROR(train.setInput(tokensIndex_, tokens_.data(), bytes));
    return train.setInput(targetsIndex_, targets_.data(), bytes);
  }
  Status bindEval(const Executable &eval) override;
  int64_t evalBatchCount() const override { return sampler_->evalBatchCount(); }
  Status feedEval(int64_t index, Session &eval,
                  const std::function<Status()> &runPiece) override;
  std::string evalTooShort() const override {
    return "the held-out split is too short for one evaluation batch of " +
           std::to_string(batch_) + " x " + std::to_string(seq_ + 1) +
           " tokens: " + data_.description() +
           " (raise the held-out fraction or give more data)";
  }

  uint64_t position() const override { return sampler_->position(); }
  void setPosition(uint64_t position) override {
    sampler_->setPosition(position);
  }
  uint64_t seed() const override { return sampler_->seed(); }
  int64_t dataRanks() const override { return dataRanks_; }
  int64_t tokensPerStep() const override { return batch_ * dataRanks_ * seq_; }
  int64_t samplesPerStep() const override { return 0; }
  std::string describe() const override {
    return "batch " + std::to_string(batch_) + " x " + std::to_string(seq_) +
           " tokens";
  }

private:
  const TokenData &data_;
  std::unique_ptr<BatchSampler> sampler_;
  const Executable *train_ = nullptr;
  /// This rank's batch (the executable's) and sequence length.
  int64_t batch_ = 0, seq_ = 0, dataRanks_ = 1;
  /// The inputs fed, in the training and evaluation executables.
  size_t tokensIndex_ = 0, targetsIndex_ = 0;
  size_t evalTokensIndex_ = 0, evalTargetsIndex_ = 0;
  /// Pieces of a training batch the evaluation executable takes at a time
  /// (its batch a divisor of the training batch: a --grad-accum K step
  /// takes K of the forward's batches).
  int64_t evalPieces_ = 1;
  bool int64Ids_ = true;
  std::vector<int64_t> tokens_, targets_;
};

Status TokenBatches::bind(const Session &session, const DataBinding &binding) {
  const Executable &exe = session.executable();
  train_ = &exe;
  // The compiler's training signature says which input is which; the
  // binding overrides it (by name) where it could not tell.
  const TrainingSignature &sig = exe.signature();
  int tokens = binding.tokensInput.empty()
                   ? sig.tokens
                   : inputNamed(exe, binding.tokensInput);
  int targets = binding.targetsInput.empty()
                    ? sig.targets
                    : inputNamed(exe, binding.targetsInput);
  std::string inputs = describeInputs(exe);
  for (auto [index, chosen] : {std::pair(tokens, &binding.tokensInput),
                               std::pair(targets, &binding.targetsInput)})
    if (index < 0 && !chosen->empty())
      return invalidArgument("'" + *chosen + "' is not an input of " +
                             exe.origin() + " (its inputs: " + inputs + ")");
  if (tokens < 0 || targets < 0)
    return invalidArgument(
        exe.origin() + " does not say which input takes the " +
        (tokens < 0 ? "token" : "target") +
        " ids (the compiler could not tell from the loss; its inputs: " +
        inputs +
        "); name them with --tokens-input/--targets-input, or, for a model "
        "that is not a language model, give sample data (.safetensors)");
  const TensorInfo &tt = exe.tensors()[exe.inputs()[size_t(tokens)]];
  const TensorInfo &yt = exe.tensors()[exe.inputs()[size_t(targets)]];
  if (!isIdInput(tt) || tt.shape != yt.shape || tt.dtype != yt.dtype)
    return invalidArgument("the token and target inputs of " + exe.origin() +
                           " must be int64 or int32 [batch, sequence] of one "
                           "shape; they are " +
                           inputs);
  if (exe.inputs().size() != 2)
    return invalidArgument(exe.origin() +
                           " has inputs token data cannot "
                           "feed (" +
                           inputs + "); give sample data (.safetensors)");
  tokensIndex_ = size_t(tokens);
  targetsIndex_ = size_t(targets);
  batch_ = tt.shape[0];
  seq_ = tt.shape[1];
  int64Ids_ = tt.dtype == DType::I64;
  tokens_.assign(size_t(batch_ * seq_), 0);
  targets_.assign(size_t(batch_ * seq_), 0);
  if (int64_t vocab = exe.signature().vocabulary; vocab > 0)
    TRAINC_RETURN_IF_ERROR(data_.checkVocabulary(vocab));
  TRAINC_RETURN_IF_ERROR(
      BatchSampler::create(data_, batch_, seq_, binding.seed, sampler_));
  // Data parallelism: the inputs are this rank's part of the global batch,
  // split over a mesh axis; rank i on it reads part i.
  if (!tt.shardAxes.empty() && tt.shardAxes[0] >= 0) {
    int axis = tt.shardAxes[0];
    dataRanks_ = exe.mesh()[axis].size;
    sampler_->setFirstWindow(batch_ *
                             session.device().collective().coordinate(axis));
  }
  return okStatus();
}

Status TokenBatches::bindEval(const Executable &eval) {
  const Executable &train = *train_;
  const TensorInfo &tt = train.tensors()[train.inputs()[tokensIndex_]];
  evalTokensIndex_ = eval.inputs().size();
  evalTargetsIndex_ = eval.inputs().size();
  for (size_t i = 0; i < eval.inputs().size(); ++i) {
    const TensorInfo &t = eval.tensors()[eval.inputs()[i]];
    if (t.name == tt.name)
      evalTokensIndex_ = i;
    else if (t.name == train.tensors()[train.inputs()[targetsIndex_]].name)
      evalTargetsIndex_ = i;
    // The training batch, or a divisor of it with the same sequence (the
    // forward of a --grad-accum K step's micro-batch): it then takes a
    // held-out batch in pieces.
    bool pieces = t.shape.size() == 2 && tt.shape.size() == 2 &&
                  t.shape[1] == tt.shape[1] && t.shape[0] > 0 &&
                  tt.shape[0] % t.shape[0] == 0;
    if (!pieces || t.dtype != tt.dtype)
      return invalidArgument(
          "input '" + t.name + "' of " + eval.origin() + " is " +
          dtypeName(t.dtype) + shapeString(t.shape) +
          " but the training batches are " + dtypeName(tt.dtype) +
          shapeString(tt.shape) +
          " (an evaluation batch must be the training batch or a divisor "
          "of it, of the same sequence length)");
    // Both inputs the same batch (the pieces split both).
    if (i > 0 && tt.shape[0] / t.shape[0] != evalPieces_)
      return invalidArgument(eval.origin() +
                             "'s inputs have different batch sizes");
    evalPieces_ = tt.shape[0] / t.shape[0];
  }
  if (eval.inputs().size() != 2 || evalTokensIndex_ == eval.inputs().size() ||
      evalTargetsIndex_ == eval.inputs().size())
    return invalidArgument(
        eval.origin() + " must take the same two inputs as " + train.origin());
  return okStatus();
}

Status TokenBatches::feedEval(int64_t index, Session &eval,
                              const std::function<Status()> &runPiece) {
  // A held-out batch in evalPieces_ pieces of the evaluation's batch.
  TRAINC_RETURN_IF_ERROR(
      sampler_->evalBatch(index, tokens_.data(), targets_.data(), int64Ids_));
  size_t bytes = size_t(batch_ * seq_) * (int64Ids_ ? 8 : 4);
  size_t piece = bytes / size_t(evalPieces_);
  auto *tokens = reinterpret_cast<const char *>(tokens_.data());
  auto *targets = reinterpret_cast<const char *>(targets_.data());
  for (int64_t k = 0; k < evalPieces_; ++k) {
    TRAINC_RETURN_IF_ERROR(
        eval.setInput(evalTokensIndex_, tokens + k * piece, piece));
    TRAINC_RETURN_IF_ERROR(
        eval.setInput(evalTargetsIndex_, targets + k * piece, piece));
    TRAINC_RETURN_IF_ERROR(runPiece());
  }
  return okStatus();
}

} // namespace

Status TokenData::bind(const Session &train, const DataBinding &binding,
                       std::unique_ptr<Batches> &out) const {
  auto batches = std::make_unique<TokenBatches>(*this);
  TRAINC_RETURN_IF_ERROR(batches->bind(train, binding));
  out = std::move(batches);
  return okStatus();
}

} // namespace trainc
