//===- Checkpoint.cpp - Atomic, checksummed training checkpoints ----------===//

#include "train/Checkpoint.h"

#include "exec/Parts.h"

#include "io/AtomicFile.h"
#include "io/MappedFile.h"
#include "io/SafeTensors.h"
#include "train/RunState.h"

#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <thread>
#include <unistd.h>

namespace trainc {
namespace {

using Json = nlohmann::json;

/// Written; format 2 (one shard of one rank) is still read.
constexpr int kFormat = 3;
constexpr const char *kManifest = "manifest.json";
/// How long rank 0 waits for the other ranks' shards of a save.
constexpr double kShardWaitSeconds = 600;

/// "rank-00001-of-00004" + `suffix`.
std::string shardName(int rank, int worldSize, const char *suffix) {
  char name[64];
  std::snprintf(name, sizeof name, "rank-%05d-of-%05d%s", rank, worldSize,
                suffix);
  return name;
}
constexpr const char *kDigestKey = "manifest_xxh3";

std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%012" PRId64, step);
  return name;
}

/// The step of a "step-NNNNNNNNNNNN" directory name.
bool parseStepName(const std::string &name, int64_t &step) {
  if (name.size() != 17 || name.compare(0, 5, "step-") != 0)
    return false;
  step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return false;
    step = step * 10 + (name[i] - '0');
  }
  return true;
}

