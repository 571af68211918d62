//===- Dataset.cpp - Training data and the batches drawn from it ----------===//

#include "train/Dataset.h"

#include "exec/Executable.h"
#include "io/FileReader.h"
#include "train/SampleData.h"
#include "train/TokenData.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <glob.h>
#include <sys/stat.h>

namespace trainc {
namespace {

constexpr DataFormat kFormats[] = {DataFormat::kAuto, DataFormat::kTokens,
                                   DataFormat::kBin, DataFormat::kBytes,
                                   DataFormat::kSamples};

/// `paths` with each glob pattern replaced by the files it matches, in byte
/// order of their names. A pattern is a path that names no file and holds
/// '*', '?' or '['; one that matches no regular file is an error, as is one
/// with a directory that cannot be read. Files are kept as given: one
/// given twice is read twice.
Status expandPatterns(const std::vector<std::string> &paths,
                      std::vector<std::string> &out) {
  for (const std::string &path : paths) {
    struct stat st;
    if (path.find_first_of("*?[") == std::string::npos ||
        ::stat(path.c_str(), &st) == 0) {
      out.push_back(path);
      continue;
    }
    glob_t found = {};
    int rc = ::glob(path.c_str(), GLOB_NOSORT | GLOB_ERR, nullptr, &found);
    std::vector<std::string> files;
    for (size_t i = 0; rc == 0 && i < found.gl_pathc; ++i)
      if (::stat(found.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode))
        files.push_back(found.gl_pathv[i]);
    ::globfree(&found);
    if (rc == GLOB_NOSPACE)
      return Status(StatusCode::kOutOfRange,
                    "not enough memory to list the files of '" + path + "'");
    if (rc == GLOB_ABORTED)
      return Status(StatusCode::kFailedPrecondition,
                    "cannot list the files of '" + path +
                        "': a directory in it cannot be read");
    if (files.empty())
      return notFound("no data file matches '" + path + "'");
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return okStatus();
}

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

Status Dataset::open(const DataOptions &given, std::unique_ptr<Dataset> &out) {
  if (given.paths.empty())
    return invalidArgument("no data files given");
  DataOptions options = given;
  options.paths.clear();
  TRAINC_RETURN_IF_ERROR(expandPatterns(given.paths, options.paths));
  FileReader::makeRoomFor(options.paths.size());
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

std::string describeData(uint64_t count, const std::string &what,
                         const std::vector<std::string> &paths,
                         uint64_t training, uint64_t heldOut) {
  return withCommas(count) + " " + what + " from " +
         (paths.size() == 1 ? paths.front()
                            : std::to_string(paths.size()) + " files") +
         "; " + withCommas(training) + " for training, " + withCommas(heldOut) +
         " held out";
}

std::string readThroughNote(uint64_t bytes,
                            std::chrono::steady_clock::time_point start,
                            bool cached, const std::string &cacheDir,
                            const std::string &cacheNote) {
  std::string note =
      cached ? "; checks and hash from the data cache " + cacheDir : "";
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!cached && seconds >= 1) {
    char text[96];
    std::snprintf(text, sizeof text, "; read through in %.1f s (%.0f MB/s)",
                  seconds, double(bytes) / 1e6 / seconds);
    note += text;
  }
  return note + (cacheNote.empty() ? "" : "; " + cacheNote);
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
