//===- Trainer.cpp - The training loop ------------------------------------===//

#include "train/Trainer.h"

#include "base/Float16.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sys/resource.h>
#include <unordered_map>
#include <unordered_set>

namespace trainc {
namespace {

uint64_t peakRss() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return uint64_t(usage.ru_maxrss) * 1024; // Linux reports KiB
}

} // namespace

/// Output `index` of the session (a scalar), as a double in `out` (NaN
/// when the executable has no such output: index < 0). Any device: a copy
/// to the host.
Status readScalar(const Session &session, int index, double &out) {
  out = kNoValue;
  if (index < 0)
    return okStatus();
  const Executable &exe = session.executable();
  uint32_t id = exe.outputs()[size_t(index)];
  const TensorInfo &t = exe.tensors()[id];
  alignas(8) char bytes[8] = {};
  if (!t.shape.empty() || t.size > sizeof(bytes))
    return internalError("output '" + t.name + "' is not a scalar");
  TRAINC_RETURN_IF_ERROR(session.readTensor(id, bytes));
  uint16_t half;
  std::memcpy(&half, bytes, sizeof(half));
  switch (t.dtype) {
  case DType::F64:
    out = *reinterpret_cast<const double *>(bytes);
    break;
  case DType::F32:
    out = double(*reinterpret_cast<const float *>(bytes));
    break;
  // The loss of a model whose outputs are 16-bit (its own metrics are f32).
  case DType::F16:
    out = double(f16ToFloat(half));
    break;
  case DType::BF16:
    out = double(bf16ToFloat(half));
    break;
  case DType::I1:
    out = double(bytes[0] != 0);
    break;
  default:
    return internalError("output '" + t.name + "' is a scalar of " +
                         dtypeName(t.dtype) + ", not a float");
  }
  return okStatus();
}

Status parameterTensors(const Session &session,
                        std::vector<std::vector<char>> &storage,
                        std::vector<NamedTensor> &out) {
  const Executable &exe = session.executable();
  out.clear();
  storage.clear();
  storage.reserve(exe.parameters().size());
  for (uint32_t id : exe.parameters()) {
    const TensorInfo &t = exe.tensors()[id];
    const void *data = session.tensorData(id);
    // Split, or in device memory: a whole copy on the host.
    if (t.isSplit() || !session.device().hostVisible()) {
      storage.emplace_back();
      TRAINC_RETURN_IF_ERROR(session.readWhole(id, storage.back()));
      data = storage.back().data();
    }
    out.push_back({t.name, t.dtype, t.globalShape, data, size_t(t.globalSize)});
  }
  return okStatus();
}

std::vector<NamedTensor> parameterSpecs(const Session &session) {
  const Executable &exe = session.executable();
  std::vector<NamedTensor> out;
  for (uint32_t id : exe.parameters()) {
    const TensorInfo &t = exe.tensors()[id];
    out.push_back(
        {t.name, t.dtype, t.globalShape, nullptr, size_t(t.globalSize)});
  }
  return out;
}