bool isPersistent(const TensorInfo &t) {
  return t.role == TensorRole::Parameter || t.role == TensorRole::State;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Names in `dir` (not "." or "..").
std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

/// Removes `path`, a file or a directory of files (checkpoint layouts are
/// one level deep).
void removeTree(const std::string &path) {
  if (isDirectory(path)) {
    for (const std::string &name : listDirectory(path))
      ::unlink((path + "/" + name).c_str());
    ::rmdir(path.c_str());
  } else {
    ::unlink(path.c_str());
  }
}

/// A checkpoint's small file (the manifest, `latest`, a checksum list). One
/// that is not a regular file is damage (kDataLoss), as a shard's is.
Status readWholeFile(const std::string &path, std::string &out) {
  Status s = readRegularFile(path, "the checkpoint file", out);
  return s.code() == StatusCode::kInvalidArgument
             ? Status(StatusCode::kDataLoss, s.message())
             : s;
}

/// `j` as JSON text. A string that is not UTF-8 (an executable's path: a
/// Linux path is any bytes; names are checked when an executable loads)
/// has its bad bytes replaced (U+FFFD) rather than the writer throwing.
std::string jsonText(const Json &j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

/// The checksum of a manifest: XXH3 of its canonical JSON text without the
/// checksum field itself (nlohmann::json orders object keys).
uint64_t manifestDigest(Json manifest) {
  manifest.erase(kDigestKey);
  std::string text = jsonText(manifest);
  return XXH3_64bits(text.data(), text.size());
}

/// A checkpoint read back and verified.
struct Loaded {
  RunState state;
  std::string executable;
  uint64_t modelHash = 0;
  std::vector<CheckpointSnapshot::Tensor> tensors;
};

/// The shard files of one checkpoint, each read and its safetensors header
/// parsed once.
class ShardFiles {
public:
  explicit ShardFiles(std::string dir) : dir_(std::move(dir)) {}

  /// The bytes of tensor `name` in shard `file`, which must be `bytes` long
  /// and match checksum `xxh3`.
  Status read(const std::string &file, const std::string &name, uint64_t bytes,
              const std::string &xxh3, const char *&out) {
    auto damaged = [&](const std::string &what) {
      return Status(StatusCode::kDataLoss, dir_ + ": " + what);
    };
    if (file.empty() || file.find('/') != std::string::npos ||
        file.find("..") != std::string::npos)
      return damaged("tensor '" + name + "' names shard '" + file +
                     "', which is not a file of the checkpoint");
    auto it = files_.find(file);
    if (it == files_.end()) {
      File f;
      // Mapped: a shard is read once, tensor by tensor, and release() lets
      // each one's pages go, so neither verifying a checkpoint nor
      // restoring one holds a second copy of the state.
      if (Status s = FileBytes::map(dir_ + "/" + file, "the shard", f.bytes);
          !s.ok())
        return s.code() == StatusCode::kInvalidArgument
                   ? Status(StatusCode::kDataLoss, s.message())
                   : s;
      if (f.bytes.size() < 8)
        return damaged(file + " is truncated");
      uint64_t headerSize = 0;
      for (int i = 0; i < 8; ++i)
        headerSize |= uint64_t(uint8_t(f.bytes.data()[i])) << (8 * i);
      if (headerSize > f.bytes.size() - 8)
        return damaged(file + " is truncated");
      f.header = Json::parse(f.bytes.data() + 8,
                             f.bytes.data() + 8 + headerSize, nullptr,
                             /*allow_exceptions=*/false);
      if (f.header.is_discarded() || !f.header.is_object())
        return damaged(file + " has a damaged header");
      f.dataStart = 8 + headerSize;
      it = files_.emplace(file, std::move(f)).first;
    }
    const File &f = it->second;
    if (!f.header.contains(name))
      return damaged("tensor '" + name + "' is not in " + file);
    auto offsets = f.header[name].at("data_offsets");
    uint64_t begin = offsets.at(0).get<uint64_t>(),
             end = offsets.at(1).get<uint64_t>();
    if (end < begin || end - begin != bytes)
      return damaged("tensor '" + name + "' has " +
                     std::to_string(end - begin) + " bytes in " + file +
                     ", the manifest says " + std::to_string(bytes));
    // dataStart <= size (the header fits); compared so that nothing wraps.
    if (end > f.bytes.size() - f.dataStart)
      return damaged("tensor '" + name + "' ends at byte " +
                     std::to_string(end) + " of the data of " + file +
                     ", which has " +
                     std::to_string(f.bytes.size() - f.dataStart) +
                     " (the file is truncated or its header damaged)");
    out = f.bytes.data() + f.dataStart + begin;
    if (hex64(XXH3_64bits(out, bytes)) != xxh3)
      return damaged("tensor '" + name + "' does not match its checksum in " +
                     file + " (the file is damaged)");
    return okStatus();
  }

  /// Lets the pages of `bytes` bytes at `data`, which read() returned from
  /// `file`, leave the resident set (they stay readable).
  void release(const std::string &file, const char *data,
               uint64_t bytes) const {
    auto it = files_.find(file);
    if (it != files_.end())
      it->second.bytes.releasePages(uint64_t(data - it->second.bytes.data()),
                                    bytes);
  }

private:
  struct File {
    FileBytes bytes;
    Json header;
    uint64_t dataStart = 0;
  };
  std::string dir_;
  std::map<std::string, File> files_;
};

/// Reads checkpoint `path`: its manifest (checksummed) and, with `tensors`,
/// its shards, every part checked against its checksum and, with
/// `keepBytes`, the parts of each split tensor joined whole into
/// `out.tensors` (without it, only checked).
Status loadCheckpoint(const std::string &path, Loaded &out, bool tensors,
                      bool keepBytes = true) {
  std::string manifestPath = path + "/" + kManifest, text;
  TRAINC_RETURN_IF_ERROR(readWholeFile(manifestPath, text));
  auto damaged = [&](const std::string &what) {
    return Status(StatusCode::kDataLoss, path + ": " + what);
  };
  Json manifest = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object())
    return damaged("manifest.json is not valid JSON");
  try {
    if (!manifest.contains(kDigestKey) ||
        manifest[kDigestKey].get<std::string>() !=
            hex64(manifestDigest(manifest)))
      return damaged("manifest.json does not match its checksum");
    int format = manifest.at("format").get<int>();
    if (format != 2 && format != kFormat)
      return damaged("manifest format " + std::to_string(format) +
                     " (this trainc reads 2 and " + std::to_string(kFormat) +
                     ")");
    int worldSize = manifest.at("world_size").get<int>();
    if (worldSize < 1 || (format == 2 && worldSize != 1))
      return damaged("manifest world size " + std::to_string(worldSize));
    out.state.step = manifest.at("step").get<int64_t>();
    out.state.seed = manifest.at("seed").get<uint64_t>();
    out.state.dataPosition = manifest.at("data_position").get<uint64_t>();
    out.state.dataSize = manifest.at("data_tokens").get<uint64_t>();
    out.state.trainSize = manifest.at("train_tokens").get<uint64_t>();
    if (manifest.contains("data_xxh3"))
      out.state.dataHash = std::strtoull(
          manifest.at("data_xxh3").get<std::string>().c_str(), nullptr, 16);
    out.executable = manifest.at("executable").get<std::string>();
    out.modelHash = std::strtoull(
        manifest.at("model_xxh3").get<std::string>().c_str(), nullptr, 16);

    if (!tensors)
      return okStatus();
    ShardFiles shards(path);
    for (const Json &t : manifest.at("tensors")) {
      CheckpointSnapshot::Tensor tensor;
      tensor.name = t.at("name").get<std::string>();
      tensor.shape = t.at("shape").get<std::vector<int64_t>>();
      std::string dtype = t.at("dtype").get<std::string>();
      bool known = false;
      for (int d = 0; d < kNumDTypes; ++d)
        if (dtype == dtypeName(DType(d))) {
          tensor.dtype = DType(d);
          known = true;
        }
      if (!known)
        return damaged("tensor '" + tensor.name + "' has unknown dtype " +
                       dtype);
      uint64_t whole = dtypeSize(tensor.dtype);
      for (int64_t d : tensor.shape) {
        if (d < 0 || (d > 0 && whole > (uint64_t(1) << 48) / uint64_t(d)))
          return damaged("tensor '" + tensor.name + "' has an invalid shape");
        whole *= uint64_t(d);
      }
      // Format 2: one shard, the tensor whole. Format 3: its parts in order.
      Json parts = format == 2 ? Json::array({{{"file", t.at("shard")},
                                               {"bytes", t.at("bytes")},
                                               {"xxh3", t.at("xxh3")}}})
                               : t.at("shards");
      if (!parts.is_array() || parts.empty())
        return damaged("tensor '" + tensor.name + "' lists no shards");
      // Parts in order, each padded past the end of the split dimension:
      // every one is exactly a part's size.
      SplitLayout layout;
      layout.wholeShape = tensor.shape;
      layout.elementBytes = dtypeSize(tensor.dtype);
      layout.parts = int64_t(parts.size());
      if (parts.size() > 1) {
        const Json &sharding = t.at("sharding");
        if (!sharding.is_object() ||
            sharding.value("parts", int64_t(0)) != layout.parts)
          return damaged("tensor '" + tensor.name + "' lists " +
                         std::to_string(parts.size()) +
                         " shards but its sharding says otherwise");
        layout.dim = sharding.value("dim", 0);
        if (layout.dim < 0 || layout.dim >= int(tensor.shape.size()))
          return damaged("tensor '" + tensor.name + "' cannot be split along " +
                         "dimension " + std::to_string(layout.dim) + " into " +
                         std::to_string(parts.size()) + " parts");
      }
      uint64_t partBytes = parts.size() == 1 ? whole : layout.partBytes();
      for (const Json &part : parts) {
        const char *data = nullptr;
        uint64_t bytes = part.at("bytes").get<uint64_t>();
        if (bytes != partBytes)
          return damaged("tensor '" + tensor.name + "' has a part of " +
                         std::to_string(bytes) + " bytes, not " +
                         std::to_string(partBytes));
        std::string file = part.at("file").get<std::string>();
        TRAINC_RETURN_IF_ERROR(shards.read(file, tensor.name, bytes,
                                           part.at("xxh3").get<std::string>(),
                                           data));
        if (keepBytes)
          tensor.bytes.insert(tensor.bytes.end(), data, data + bytes);
        shards.release(file, data, bytes);
      }
      if (!keepBytes)
        continue;
      if (parts.size() > 1)
        tensor.bytes = wholeOf(layout, tensor.bytes.data());
      out.tensors.push_back(std::move(tensor));
    }
  } catch (const Json::exception &e) {
    return damaged(std::string("manifest.json is malformed: ") + e.what());
  }
  return okStatus();
}

/// Checkpoint names of `dir`, newest first: `latest`'s target, then every
/// step-* directory by step.
std::vector<std::string> candidates(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const std::string &name : listDirectory(dir)) {
    int64_t step;
    if (parseStepName(name, step) && isDirectory(dir + "/" + name))
      steps.push_back({step, name});
  }
  std::sort(steps.rbegin(), steps.rend());
  std::vector<std::string> names;
  std::string latest;
  if (readWholeFile(dir + "/latest", latest).ok()) {
    while (!latest.empty() && (latest.back() == '\n' || latest.back() == ' '))
      latest.pop_back();
    int64_t step;
    if (parseStepName(latest, step) && isDirectory(dir + "/" + latest))
      names.push_back(latest);
  }
  for (const auto &entry : steps)
    if (std::find(names.begin(), names.end(), entry.second) == names.end())
      names.push_back(entry.second);
  return names;
}

