//===- TrainDataTest.cpp - Training data read from files, not memory ------===//
//
// TokenData and SampleData keep their files open and read a window or a
// sample at a time. These tests hold them to what the whole data would
// give: every format's ids across file boundaries and scan chunks, the
// content hash as it was defined when the data was read whole (checkpoints
// record it), the first id outside a vocabulary, and a file that shrinks
// while open, which must be an error naming it, never a crash.
//
//===----------------------------------------------------------------------===//

#include "TempDirTest.h"
#include "io/SafeTensors.h"
#include "train/SampleData.h"
#include "train/TokenData.h"

#include <gtest/gtest.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

namespace trainc {
namespace {

namespace fs = std::filesystem;

class TrainData : public testing::TempDirTest {
protected:
  /// Writes `ids` as a file of `format` (tokens or bin of `width` bytes,
  /// or bytes) named `name`; returns its path.
  std::string writeIds(const std::string &name, DataFormat format, int width,
                       const std::vector<uint32_t> &ids) {
    std::string bytes;
    auto put = [&](uint64_t v, int n) {
      for (int i = 0; i < n; ++i)
        bytes += char((v >> (8 * i)) & 0xff);
    };
    if (format == DataFormat::kTokens) {
      bytes = "TRAINCTK";
      put(1, 4);
      put(uint64_t(width), 4);
      put(ids.size(), 8);
    }
    for (uint32_t id : ids)
      put(id, format == DataFormat::kBytes ? 1 : width);
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), std::streamsize(bytes.size()));
    return path;
  }
};

std::vector<uint32_t> randomIds(size_t n, uint32_t bound, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint32_t> ids(n);
  for (uint32_t &id : ids)
    id = random() % bound;
  return ids;
}

TEST_F(TrainData, TokensReadAsTheWholeStreamInEveryFormat) {
  struct Case {
    DataFormat format;
    int width;
    const char *suffix;
  };
  // The first file of each is longer than a scan chunk (4 MiB).
  for (Case c :
       {Case{DataFormat::kTokens, 2, ".tok"},
        Case{DataFormat::kTokens, 4, ".tok"}, Case{DataFormat::kBin, 2, ".bin"},
        Case{DataFormat::kBin, 4, ".bin"},
        Case{DataFormat::kBytes, 1, ".txt"}}) {
    SCOPED_TRACE(std::string(dataFormatName(c.format)) + " of " +
                 std::to_string(c.width) + " bytes");
    uint32_t bound = c.width == 1 ? 256 : c.width == 2 ? 65536 : 1u << 31;
    size_t first = (FileReader::kScanChunk / size_t(c.width)) * 5 / 4 + 3;
    std::vector<uint32_t> a = randomIds(first, bound - 1, 1),
                          b = randomIds(30001, bound - 1, 2);
    // The largest id once, in the first file's second chunk.
    size_t at = first - 5;
    a[at] = bound - 1;
    DataOptions options;
    options.paths = {
        writeIds(std::string("a") + c.suffix, c.format, c.width, a),
        writeIds(std::string("b") + c.suffix, c.format, c.width, b)};
    options.binTokenBytes = c.format == DataFormat::kBin ? c.width : 0;
    std::unique_ptr<TokenData> data;
    Status s = TokenData::open(options, data);
    ASSERT_TRUE(s.ok()) << s.toString();
    std::vector<uint32_t> all = a;
    all.insert(all.end(), b.begin(), b.end());
    ASSERT_EQ(data->size(), all.size());
    // The hash a whole read gave: XXH3 of the ids as uint32.
    EXPECT_EQ(data->contentHash(),
              XXH3_64bits(all.data(), all.size() * sizeof(uint32_t)));
    // Windows anywhere, across the two files too.
    std::mt19937 random(7);
    std::vector<uint32_t> window;
    for (int k = 0; k < 200; ++k) {
      // Some longer than a read of 16 KiB, across files too.
      size_t count = k % 10 == 0 ? 20000 : 1 + random() % 700;
      uint64_t start =
          k < 20 ? first - count / 2 : random() % (all.size() - count);
      window.assign(count, 0);
      ASSERT_TRUE(data->read(start, count, window.data()).ok());
      ASSERT_TRUE(std::equal(window.begin(), window.end(), all.begin() + start))
          << "window of " << count << " at " << start;
    }
    EXPECT_TRUE(data->checkVocabulary(int64_t(bound)).ok());
    s = data->checkVocabulary(int64_t(bound) - 1);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
    EXPECT_EQ(s.message(), options.paths[0] + ": token " + withCommas(at) +
                               " is id " + std::to_string(bound - 1) +
                               ", outside the model's vocabulary of " +
                               std::to_string(bound - 1) + " ids");
  }
}

