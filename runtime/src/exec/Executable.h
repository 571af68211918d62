//===- Executable.h - A loaded, validated trainc executable -----*- C++ -*-===//
//
// Executable::load reads a .tcx file, runs the FlatBuffers verifier, checks
// the identifier and format version, then copies the program into plain
// structs and validates every tensor (sizes, offsets inside arenas and the
// constant section) and every instruction (opcode, tensor ids, arity and
// shapes, see Validate.cpp). After load succeeds, kernels can trust the
// program: a truncated or corrupted file is an error, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_EXEC_EXECUTABLE_H
#define TRAINC_RUNTIME_EXEC_EXECUTABLE_H

#include "base/DType.h"
#include "base/Status.h"
#include "io/MappedFile.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace trainc {

// kFormatVersion, kTensorAlignment and the TensorRole, DType and Opcode
// enums come from the schema (trainc/schema/ExecutableFormat.h).

/// After each run, `result` is copied into `target` (a parameter or state).
struct UpdateInfo {
  uint32_t result = 0;
  uint32_t target = 0;
};

struct TensorInfo {
  std::string name;
  TensorRole role = TensorRole::Activation;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint32_t arena = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t initOffset = 0;
  /// The stored data (constant or initial value) is one repeated element.
  bool splat = false;
  /// Per dimension, the mesh axis (an index in Executable::mesh()) it is
  /// split over, or -1; empty: not split. `shape` is one rank's part.
  std::vector<int8_t> shardAxes;
  /// The whole tensor's shape (`shape` when not split). A split dimension
  /// is its part's size times the axis size, or, for a padded part (ZeRO),
  /// less: each part is ceil(whole / axis size) long and the last ones are
  /// padded at the end.
  std::vector<int64_t> globalShape;
  /// The whole tensor's bytes (`size` when not split); a split parameter's
  /// or state's initial value is the whole tensor.
  uint64_t globalSize = 0;

  bool isSplit() const {
    for (int8_t axis : shardAxes)
      if (axis >= 0)
        return true;
    return false;
  }

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

struct InstructionInfo {
  Opcode op = Opcode::Add;
  std::vector<uint32_t> operands;
  std::vector<uint32_t> results;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct MeshAxisInfo {
  std::string name;
  int64_t size = 1;
};

struct ArenaInfo {
  std::string name;
  uint64_t size = 0;
};

struct MemoryPlanInfo {
  uint64_t parameters = 0, persistentState = 0, activations = 0,
           temporaries = 0, workspace = 0, peak = 0;
};

class Executable {
public:
  /// Maps and validates `path` (io/MappedFile.h: the initial values stay in
  /// the file's pages until a session copies them).
  static Status load(const std::string &path, std::unique_ptr<Executable> &out);
  /// The same for bytes already in memory; `origin` names them in errors.
  static Status fromBytes(std::vector<char> bytes, const std::string &origin,
                          std::unique_ptr<Executable> &out);

  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  const std::vector<InstructionInfo> &instructions() const {
    return instructions_;
  }
  const std::vector<ArenaInfo> &arenas() const { return arenas_; }
  const std::vector<uint32_t> &inputs() const { return inputs_; }
  const std::vector<uint32_t> &outputs() const { return outputs_; }
  const std::vector<uint32_t> &parameters() const { return parameters_; }
  const std::vector<UpdateInfo> &updates() const { return updates_; }
  /// Whether a run changes persistent state (a training step): it has
  /// optimizer state or copies updates. (Updates the memory plan writes in
  /// place are not in updates().)
  bool isTrainingStep() const {
    if (!updates_.empty())
      return true;
    for (const TensorInfo &t : tensors_)
      if (t.role == TensorRole::State)
        return true;
    return false;
  }
  const MemoryPlanInfo &memoryPlan() const { return memory_; }
  /// The device mesh, axes in rank order (empty: one rank), and the number
  /// of ranks the executable runs on.
  const std::vector<MeshAxisInfo> &mesh() const { return mesh_; }
  int64_t numRanks() const;
  /// A hash of the whole file (XXH3), computed once: ranks compare it
  /// before they run, checkpoints record it.
  uint64_t contentHash() const;
  /// A hash of every persistent tensor's (parameters' and state's) name,
  /// dtype, whole shape and initial value, computed once: a checkpoint
  /// records it, and one of another model (or of other initial values) is
  /// refused by it (a recompile with other hyper-parameters keeps it).
  /// The same for any mesh the model is split over.
  uint64_t persistentHash() const;
  const TrainingSignature &signature() const { return signature_; }
  /// FLOPs of one run, from the compiler's cost model.
  uint64_t flops() const { return flops_; }
  const std::string &source() const { return source_; }
  const std::string &command() const { return command_; }
  /// The constant section (constants and parameters' initial values).
  const char *constants() const { return bytes_.data() + constantsOffset_; }
  /// Says that bytes [at, at + size) of the constant section have been
  /// copied where they are needed: a mapped file's pages holding them leave
  /// the process's resident set (FileBytes::releasePages). They stay
  /// readable.
  void releaseConstants(uint64_t at, uint64_t size) const {
    bytes_.releasePages(constantsOffset_ + at, size);
  }
  uint64_t constantsSize() const { return constantsSize_; }
  /// Where the constant section starts in the file (after the FlatBuffer).
  uint64_t constantsOffset() const { return constantsOffset_; }
  /// Which file (or buffer) this came from.
  const std::string &origin() const { return origin_; }

private:
  static Status fromFileBytes(FileBytes bytes, const std::string &origin,
                              std::unique_ptr<Executable> &out);
  Status parse();
  Status parseSignature(const fb::TrainingSignature *signature);

  std::string origin_;
  FileBytes bytes_;
  std::vector<TensorInfo> tensors_;
  std::vector<InstructionInfo> instructions_;
  std::vector<ArenaInfo> arenas_;
  std::vector<uint32_t> inputs_, outputs_, parameters_;
  std::vector<UpdateInfo> updates_;
  MemoryPlanInfo memory_;
  std::vector<MeshAxisInfo> mesh_;
  TrainingSignature signature_;
  std::string source_, command_;
  uint64_t constantsOffset_ = 0, constantsSize_ = 0;
  uint64_t flops_ = 0;
  mutable std::once_flag contentHashOnce_, persistentHashOnce_;
  mutable uint64_t contentHash_ = 0, persistentHash_ = 0;
};

/// Checks one instruction's arity, dtypes and shapes against its opcode's
/// contract (runtime/schema/executable.fbs); `index` names it in errors.
/// (Validate.cpp)
Status validateInstruction(const InstructionInfo &inst, size_t index,
                           const std::vector<TensorInfo> &tensors);

/// "tensor 3 'wte.weight' (f32 [128, 64])" for messages.
std::string describeTensor(const std::vector<TensorInfo> &tensors, uint32_t id);

} // namespace trainc

#endif // TRAINC_RUNTIME_EXEC_EXECUTABLE_H
