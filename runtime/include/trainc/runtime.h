/*===- trainc/runtime.h - The trainc runtime C API, version 0 ------------===*
 *
 * Open a compiled executable (.tcx), create a session on a device, bind
 * inputs, run, read outputs.
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
 *   trainc_session_run or the release of the session.
 *===----------------------------------------------------------------------===*/

#ifndef TRAINC_RUNTIME_H
#define TRAINC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRAINC_API_VERSION 0

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
  TRAINC_I1 = 6
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

/* `device` is "cpu" (the only device of API version 0). */
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TRAINC_RUNTIME_H */
