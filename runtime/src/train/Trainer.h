//===- Trainer.h - The training loop ----------------------------*- C++ -*-===//
//
// A Trainer steps a training executable (trainc --train) over batches of a
// Dataset (token streams or samples: Dataset.h), evaluates on the held-out
// split with a forward executable of the same model (its parameters copied in
// by name before each evaluation), and measures every step: the executable's
// scalar outputs (loss, grad_norm, lr), wall time, tokens/s or samples/s,
// FLOP/s and model FLOPs utilization against a peak, planned and measured
// memory.
//
// The learning-rate schedule's state is the step count the executable
// keeps in its optimizer state; the data's state is the batches' position.
// Both are part of RunState, so a run can be saved and continued exactly.
//
// Without data, the Trainer runs the executable on inputs the caller set on
// session() (one fixed batch).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_TRAIN_TRAINER_H
#define TRAINC_RUNTIME_TRAIN_TRAINER_H

#include "exec/Session.h"
#include "io/SafeTensors.h"
#include "train/Dataset.h"
#include "train/Verify.h"

#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>

namespace trainc {

struct TrainerOptions {
  /// Names of the token and target inputs of token data ("" = those of the
  /// executable's training signature).
  std::string tokensInput, targetsInput;
  /// Held-out batches per evaluation (0 = all of them).
  int64_t evalBatches = 0;
  /// The device's peak FLOP/s for MFU (0 = not reported).
  double peakFlops = 0;
  uint64_t seed = 0;
  SessionOptions session;
  /// Loss spikes: a step's loss more than spikeZ standard deviations (at
  /// least 1% of the mean) above the mean of the last kSpikeWindow finite,
  /// unskipped, unspiked losses (once kSpikeWarmup of them are known) is a
  /// spike. 0 = not checked.
  double spikeZ = 0;
  /// A rank whose compute exceeds the median rank's by this fraction is a
  /// straggler (StepMetrics::straggler).
  double stragglerFraction = 0.2;
  /// Check the first verifySteps steps against a CPU twin of the trainer
  /// (train/Verify.h); a step beyond the limits fails.
  int64_t verifySteps = 0;
};

constexpr int kSpikeWindow = 64, kSpikeWarmup = 16;

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct StepMetrics {
  /// 1-based: the number of steps done, this one included.
  int64_t step = 0;
  /// The executable's outputs of these names (NaN when it has none).
  double loss = kNoValue, gradNorm = kNoValue, learningRate = kNoValue;
  /// tokensPerSecond with token data, samplesPerSecond with samples (the
  /// other is 0).
  double stepSeconds = 0, tokensPerSecond = 0, samplesPerSecond = 0,
         flopsPerSecond = 0;
  /// flopsPerSecond / peak (NaN without a peak).
  double mfu = kNoValue;
  /// The plan's peak of the arenas, the peak any instruction touched, and
  /// the process's peak resident set.
  uint64_t plannedBytes = 0, measuredBytes = 0, peakRssBytes = 0;
  /// Whether the executable has a loss (its training signature names one;
  /// else loss is NaN).
  bool hasLoss = false;
  /// Whether an evaluation ran after this step; then evalLoss is its result
  /// (which may itself be NaN or inf).
  bool evaluated = false;
  double evalLoss = kNoValue;
  /// The step's loss or gradients were not finite, so it changed no
  /// parameter or optimizer state (the signature's step_skipped metric).
  bool skipped = false;
  /// The dynamic loss scale after this step (fp16 executables; NaN
  /// otherwise): halved by a skipped step (an overflow), doubled after
  /// 2,000 clean steps.
  double lossScale = kNoValue;
  /// (loss - mean) / stddev over the recent window (NaN before the warmup
  /// or without a loss), and whether it exceeds TrainerOptions::spikeZ.
  double lossZ = kNoValue;
  bool spike = false;
  /// Runs of several ranks (NaN / -1 otherwise): this rank's seconds
  /// waiting in collectives during the step (communication not hidden by
  /// compute); each rank's compute (step minus waiting) compared: the
  /// median, the slowest rank and its compute, and whether it lags the
  /// median by more than TrainerOptions::stragglerFraction (a straggler).
  double commSeconds = kNoValue, medianComputeSeconds = kNoValue,
         slowestComputeSeconds = kNoValue;
  /// Runs of several ranks: the seconds of the step during which at least
  /// one collective was in flight, hidden behind compute or not.
  double commTotalSeconds = kNoValue;
  int slowestRank = -1;
  bool straggler = false;
  /// Whether this step was checked against the CPU (verifySteps), and how
  /// it compared (within the limits, or the step failed).
  bool verified = false;
  StepComparison verification;
};

/// What a run needs to continue exactly: the steps done and the data
/// sampler's position (parameters and optimizer state are tensors).
struct RunState {
  int64_t step = 0;
  uint64_t seed = 0, dataPosition = 0;
  /// The data's size and split (in tokens or samples) and hash
  /// (Dataset::contentHash) when saved: a resume must see the same (hash 0:
  /// not recorded, by older versions).
  uint64_t dataSize = 0, trainSize = 0, dataHash = 0;
};

class Trainer {
public:
  /// `eval` may be null (no evaluation); `data` may be null (fixed inputs).
  /// `data` must outlive the Trainer.
  static Status create(std::shared_ptr<const Executable> step,
                       std::shared_ptr<const Executable> eval,
                       const Dataset *data, const TrainerOptions &options,
                       std::unique_ptr<Trainer> &out);
  ~Trainer();

