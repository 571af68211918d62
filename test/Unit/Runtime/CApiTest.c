/*===- CApiTest.c - The C API from C, against the header alone ------------===*
 *
 * Compiled as C99 (not C++): proves trainc/runtime.h is a C header. Runs the
 * tinygpt forward executable built by the test fixture and checks its loss
 * against PyTorch's, then the error paths: a missing file, a wrong input
 * size, a missing input, an unknown device. Then the trainer: STEP.tcx
 * (the training step of MODEL) trained on the bytes of DATA for 30 steps
 * must lower MODEL's held-out loss, report every step's metrics, stop when
 * the callback says so, and save its weights; a run saved and restored
 * continues bitwise; and weights saved by one trainer and loaded into a
 * fresh one give its next step the same loss, bit for bit.
 *
 * Usage: trainc-capi-test MODEL.tcx TOKENS.bin TARGETS.bin EXPECTED_LOSS
 *                         STEP.tcx DATA OUT.safetensors
 *===----------------------------------------------------------------------===*/

#include "trainc/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                   \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Reads a whole file; the caller frees the buffer. */
static void *readFile(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  void *data = NULL;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc(*size ? *size : 1);
  if (data && fread(data, 1, *size, f) != *size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  return data;
}

/* Expects `status` to be an error of `code`; frees it. */
static void expectError(trainc_status status, trainc_status_code code,
                        const char *what) {
  CHECK(status != NULL, "%s: expected an error", what);
  if (status) {
    CHECK(trainc_status_get_code(status) == code, "%s: code %d, message: %s",
          what, (int)trainc_status_get_code(status),
          trainc_status_message(status));
    CHECK(strlen(trainc_status_message(status)) > 0, "%s: empty message", what);
    trainc_status_free(status);
  }
}

typedef struct {
  int64_t steps, evaluations, stopAt;
  double firstLoss, lastEval;
} Progress;

static int onStep(const trainc_step_metrics *m, void *user) {
  Progress *p = (Progress *)user;
  ++p->steps;
  CHECK(m->step == p->steps, "step %lld reported as %lld", (long long)p->steps,
        (long long)m->step);
  CHECK(m->data_position == (uint64_t)m->step, "data position %llu",
        (unsigned long long)m->data_position);
  CHECK(isfinite(m->loss) && isfinite(m->grad_norm) && m->learning_rate > 0 &&
            m->step_seconds > 0 && m->tokens_per_second > 0 &&
            m->flops_per_second > 0 && m->planned_bytes > 0 &&
            m->measured_bytes == m->planned_bytes && isnan(m->mfu),
        "step %lld: incomplete metrics", (long long)m->step);
  if (p->steps == 1)
    p->firstLoss = m->loss;
  CHECK(m->evaluated == !isnan(m->eval_loss), "step %lld: evaluated %d",
        (long long)m->step, m->evaluated);
  if (m->evaluated) {
    ++p->evaluations;
    p->lastEval = m->eval_loss;
  }
  return m->step == p->stopAt;
}

static void checkTraining(const char *evalPath, const char *stepPath,
                          const char *dataPath, const char *outPath) {
  trainc_executable *step = NULL, *eval = NULL;
  trainc_trainer *trainer = NULL;
  trainc_train_config config;
  trainc_status status;
  const char *paths[1];
  const char *missing[1] = {"/nonexistent/data.txt"};
  double before = 0, after = 0;
  Progress progress = {0, 0, 0, 0, 0};
  const int64_t *whole0 = NULL;

  status = trainc_executable_open(stepPath, &step);
  CHECK(status == NULL, "open step: %s", trainc_status_message(status));
  status = trainc_executable_open(evalPath, &eval);
  CHECK(status == NULL, "open eval: %s", trainc_status_message(status));
  if (!step || !eval)
    return;
  {
    /* One rank: every output's whole shape is its info's shape. */
    size_t i, d;
    for (i = 0; i < trainc_executable_output_count(step); ++i) {
      trainc_tensor_info info;
      const int64_t *whole = NULL;
      status = trainc_executable_output_info(step, i, &info);
      CHECK(status == NULL, "output info %zu", i);
      status = trainc_executable_output_whole_dims(step, i, &whole);
      CHECK(status == NULL && (whole != NULL || info.rank == 0),
            "output whole dims %zu", i);
      for (d = 0; whole && d < info.rank; ++d)
        CHECK(whole[d] == info.dims[d], "output %zu: whole dim %zu", i, d);
    }
    expectError(trainc_executable_output_whole_dims(
                    step, trainc_executable_output_count(step), &whole0),
                TRAINC_OUT_OF_RANGE, "whole dims of an output past the end");
  }
  paths[0] = dataPath;
  trainc_train_config_init(&config);
  config.data_paths = missing;
  config.data_path_count = 1;
  expectError(trainc_trainer_create(step, eval, &config, &trainer),
              TRAINC_NOT_FOUND, "a missing data file");
  config.data_paths = paths;
  config.data_format = "csv";
  expectError(trainc_trainer_create(step, eval, &config, &trainer),
              TRAINC_INVALID_ARGUMENT, "an unknown data format");
  config.data_format = "bytes";
  config.eval_fraction = 0.25;
  status = trainc_trainer_create(step, eval, &config, &trainer);
  CHECK(status == NULL, "trainer: %s", trainc_status_message(status));
  trainc_executable_release(step);
  trainc_executable_release(eval);
  if (status)
    return;

  status = trainc_trainer_evaluate(trainer, &before);
  CHECK(status == NULL, "evaluate: %s", trainc_status_message(status));
  progress.stopAt = -1;
  status = trainc_trainer_run(trainer, 30, 10, onStep, &progress);
  CHECK(status == NULL, "run: %s", trainc_status_message(status));
  status = trainc_trainer_evaluate(trainer, &after);
  CHECK(status == NULL, "evaluate: %s", trainc_status_message(status));
  CHECK(progress.steps == 30 && progress.evaluations == 3,
        "%lld steps, %lld evaluations", (long long)progress.steps,
        (long long)progress.evaluations);
  CHECK(after == progress.lastEval, "the last evaluation %.9g != %.9g",
        progress.lastEval, after);
  CHECK(after < before - 0.3, "held-out loss %.4f -> %.4f: not learning",
        before, after);
  printf("C API trainer: held-out loss %.4f -> %.4f over 30 steps\n", before,
         after);

  /* A non-zero callback return stops the run after that step. */
  progress.stopAt = 32;
  status = trainc_trainer_run(trainer, 10, 0, onStep, &progress);
  CHECK(status == NULL && progress.steps == 32, "stopped at %lld",
        (long long)progress.steps);
  expectError(trainc_trainer_save_safetensors(trainer, "/nonexistent/w.st"),
              TRAINC_NOT_FOUND, "saving into a missing directory");
  /* The export's preflight: a missing argument, a missing source model. */
  expectError(trainc_trainer_check_onnx_export(trainer, NULL, outPath),
              TRAINC_INVALID_ARGUMENT, "an export check without a source");
  expectError(trainc_trainer_check_onnx_export(
                  trainer, "/nonexistent/model.onnx", outPath),
              TRAINC_NOT_FOUND, "an export check of a missing model");
  status = trainc_trainer_save_safetensors(trainer, outPath);
  CHECK(status == NULL, "save: %s", trainc_status_message(status));
  trainc_status_free(status);
  trainc_trainer_release(trainer);
}

/* Records every step's loss. */
typedef struct {
  int64_t count;
  double losses[64];
} Losses;

static int recordLoss(const trainc_step_metrics *m, void *user) {
  Losses *l = (Losses *)user;
  if (l->count < 64)
    l->losses[l->count++] = m->loss;
  return 0;
}

/* A trainer of `stepPath` on `dataPath` with `seed`, or NULL. */
/* The last call of a trainer's data_progress: bytes read and in all. */
typedef struct {
  int calls;
  uint64_t done, total;
} DataProgress;

static void recordProgress(void *context, uint64_t done, uint64_t total) {
  DataProgress *p = (DataProgress *)context;
  ++p->calls;
  p->done = done;
  p->total = total;
}

static trainc_trainer *newTrainer(const char *stepPath, const char *dataPath,
                                  uint64_t seed) {
  trainc_executable *step = NULL;
  trainc_trainer *trainer = NULL;
  trainc_train_config config;
  const char *paths[1];
  trainc_status status = trainc_executable_open(stepPath, &step);
  CHECK(status == NULL, "open step: %s", trainc_status_message(status));
  if (status) {
    trainc_status_free(status);
    return NULL;
  }
  paths[0] = dataPath;
  trainc_train_config_init(&config);
  config.data_paths = paths;
  config.data_path_count = 1;
  config.data_format = "bytes";
  config.seed = seed;
  DataProgress progress = {0, 0, 0};
  config.data_progress = recordProgress;
  config.data_progress_context = &progress;
  status = trainc_trainer_create(step, NULL, &config, &trainer);
  CHECK(status == NULL, "trainer: %s", trainc_status_message(status));
  /* The data is read through once, a byte a token. */
  CHECK(status != NULL ||
            (progress.calls >= 1 && progress.done == progress.total &&
             progress.total > 0),
        "data_progress: %d calls, last %llu of %llu bytes", progress.calls,
        (unsigned long long)progress.done, (unsigned long long)progress.total);
  trainc_status_free(status);
  trainc_executable_release(step);
  return trainer;
}

/* A trainer's device and step checks are refused when they cannot be. */
static void checkBadTrainerConfig(const char *stepPath, const char *dataPath) {
  trainc_executable *step = NULL;
  trainc_trainer *trainer = NULL;
  trainc_train_config config;
  const char *paths[1];
  trainc_status status = trainc_executable_open(stepPath, &step);
  CHECK(status == NULL, "open step");
  if (status) {
    trainc_status_free(status);
    return;
  }
  paths[0] = dataPath;
  trainc_train_config_init(&config);
  CHECK(config.device == NULL && config.verify_steps == 0 &&
            config.data_progress == NULL &&
            config.data_progress_context == NULL,
        "the defaults: the CPU, no verified steps, no progress callback");
  config.data_paths = paths;
  config.data_path_count = 1;
  config.data_format = "bytes";
  config.verify_steps = -1;
  expectError(trainc_trainer_create(step, NULL, &config, &trainer),
              TRAINC_INVALID_ARGUMENT, "negative verify_steps");
  config.verify_steps = 0;
  config.device = "tpu";
  expectError(trainc_trainer_create(step, NULL, &config, &trainer),
              TRAINC_NOT_FOUND, "an unknown device");
  trainc_executable_release(step);
}

/* data_cache_dir (since API version 12): a second trainer on the same
 * unchanged file (this test's source, long written) takes the opening
 * pass's results from the cache, so its data_progress is never called. */
static void checkDataCache(const char *stepPath, const char *dataPath,
                           const char *cacheDir) {
  trainc_executable *step = NULL;
  trainc_train_config config;
  const char *paths[1] = {dataPath};
  trainc_status status = trainc_executable_open(stepPath, &step);
  CHECK(status == NULL, "open step");
  if (status) {
    trainc_status_free(status);
    return;
  }
  trainc_train_config_init(&config);
  CHECK(config.data_cache_dir == NULL, "the default: no data cache");
  config.data_paths = paths;
  config.data_path_count = 1;
  config.data_format = "bytes";
  config.data_cache_dir = cacheDir;
  config.data_progress = recordProgress;
  for (int k = 0; k < 2; ++k) {
    DataProgress progress = {0, 0, 0};
    trainc_trainer *trainer = NULL;
    config.data_progress_context = &progress;
    status = trainc_trainer_create(step, NULL, &config, &trainer);
    CHECK(status == NULL, "trainer with a data cache: %s",
          trainc_status_message(status));
    trainc_status_free(status);
    trainc_trainer_release(trainer);
    CHECK(k == 0 || progress.calls == 0,
          "the second trainer read the data through (%d progress calls)",
          progress.calls);
  }
  trainc_executable_release(step);
}

/* Save and continue: 5 steps, save, a new trainer restores and runs 7 more;
 * its losses equal those of 12 uninterrupted steps bit for bit. */
static void checkResume(const char *stepPath, const char *dataPath,
                        const char *stateDir) {
  Losses whole = {0, {0}}, first = {0, {0}}, rest = {0, {0}};
  trainc_trainer *a = newTrainer(stepPath, dataPath, 7);
  trainc_trainer *b = newTrainer(stepPath, dataPath, 7);
  trainc_trainer *c = newTrainer(stepPath, dataPath, 7);
  trainc_trainer *other = newTrainer(stepPath, dataPath, 8);
  trainc_status status;
  int64_t i;
  if (!a || !b || !c || !other)
    return;
  status = trainc_trainer_run(a, 12, 0, recordLoss, &whole);
  CHECK(status == NULL, "uninterrupted run: %s", trainc_status_message(status));
  status = trainc_trainer_run(b, 5, 0, recordLoss, &first);
  CHECK(status == NULL, "first part: %s", trainc_status_message(status));
  status = trainc_trainer_save(b, stateDir);
  CHECK(status == NULL, "save: %s", trainc_status_message(status));
  trainc_trainer_release(b);

  expectError(trainc_trainer_restore(c, "/nonexistent/run"), TRAINC_NOT_FOUND,
              "restoring a missing run");
  expectError(trainc_trainer_restore(other, stateDir), TRAINC_INVALID_ARGUMENT,
              "restoring a run saved with another seed");
  status = trainc_trainer_restore(c, stateDir);
  CHECK(status == NULL, "restore: %s", trainc_status_message(status));
  CHECK(trainc_trainer_step_count(c) == 5, "restored at step %lld",
        (long long)trainc_trainer_step_count(c));
  status = trainc_trainer_run(c, 7, 0, recordLoss, &rest);
  CHECK(status == NULL, "second part: %s", trainc_status_message(status));
  CHECK(whole.count == 12 && first.count == 5 && rest.count == 7,
        "step counts %lld %lld %lld", (long long)whole.count,
        (long long)first.count, (long long)rest.count);
  for (i = 0; i < 12 && whole.count == 12 && rest.count == 7; ++i) {
    double resumed = i < 5 ? first.losses[i] : rest.losses[i - 5];
    CHECK(memcmp(&resumed, &whole.losses[i], sizeof resumed) == 0,
          "step %lld: resumed loss %.17g, uninterrupted %.17g",
          (long long)(i + 1), resumed, whole.losses[i]);
  }
  printf("C API resume: 5 + 7 steps equal 12 uninterrupted, bitwise "
         "(loss %.6f -> %.6f)\n",
         whole.losses[0], whole.losses[11]);
  trainc_trainer_release(a);
  trainc_trainer_release(c);
  trainc_trainer_release(other);
}

/* A trainer of `stepPath` without data, stepping on the fixed batch
 * `tokens`/`targets` (each `bytes` long), or NULL. */
static trainc_trainer *fixedBatchTrainer(const char *stepPath,
                                         const void *tokens,
                                         const void *targets, size_t bytes) {
  trainc_executable *step = NULL;
  trainc_trainer *trainer = NULL;
  trainc_train_config config;
  trainc_tensor_info info;
  trainc_session *session;
  size_t i;
  trainc_status status = trainc_executable_open(stepPath, &step);
  CHECK(status == NULL, "open step: %s", trainc_status_message(status));
  if (status) {
    trainc_status_free(status);
    return NULL;
  }
  trainc_train_config_init(&config);
  status = trainc_trainer_create(step, NULL, &config, &trainer);
  CHECK(status == NULL, "trainer: %s", trainc_status_message(status));
  trainc_status_free(status);
  session = trainc_trainer_session(trainer);
  for (i = 0; trainer && i < trainc_executable_input_count(step); ++i) {
    const void *data = NULL;
    status = trainc_executable_input_info(step, i, &info);
    CHECK(status == NULL, "input %zu", i);
    trainc_status_free(status);
    if (strcmp(info.name, "tokens") == 0)
      data = tokens;
    else if (strcmp(info.name, "targets") == 0)
      data = targets;
    CHECK(data != NULL, "unexpected input '%s'", info.name);
    status = trainc_session_set_input(session, i, data, bytes);
    CHECK(status == NULL, "set '%s': %s", info.name,
          trainc_status_message(status));
    trainc_status_free(status);
  }
  trainc_executable_release(step);
  return trainer;
}

/* The bytes trainc_trainer_save_safetensors writes for `trainer` (through
 * `path`); the caller frees them. */
static void *savedWeights(trainc_trainer *trainer, const char *path,
                          size_t *size) {
  trainc_status status = trainc_trainer_save_safetensors(trainer, path);
  CHECK(status == NULL, "save weights: %s", trainc_status_message(status));
  trainc_status_free(status);
  *size = 0;
  return readFile(path, size);
}

/* Weights in (since API version 6): trainer A steps 4 times on a fixed
 * batch and saves its weights; a fresh trainer B loads them, after a
 * truncated file that changes nothing. B's next step then has A's next
 * loss, bit for bit: the loss is that of the weights before the update
 * (B's optimizer state and step count stay its own). */
static void checkLoadWeights(const char *stepPath, const char *tokensPath,
                             const char *targetsPath, const char *outPath) {
  Losses a = {0, {0}}, b = {0, {0}};
  size_t tokensSize = 0, targetsSize = 0, savedSize = 0, beforeSize = 0,
         afterSize = 0;
  void *tokens = readFile(tokensPath, &tokensSize);
  void *targets = readFile(targetsPath, &targetsSize);
  void *saved = NULL, *before = NULL, *after = NULL;
  trainc_trainer *trainerA = NULL, *trainerB = NULL;
  trainc_status status;
  char weightsPath[4096], cutPath[4096], scratchPath[4096];
  FILE *cut;

  snprintf(weightsPath, sizeof weightsPath, "%s.a", outPath);
  snprintf(cutPath, sizeof cutPath, "%s.cut", outPath);
  snprintf(scratchPath, sizeof scratchPath, "%s.scratch", outPath);
  CHECK(tokens && targets && tokensSize == targetsSize,
        "cannot read the fixed batch");
  if (tokens && targets && tokensSize == targetsSize) {
    trainerA = fixedBatchTrainer(stepPath, tokens, targets, tokensSize);
    trainerB = fixedBatchTrainer(stepPath, tokens, targets, tokensSize);
  }
  if (!trainerA || !trainerB)
    goto done;

  status = trainc_trainer_run(trainerA, 4, 0, recordLoss, &a);
  CHECK(status == NULL, "train A: %s", trainc_status_message(status));
  trainc_status_free(status);
  saved = savedWeights(trainerA, weightsPath, &savedSize);
  before = savedWeights(trainerB, scratchPath, &beforeSize);
  CHECK(saved && before && savedSize == beforeSize &&
            memcmp(saved, before, savedSize) != 0,
        "A's trained weights should differ from B's initial ones");

  /* Half a file: an error naming it, and B's weights as they were. */
  cut = fopen(cutPath, "wb");
  CHECK(cut != NULL, "cannot write %s", cutPath);
  if (cut && saved) {
    fwrite(saved, 1, savedSize / 2, cut);
    fclose(cut);
    status = trainc_trainer_load_safetensors(trainerB, cutPath);
    CHECK(status != NULL && strstr(trainc_status_message(status), cutPath),
          "loading a truncated file: %s", trainc_status_message(status));
    expectError(status, TRAINC_DATA_LOSS, "loading a truncated file");
    after = savedWeights(trainerB, scratchPath, &afterSize);
    CHECK(after && before && afterSize == beforeSize &&
              memcmp(after, before, afterSize) == 0,
          "a failed load changed the weights");
    free(after);
    after = NULL;
  }
  expectError(trainc_trainer_load_safetensors(trainerB, "/nonexistent/w.st"),
              TRAINC_NOT_FOUND, "loading a missing file");

  status = trainc_trainer_load_safetensors(trainerB, weightsPath);
  CHECK(status == NULL, "load: %s", trainc_status_message(status));
  trainc_status_free(status);
  after = savedWeights(trainerB, scratchPath, &afterSize);
  CHECK(after && saved && afterSize == savedSize &&
            memcmp(after, saved, afterSize) == 0,
        "the loaded weights differ from the file");
  CHECK(trainc_trainer_step_count(trainerB) == 0 &&
            trainc_trainer_step_count(trainerA) == 4,
        "step counts %lld and %lld",
        (long long)trainc_trainer_step_count(trainerA),
        (long long)trainc_trainer_step_count(trainerB));

  status = trainc_trainer_run(trainerA, 1, 0, recordLoss, &a);
  CHECK(status == NULL, "step A: %s", trainc_status_message(status));
  trainc_status_free(status);
  status = trainc_trainer_run(trainerB, 1, 0, recordLoss, &b);
  CHECK(status == NULL, "step B: %s", trainc_status_message(status));
  trainc_status_free(status);
  CHECK(a.count == 5 && b.count == 1, "%lld and %lld steps", (long long)a.count,
        (long long)b.count);
  if (a.count == 5 && b.count == 1) {
    CHECK(a.losses[4] < a.losses[0], "A is not learning: loss %.6f -> %.6f",
          a.losses[0], a.losses[4]);
    CHECK(memcmp(&a.losses[4], &b.losses[0], sizeof(double)) == 0,
          "the step after the load: loss %.17g, the trained trainer's %.17g",
          b.losses[0], a.losses[4]);
    printf("C API load_safetensors: a fresh trainer with the weights of 4 "
           "steps has the 5th step's loss %.9g, bitwise (first %.9g)\n",
           b.losses[0], a.losses[0]);
  }

done:
  free(tokens);
  free(targets);
  free(saved);
  free(before);
  free(after);
  if (trainerA)
    trainc_trainer_release(trainerA);
  if (trainerB)
    trainc_trainer_release(trainerB);
}

int main(int argc, char **argv) {
  trainc_executable *exe = NULL;
  trainc_session *session = NULL;
  trainc_status status;
  size_t tokensSize = 0, targetsSize = 0, bytes = 0, i;
  void *tokens, *targets;
  const void *out = NULL;
  double expected;
  int lossIndex = -1;

  if (argc != 9) {
    fprintf(stderr,
            "usage: %s MODEL.tcx TOKENS.bin TARGETS.bin LOSS STEP.tcx DATA "
            "OUT.safetensors STATE_DIR\n",
            argv[0]);
    return 2;
  }
  expected = atof(argv[4]);

  expectError(trainc_executable_open("/nonexistent/model.tcx", &exe),
              TRAINC_NOT_FOUND, "open of a missing file");
  expectError(trainc_executable_open(NULL, &exe), TRAINC_INVALID_ARGUMENT,
              "open of NULL");

  status = trainc_executable_open(argv[1], &exe);
  CHECK(status == NULL, "open: %s", trainc_status_message(status));
  if (status) {
    trainc_status_free(status);
    return 1;
  }
  CHECK(trainc_executable_input_count(exe) == 2, "expected 2 inputs");
  expectError(trainc_session_create(exe, "tpu", &session), TRAINC_NOT_FOUND,
              "an unknown device");
  status = trainc_session_create(exe, "cpu", &session);
  CHECK(status == NULL, "session: %s", trainc_status_message(status));
  if (status)
    return 1;
  /* The session keeps the executable alive. */
  trainc_executable_release(exe);

  expectError(trainc_session_run(session), TRAINC_FAILED_PRECONDITION,
              "run before the inputs are set");
  tokens = readFile(argv[2], &tokensSize);
  targets = readFile(argv[3], &targetsSize);
  CHECK(tokens && targets, "cannot read the input files");
  if (!tokens || !targets)
    return 1;
  expectError(trainc_session_set_input(session, 0, tokens, tokensSize - 8),
              TRAINC_INVALID_ARGUMENT, "an input of the wrong size");
  expectError(trainc_session_set_input(session, 7, tokens, tokensSize),
              TRAINC_INVALID_ARGUMENT, "an input index out of range");
  status = trainc_session_set_input(session, 0, tokens, tokensSize);
  CHECK(status == NULL, "set tokens: %s", trainc_status_message(status));
  status = trainc_session_set_input(session, 1, targets, targetsSize);
  CHECK(status == NULL, "set targets: %s", trainc_status_message(status));
  status = trainc_session_run(session);
  CHECK(status == NULL, "run: %s", trainc_status_message(status));
  if (status)
    return 1;

  for (i = 0; i < 2; ++i) {
    status = trainc_session_output(session, i, &out, &bytes);
    CHECK(status == NULL, "output %zu", i);
    if (!status && bytes == sizeof(float))
      lossIndex = (int)i;
  }
  CHECK(lossIndex >= 0, "no scalar loss output");
  if (lossIndex >= 0) {
    float loss;
    trainc_session_output(session, (size_t)lossIndex, &out, &bytes);
    memcpy(&loss, out, sizeof loss);
    CHECK(fabs(loss - expected) <= 1e-5 * fabs(expected),
          "loss %.9g, PyTorch %.9g", loss, expected);
    printf("C API: loss %.9g (PyTorch %.9g)\n", loss, expected);
    /* The same scalar as a double (API 10). */
    double asDouble = 0;
    status =
        trainc_session_output_scalar(session, (size_t)lossIndex, &asDouble);
    CHECK(status == NULL && asDouble == (double)loss,
          "output_scalar %.17g, the f32 output %.9g", asDouble, loss);
    trainc_status_free(status);
    expectError(trainc_session_output_scalar(session, (size_t)(1 - lossIndex),
                                             &asDouble),
                TRAINC_INVALID_ARGUMENT,
                "output_scalar of a non-scalar output");
  }
  expectError(trainc_session_output(session, 9, &out, &bytes),
              TRAINC_OUT_OF_RANGE, "an output index out of range");
  trainc_session_release(session);
  free(tokens);
  free(targets);
  /* The struct sizes bindings check their declarations against. */
  CHECK(trainc_struct_size("trainc_train_config") ==
            sizeof(trainc_train_config),
        "trainc_train_config size");
  CHECK(trainc_struct_size("trainc_step_metrics") ==
            sizeof(trainc_step_metrics),
        "trainc_step_metrics size");
  CHECK(trainc_struct_size("no such struct") == 0, "an unknown struct");
  checkTraining(argv[1], argv[5], argv[6], argv[7]);
  checkBadTrainerConfig(argv[5], argv[6]);
  checkResume(argv[5], argv[6], argv[8]);
  char cacheDir[4096];
  snprintf(cacheDir, sizeof cacheDir, "%s_cache", argv[8]);
  checkDataCache(argv[5], argv[6], cacheDir);
  checkLoadWeights(argv[5], argv[2], argv[3], argv[7]);
  return failures ? 1 : 0;
}
