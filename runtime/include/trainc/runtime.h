/*===- trainc/runtime.h - The trainc runtime C API, version 7 ------------===*
 *
 * Open a compiled executable (.tcx), create a session on a device, bind
 * inputs, run, read outputs; or train: step a training executable over
 * batches drawn from data files, with held-out evaluation and metrics.
 *
 * Conventions
 * - Every call that can fail returns a trainc_status: NULL means success;
 *   otherwise it describes the error and the caller frees it with
 *   trainc_status_free. The library never exits or aborts the process.
 * - Output parameters come last and are named out_*.
 * - Ownership: objects returned through out_* belong to the caller, who
 *   releases them with the matching *_release. A session keeps its
 *   executable alive; the executable may be released first.
 * - Threading: an executable may be shared by threads; a session must be
 *   used by one thread at a time.
 * - Memory returned by trainc_session_output stays valid until the next
 *   trainc_session_run or the release of the session. Text returned
 *   through a `char **out_text` belongs to the caller, who frees it with
 *   trainc_string_free.
 *===----------------------------------------------------------------------===*/

#ifndef TRAINC_RUNTIME_H
#define TRAINC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRAINC_API_VERSION 13

typedef struct trainc_status_s *trainc_status;
typedef struct trainc_executable_s trainc_executable;
typedef struct trainc_session_s trainc_session;

/* Status codes (trainc::StatusCode). */
typedef enum {
  TRAINC_OK = 0,
  TRAINC_INVALID_ARGUMENT = 1,
  TRAINC_NOT_FOUND = 2,
  TRAINC_OUT_OF_RANGE = 3,
  TRAINC_FAILED_PRECONDITION = 4,
  TRAINC_DATA_LOSS = 5,
  TRAINC_UNAVAILABLE = 6,
  TRAINC_UNIMPLEMENTED = 7,
  TRAINC_INTERNAL = 8
} trainc_status_code;

/* Element types, as stored: f16/bf16 as 16-bit patterns, i1 as bytes. */
typedef enum {
  TRAINC_F64 = 0,
  TRAINC_F32 = 1,
  TRAINC_F16 = 2,
  TRAINC_BF16 = 3,
  TRAINC_I64 = 4,
  TRAINC_I32 = 5,
  TRAINC_I1 = 6,
  TRAINC_I16 = 7,
  TRAINC_I8 = 8,
  TRAINC_U64 = 9,
  TRAINC_U32 = 10,
  TRAINC_U16 = 11,
  TRAINC_U8 = 12,
  /* Storage-only: 8-bit float bit patterns; 4- and 2-bit integers, one
     byte per element holding the value. */
  TRAINC_F8E4M3FN = 13,
  TRAINC_F8E4M3FNUZ = 14,
  TRAINC_F8E5M2 = 15,
  TRAINC_F8E5M2FNUZ = 16,
  TRAINC_I4 = 17,
  TRAINC_U4 = 18,
  TRAINC_I2 = 19,
  TRAINC_U2 = 20,
  TRAINC_F4E2M1FN = 21,
  TRAINC_F8E8M0FNU = 22
} trainc_dtype;

/* A tensor's description; `dims` points into the executable. */
typedef struct {
  const char *name;
  trainc_dtype dtype;
  size_t rank;
  const int64_t *dims;
  size_t bytes;
} trainc_tensor_info;

trainc_status_code trainc_status_get_code(trainc_status status);
/* The message; owned by the status. */
const char *trainc_status_message(trainc_status status);
void trainc_status_free(trainc_status status);
/* "f32", "bf16", ... (since API version 3). */
const char *trainc_dtype_name(trainc_dtype dtype);
/* "invalid argument", "not found", ... (since API version 3). */
const char *trainc_status_code_name(trainc_status_code code);

trainc_status trainc_executable_open(const char *path,
                                     trainc_executable **out_executable);
void trainc_executable_release(trainc_executable *executable);
size_t trainc_executable_input_count(const trainc_executable *executable);
size_t trainc_executable_output_count(const trainc_executable *executable);
trainc_status trainc_executable_input_info(const trainc_executable *executable,
                                           size_t index,
                                           trainc_tensor_info *out_info);
trainc_status trainc_executable_output_info(const trainc_executable *executable,
                                            size_t index,
                                            trainc_tensor_info *out_info);