/// Milliseconds to sleep inside a save, between the shard and the
/// manifest (TRAINC_TEST_CHECKPOINT_DELAY_MS): a test hook that widens the
/// window a fault-injection test aims its kill -9 at.
int testSaveDelayMs() {
  const char *v = std::getenv("TRAINC_TEST_CHECKPOINT_DELAY_MS");
  return v ? std::atoi(v) : 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// Lock
//===----------------------------------------------------------------------===//

Status CheckpointLock::acquire(const std::string &dir,
                               std::unique_ptr<CheckpointLock> &out) {
  if (!isDirectory(dir) && ::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return ioError("cannot create the checkpoint directory", dir, errno);
  if (!isDirectory(dir))
    return Status(StatusCode::kFailedPrecondition,
                  dir + ": not a directory (a checkpoint directory is)");
  std::string path = dir + "/lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0)
    return ioError("cannot create", path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    char pid[32] = {0};
    ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    if (error == EWOULDBLOCK)
      return Status(
          StatusCode::kFailedPrecondition,
          dir + " is in use by another run" +
              (n > 0 ? " (pid " + std::string(pid, strcspn(pid, "\n")) + ")"
                     : std::string()) +
              "; two runs cannot write one checkpoint directory");
    return ioError("cannot lock", path, error);
  }
  std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    int error = errno;
    ::close(fd);
    return ioError("cannot write", path, error);
  }
  out.reset(new CheckpointLock(dir, fd));
  return okStatus();
}

CheckpointLock::~CheckpointLock() { ::close(fd_); }

//===----------------------------------------------------------------------===//
// Save
//===----------------------------------------------------------------------===//

Status checkSpaceForCheckpoint(const std::string &dir, const Executable &exe) {
  uint64_t need = 0;
  for (const TensorInfo &t : exe.tensors())
    if (isPersistent(t))
      need += t.size;
  need += need / 64 + (1 << 16); // the safetensors header and the manifest
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) != 0)
    return ioError("cannot query the free space of", dir, errno);
  uint64_t free = uint64_t(fs.f_bavail) * fs.f_frsize;
  if (free < need)
    return Status(StatusCode::kFailedPrecondition,
                  dir + ": " + std::to_string(free) +
                      " bytes free, but one checkpoint needs about " +
                      std::to_string(need));
  return okStatus();
}

