//===- Program.h - @main as the executable's instruction list --*- C++ -*-===//
//
// The instruction-level view of a function in instruction form (after the
// `lower` phase): one tensor per argument, constant and op result, one
// instruction per op (the opcode of the op's name, with the attribute
// layout of runtime/schema/executable.fbs), plus one copy per function
// result whose value is not a fresh activation (a returned argument,
// constant or value returned twice), so every output has a buffer of its
// own. The memory planner (PlanMemory) and the serializer
// (ExecutableWriter) build this same view from the same IR, so tensor and
// instruction numbers agree between them.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_PROGRAM_H
#define TRAINC_COMPILER_PROGRAM_H

#include "trainc/schema/ExecutableFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainc {

constexpr uint32_t kStateArena = 0, kWorkArena = 1;

/// The executable element type of `t`, or none.
std::optional<DType> dtypeOf(mlir::Type t);
/// Bytes of a tensor as stored (i1: one byte per element).
uint64_t bytesOf(mlir::RankedTensorType t);
inline uint64_t alignUp(uint64_t v) {
  return (v + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

/// The executable opcode that implements graph op `name` (without the
/// "graph." prefix): the opcode of the same name in the schema, the one list
/// of both. None for graph.constant, which is data in the constant section.
std::optional<Opcode> opcodeForGraphOp(llvm::StringRef name);

struct ProgramTensor {
  std::string name;
  TensorRole role = TensorRole::Activation;
  mlir::RankedTensorType type;
  /// Where it lives: kStateArena or kWorkArena (set by the memory plan).
  uint32_t arena = kWorkArena;
  /// Byte offset in its arena, or in the constant section for constants.
  uint64_t offset = 0;
  /// Parameters and state: their initial value in the constant section.
  uint64_t initOffset = 0;
  /// The stored constant or initial value is one repeated element.
  bool splat = false;
  /// Per dimension, the index in Program::mesh of the axis it is split
  /// over, or -1; empty when not split (graph.sharding).
  std::vector<int8_t> shardAxes;
  /// The whole tensor's shape when it is set (graph.global_shape), else
  /// empty.
  std::vector<int64_t> globalShape;

  uint64_t bytes() const { return bytesOf(type); }
};

struct ProgramInstruction {
  Opcode opcode = Opcode::Add;
  std::vector<uint32_t> operands, results;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// The op it executes; null for the copy of a function result.
  mlir::Operation *op = nullptr;
  /// For a copy: the function result it fills, else -1.
  int resultIndex = -1;
};

/// The executable's constant section as pieces at aligned offsets: bytes
/// the program made (dense attributes' values) and bytes it only points
/// at (resource blobs: the module owns the weights, which a program never
/// outlives). The weights are thus copied once, into the file, not first
/// into a section in memory.
class ConstantSection {
public:
  /// Its size in bytes (the last piece's end).
  uint64_t size() const {
    return pieces_.empty()
               ? 0
               : pieces_.back().offset + pieces_.back().bytes().size();
  }
  /// Places `bytes` at the next aligned offset without copying them; they
  /// must outlive the section. Returns the offset.
  uint64_t appendBorrowed(llvm::ArrayRef<char> bytes);
  /// Places a piece of the program's own bytes at the next aligned offset
  /// and returns its offset; `bytes` is that piece (append to it).
  uint64_t appendOwned(std::vector<char> *&bytes);
  /// Writes the section, zero padding included.
  void write(llvm::raw_ostream &os) const;

private:
  struct Piece {
    uint64_t offset;
    llvm::ArrayRef<char> borrowed;
    std::vector<char> owned;
    llvm::ArrayRef<char> bytes() const {
      return owned.empty() ? borrowed : llvm::ArrayRef<char>(owned);
    }
  };
  std::vector<Piece> pieces_;
};

struct Program {
  /// Builds the program of `fn`, emitting an error naming the op on what
  /// cannot be executed. With `withConstantData`, the bytes of every
  /// constant and initial value are gathered into `constants` (the
  /// serializer needs them, the planner does not).
  static mlir::FailureOr<Program> build(mlir::func::FuncOp fn,
                                        bool withConstantData);

  std::vector<ProgramTensor> tensors;
  std::vector<ProgramInstruction> instructions;
  /// The tensor of each argument and op result.
  llvm::DenseMap<mlir::Value, uint32_t> ids;
  /// Tensor ids: inputs, outputs (not updates) and persistent tensors, in
  /// argument / result order.
  std::vector<uint32_t> inputs, outputs, parameters, states;
  /// (result, target): a result that becomes the next value of a parameter
  /// or state (train.update).
  std::vector<std::pair<uint32_t, uint32_t>> updates;
  /// For each function result, its tensor (the copy's when copied).
  std::vector<uint32_t> resultTensors;
  ConstantSection constants;
  /// FLOPs of one run (the cost interface summed over the ops).
  uint64_t flops = 0;
  TrainingSignature signature;
  /// The device mesh (graph.mesh): (axis, size) in rank order; empty for
  /// one rank.
  std::vector<std::pair<std::string, int64_t>> mesh;
};

} // namespace trainc

#endif // TRAINC_COMPILER_PROGRAM_H
