//===- RunState.cpp - Saving a training run and continuing it -------------===//

#include "train/RunState.h"

#include "io/Npy.h"
#include "io/TensorFiles.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sys/stat.h>

namespace trainc {
namespace {

/// Reads the non-negative integer field `key` of the flat JSON object
/// `text`.
bool jsonField(const std::string &text, const char *key, uint64_t &out) {
  std::string quoted = std::string("\"") + key + "\":";
  size_t at = text.find(quoted);
  if (at == std::string::npos)
    return false;
  size_t begin = at + quoted.size(), end = begin;
  while (end < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[end])))
    ++end;
  if (end == begin || end - begin > 19)
    return false;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str() + begin, nullptr, 10);
  if (errno != 0 || v > uint64_t(std::numeric_limits<int64_t>::max()))
    return false;
  out = v;
  return true;
}

bool isPersistent(const TensorInfo &t) {
  return t.role == TensorRole::Parameter || t.role == TensorRole::State;
}

} // namespace

std::string runTensorFileName(const std::string &tensorName) {
  return tensorFileName(tensorName) + ".npy";
}

Status readRunState(const std::string &dir, RunState &state) {
  std::string path = dir + "/run_state.json";
  std::ifstream in(path);
  if (!in)
    return notFound(path + ": cannot open (is " + dir +
                    " a --save-state directory?)");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  uint64_t format = 0, step = 0;
  if (!jsonField(text, "format", format) || format != 1 ||
      !jsonField(text, "step", step) || !jsonField(text, "seed", state.seed) ||
      !jsonField(text, "data_position", state.dataPosition) ||
      !jsonField(text, "data_tokens", state.dataSize) ||
      !jsonField(text, "train_tokens", state.trainSize) ||
      step > uint64_t(std::numeric_limits<int64_t>::max() / 2))
    return Status(StatusCode::kDataLoss,
                  path + ": not a run state of format 1 (expected format, "
                         "step, seed, data_position, data_tokens and "
                         "train_tokens)");
  state.step = int64_t(step);
  return okStatus();
}

Status checkSameData(const std::string &where, const RunState &saved,
                     const RunState &current, const Dataset *data) {
  if (!data)
    return okStatus();
  if (saved.seed != current.seed)
    return invalidArgument(where + ": the run was saved with seed " +
                           std::to_string(saved.seed) + ", this trainer has " +
                           std::to_string(current.seed) +
                           ": continue it with the same seed");
  std::string unit = data->unit();
  if (saved.dataSize != data->size() || saved.trainSize != data->trainSize())
    return invalidArgument(
        where + ": the run was on " + std::to_string(saved.dataSize) + " " +
        unit + " (" + std::to_string(saved.trainSize) +
        " for training), this data has " + std::to_string(data->size()) + " (" +
        std::to_string(data->trainSize()) +
        "): give the same data and held-out fraction to continue");
  if (saved.dataHash != 0 && saved.dataHash != data->contentHash())
    return invalidArgument(
        where + ": the run was on other data of the same size: its " + unit +
        " hash to " + hex64(saved.dataHash) + ", this data's to " +
        hex64(data->contentHash()) + " (" + data->description() +
        "): give the same files, in the same order, to continue");
  return okStatus();
}

Status restoreRun(const std::string &dir, Trainer &trainer,
                  const Dataset *data) {
  RunState saved;
  TRAINC_RETURN_IF_ERROR(readRunState(dir, saved));
  TRAINC_RETURN_IF_ERROR(checkSameData(dir, saved, trainer.state(), data));
  Session &session = trainer.session();
  const Executable &exe = session.executable();
  for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
    const TensorInfo &t = exe.tensors()[id];
    if (!isPersistent(t))
      continue;
    std::string path = dir + "/" + runTensorFileName(t.name);
    NpyArray array;
    TRAINC_RETURN_IF_ERROR(readNpy(path, array));
    if (array.dtype != t.dtype || array.shape != t.globalShape)
      return invalidArgument(path + " holds " + dtypeName(array.dtype) + " " +
                             shapeString(array.shape) + " but '" + t.name +
                             "' is " + dtypeName(t.dtype) + " " +
                             shapeString(t.globalShape));
    TRAINC_RETURN_IF_ERROR(
        session.setPersistent(id, array.data.data(), array.data.size()));
  }
  trainer.restore(saved);
  return okStatus();
}

} // namespace trainc
