//===- Recompute.h - Activation checkpointing ------------------*- C++ -*-===//
//
// The recompute phase (Recompute in Passes.td): which activations the
// backward pass makes again instead of keeping. The attribute names it
// writes are declared here, once; the CLI parses --recompute with
// parseRecomputeMode and prints recompute.options with
// printRecomputeOptions.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_COMPILER_RECOMPUTE_H
#define TRAINC_COMPILER_RECOMPUTE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>

namespace trainc {

namespace recompute {
/// On a recomputed op: the clone of a forward op (unit).
constexpr llvm::StringLiteral kClone = "recompute.clone";
/// On @main: FLOPs the clones add to one step, and the blocks found.
constexpr llvm::StringLiteral kAddedFlops = "recompute.added_flops";
constexpr llvm::StringLiteral kBlocks = "recompute.blocks";
/// On @main: an upper bound on what recompute can add to the bytes live at
/// a point of the step: every remade value but a saved one that no other
/// remake reads (whose clone, made at its first backward reader, lives
/// within the saved value's life; another remake's read can keep a clone
/// longer), and every forward value a remake reads (a remake placed after
/// that value's last reader without recompute extends its life).
constexpr llvm::StringLiteral kAddedLiveBytes = "recompute.added_live_bytes";
/// On @main with compare-options: {none, selective, full} -> [planned
/// activation bytes, added FLOPs, the step's FLOPs with them].
constexpr llvm::StringLiteral kOptions = "recompute.options";
} // namespace recompute

struct RecomputeMode {
  enum Kind { None, Full, Selective, Budget } kind = None;
  /// The activation bytes allowed with Budget.
  uint64_t budget = 0;
};

/// Parses the recompute pass's `mode` ("none", "full", "selective",
/// "budget=BYTES" with an optional K/M/G suffix); on failure returns none
/// and sets `error` to a message that quotes `text`.
std::optional<RecomputeMode> parseRecomputeMode(llvm::StringRef text,
                                                std::string &error);

/// Prints @main's recompute.options as a table; nothing when the module has
/// none.
void printRecomputeOptions(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace trainc

#endif // TRAINC_COMPILER_RECOMPUTE_H
