/* An embedding program: loads a trainc executable through the installed C
 * API (find_package(trainc) or pkg-config trainc), prints what it is and,
 * given input files, runs it once and prints its scalar outputs; with
 * --steps N, trains a training step N steps on those inputs (a trainer
 * without data files) and prints each step's loss.
 *
 *     trainc-embed-example model.tcx [NAME=FILE ...]
 *     trainc-embed-example --steps N step.tcx NAME=FILE ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <trainc/runtime.h>

static int fail(trainc_status status) {
  fprintf(stderr, "trainc-embed-example: %s: %s\n",
          trainc_status_code_name(trainc_status_get_code(status)),
          trainc_status_message(status));
  trainc_status_free(status);
  return 1;
}

static int print_step(const trainc_step_metrics *m, void *user) {
  (void)user;
  printf("step %lld loss = %.9g\n", (long long)m->step, m->loss);
  return 0;
}

int main(int argc, char **argv) {
  long steps = 0;
  if (argc > 2 && strcmp(argv[1], "--steps") == 0) {
    steps = strtol(argv[2], NULL, 10);
    argv += 2;
    argc -= 2;
  }
  if (argc < 2 || steps < 0) {
    fprintf(stderr, "usage: %s [--steps N] model.tcx [NAME=FILE ...]\n",
            argv[0]);
    return 2;
  }
  trainc_executable *exe = NULL;
  trainc_status s = trainc_executable_open(argv[1], &exe);
  if (s)
    return fail(s);
  printf("trainc C API %d: %s has %zu inputs and %zu outputs\n",
         TRAINC_API_VERSION, argv[1], trainc_executable_input_count(exe),
         trainc_executable_output_count(exe));
  /* Training: a trainer without data files steps on the inputs set in its
   * session. Running: a plain session. */
  trainc_trainer *trainer = NULL;
  trainc_session *session = NULL;
  if (steps > 0) {
    trainc_train_config config;
    trainc_train_config_init(&config);
    if ((s = trainc_trainer_create(exe, NULL, &config, &trainer)))
      return fail(s);
    session = trainc_trainer_session(trainer);
  } else if ((s = trainc_session_create(exe, "cpu", &session))) {
    return fail(s);
  }
  for (int a = 2; a < argc; ++a) {
    char *eq = strchr(argv[a], '=');
    if (!eq) {
      fprintf(stderr, "expected NAME=FILE, got %s\n", argv[a]);
      return 2;
    }
    *eq = '\0';
    int found = 0;
    for (size_t i = 0; i < trainc_executable_input_count(exe); ++i) {
      trainc_tensor_info info;
      if ((s = trainc_executable_input_info(exe, i, &info)))
        return fail(s);
      if (strcmp(info.name, argv[a]) == 0) {
        if ((s = trainc_session_set_input_file(session, i, eq + 1)))
          return fail(s);
        found = 1;
      }
    }
    if (!found) {
      fprintf(stderr, "no input named %s\n", argv[a]);
      return 2;
    }
  }
  if (trainer) {
    if ((s = trainc_trainer_run(trainer, steps, 0, print_step, NULL)))
      return fail(s);
    trainc_trainer_release(trainer);
    trainc_executable_release(exe);
    return 0;
  }
  if (argc > 2) {
    if ((s = trainc_session_run(session)))
      return fail(s);
    for (size_t i = 0; i < trainc_executable_output_count(exe); ++i) {
      trainc_tensor_info info;
      const void *data = NULL;
      size_t bytes = 0;
      if ((s = trainc_executable_output_info(exe, i, &info)) ||
          (s = trainc_session_output(session, i, &data, &bytes)))
        return fail(s);
      if (info.rank == 0 && info.dtype == TRAINC_F32)
        printf("%s = %.9g\n", info.name, *(const float *)data);
    }
  }
  trainc_session_release(session);
  trainc_executable_release(exe);
  return 0;
}