/* Since API version 8: the whole shape of output `index` (its info's rank
 * of dims, owned by the executable). It differs from the info's dims, which
 * are one rank's part, for an output split over a mesh (a data-parallel
 * step's logits); trainc_session_write_output_npy writes the whole. */
trainc_status
trainc_executable_output_whole_dims(const trainc_executable *executable,
                                    size_t index, const int64_t **out_dims);

/* `device` names the device: "cpu" (always built); "cuda" (this rank's GPU:
 * the launcher's local rank modulo the GPUs present) or "cuda:N" in a
 * runtime built with CUDA (TRAINC_UNAVAILABLE without such a GPU); "auto"
 * (since API version 9): "cuda" when this runtime has it and a GPU is
 * present, else "cpu". An unknown name is TRAINC_NOT_FOUND, with the
 * devices this runtime has in the message. */
trainc_status trainc_session_create(trainc_executable *executable,
                                    const char *device,
                                    trainc_session **out_session);
void trainc_session_release(trainc_session *session);
/* Copies `bytes` bytes into input `index`; the size must match. */
trainc_status trainc_session_set_input(trainc_session *session, size_t index,
                                       const void *data, size_t bytes);
trainc_status trainc_session_run(trainc_session *session);
trainc_status trainc_session_output(trainc_session *session, size_t index,
                                    const void **out_data, size_t *out_bytes);
/* Since API version 10: output `index`, a scalar (rank 0) f64, f32, f16,
 * bf16 or i1, as a double (16-bit floats converted exactly; i1 as 0 or 1).
 * TRAINC_OUT_OF_RANGE for an index past the outputs, TRAINC_INVALID_ARGUMENT
 * for an output of another dtype or rank. */
trainc_status trainc_session_output_scalar(trainc_session *session,
                                           size_t index, double *out_value);

/* ---- Inspection, options and files (since API version 3) ---------------- */

void trainc_string_free(char *text);
/* Since API version 9: sizeof the C API struct named `name`
 * ("trainc_tensor_info", "trainc_session_options", "trainc_train_config",
 * "trainc_step_metrics"; 0 for another name), for bindings that declare
 * the structs themselves (Python's ctypes) to check their declarations. */
size_t trainc_struct_size(const char *name);
/* The executable as text: its origin, memory plan, tensors and
 * instructions (what trainc-run --inspect prints). */
trainc_status trainc_executable_describe(const trainc_executable *executable,
                                         char **out_text);
/* Its parameters (trained weights), what save_safetensors writes. */
size_t trainc_executable_parameter_count(const trainc_executable *executable);
/* The model file it was compiled from, as recorded ("" when none); owned by
 * the executable. */
const char *trainc_executable_source(const trainc_executable *executable);
/* The static memory plan's peak over all arenas, in bytes. */
uint64_t trainc_executable_planned_bytes(const trainc_executable *executable);

typedef struct {
  /* Debug mode: after every instruction, check that no byte outside its
   * results changed (slow). */
  int check_writes;
  /* Time every instruction, for trainc_session_profile. */
  int profile;
} trainc_session_options;
void trainc_session_options_init(trainc_session_options *options);
trainc_status trainc_session_create_with_options(
    trainc_executable *executable, const char *device,
    const trainc_session_options *options, trainc_session **out_session);
/* Input `index` from a file: a .npy array of the input's dtype and shape,
 * or raw little-endian bytes of exactly its size. An input split over the
 * ranks of a mesh (data parallelism, API version 7) reads the whole global
 * tensor and keeps this rank's part. */
trainc_status trainc_session_set_input_file(trainc_session *session,
                                            size_t index, const char *path);
/* Writes output `index` as a .npy file. On a run of several ranks (API
 * version 7) every rank calls it: an output split over the ranks is
 * gathered whole, and rank 0 writes the file. */
trainc_status trainc_session_write_output_npy(trainc_session *session,
                                              size_t index, const char *path);
/* The highest arena byte any instruction touched, summed over arenas. */
uint64_t trainc_session_measured_bytes(const trainc_session *session);
/* Where the time of `runs` runs went (needs the profile option): per op,
 * and the slowest instructions by op and operand shapes. `runs` 0: the
 * session's own count of profiled runs, which leaves out the first run
 * once there is a second (it alone pays one-time costs). */
