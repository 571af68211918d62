//===- DataCacheTest.cpp - The opening pass's results, kept --------------===//
//
// DataOptions.cacheDir keeps what reading the data through found (its hash,
// the ids' ranges) so that opening the same unchanged files again skips
// that read (train/ScanCache.h). These tests hold a cached open to what a
// read gives, and the cache to its rules: a file changed in place (same
// size, its modification time set back), replaced, or written during the
// read is read again; a file changed less than a second before the read is
// not stored (two seconds for whole-second times); an entry damaged
// anywhere is a miss; a cache that cannot be written is noted, not an
// error; a store removes entries unused for 30 days and dead writers'
// temporary files, and nothing else.
//
//===----------------------------------------------------------------------===//

#include "TempDirTest.h"
#include "io/SafeTensors.h"
#include "train/SampleData.h"
#include "train/ScanCache.h"
#include "train/TokenData.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace trainc {
namespace {

namespace fs = std::filesystem;

constexpr const char *kFromCache = "; checks and hash from the data cache ";

class DataCache : public testing::TempDirTest {
protected:
  std::string cacheDir() const { return (dir_ / "cache").string(); }

  /// Waits until files written so far are old enough to be cached.
  static void settle() {
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(ScanCache::kSettleNs + 100000000));
  }

  /// The cache's entries.
  std::vector<fs::path> entries() const {
    std::vector<fs::path> found;
    if (fs::exists(cacheDir()))
      for (const auto &e : fs::directory_iterator(cacheDir()))
        found.push_back(e.path());
    return found;
  }

  /// Writes `ids` as uint16 (a headerless .bin file) to `name`.
  std::string writeBin(const std::string &name,
                       const std::vector<uint16_t> &ids) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(ids.data()),
               std::streamsize(ids.size() * 2));
    return path;
  }

  /// Opens the token files `paths` as uint16 .bin, through the cache or
  /// not; counts the progress calls in `calls`.
  std::unique_ptr<TokenData> openTokens(const std::vector<std::string> &paths,
                                        bool cached, int *calls = nullptr,
                                        DataFormat format = DataFormat::kBin) {
    DataOptions options;
    options.paths = paths;
    options.format = format;
    options.binTokenBytes = format == DataFormat::kBin ? 2 : 0;
    options.cacheDir = cached ? cacheDir() : "";
    if (calls)
      options.progress = [calls](uint64_t, uint64_t) { ++*calls; };
    std::unique_ptr<TokenData> data;
    Status s = TokenData::open(options, data);
    EXPECT_TRUE(s.ok()) << s.toString();
    return data;
  }
};

bool fromCache(const Dataset &data) {
  return data.description().find(kFromCache) != std::string::npos;
}

std::vector<uint16_t> randomIds(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<uint16_t> ids(n);
  for (uint16_t &id : ids)
    id = uint16_t(random() % 1000);
  return ids;
}

/// Rewrites byte `at` of `path` with `value` and sets its modification time
/// back to what it was: only the change time tells.
void rewriteByte(const std::string &path, uint64_t at, char value) {
  struct stat before;
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, &value, 1, off_t(at)), 1);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::futimens(fd, times), 0);
  ::close(fd);
}

