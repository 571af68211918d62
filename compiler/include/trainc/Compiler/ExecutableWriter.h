//===- ExecutableWriter.h - Graph IR to a trainc executable ----*- C++ -*-===//
//
// The back half of the compiler, run after the last IR phase:
//   schedule     the function's ops in program order (deterministic);
//   lower        each graph op to an instruction (cpu::Opcode + attributes);
//   plan memory  liveness of every buffer and static offsets in arenas:
//                parameters in the "state" arena, everything else in the
//                "work" arena, placed greedily by size so buffers whose
//                lifetimes do not overlap share bytes;
//   serialize    the FlatBuffer (runtime/schema/executable.fbs) followed by
//                the constant section.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_EXECUTABLEWRITER_H
#define TRAINC_COMPILER_EXECUTABLEWRITER_H

#include "trainc/schema/ExecutableFormat.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace trainc {

/// The static memory plan's peak by category, in bytes.
struct MemoryPlanReport {
  uint64_t parameters = 0;
  uint64_t persistentState = 0;
  uint64_t activations = 0;
  uint64_t temporaries = 0;
  uint64_t workspace = 0;
  uint64_t constants = 0; ///< Read in place from the executable, not an arena.
  uint64_t peak = 0;      ///< All arenas together.
  /// Bytes all work-arena buffers would take without reuse.
  uint64_t activationsWithoutReuse = 0;

  void print(llvm::raw_ostream &os) const;
};

struct WriterOptions {
  std::string source;  ///< The model file, recorded in the executable.
  std::string command; ///< The trainc command line.
};

/// The executable opcode that implements graph op `name` (without the
/// "graph." prefix): the opcode of the same name in the schema, the one list
/// of both. None for graph.constant, which is data in the constant section.
std::optional<Opcode> opcodeForGraphOp(llvm::StringRef name);

/// Lowers `@main` of `module` (graph dialect) and writes the executable to
/// `path`. Emits an error naming the op on anything it cannot lower.
mlir::LogicalResult writeExecutable(mlir::ModuleOp module, llvm::StringRef path,
                                    const WriterOptions &options,
                                    MemoryPlanReport &report);

} // namespace trainc

#endif // TRAINC_COMPILER_EXECUTABLEWRITER_H