TEST_F(TrainData, AnIdOutsideTheVocabularyIsNamedInItsFile) {
  std::vector<uint32_t> a(300, 'a'), b(20, 'b');
  b[13] = 200;
  DataOptions options;
  options.paths = {writeIds("a.txt", DataFormat::kBytes, 1, a),
                   writeIds("b.txt", DataFormat::kBytes, 1, b)};
  std::unique_ptr<TokenData> data;
  ASSERT_TRUE(TokenData::open(options, data).ok());
  EXPECT_TRUE(data->checkVocabulary(201).ok());
  Status s = data->checkVocabulary(128);
  EXPECT_EQ(s.message(), options.paths[1] +
                             ": token 13 is id 200, outside the model's "
                             "vocabulary of 128 ids");
  // Reads past the data are refused, not looped over.
  std::vector<uint32_t> out(10);
  EXPECT_EQ(data->read(315, 10, out.data()).code(), StatusCode::kInternal);
  EXPECT_TRUE(data->read(310, 10, out.data()).ok());
}

// A pattern gives the files it matches in byte order of their names; a
// path that names a file is that file, even with '*' in its name.
TEST_F(TrainData, PatternsGiveTheirFilesInNameOrder) {
  writeIds("p2.txt", DataFormat::kBytes, 1, {'2'});
  writeIds("p10.txt", DataFormat::kBytes, 1, {'1', '0'});
  writeIds("p1.txt", DataFormat::kBytes, 1, {'1'});
  writeIds("q*.txt", DataFormat::kBytes, 1, {'q'});
  writeIds("qa.txt", DataFormat::kBytes, 1, {'a'}); // not read: no pattern
  fs::create_directory(dir_ / "p3.txt"); // not a regular file: left out
  DataOptions options;
  options.paths = {(dir_ / "p*.txt").string(), (dir_ / "q*.txt").string()};
  options.evalFraction = 0;
  std::unique_ptr<Dataset> data;
  Status s = Dataset::open(options, data);
  ASSERT_TRUE(s.ok()) << s.toString();
  auto *tokens = dynamic_cast<TokenData *>(data.get());
  ASSERT_NE(tokens, nullptr);
  std::vector<uint32_t> ids(5);
  ASSERT_TRUE(tokens->read(0, 5, ids.data()).ok());
  EXPECT_EQ(std::string(ids.begin(), ids.end()), "1102q");
  EXPECT_EQ(data->description(), "5 tokens (bytes) from 4 files; 5 for "
                                 "training, 0 held out");
  options.paths = {(dir_ / "none*.txt").string()};
  s = Dataset::open(options, data);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "no data file matches '" + (dir_ / "none*.txt").string() + "'");
}

// The opening pass says how far it is: bytes read so far, rising, up to
// all of them, for either kind of data.
TEST_F(TrainData, TheOpeningPassReportsProgress) {
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  auto check = [&](uint64_t total) {
    ASSERT_FALSE(calls.empty());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(calls[i].second, total);
      EXPECT_GT(calls[i].first, i ? calls[i - 1].first : 0);
    }
    EXPECT_EQ(calls.back().first, total);
  };
  size_t n = FileReader::kScanChunk; // ids of 2 bytes: two pieces
  DataOptions options;
  options.paths = {
      writeIds("a.tok", DataFormat::kTokens, 2, randomIds(n, 100, 4)),
      writeIds("b.tok", DataFormat::kTokens, 2, randomIds(1000, 100, 5))};
  options.progress = [&](uint64_t done, uint64_t total) {
    calls.push_back({done, total});
  };
  std::unique_ptr<Dataset> data;
  ASSERT_TRUE(Dataset::open(options, data).ok());
  check(2 * (n + 1000));
  EXPECT_EQ(calls.size(), 3u);

  calls.clear();
  std::vector<float> x(5000 * 300, 0.5f);
  std::string path = (dir_ / "s.safetensors").string();
  ASSERT_TRUE(
      writeSafetensors(path,
                       {{"x", DType::F32, {5000, 300}, x.data(), x.size() * 4}})
          .ok());
  options.paths = {path};
  ASSERT_TRUE(Dataset::open(options, data).ok());
  check(x.size() * 4);
}