TEST_F(DataCache, ACachedOpenIsWhatTheReadGives) {
  // Two files, the first over a scan piece (4 MiB), with an id above the
  // others in each.
  std::vector<uint16_t> a = randomIds(FileReader::kScanChunk / 2 + 1000, 1),
                        b = randomIds(5000, 2);
  a[FileReader::kScanChunk / 2 + 500] = 1200; // in the second piece
  b[17] = 1100;
  std::vector<std::string> paths = {writeBin("a.bin", a), writeBin("b.bin", b)};
  settle();
  auto read = openTokens(paths, false);
  int calls = 0;
  auto first = openTokens(paths, true, &calls);
  EXPECT_FALSE(fromCache(*first)) << first->description();
  EXPECT_GT(calls, 1);
  EXPECT_EQ(entries().size(), 1u);
  calls = 0;
  auto cached = openTokens(paths, true, &calls);
  EXPECT_TRUE(fromCache(*cached)) << cached->description();
  EXPECT_NE(cached->description().find(cacheDir()), std::string::npos);
  EXPECT_EQ(calls, 0); // Nothing read through.
  EXPECT_EQ(cached->contentHash(), read->contentHash());
  EXPECT_EQ(cached->size(), read->size());
  // Each file's largest id came from the cache: the vocabulary checks give
  // what the read's give, the first id outside named in its file.
  for (int64_t vocab : {1201, 1200, 1100, 1000}) {
    Status want = read->checkVocabulary(vocab),
           got = cached->checkVocabulary(vocab);
    EXPECT_EQ(got.code(), want.code()) << vocab;
    EXPECT_EQ(got.message(), want.message()) << vocab;
  }
  std::vector<uint32_t> window(300);
  ASSERT_TRUE(cached->read(a.size() - 100, 300, window.data()).ok());
  EXPECT_EQ(window[99], a.back());
  EXPECT_EQ(window[100], b.front());

  // The same files read as another format are another entry.
  auto asBytes = openTokens(paths, true, nullptr, DataFormat::kBytes);
  auto bytesRead = openTokens(paths, false, nullptr, DataFormat::kBytes);
  EXPECT_FALSE(fromCache(*asBytes));
  EXPECT_EQ(asBytes->contentHash(), bytesRead->contentHash());
  EXPECT_NE(asBytes->contentHash(), read->contentHash());
  EXPECT_EQ(entries().size(), 2u);
  EXPECT_TRUE(fromCache(*openTokens(paths, true, nullptr, DataFormat::kBytes)));
  EXPECT_TRUE(fromCache(*openTokens(paths, true)));
}

// A token file (a 24-byte header, then the ids) through the cache: its
// ids start after the header, in the hash and in the largest id.
TEST_F(DataCache, ATokenFileFromTheCacheIsWhatTheReadGives) {
  std::vector<uint16_t> ids = randomIds(20000, 7);
  ids[19999] = 4000;
  std::string bytes = "TRAINCTK";
  uint32_t version = 1, width = 2;
  uint64_t count = ids.size();
  bytes.append(reinterpret_cast<const char *>(&version), 4);
  bytes.append(reinterpret_cast<const char *>(&width), 4);
  bytes.append(reinterpret_cast<const char *>(&count), 8);
  bytes.append(reinterpret_cast<const char *>(ids.data()), ids.size() * 2);
  std::string path = (dir_ / "t.tok").string();
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), std::streamsize(bytes.size()));
  settle();
  auto read = openTokens({path}, false, nullptr, DataFormat::kTokens);
  EXPECT_FALSE(
      fromCache(*openTokens({path}, true, nullptr, DataFormat::kTokens)));
  auto cached = openTokens({path}, true, nullptr, DataFormat::kTokens);
  ASSERT_TRUE(fromCache(*cached)) << cached->description();
  EXPECT_EQ(cached->contentHash(), read->contentHash());
  EXPECT_TRUE(cached->checkVocabulary(4001).ok());
  EXPECT_EQ(cached->checkVocabulary(4000).message(),
            read->checkVocabulary(4000).message());
}

// Whole seconds (file systems that keep no more): a second more to settle,
// since the time was rounded down.
TEST(ScanCacheSettle, WholeSecondsWaitASecondMore) {
  const int64_t s = 1000000000;
  int64_t began = 100 * s;
  EXPECT_TRUE(ScanCache::settled(98 * s + 1, began));
  EXPECT_FALSE(ScanCache::settled(99 * s + 1, began));
  EXPECT_FALSE(ScanCache::settled(98 * s, began));
  EXPECT_TRUE(ScanCache::settled(97 * s, began));
  EXPECT_FALSE(ScanCache::settled(began + 5, began)); // a clock behind
}