trainc_status trainc_session_profile(const trainc_session *session, size_t runs,
                                     char **out_text);

/* ---- Training (since API version 1) -------------------------------------
 * A trainer owns a session of a training executable (`trainc --train`) and
 * draws its token and target inputs from data files; see
 * runtime/README.md for the data formats, the batch sampler and the
 * metrics. */

typedef struct trainc_trainer_s trainc_trainer;

typedef struct {
  /* Data files, read in order and concatenated: token streams, or (since
   * API version 10) .safetensors files of samples whose arrays are named
   * after the executable's inputs (runtime/README.md, "Samples"). Since
   * API version 11: a path that names no file and holds '*', '?' or '[' is
   * a glob pattern for the regular files it matches, in name order (none
   * is a not-found error); the files stay open while the trainer lives, and
   * creating it raises the process's soft limit on open files where they
   * need more. A file given twice is read twice. */
  const char *const *data_paths;
  size_t data_path_count;
  /* "auto" (or NULL: "samples" for *.safetensors, else by the token file
   * magic and .bin), "tokens", "bin", "bytes" or "samples". */
  const char *data_format;
  /* Bytes per id of headerless .bin files: 2 or 4 (0: not given). */
  int bin_token_bytes;
  /* The share of the data held out for evaluation, from its end. */
  double eval_fraction;
  /* Held-out batches per evaluation (0: all of them; negative: an error). */
  int64_t eval_batches;
  /* Batch sampling seed: a batch depends only on (seed, step); samples are
   * shuffled per epoch by it. */
  uint64_t seed;
  /* The device's peak FLOP/s for model FLOPs utilization (0: none). */
  double peak_flops;
  /* Since API version 3. The inputs that take token and target ids (NULL:
   * those the executable's training signature names). */
  const char *tokens_input;
  const char *targets_input;
  /* Options of the trainer's session. */
  trainc_session_options session;
  /* Since API version 4. A step whose loss is more than spike_z standard
   * deviations (at least 1% of the mean) above the mean of the recent ones
   * (the last 64 finite, unskipped losses, once 16 are known) is reported
   * as a spike
   * (trainc_step_metrics.spike); 0 (the default): never. */
  double spike_z;
  /* Since API version 9. The device the trainer's sessions run on, as
   * trainc_session_create names it (NULL: "cpu"). */
  const char *device;
  /* Since API version 9. Check the first verify_steps steps against a twin
   * of the trainer on the CPU, from the same state and batches: the loss,
   * the gradient norm and every parameter and optimizer-state tensor, by
   * relative L2 error against the executable's precision's limits
   * (runtime/README.md, "The CUDA device"). 0: none. */
  int64_t verify_steps;
  /* Since API version 11. Opening the data reads it through once (its
   * checks and hash); for large data that takes a while. If set,
   * data_progress is called during trainc_trainer_create, on its thread,
   * after each piece read (up to 4 MiB), with the bytes read so far and in
   * all, and data_progress_context. */
  void (*data_progress)(void *context, uint64_t bytes_done,
                        uint64_t bytes_total);
  void *data_progress_context;
  /* Since API version 12. A directory where the opening pass's results (a
   * few numbers per set of files) are kept, made if missing, so that
   * opening the same unchanged files again skips the pass: a file is
   * unchanged while its device, inode, size and modification and change
   * times are (runtime/README.md, "The data cache"). NULL: none. One that
   * cannot be written is noted in the data's description, not an error. */
  const char *data_cache_dir;
} trainc_train_config;

/* Fills `config` with the defaults (no files, auto format, 10% held out,
 * 16 evaluation batches, seed 0, no peak, the signature's inputs, no
 * session options). With no data files, the trainer steps on inputs set
 * through trainc_trainer_session. */
void trainc_train_config_init(trainc_train_config *config);