TEST_F(TrainData, ATokenFileThatShrinksWhileOpenIsAnError) {
  std::vector<uint32_t> ids = randomIds(5000, 1000, 3);
  DataOptions options;
  options.paths = {writeIds("t.tok", DataFormat::kTokens, 2, ids)};
  std::unique_ptr<TokenData> data;
  ASSERT_TRUE(TokenData::open(options, data).ok());
  std::unique_ptr<BatchSampler> sampler;
  ASSERT_TRUE(BatchSampler::create(*data, 4, 64, 1, sampler).ok());
  std::vector<int64_t> tokens(4 * 64), targets(4 * 64);
  ASSERT_TRUE(sampler->nextTrain(tokens.data(), targets.data(), true).ok());
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t t = 0; t < 64; ++t) {
      uint64_t start = sampler->windowStart(0, b);
      ASSERT_EQ(tokens[size_t(b * 64 + t)], ids[start + uint64_t(t)]);
      ASSERT_EQ(targets[size_t(b * 64 + t)], ids[start + uint64_t(t) + 1]);
    }
  fs::resize_file(options.paths[0], 24 + 2 * 100);
  Status s;
  // Some batch soon reads past the new end.
  for (int p = 0; p < 20 && s.ok(); ++p)
    s = sampler->nextTrain(tokens.data(), targets.data(), true);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message().rfind(options.paths[0] +
                                  ": data file is now 224 bytes, but was "
                                  "10024 bytes when opened, and bytes ",
                              0),
            0u)
      << s.toString();
}

TEST_F(TrainData, SamplesReadAsTheWholeFiles) {
  // Two files of f32 [n, 3] pixels and i64 [n] labels.
  std::vector<std::vector<float>> pixels;
  std::vector<std::vector<int64_t>> labels;
  DataOptions options;
  for (int f = 0; f < 2; ++f) {
    size_t n = f == 0 ? 10 : 7;
    std::vector<float> x(n * 3);
    std::vector<int64_t> y(n);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(f * 1000 + int(i)) * 0.5f;
    for (size_t i = 0; i < n; ++i)
      y[i] = int64_t(f * 100 + int(i)) - 3;
    std::string path =
        (dir_ / ("s" + std::to_string(f) + ".safetensors")).string();
    ASSERT_TRUE(
        writeSafetensors(
            path,
            {{"pixels", DType::F32, {int64_t(n), 3}, x.data(), x.size() * 4},
             {"labels", DType::I64, {int64_t(n)}, y.data(), y.size() * 8}})
            .ok());
    options.paths.push_back(path);
    pixels.push_back(x);
    labels.push_back(y);
  }
  options.format = DataFormat::kSamples;
  std::unique_ptr<SampleData> data;
  Status s = SampleData::open(options, data);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(data->size(), 17u);
  ASSERT_EQ(data->arrays().size(), 2u);
  const SampleData::Array &l = data->arrays()[0], &x = data->arrays()[1];
  ASSERT_EQ(l.name, "labels");
  EXPECT_EQ(l.minValue, -3);
  EXPECT_EQ(l.maxValue, 103);
  for (uint64_t i = 0; i < 17; ++i) {
    size_t f = i < 10 ? 0 : 1, j = i < 10 ? i : i - 10;
    float px[3];
    int64_t label;
    ASSERT_TRUE(data->readSample(x, i, reinterpret_cast<char *>(px)).ok());
    ASSERT_TRUE(data->readSample(l, i, reinterpret_cast<char *>(&label)).ok());
    EXPECT_EQ(label, labels[f][j]);
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(px[c], pixels[f][j * 3 + size_t(c)]);
  }
  // The hash a whole read gave: each array's name, dtype and sample shape,
  // then its bytes over the files, in name order.
  XXH3_state_t *state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::string key = std::string("labels") + '\0' + "I64" + '\0' + "[]" + '\0';
  XXH3_64bits_update(state, key.data(), key.size());
  for (const auto &y : labels)
    XXH3_64bits_update(state, y.data(), y.size() * 8);
  key = std::string("pixels") + '\0' + "F32" + '\0' + "[3]" + '\0';
  XXH3_64bits_update(state, key.data(), key.size());
  for (const auto &p : pixels)
    XXH3_64bits_update(state, p.data(), p.size() * 4);
  EXPECT_EQ(data->contentHash(), XXH3_64bits_digest(state));
  XXH3_freeState(state);

  // Samples this small are held in memory, read when the files were
  // opened: a file that shrinks afterwards changes none of them.
  EXPECT_TRUE(x.inMemory && l.inMemory);
  fs::resize_file(options.paths[1], 64);
  float px[3];
  ASSERT_TRUE(data->readSample(x, 12, reinterpret_cast<char *>(px)).ok());
  for (int c = 0; c < 3; ++c)
    EXPECT_EQ(px[c], pixels[1][2 * 3 + size_t(c)]);
}

