//===- RunState.h - Saving a training run and continuing it -----*- C++ -*-===//
//
// A saved run is a directory: every parameter and optimizer-state tensor as
// <name>.npy (path separators in names become '_') and run_state.json (the
// steps done, the batch seed, the data position, the data's size and split,
// and the executable it came from). Continuing it in a trainer of the same
// executable, seed and data gives the losses the uninterrupted run would
// have, bit for bit (the batches depend only on seed and position, and
// dropout keys on the step).
//
// The tensor files are written first and run_state.json last, after the old
// one is removed: a directory whose tensors are half rewritten has no run
// state, and restoring refuses it. (Atomic, checksummed checkpoints are
// issue 14's.)
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_RUNSTATE_H
#define TRAINC_RUNTIME_TRAIN_RUNSTATE_H

#include "train/Trainer.h"

#include <string>

namespace trainc {

/// Saves `trainer`'s run in `dir` (created when missing). `data` is the
/// trainer's data (null without data).
Status saveRun(const std::string &dir, const Trainer &trainer,
               const TokenData *data);

/// Reads `dir`/run_state.json.
Status readRunState(const std::string &dir, RunState &state);

/// Continues the run saved in `dir` in `trainer`: loads every parameter and
/// state tensor and sets the step and data position. The trainer must have
/// been made with the saved seed, and `data` must have the saved size and
/// split; either difference is an error that says so.
Status restoreRun(const std::string &dir, Trainer &trainer,
                  const TokenData *data);

/// The file name of a tensor of a saved run (without the directory).
std::string runTensorFileName(const std::string &tensorName);

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_RUNSTATE_H