/* One step's measurements; NaN where a value does not exist. */
typedef struct {
  int64_t step; /* steps done, this one included */
  double loss, grad_norm, learning_rate;
  double step_seconds, tokens_per_second, flops_per_second, mfu;
  uint64_t planned_bytes, measured_bytes, peak_rss_bytes;
  int evaluated;    /* 1 when an evaluation ran after this step, then */
  double eval_loss; /* its held-out loss (which may itself be NaN) */
  uint64_t data_position;
  int has_loss; /* the executable has a loss (else loss is NaN); since v3 */
  /* Since v4: 1 when the step's loss or gradients were not finite, so the
   * executable changed no parameter or optimizer state (the step count
   * included); the loss and gradient norm above are the non-finite ones. */
  int skipped;
  /* Since v4: (loss - mean) / standard deviation of the recent losses (NaN
   * before 16 are known), and 1 when it exceeds the config's spike_z. */
  double loss_z;
  int spike;
  /* Since v5: the dynamic loss scale after this step (fp16 executables;
   * NaN otherwise). A skipped step with a finite loss and a loss scale is
   * an overflow of the scaled gradients: the scale halved, nothing is
   * wrong with the run. */
  double loss_scale;
  /* Since v7, runs of several ranks (NaN / -1 otherwise): this rank's
   * seconds waiting in collectives during the step (communication compute
   * did not hide); the median rank's compute seconds (step minus waiting),
   * the slowest rank and its compute seconds, and straggler = 1 when that
   * rank lags the median by more than 20%. */
  double comm_seconds, median_compute_seconds, slowest_compute_seconds;
  int slowest_rank;
  int straggler;
  /* Since v8, runs of several ranks (NaN otherwise): the seconds of the
   * step during which at least one collective was in flight, whether
   * compute hid it or not (comm_seconds is the part it did not). */
  double comm_total_seconds;
  /* Since v9: 1 when this step was checked against a CPU twin
   * (trainc_train_config.verify_steps); then the compared value with the
   * largest error relative to its limit (a tensor name, "loss" or
   * "grad_norm"; valid during the callback), its relative L2 error and its
   * limit. A step beyond a limit fails the run, naming every value. */
  int verified;
  const char *verify_worst;
  double verify_worst_error, verify_worst_limit;
  /* Since v10: samples per second (sample data; 0 otherwise, when
   * tokens_per_second counts). */
  double samples_per_second;
} trainc_step_metrics;

/* Called after every step; a non-zero return stops the run early (the run
 * then returns NULL). */
typedef int (*trainc_step_callback)(const trainc_step_metrics *metrics,
                                    void *user);

/* `eval` (may be NULL) is the forward executable of the same model, whose
 * loss (as its training signature names it) gives the held-out loss; the
 * trainer copies the current weights into it before each evaluation. The data
 * is read and checked against the model's vocabulary here. */
trainc_status trainc_trainer_create(trainc_executable *step,
                                    trainc_executable *eval,
                                    const trainc_train_config *config,
                                    trainc_trainer **out_trainer);
void trainc_trainer_release(trainc_trainer *trainer);
/* Runs `steps` steps, evaluating after every `eval_every`-th and the last
 * (0: never); `callback` may be NULL. */
trainc_status trainc_trainer_run(trainc_trainer *trainer, int64_t steps,
                                 int64_t eval_every,
                                 trainc_step_callback callback, void *user);
/* The held-out loss with the current weights. */
trainc_status trainc_trainer_evaluate(trainc_trainer *trainer,
                                      double *out_loss);
/* Writes the current weights, by their model names, as .safetensors. On a
 * run of several ranks every rank calls it (parameters split over the mesh
 * are gathered whole) and rank 0 writes the file. */
trainc_status trainc_trainer_save_safetensors(trainc_trainer *trainer,
                                              const char *path);

/* ---- Saving and continuing a run (since API version 2) ------------------
 * A checkpoint directory (created when missing) holds one checkpoint per
 * save, step-NNNNNNNNNNNN/ (a safetensors shard of every parameter and
 * optimizer-state tensor and a checksummed manifest with the step, seed and
 * data position), and `latest`, which names the newest one. A save is
 * atomic and durable: it writes a staging directory, fsyncs, renames, verifies
 * and only then moves `latest`, so an interrupted or failed save leaves the
 * previous checkpoint intact. A trainer created from the same executable,
 * data and seed that restores it continues the run exactly: its losses
 * equal the uninterrupted run's, bit for bit. (Format and guarantees:
 * runtime/src/train/Checkpoint.h.) Since API version 4 a directory is
 * locked while it is written (two processes cannot share one), and saves
 * keep every checkpoint unless trainc_trainer_use_checkpoint_dir says
 * otherwise. On a run of several ranks every rank calls the save functions
 * at the same step: each writes its shard (its parts of the tensors split
 * over the mesh by ZeRO; rank 0 also the whole ones), and rank 0, which
 * locks the directory, waits for every shard and publishes the checkpoint.
 * Every rank restores: it joins the parts and keeps its own, so a
 * checkpoint restores under any mesh. */
