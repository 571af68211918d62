//===- ScanCache.cpp - The data's opening pass, kept for next time --------===//

#include "train/ScanCache.h"

#include "io/AtomicFile.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace trainc {
namespace {

// An entry: the magic, a uint32 version, the key's length (uint32) and
// bytes, the number of values (uint32) and the values (uint64), then the
// XXH3 of everything before it (uint64); little-endian, as the host.
constexpr char kMagic[8] = {'T', 'R', 'A', 'I', 'N', 'C', 'S', 'C'};
/// Raised whenever what a pass computes changes (a new hash definition).
constexpr uint32_t kVersion = 1;
/// statfs's f_type of FUSE file systems.
constexpr int64_t kFuseMagic = 0x65735546;

void append(std::string &out, const void *p, size_t n) {
  out.append(static_cast<const char *>(p), n);
}

/// Reads `n` bytes at `at` of `bytes`, advancing it; false past the end.
bool take(const std::string &bytes, size_t &at, void *out, size_t n) {
  if (n > bytes.size() - at)
    return false;
  std::memcpy(out, bytes.data() + at, n);
  at += n;
  return true;
}

/// Makes `dir` and the directories above it that are missing.
Status makeDirectories(const std::string &dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST)
      return ioError("cannot make the directory", part, errno);
    if (slash == std::string::npos)
      return okStatus();
  }
}

/// The wall clock, in nanoseconds since the epoch.
int64_t nowNs() {
  timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  return int64_t(now.tv_sec) * 1000000000 + now.tv_nsec;
}

/// A number no other writer has: of this host, process, thread and time.
uint64_t writerId() {
  struct {
    char host[64] = {};
    int64_t process = 0, ns = 0;
    size_t thread = 0;
  } id;
  ::gethostname(id.host, sizeof id.host - 1);
  id.process = ::getpid();
  id.ns = nowNs();
  id.thread = std::hash<std::thread::id>()(std::this_thread::get_id());
  return XXH3_64bits(&id, sizeof id);
}

/// Whether `s` starts with 16 lowercase hex digits (as "%016llx" writes).
bool hex16(const char *s) {
  for (int i = 0; i < 16; ++i)
    if (!std::isdigit((unsigned char)s[i]) && (s[i] < 'a' || s[i] > 'f'))
      return false;
  return true;
}

/// What a file of the cache directory is, by its name.
enum class CacheFile { Other, Entry, Temporary };

CacheFile kindOf(const char *name) {
  size_t n = std::strlen(name);
  // "<16 hex>.scan", and store()'s temporary "<16 hex>.scan.<16 hex>.tmp".
  if (n < 21 || !hex16(name) || std::strncmp(name + 16, ".scan", 5) != 0)
    return CacheFile::Other;
  if (n == 21)
    return CacheFile::Entry;
  if (n == 42 && name[21] == '.' && hex16(name + 22) &&
      std::strcmp(name + 38, ".tmp") == 0)
    return CacheFile::Temporary;
  return CacheFile::Other;
}

} // namespace

ScanCache ScanCache::begin(const std::string &dir, const std::string &layout,
                           const std::vector<const FileReader *> &files) {
  ScanCache out;
  if (dir.empty())
    return out;
  out.beganNs_ = nowNs();
  out.key_ = layout + '\n';
  for (const FileReader *file : files) {
    FileIdentity id;
    if (!file->identity(id).ok() || id.fileSystem == kFuseMagic)
      return ScanCache();
    char line[160];
    std::snprintf(line, sizeof line, "%llu %llu %llu %lld %lld\n",
                  (unsigned long long)id.device, (unsigned long long)id.inode,
                  (unsigned long long)id.size, (long long)id.modifiedNs,
                  (long long)id.changedNs);
    out.key_ += line;
    out.identities_.push_back(id);
  }
  char name[32];
  std::snprintf(
      name, sizeof name, "/%016llx.scan",
      (unsigned long long)XXH3_64bits(out.key_.data(), out.key_.size()));
  out.dir_ = dir;
  out.path_ = dir + name;
  out.files_ = files;
  return out;
}