namespace {

/// What differs between a checkpoint's tensors and `exe`'s persistent
/// ones, whose hashes differ: tensors one side lacks or holds in another
/// dtype or shape (a few named), and whether every parameter of `exe`
/// matches (then it is the optimizer state that differs), else the
/// parameters' initial values.
std::string
modelDifference(const std::vector<CheckpointSnapshot::Tensor> &saved,
                const Executable &exe) {
  std::map<std::string, std::string> inFile, inExe;
  std::set<std::string> parameters;
  for (const CheckpointSnapshot::Tensor &t : saved)
    inFile[t.name] = std::string(dtypeName(t.dtype)) + shapeString(t.shape);
  for (const TensorInfo &t : exe.tensors())
    if (isPersistent(t)) {
      inExe[t.name] =
          std::string(dtypeName(t.dtype)) + shapeString(t.globalShape);
      if (t.role == TensorRole::Parameter)
        parameters.insert(t.name);
    }
  std::vector<std::string> differ;
  bool parametersMatch = true;
  for (const auto &[name, type] : inFile) {
    auto it = inExe.find(name);
    if (it == inExe.end())
      differ.push_back("'" + name + "' only in the checkpoint");
    else if (it->second != type)
      differ.push_back("'" + name + "' " + type + " in the checkpoint, " +
                       it->second + " here");
    parametersMatch &= !parameters.count(name) || it->second == type;
  }
  for (const auto &[name, type] : inExe)
    if (!inFile.count(name)) {
      differ.push_back("'" + name + "' only here");
      parametersMatch &= !parameters.count(name);
    }
  if (differ.empty())
    return "the same tensors, but initial values other than " + exe.origin() +
           "'s (another model, or other initial weights)";
  std::string list;
  for (size_t i = 0; i < differ.size() && i < 3; ++i)
    list += (i ? ", " : "") + differ[i];
  if (differ.size() > 3)
    list += " and " + std::to_string(differ.size() - 3) + " more";
  if (parametersMatch)
    return "every parameter of " + exe.origin() +
           " is in it, but the optimizer state differs (another optimizer, "
           "precision or loss scaling): " +
           list;
  return "its tensors differ from " + exe.origin() + "'s: " + list;
}

} // namespace