Status loadParameterTensors(Session &session, const std::string &path) {
  SafetensorsFile file;
  TRAINC_RETURN_IF_ERROR(readSafetensors(path, file));
  const Executable &exe = session.executable();
  auto describe = [](DType dtype, const std::vector<int64_t> &shape) {
    return std::string(dtypeName(dtype)) + " " +
           (shape.size() <= 16 ? shapeString(shape)
                               : "(rank " + std::to_string(shape.size()) + ")");
  };
  std::unordered_map<std::string, const SafetensorsFile::Tensor *> inFile;
  for (const SafetensorsFile::Tensor &t : file.tensors)
    inFile.emplace(t.name, &t);

  // Every difference is collected, so that one message says all that is
  // wrong (what a caller of load_state_dict needs to fix its dictionary).
  std::vector<std::string> mismatched, missing, unexpected;
  std::vector<std::pair<uint32_t, const SafetensorsFile::Tensor *>> writes;
  std::unordered_set<std::string> parameters;
  for (uint32_t id : exe.parameters()) {
    const TensorInfo &p = exe.tensors()[id];
    parameters.insert(p.name);
    auto it = inFile.find(p.name);
    if (it == inFile.end()) {
      missing.push_back("'" + p.name + "' (" +
                        describe(p.dtype, p.globalShape) + ")");
      continue;
    }
    const SafetensorsFile::Tensor &t = *it->second;
    // Compared by the file's dtype name: the types safetensors has no name
    // for are saved (and so loaded) as their bytes, "U8" or "I8".
    if (t.fileDType != safetensorsDType(p.dtype) || t.shape != p.globalShape ||
        t.bytes != p.globalSize) {
      mismatched.push_back("'" + p.name + "' is " + describe(t.dtype, t.shape) +
                           " in the file but " +
                           describe(p.dtype, p.globalShape) +
                           " in the executable");
      continue;
    }
    writes.push_back({id, &t});
  }
  for (const SafetensorsFile::Tensor &t : file.tensors)
    if (!parameters.count(t.name))
      unexpected.push_back("'" + t.name + "' (" + describe(t.dtype, t.shape) +
                           ")");
  if (!mismatched.empty() || !missing.empty() || !unexpected.empty()) {
    std::string message = path + " does not match the parameters of " +
                          exe.origin() + " (nothing was loaded)";
    auto list = [&](const std::string &what,
                    const std::vector<std::string> &items) {
      if (items.empty())
        return;
      message += "; " + what;
      for (size_t i = 0; i < items.size() && i < 8; ++i)
        message += (i ? ", " : "") + items[i];
      if (items.size() > 8)
        message += " and " + std::to_string(items.size() - 8) + " more";
    };
    list("tensor ", mismatched);
    list("missing from the file: ", missing);
    list("not a parameter: ", unexpected);
    return invalidArgument(message);
  }
  // Everything checked out: only a device error can fail a copy now.
  for (auto [id, t] : writes)
    TRAINC_RETURN_IF_ERROR(session.setPersistent(id, file.data(*t), t->bytes));
  return okStatus();
}

Trainer::~Trainer() = default;

Status Trainer::prepareEval() {
  const Executable &train = session_->executable();
  const Executable &eval = evalSession_->executable();
  if (eval.isTrainingStep())
    return invalidArgument(eval.origin() +
                           " is a training step: compile the evaluation "
                           "executable without --train");
  evalLossOutput_ = eval.signature().loss;
  if (evalLossOutput_ < 0)
    return invalidArgument(eval.origin() + " has no scalar output 'loss'");
  for (size_t i = 0; i < eval.parameters().size(); ++i) {
    const TensorInfo &p = eval.tensors()[eval.parameters()[i]];
    bool found = false;
    for (uint32_t id : train.parameters()) {
      const TensorInfo &q = train.tensors()[id];
      if (q.name != p.name)
        continue;
      // The whole parameter: a split one (ZeRO-3, tensor parallelism) is
      // gathered for each evaluation.
      if (q.dtype != p.dtype || q.globalShape != p.shape)
        return invalidArgument("parameter '" + p.name + "' is " +
                               dtypeName(p.dtype) + shapeString(p.shape) +
                               " in " + eval.origin() + " but " +
                               dtypeName(q.dtype) + shapeString(q.globalShape) +
                               " in " + train.origin());
      evalParams_.push_back({i, id});
      found = true;
    }
    if (!found)
      return invalidArgument("parameter '" + p.name + "' of " + eval.origin() +
                             " is not a parameter of " + train.origin() +
                             " (were they compiled from one model?)");
  }
  return batches_->bindEval(eval);
}

