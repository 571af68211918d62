//===- TokenData.cpp - Token streams and the batches drawn from them ------===//

#include "train/TokenData.h"

#include <cmath>
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

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

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

/// The splitmix64 finalizer of a linear mix of (seed, p, b): a batch's
/// windows depend on nothing else.
uint64_t mix(uint64_t seed, uint64_t p, uint64_t b) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + p * 0xBF58476D1CE4E5B9ull +
               b * 0x94D049BB133111EBull + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A uniform integer in [0, n) from 64 random bits (multiply-shift).
uint64_t uniform(uint64_t bits, uint64_t n) {
  return uint64_t((unsigned __int128)bits * n >> 64);
}

std::string withCommas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3)
    s.insert(size_t(i), ",");
  return s;
}

} // namespace

Status parseTokenFormat(const std::string &text, TokenFormat &out) {
  for (TokenFormat f : {TokenFormat::kAuto, TokenFormat::kTokens,
                        TokenFormat::kBin, TokenFormat::kBytes})
    if (text == tokenFormatName(f)) {
      out = f;
      return okStatus();
    }
  return invalidArgument("unknown data format '" + text +
                         "' (expected auto, tokens, bin or bytes)");
}

const char *tokenFormatName(TokenFormat format) {
  switch (format) {
  case TokenFormat::kAuto:
    return "auto";
  case TokenFormat::kTokens:
    return "tokens";
  case TokenFormat::kBin:
    return "bin";
  case TokenFormat::kBytes:
    return "bytes";
  }
  return "?";
}

Status TokenData::open(const TokenDataOptions &options,
                       std::unique_ptr<TokenData> &out) {
  if (options.paths.empty())
    return invalidArgument("no data files given");
  if (!(options.evalFraction >= 0 && options.evalFraction < 1))
    return invalidArgument("the held-out fraction must be in [0, 1), not " +
                           std::to_string(options.evalFraction));
  auto data = std::unique_ptr<TokenData>(new TokenData());
  TokenFormat first = TokenFormat::kAuto;
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
    TokenFormat format = options.format;
    if (format == TokenFormat::kAuto)
      format = bytes.size() >= sizeof kMagic &&
                       std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0
                   ? TokenFormat::kTokens
               : endsWith(path, ".bin") ? TokenFormat::kBin
                                        : TokenFormat::kBytes;
    if (first == TokenFormat::kAuto)
      first = format;
    else if (format != first)
      return invalidArgument(path + " is read as " + tokenFormatName(format) +
                             " but " + options.paths.front() + " as " +
                             tokenFormatName(first) +
                             ": give files of one format");
    data->fileStarts_.push_back({data->tokens_.size(), path});
    switch (format) {
    case TokenFormat::kTokens: {
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
    case TokenFormat::kBin: {
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
    case TokenFormat::kBytes:
      for (char c : bytes)
        data->tokens_.push_back(static_cast<unsigned char>(c));
      break;
    case TokenFormat::kAuto:
      break;
    }
  }
  size_t n = data->tokens_.size();
  data->trainTokens_ = n - size_t(std::floor(n * options.evalFraction));
  data->description_ =
      withCommas(n) + " tokens (" + tokenFormatName(first) + ") from " +
      (options.paths.size() == 1
           ? options.paths.front()
           : std::to_string(options.paths.size()) + " files") +
      "; " + withCommas(data->trainTokens_) + " for training, " +
      withCommas(data->evalTokens()) + " held out";
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
  if (data.trainTokens() < size_t(seq) + 1)
    return invalidArgument(
        "the training data has " + withCommas(data.trainTokens()) +
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
  return uniform(mix(seed_, p, uint64_t(b)), data_.trainTokens() - seq_);
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
  size_t held = data_.evalTokens();
  if (held < size_t(seq_) + 1)
    return 0;
  return int64_t((held - 1) / size_t(seq_)) / batch_;
}

void BatchSampler::evalBatch(int64_t index, void *tokens, void *targets,
                             bool int64Ids) const {
  for (int64_t b = 0; b < batch_; ++b)
    copyWindow(data_.trainTokens() + uint64_t(index * batch_ + b) * seq_, b,
               tokens, targets, int64Ids);
}

} // namespace trainc