/// Sets `path`'s modification time to `ageNs` before now.
void age(const fs::path &path, int64_t ageNs) {
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  int64_t at = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec - ageNs;
  const timespec times[2] = {{at / 1000000000, at % 1000000000},
                             {at / 1000000000, at % 1000000000}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

// A store removes the entries unused for 30 days and dead writers'
// temporary files, and nothing else; a hit marks its entry used.
TEST_F(DataCache, AStoreRemovesUnusedEntriesAndDeadWriters) {
  const int64_t day = int64_t(86400) * 1000000000;
  fs::create_directories(cacheDir());
  const char *hex = "0123456789abcdef";
  struct Planted {
    std::string name;
    int64_t ageNs;
    bool kept;
  } planted[] = {
      {std::string(hex) + ".scan", 31 * day, false},
      {"fedcba9876543210.scan", 29 * day, true},
      {std::string(hex) + ".scan.00000000000000ff.tmp", 2 * day, false},
      {std::string(hex) + ".scan.00000000000000fe.tmp", day / 2, true},
      // Not the cache's names: a user's files in a shared directory.
      {"notes.txt", 400 * day, true},
      {std::string(hex) + ".scan.bak", 400 * day, true},
      {"0123456789ABCDEF.scan", 400 * day, true},
      {std::string(hex) + ".scan.0000000000000zzz.tmp", 400 * day, true},
  };
  for (const Planted &p : planted) {
    std::ofstream(fs::path(cacheDir()) / p.name) << "x";
    age(fs::path(cacheDir()) / p.name, p.ageNs);
  }
  std::string path = writeBin("t.bin", randomIds(1000, 9));
  settle();
  EXPECT_FALSE(fromCache(*openTokens({path}, true)));
  for (const Planted &p : planted)
    EXPECT_EQ(fs::exists(fs::path(cacheDir()) / p.name), p.kept) << p.name;
  EXPECT_EQ(entries().size(), 7u); // the 6 kept and the new entry

  // The new entry, unused for 31 days, is marked used by a hit and so
  // kept by the next store.
  fs::path entry;
  for (const fs::path &e : entries())
    if (e.extension() == ".scan" && e.filename() != "fedcba9876543210.scan" &&
        e.filename() != "0123456789ABCDEF.scan")
      entry = e;
  ASSERT_FALSE(entry.empty());
  age(entry, 31 * day);
  EXPECT_TRUE(fromCache(*openTokens({path}, true)));
  EXPECT_FALSE(fromCache(*openTokens({path}, true, nullptr,
                                     DataFormat::kBytes))); // a store
  EXPECT_TRUE(fs::exists(entry));
  EXPECT_EQ(ScanCache::prune(cacheDir(), 0), 0u); // nothing is that old
  // Unused again: the next prune removes it.
  age(entry, 31 * day);
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  EXPECT_EQ(ScanCache::prune(cacheDir(),
                             int64_t(now.tv_sec) * 1000000000 + now.tv_nsec),
            1u);
  EXPECT_FALSE(fs::exists(entry));
}

TEST_F(DataCache, AChangedFileIsReadAgain) {
  std::vector<uint16_t> ids = randomIds(10000, 3);
  std::string path = writeBin("t.bin", ids);
  // Written less than a second ago: read, not stored.
  auto fresh = openTokens({path}, true);
  EXPECT_FALSE(fromCache(*fresh));
  EXPECT_TRUE(entries().empty());
  settle();
  uint64_t before = openTokens({path}, true)->contentHash();
  ASSERT_TRUE(fromCache(*openTokens({path}, true)));

  // One byte changed in place, the modification time set back: the change
  // time differs, so it is read again (and, just changed, not stored).
  rewriteByte(path, 2 * 500, char(ids[500] ^ 1));
  auto changed = openTokens({path}, true);
  EXPECT_FALSE(fromCache(*changed));
  uint64_t after = openTokens({path}, false)->contentHash();
  EXPECT_NE(after, before);
  EXPECT_EQ(changed->contentHash(), after);
  EXPECT_EQ(entries().size(), 1u);
  settle();
  EXPECT_FALSE(fromCache(*openTokens({path}, true)));
  auto again = openTokens({path}, true);
  EXPECT_TRUE(fromCache(*again));
  EXPECT_EQ(again->contentHash(), after);

  // Replaced by another file of the same size and times: another inode.
  std::string other = writeBin("other.bin", ids);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, other.c_str(), times, 0), 0);
  fs::rename(other, path);
  auto replaced = openTokens({path}, true);
  EXPECT_FALSE(fromCache(*replaced));
  EXPECT_EQ(replaced->contentHash(), before);
}

