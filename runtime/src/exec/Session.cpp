//===- Session.cpp - Running an executable on a device --------------------===//

#include "exec/Session.h"

#include "exec/Parts.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace trainc {
namespace {

/// FNV-1a over a byte range, for the write check.
uint64_t hashBytes(const char *data, uint64_t size, uint64_t h) {
  for (uint64_t i = 0; i < size; ++i)
    h = (h ^ uint8_t(data[i])) * 0x100000001b3ull;
  return h;
}

} // namespace

Session::~Session() = default;

Status Session::create(std::shared_ptr<const Executable> executable,
                       const SessionOptions &options,
                       std::unique_ptr<Session> &out) {
  auto session = std::unique_ptr<Session>(new Session());
  session->executable_ = std::move(executable);
  session->options_ = options;
  const Executable &exe = *session->executable_;
  // The ranks: a program for a mesh runs on the world of ranks the MPI
  // launcher started; a program for one rank runs alone on each.
  std::shared_ptr<Collective> world;
  TRAINC_RETURN_IF_ERROR(worldCollective(WorldOptions(), world));
  int64_t ranks = exe.numRanks();
  if (ranks == 1 && world->worldSize() > 1 && exe.isTrainingStep())
    return invalidArgument(
        exe.origin() + " is a training step for one rank, but " +
        std::to_string(world->worldSize()) +
        " ranks were launched: each would train alone. Compile it with "
        "--mesh data=" +
        std::to_string(world->worldSize()) +
        " --data-parallel, or run it without mpirun");
  session->device_ = options.device;
  if (!session->device_)
    TRAINC_RETURN_IF_ERROR(createDevice(
        options.deviceName, ranks > 1 ? world : nullptr, session->device_));
  Device &device = *session->device_;
  if (ranks > 1) {
    std::vector<int64_t> sizes;
    for (const MeshAxisInfo &axis : exe.mesh())
      sizes.push_back(axis.size);
    Status s = device.collective().setMesh(sizes, exe.contentHash());
    if (!s.ok())
      return Status(s.code(), exe.origin() + ": " + s.message());
  }
  Stream &stream = device.computeStream();
  if (options.checkWrites && !device.hostVisible())
    return invalidArgument("--check-writes needs a host-visible device, not " +
                           device.name());
  for (const ArenaInfo &arena : exe.arenas()) {
    std::unique_ptr<Buffer> buffer;
    Status s = device.allocate(arena.size, kTensorAlignment, buffer);
    if (!s.ok())
      return Status(s.code(), "arena '" + arena.name + "': " + s.message());
    session->arenas_.push_back(buffer->data());
    session->arenaBuffers_.push_back(std::move(buffer));
  }
  // Where each constant tensor's bytes are in session->constants_.
  std::vector<uint64_t> constantAt(exe.tensors().size(), 0);
  if (device.hostVisible()) {
    // The constant tensors (not the parameters' initial values, which go
    // to the arenas below) are copied into memory of the session's own:
    // after this function nothing reads the file's mapping, so a file
    // rewritten in place or truncated while the session runs changes
    // nothing and faults nothing (io/MappedFile.h).
    uint64_t total = 0;
    for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
      const TensorInfo &t = exe.tensors()[id];
      if (t.role != TensorRole::Constant || t.splat)
        continue;
      constantAt[id] = total;
      total +=
          (t.size + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    }
    TRAINC_RETURN_IF_ERROR(device.allocate(
        std::max<uint64_t>(total, 1), kTensorAlignment, session->constants_));
    for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
      const TensorInfo &t = exe.tensors()[id];
      if (t.role != TensorRole::Constant || t.splat)
        continue;
      std::memcpy(session->constants_->data() + constantAt[id],
                  exe.constants() + t.offset, t.size);
      exe.releaseConstants(t.offset, t.size);
    }
  } else {
    // A device with memory of its own copies the whole section.
    TRAINC_RETURN_IF_ERROR(device.importConstants(
        exe.constants(), exe.constantsSize(), session->constants_));
    exe.releaseConstants(0, exe.constantsSize());
    for (uint32_t id = 0; id < exe.tensors().size(); ++id)
      constantAt[id] = exe.tensors()[id].offset;
  }
  session->touched_.assign(exe.arenas().size(), 0);
  session->inputSet_.assign(exe.inputs().size(), false);
  if (options.profile)
    session->instructionSeconds_.assign(exe.instructions().size(), 0.0);
  // Copies a tensor's stored value (at `at` in the constant section) to
  // `dst` on the device: in place, or a splat repeated over its size.
  std::vector<char> expanded;
  auto copyValue = [&](const TensorInfo &t, uint64_t at, char *dst) -> Status {
    const char *src = exe.constants() + at;
    if (!t.splat) {
      TRAINC_RETURN_IF_ERROR(device.copyToDevice(dst, src, t.size, stream));
      // Parameters and state live in the arena from now on.
      if (t.role != TensorRole::Constant)
        exe.releaseConstants(at, t.size);
      return okStatus();
    }
    size_t width = dtypeSize(t.dtype);
    expanded.resize(t.size);
    for (uint64_t pos = 0; pos < t.size; pos += width)
      std::memcpy(expanded.data() + pos, src, width);
    TRAINC_RETURN_IF_ERROR(
        device.copyToDevice(dst, expanded.data(), t.size, stream));
    // The staging buffer is reused: the copy must be done first.
    return stream.synchronize();
  };
  // Where each tensor's bytes are: arenas, the constant section, or an
  // expanded splat.
  session->data_.resize(exe.tensors().size());
  for (uint32_t id = 0; id < exe.tensors().size(); ++id) {
    const TensorInfo &t = exe.tensors()[id];
    if (t.role == TensorRole::Constant && t.splat) {
      std::unique_ptr<Buffer> buffer;
      TRAINC_RETURN_IF_ERROR(device.allocate(t.size, kTensorAlignment, buffer));
      TRAINC_RETURN_IF_ERROR(copyValue(t, t.offset, buffer->data()));
      session->data_[id] = buffer->data();
      session->expanded_.push_back(std::move(buffer));
    } else if (t.role == TensorRole::Constant) {
      session->data_[id] = session->constants_->data() + constantAt[id];
    } else {
      session->data_[id] = session->arenas_[t.arena] + t.offset;
    }
    if (t.role != TensorRole::Parameter && t.role != TensorRole::State)
      continue;
    if (!t.isSplit() || t.splat) {
      // A splat's part (zero moments) is the same element repeated; the
      // padding rows get it too, and are never read as part of the whole.
      TRAINC_RETURN_IF_ERROR(copyValue(t, t.initOffset, session->data_[id]));
      continue;
    }
    // A split parameter's initial value is the whole tensor: this rank
    // keeps its part, as when one is loaded.
    TRAINC_RETURN_IF_ERROR(session->setPersistent(
        id, exe.constants() + t.initOffset, t.globalSize));
    exe.releaseConstants(t.initOffset, t.globalSize);
  }
  TRAINC_RETURN_IF_ERROR(stream.synchronize());
  // The hashes a checkpoint records, while the file is the one loaded
  // (each is computed once): no later save reads the mapping.
  if (exe.isTrainingStep()) {
    exe.contentHash();
    exe.persistentHash();
  }
  out = std::move(session);
  return okStatus();
}

