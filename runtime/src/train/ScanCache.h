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
// token width, arrays, offsets and counts) and each file's identity
// (FileIdentity: device, inode, size, modification and change times). A
// write to a file sets its change time to the time of the write, and no
// user can set it back (`touch -d` sets the modification time), so a file
// with the same identity holds the same bytes. What that leaves out, and
// what is done about it:
//   - a file changed less than kSettleNs before the pass began (a second
//     more where the file system keeps whole seconds) is not stored: one
//     write call already under way then, its change time set at its start,
//     could go on writing during the pass. A single write of more than a
//     second, or a file server whose clock is that far behind this host's,
//     is outside this;
//   - a file whose identity differs after the pass from before it is not
//     stored (it could never be found again anyway);
//   - files on FUSE file systems are never stored: some (sshfs) report the
//     modification time as the change time, which a user can set back;
//   - a file written through a memory mapping changes its times only when
//     the kernel notices the write, which may be after the pass.
// An entry is checked whole (magic, version, its key again, a checksum);
// one that is not intact is a miss, read through and written again. A
// cache that cannot be written or read is noted in the data's description
// or passed over, never an error: it only costs time.
//
// Entries of files since changed or deleted are never found again. A hit
// sets its entry's modification time to now, and each store removes the
// entries not used for kUnusedNs and the temporary files of writers that
// died (older than kDeadWriterNs); files of other names are left alone.
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
  /// A file changed less than this long before a pass began is not cached
  /// (twice as long where the file system keeps whole seconds).
  static constexpr int64_t kSettleNs = 1000000000;
  /// Entries are a line per file: a larger one is neither written nor read.
  static constexpr uint64_t kMaxEntryBytes = uint64_t(64) << 20;
  /// A store removes entries neither written nor found for this long.
  static constexpr int64_t kUnusedNs = int64_t(30) * 86400 * 1000000000;
  /// ... and temporary files this old (a writer killed before its rename).
  static constexpr int64_t kDeadWriterNs = int64_t(86400) * 1000000000;

  /// The cache in `dir` ("": none; find() misses and store() does nothing)
  /// for `files` read as `layout`; takes their identities and the time
  /// now, so call it just before the pass. A file that cannot be stat'ed
  /// leaves it with none.
  static ScanCache begin(const std::string &dir, const std::string &layout,
                         const std::vector<const FileReader *> &files);

  /// The values an earlier pass stored for these files read this way
  /// (false: none, or an entry that is not intact).
  bool find(std::vector<uint64_t> &values) const;
  /// After the pass: stores its `values` unless a file changed during the
  /// pass or shortly before it (file comment). "" when stored or not to be
  /// stored, else why the entry could not be written, for the description.
  std::string store(const std::vector<uint64_t> &values) const;

  /// The directory ("" for none).
  const std::string &dir() const { return dir_; }
  /// Whether a file changed at `changedNs` (FileIdentity) may be stored by
  /// a pass that began at `beganNs`.
  static bool settled(int64_t changedNs, int64_t beganNs);
  /// Removes from `dir` the entries last used before `nowNs - kUnusedNs`
  /// and the temporary files older than `nowNs - kDeadWriterNs`; returns
  /// how many it removed. Names not of the cache are left alone.
  static size_t prune(const std::string &dir, int64_t nowNs);

private:
  std::string dir_, path_, key_;
  std::vector<const FileReader *> files_;
  std::vector<FileIdentity> identities_;
  /// The wall clock when begin() ran, in nanoseconds since the epoch.
  int64_t beganNs_ = 0;
};

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_SCANCACHE_H