TEST_F(DataCache, AFileWrittenDuringTheReadIsNotStored) {
  std::vector<uint16_t> ids = randomIds(FileReader::kScanChunk, 4);
  std::string path = writeBin("t.bin", ids);
  settle();
  // The same byte written back after the first piece: the bytes read are
  // the file's, but a write during the read is never trusted.
  DataOptions options;
  options.paths = {path};
  options.format = DataFormat::kBin;
  options.binTokenBytes = 2;
  options.cacheDir = cacheDir();
  bool written = false;
  options.progress = [&](uint64_t, uint64_t) {
    if (!written)
      rewriteByte(path, 7, char(ids[3] >> 8));
    written = true;
  };
  std::unique_ptr<TokenData> data;
  ASSERT_TRUE(TokenData::open(options, data).ok());
  EXPECT_TRUE(written);
  EXPECT_TRUE(entries().empty());
  // Without the write, the same open stores its entry.
  settle();
  options.progress = nullptr;
  ASSERT_TRUE(TokenData::open(options, data).ok());
  EXPECT_EQ(entries().size(), 1u);
}

TEST_F(DataCache, ADamagedEntryIsAMiss) {
  std::string path = writeBin("t.bin", randomIds(1000, 5));
  settle();
  uint64_t hash = openTokens({path}, true)->contentHash();
  ASSERT_EQ(entries().size(), 1u);
  fs::path entry = entries()[0];
  std::string bytes;
  {
    std::ifstream in(entry, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 40u);
  auto put = [&](const std::string &b) {
    std::ofstream(entry, std::ios::binary)
        .write(b.data(), std::streamsize(b.size()));
  };
  // Every bit flipped, every truncation: a miss, the data read, the hash
  // right, and the entry written again.
  for (size_t i = 0; i < bytes.size() * 8; ++i) {
    std::string flipped = bytes;
    flipped[i / 8] = char(flipped[i / 8] ^ (1 << (i % 8)));
    put(flipped);
    auto data = openTokens({path}, true);
    ASSERT_FALSE(fromCache(*data)) << "bit " << i;
    ASSERT_EQ(data->contentHash(), hash);
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    put(bytes.substr(0, n));
    auto data = openTokens({path}, true);
    ASSERT_FALSE(fromCache(*data)) << n << " bytes";
    ASSERT_EQ(data->contentHash(), hash);
  }
  put(bytes + "x");
  EXPECT_FALSE(fromCache(*openTokens({path}, true)));
  EXPECT_TRUE(fromCache(*openTokens({path}, true)));
}

TEST_F(DataCache, AnUnwritableCacheIsNotedNotAnError) {
  std::string path = writeBin("t.bin", randomIds(1000, 6));
  settle();
  DataOptions options;
  options.paths = {path};
  options.format = DataFormat::kBin;
  options.binTokenBytes = 2;
  options.cacheDir = path + "/cache"; // under a regular file
  std::unique_ptr<TokenData> data;
  Status s = TokenData::open(options, data);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_NE(data->description().find("; data cache not written: " + path +
                                     "/cache: cannot make the directory: "),
            std::string::npos)
      << data->description();
}

// Samples: the hash and the id arrays' ranges come from the cache, and only
// the arrays held in memory (small samples) are read.
TEST_F(DataCache, SamplesReadOnlyWhatIsHeld) {
  std::vector<std::string> paths;
  std::vector<std::vector<int64_t>> labels;
  uint64_t labelBytes = 0;
  for (int f = 0; f < 2; ++f) {
    std::vector<float> image(4 * 2048);
    for (size_t i = 0; i < image.size(); ++i)
      image[i] = float(f * 100000 + int(i));
    std::vector<int64_t> y = {f - 1, 7, 3 + f, 9};
    std::string path =
        (dir_ / ("s" + std::to_string(f) + ".safetensors")).string();
    ASSERT_TRUE(
        writeSafetensors(
            path,
            {{"image", DType::F32, {4, 2048}, image.data(), image.size() * 4},
             {"labels", DType::I64, {4}, y.data(), y.size() * 8}})
            .ok());
    paths.push_back(path);
    labels.push_back(y);
    labelBytes += y.size() * 8;
  }
  settle();
  auto open = [&](bool cached, uint64_t *total) {
    DataOptions options;
    options.paths = paths;
    options.format = DataFormat::kSamples;
    options.cacheDir = cached ? cacheDir() : "";
    options.progress = [total](uint64_t, uint64_t all) { *total = all; };
    std::unique_ptr<SampleData> data;
    Status s = SampleData::open(options, data);
    EXPECT_TRUE(s.ok()) << s.toString();
    return data;
  };
  uint64_t total = 0;
  auto read = open(false, &total);
  EXPECT_EQ(total, 2 * (4 * 2048 * 4 + 32));
  EXPECT_FALSE(fromCache(*open(true, &total)));
  total = 0;
  auto cached = open(true, &total);
  ASSERT_TRUE(fromCache(*cached)) << cached->description();
  EXPECT_EQ(total, labelBytes); // the held labels alone
  EXPECT_EQ(cached->contentHash(), read->contentHash());
  const SampleData::Array &l = cached->arrays()[1];
  ASSERT_EQ(l.name, "labels");
  ASSERT_TRUE(l.inMemory);
  EXPECT_EQ(l.minValue, -1);
  EXPECT_EQ(l.maxValue, 9);
  EXPECT_EQ(cached->checkIds(l, 9).message(),
            read->checkIds(read->arrays()[1], 9).message());
  for (uint64_t i = 0; i < 8; ++i) {
    int64_t label = 0;
    ASSERT_TRUE(
        cached->readSample(l, i, reinterpret_cast<char *>(&label)).ok());
    EXPECT_EQ(label, labels[i / 4][i % 4]) << "sample " << i;
  }
  std::vector<float> image(2048);
  ASSERT_TRUE(cached
                  ->readSample(cached->arrays()[0], 5,
                               reinterpret_cast<char *>(image.data()))
                  .ok());
  EXPECT_EQ(image[0], float(100000 + 2048));

  // A label rewritten in place, its modification time set back: read
  // again, and the held labels' range is the new one.
  int64_t big = 12;
  struct stat st;
  ASSERT_EQ(::stat(paths[1].c_str(), &st), 0);
  uint64_t at = uint64_t(st.st_size) - 8; // the last label
  for (int k = 0; k < 8; ++k)
    rewriteByte(paths[1], at + uint64_t(k), char(big >> (8 * k)));
  auto changed = open(true, &total);
  EXPECT_FALSE(fromCache(*changed));
  EXPECT_EQ(changed->arrays()[1].maxValue, 12);
  EXPECT_NE(changed->contentHash(), read->contentHash());
}

} // namespace
} // namespace trainc