// Samples over kSmallSample bytes are read with a system call each, from
// the right file and offset (two files, every value different), and name
// a file that shrank when they read past its end.
TEST_F(TrainData, LargeSamplesAreReadFromTheirFiles) {
  DataOptions options;
  options.format = DataFormat::kSamples;
  std::vector<std::vector<float>> images;
  for (int f = 0; f < 2; ++f) {
    std::vector<float> image(3 * 2048);
    for (size_t i = 0; i < image.size(); ++i)
      image[i] = float(f * 100000 + int(i));
    std::vector<int64_t> labels = {f, f, f};
    std::string path =
        (dir_ / ("large" + std::to_string(f) + ".safetensors")).string();
    ASSERT_TRUE(
        writeSafetensors(
            path,
            {{"image", DType::F32, {3, 2048}, image.data(), image.size() * 4},
             {"labels", DType::I64, {3}, labels.data(), 24}})
            .ok());
    options.paths.push_back(path);
    images.push_back(image);
  }
  std::unique_ptr<SampleData> data;
  ASSERT_TRUE(SampleData::open(options, data).ok());
  const SampleData::Array &a = data->arrays()[0];
  ASSERT_EQ(a.name, "image");
  EXPECT_FALSE(a.inMemory);
  EXPECT_TRUE(data->arrays()[1].inMemory); // the labels
  std::vector<float> sample(2048);
  for (uint64_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        data->readSample(a, i, reinterpret_cast<char *>(sample.data())).ok());
    const std::vector<float> &image = images[i / 3];
    EXPECT_TRUE(std::equal(sample.begin(), sample.end(),
                           image.begin() + ptrdiff_t(i % 3) * 2048))
        << "sample " << i;
  }
  fs::resize_file(options.paths[1], 9000);
  char *out = reinterpret_cast<char *>(sample.data());
  EXPECT_TRUE(data->readSample(a, 2, out).ok());
  Status s = data->readSample(a, 5, out);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message().rfind(options.paths[1] +
                                  ": the safetensors file is now 9000 bytes, "
                                  "but was ",
                              0),
            0u)
      << s.toString();
}

// The id check over samples: the first id outside, named by its file, its
// sample in that file and its element, in a file's later scan piece and in
// a second file.
TEST_F(TrainData, SampleIdsOutsideTheirBoundAreNamed) {
  std::vector<std::vector<int32_t>> ids = {std::vector<int32_t>(300000 * 4),
                                           std::vector<int32_t>(5 * 4)};
  for (auto &v : ids)
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = int32_t(i % 10);
  ids[0][290000 * 4 + 3] = 10; // byte 4,640,012: the second 4 MiB piece
  ids[1][2 * 4 + 1] = -1;
  DataOptions options;
  options.format = DataFormat::kSamples;
  for (size_t f = 0; f < 2; ++f) {
    std::string path =
        (dir_ / ("ids" + std::to_string(f) + ".safetensors")).string();
    int64_t n = int64_t(ids[f].size() / 4);
    ASSERT_TRUE(
        writeSafetensors(
            path,
            {{"tokens", DType::I32, {n, 4}, ids[f].data(), ids[f].size() * 4}})
            .ok());
    options.paths.push_back(path);
  }
  std::unique_ptr<SampleData> data;
  ASSERT_TRUE(SampleData::open(options, data).ok());
  const SampleData::Array &a = data->arrays()[0];
  EXPECT_EQ(a.minValue, -1);
  EXPECT_EQ(a.maxValue, 10);
  EXPECT_EQ(data->checkIds(a, 10).message(),
            options.paths[0] +
                ", sample 290,000: token id 10 at element 3 of 'tokens' is "
                "outside the model's vocabulary of 10 ids");
  EXPECT_EQ(data->checkIds(a, 11).message(),
            options.paths[1] +
                ", sample 2: token id -1 at element 1 of 'tokens' is "
                "negative (token ids index the embedding's rows)");
  // As class labels of a loss: -1 passes as its ignore_index, 10 does not;
  // without an ignore_index -1 is named.
  EXPECT_EQ(data->checkLabels(a, 10, -1).message(),
            options.paths[0] +
                ", sample 290,000: class label 10 at element 3 of 'tokens' is "
                "outside the loss's 10 classes (and not its ignore_index -1)");
  EXPECT_TRUE(data->checkLabels(a, 11, -1).ok());
  EXPECT_EQ(data->checkLabels(a, 11, std::nullopt).message(),
            options.paths[1] +
                ", sample 2: class label -1 at element 1 of 'tokens' is "
                "outside the loss's 11 classes");
}

} // namespace
} // namespace trainc
