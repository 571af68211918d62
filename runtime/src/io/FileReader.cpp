//===- FileReader.cpp - A file read at offsets, never whole ---------------===//

#include "io/FileReader.h"

#include "io/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <utility>

namespace trainc {

FileReader::FileReader(FileReader &&other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_),
      path_(std::move(other.path_)), what_(std::move(other.what_)) {}

FileReader &FileReader::operator=(FileReader &&other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    path_ = std::move(other.path_);
    what_ = std::move(other.what_);
  }
  return *this;
}

FileReader::~FileReader() { close(); }

void FileReader::close() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

Status FileReader::identity(FileIdentity &out) const {
  struct stat st;
  if (::fstat(fd_, &st) != 0)
    return ioError("cannot stat " + what_, path_, errno);
  out.device = uint64_t(st.st_dev);
  out.inode = uint64_t(st.st_ino);
  out.size = uint64_t(st.st_size);
  out.modifiedNs = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  out.changedNs = int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  struct statfs fs;
  out.fileSystem = ::fstatfs(fd_, &fs) == 0 ? int64_t(fs.f_type) : 0;
  return okStatus();
}

void FileReader::makeRoomFor(size_t files) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  // Those open now, and room for the rest of a run too: checkpoints, logs,
  // libraries.
  rlim_t open = 0;
  if (DIR *fds = ::opendir("/proc/self/fd")) {
    while (const dirent *e = ::readdir(fds))
      open += e->d_name[0] != '.';
    ::closedir(fds);
  }
  rlim_t needed = open + rlim_t(files) + 256;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed)
    return;
  limit.rlim_cur = limit.rlim_max == RLIM_INFINITY
                       ? needed
                       : std::min<rlim_t>(limit.rlim_max, needed);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

Status FileReader::open(const std::string &path, const std::string &what,
                        FileReader &out) {
  FileReader reader;
  int error = 0;
  Status opened = openRegularFile(path, what, reader.fd_, reader.size_, &error);
  if (error == EMFILE) {
    struct rlimit limit = {};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    return Status(StatusCode::kFailedPrecondition,
                  opened.message() + " (this process may have " +
                      std::to_string(limit.rlim_cur) +
                      " files open at once, and a run keeps every data file "
                      "open: raise `ulimit -n`, or give fewer, larger "
                      "files)");
  }
  TRAINC_RETURN_IF_ERROR(opened);
  reader.path_ = path;
  reader.what_ = what;
  out = std::move(reader);
  return okStatus();
}

Status FileReader::read(uint64_t offset, size_t size, void *out) const {
  char *p = static_cast<char *>(out);
  size_t done = 0;
  while (done < size) {
    ssize_t r = ::pread(fd_, p + done, size - done, off_t(offset + done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return ioError("cannot read " + what_, path_, errno);
    if (r == 0) {
      struct stat st;
      std::string now = ::fstat(fd_, &st) == 0
                            ? std::to_string(st.st_size) + " bytes"
                            : "shorter";
      return Status(StatusCode::kDataLoss,
                    path_ + ": " + what_ + " is now " + now + ", but was " +
                        std::to_string(size_) +
                        " bytes when opened, and bytes " +
                        std::to_string(offset + done) + "-" +
                        std::to_string(offset + size) +
                        " are needed (was it truncated or rewritten while "
                        "in use?)");
    }
    done += size_t(r);
  }
  return okStatus();
}

Status FileReader::scan(
    uint64_t offset, uint64_t size,
    const std::function<Status(const char *, size_t)> &chunk) const {
  std::unique_ptr<char[]> buffer(
      new char[size_t(std::min<uint64_t>(size, kScanChunk))]);
  for (uint64_t done = 0; done < size;) {
    size_t n = size_t(std::min<uint64_t>(size - done, kScanChunk));
    TRAINC_RETURN_IF_ERROR(read(offset + done, n, buffer.get()));
    TRAINC_RETURN_IF_ERROR(chunk(buffer.get(), n));
    done += n;
  }
  return okStatus();
}

void FileReader::willNeed(uint64_t offset, uint64_t size) const {
  if (fd_ >= 0 && size > 0)
    ::posix_fadvise(fd_, off_t(offset), off_t(size), POSIX_FADV_WILLNEED);
}

} // namespace trainc