bool ScanCache::settled(int64_t changedNs, int64_t beganNs) {
  // Whole seconds: the time was rounded down, by up to a second.
  int64_t settle = kSettleNs + (changedNs % 1000000000 == 0 ? 1000000000 : 0);
  return changedNs < beganNs - settle;
}

bool ScanCache::find(std::vector<uint64_t> &values) const {
  std::string bytes;
  if (dir_.empty() ||
      !readRegularFile(path_, "the data cache entry", bytes, kMaxEntryBytes)
           .ok())
    return false;
  size_t at = 0;
  char magic[sizeof kMagic];
  uint32_t version = 0, keyBytes = 0, count = 0;
  if (!take(bytes, at, magic, sizeof magic) ||
      std::memcmp(magic, kMagic, sizeof kMagic) != 0 ||
      !take(bytes, at, &version, 4) || version != kVersion ||
      !take(bytes, at, &keyBytes, 4) || keyBytes != key_.size() ||
      bytes.compare(at, keyBytes, key_) != 0)
    return false;
  at += keyBytes;
  if (!take(bytes, at, &count, 4) ||
      (bytes.size() - at) / 8 != uint64_t(count) + 1)
    return false;
  std::vector<uint64_t> found(count);
  for (uint64_t &v : found)
    take(bytes, at, &v, 8);
  uint64_t checksum = 0;
  size_t checked = at;
  if (!take(bytes, at, &checksum, 8) || at != bytes.size() ||
      checksum != XXH3_64bits(bytes.data(), checked))
    return false;
  values = std::move(found);
  // Marks the entry used, so that prune() keeps it (a read-only cache
  // keeps its times).
  ::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0);
  return true;
}

size_t ScanCache::prune(const std::string &dir, int64_t nowNs) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return 0;
  size_t removed = 0;
  while (const dirent *e = ::readdir(d)) {
    CacheFile kind = kindOf(e->d_name);
    struct stat st;
    if (kind == CacheFile::Other ||
        ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    // In whole seconds: a time in nanoseconds past 2262 would overflow.
    int64_t keepNs = kind == CacheFile::Entry ? kUnusedNs : kDeadWriterNs;
    if (int64_t(st.st_mtim.tv_sec) < (nowNs - keepNs) / 1000000000 &&
        ::unlinkat(::dirfd(d), e->d_name, 0) == 0)
      ++removed;
  }
  ::closedir(d);
  return removed;
}

std::string ScanCache::store(const std::vector<uint64_t> &values) const {
  if (dir_.empty())
    return "";
  for (size_t i = 0; i < files_.size(); ++i) {
    FileIdentity now;
    if (!files_[i]->identity(now).ok() || now != identities_[i] ||
        !settled(now.changedNs, beganNs_))
      return "";
  }
  std::string bytes;
  append(bytes, kMagic, sizeof kMagic);
  uint32_t version = kVersion, keyBytes = uint32_t(key_.size()),
           count = uint32_t(values.size());
  append(bytes, &version, 4);
  append(bytes, &keyBytes, 4);
  bytes += key_;
  append(bytes, &count, 4);
  append(bytes, values.data(), values.size() * 8);
  uint64_t checksum = XXH3_64bits(bytes.data(), bytes.size());
  append(bytes, &checksum, 8);
  if (bytes.size() > kMaxEntryBytes)
    return "";
  Status s = makeDirectories(dir_);
  if (s.ok()) {
    // Ranks and runs sharing the cache (on several hosts, in containers of
    // their own process ids) may write one entry at once: each through a
    // temporary name of its own.
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".%016llx.tmp",
                  (unsigned long long)writerId());
    s = writeFileAtomically(
        path_,
        [&](std::ostream &out) { out.write(bytes.data(), bytes.size()); },
        suffix);
  }
  if (!s.ok())
    return "data cache not written: " + s.message();
  prune(dir_, nowNs());
  return "";
}

} // namespace trainc
