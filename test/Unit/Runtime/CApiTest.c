/*===- CApiTest.c - The C API from C, against the header alone ------------===*
 *
 * Compiled as C99 (not C++): proves trainc/runtime.h is a C header. Runs the
 * tinygpt forward executable built by the test fixture and checks its loss
 * against PyTorch's, then the error paths: a missing file, a wrong input
 * size, a missing input, an unknown device.
 *
 * Usage: trainc-capi-test MODEL.tcx TOKENS.bin TARGETS.bin EXPECTED_LOSS
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

int main(int argc, char **argv) {
  trainc_executable *exe = NULL;
  trainc_session *session = NULL;
  trainc_status status;
  size_t tokensSize = 0, targetsSize = 0, bytes = 0, i;
  void *tokens, *targets;
  const void *out = NULL;
  double expected;
  int lossIndex = -1;

  if (argc != 5) {
    fprintf(stderr, "usage: %s MODEL.tcx TOKENS.bin TARGETS.bin LOSS\n",
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
  }
  expectError(trainc_session_output(session, 9, &out, &bytes),
              TRAINC_OUT_OF_RANGE, "an output index out of range");
  trainc_session_release(session);
  free(tokens);
  free(targets);
  return failures ? 1 : 0;
}