Status Trainer::create(std::shared_ptr<const Executable> step,
                       std::shared_ptr<const Executable> eval,
                       const Dataset *data, const TrainerOptions &options,
                       std::unique_ptr<Trainer> &out) {
  auto trainer = std::unique_ptr<Trainer>(new Trainer());
  trainer->options_ = options;
  trainer->data_ = data;
  TRAINC_RETURN_IF_ERROR(
      Session::create(std::move(step), options.session, trainer->session_));
  const Executable &exe = trainer->session_->executable();
  trainer->lossOutput_ = exe.signature().loss;
  trainer->gradNormOutput_ = exe.signature().gradNorm;
  trainer->lrOutput_ = exe.signature().lr;
  trainer->skippedOutput_ = exe.signature().stepSkipped;
  trainer->lossScaleOutput_ = exe.signature().lossScale;
  if (data) {
    if (!exe.isTrainingStep())
      return invalidArgument(
          exe.signature().gradients.empty()
              ? exe.origin() + " is not a training step (it updates no "
                               "parameters): compile it with trainc --train"
              : exe.origin() + " computes gradients but updates no "
                               "parameters (trainc --train --optimizer none): "
                               "run it with --input, or compile it with an "
                               "optimizer to train on data");
    DataBinding binding;
    binding.tokensInput = options.tokensInput;
    binding.targetsInput = options.targetsInput;
    binding.seed = options.seed;
    TRAINC_RETURN_IF_ERROR(
        data->bind(*trainer->session_, binding, trainer->batches_));
  } else if (int tokens = exe.signature().tokens; tokens >= 0) {
    // The caller sets the inputs; a step still takes the token input's
    // batch x sequence tokens, which tokens/s counts.
    const TensorInfo &t = exe.tensors()[exe.inputs()[size_t(tokens)]];
    if (t.shape.size() == 2)
      trainer->fixedTokens_ = t.shape[0] * t.shape[1];
  }
  if (eval) {
    if (!data)
      return invalidArgument("evaluation needs data with a held-out split");
    TRAINC_RETURN_IF_ERROR(Session::create(std::move(eval), options.session,
                                           trainer->evalSession_));
    TRAINC_RETURN_IF_ERROR(trainer->prepareEval());
    if (trainer->batches_->evalBatchCount() == 0)
      return invalidArgument(trainer->batches_->evalTooShort());
  }
  // The --verify-steps twin now, while the executable's file is the one
  // loaded (no session reads it later: io/MappedFile.h); it takes this
  // trainer's state at the first step.
  if (options.verifySteps > 0)
    TRAINC_RETURN_IF_ERROR(trainer->createTwin());
  out = std::move(trainer);
  return okStatus();
}

int64_t Trainer::tokensPerStep() const {
  return batches_ ? batches_->tokensPerStep() : fixedTokens_;
}

int64_t Trainer::samplesPerStep() const {
  return batches_ ? batches_->samplesPerStep() : 0;
}

int64_t Trainer::evalBatchesPerEvaluation() const {
  if (!evalSession_)
    return 0;
  int64_t all = batches_->evalBatchCount();
  return options_.evalBatches > 0 ? std::min(all, options_.evalBatches) : all;
}

Status Trainer::step(StepMetrics &out) {
  Collective &ranks = session_->device().collective();
  if (ranks.worldSize() > 1 && !ranksAgree_) {
    TRAINC_RETURN_IF_ERROR(checkRanksAgree(ranks));
    ranksAgree_ = true;
  }
  if (twin_ && !twinSynced_) {
    TRAINC_RETURN_IF_ERROR(syncTwin());
    twinSynced_ = true;
  }
  if (batches_)
    TRAINC_RETURN_IF_ERROR(batches_->feedNext(*session_));
  double waitedBefore = ranks.secondsWaiting();
  double inFlightBefore = ranks.secondsInFlight();
  auto start = std::chrono::steady_clock::now();
  TRAINC_RETURN_IF_ERROR(session_->run());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const Executable &exe = session_->executable();
  out = StepMetrics();
  if (ranks.worldSize() > 1) {
    TRAINC_RETURN_IF_ERROR(compareRanks(
        ranks, seconds, ranks.secondsWaiting() - waitedBefore, out));
    out.commTotalSeconds = ranks.secondsInFlight() - inFlightBefore;
  }
  out.step = session_->stepCount();
  out.hasLoss = lossOutput_ >= 0;
  double skipped = 0;
  TRAINC_RETURN_IF_ERROR(readScalar(*session_, lossOutput_, out.loss));
  TRAINC_RETURN_IF_ERROR(readScalar(*session_, gradNormOutput_, out.gradNorm));
  TRAINC_RETURN_IF_ERROR(readScalar(*session_, lrOutput_, out.learningRate));
  TRAINC_RETURN_IF_ERROR(readScalar(*session_, skippedOutput_, skipped));
  out.skipped = skippedOutput_ >= 0 && skipped != 0;
  TRAINC_RETURN_IF_ERROR(
      readScalar(*session_, lossScaleOutput_, out.lossScale));
  out.stepSeconds = seconds;
  if (seconds > 0) {
    out.tokensPerSecond = double(tokensPerStep()) / seconds;
    out.samplesPerSecond = double(samplesPerStep()) / seconds;
    out.flopsPerSecond = double(exe.flops()) / seconds;
  }
  if (options_.peakFlops > 0)
    out.mfu = out.flopsPerSecond / options_.peakFlops;
  out.plannedBytes = exe.memoryPlan().peak;
  out.measuredBytes = session_->measuredPeak();
  out.peakRssBytes = peakRss();
  if (twin_)
    return verifyStep(out);
  return okStatus();
}

