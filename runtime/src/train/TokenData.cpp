//===- TokenData.cpp - Token streams and the batches drawn from them ------===//

#include "train/TokenData.h"

#include "exec/Session.h"

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

/// Appends `count` little-endian ids of `width` bytes from `p`.
void appendIds(const char *p, size_t count, int width,
               std::vector<uint32_t> &out) {
  out.reserve(out.size() + count);
  for (size_t i = 0; i < count; ++i)
    out.push_back(width == 2 ? readLE<uint16_t>(p + 2 * i)
                             : readLE<uint32_t>(p + 4 * i));
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
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in)
      return notFound(path +
                      ": cannot open data file: " + std::strerror(errno));
    std::streamoff size = in.tellg();
    in.seekg(0);
    if (size < 0)
      return Status(StatusCode::kDataLoss, path + ": cannot read its size");
    std::vector<char> bytes;
    try {
      // The file once, then its tokens (4 bytes each, at most one per byte).
      bytes.resize(size_t(size));
      data->tokens_.reserve(data->tokens_.size() + bytes.size());
    } catch (const std::bad_alloc &) {
      return Status(StatusCode::kOutOfRange,
                    path + ": not enough memory to load " +
                        withCommas(uint64_t(size)) + " bytes of data");
    }
    if (!in.read(bytes.data(), std::streamsize(bytes.size())))
      return Status(StatusCode::kDataLoss, path + ": read error");
    if (bytes.empty())
      return invalidArgument(path + ": data file is empty");
    DataFormat format = options.format;
    if (format == DataFormat::kAuto)
      format = bytes.size() >= sizeof kMagic &&
                       std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0
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
    data->fileStarts_.push_back({data->tokens_.size(), path});
    switch (format) {
    case DataFormat::kTokens: {
      if (bytes.size() < sizeof kMagic ||
          std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return invalidArgument(path +
                               ": not a trainc token file (no TRAINCTK magic)");
      if (bytes.size() < kHeaderBytes)
        return Status(StatusCode::kDataLoss,
                      path + ": truncated token file header (" +
                          std::to_string(bytes.size()) + " of " +
                          std::to_string(kHeaderBytes) + " bytes)");
      uint32_t version = readLE<uint32_t>(bytes.data() + 8);
      uint32_t width = readLE<uint32_t>(bytes.data() + 12);
      uint64_t count = readLE<uint64_t>(bytes.data() + 16);
      if (version != kTokenFileVersion)
        return Status(StatusCode::kUnimplemented,
                      path + ": token file version " + std::to_string(version) +
                          ", but this runtime reads version " +
                          std::to_string(kTokenFileVersion));
      if (width != 2 && width != 4)
        return Status(StatusCode::kDataLoss,
                      path + ": token width " + std::to_string(width) +
                          " bytes in the header (expected 2 or 4)");
      uint64_t payload = bytes.size() - kHeaderBytes;
      if (count > payload / width || count * width != payload)
        return Status(StatusCode::kDataLoss,
                      path + ": the header says " + withCommas(count) +
                          " tokens of " + std::to_string(width) +
                          " bytes but the file holds " + withCommas(payload) +
                          " bytes after the header");
      if (count == 0)
        return invalidArgument(path + ": token file holds no tokens");
      appendIds(bytes.data() + kHeaderBytes, count, int(width), data->tokens_);
      break;
    }
    case DataFormat::kBin: {
      int width = options.binTokenBytes;
      if (width != 2 && width != 4)
        return invalidArgument(path + ": a headerless .bin file needs its "
                                      "token dtype (--token-dtype uint16 or "
                                      "uint32)");
      if (bytes.size() % width)
        return Status(StatusCode::kDataLoss,
                      path + ": " + withCommas(bytes.size()) +
                          " bytes is not a whole number of " +
                          std::to_string(width) + "-byte tokens");
      appendIds(bytes.data(), bytes.size() / width, width, data->tokens_);
      break;
    }
    case DataFormat::kBytes:
      for (char c : bytes)
        data->tokens_.push_back(static_cast<unsigned char>(c));
      break;
    case DataFormat::kAuto:
    case DataFormat::kSamples:
      break;
    }
  }
  size_t n = data->tokens_.size();
  data->trainTokens_ = size_t(trainingShare(n, options.evalFraction));
  data->description_ =
      withCommas(n) + " tokens (" + dataFormatName(first) + ") from " +
      (options.paths.size() == 1
           ? options.paths.front()
           : std::to_string(options.paths.size()) + " files") +
      "; " + withCommas(data->trainTokens_) + " for training, " +
      withCommas(data->evalSize()) + " held out";
  out = std::move(data);
  return okStatus();
}

Status TokenData::checkVocabulary(int64_t vocab) const {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (int64_t(tokens_[i]) < vocab)
      continue;
    size_t f = fileStarts_.size() - 1;
    while (fileStarts_[f].first > i)
      --f;
    return Status(StatusCode::kOutOfRange,
                  fileStarts_[f].second + ": token " +
                      withCommas(i - fileStarts_[f].first) + " is id " +
                      std::to_string(tokens_[i]) +
                      ", outside the model's vocabulary of " +
                      std::to_string(vocab) + " ids");
  }
  return okStatus();
}

uint64_t TokenData::contentHash() const {
  std::call_once(hashOnce_, [this] {
    hash_ = XXH3_64bits(tokens_.data(), tokens_.size() * sizeof(tokens_[0]));
  });
  return hash_;
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

void BatchSampler::copyWindow(uint64_t start, int64_t row, void *tokens,
                              void *targets, bool int64Ids) const {
  const uint32_t *w = data_.tokens().data() + start;
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
}

void BatchSampler::nextTrain(void *tokens, void *targets, bool int64Ids) {
  for (int64_t b = 0; b < batch_; ++b)
    copyWindow(windowStart(position_, firstWindow_ + b), b, tokens, targets,
               int64Ids);
  ++position_;
}

int64_t BatchSampler::evalBatchCount() const {
  size_t held = data_.evalSize();
  if (held < size_t(seq_) + 1)
    return 0;
  return int64_t((held - 1) / size_t(seq_)) / batch_;
}

void BatchSampler::evalBatch(int64_t index, void *tokens, void *targets,
                             bool int64Ids) const {
  for (int64_t b = 0; b < batch_; ++b)
    copyWindow(data_.trainSize() + uint64_t(index * batch_ + b) * seq_, b,
               tokens, targets, int64Ids);
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
    sampler_->nextTrain(tokens_.data(), targets_.data(), int64Ids_);
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
  sampler_->evalBatch(index, tokens_.data(), targets_.data(), int64Ids_);
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
