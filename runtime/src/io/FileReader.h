//===- FileReader.h - A file read at offsets, never whole -------*- C++ -*-===//
//
// Training data can be larger than memory: a token stream of 10 billion
// uint16 ids is 20 GB. A FileReader keeps a file open and reads the bytes a
// batch needs where they are (pread), so a run holds one batch of the data
// at a time, not the data.
//
// Unlike a mapping (MappedFile.h), a read of bytes the file no longer has
// (it was truncated or rewritten shorter while open) is an error naming the
// file, not a SIGBUS. A file renamed over while open is still read as it
// was: the reader holds the old one.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_FILEREADER_H
#define TRAINC_RUNTIME_IO_FILEREADER_H

#include "base/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace trainc {

/// What tells a file's content apart without reading it: a write to a file
/// sets its change time (ctime) to the time of the write, which no user can
/// set back, so a file whose identity is the same as before holds the same
/// bytes, but for a write under way when it was taken (ScanCache.h).
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  /// Modification and change times, in nanoseconds since the epoch.
  int64_t modifiedNs = 0, changedNs = 0;
  /// The file system's type (statfs's f_type): FUSE file systems may set
  /// the change time to whatever they are told.
  int64_t fileSystem = 0;
  bool operator==(const FileIdentity &o) const {
    return device == o.device && inode == o.inode && size == o.size &&
           modifiedNs == o.modifiedNs && changedNs == o.changedNs;
  }
  bool operator!=(const FileIdentity &o) const { return !(*this == o); }
};

/// A regular file open for reading at offsets. Move-only.
class FileReader {
public:
  FileReader() = default;
  FileReader(FileReader &&other) noexcept;
  FileReader &operator=(FileReader &&other) noexcept;
  FileReader(const FileReader &) = delete;
  FileReader &operator=(const FileReader &) = delete;
  ~FileReader();

  /// Opens `path`, which must be a regular file; `what` names it in errors
  /// ("the data file").
  static Status open(const std::string &path, const std::string &what,
                     FileReader &out);

  /// Reads bytes [offset, offset + size) into `out`. Bytes past the end
  /// (the file shrank since it was opened) are kDataLoss naming the file
  /// and its sizes.
  Status read(uint64_t offset, size_t size, void *out) const;
  /// Calls `chunk` on bytes [offset, offset + size) in pieces of at most
  /// kScanChunk bytes, in order, each piece starting kScanChunk after the
  /// last (so a piece of a whole number of elements of up to 64 bytes
  /// starts on an element); stops at the first error `chunk` returns.
  Status scan(uint64_t offset, uint64_t size,
              const std::function<Status(const char *, size_t)> &chunk) const;
  /// Asks the kernel to start reading bytes [offset, offset + size) into
  /// its cache (a hint: nothing waits for it).
  void willNeed(uint64_t offset, uint64_t size) const;

  /// Raises this process's soft limit on open files, toward its hard
  /// limit, so that `files` more than are open now (/proc/self/fd) can be,
  /// with 256 to spare (a run keeps every data file open; the soft limit is
  /// often 1,024). Past the hard limit, open() names the limit.
  static void makeRoomFor(size_t files);

  /// The open file's identity now (fstat).
  Status identity(FileIdentity &out) const;

  /// The size when opened.
  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }

  static constexpr size_t kScanChunk = size_t(4) << 20;

private:
  void close();

  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_, what_;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_FILEREADER_H