Status snapshotTrainer(const Trainer &trainer, const Dataset *data,
                       CheckpointSnapshot &out) {
  const Session &session = trainer.session();
  const Executable &exe = session.executable();
  Collective &ranks = session.device().hostCollective();
  out.state = trainer.state();
  out.state.dataSize = data ? data->size() : 0;
  out.state.trainSize = data ? data->trainSize() : 0;
  out.state.dataHash = data ? data->contentHash() : 0;
  out.executable = exe.origin();
  out.modelHash = exe.persistentHash();
  out.executableHash = exe.contentHash();
  out.rank = ranks.rank();
  out.worldSize = ranks.worldSize();
  out.mesh.clear();
  for (const MeshAxisInfo &axis : exe.mesh())
    out.mesh.push_back({axis.name, axis.size});
  // Every rank saves the same step into rank 0's staging directory, named
  // by rank 0's token: one per process, so that rank 0's pruning knows
  // every staging directory of its own run (another rank may be writing the
  // next save's while rank 0 still publishes this one).
  static const uint64_t processToken =
      (uint64_t(::getpid()) << 32) ^
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  out.token = processToken;
  if (out.worldSize > 1) {
    int64_t mine[2] = {out.state.step, int64_t(out.token)};
    std::vector<int64_t> all(size_t(2 * out.worldSize));
    CollectiveSite site;
    site.step = out.state.step;
    site.what = "the start of a checkpoint";
    TRAINC_RETURN_IF_ERROR(
        ranks.allGather(-1, mine, all.data(), 2, DType::I64,
                        session.device().communicationStream(), site));
    for (int r = 0; r < out.worldSize; ++r)
      if (all[size_t(2 * r)] != out.state.step)
        return internalError("rank " + std::to_string(r) + " saves step " +
                             std::to_string(all[size_t(2 * r)]) +
                             " while rank " + std::to_string(out.rank) +
                             " saves step " + std::to_string(out.state.step));
    out.token = uint64_t(all[1]);
  }
  out.tensors.clear();
  for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
    const TensorInfo &t = exe.tensors()[id];
    if (!isPersistent(t))
      continue;
    CheckpointSnapshot::Tensor tensor;
    tensor.name = t.name;
    tensor.dtype = t.dtype;
    tensor.shape = t.globalShape;
    if (t.isSplit()) {
      SplitLayout layout;
      TRAINC_RETURN_IF_ERROR(splitLayout(t, exe.mesh(), layout));
      tensor.dim = layout.dim;
      int axis = t.shardAxes[size_t(layout.dim)];
      tensor.axis = exe.mesh()[size_t(axis)].name;
      tensor.parts = exe.mesh()[size_t(axis)].size;
      tensor.part = ranks.coordinate(axis);
      // One rank writes each part: the one at 0 on every other axis.
      for (size_t a = 0; a < exe.mesh().size(); ++a)
        if (int(a) != axis && ranks.coordinate(int(a)) != 0)
          tensor.written = false;
    } else {
      tensor.written = out.rank == 0;
    }
    if (tensor.written) {
      tensor.bytes.resize(t.size);
      TRAINC_RETURN_IF_ERROR(session.readTensor(id, tensor.bytes.data()));
    }
    out.tensors.push_back(std::move(tensor));
  }
  return okStatus();
}

namespace {
Status findAndLoadCheckpoint(const std::string &dir, CheckpointChoice &out,
                             Loaded &loaded, bool tensors);
} // namespace