TensorRef Session::ref(uint32_t id) const {
  const TensorInfo &t = executable_->tensors()[id];
  TensorRef r;
  r.dtype = t.dtype;
  r.rank = static_cast<int>(t.shape.size());
  r.dims = t.shape.data();
  r.data = data_[id];
  return r;
}

Status Session::setInput(size_t index, const void *data, size_t bytes) {
  const Executable &exe = *executable_;
  if (index >= exe.inputs().size())
    return invalidArgument("input " + std::to_string(index) +
                           " does not exist (the executable has " +
                           std::to_string(exe.inputs().size()) + " inputs)");
  uint32_t id = exe.inputs()[index];
  const TensorInfo &t = exe.tensors()[id];
  if (bytes != t.size)
    return invalidArgument(
        "input '" + t.name + "' needs " + std::to_string(t.size) + " bytes (" +
        describeTensor(exe.tensors(), id) + "), got " + std::to_string(bytes));
  TRAINC_RETURN_IF_ERROR(device_->copyToDevice(
      arenas_[t.arena] + t.offset, data, bytes, device_->computeStream()));
  touched_[t.arena] = std::max(touched_[t.arena], t.offset + t.size);
  inputSet_[index] = true;
  return okStatus();
}

Status Session::checkedRun(size_t index, const KernelCall &call) {
  const Executable &exe = *executable_;
  const InstructionInfo &inst = exe.instructions()[index];
  // The bytes the instruction may write: its results and, since waiting
  // for one collective (collective_done) lets MPI advance the others, the
  // pending buffers of every collective in flight (their *_start's
  // results).
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> holes(arenas_.size());
  auto mayWrite = [&](const InstructionInfo &writer) {
    for (uint32_t id : writer.results) {
      const TensorInfo &t = exe.tensors()[id];
      holes[t.arena].push_back({t.offset, t.offset + t.size});
    }
  };
  mayWrite(inst);
  if (call.context && call.context->inFlight)
    for (const CollectivesInFlight::Entry &e : call.context->inFlight->entries)
      mayWrite(exe.instructions()[size_t(e.instruction)]);
  for (auto &arena : holes)
    std::sort(arena.begin(), arena.end());
  // Hash every arena byte outside them before and after the kernel.
  auto hashOutside = [&] {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t a = 0; a < arenas_.size(); ++a) {
      uint64_t pos = 0;
      for (auto [begin, end] : holes[a]) {
        if (begin > pos)
          h = hashBytes(arenas_[a] + pos, begin - pos, h);
        pos = std::max(pos, end);
      }
      uint64_t size = exe.arenas()[a].size;
      if (size > pos)
        h = hashBytes(arenas_[a] + pos, size - pos, h);
    }
    return h;
  };
  uint64_t before = hashOutside();
  TRAINC_RETURN_IF_ERROR(device_->launch(call));
  if (hashOutside() != before)
    return internalError("instruction " + std::to_string(index) + " (" +
                         opcodeName(inst.op) +
                         ") wrote outside its result buffers");
  return okStatus();
}

