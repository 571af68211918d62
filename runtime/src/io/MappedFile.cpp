//===- MappedFile.cpp - A file's bytes, mapped instead of copied ----------===//

#include "io/MappedFile.h"

#include "io/AtomicFile.h"

#include <algorithm>
#include <cerrno>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace trainc {

FileBytes::FileBytes(FileBytes &&other) noexcept
    : owned_(std::move(other.owned_)),
      mapped_(std::exchange(other.mapped_, nullptr)),
      mappedSize_(std::exchange(other.mappedSize_, 0)) {}

FileBytes &FileBytes::operator=(FileBytes &&other) noexcept {
  if (this != &other) {
    unmap();
    owned_ = std::move(other.owned_);
    mapped_ = std::exchange(other.mapped_, nullptr);
    mappedSize_ = std::exchange(other.mappedSize_, 0);
  }
  return *this;
}

FileBytes::~FileBytes() { unmap(); }

void FileBytes::unmap() {
  if (mapped_)
    ::munmap(mapped_, mappedSize_);
  mapped_ = nullptr;
  mappedSize_ = 0;
}

Status FileBytes::map(const std::string &path, const std::string &what,
                      FileBytes &out) {
  int fd = -1;
  uint64_t size = 0;
  TRAINC_RETURN_IF_ERROR(openRegularFile(path, what, fd, size));
  FileBytes bytes;
  if (size > 0) {
    void *p = ::mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      if (error != ENODEV)
        return ioError("cannot map " + what, path, error);
      // A file system that cannot map files is still readable.
      std::vector<char> owned;
      TRAINC_RETURN_IF_ERROR(readRegularFile(path, what, owned));
      out = FileBytes(std::move(owned));
      return okStatus();
    }
    bytes.mapped_ = static_cast<char *>(p);
    bytes.mappedSize_ = size_t(size);
  }
  ::close(fd); // The mapping keeps the file open.
  out = std::move(bytes);
  return okStatus();
}

void FileBytes::releasePages(uint64_t offset, uint64_t size) const {
  if (!mapped_ || offset >= mappedSize_)
    return;
  size = std::min<uint64_t>(size, mappedSize_ - offset);
  // Only whole pages: a page shared with a neighbour's bytes stays.
  uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(mapped_) + offset;
  uintptr_t end = begin + size;
  uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last)
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

} // namespace trainc
