//===- MemoryPlan.h - The static memory plan of an executable --*- C++ -*-===//
//
// The plan-memory phase (PlanMemory in Passes.td) computes, on the
// instruction view of @main (Program.h), the liveness of every buffer and
// its arena and offset, and records them as `plan.*` attributes on the IR;
// the serializer reads them back. The attribute names are declared here,
// once.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_MEMORYPLAN_H
#define TRAINC_COMPILER_MEMORYPLAN_H

#include "trainc/Compiler/Program.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace trainc {

/// The static memory plan's sizes and peak by category, in bytes.
struct MemoryPlanReport {
  uint64_t stateArena = 0, workArena = 0;
  uint64_t parameters = 0;
  uint64_t persistentState = 0;
  uint64_t activations = 0;
  uint64_t temporaries = 0;
  uint64_t workspace = 0;
  uint64_t constants = 0; ///< Read in place from the executable, not an arena.
  uint64_t peak = 0;      ///< All arenas together.
  /// Bytes all work-arena buffers would take without reuse.
  uint64_t activationsWithoutReuse = 0;

  /// A training step with a fused AdamW update: what each rank keeps of
  /// the P parameters (accountTrainingState), beside the textbook formula
  /// (ZeRO: 4 + 4 + 8 bytes per f32 parameter, each share whole or split N
  /// ways).
  struct TrainingState {
    uint64_t parameterElements = 0; ///< P: whole elements of every parameter.
    int64_t dataRanks = 1;          ///< N: the data axis.
    /// Pt: whole elements of the parameters split over the tensor axis
    /// (tensor parallelism keeps their gradients and state split too).
    uint64_t tensorElements = 0;
    int64_t tensorRanks = 1; ///< T: the tensor axis.
    struct Share {
      uint64_t bytes = 0;      ///< Planned on one rank (tensor bytes).
      uint64_t perElement = 0; ///< Bytes per parameter element.
      bool split = false;      ///< Split over the data axis (ZeRO).
      /// What the textbook formula says: P * perElement / N when split
      /// over the data axis, else (P - Pt + Pt / T) * perElement.
      uint64_t formula(const TrainingState &t) const {
        if (split)
          return t.parameterElements * perElement / uint64_t(t.dataRanks);
        return (t.parameterElements - t.tensorElements +
                t.tensorElements / uint64_t(t.tensorRanks)) *
               perElement;
      }
    } parameters, gradients, optimizerState;
  };
  std::optional<TrainingState> training;

  void print(llvm::raw_ostream &os) const;
};

/// Fills `report.training` from `program`, when it updates its parameters
/// with graph.adamw_update: parameters are its parameter tensors, gradients
/// the gradients the updates read, optimizer state the moments they update.
void accountTrainingState(const Program &program, MemoryPlanReport &report);

/// Attribute names of the plan.
namespace plan {
/// On an op: one arena index / byte offset per result.
constexpr llvm::StringLiteral kArenas = "plan.arenas";
constexpr llvm::StringLiteral kOffsets = "plan.offsets";
/// On a reshape, or a slice of the first elements, that shares its operand's
/// bytes: no instruction is emitted.
constexpr llvm::StringLiteral kAlias = "plan.alias";
/// On an argument (input, parameter or state) or a copied result.
constexpr llvm::StringLiteral kArena = "plan.arena";
constexpr llvm::StringLiteral kOffset = "plan.offset";
/// On @main: the sizes of the state and work arenas, and the report.
constexpr llvm::StringLiteral kArenaSizes = "plan.arena_sizes";
constexpr llvm::StringLiteral kPeak = "plan.peak";
} // namespace plan

/// Liveness of each tensor of a program, in instruction indices: defined at
/// firstUse, last read at lastUse (inputs from 0, outputs to the end).
/// Liveness in program order: the schedule phase's order is the program.
struct BufferLiveness {
  explicit BufferLiveness(const Program &program);
  std::vector<int64_t> firstUse, lastUse;
};

/// Plans `program` in place (each tensor's arena and offset); sets
/// `aliasInstructions[i]` for reshapes that share their operand's buffer.
MemoryPlanReport planMemory(Program &program,
                            std::vector<bool> &aliasInstructions);

/// Records the plan of `program` (built from `fn`) as attributes of `fn`.
void writeMemoryPlan(mlir::func::FuncOp fn, const Program &program,
                     const std::vector<bool> &aliasInstructions,
                     const MemoryPlanReport &report);

/// Reads the plan written by writeMemoryPlan into `program` (built from the
/// same `fn`). Fails, naming what is missing, when `fn` has no plan.
mlir::LogicalResult readMemoryPlan(mlir::func::FuncOp fn, Program &program,
                                   std::vector<bool> &aliasInstructions,
                                   MemoryPlanReport &report);

} // namespace trainc

#endif // TRAINC_COMPILER_MEMORYPLAN_H