Status Session::run() {
  const Executable &exe = *executable_;
  for (size_t i = 0; i < inputSet_.size(); ++i)
    if (!inputSet_[i])
      return Status(StatusCode::kFailedPrecondition,
                    "input '" + exe.tensors()[exe.inputs()[i]].name +
                        "' was not set before run()");
  if (options_.profile) {
    if (profiledRuns_ == 1 && !profileSkipsFirstRun_) {
      std::fill(instructionSeconds_.begin(), instructionSeconds_.end(), 0.0);
      profiledRuns_ = 0;
      profileSkipsFirstRun_ = true;
    }
    ++profiledRuns_;
  }
  std::vector<TensorRef> refs;
  Stream &stream = device_->computeStream();
  KernelContext context;
  context.device = device_.get();
  context.stream = &stream;
  context.collective = &device_->collective();
  context.step = step_;
  CollectivesInFlight inFlight;
  context.inFlight = &inFlight;
  for (size_t i = 0; i < exe.instructions().size(); ++i) {
    const InstructionInfo &inst = exe.instructions()[i];
    refs.clear();
    for (uint32_t id : inst.operands) {
      refs.push_back(ref(id));
      const TensorInfo &t = exe.tensors()[id];
      if (t.role != TensorRole::Constant)
        touched_[t.arena] = std::max(touched_[t.arena], t.offset + t.size);
    }
    size_t firstResult = refs.size();
    for (uint32_t id : inst.results) {
      refs.push_back(ref(id));
      const TensorInfo &t = exe.tensors()[id];
      touched_[t.arena] = std::max(touched_[t.arena], t.offset + t.size);
    }
    KernelCall call;
    call.op = inst.op;
    call.inputs = {refs.data(), int64_t(firstResult)};
    call.outputs = refs.data() + firstResult;
    call.numOutputs = static_cast<int>(inst.results.size());
    call.ints = {inst.ints.data(), int64_t(inst.ints.size())};
    call.floats = {inst.floats.data(), int64_t(inst.floats.size())};
    call.context = &context;
    context.instruction = int64_t(i);
    auto start = options_.profile ? std::chrono::steady_clock::now()
                                  : std::chrono::steady_clock::time_point();
    Status s =
        options_.checkWrites ? checkedRun(i, call) : device_->launch(call);
    // A device that queues its work (a GPU) is waited for, so the time is
    // the instruction's own, not its launch's or a queue's wait.
    if (options_.profile && s.ok() && !device_->hostVisible())
      s = stream.synchronize();
    if (options_.profile)
      instructionSeconds_[i] += std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
    if (!s.ok())
      return Status(s.code(),
                    "instruction " + std::to_string(i) + ": " + s.message());
    // MPI advances nonblocking collectives only inside MPI calls.
    if (!inFlight.entries.empty())
      context.collective->progress();
  }
  // Every started collective has ended (the compiler pairs them; a file
  // that does not is refused here, after its collectives complete).
  if (!inFlight.entries.empty()) {
    int64_t started = inFlight.entries.front().instruction;
    for (const CollectivesInFlight::Entry &e : inFlight.entries)
      (void)context.collective->finish(e.handle, CollectiveSite());
    return Status(StatusCode::kDataLoss,
                  "instruction " + std::to_string(started) +
                      " starts a collective that no collective_done ends");
  }
  // A training step's new parameters and state become the current ones.
  for (const UpdateInfo &u : exe.updates()) {
    const TensorInfo &from = exe.tensors()[u.result],
                     &to = exe.tensors()[u.target];
    // May overlap in a corrupt file (copy is a memmove); the loader checked
    // the sizes.
    TRAINC_RETURN_IF_ERROR(device_->copy(arenas_[to.arena] + to.offset,
                                         arenas_[from.arena] + from.offset,
                                         to.size, stream));
  }
  TRAINC_RETURN_IF_ERROR(stream.synchronize());
  ++step_;
  return okStatus();
}