Status Trainer::createTwin() {
  TrainerOptions o = options_;
  o.verifySteps = 0;
  o.spikeZ = 0;
  o.session = SessionOptions();
  o.session.deviceName = "cpu";
  return Trainer::create(session_->sharedExecutable(), nullptr, data_, o,
                         twin_);
}

Status Trainer::syncTwin() {
  // The same state: every parameter and optimizer-state tensor (whole, so
  // either side may be split), the step count and the data position.
  const Executable &exe = session_->executable();
  std::vector<char> bytes;
  for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
    TensorRole role = exe.tensors()[id].role;
    if (role != TensorRole::Parameter && role != TensorRole::State)
      continue;
    TRAINC_RETURN_IF_ERROR(session_->readWhole(id, bytes));
    TRAINC_RETURN_IF_ERROR(
        twin_->session_->setPersistent(id, bytes.data(), bytes.size()));
  }
  twin_->restore(state());
  return okStatus();
}

Status Trainer::verifyStep(StepMetrics &out) {
  const Executable &exe = session_->executable();
  // Fixed inputs (no data): the twin gets this step's. With data the twin
  // draws the same batch itself (same seed, same position).
  if (!batches_) {
    std::vector<char> bytes;
    for (size_t i = 0; i < exe.inputs().size(); ++i) {
      bytes.resize(exe.tensors()[exe.inputs()[i]].size);
      TRAINC_RETURN_IF_ERROR(
          session_->readTensor(exe.inputs()[i], bytes.data()));
      TRAINC_RETURN_IF_ERROR(
          twin_->session_->setInput(i, bytes.data(), bytes.size()));
    }
  }
  StepMetrics cpu;
  TRAINC_RETURN_IF_ERROR(twin_->step(cpu));
  VerifyLimits limits = verifyLimits(exe);
  StepComparison &c = out.verification;
  out.verified = true;
  auto scalarError = [](double device, double reference) {
    if (std::isnan(device) && std::isnan(reference))
      return 0.0;
    return relativeL2Error(&device, &reference, 1, DType::F64);
  };
  c.lossError = scalarError(out.loss, cpu.loss);
  c.gradNormError = scalarError(out.gradNorm, cpu.gradNorm);
  auto note = [&](const std::string &name, double error, double limit) {
    if (c.worst.empty() || error / limit > c.worstError / c.worstLimit) {
      c.worst = name;
      c.worstError = error;
      c.worstLimit = limit;
    }
    if (!(error <= limit))
      c.mismatches.push_back({name, error, limit});
  };
  note("loss", c.lossError, limits.scalars);
  note("grad_norm", c.gradNormError, limits.scalars);
  // Each tensor's sums, then its kind's (Verify.h: the floor).
  std::vector<int> kinds = verifyKinds(exe);
  std::vector<L2Sums> sums(kinds.size());
  std::map<int, L2Sums> kindSums;
  std::vector<char> mine, theirs;
  for (uint32_t id = 0; id < kinds.size(); ++id) {
    if (kinds[id] < 0)
      continue;
    DType dtype = exe.tensors()[id].dtype;
    TRAINC_RETURN_IF_ERROR(session_->readWhole(id, mine));
    TRAINC_RETURN_IF_ERROR(twin_->session_->readWhole(id, theirs));
    sums[id] = l2Sums(mine.data(), theirs.data(),
                      int64_t(mine.size() / dtypeSize(dtype)), dtype);
    kindSums[kinds[id]].norm += sums[id].norm;
    kindSums[kinds[id]].count += sums[id].count;
  }
  for (uint32_t id = 0; id < kinds.size(); ++id) {
    if (kinds[id] < 0)
      continue;
    const TensorInfo &t = exe.tensors()[id];
    const L2Sums &kind = kindSums[kinds[id]];
    double share =
        kind.count
            ? std::sqrt(kind.norm * double(sums[id].count) / double(kind.count))
            : 0;
    note(t.name, relativeL2Error(sums[id], share),
         t.role == TensorRole::Parameter ? limits.parameters : limits.state);
  }
  if (++verified_ >= options_.verifySteps)
    twin_.reset();
  if (c.mismatches.empty())
    return okStatus();
  std::string message = "step " + std::to_string(out.step) + " on " +
                        session_->device().name() +
                        " differs from the CPU's (relative L2 error, limit):";
  for (const TensorMismatch &m : c.mismatches)
    message += "\n  " + m.name + ": " + std::to_string(m.error) + " > " +
               std::to_string(m.limit);
  return Status(StatusCode::kInternal, message);
}