trainc_status trainc_trainer_save(trainc_trainer *trainer, const char *dir);
/* Restores the checkpoint `dir`/latest names (the last save that completed
 * and verified; without a valid `latest`, the newest step) or, if that one
 * does not load (a checksum, a missing shard, a malformed manifest), the
 * newest other one that does (the damaged one is skipped:
 * trainc_trainer_restore_note says so), or a run
 * saved by API versions 2-3. TRAINC_NOT_FOUND when `dir` does not exist;
 * TRAINC_INVALID_ARGUMENT when it was saved with another seed, data or
 * model; TRAINC_DATA_LOSS when no checkpoint in it verifies. */
trainc_status trainc_trainer_restore(trainc_trainer *trainer, const char *dir);
/* Steps done so far (restored runs included). */
int64_t trainc_trainer_step_count(const trainc_trainer *trainer);

/* ---- Since API version 3 ------------------------------------------------ */
/* Tokens one step consumes (batch x sequence): the data's, or without data
 * the token input's that the executable names (what step metrics'
 * tokens_per_second counts); 0 when it names none. */
int64_t trainc_trainer_tokens_per_step(const trainc_trainer *trainer);
/* Since API version 10: samples one step consumes on all ranks (sample
 * data: the executable's batch times the data-parallel ranks); 0 for token
 * data or fixed inputs. */
int64_t trainc_trainer_samples_per_step(const trainc_trainer *trainer);
/* The trainer's session, owned by the trainer (do not release it): to set
 * fixed inputs, read outputs, or profile. */
trainc_session *trainc_trainer_session(trainc_trainer *trainer);
/* "400 tokens (bytes) from FILE; 360 for training, 40 held out; batch 2 x
 * 32 tokens", and with an evaluation executable a second line "held-out
 * loss: K batches" ("" without data). */
trainc_status trainc_trainer_describe_data(const trainc_trainer *trainer,
                                           char **out_text);
/* Writes `source_model` (the ONNX model the executable was compiled from)
 * with its initializers replaced by the current weights, to `path`. */
trainc_status trainc_trainer_export_onnx(trainc_trainer *trainer,
                                         const char *source_model,
                                         const char *path);
/* Since API version 13. Checks, writing nothing, what
 * trainc_trainer_export_onnx(trainer, source_model, path) checks before it
 * writes, with the same errors: that every parameter is exactly one
 * initializer of `source_model` of its dtype and shape, that `path` is
 * neither the model nor its external data, that external data it would
 * inline is there, and that the result stays under protobuf's 2 GiB (its
 * size counted, not made). It reads the model file once,
 * not its external data nor the weights, and runs no collective: on the
 * rank that writes (rank 0) it checks, on others it returns at once. A run
 * calls it before it trains, so that a wrong model is found then. */
trainc_status trainc_trainer_check_onnx_export(trainc_trainer *trainer,
                                               const char *source_model,
                                               const char *path);
/* The run state saved in `dir`, without restoring it: its steps and seed
 * (to create the trainer that continues it with the same seed). Since API
 * version 6 it reads only the checkpoints' manifests: the step is that of
 * the checkpoint trainc_trainer_restore would take if its manifest
 * verifies (the restore checks the tensors too, and may take another
 * checkpoint); the seed is the run's. */
trainc_status trainc_saved_run_info(const char *dir, int64_t *out_step,
                                    uint64_t *out_seed);

/* ---- Since API version 4 ------------------------------------------------ */
/* Locks checkpoint directory `dir` (created when missing) for this trainer's
 * lifetime, so that no other process writes it (TRAINC_FAILED_PRECONDITION
 * names the pid holding it), and makes saves into it keep only the newest
 * `keep_last` checkpoints (0: all). */
trainc_status trainc_trainer_use_checkpoint_dir(trainc_trainer *trainer,
                                                const char *dir, int keep_last);