Status Session::setPersistent(uint32_t id, const void *data, size_t bytes) {
  const Executable &exe = *executable_;
  if (id >= exe.tensors().size())
    return Status(StatusCode::kOutOfRange,
                  "tensor " + std::to_string(id) + " does not exist");
  const TensorInfo &t = exe.tensors()[id];
  if (t.role != TensorRole::Parameter && t.role != TensorRole::State)
    return invalidArgument("tensor '" + t.name +
                           "' is not a parameter or optimizer state");
  if (bytes != t.globalSize)
    return invalidArgument("'" + t.name + "' has " +
                           std::to_string(t.globalSize) + " bytes, not " +
                           std::to_string(bytes));
  Stream &stream = device_->computeStream();
  if (!t.isSplit()) {
    TRAINC_RETURN_IF_ERROR(
        device_->copyToDevice(data_[id], data, bytes, stream));
    return stream.synchronize();
  }
  SplitLayout layout;
  TRAINC_RETURN_IF_ERROR(splitLayout(t, executable_->mesh(), layout));
  std::vector<char> part =
      partOf(layout, static_cast<const char *>(data),
             device_->collective().coordinate(t.shardAxes[size_t(layout.dim)]));
  TRAINC_RETURN_IF_ERROR(
      device_->copyToDevice(data_[id], part.data(), t.size, stream));
  return stream.synchronize();
}

Status Session::readWhole(uint32_t id, std::vector<char> &out) const {
  const Executable &exe = *executable_;
  if (id >= exe.tensors().size())
    return Status(StatusCode::kOutOfRange,
                  "tensor " + std::to_string(id) + " does not exist");
  const TensorInfo &t = exe.tensors()[id];
  out.resize(t.size);
  TRAINC_RETURN_IF_ERROR(readTensor(id, out.data()));
  if (!t.isSplit())
    return okStatus();
  SplitLayout layout;
  TRAINC_RETURN_IF_ERROR(splitLayout(t, exe.mesh(), layout));
  // Every rank's part in coordinate order, joined along the split
  // dimension.
  int axis = t.shardAxes[size_t(layout.dim)];
  std::vector<char> parts(t.size * uint64_t(layout.parts));
  CollectiveSite site;
  site.what = "the gather of a split tensor";
  TRAINC_RETURN_IF_ERROR(device_->hostCollective().allGather(
      axis, out.data(), parts.data(), int64_t(t.size), DType::U8,
      device_->communicationStream(), site));
  out = wholeOf(layout, parts.data());
  return okStatus();
}

Status Session::readTensor(uint32_t id, void *out) const {
  const Executable &exe = *executable_;
  if (id >= exe.tensors().size())
    return Status(StatusCode::kOutOfRange,
                  "tensor " + std::to_string(id) + " does not exist");
  Stream &stream = device_->computeStream();
  TRAINC_RETURN_IF_ERROR(
      device_->copyToHost(out, data_[id], exe.tensors()[id].size, stream));
  return stream.synchronize();
}

TensorRef Session::output(size_t index) const {
  return ref(executable_->outputs()[index]);
}

TensorRef Session::parameter(size_t index) const {
  return ref(executable_->parameters()[index]);
}

uint64_t Session::measuredPeak() const {
  uint64_t total = 0;
  for (uint64_t t : touched_)
    total += t;
  return total;
}

} // namespace trainc
