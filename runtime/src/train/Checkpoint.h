//===- Checkpoint.h - Atomic, checksummed training checkpoints --*- C++ -*-===//
//
// A checkpoint directory (trainc-run --save-state DIR) holds
//
//   DIR/lock                      flock'ed by the run that writes DIR
//                                 (rank 0 of a run of several ranks)
//   DIR/latest                    "step-000000000042": the newest good one
//   DIR/step-000000000042/
//       rank-00000-of-00002.safetensors   what rank 0 writes: every whole
//                                         (replicated) tensor, and its part
//                                         of every split one
//       rank-00001-of-00002.safetensors   rank 1's parts
//       manifest.json                     see below
//
// manifest.json: the format (3), the step, batch seed, data position and
// the data's size, split and token hash ("data_xxh3"; absent in older
// manifests), the executable it came from, its file's hash
// and a hash of its model (persistent tensor names, dtypes, whole shapes
// and initial values: what a resume requires), the world size and the
// mesh, and per tensor its name, dtype, whole shape, sharding
// ("replicated", or {"axis", "dim": 0, "parts"}: ZeRO's parts of
// ceil(d0 / parts) rows, the last padded) and its shards in part order,
// each a file, a size and an XXH3-64 checksum; and a checksum of all of
// that. A checkpoint holds every tensor whole (its parts joined), so it
// restores under any mesh: each rank keeps its part.
//
// A save: every rank writes its shard file and then a small list of its
// checksums (rank-R-of-N.xxh3.json) into DIR/.tmp-<step>-<token>/, each
// through a temporary file, fsynced and renamed (the token, rank 0's, is
// shared when the state is snapshot). Rank 0 waits for every rank's list,
// writes the manifest, fsyncs, renames the directory to step-N, re-reads
// and verifies it, and only then moves `latest` (written atomically); then
// it removes all but the newest --keep-last checkpoints and any staging
// directory a killed run left. An interrupted save therefore never touches
// the checkpoint a resume would use. A restore verifies every checksum, the
// model hash, the seed and the data; it takes the checkpoint `latest` names,
// or, when that is damaged, skips it with a warning naming what is wrong
// and takes the newest other one that verifies ("the newest good one"
// below: `latest` is the newest a save completed).
//
// Format 2 (one shard of one rank) and directories written before it
// (run_state.json and one .npy per tensor) still restore.
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

/// What one rank writes of a checkpoint, copied to host memory (the copy is
/// the only time training waits), and the run state. For a run of one
/// rank, every persistent tensor whole.
struct CheckpointSnapshot {
  RunState state;
  std::string executable;
  uint64_t modelHash = 0;
  /// The executable file's hash: recorded, not required on resume (another
  /// mesh or other hyper-parameters make another file of the same model).
  uint64_t executableHash = 0;
  /// This rank, the run's ranks and the mesh (name, size per axis).
  int rank = 0, worldSize = 1;
  std::vector<std::pair<std::string, int64_t>> mesh;
  /// Names the staging directory every rank of the save writes into.
  uint64_t token = 0;
  struct Tensor {
    std::string name;
    DType dtype;
    /// The whole tensor's shape.
    std::vector<int64_t> shape;
    /// Split along dimension `dim` into `parts` over mesh axis `axis` (1:
    /// whole); `part` is the one in `bytes`.
    int64_t parts = 1, part = 0;
    int dim = 0;
    std::string axis;
    /// The bytes this rank writes (its part, or the whole tensor); empty
    /// when another rank writes them.
    std::vector<char> bytes;
    bool written = true;
  };
  /// Every persistent tensor, in executable order.
  std::vector<Tensor> tensors;
};

/// Fails, naming both figures, when the file system of `dir` has less free
/// space than one checkpoint of `exe` needs (its parameters and optimizer
/// state), so that a run that could never save stops before training.
Status checkSpaceForCheckpoint(const std::string &dir, const Executable &exe);

/// Copies `trainer`'s state (`data`: its data, or null). On a run of
/// several ranks every rank calls it at the same step (one small gather
/// agrees on the step and the token); it fails if the ranks' steps differ.
Status snapshotTrainer(const Trainer &trainer, const Dataset *data,
                       CheckpointSnapshot &out);

/// Writes `snapshot` as a new checkpoint of `dir` (see the file comment),
/// keeping the newest `keepLast` (0: all). `dir` must be locked by the
/// caller (`lock`), or is locked for the duration of the save. Every rank
/// of a run calls it with its snapshot of the same step; rank 0 waits for
/// the others' shards and publishes the checkpoint, the others return once
/// theirs is written.
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

/// The newest good checkpoint of `dir` (the one `latest` names, else the
/// newest other that loads): its run state, its name, and a warning per
/// checkpoint tried before it that failed verification.
struct CheckpointChoice {
  RunState state;
  std::string name;
  std::vector<std::string> warnings;
};
/// The newest checkpoint of `dir` whose manifest verifies (its checksum),
/// without reading its tensors: the run state to create the trainer that
/// restores it (restoreCheckpoint then checks every tensor, and takes
/// another checkpoint if the tensors are damaged; a run's seed is the same in
/// every checkpoint).
Status findCheckpoint(const std::string &dir, CheckpointChoice &out);

/// Restores the newest good checkpoint of `dir` (or a pre-format-2 saved
/// run) into `trainer`; fills `choice` with what was used and skipped.
Status restoreCheckpoint(const std::string &dir, Trainer &trainer,
                         const Dataset *data, CheckpointChoice &choice);

/// Rolls `trainer` back to the newest good checkpoint of `dir` but keeps
/// its data position: the batches since that checkpoint (the ones that led
/// to a loss spike or a non-finite step) are skipped, not trained on again.
Status rollbackToCheckpoint(const std::string &dir, Trainer &trainer,
                            const Dataset *data, CheckpointChoice &choice);

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_CHECKPOINT_H
