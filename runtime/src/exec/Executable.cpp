//===- Executable.cpp - Loading and validating trainc executables ---------===//

#include "exec/Executable.h"

#include "base/Utf8.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <tuple>

#include "trainc/schema/executable_generated.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>

namespace trainc {
namespace {

Status dataLoss(const std::string &origin, const std::string &message) {
  return Status(StatusCode::kDataLoss, origin + ": " + message);
}

/// An error naming `what` ("tensor 3's name") when `name` is not UTF-8
/// (base/Utf8.h): checkpoints and safetensors headers write names as JSON.
Status checkName(const std::string &origin, const std::string &what,
                 const std::string &name) {
  size_t bad = 0;
  if (isUtf8(name, &bad))
    return okStatus();
  return dataLoss(origin, what + " is not valid UTF-8 (byte " +
                              std::to_string(bad) + " of '" +
                              name.substr(0, bad) + "...')");
}

template <typename T, typename FbVector>
std::vector<T> copyVector(const FbVector *v) {
  std::vector<T> out;
  if (v)
    out.assign(v->begin(), v->end());
  return out;
}

/// a * b, or false on overflow of `limit`.
bool mulBounded(uint64_t a, uint64_t b, uint64_t limit, uint64_t &out) {
  if (a != 0 && b > limit / a)
    return false;
  out = a * b;
  return true;
}

} // namespace

std::string describeTensor(const std::vector<TensorInfo> &tensors,
                           uint32_t id) {
  if (id >= tensors.size())
    return "tensor " + std::to_string(id) + " (out of range)";
  const TensorInfo &t = tensors[id];
  std::string s = "tensor " + std::to_string(id) + " '" + t.name + "' (" +
                  dtypeName(t.dtype) + " [";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "])";
}

Status Executable::load(const std::string &path,
                        std::unique_ptr<Executable> &out) {
  FileBytes bytes;
  TRAINC_RETURN_IF_ERROR(FileBytes::map(path, "the executable", bytes));
  return fromFileBytes(std::move(bytes), path, out);
}

Status Executable::fromBytes(std::vector<char> bytes, const std::string &origin,
                             std::unique_ptr<Executable> &out) {
  return fromFileBytes(FileBytes(std::move(bytes)), origin, out);
}

Status Executable::fromFileBytes(FileBytes bytes, const std::string &origin,
                                 std::unique_ptr<Executable> &out) {
  auto exe = std::unique_ptr<Executable>(new Executable());
  exe->origin_ = origin;
  exe->bytes_ = std::move(bytes);
  TRAINC_RETURN_IF_ERROR(exe->parse());
  out = std::move(exe);
  return okStatus();
}

Status Executable::parse() {
  const auto *data = reinterpret_cast<const uint8_t *>(bytes_.data());
  size_t size = bytes_.size();
  if (size < 8 || !fb::ExecutableBufferHasIdentifier(data))
    return invalidArgument(origin_ + ": not a trainc executable (the file "
                                     "identifier 'TCX1' is missing)");
  // The version first, through a schema that knows only that field.
  flatbuffers::Verifier headerVerifier(data, size);
  if (!headerVerifier.VerifyBuffer<fb::ExecutableHeader>(
          fb::ExecutableIdentifier()))
    return dataLoss(origin_, "corrupt or truncated executable (its header "
                             "does not verify)");
  uint32_t version =
      flatbuffers::GetRoot<fb::ExecutableHeader>(data)->format_version();
  if (version != kFormatVersion)
    return invalidArgument(
        origin_ + ": executable format version " + std::to_string(version) +
        ", but this runtime reads version " + std::to_string(kFormatVersion) +
        "; recompile the model with a matching trainc");
  flatbuffers::Verifier verifier(data, size);
  if (!fb::VerifyExecutableBuffer(verifier))
    return dataLoss(origin_, "corrupt or truncated executable (FlatBuffer "
                             "verification failed)");
  const fb::Executable *exe = fb::GetExecutable(data);
  constantsOffset_ = exe->constants_offset();
  constantsSize_ = exe->constants_size();
  if (constantsOffset_ > size || constantsSize_ > size - constantsOffset_ ||
      constantsOffset_ % kTensorAlignment != 0)
    return dataLoss(origin_, "the constant section (offset " +
                                 std::to_string(constantsOffset_) + ", " +
                                 std::to_string(constantsSize_) +
                                 " bytes) does not fit the file of " +
                                 std::to_string(size) + " bytes");
  if (exe->options()) {
    if (exe->options()->source())
      source_ = exe->options()->source()->str();
    if (exe->options()->command())
      command_ = exe->options()->command()->str();
  }
  flops_ = exe->flops();
  if (exe->memory()) {
    const fb::MemoryPlan *m = exe->memory();
    memory_ = {m->parameters(),  m->persistent_state(), m->activations(),
               m->temporaries(), m->workspace(),        m->peak()};
  }
  if (exe->arenas())
    for (const fb::Arena *a : *exe->arenas()) {
      // The same bound as tensor sizes: far above any real plan, and it keeps
      // rounding the size up to the alignment from overflowing.
      if (a->size() > (uint64_t(1) << 48))
        return dataLoss(origin_, "arena " + std::to_string(arenas_.size()) +
                                     " records an impossible size of " +
                                     std::to_string(a->size()) + " bytes");
      arenas_.push_back({a->name() ? a->name()->str() : "", a->size()});
      TRAINC_RETURN_IF_ERROR(checkName(
          origin_, "arena " + std::to_string(arenas_.size() - 1) + "'s name",
          arenas_.back().name));
    }

  if (exe->mesh()) {
    uint64_t ranks = 1;
    for (const fb::MeshAxis *a : *exe->mesh()) {
      if (a->size() < 1 ||
          !mulBounded(ranks, a->size(), uint64_t(1) << 20, ranks))
        return dataLoss(origin_, "the mesh has an impossible axis size " +
                                     std::to_string(a->size()));
      mesh_.push_back({a->name() ? a->name()->str() : "", a->size()});
      TRAINC_RETURN_IF_ERROR(checkName(
          origin_, "mesh axis " + std::to_string(mesh_.size() - 1) + "'s name",
          mesh_.back().name));
    }
    if (mesh_.size() > 8)
      return dataLoss(origin_, "the mesh has more than 8 axes");
  }

  if (exe->tensors()) {
    for (const fb::Tensor *t : *exe->tensors()) {
      TensorInfo info;
      size_t id = tensors_.size();
      info.name = t->name() ? t->name()->str() : "";
      TRAINC_RETURN_IF_ERROR(checkName(
          origin_, "tensor " + std::to_string(id) + "'s name", info.name));
      auto role = static_cast<uint8_t>(t->role());
      auto dtype = static_cast<uint8_t>(t->dtype());
      if (role > static_cast<uint8_t>(TensorRole::MAX) || dtype >= kNumDTypes)
        return dataLoss(origin_, "tensor " + std::to_string(id) +
                                     " has an invalid role or dtype");
      info.role = static_cast<TensorRole>(role);
      info.dtype = static_cast<DType>(dtype);
      info.shape = copyVector<int64_t>(t->shape());
      info.arena = t->arena();
      info.offset = t->offset();
      info.size = t->size();
      info.initOffset = t->init_offset();
      info.splat = t->splat();
      info.shardAxes = copyVector<int8_t>(t->shard_axes());
      if (!info.shardAxes.empty() && info.shardAxes.size() != info.shape.size())
        return dataLoss(origin_, "tensor " + std::to_string(id) +
                                     " has shard axes for " +
                                     std::to_string(info.shardAxes.size()) +
                                     " dimensions but rank " +
                                     std::to_string(info.shape.size()));
      for (int8_t axis : info.shardAxes)
        if (axis < -1 || axis >= int(mesh_.size()))
          return dataLoss(origin_, "tensor " + std::to_string(id) +
                                       " is split over mesh axis " +
                                       std::to_string(axis) +
                                       ", which does not exist");
      uint64_t bytes = dtypeSize(info.dtype);
      const uint64_t limit = uint64_t(1) << 48;
      for (int64_t d : info.shape)
        if (d < 0 || !mulBounded(bytes, uint64_t(d), limit, bytes))
          return dataLoss(origin_, "tensor " + std::to_string(id) +
                                       " has an invalid shape");
      if (bytes != info.size)
        return dataLoss(
            origin_, "tensor " + std::to_string(id) + " '" + info.name +
                         "' records " + std::to_string(info.size) +
                         " bytes but its shape needs " + std::to_string(bytes));
      // The whole tensor: recorded (padded parts), or each split dimension
      // times its axis size.
      info.globalShape = copyVector<int64_t>(t->global_shape());
      if (!info.globalShape.empty() &&
          info.globalShape.size() != info.shape.size())
        return dataLoss(origin_, "tensor " + std::to_string(id) +
                                     " has a global shape of rank " +
                                     std::to_string(info.globalShape.size()) +
                                     " but rank " +
                                     std::to_string(info.shape.size()));
      if (info.globalShape.empty())
        info.globalShape = info.shape;
      info.globalSize = dtypeSize(info.dtype);
      for (size_t d = 0; d < info.shape.size(); ++d) {
        int64_t parts = d < info.shardAxes.size() && info.shardAxes[d] >= 0
                            ? mesh_[size_t(info.shardAxes[d])].size
                            : 1;
        int64_t &whole = info.globalShape[d];
        uint64_t product = 0;
        if (t->global_shape() == nullptr || t->global_shape()->size() == 0) {
          if (!mulBounded(uint64_t(info.shape[d]), uint64_t(parts), limit,
                          product))
            return dataLoss(origin_, "tensor " + std::to_string(id) +
                                         " has an invalid global shape");
          whole = int64_t(product);
        }
        if (whole < 0 || whole > int64_t(limit) ||
            (whole + parts - 1) / parts != info.shape[d])
          return dataLoss(origin_, "tensor " + std::to_string(id) + " '" +
                                       info.name + "': a part of " +
                                       std::to_string(info.shape[d]) +
                                       " along dimension " + std::to_string(d) +
                                       " does not belong to a whole of " +
                                       std::to_string(whole) + " split " +
                                       std::to_string(parts) + " ways");
        if (!mulBounded(info.globalSize, uint64_t(whole), limit,
                        info.globalSize))
          return dataLoss(origin_, "tensor " + std::to_string(id) +
                                       " has an invalid global shape");
      }
      auto fits = [](uint64_t offset, uint64_t n, uint64_t capacity) {
        return offset <= capacity && n <= capacity - offset;
      };
      // A splat stores one element; anything else its full size.
      uint64_t stored = info.splat ? dtypeSize(info.dtype) : info.size;
      if (info.role == TensorRole::Constant) {
        if (!fits(info.offset, stored, constantsSize_))
          return dataLoss(origin_, "constant tensor " + std::to_string(id) +
                                       " lies outside the constant section");
      } else {
        if (info.arena >= arenas_.size() ||
            !fits(info.offset, info.size, arenas_[info.arena].size))
          return dataLoss(origin_, "tensor " + std::to_string(id) + " '" +
                                       info.name + "' lies outside its arena");
      }
      if ((info.role == TensorRole::Parameter ||
           info.role == TensorRole::State) &&
          !fits(info.initOffset, info.splat ? stored : info.globalSize,
                constantsSize_))
        return dataLoss(origin_, "the initial value of '" + info.name +
                                     "' lies outside the constant section");
      tensors_.push_back(std::move(info));
    }
  }
  inputs_ = copyVector<uint32_t>(exe->inputs());
  outputs_ = copyVector<uint32_t>(exe->outputs());
  parameters_ = copyVector<uint32_t>(exe->parameters());
  // Each list names tensors of its own role: a session writes inputs into
  // their arena and initializes parameters there.
  const std::pair<const std::vector<uint32_t> *, TensorRole> lists[] = {
      {&inputs_, TensorRole::Input},
      {&outputs_, TensorRole::Output},
      {&parameters_, TensorRole::Parameter}};
  for (auto [list, role] : lists)
    for (uint32_t id : *list)
      if (id >= tensors_.size() || tensors_[id].role != role)
        return dataLoss(origin_, "an input, output or parameter list names " +
                                     describeTensor(tensors_, id) +
                                     ", which does not have that role");

  if (exe->updates()) {
    for (const fb::Update *u : *exe->updates()) {
      if (u->result() >= tensors_.size() || u->target() >= tensors_.size())
        return dataLoss(origin_, "an update names a tensor out of range");
      const TensorInfo &from = tensors_[u->result()],
                       &to = tensors_[u->target()];
      if (from.role != TensorRole::Output ||
          (to.role != TensorRole::Parameter && to.role != TensorRole::State) ||
          from.dtype != to.dtype || from.shape != to.shape)
        return dataLoss(
            origin_, "an update from " + describeTensor(tensors_, u->result()) +
                         " to " + describeTensor(tensors_, u->target()) +
                         " is not an output of the target's type");
      updates_.push_back({u->result(), u->target()});
    }
  }

  TRAINC_RETURN_IF_ERROR(parseSignature(exe->signature()));

  if (exe->instructions()) {
    for (const fb::Instruction *i : *exe->instructions()) {
      InstructionInfo inst;
      size_t index = instructions_.size();
      if (!isOpcode(i->opcode()))
        return dataLoss(origin_, "instruction " + std::to_string(index) +
                                     " has unknown opcode " +
                                     std::to_string(i->opcode()));
      inst.op = static_cast<Opcode>(i->opcode());
      inst.operands = copyVector<uint32_t>(i->operands());
      inst.results = copyVector<uint32_t>(i->results());
      inst.ints = copyVector<int64_t>(i->ints());
      inst.floats = copyVector<double>(i->floats());
      Status valid = validateInstruction(inst, index, tensors_);
      if (!valid.ok())
        return dataLoss(origin_, valid.message());
      // The contracts that need the mesh: a collective's axis exists, and
      // the parts it moves are 1/size of the whole along dimension 0.
      bool parts = inst.op == Opcode::ReduceScatter ||
                   inst.op == Opcode::AllGather ||
                   inst.op == Opcode::ShardSlice ||
                   inst.op == Opcode::ReduceScatterStart ||
                   inst.op == Opcode::AllGatherStart;
      // A dropout stream's data axis: Dropout's ints[1] of [seed, axis,
      // stride], attention's ints[7] of its six and those three (and two
      // more, checked below).
      bool attention =
          inst.op == Opcode::Attention || inst.op == Opcode::AttentionGrad;
      bool stream = (inst.op == Opcode::Dropout && inst.ints.size() >= 3) ||
                    (attention && inst.ints.size() >= 9);
      bool onMesh = parts || inst.op == Opcode::AllReduce ||
                    inst.op == Opcode::AllReduceStart || stream;
      int64_t axis = !onMesh  ? 0
                     : stream ? inst.ints[attention ? 7 : 1]
                              : inst.ints[0];
      if (onMesh && (axis < 0 || axis >= int64_t(mesh_.size())))
        return dataLoss(origin_,
                        "instruction " + std::to_string(index) + " (" +
                            opcodeName(inst.op) + ") names mesh axis " +
                            std::to_string(axis) + ", which does not exist");
      // A stream's blocks of the tensor axis: Dropout's ints[3..4] of
      // [seed, data axis, stride, tensor axis, blocks, dim], attention's
      // ints[9..10] (its heads): the axis and its size.
      size_t blocksAt = attention && inst.ints.size() == 11 ? 9
                        : inst.op == Opcode::Dropout && inst.ints.size() == 6
                            ? 3
                            : 0;
      if (blocksAt) {
        int64_t tensor = inst.ints[blocksAt], blocks = inst.ints[blocksAt + 1];
        if (tensor < 0 || tensor >= int64_t(mesh_.size()) ||
            blocks != int64_t(mesh_[size_t(tensor)].size))
          return dataLoss(
              origin_, "instruction " + std::to_string(index) + " (" +
                           opcodeName(inst.op) + ") splits its " +
                           (attention ? "heads" : "operand") + " into " +
                           std::to_string(blocks) + " blocks over mesh axis " +
                           std::to_string(tensor) +
                           ", which is not an axis of that size");
      }
      if (parts) {
        const TensorInfo &in = tensors_[inst.operands[0]];
        const TensorInfo &out = tensors_[inst.results[0]];
        bool gather =
            inst.op == Opcode::AllGather || inst.op == Opcode::AllGatherStart;
        const TensorInfo &whole = gather ? out : in;
        const TensorInfo &part = gather ? in : out;
        if (whole.shape[0] != part.shape[0] * mesh_[size_t(axis)].size)
          return dataLoss(origin_,
                          "instruction " + std::to_string(index) + " (" +
                              opcodeName(inst.op) + "): dimension 0 of " +
                              shapeString(whole.shape) + " is not " +
                              std::to_string(mesh_[size_t(axis)].size) +
                              " times that of " + shapeString(part.shape));
      }
      instructions_.push_back(std::move(inst));
    }
  }
  return okStatus();
}

uint64_t Executable::contentHash() const {
  // Once, in chunks whose pages leave the resident set as soon as they are
  // hashed: hashing must not bring back the weights a session released.
  std::call_once(contentHashOnce_, [this] {
    constexpr size_t kChunk = size_t(64) << 20;
    XXH3_state_t *state = XXH3_createState();
    XXH3_64bits_reset(state);
    for (size_t at = 0; at < bytes_.size(); at += kChunk) {
      size_t length = std::min(kChunk, bytes_.size() - at);
      XXH3_64bits_update(state, bytes_.data() + at, length);
      bytes_.releasePages(at, length);
    }
    contentHash_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  });
  return contentHash_;
}

uint64_t Executable::persistentHash() const {
  std::call_once(persistentHashOnce_, [this] {
    XXH3_state_t *state = XXH3_createState();
    XXH3_64bits_reset(state);
    for (const TensorInfo &t : tensors_) {
      if (t.role != TensorRole::Parameter && t.role != TensorRole::State)
        continue;
      // Whole shapes and values: a checkpoint of one mesh is the same
      // model under another.
      std::string key =
          t.name + ":" + dtypeName(t.dtype) + shapeString(t.globalShape);
      XXH3_64bits_update(state, key.data(), key.size());
      uint64_t bytes = t.splat ? dtypeSize(t.dtype) : t.globalSize;
      XXH3_64bits_update(state, constants() + t.initOffset, bytes);
      releaseConstants(t.initOffset, bytes); // Hashed, not needed here.
    }
    persistentHash_ = XXH3_64bits_digest(state);
    XXH3_freeState(state);
  });
  return persistentHash_;
}

int64_t Executable::numRanks() const {
  int64_t n = 1;
  for (const MeshAxisInfo &a : mesh_)
    n *= a.size;
  return n;
}

Status Executable::parseSignature(const fb::TrainingSignature *sig) {
  if (!sig)
    return okStatus();
  TrainingSignature &out = signature_;
  auto scalarOutput = [&](int index, const char *what, int &field) {
    if (index < -1 || index >= int64_t(outputs_.size()))
      return dataLoss(origin_, std::string("the training signature's ") + what +
                                   " is output " + std::to_string(index) +
                                   ", which does not exist");
    if (index >= 0) {
      const TensorInfo &t = tensors_[outputs_[index]];
      if (!t.shape.empty() || !isFloat(t.dtype))
        return dataLoss(origin_, std::string("the training signature's ") +
                                     what + " " +
                                     describeTensor(tensors_, outputs_[index]) +
                                     " is not a float scalar");
    }
    field = index;
    return okStatus();
  };
  TRAINC_RETURN_IF_ERROR(scalarOutput(sig->loss(), "loss", out.loss));
  TRAINC_RETURN_IF_ERROR(
      scalarOutput(sig->grad_norm(), "grad_norm", out.gradNorm));
  TRAINC_RETURN_IF_ERROR(scalarOutput(sig->lr(), "lr", out.lr));
  TRAINC_RETURN_IF_ERROR(
      scalarOutput(sig->loss_scale(), "loss_scale", out.lossScale));
  TRAINC_RETURN_IF_ERROR(
      scalarOutput(sig->step_skipped(), "step_skipped", out.stepSkipped));
  for (auto [index, what, field] :
       {std::tuple(sig->tokens(), "tokens", &out.tokens),
        std::tuple(sig->targets(), "targets", &out.targets)}) {
    if (index < -1 || index >= int64_t(inputs_.size()))
      return dataLoss(origin_, std::string("the training signature's ") + what +
                                   " input " + std::to_string(index) +
                                   " does not exist");
    *field = index;
  }
  if (sig->vocabulary() < 0)
    return dataLoss(origin_, "the training signature's vocabulary is negative");
  out.vocabulary = sig->vocabulary();
  if (sig->gradients())
    for (const fb::Gradient *g : *sig->gradients()) {
      if (g->output() >= outputs_.size() ||
          g->parameter() >= parameters_.size())
        return dataLoss(origin_, "the training signature names a gradient "
                                 "output or parameter that does not exist");
      out.gradients.push_back({g->output(), g->parameter()});
    }
  return okStatus();
}

} // namespace trainc