Status writeCheckpoint(const std::string &dir,
                       const CheckpointSnapshot &snapshot, int keepLast,
                       const CheckpointLock *lock) {
  bool publisher = snapshot.rank == 0;
  std::unique_ptr<CheckpointLock> own;
  if (publisher && (!lock || lock->dir() != dir)) {
    TRAINC_RETURN_IF_ERROR(CheckpointLock::acquire(dir, own));
    // A save from outside a run that holds the directory (the C API's
    // trainc_trainer_save) into one holding another model's checkpoints,
    // or newer ones, would make `latest` name this one: that run's
    // --resume would then refuse the directory or go back. A run's own
    // saves are checked when it takes the directory (trainc-run).
    CheckpointChoice newest;
    Loaded loaded;
    if (findAndLoadCheckpoint(dir, newest, loaded, /*tensors=*/false).ok() &&
        newest.name.compare(0, 5, "step-") == 0) {
      if (loaded.modelHash != snapshot.modelHash)
        return Status(StatusCode::kFailedPrecondition,
                      dir +
                          " holds the checkpoints of another model (the "
                          "newest, " +
                          newest.name + ", of " + loaded.executable +
                          "); save into another directory");
      if (newest.state.step > snapshot.state.step)
        return Status(StatusCode::kFailedPrecondition,
                      dir + " holds a newer checkpoint (" + newest.name +
                          ") than this one (step " +
                          std::to_string(snapshot.state.step) +
                          "); save into another directory");
    }
  }
  std::string name = stepName(snapshot.state.step);
  std::string token = "-" + hex64(snapshot.token);
  std::string staging = dir + "/.tmp-" + name + token;
  if (::mkdir(staging.c_str(), 0777) != 0 &&
      !(errno == EEXIST && isDirectory(staging)))
    return ioError("cannot create", staging, errno);
  auto fail = [&](Status s) {
    removeTree(staging);
    return s;
  };

  // This rank's shard, then the list of its checksums: the sign, for rank 0,
  // that the shard is complete.
  std::string shard =
      shardName(snapshot.rank, snapshot.worldSize, ".safetensors");
  std::vector<NamedTensor> named;
  Json mine = Json::object();
  for (const CheckpointSnapshot::Tensor &t : snapshot.tensors) {
    if (!t.written)
      continue;
    std::vector<int64_t> shape = t.shape;
    if (t.parts > 1 && !shape.empty())
      shape[0] = (shape[0] + t.parts - 1) / t.parts;
    named.push_back({t.name, t.dtype, shape, t.bytes.data(), t.bytes.size()});
    mine[t.name] = {
        {"part", t.part},
        {"bytes", t.bytes.size()},
        {"xxh3", hex64(XXH3_64bits(t.bytes.data(), t.bytes.size()))}};
  }
  if (Status s = writeSafetensors(staging + "/" + shard, named); !s.ok())
    return publisher ? fail(s) : s;
  std::string listText = jsonText(mine) + "\n";
  if (Status s = writeFileAtomically(
          staging + "/" +
              shardName(snapshot.rank, snapshot.worldSize, ".xxh3.json"),
          [&](std::ostream &out) {
            out.write(listText.data(), listText.size());
          });
      !s.ok())
    return publisher ? fail(s) : s;
  if (int ms = testSaveDelayMs())
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (!publisher)
    return okStatus();

  // Rank 0: every rank's checksums, then the manifest.
  std::vector<Json> lists(size_t(snapshot.worldSize));
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < snapshot.worldSize; ++r) {
    std::string path =
        staging + "/" + shardName(r, snapshot.worldSize, ".xxh3.json");
    std::string text;
    while (!readWholeFile(path, text).ok()) {
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > kShardWaitSeconds)
        return fail(Status(StatusCode::kUnavailable,
                           staging + ": rank " + std::to_string(r) +
                               " did not write its shard within " +
                               std::to_string(int(kShardWaitSeconds)) +
                               " s; `latest` still names the previous "
                               "checkpoint"));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    lists[size_t(r)] = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (lists[size_t(r)].is_discarded() || !lists[size_t(r)].is_object())
      return fail(Status(StatusCode::kDataLoss,
                         path + " is not the list of checksums rank " +
                             std::to_string(r) + " writes"));
  }
  Json tensors = Json::array();
  for (const CheckpointSnapshot::Tensor &t : snapshot.tensors) {
    Json shards = Json::array();
    for (int64_t part = 0; part < t.parts; ++part) {
      // The rank that wrote this part (the first that lists it).
      int writer = -1;
      for (int r = 0; r < snapshot.worldSize && writer < 0; ++r)
        if (lists[size_t(r)].contains(t.name) &&
            lists[size_t(r)][t.name].value("part", int64_t(-1)) == part)
          writer = r;
      if (writer < 0)
        return fail(internalError("no rank wrote part " + std::to_string(part) +
                                  " of '" + t.name + "' in " + staging));
      const Json &entry = lists[size_t(writer)][t.name];
      shards.push_back(
          {{"file", shardName(writer, snapshot.worldSize, ".safetensors")},
           {"bytes", entry.at("bytes")},
           {"xxh3", entry.at("xxh3")}});
    }
    Json sharding = "replicated";
    if (t.parts > 1)
      sharding = {{"axis", t.axis}, {"dim", t.dim}, {"parts", t.parts}};
    tensors.push_back({{"name", t.name},
                       {"dtype", dtypeName(t.dtype)},
                       {"shape", t.shape},
                       {"sharding", sharding},
                       {"shards", shards}});
  }
  for (int r = 0; r < snapshot.worldSize; ++r)
    ::unlink((staging + "/" + shardName(r, snapshot.worldSize, ".xxh3.json"))
                 .c_str());
  Json mesh = Json::object();
  for (const auto &[axis, size] : snapshot.mesh)
    mesh[axis] = size;
  Json manifest = {{"format", kFormat},
                   {"step", snapshot.state.step},
                   {"seed", snapshot.state.seed},
                   {"data_position", snapshot.state.dataPosition},
                   {"data_tokens", snapshot.state.dataSize},
                   {"train_tokens", snapshot.state.trainSize},
                   {"data_xxh3", hex64(snapshot.state.dataHash)},
                   {"executable", snapshot.executable},
                   {"executable_xxh3", hex64(snapshot.executableHash)},
                   {"model_xxh3", hex64(snapshot.modelHash)},
                   {"world_size", snapshot.worldSize},
                   {"mesh", mesh},
                   {"tensors", tensors}};
  manifest[kDigestKey] = hex64(manifestDigest(manifest));
  std::string text = jsonText(manifest, 1) + "\n";
  if (Status s = writeFileAtomically(
          staging + "/" + kManifest,
          [&](std::ostream &out) { out.write(text.data(), text.size()); });
      !s.ok())
    return fail(s);
  TRAINC_RETURN_IF_ERROR(syncDirectory(staging));

  // Publish: rename into place (over an older save of the same step), make
  // that durable, verify what is on disk, and only then move `latest`.
  std::string final = dir + "/" + name;
  if (isDirectory(final)) {
    std::string old = dir + "/.old-" + name + token;
    if (std::rename(final.c_str(), old.c_str()) != 0)
      return fail(ioError("cannot replace", final, errno));
    removeTree(old);
  }
  if (std::rename(staging.c_str(), final.c_str()) != 0)
    return fail(ioError("cannot rename " + staging + " to it", final, errno));
  TRAINC_RETURN_IF_ERROR(syncDirectory(dir));
  Loaded check;
  // Every shard re-read and checked against its checksum; the bytes are
  // not kept (the snapshot has them), so this costs no memory.
  if (Status s = loadCheckpoint(final, check, /*tensors=*/true,
                                /*keepBytes=*/false);
      !s.ok())
    return Status(StatusCode::kDataLoss,
                  "the checkpoint just written does not verify (" +
                      s.message() + "); `latest` still names the previous one");
  TRAINC_RETURN_IF_ERROR(writeFileAtomically(
      dir + "/latest", [&](std::ostream &out) { out << name << "\n"; }));

  // Prune: the newest keepLast checkpoints stay; staging and replaced
  // directories of killed runs go (this run holds the lock; its own ranks
  // may be staging a newer save already, under this process's token).
  std::vector<std::pair<int64_t, std::string>> steps;
  for (const std::string &entry : listDirectory(dir)) {
    int64_t step;
    bool ours =
        entry.size() >= token.size() &&
        entry.compare(entry.size() - token.size(), token.size(), token) == 0;
    if (parseStepName(entry, step))
      steps.push_back({step, entry});
    else if (!ours && (entry.compare(0, 5, ".tmp-") == 0 ||
                       entry.compare(0, 5, ".old-") == 0))
      removeTree(dir + "/" + entry);
  }
  std::sort(steps.rbegin(), steps.rend());
  if (keepLast > 0)
    for (size_t i = size_t(keepLast); i < steps.size(); ++i)
      if (steps[i].second != name)
        removeTree(dir + "/" + steps[i].second);
  return syncDirectory(dir);
}