  /// The training session (to set fixed inputs or read parameters).
  Session &session() { return *session_; }
  const Session &session() const { return *session_; }
  const Executable &executable() const { return session_->executable(); }
  /// The batches drawn from the data (null without data).
  const Batches *batches() const { return batches_.get(); }
  /// Tokens consumed per step by all ranks together (global batch x
  /// sequence; without data, the token input's batch x sequence), or 0.
  int64_t tokensPerStep() const;
  /// Samples consumed per step by all ranks together (sample data), or 0.
  int64_t samplesPerStep() const;
  int64_t evalBatchesPerEvaluation() const;

  /// One training step.
  Status step(StepMetrics &out);
  /// The mean loss over the held-out batches with the current parameters.
  Status evaluate(double &loss);

  /// Runs `steps` steps, evaluating after every step whose number is a
  /// multiple of `evalEvery` and after the last one (evalEvery 0: never;
  /// INT64_MAX: after the last only), calling `onStep` after each.
  /// A non-OK status from `onStep` stops the run and is returned.
  Status run(int64_t steps, int64_t evalEvery,
             const std::function<Status(const StepMetrics &)> &onStep);

  RunState state() const;
  void restore(const RunState &state);
  /// Fills m.lossZ and m.spike, and updates the window of recent losses.
  void checkSpike(StepMetrics &m);

private:
  Trainer() = default;
  /// Fills the several-ranks fields of `out` (a gather over every rank).
  Status compareRanks(Collective &ranks, double stepSeconds, double commSeconds,
                      StepMetrics &out);
  Status prepareEval();
  /// Before the first step, and the first after a restore, on several
  /// ranks: every rank has the same seed, data, held-out split, step and
  /// data position, else an error names the ranks that differ.
  Status checkRanksAgree(Collective &ranks);
  /// Makes the CPU twin of --verify-steps (when the trainer is created).
  Status createTwin();
  /// Gives the twin this trainer's state (at the first step).
  Status syncTwin();
  /// Steps the twin as this trainer just stepped and compares the two.
  Status verifyStep(StepMetrics &out);

  std::unique_ptr<Session> session_, evalSession_;
  const Dataset *data_ = nullptr;
  /// The CPU twin while steps are verified, and the steps verified so far.
  std::unique_ptr<Trainer> twin_;
  bool twinSynced_ = false;
  int64_t verified_ = 0;
  /// Whether checkRanksAgree passed since the trainer's state last changed.
  bool ranksAgree_ = false;
  std::unique_ptr<Batches> batches_;
  TrainerOptions options_;
  /// Without data: the tokens of the fixed batch's token input.
  int64_t fixedTokens_ = 0;
  /// Output indices of loss, grad_norm, lr (-1: none).
  /// The recent losses the spike check compares with.
  std::deque<double> recentLosses_;
  int lossOutput_ = -1, gradNormOutput_ = -1, lrOutput_ = -1,
      skippedOutput_ = -1, lossScaleOutput_ = -1;
  int evalLossOutput_ = -1;
  /// (eval parameter index, training tensor id) to copy before evaluating.
  std::vector<std::pair<size_t, uint32_t>> evalParams_;
};

/// The session's parameters (the trained weights) by their model names,
/// whole: pointing into the session, or, for parameters split over the mesh
/// (ZeRO-3), into `storage`, gathered (Session::readWhole: every rank calls
/// it at the same point).
Status parameterTensors(const Session &session,
                        std::vector<std::vector<char>> &storage,
                        std::vector<NamedTensor> &out);

/// What parameterTensors gives without the data (null): names, dtypes, whole
/// shapes and byte counts, from the executable alone (no collective).
std::vector<NamedTensor> parameterSpecs(const Session &session);

/// Sets the session's parameters from the .safetensors file `path`, by the
/// names parameterTensors gives. Strict: every parameter must be in the file
/// with its dtype and shape, and every tensor of the file must be a
/// parameter; otherwise kInvalidArgument names each difference. The file is
/// read and checked whole before the first parameter is written, so an error
/// changes nothing. Optimizer state is not touched.
Status loadParameterTensors(Session &session, const std::string &path);

/// Output `index` of the session, a scalar float or i1, as a double in
/// `out` (16-bit floats converted exactly; NaN when index < 0). Any device:
/// a copy to the host.
Status readScalar(const Session &session, int index, double &out);

} // namespace trainc

#endif // TRAINC_RUNTIME_TRAIN_TRAINER_H