Status Trainer::checkRanksAgree(Collective &ranks) {
  // Ranks given another seed, other data or another held-out fraction, or
  // resumed from another checkpoint, would run every collective of the
  // step as usual while training on batches no one run would draw.
  enum { kStep, kPosition, kSeed, kSize, kHash, kTrainSize, kFields };
  uint64_t mine[kFields] = {uint64_t(session_->stepCount())};
  if (batches_) {
    mine[kPosition] = batches_->position();
    mine[kSeed] = batches_->seed();
    mine[kSize] = data_->size();
    mine[kHash] = data_->contentHash();
    mine[kTrainSize] = data_->trainSize();
  }
  std::string unit = data_ ? data_->unit() : "tokens";
  std::vector<uint64_t> all(size_t(ranks.worldSize()) * kFields);
  CollectiveSite site;
  site.step = session_->stepCount();
  site.what = "the check that every rank trains on the same batches";
  TRAINC_RETURN_IF_ERROR(session_->device().hostCollective().allGather(
      -1, mine, all.data(), kFields, DType::U64,
      session_->device().computeStream(), site));
  std::string differences;
  auto note = [&](int rank, const std::string &what) {
    differences += "\n  rank " + std::to_string(rank) + " " + what;
  };
  const uint64_t *first = all.data();
  for (int r = 1; r < ranks.worldSize(); ++r) {
    const uint64_t *other = first + size_t(r) * kFields;
    if (other[kSize] != first[kSize] || other[kHash] != first[kHash])
      note(r, "read other data: " + std::to_string(other[kSize]) + " " + unit +
                  " of hash " + hex64(other[kHash]) + ", rank 0 " +
                  std::to_string(first[kSize]) + " of hash " +
                  hex64(first[kHash]));
    else if (other[kTrainSize] != first[kTrainSize])
      note(r, "holds out another part of the data: it trains on its first " +
                  std::to_string(other[kTrainSize]) + " " + unit +
                  ", rank 0 on " + std::to_string(first[kTrainSize]));
    if (other[kSeed] != first[kSeed])
      note(r, "has seed " + std::to_string(other[kSeed]) + ", rank 0 " +
                  std::to_string(first[kSeed]));
    if (other[kStep] != first[kStep])
      note(r, "has done " + std::to_string(other[kStep]) + " steps, rank 0 " +
                  std::to_string(first[kStep]));
    else if (other[kPosition] != first[kPosition])
      note(r, "is at training batch " + std::to_string(other[kPosition]) +
                  ", rank 0 at " + std::to_string(first[kPosition]));
  }
  if (differences.empty())
    return okStatus();
  return invalidArgument(
      "the ranks would train on batches that no single run draws:" +
      differences +
      "\n(every rank must be given the same data, held-out fraction and "
      "seed, and resume from the same checkpoint)");
}

Status Trainer::compareRanks(Collective &ranks, double stepSeconds,
                             double commSeconds, StepMetrics &out) {
  // One small gather per step: every rank learns every rank's compute.
  double compute = stepSeconds - commSeconds;
  std::vector<double> all(size_t(ranks.worldSize()));
  CollectiveSite site;
  site.step = session_->stepCount() - 1;
  site.what = "the comparison of the ranks' step times";
  TRAINC_RETURN_IF_ERROR(session_->device().hostCollective().allGather(
      -1, &compute, all.data(), 1, DType::F64,
      session_->device().computeStream(), site));
  // The lower median: of two ranks, the faster one.
  std::vector<double> sorted = all;
  size_t middle = (sorted.size() - 1) / 2;
  std::nth_element(sorted.begin(), sorted.begin() + middle, sorted.end());
  out.commSeconds = commSeconds;
  out.medianComputeSeconds = sorted[middle];
  out.slowestRank = int(std::max_element(all.begin(), all.end()) - all.begin());
  out.slowestComputeSeconds = all[size_t(out.slowestRank)];
  out.straggler = out.slowestComputeSeconds >
                  out.medianComputeSeconds * (1 + options_.stragglerFraction);
  return okStatus();
}

