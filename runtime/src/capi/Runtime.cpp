//===- Runtime.cpp - The C API over Executable and Session ----------------===//

#include "trainc/runtime.h"

#include "exec/Describe.h"
#include "exec/Session.h"
#include "io/OnnxExport.h"
#include "io/SafeTensors.h"
#include "io/TensorFiles.h"
#include "train/Checkpoint.h"
#include "train/RunState.h"
#include "train/Trainer.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>

struct trainc_status_s {
  trainc_status_code code;
  std::string message;
};

struct trainc_executable_s {
  std::shared_ptr<const trainc::Executable> executable;
};

struct trainc_session_s {
  /// Set for sessions the caller created; a trainer's session (borrowed)
  /// leaves it null.
  std::unique_ptr<trainc::Session> owned;
  trainc::Session *session = nullptr;
  /// Host copies of outputs on a device the host cannot read (a GPU), per
  /// output index: what trainc_session_output points into.
  std::vector<std::vector<char>> hostOutputs;
};

struct trainc_trainer_s {
  /// Declared first: the trainer's batches refer to it.
  std::unique_ptr<trainc::Dataset> data;
  std::unique_ptr<trainc::Trainer> trainer;
  /// The handle of the trainer's session (trainc_trainer_session).
  trainc_session_s session;
  /// trainc_trainer_use_checkpoint_dir's lock and retention.
  std::unique_ptr<trainc::CheckpointLock> checkpointLock;
  int keepLast = 0;
  std::string restoreNote;
  /// Background saves (destroyed first: it waits for the write in flight,
  /// which uses the lock).
  trainc::AsyncCheckpointWriter writer;
};

// The C header cannot include the schema's generated C++; its dtype enum
// is the public ABI's spelling of the schema's DType, held to it here.
static_assert(TRAINC_F64 == int(trainc::DType::F64) &&
                  TRAINC_F32 == int(trainc::DType::F32) &&
                  TRAINC_F16 == int(trainc::DType::F16) &&
                  TRAINC_BF16 == int(trainc::DType::BF16) &&
                  TRAINC_I64 == int(trainc::DType::I64) &&
                  TRAINC_I32 == int(trainc::DType::I32) &&
                  TRAINC_I1 == int(trainc::DType::I1) &&
                  TRAINC_I16 == int(trainc::DType::I16) &&
                  TRAINC_I8 == int(trainc::DType::I8) &&
                  TRAINC_U64 == int(trainc::DType::U64) &&
                  TRAINC_U32 == int(trainc::DType::U32) &&
                  TRAINC_U16 == int(trainc::DType::U16) &&
                  TRAINC_U8 == int(trainc::DType::U8) &&
                  TRAINC_F8E4M3FN == int(trainc::DType::F8E4M3FN) &&
                  TRAINC_F8E4M3FNUZ == int(trainc::DType::F8E4M3FNUZ) &&
                  TRAINC_F8E5M2 == int(trainc::DType::F8E5M2) &&
                  TRAINC_F8E5M2FNUZ == int(trainc::DType::F8E5M2FNUZ) &&
                  TRAINC_I4 == int(trainc::DType::I4) &&
                  TRAINC_U4 == int(trainc::DType::U4) &&
                  TRAINC_I2 == int(trainc::DType::I2) &&
                  TRAINC_U2 == int(trainc::DType::U2) &&
                  TRAINC_F4E2M1FN == int(trainc::DType::F4E2M1FN) &&
                  TRAINC_F8E8M0FNU == int(trainc::DType::F8E8M0FNU) &&
                  trainc::kNumDTypes == 23,
              "trainc_dtype must number the schema's DType");