/* Starts a save like trainc_trainer_save, but writes it on a background
 * thread: the call returns once the state is copied to host memory (the
 * only time training waits), after waiting for the previous background
 * save, whose error it returns (then starting nothing). */
trainc_status trainc_trainer_save_async(trainc_trainer *trainer,
                                        const char *dir);
/* Waits for the background save in flight (if any); its status.
 * trainc_trainer_save and trainc_trainer_release wait too. */
trainc_status trainc_trainer_save_wait(trainc_trainer *trainer);
/* Rolls back to the newest good checkpoint of `dir` (after waiting for a
 * background save) but keeps the data position: the batches since that
 * checkpoint are skipped, not trained on again (the remedy for a loss spike
 * or a run of non-finite steps). trainc_trainer_restore_note says which.
 * On a run of several ranks every rank calls it after the same step: each
 * waits for every rank's save in flight, and all return to the same
 * checkpoint (else an error names the ranks' steps). */
trainc_status trainc_trainer_rollback(trainc_trainer *trainer, const char *dir);
/* What the last trainc_trainer_restore used ("step-000000000040") and,
 * one per line after it, each checkpoint it skipped and why; "" before
 * any restore. Owned by the trainer. */
const char *trainc_trainer_restore_note(const trainc_trainer *trainer);

/* ---- Since API version 6 ------------------------------------------------ */
/* Sets the trainer's parameters from the .safetensors file `path`: the
 * tensors trainc_trainer_save_safetensors writes, by the same names. Strict:
 * every parameter must be in the file with its dtype and shape, and every
 * tensor in the file must be a parameter (the optional "__metadata__" entry
 * is ignored); otherwise TRAINC_INVALID_ARGUMENT names each such tensor with
 * its dtype and shape in the file and in the executable. The whole file is
 * read and checked before any parameter changes, so an error leaves them as
 * they were. The optimizer state (moments) and the step count are kept.
 * TRAINC_NOT_FOUND when `path` does not exist; TRAINC_DATA_LOSS, naming the
 * file and the tensor, when it is truncated or malformed (a header length
 * past its end, a header that is not JSON, byte ranges outside the data or
 * of another size than dtype x shape, a name given twice);
 * TRAINC_INVALID_ARGUMENT for a dtype trainc does not read. */
trainc_status trainc_trainer_load_safetensors(trainc_trainer *trainer,
                                              const char *path);

/* ---- Since API version 7: runs of several ranks ------------------------- */
/* A process started by an MPI launcher (mpirun, srun) is one rank of a run;
 * executables compiled for a mesh (trainc --mesh data=N --data-parallel)
 * run on exactly that many ranks, each with its own session, and their
 * collectives go over MPI. A process no launcher started is a world of one
 * rank and never initializes MPI. */
typedef struct {
  /* A collective that has not completed after this many seconds fails with
   * an error naming the step, the instruction and the ranks that did not
   * arrive (0: wait forever). Default 300. */
  double collective_timeout_seconds;
  /* Nonzero: gradient sums are added in rank order on every rank, so N
   * data-parallel ranks give the same bits as one rank with --grad-accum N
   * (N times the traffic). Default 0: MPI's order. */
  int deterministic_reductions;
} trainc_world_config;

void trainc_world_config_init(trainc_world_config *config);
/* Joins the run's ranks (MPI_Init when a launcher started the process) with
 * `config` (NULL: defaults) and returns this process's rank and the number
 * of ranks. Call it before the first session: sessions made earlier, or
 * later calls, use the first configuration. TRAINC_UNAVAILABLE when MPI
 * cannot start or this runtime was built without MPI under a launcher. */
trainc_status trainc_world_init(const trainc_world_config *config,
                                int *out_rank, int *out_size);
/* Whether any rank passes a nonzero `flag` (every rank calls it, at the
 * same point): how the ranks agree to stop after the same step. A world of
 * one rank: `flag` itself. */
trainc_status trainc_world_any(int flag, int *out_any);
/* Ends every rank of the run now (MPI_Abort with `code`), so that the other
 * ranks do not wait for one that failed. The one call that ends the
 * process, and only when asked; a world of one rank returns at once. */
void trainc_world_abort(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRAINC_RUNTIME_H */