//===----------------------------------------------------------------------===//
// Background writes
//===----------------------------------------------------------------------===//

struct AsyncCheckpointWriter::State {
  std::thread worker;
  Status result = okStatus();
};

AsyncCheckpointWriter::AsyncCheckpointWriter() : state_(new State) {}

AsyncCheckpointWriter::~AsyncCheckpointWriter() { (void)wait(); }

Status AsyncCheckpointWriter::wait() {
  if (state_->worker.joinable())
    state_->worker.join();
  Status result = state_->result;
  state_->result = okStatus();
  return result;
}

Status AsyncCheckpointWriter::submit(std::string dir,
                                     CheckpointSnapshot snapshot, int keepLast,
                                     const CheckpointLock *lock) {
  TRAINC_RETURN_IF_ERROR(wait());
  // The worker owns the snapshot; the result is read only after a join.
  state_->worker =
      std::thread([state = state_.get(), lock, keepLast, dir = std::move(dir),
                   snapshot = std::move(snapshot)]() {
        state->result = writeCheckpoint(dir, snapshot, keepLast, lock);
      });
  return okStatus();
}

//===----------------------------------------------------------------------===//
// Restore
//===----------------------------------------------------------------------===//

namespace {

/// findCheckpoint, keeping what it read and verified in `loaded` (empty for
/// a format-1 run), so that a restore reads the checkpoint once.
Status findAndLoadCheckpoint(const std::string &dir, CheckpointChoice &out,
                             Loaded &loaded, bool tensors = true) {
  out = CheckpointChoice();
  if (!isDirectory(dir))
    return notFound(dir + ": no such checkpoint directory");
  for (const std::string &name : candidates(dir)) {
    loaded = Loaded();
    Status s = loadCheckpoint(dir + "/" + name, loaded, tensors);
    if (!s.ok()) {
      out.warnings.push_back(s.message() + "; skipped");
      continue;
    }
    out.state = loaded.state;
    out.name = name;
    return okStatus();
  }
  loaded = Loaded();
  // A run saved before format 2: run_state.json and .npy files.
  struct stat st;
  if (stat((dir + "/run_state.json").c_str(), &st) == 0) {
    TRAINC_RETURN_IF_ERROR(readRunState(dir, out.state));
    out.name = "run_state.json (format 1, no checksums)";
    return okStatus();
  }
  std::string why;
  for (const std::string &w : out.warnings)
    why += "\n  " + w;
  return Status(
      StatusCode::kDataLoss,
      dir + ": no good checkpoint" +
          (why.empty() ? " (is it a --save-state directory?)" : ":" + why));
}

} // namespace

