//===- KeptRunBlocks.h - Row blocks of a kept-run reduction ----*- C++ -*-===//
//
// A reduction that keeps only its operand's innermost run (the outputs are
// that run, as a bias gradient sums [R, N] over R) and reduces many rows
// adds its terms in blocks of consecutive rows:
//
// 1. The R rows are cut into blocks of keptRunBlockRows(R) rows (the last
//    may be shorter) when keptRunBlocked(...) holds; else one block of all
//    R.
// 2. A block's result for output j adds its rows' terms in row order,
//    from the empty value.
// 3. Output j is its first block's result, then each later block's
//    combined in block order.
//
// The blocks are fixed by the shape alone, here. The CPU (cpu/Reduction.cpp)
// runs them in parallel; the GPU's kernel in the CPU's order
// (cuda/Reduction.cu, up to 2,048 rows: longer ones take its parallel
// order) gives each output a thread that walks them, so the two give the
// same bits.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_MATH_KEPTRUNBLOCKS_H
#define TRAINC_RUNTIME_MATH_KEPTRUNBLOCKS_H

#include "base/HostDevice.h"

#include <cstdint>

namespace trainc::math {

/// Rows per block: at least this many, and at most kKeptRunMaxBlocks
/// blocks.
constexpr int64_t kKeptRunMinBlockRows = 64;
constexpr int64_t kKeptRunMaxBlocks = 64;
/// Outputs up to which rows are split (the CPU's partials then take at
/// most 8 MiB).
constexpr int64_t kKeptRunMaxBlockedOutputs = 16384;

/// Whether the rows are split into blocks: a reduction with no kept dim
/// but its innermost run (`outerKept` false), of `outputs` outputs over
/// `rows` rows.
TRAINC_HD bool keptRunBlocked(bool outerKept, int64_t rows, int64_t outputs) {
  return !outerKept && rows >= 2 * kKeptRunMinBlockRows &&
         outputs <= kKeptRunMaxBlockedOutputs;
}

/// Rows per block of a blocked reduction over `rows` rows.
TRAINC_HD int64_t keptRunBlockRows(int64_t rows) {
  int64_t even = (rows + kKeptRunMaxBlocks - 1) / kKeptRunMaxBlocks;
  return even > kKeptRunMinBlockRows ? even : kKeptRunMinBlockRows;
}

} // namespace trainc::math

#endif // TRAINC_RUNTIME_MATH_KEPTRUNBLOCKS_H