Status Trainer::evaluate(double &loss) {
  if (!evalSession_)
    return Status(StatusCode::kFailedPrecondition,
                  "no evaluation executable was given");
  for (auto [evalIndex, trainId] : evalParams_) {
    uint32_t evalId = evalSession_->executable().parameters()[evalIndex];
    const TensorInfo &t = session_->executable().tensors()[trainId];
    if (!t.isSplit() && session_->device().hostVisible()) {
      TRAINC_RETURN_IF_ERROR(evalSession_->setPersistent(
          evalId, session_->tensorData(trainId), t.size));
      continue;
    }
    std::vector<char> whole;
    TRAINC_RETURN_IF_ERROR(session_->readWhole(trainId, whole));
    TRAINC_RETURN_IF_ERROR(
        evalSession_->setPersistent(evalId, whole.data(), whole.size()));
  }
  int64_t batches = evalBatchesPerEvaluation();
  double sum = 0;
  int64_t pieces = 0;
  for (int64_t b = 0; b < batches; ++b)
    TRAINC_RETURN_IF_ERROR(
        batches_->feedEval(b, *evalSession_, [&]() -> Status {
          TRAINC_RETURN_IF_ERROR(evalSession_->run());
          double pieceLoss = kNoValue;
          TRAINC_RETURN_IF_ERROR(
              readScalar(*evalSession_, evalLossOutput_, pieceLoss));
          sum += pieceLoss;
          ++pieces;
          return okStatus();
        }));
  // Every piece has as many samples (or targets) as every other: the mean
  // of their means is the mean over all of them.
  loss = sum / double(pieces);
  return okStatus();
}

void Trainer::checkSpike(StepMetrics &m) {
  if (!m.hasLoss || m.skipped || !std::isfinite(m.loss))
    return;
  // TRAINC_TEST_LOSS_SPIKE_STEP=N: the first time the check sees step N,
  // it sees its loss 100 times larger (a test hook for the spike policies;
  // the loss itself is reported unchanged).
  static int64_t testSpikeStep = [] {
    const char *v = std::getenv("TRAINC_TEST_LOSS_SPIKE_STEP");
    return v ? std::atoll(v) : int64_t(0);
  }();
  double loss = m.loss;
  if (m.step == testSpikeStep) {
    loss = 100 * std::fabs(m.loss) + 100;
    testSpikeStep = 0;
  }
  if (recentLosses_.size() >= size_t(kSpikeWarmup)) {
    double n = double(recentLosses_.size()), mean = 0, var = 0;
    for (double l : recentLosses_)
      mean += l / n;
    for (double l : recentLosses_)
      var += (l - mean) * (l - mean) / n;
    // At least 1% of the mean: a converged loss that barely moves is no
    // reason to call its ordinary noise a spike.
    double sd = std::max(std::sqrt(var), 0.01 * std::fabs(mean));
    m.lossZ = sd > 0 ? (loss - mean) / sd : 0;
    m.spike = options_.spikeZ > 0 && m.lossZ > options_.spikeZ;
  }
  if (m.spike) // a spike does not move the baseline it is measured against
    return;
  recentLosses_.push_back(loss);
  if (recentLosses_.size() > size_t(kSpikeWindow))
    recentLosses_.pop_front();
}

Status Trainer::run(int64_t steps, int64_t evalEvery,
                    const std::function<Status(const StepMetrics &)> &onStep) {
  for (int64_t i = 0; i < steps; ++i) {
    StepMetrics m;
    TRAINC_RETURN_IF_ERROR(step(m));
    checkSpike(m);
    bool last = i + 1 == steps;
    if (evalSession_ && evalEvery > 0 && (m.step % evalEvery == 0 || last)) {
      TRAINC_RETURN_IF_ERROR(evaluate(m.evalLoss));
      m.evaluated = true;
    }
    TRAINC_RETURN_IF_ERROR(onStep(m));
  }
  return okStatus();
}

RunState Trainer::state() const {
  RunState s;
  s.step = session_->stepCount();
  if (batches_) {
    s.seed = batches_->seed();
    s.dataPosition = batches_->position();
  }
  return s;
}

void Trainer::restore(const RunState &state) {
  ranksAgree_ = false;
  session_->setStepCount(state.step);
  if (batches_)
    batches_->setPosition(state.dataPosition);
}

} // namespace trainc