namespace {

/// The one place C++ Status values become C statuses.
trainc_status toC(const trainc::Status &s) {
  if (s.ok())
    return nullptr;
  return new (std::nothrow)
      trainc_status_s{static_cast<trainc_status_code>(s.code()), s.message()};
}

trainc_status nullArgument(const char *what) {
  return toC(trainc::invalidArgument(std::string(what) + " is NULL"));
}

/// A copy of `text` the caller frees with trainc_string_free.
char *newString(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

trainc::SessionOptions sessionOptions(const trainc_session_options *o) {
  trainc::SessionOptions options;
  if (o) {
    options.checkWrites = o->check_writes != 0;
    options.profile = o->profile != 0;
  }
  return options;
}

trainc_status tensorInfo(const trainc::Executable &exe,
                         const std::vector<uint32_t> &ids, size_t index,
                         const char *kind, trainc_tensor_info *out) {
  if (!out)
    return nullArgument("out_info");
  if (index >= ids.size())
    return toC(trainc::Status(trainc::StatusCode::kOutOfRange,
                              std::string(kind) + " " + std::to_string(index) +
                                  " does not exist"));
  const trainc::TensorInfo &t = exe.tensors()[ids[index]];
  out->name = t.name.c_str();
  out->dtype = static_cast<trainc_dtype>(t.dtype);
  out->rank = t.shape.size();
  out->dims = t.shape.data();
  out->bytes = t.size;
  return nullptr;
}

/// trainc_trainer_restore_note's text: the checkpoint used, then one line
/// per newer one skipped.
void setRestoreNote(trainc_trainer &trainer,
                    const trainc::CheckpointChoice &choice) {
  trainer.restoreNote = choice.name;
  for (const std::string &warning : choice.warnings)
    trainer.restoreNote += "\n" + warning;
}

} // namespace

extern "C" {

trainc_status_code trainc_status_get_code(trainc_status status) {
  return status ? status->code : TRAINC_OK;
}

const char *trainc_status_message(trainc_status status) {
  return status ? status->message.c_str() : "ok";
}

void trainc_status_free(trainc_status status) { delete status; }

const char *trainc_dtype_name(trainc_dtype dtype) {
  return trainc::dtypeName(static_cast<trainc::DType>(dtype));
}

const char *trainc_status_code_name(trainc_status_code code) {
  return trainc::statusCodeName(static_cast<trainc::StatusCode>(code));
}

trainc_status trainc_executable_open(const char *path,
                                     trainc_executable **out_executable) {
  if (!path)
    return nullArgument("path");
  if (!out_executable)
    return nullArgument("out_executable");
  std::unique_ptr<trainc::Executable> exe;
  if (trainc_status s = toC(trainc::Executable::load(path, exe)))
    return s;
  *out_executable = new trainc_executable_s{std::move(exe)};
  return nullptr;
}

void trainc_executable_release(trainc_executable *executable) {
  delete executable;
}

size_t trainc_executable_input_count(const trainc_executable *executable) {
  return executable ? executable->executable->inputs().size() : 0;
}

size_t trainc_executable_output_count(const trainc_executable *executable) {
  return executable ? executable->executable->outputs().size() : 0;
}

trainc_status trainc_executable_input_info(const trainc_executable *executable,
                                           size_t index,
                                           trainc_tensor_info *out_info) {
  if (!executable)
    return nullArgument("executable");
  return tensorInfo(*executable->executable, executable->executable->inputs(),
                    index, "input", out_info);
}

trainc_status trainc_executable_output_info(const trainc_executable *executable,
                                            size_t index,
                                            trainc_tensor_info *out_info) {
  if (!executable)
    return nullArgument("executable");
  return tensorInfo(*executable->executable, executable->executable->outputs(),
                    index, "output", out_info);
}

trainc_status
trainc_executable_output_whole_dims(const trainc_executable *executable,
                                    size_t index, const int64_t **out_dims) {
  if (!executable)
    return nullArgument("executable");
  if (!out_dims)
    return nullArgument("out_dims");
  const trainc::Executable &exe = *executable->executable;
  if (index >= exe.outputs().size())
    return toC(
        trainc::Status(trainc::StatusCode::kOutOfRange,
                       "output " + std::to_string(index) + " does not exist"));
  *out_dims = exe.tensors()[exe.outputs()[index]].globalShape.data();
  return nullptr;
}

trainc_status trainc_session_create(trainc_executable *executable,
                                    const char *device,
                                    trainc_session **out_session) {
  return trainc_session_create_with_options(executable, device, nullptr,
                                            out_session);
}

trainc_status trainc_session_create_with_options(
    trainc_executable *executable, const char *device,
    const trainc_session_options *options, trainc_session **out_session) {
  if (!executable)
    return nullArgument("executable");
  if (!out_session)
    return nullArgument("out_session");
  if (!device)
    return nullArgument("device");
  trainc::SessionOptions sessionOpts = sessionOptions(options);
  // A program for a mesh joins the run's ranks.
  std::shared_ptr<trainc::Collective> world;
  if (executable->executable->numRanks() > 1)
    if (trainc_status s =
            toC(trainc::worldCollective(trainc::WorldOptions(), world)))
      return s;
  if (trainc_status s =
          toC(trainc::createDevice(device, world, sessionOpts.device)))
    return s;
  auto handle = std::make_unique<trainc_session_s>();
  if (trainc_status s = toC(trainc::Session::create(
          executable->executable, sessionOpts, handle->owned)))
    return s;
  handle->session = handle->owned.get();
  *out_session = handle.release();
  return nullptr;
}

void trainc_session_release(trainc_session *session) {
  // A trainer's session belongs to the trainer.
  if (session && session->owned)
    delete session;
}

trainc_status trainc_session_set_input(trainc_session *session, size_t index,
                                       const void *data, size_t bytes) {
  if (!session)
    return nullArgument("session");
  if (!data && bytes)
    return nullArgument("data");
  return toC(session->session->setInput(index, data, bytes));
}

trainc_status trainc_session_run(trainc_session *session) {
  if (!session)
    return nullArgument("session");
  return toC(session->session->run());
}

/// Null when `index` names an output of the session, else kOutOfRange.
static trainc_status checkOutputIndex(const trainc_session *session,
                                      size_t index) {
  if (index < session->session->executable().outputs().size())
    return nullptr;
  return toC(
      trainc::Status(trainc::StatusCode::kOutOfRange,
                     "output " + std::to_string(index) + " does not exist"));
}

trainc_status trainc_session_output(trainc_session *session, size_t index,
                                    const void **out_data, size_t *out_bytes) {
  if (!session)
    return nullArgument("session");
  if (!out_data || !out_bytes)
    return nullArgument("out_data/out_bytes");
  if (trainc_status s = checkOutputIndex(session, index))
    return s;
  const trainc::Executable &exe = session->session->executable();
  uint32_t id = exe.outputs()[index];
  *out_bytes = exe.tensors()[id].size;
  if (session->session->device().hostVisible()) {
    *out_data = session->session->output(index).data;
    return nullptr;
  }
  // Device memory: a host copy, valid until the next call for this output.
  session->hostOutputs.resize(exe.outputs().size());
  std::vector<char> &copy = session->hostOutputs[index];
  copy.resize(*out_bytes);
  if (trainc_status s = toC(session->session->readTensor(id, copy.data())))
    return s;
  *out_data = copy.data();
  return nullptr;
}

trainc_status trainc_session_output_scalar(trainc_session *session,
                                           size_t index, double *out_value) {
  if (!session)
    return nullArgument("session");
  if (!out_value)
    return nullArgument("out_value");
  if (trainc_status s = checkOutputIndex(session, index))
    return s;
  const trainc::Executable &exe = session->session->executable();
  const trainc::TensorInfo &t = exe.tensors()[exe.outputs()[index]];
  bool scalarType =
      t.dtype == trainc::DType::F64 || t.dtype == trainc::DType::F32 ||
      t.dtype == trainc::DType::F16 || t.dtype == trainc::DType::BF16 ||
      t.dtype == trainc::DType::I1;
  if (!t.shape.empty() || !scalarType)
    return toC(trainc::invalidArgument(
        "output '" + t.name + "' is " + trainc::dtypeName(t.dtype) +
        trainc::shapeString(t.shape) +
        ", not a scalar f64, f32, f16, bf16 or i1"));
  return toC(trainc::readScalar(*session->session, int(index), *out_value));
}

void trainc_train_config_init(trainc_train_config *config) {
  if (!config)
    return;
  *config = trainc_train_config();
  config->eval_fraction = 0.1;
  config->eval_batches = 16;
}

trainc_status trainc_trainer_create(trainc_executable *step,
                                    trainc_executable *eval,
                                    const trainc_train_config *config,
                                    trainc_trainer **out_trainer) {
  if (!step)
    return nullArgument("step");
  if (!config)
    return nullArgument("config");
  if (!out_trainer)
    return nullArgument("out_trainer");
  if (config->data_path_count && !config->data_paths)
    return nullArgument("config->data_paths");
  trainc::DataOptions dataOptions;
  for (size_t i = 0; i < config->data_path_count; ++i) {
    if (!config->data_paths[i])
      return nullArgument("a data path");
    dataOptions.paths.push_back(config->data_paths[i]);
  }
  if (config->data_format)
    if (trainc_status s = toC(
            trainc::parseDataFormat(config->data_format, dataOptions.format)))
      return s;
  if (config->eval_batches < 0)
    return toC(trainc::invalidArgument("config->eval_batches is negative"));
  dataOptions.binTokenBytes = config->bin_token_bytes;
  dataOptions.evalFraction = config->eval_fraction;
  if (auto *progress = config->data_progress)
    dataOptions.progress = [progress, context = config->data_progress_context](
                               uint64_t done, uint64_t total) {
      progress(context, done, total);
    };
  if (config->data_cache_dir)
    dataOptions.cacheDir = config->data_cache_dir;
  auto trainer = std::make_unique<trainc_trainer_s>();
  if (!dataOptions.paths.empty())
    if (trainc_status s =
            toC(trainc::Dataset::open(dataOptions, trainer->data)))
      return s;
  trainc::TrainerOptions options;
  options.evalBatches = config->eval_batches;
  options.seed = config->seed;
  options.peakFlops = config->peak_flops;
  if (!(config->spike_z >= 0) || !std::isfinite(config->spike_z))
    return toC(trainc::invalidArgument(
        "spike_z must be a finite number >= 0 (0: no spike check)"));
  options.spikeZ = config->spike_z;
  options.tokensInput = config->tokens_input ? config->tokens_input : "";
  options.targetsInput = config->targets_input ? config->targets_input : "";
  options.session = sessionOptions(&config->session);
  if (config->device)
    options.session.deviceName = config->device;
  if (config->verify_steps < 0)
    return toC(trainc::invalidArgument("config->verify_steps is negative"));
  options.verifySteps = config->verify_steps;
  if (trainc_status s = toC(trainc::Trainer::create(
          step->executable, eval ? eval->executable : nullptr,
          trainer->data.get(), options, trainer->trainer)))
    return s;
  trainer->session.session = &trainer->trainer->session();
  *out_trainer = trainer.release();
  return nullptr;
}

void trainc_trainer_release(trainc_trainer *trainer) { delete trainer; }

trainc_status trainc_trainer_run(trainc_trainer *trainer, int64_t steps,
                                 int64_t eval_every,
                                 trainc_step_callback callback, void *user) {
  if (!trainer)
    return nullArgument("trainer");
  if (steps < 0 || eval_every < 0)
    return toC(trainc::invalidArgument("steps and eval_every must be >= 0"));
  bool stopped = false;
  trainc::Trainer &t = *trainer->trainer;
  trainc::Status s =
      t.run(steps, eval_every, [&](const trainc::StepMetrics &m) {
        if (!callback)
          return trainc::okStatus();
        trainc_step_metrics c;
        c.step = m.step;
        c.loss = m.loss;
        c.grad_norm = m.gradNorm;
        c.learning_rate = m.learningRate;
        c.step_seconds = m.stepSeconds;
        c.tokens_per_second = m.tokensPerSecond;
        c.samples_per_second = m.samplesPerSecond;
        c.flops_per_second = m.flopsPerSecond;
        c.mfu = m.mfu;
        c.has_loss = m.hasLoss;
        c.skipped = m.skipped;
        c.loss_z = m.lossZ;
        c.spike = m.spike;
        c.loss_scale = m.lossScale;
        c.comm_seconds = m.commSeconds;
        c.comm_total_seconds = m.commTotalSeconds;
        c.median_compute_seconds = m.medianComputeSeconds;
        c.slowest_compute_seconds = m.slowestComputeSeconds;
        c.slowest_rank = m.slowestRank;
        c.straggler = m.straggler;
        c.planned_bytes = m.plannedBytes;
        c.measured_bytes = m.measuredBytes;
        c.peak_rss_bytes = m.peakRssBytes;
        c.evaluated = m.evaluated;
        c.eval_loss = m.evalLoss;
        c.data_position = t.state().dataPosition;
        c.verified = m.verified;
        c.verify_worst = m.verification.worst.c_str();
        c.verify_worst_error = m.verification.worstError;
        c.verify_worst_limit = m.verification.worstLimit;
        if (callback(&c, user) == 0)
          return trainc::okStatus();
        stopped = true;
        return trainc::Status(trainc::StatusCode::kFailedPrecondition,
                              "stopped by the step callback");
      });
  return stopped ? nullptr : toC(s);
}

trainc_status trainc_trainer_evaluate(trainc_trainer *trainer,
                                      double *out_loss) {
  if (!trainer)
    return nullArgument("trainer");
  if (!out_loss)
    return nullArgument("out_loss");
  return toC(trainer->trainer->evaluate(*out_loss));
}

/// Whether this process writes the run's weight files (safetensors, ONNX):
/// every rank takes part (split parameters are gathered), rank 0 writes.
/// (Checkpoints: every rank writes its shard, rank 0 publishes.)
static bool writesForRun(const trainc_trainer *trainer) {
  return trainer->trainer->session().device().collective().rank() == 0;
}

/// Gathers the trained weights whole and, on the rank that writes for the
/// run, passes them to `write`.
static trainc_status
writeWeights(trainc_trainer *trainer,
             const std::function<trainc::Status(
                 const std::vector<trainc::NamedTensor> &)> &write) {
  std::vector<std::vector<char>> storage;
  std::vector<trainc::NamedTensor> weights;
  if (trainc::Status s = trainc::parameterTensors(trainer->trainer->session(),
                                                  storage, weights);
      !s.ok())
    return toC(s);
  if (!writesForRun(trainer))
    return nullptr;
  return toC(write(weights));
}

trainc_status trainc_trainer_save_safetensors(trainc_trainer *trainer,
                                              const char *path) {
  if (!trainer)
    return nullArgument("trainer");
  if (!path)
    return nullArgument("path");
  return writeWeights(trainer,
                      [&](const std::vector<trainc::NamedTensor> &weights) {
                        return trainc::writeSafetensors(path, weights);
                      });
}

trainc_status trainc_trainer_load_safetensors(trainc_trainer *trainer,
                                              const char *path) {
  if (!trainer)
    return nullArgument("trainer");
  if (!path)
    return nullArgument("path");
  // A background save in flight owns a copy of the state: no need to wait.
  return toC(trainc::loadParameterTensors(trainer->trainer->session(), path));
}

trainc_status trainc_trainer_save(trainc_trainer *trainer, const char *dir) {
  if (!trainer)
    return nullArgument("trainer");
  if (!dir)
    return nullArgument("dir");
  if (trainc_status s = toC(trainer->writer.wait()))
    return s;
  trainc::CheckpointSnapshot snapshot;
  if (trainc_status s = toC(trainc::snapshotTrainer(
          *trainer->trainer, trainer->data.get(), snapshot)))
    return s;
  const trainc::CheckpointLock *lock = trainer->checkpointLock.get();
  bool held = lock && lock->dir() == dir;
  return toC(trainc::writeCheckpoint(
      dir, snapshot, held ? trainer->keepLast : 0, held ? lock : nullptr));
}

trainc_status trainc_trainer_save_async(trainc_trainer *trainer,
                                        const char *dir) {
  if (!trainer)
    return nullArgument("trainer");
  if (!dir)
    return nullArgument("dir");
  // A background write needs the directory locked for the whole write.
  const trainc::CheckpointLock *lock = trainer->checkpointLock.get();
  if (writesForRun(trainer) && (!lock || lock->dir() != dir))
    return toC(trainc::Status(
        trainc::StatusCode::kFailedPrecondition,
        std::string(dir) + ": a background save needs the directory locked "
                           "first (trainc_trainer_use_checkpoint_dir)"));
  // submit waits for the previous background write (and returns its error).
  trainc::CheckpointSnapshot snapshot;
  if (trainc_status s = toC(trainc::snapshotTrainer(
          *trainer->trainer, trainer->data.get(), snapshot)))
    return s;
  return toC(trainer->writer.submit(dir, std::move(snapshot), trainer->keepLast,
                                    lock));
}

trainc_status trainc_trainer_save_wait(trainc_trainer *trainer) {
  if (!trainer)
    return nullArgument("trainer");
  return toC(trainer->writer.wait());
}

trainc_status trainc_trainer_use_checkpoint_dir(trainc_trainer *trainer,
                                                const char *dir,
                                                int keep_last) {
  if (!trainer)
    return nullArgument("trainer");
  if (!dir)
    return nullArgument("dir");
  if (keep_last < 0)
    return toC(trainc::invalidArgument("keep_last must not be negative"));
  trainer->keepLast = keep_last;
  if (!writesForRun(trainer))
    return nullptr;
  std::unique_ptr<trainc::CheckpointLock> lock;
  if (trainc_status s = toC(trainc::CheckpointLock::acquire(dir, lock)))
    return s;
  if (trainc_status s = toC(trainc::checkSpaceForCheckpoint(
          dir, trainer->trainer->session().executable())))
    return s;
  trainer->checkpointLock = std::move(lock);
  trainer->keepLast = keep_last;
  return nullptr;
}

trainc_status trainc_trainer_rollback(trainc_trainer *trainer,
                                      const char *dir) {
  if (!trainer)
    return nullArgument("trainer");
  if (!dir)
    return nullArgument("dir");
  if (trainc_status s = toC(trainer->writer.wait()))
    return s;
  // On several ranks, rank 0 publishes the checkpoint each rank's write
  // belongs to: every rank waits for every other's write to end before any
  // reads `latest`, and all must return to the same step.
  trainc::Collective &ranks =
      trainer->trainer->session().device().hostCollective();
  trainc::CollectiveSite site;
  site.step = trainer->trainer->state().step;
  site.what = "the agreement of the ranks on a rollback";
  std::vector<int64_t> steps(size_t(ranks.worldSize()));
  int64_t none = -1;
  if (ranks.worldSize() > 1)
    if (trainc_status s = toC(ranks.allGather(
            -1, &none, steps.data(), 1, trainc::DType::I64,
            trainer->trainer->session().device().communicationStream(), site)))
      return s;
  trainc::CheckpointChoice choice;
  trainc::Status s = trainc::rollbackToCheckpoint(dir, *trainer->trainer,
                                                  trainer->data.get(), choice);
  setRestoreNote(*trainer, choice);
  if (ranks.worldSize() > 1) {
    int64_t mine = s.ok() ? trainer->trainer->state().step : -1;
    if (trainc_status g = toC(ranks.allGather(
            -1, &mine, steps.data(), 1, trainc::DType::I64,
            trainer->trainer->session().device().communicationStream(), site)))
      return g;
    for (size_t r = 0; s.ok() && r < steps.size(); ++r)
      if (steps[r] != mine)
        s = trainc::internalError(
            "the ranks rolled back to different checkpoints: rank " +
            std::to_string(r) + " to step " + std::to_string(steps[r]) +
            ", rank " + std::to_string(ranks.rank()) + " to step " +
            std::to_string(mine));
  }
  return toC(s);
}

const char *trainc_trainer_restore_note(const trainc_trainer *trainer) {
  return trainer ? trainer->restoreNote.c_str() : "";
}

trainc_status trainc_trainer_restore(trainc_trainer *trainer, const char *dir) {
  if (!trainer)
    return nullArgument("trainer");
  if (!dir)
    return nullArgument("dir");
  trainc::CheckpointChoice choice;
  trainc::Status s = trainc::restoreCheckpoint(dir, *trainer->trainer,
                                               trainer->data.get(), choice);
  setRestoreNote(*trainer, choice);
  return toC(s);
}

int64_t trainc_trainer_step_count(const trainc_trainer *trainer) {
  return trainer ? trainer->trainer->state().step : 0;
}

void trainc_string_free(char *text) { std::free(text); }

size_t trainc_struct_size(const char *name) {
  if (!name)
    return 0;
  std::string n = name;
  if (n == "trainc_tensor_info")
    return sizeof(trainc_tensor_info);
  if (n == "trainc_session_options")
    return sizeof(trainc_session_options);
  if (n == "trainc_train_config")
    return sizeof(trainc_train_config);
  if (n == "trainc_step_metrics")
    return sizeof(trainc_step_metrics);
  return 0;
}

trainc_status trainc_executable_describe(const trainc_executable *executable,
                                         char **out_text) {
  if (!executable)
    return nullArgument("executable");
  if (!out_text)
    return nullArgument("out_text");
  *out_text = newString(trainc::describeExecutable(*executable->executable));
  return nullptr;
}

size_t trainc_executable_parameter_count(const trainc_executable *executable) {
  return executable ? executable->executable->parameters().size() : 0;
}

const char *trainc_executable_source(const trainc_executable *executable) {
  return executable ? executable->executable->source().c_str() : "";
}

uint64_t trainc_executable_planned_bytes(const trainc_executable *executable) {
  return executable ? executable->executable->memoryPlan().peak : 0;
}

void trainc_session_options_init(trainc_session_options *options) {
  if (options)
    *options = trainc_session_options{0, 0};
}

trainc_status trainc_session_set_input_file(trainc_session *session,
                                            size_t index, const char *path) {
  if (!session)
    return nullArgument("session");
  if (!path)
    return nullArgument("path");
  return toC(trainc::setInputFromFile(*session->session, index, path));
}

trainc_status trainc_session_write_output_npy(trainc_session *session,
                                              size_t index, const char *path) {
  if (!session)
    return nullArgument("session");
  if (!path)
    return nullArgument("path");
  return toC(trainc::writeOutputNpy(*session->session, index, path));
}

uint64_t trainc_session_measured_bytes(const trainc_session *session) {
  return session ? session->session->measuredPeak() : 0;
}

trainc_status trainc_session_profile(const trainc_session *session, size_t runs,
                                     char **out_text) {
  if (!session)
    return nullArgument("session");
  if (!out_text)
    return nullArgument("out_text");
  *out_text = newString(trainc::profileReport(*session->session, runs));
  return nullptr;
}

int64_t trainc_trainer_tokens_per_step(const trainc_trainer *trainer) {
  return trainer ? trainer->trainer->tokensPerStep() : 0;
}

int64_t trainc_trainer_samples_per_step(const trainc_trainer *trainer) {
  return trainer ? trainer->trainer->samplesPerStep() : 0;
}

trainc_session *trainc_trainer_session(trainc_trainer *trainer) {
  return trainer ? &trainer->session : nullptr;
}

trainc_status trainc_trainer_describe_data(const trainc_trainer *trainer,
                                           char **out_text) {
  if (!trainer)
    return nullArgument("trainer");
  if (!out_text)
    return nullArgument("out_text");
  std::string text;
  if (trainer->data) {
    const trainc::Trainer &t = *trainer->trainer;
    const trainc::Batches &b = *t.batches();
    text =
        trainer->data->description() + "; " + b.describe() +
        (b.dataRanks() > 1 ? " per rank on " + std::to_string(b.dataRanks()) +
                                 " data-parallel ranks"
                           : std::string());
    if (t.evalBatchesPerEvaluation() > 0)
      text +=
          "\nheld-out loss: " + std::to_string(t.evalBatchesPerEvaluation()) +
          " batches";
  }
  *out_text = newString(text);
  return nullptr;
}

/// The arguments of trainc_trainer_export_onnx and its check, all needed.
static trainc_status exportArguments(const trainc_trainer *trainer,
                                     const char *source_model,
                                     const char *path) {
  if (!trainer)
    return nullArgument("trainer");
  if (!source_model)
    return nullArgument("source_model");
  if (!path)
    return nullArgument("path");
  return nullptr;
}

trainc_status trainc_trainer_export_onnx(trainc_trainer *trainer,
                                         const char *source_model,
                                         const char *path) {
  if (trainc_status s = exportArguments(trainer, source_model, path))
    return s;
  return writeWeights(
      trainer, [&](const std::vector<trainc::NamedTensor> &weights) {
        return trainc::exportOnnxWithWeights(source_model, path, weights);
      });
}

trainc_status trainc_trainer_check_onnx_export(trainc_trainer *trainer,
                                               const char *source_model,
                                               const char *path) {
  if (trainc_status s = exportArguments(trainer, source_model, path))
    return s;
  if (!writesForRun(trainer))
    return nullptr;
  return toC(trainc::checkOnnxExport(
      source_model, path, trainc::parameterSpecs(trainer->trainer->session())));
}

trainc_status trainc_saved_run_info(const char *dir, int64_t *out_step,
                                    uint64_t *out_seed) {
  if (!dir)
    return nullArgument("dir");
  trainc::CheckpointChoice choice;
  if (trainc_status s = toC(trainc::findCheckpoint(dir, choice)))
    return s;
  if (out_step)
    *out_step = choice.state.step;
  if (out_seed)
    *out_seed = choice.state.seed;
  return nullptr;
}

void trainc_world_config_init(trainc_world_config *config) {
  if (!config)
    return;
  trainc::WorldOptions defaults;
  config->collective_timeout_seconds = defaults.timeoutSeconds;
  config->deterministic_reductions = defaults.deterministic;
}

trainc_status trainc_world_init(const trainc_world_config *config,
                                int *out_rank, int *out_size) {
  trainc::WorldOptions options;
  if (config) {
    if (!(config->collective_timeout_seconds >= 0))
      return toC(trainc::invalidArgument(
          "the collective timeout must be a number of seconds >= 0"));
    options.timeoutSeconds = config->collective_timeout_seconds;
    options.deterministic = config->deterministic_reductions != 0;
  }
  std::shared_ptr<trainc::Collective> world;
  if (trainc_status s = toC(trainc::worldCollective(options, world)))
    return s;
  if (out_rank)
    *out_rank = world->rank();
  if (out_size)
    *out_size = world->worldSize();
  return nullptr;
}

trainc_status trainc_world_any(int flag, int *out_any) {
  if (!out_any)
    return nullArgument("out_any");
  std::shared_ptr<trainc::Collective> world;
  if (trainc_status s =
          toC(trainc::worldCollective(trainc::WorldOptions(), world)))
    return s;
  int n = world->worldSize();
  std::vector<uint8_t> all(size_t(n), 0);
  uint8_t mine = flag != 0;
  trainc::CollectiveSite site;
  site.what = "the agreement of the ranks to go on";
  // Host memory: the CPU device's stream (made once) orders nothing here.
  static std::shared_ptr<trainc::Device> cpu;
  if (!cpu)
    if (trainc_status s = toC(trainc::createDevice("cpu", world, cpu)))
      return s;
  if (trainc_status s =
          toC(world->allGather(-1, &mine, all.data(), 1, trainc::DType::U8,
                               cpu->communicationStream(), site)))
    return s;
  *out_any = 0;
  for (uint8_t f : all)
    *out_any |= f;
  return nullptr;
}

void trainc_world_abort(int code) {
  std::shared_ptr<trainc::Collective> world;
  if (trainc::worldCollective(trainc::WorldOptions(), world).ok())
    world->abort(code);
}

} // extern "C"