Status findCheckpoint(const std::string &dir, CheckpointChoice &out) {
  Loaded loaded;
  return findAndLoadCheckpoint(dir, out, loaded, /*tensors=*/false);
}

Status restoreCheckpoint(const std::string &dir, Trainer &trainer,
                         const Dataset *data, CheckpointChoice &choice) {
  Loaded loaded;
  TRAINC_RETURN_IF_ERROR(findAndLoadCheckpoint(dir, choice, loaded));
  if (choice.name.compare(0, 5, "step-") != 0)
    return restoreRun(dir, trainer, data); // format 1
  std::string where = dir + "/" + choice.name;
  if (loaded.modelHash != trainer.session().executable().persistentHash())
    return invalidArgument(
        where + " was written by a different model (" + loaded.executable +
        "): " +
        modelDifference(loaded.tensors, trainer.session().executable()));
  TRAINC_RETURN_IF_ERROR(
      checkSameData(where, loaded.state, trainer.state(), data));
  Session &session = trainer.session();
  const Executable &exe = session.executable();
  size_t k = 0;
  for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
    const TensorInfo &t = exe.tensors()[id];
    if (!isPersistent(t))
      continue;
    auto it = std::find_if(
        loaded.tensors.begin(), loaded.tensors.end(),
        [&](const CheckpointSnapshot::Tensor &l) { return l.name == t.name; });
    if (it == loaded.tensors.end())
      return invalidArgument(where + " has no tensor '" + t.name + "'");
    if (it->dtype != t.dtype || it->shape != t.globalShape)
      return invalidArgument(
          where + ": '" + t.name + "' is " + dtypeName(it->dtype) + " " +
          shapeString(it->shape) + " but the executable's " +
          dtypeName(t.dtype) + " " + shapeString(t.globalShape));
    TRAINC_RETURN_IF_ERROR(
        session.setPersistent(id, it->bytes.data(), it->bytes.size()));
    ++k;
  }
  if (k != loaded.tensors.size())
    return invalidArgument(
        where + " has " + std::to_string(loaded.tensors.size()) +
        " tensors; the executable persists " + std::to_string(k));
  trainer.restore(loaded.state);
  return okStatus();
}

Status rollbackToCheckpoint(const std::string &dir, Trainer &trainer,
                            const Dataset *data, CheckpointChoice &choice) {
  uint64_t position = trainer.state().dataPosition;
  TRAINC_RETURN_IF_ERROR(restoreCheckpoint(dir, trainer, data, choice));
  RunState state = trainer.state();
  state.dataPosition = position;
  trainer.restore(state);
  return okStatus();
}

} // namespace trainc
