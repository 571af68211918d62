//===- AtomicFile.cpp - Writing files all at once, durably ----------------===//

#include "io/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <streambuf>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc {
namespace {

/// An output stream buffer over a file descriptor that remembers the first
/// write error (errno) instead of throwing.
class FdBuffer : public std::streambuf {
public:
  explicit FdBuffer(int fd) : fd_(fd) {
    setp(buffer_, buffer_ + sizeof buffer_);
  }
  int error() const { return error_; }
  /// Writes what is buffered; false on an error (see error()).
  bool flushAll() { return drain() && error_ == 0; }

protected:
  int_type overflow(int_type c) override {
    if (!drain())
      return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char *s, std::streamsize n) override {
    if (n >= static_cast<std::streamsize>(sizeof buffer_)) {
      // Large blocks (tensor data) go straight to the file.
      if (!drain() || !writeAll(s, size_t(n)))
        return 0;
      return n;
    }
    return std::streambuf::xsputn(s, n);
  }

private:
  bool writeAll(const char *p, size_t n) {
    while (n > 0 && error_ == 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        error_ = errno;
        break;
      }
      p += w;
      n -= size_t(w);
    }
    return error_ == 0;
  }
  bool drain() {
    bool ok = writeAll(pbase(), size_t(pptr() - pbase()));
    setp(buffer_, buffer_ + sizeof buffer_);
    return ok;
  }

  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

} // namespace

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "."
         : slash == 0               ? "/"
                                    : path.substr(0, slash);
}

Status ioError(const std::string &what, const std::string &path, int error) {
  std::string message = path + ": " + what + ": " + std::strerror(error);
  if (error == ENOENT || error == ENOTDIR)
    return notFound(message);
  if (error == EACCES || error == EPERM || error == EROFS || error == EISDIR)
    return Status(StatusCode::kFailedPrecondition, message);
  return Status(StatusCode::kDataLoss, message);
}

Status openRegularFile(const std::string &path, const std::string &what,
                       int &fd, uint64_t &size, int *error) {
  int ignored = 0;
  int &failure = error ? *error : ignored;
  failure = 0;
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    failure = errno;
    return ioError("cannot open " + what, path, failure);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    failure = errno;
    ::close(fd);
    fd = -1;
    return ioError("cannot stat " + what, path, failure);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fd = -1;
    return invalidArgument(
        path + ": " + what + " must be a regular file, not " +
        (S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket"));
  }
  size = uint64_t(st.st_size);
  return okStatus();
}

namespace {

template <typename Bytes>
Status readRegularInto(const std::string &path, const std::string &what,
                       Bytes &out, uint64_t maxBytes) {
  int fd = -1;
  uint64_t size = 0;
  TRAINC_RETURN_IF_ERROR(openRegularFile(path, what, fd, size));
  if (size > maxBytes) {
    ::close(fd);
    return invalidArgument(path + ": " + what + " has " + std::to_string(size) +
                           " bytes, more than " + std::to_string(maxBytes));
  }
  try {
    out.resize(size_t(size));
  } catch (const std::bad_alloc &) {
    ::close(fd);
    return Status(StatusCode::kOutOfRange,
                  path + ": not enough memory to read " + what + " (" +
                      std::to_string(size) + " bytes)");
  }
  size_t done = 0;
  while (done < out.size()) {
    ssize_t r = ::read(fd, &out[done], out.size() - done);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      int error = r < 0 ? errno : EIO;
      ::close(fd);
      return ioError("cannot read " + what, path, error);
    }
    done += size_t(r);
  }
  ::close(fd);
  return okStatus();
}

} // namespace

Status readRegularFile(const std::string &path, const std::string &what,
                       std::vector<char> &out, uint64_t maxBytes) {
  return readRegularInto(path, what, out, maxBytes);
}

Status readRegularFile(const std::string &path, const std::string &what,
                       std::string &out, uint64_t maxBytes) {
  return readRegularInto(path, what, out, maxBytes);
}

Status syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return ioError("cannot open the directory", dir, errno);
  int rc = ::fsync(fd);
  int error = errno;
  ::close(fd);
  // Some file systems do not sync directories; the rename is still atomic.
  if (rc != 0 && error != EINVAL && error != ENOTSUP)
    return ioError("cannot fsync the directory", dir, error);
  return okStatus();
}

Status writeFileAtomically(const std::string &path,
                           const std::function<void(std::ostream &)> &write,
                           const std::string &temporarySuffix) {
  std::string temporary = path + temporarySuffix;
  int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    return ioError("cannot create", temporary, errno);
  int error = 0;
  {
    FdBuffer buffer(fd);
    std::ostream out(&buffer);
    write(out);
    if (!buffer.flushAll())
      error = buffer.error() ? buffer.error() : EIO;
  }
  if (error == 0 && ::fsync(fd) != 0)
    error = errno;
  if (::close(fd) != 0 && error == 0)
    error = errno;
  if (error != 0) {
    ::unlink(temporary.c_str());
    return ioError("cannot write", temporary, error);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = errno;
    ::unlink(temporary.c_str());
    return ioError("cannot rename " + temporary + " over it", path, error);
  }
  return syncDirectory(directoryOf(path));
}

} // namespace trainc
