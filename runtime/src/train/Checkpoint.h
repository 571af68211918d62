//===- Checkpoint.h - Atomic, checksummed training checkpoints --*- C++ -*-===//
//
// A checkpoint directory (trainc-run --save-state DIR) holds
//
//   DIR/lock                      flock'ed by the run that writes DIR
//   DIR/latest                    "step-000000000042": the newest good one
//   DIR/step-000000000042/
//       rank-00000-of-00001.safetensors   every parameter and optimizer-
//                                         state tensor of rank 0
//       manifest.json                     see below
//
// manifest.json: the format (2), the step, batch seed, data position and
// the data's size and split, the executable it came from and a hash of its
// model (persistent tensor names, dtypes, shapes and initial values), the
// world size, and per tensor its name, dtype, global shape, sharding
// ("replicated" until the distribution issue), shard file and an XXH3-64
// checksum of its bytes; and a checksum of all of that.
//
// A save writes DIR/.tmp-<step>-<pid>/, fsyncs every file and the
// directory, renames it to step-N, re-reads and verifies it, and only then
// moves `latest` (written atomically); then it removes all but the newest
// --keep-last checkpoints and any staging directory a killed run left.
// An interrupted save therefore never touches the checkpoint a resume
// would use. A restore verifies every checksum, the model hash, the seed
// and the data; a damaged checkpoint is skipped with a warning naming what
// is wrong, and the newest good one is used.
//
// Directories written before this format (run_state.json and one .npy per
// tensor) still restore.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_CHECKPOINT_H
#define TRAINC_RUNTIME_TRAIN_CHECKPOINT_H

#include "train/Trainer.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace trainc {

/// An exclusive lock on a checkpoint directory, held while alive: a second
/// run that tries to write the same directory gets an error.
class CheckpointLock {
public:
  /// Creates `dir` (one level) when missing and locks it.
  static Status acquire(const std::string &dir,
                        std::unique_ptr<CheckpointLock> &out);
  ~CheckpointLock();
  const std::string &dir() const { return dir_; }

private:
  CheckpointLock(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::string dir_;
  int fd_;
};

/// Every persistent tensor of a trainer and its run state, copied to host
/// memory: what a save writes (the copy is the only time training waits).
struct CheckpointSnapshot {
  RunState state;
  std::string executable;
  uint64_t modelHash = 0;
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<char> bytes;
  };
  std::vector<Tensor> tensors;
};

/// Fails, naming both figures, when the file system of `dir` has less free
/// space than one checkpoint of `exe` needs (its parameters and optimizer
/// state), so that a run that could never save stops before training.
Status checkSpaceForCheckpoint(const std::string &dir, const Executable &exe);

/// Copies `trainer`'s state (`data`: its token data, or null).
Status snapshotTrainer(const Trainer &trainer, const TokenData *data,
                       CheckpointSnapshot &out);

/// Writes `snapshot` as a new checkpoint of `dir` (see the file comment),
/// keeping the newest `keepLast` (0: all). `dir` must be locked by the
/// caller (`lock`), or is locked for the duration of the save.
Status writeCheckpoint(const std::string &dir,
                       const CheckpointSnapshot &snapshot, int keepLast,
                       const CheckpointLock *lock);

/// Writes checkpoints on a background thread: training waits only for the
/// snapshot (a copy of the state to host memory), and the previous write,
/// if it is still going, when the next save comes.
class AsyncCheckpointWriter {
public:
  AsyncCheckpointWriter();
  /// Waits for the write in flight.
  ~AsyncCheckpointWriter();
  /// Waits for the previous write (returning its error, if any, without
  /// starting this one), then starts writing `snapshot` (see
  /// writeCheckpoint; `lock` must outlive the write).
  Status submit(std::string dir, CheckpointSnapshot snapshot, int keepLast,
                const CheckpointLock *lock);
  /// Waits for the write in flight; its status.
  Status wait();

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// The newest good checkpoint of `dir`: its run state, its name, and a
/// warning per newer checkpoint that failed verification.
struct CheckpointChoice {
  RunState state;
  std::string name;
  std::vector<std::string> warnings;
};
/// The newest checkpoint of `dir` whose manifest verifies (its checksum),
/// without reading its tensors: the run state to create the trainer that
/// restores it (restoreCheckpoint then checks every tensor, and takes an
/// older checkpoint if the tensors are damaged; a run's seed is the same in
/// every checkpoint).
Status findCheckpoint(const std::string &dir, CheckpointChoice &out);

/// Restores the newest good checkpoint of `dir` (or a pre-format-2 saved
/// run) into `trainer`; fills `choice` with what was used and skipped.
Status restoreCheckpoint(const std::string &dir, Trainer &trainer,
                         const TokenData *data, CheckpointChoice &choice);

/// Rolls `trainer` back to the newest good checkpoint of `dir` but keeps
/// its data position: the batches since that checkpoint (the ones that led
/// to a loss spike or a non-finite step) are skipped, not trained on again.
Status rollbackToCheckpoint(const std::string &dir, Trainer &trainer,
                            const TokenData *data, CheckpointChoice &choice);

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_CHECKPOINT_H
