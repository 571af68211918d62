//===- MappedFile.h - A file's bytes, mapped instead of copied --*- C++ -*-===//
//
// An executable holds every parameter's initial value: half a gigabyte for
// GPT-2 124M. Read into memory, those bytes would sit in the process next to
// the arena they are copied into, for as long as the executable is open.
// Mapped, they are the page cache's: a session copies each value into its
// arena straight from the file's pages and then lets them go
// (releasePages), so a process holds its weights once.
//
// A mapping is verified like a read: the executable loader runs the
// FlatBuffers verifier over the mapped bytes and then parses the program's
// structure into its own memory, once, at load; a session, when it starts,
// copies the constants and the parameters' initial values out of the file
// and computes the hashes its checkpoints record (exec/Session.cpp), and
// after that nothing reads the file. Unlike a private copy, a mapping sees
// the file change under it, so one thing is needed of whoever writes the
// file: that it not be rewritten in place or shrunk while it loads or a
// session starts (the parse could read what was not verified; a read of a
// page past a new end is SIGBUS). A file rewritten or truncated while its
// sessions run changes nothing. trainc's writers never rewrite a file in
// place: the compiler and every writer here write a temporary file and
// rename it over the old one, which leaves the old file's pages intact for
// whoever has it mapped.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_IO_MAPPEDFILE_H
#define TRAINC_RUNTIME_IO_MAPPEDFILE_H

#include "base/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

/// Read-only bytes: a private mapping of a whole file, or a vector given in
/// memory. Move-only.
class FileBytes {
public:
  FileBytes() = default;
  explicit FileBytes(std::vector<char> bytes) : owned_(std::move(bytes)) {}
  FileBytes(FileBytes &&other) noexcept;
  FileBytes &operator=(FileBytes &&other) noexcept;
  FileBytes(const FileBytes &) = delete;
  FileBytes &operator=(const FileBytes &) = delete;
  ~FileBytes();

  /// Maps `path`, which must be a regular file (not a directory, device or
  /// pipe); `what` names it in errors ("the executable"). An empty file
  /// gives empty bytes; a file on a file system that cannot map files
  /// (ENODEV) is read instead.
  static Status map(const std::string &path, const std::string &what,
                    FileBytes &out);

  const char *data() const { return mapped_ ? mapped_ : owned_.data(); }
  size_t size() const { return mapped_ ? mappedSize_ : owned_.size(); }
  bool isMapped() const { return mapped_ != nullptr; }

  /// Tells the kernel this process is done with bytes [offset, offset +
  /// size) for now: their whole pages leave its resident set. The bytes
  /// stay readable (a later read faults them in from the file again). No
  /// effect on bytes in memory.
  void releasePages(uint64_t offset, uint64_t size) const;

private:
  void unmap();

  std::vector<char> owned_;
  char *mapped_ = nullptr;
  size_t mappedSize_ = 0;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_IO_MAPPEDFILE_H
