//===- ScanCache.h - The data's opening pass, kept for next time -*- C++
//-*-===//
//
// Opening a Dataset reads every byte of the data once, for its checks (token
// ids against the vocabulary) and its content hash: 1-3 GB/s from the page
// cache, far slower from a disk or a network file system, and again at
// every start and every resume. A ScanCache keeps that pass's results (a few
// numbers) in a directory, one small file per set of data files, so that
// opening the same unchanged files again skips the pass
// (runtime/README.md, "The data cache").
//
// An entry is found by a key of how the files are read (the layout: format,
// token width, arrays and offsets) and each file's identity (FileIdentity:
// device, inode, size, modification and change times). A write to a file
// sets its change time to the time of the write, and no user can set it
// back, so a file with the same identity holds the same bytes. Two cases
// are left, and neither is stored:
//   - a file whose identity differs after the pass from before it (it was
//     written during the pass);
//   - a file changed less than kSettleNs before the pass began: one write
//     call already under way then (its change time set at its start) could
//     go on writing during the pass without a later change time.
// An entry is checked whole (magic, version, its key again, a checksum);
// one that is not intact is a miss, read through and written again. A
// cache that cannot be written is noted in the data's description, never
// an error: it only costs time.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_SCANCACHE_H
#define TRAINC_RUNTIME_TRAIN_SCANCACHE_H

#include "base/Status.h"
#include "io/FileReader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc {

class ScanCache {
public:
  /// A file changed less than this long before a pass began is not cached.
  static constexpr int64_t kSettleNs = 1000000000;

  /// The cache in `dir` ("": none; find() misses and store() does nothing)
  /// for `files` read as `layout`; takes their identities and the time
  /// now, so call it just before the pass.
  static Status begin(const std::string &dir, const std::string &layout,
                      const std::vector<const FileReader *> &files,
                      ScanCache &out);

  /// The values an earlier pass stored for these files read this way
  /// (false: none, or an entry that is not intact).
  bool find(std::vector<uint64_t> &values) const;
  /// After the pass: stores its `values` unless a file changed during the
  /// pass or shortly before it (file comment). "" when stored or not to be
  /// stored, else why the entry could not be written, for the description.
  std::string store(const std::vector<uint64_t> &values) const;

  /// The directory ("" for none).
  const std::string &dir() const { return dir_; }

private:
  std::string dir_, path_, key_;
  std::vector<const FileReader *> files_;
  std::vector<FileIdentity> identities_;
  /// The wall clock when begin() ran, in nanoseconds since the epoch.
  int64_t beganNs_ = 0;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_SCANCACHE_H
