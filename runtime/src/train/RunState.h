//===- RunState.h - Saving a training run and continuing it -----*- C++ -*-===//
//
// Saved runs of format 1 (API versions 2-3), read so that they still
// continue: a directory of <name>.npy per parameter and optimizer-state
// tensor and run_state.json (the steps done, the batch seed, the data
// position, the data's size and split, the executable). trainc now writes
// checkpoints (Checkpoint.h) instead.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_RUNSTATE_H
#define TRAINC_RUNTIME_TRAIN_RUNSTATE_H

#include "train/Trainer.h"

#include <string>

namespace trainc {

/// Reads `dir`/run_state.json.
Status readRunState(const std::string &dir, RunState &state);

/// Continues the run saved in `dir` in `trainer`: loads every parameter and
/// state tensor and sets the step and data position. The trainer must have
/// been made with the saved seed, and `data` must have the saved size and
/// split; either difference is an error that says so.
Status restoreRun(const std::string &dir, Trainer &trainer,
                  const Dataset *data);

/// Fails, naming `where`, when a run saved as `saved` cannot continue on
/// `data` as `current`: another seed, another size or split, or other
/// content (when `saved` has a hash). Nothing to check without data.
Status checkSameData(const std::string &where, const RunState &saved,
                     const RunState &current, const Dataset *data);

/// The file name of a tensor of a saved run (without the directory).
std::string runTensorFileName(const std::string &tensorName);

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_RUNSTATE_H
