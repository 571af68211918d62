//===- Dataset.cpp - Training data and the batches drawn from it ----------===//

#include "train/Dataset.h"

#include "exec/Executable.h"
#include "train/SampleData.h"
#include "train/TokenData.h"

#include <cmath>
#include <cstring>

namespace trainc {
namespace {

constexpr DataFormat kFormats[] = {DataFormat::kAuto, DataFormat::kTokens,
                                   DataFormat::kBin, DataFormat::kBytes,
                                   DataFormat::kSamples};

} // namespace

Status parseDataFormat(const std::string &text, DataFormat &out) {
  for (DataFormat f : kFormats)
    if (text == dataFormatName(f)) {
      out = f;
      return okStatus();
    }
  return invalidArgument("unknown data format '" + text +
                         "' (expected auto, tokens, bin, bytes or samples)");
}

const char *dataFormatName(DataFormat format) {
  switch (format) {
  case DataFormat::kAuto:
    return "auto";
  case DataFormat::kTokens:
    return "tokens";
  case DataFormat::kBin:
    return "bin";
  case DataFormat::kBytes:
    return "bytes";
  case DataFormat::kSamples:
    return "samples";
  }
  return "?";
}

Status Dataset::open(const DataOptions &options,
                     std::unique_ptr<Dataset> &out) {
  if (options.paths.empty())
    return invalidArgument("no data files given");
  if (!(options.evalFraction >= 0 && options.evalFraction < 1))
    return invalidArgument("the held-out fraction must be in [0, 1), not " +
                           std::to_string(options.evalFraction));
  // One kind for all files: the first one's, when `auto` picks by name (a
  // token file is one by its magic, whatever its name).
  auto samplesByName = [&](const std::string &path) {
    return options.format == DataFormat::kAuto &&
           pathEndsWith(path, ".safetensors") && !TokenData::hasMagic(path);
  };
  bool samples = options.format == DataFormat::kSamples ||
                 samplesByName(options.paths.front());
  if (samples) {
    std::unique_ptr<SampleData> data;
    TRAINC_RETURN_IF_ERROR(SampleData::open(options, data));
    out = std::move(data);
    return okStatus();
  }
  for (const std::string &path : options.paths)
    if (samplesByName(path))
      return invalidArgument(path + " holds samples but " +
                             options.paths.front() +
                             " tokens: give files of one kind");
  std::unique_ptr<TokenData> data;
  TRAINC_RETURN_IF_ERROR(TokenData::open(options, data));
  out = std::move(data);
  return okStatus();
}

uint64_t trainingShare(uint64_t n, double evalFraction) {
  return n - uint64_t(std::floor(double(n) * evalFraction));
}

std::string describeInputs(const Executable &exe) {
  std::string s;
  for (uint32_t id : exe.inputs())
    s += (s.empty() ? "'" : ", '") + exe.tensors()[id].name + "' " +
         dtypeName(exe.tensors()[id].dtype) +
         shapeString(exe.tensors()[id].shape);
  return s.empty() ? std::string("none") : s;
}

bool pathEndsWith(const std::string &path, const char *suffix) {
  size_t n = std::strlen(suffix);
  return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
}

std::string withCommas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3)
    s.insert(size_t(i), ",");
  return s;
}

uint64_t mixBits(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + a * 0xBF58476D1CE4E5B9ull +
               b * 0x94D049BB133111EBull + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

} // namespace trainc
