//===- TensorFiles.cpp - Inputs and outputs of a session as files ---------===//

#include "io/TensorFiles.h"

#include "exec/Parts.h"
#include "io/AtomicFile.h"
#include "io/Npy.h"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace trainc {

/// Loads the bytes of all of `t` from `file` (.npy: its dtype and shape
/// must be t's; else raw bytes of t's size).
Status loadWhole(const TensorInfo &t, const std::string &file,
                 std::vector<char> &bytes);

namespace {

/// Loads the bytes for input `index` from `file`: the whole tensor, or,
/// for an input split over the mesh, the whole (global) tensor of which
/// this rank's part is kept.
Status loadInput(const Session &session, size_t index, const std::string &file,
                 std::vector<char> &bytes) {
  const Executable &exe = session.executable();
  TensorInfo t = exe.tensors()[exe.inputs()[index]];
  if (t.isSplit()) {
    SplitLayout layout;
    TRAINC_RETURN_IF_ERROR(splitLayout(t, exe.mesh(), layout));
    TensorInfo whole = t;
    whole.shape = t.globalShape;
    whole.size = t.globalSize;
    std::vector<char> all;
    TRAINC_RETURN_IF_ERROR(loadWhole(whole, file, all));
    bytes = partOf(layout, all.data(),
                   session.device().collective().coordinate(
                       t.shardAxes[size_t(layout.dim)]));
    return okStatus();
  }
  return loadWhole(t, file, bytes);
}

} // namespace

Status loadWhole(const TensorInfo &t, const std::string &file,
                 std::vector<char> &bytes) {
  if (file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0) {
    NpyArray array;
    TRAINC_RETURN_IF_ERROR(readNpy(file, array));
    if (array.dtype != t.dtype || array.shape != t.shape)
      return invalidArgument(file + " holds " + dtypeName(array.dtype) + " " +
                             shapeString(array.shape) + " but input '" +
                             t.name + "' is " + dtypeName(t.dtype) + " " +
                             shapeString(t.shape));
    bytes = std::move(array.data);
    return okStatus();
  }
  // At most the input's size is read: a larger file is an error at once.
  TRAINC_RETURN_IF_ERROR(readRegularFile(
      file,
      "input '" + t.name + "' (" + dtypeName(t.dtype) + " " +
          shapeString(t.shape) + ", " + std::to_string(t.size) + " bytes)",
      bytes, t.size));
  if (bytes.size() != t.size)
    return invalidArgument(file + " has " + std::to_string(bytes.size()) +
                           " bytes but input '" + t.name + "' (" +
                           dtypeName(t.dtype) + " " + shapeString(t.shape) +
                           ") needs " + std::to_string(t.size));
  return okStatus();
}

Status setInputFromFile(Session &session, size_t index,
                        const std::string &file) {
  const Executable &exe = session.executable();
  if (index >= exe.inputs().size())
    return invalidArgument("input " + std::to_string(index) +
                           " does not exist");
  std::vector<char> bytes;
  TRAINC_RETURN_IF_ERROR(loadInput(session, index, file, bytes));
  return session.setInput(index, bytes.data(), bytes.size());
}

Status writeOutputNpy(const Session &session, size_t index,
                      const std::string &path) {
  const Executable &exe = session.executable();
  if (index >= exe.outputs().size())
    return Status(StatusCode::kOutOfRange,
                  "output " + std::to_string(index) + " does not exist");
  uint32_t id = exe.outputs()[index];
  const TensorInfo &t = exe.tensors()[id];
  std::vector<char> bytes;
  TRAINC_RETURN_IF_ERROR(session.readWhole(id, bytes));
  if (session.device().collective().rank() != 0)
    return okStatus();
  return writeNpy(path, t.dtype, t.globalShape, bytes.data(), bytes.size());
}

std::string tensorFileName(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return s.empty() ? "output" : s;
}

} // namespace trainc
