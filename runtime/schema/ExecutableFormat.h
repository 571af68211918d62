//===- ExecutableFormat.h - The executable format's shared vocabulary -*- C++
//-*-===//
//
// What the compiler (which writes executables) and the runtime (which reads
// them) must agree on beyond the FlatBuffer schema's layout: the format
// version, the alignment of arenas and constants, and the enums of the
// schema (executable.fbs) under the names both sides use. Nothing here is
// declared anywhere else; the enums are the generated ones.
//
// Header-only and free of MLIR and of the runtime's internals, so both
// sides include it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_SCHEMA_EXECUTABLEFORMAT_H
#define TRAINC_SCHEMA_EXECUTABLEFORMAT_H

#include "trainc/schema/executable_generated.h"

#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainc {

/// The schema version written by this compiler and read by this runtime.
/// Bumped on every change to executable.fbs.
///   5: the training signature; opcodes defined in the schema.
///   6: the device mesh, per-tensor shard axes, AllReduce.
///   7: ZeRO: global shapes of padded parts, ReduceScatter, AllGather,
///      ShardSlice.
///   8: asynchronous collectives: *Start and CollectiveDone.
///   9: DotGeneralBias.
///  10: DotGeneral's and DotGeneralBias's last int: an OperandRounding.
///  11: multi-tensor AdamwUpdate (N parameters per instruction),
///      SumOfSquares, DotGeneral's f32 result of 16-bit operands, and a
///      16-bit DotGeneralBias's bias added before its one rounding (all
///      within this version's making: no version 11 file predates it).
///  12: FusedElementwise, ConvertGroup.
///  13: Attention's and AttentionGrad's ints[2] (seq_major); LayerNorm and
///      RmsNorm of f32 x may give a bf16 or f16 result, ReduceSum of bf16
///      or f16 an f32 one.
///  14: NormGradParams.
///  15: SoftmaxCrossEntropy's and SoftmaxCrossEntropyGrad's classes (a
///      padded class dimension).
///  16: Attention's and AttentionGrad's ints[3..4] (qkv_heads: q, k and v
///      read as windows of one fused projection's heads), and
///      AttentionGrad's one-result form (the projection's gradient).
///  17: DotGeneralBiasGrad.
///  18: SoftmaxCrossEntropyAndGrad.
///  19: Attention's and AttentionGrad's ints[5]: the forward's
///      log-sum-exps kept for the gradient.
///  20: NormGradParams' ints[3..4]: an addend (the residual stream's
///      gradient) and a 16-bit copy of the input gradient.
///  21: Floor, Round.
///  22: ReduceProd.
///  23: ScatterAdd of i32 and i64 (wrapping sums).
///  24: Argsort.
///  25: DotGeneralBiasGelu, DotGeneralGeluGrad.
///  26: the bitwise ops (And ... CountLeadingZeros) and Bitcast.
///  27: FusedElementwise programs on integer registers (i32, i64, ui32,
///      ui64), with the bitwise ops as steps.
///  28: Remainder.
///  29: ExtractPatches, FoldPatches (convolutions' im2col and col2im).
///  30: FusedElementwise's broadcast operands (a dims section after the
///      program).
///  31: Attention's and AttentionGrad's soft cap (floats[1]).
///  32: Attention's and AttentionGrad's dropout (floats[2], a stream's
///      ints after ints[5]).
///  33: Attention's and AttentionGrad's dropout on a block of the heads
///      (ints[6..10]: the stream, the tensor axis and the head blocks),
///      Dropout's on a block of one dimension (ints[3..5]).
constexpr uint32_t kFormatVersion = 33;
/// Alignment of arenas, of every planned buffer, and of each constant in
/// the constant section.
constexpr uint64_t kTensorAlignment = 64;

using DType = fb::DType;
using TensorRole = fb::TensorRole;
using Opcode = fb::Opcode;
using OperandRounding = fb::OperandRounding;

constexpr int kNumDTypes = static_cast<int>(DType::MAX) + 1;
constexpr int kNumOpcodes = static_cast<int>(Opcode::MAX) + 1;

/// Whether `value` (as stored in Instruction.opcode) names an opcode.
inline bool isOpcode(uint32_t value) { return value < uint32_t(kNumOpcodes); }

/// Whether a matmul's ints (DotGeneral's layout: [nb, nc, the four
/// dimension lists, the OperandRounding, ...]) ask for TF32; false for
/// ints too short to hold the rounding.
inline bool isTf32(const std::vector<int64_t> &ints) {
  if (ints.size() < 2 || ints[0] < 0 || ints[1] < 0 ||
      uint64_t(ints[0]) > ints.size() || uint64_t(ints[1]) > ints.size())
    return false;
  size_t at = 2 + 2 * size_t(ints[0]) + 2 * size_t(ints[1]);
  return at < ints.size() && ints[at] == int64_t(OperandRounding::Tf32);
}

/// The snake_case name of an opcode ("dot_general" for DotGeneral), which is
/// the graph dialect's name of the op it implements; "unknown" out of range.
inline const char *opcodeName(Opcode op) {
  static const auto names = [] {
    struct Names {
      std::string of[kNumOpcodes];
    } n;
    for (int i = 0; i < kNumOpcodes; ++i) {
      const char *camel = fb::EnumNamesOpcode()[i];
      for (const char *c = camel; *c; ++c) {
        if (std::isupper(static_cast<unsigned char>(*c)) && c != camel)
          n.of[i] += '_';
        n.of[i] += char(std::tolower(static_cast<unsigned char>(*c)));
      }
    }
    return n;
  }();
  int i = static_cast<int>(op);
  return i >= 0 && i < kNumOpcodes ? names.of[i].c_str() : "unknown";
}

/// Opcode::FusedElementwise's program (executable.fbs): ints per step
/// (opcode, dtype, a, b, c, attr), and the limits the compiler's fusion
/// pass keeps and the runtime checks (a CUDA kernel takes the whole
/// program as one parameter).
constexpr int kFusedStepInts = 6;
constexpr int kFusedMaxInputs = 16;
constexpr int kFusedMaxSteps = 40;
constexpr int kFusedMaxResults = 8;
/// A broadcast operand of a fused loop is read through strides over at
/// most this many dimensions of the results (math/BroadcastView.h): those
/// left after dimensions of size 1 drop out and neighbours it reads alike
/// merge. An operand of rank r needs at most 2r + 1.
constexpr int kFusedMaxViewDims = 6;

/// The strides over a fused loop's results through which it reads an
/// operand broadcast into them (graph.fused_elementwise's operand_dims):
/// result dimension d (of `resultRank`, sizes `resultDims`) steps the
/// operand by its row-major stride of dimension k where the operand's k-th
/// dimension spans d (bit d of `mask`: the k-th set bit) and is not 1, and
/// by 0 elsewhere; result dimensions of size 1 drop out and neighbours
/// whose strides continue each other (s_d == s_{d+1} R_{d+1}: both 0, or
/// contiguous) merge. Writes at most kFusedMaxViewDims sizes and strides,
/// outermost first (the innermost stride is 0 or 1), and returns their
/// count, or -1 where more would be needed. The caller has checked that
/// `operandDims` has one entry per bit of `mask`, each 1 or the size it
/// spans.
inline int fusedOperandStrides(const int64_t *resultDims, int resultRank,
                               const int64_t *operandDims, uint64_t mask,
                               int64_t *sizes, int64_t *strides) {
  int operandRank = 0;
  for (int d = 0; d < resultRank; ++d)
    operandRank += int(mask >> d & 1);
  int k = operandRank, rank = 0;
  int64_t step = 1, merged[64][2]; // [size, stride], innermost first
  for (int d = resultRank - 1; d >= 0; --d) {
    int64_t stride = 0;
    if (mask >> d & 1) {
      --k;
      stride = operandDims[k] == 1 ? 0 : step;
      step *= operandDims[k];
    }
    if (resultDims[d] == 1)
      continue;
    // Merged into the inner neighbour when this stride continues it.
    if (rank > 0 && stride == merged[rank - 1][1] * merged[rank - 1][0]) {
      merged[rank - 1][0] *= resultDims[d];
      continue;
    }
    merged[rank][0] = resultDims[d];
    merged[rank][1] = stride;
    ++rank;
  }
  if (rank > kFusedMaxViewDims)
    return -1;
  for (int i = 0; i < rank; ++i) {
    sizes[i] = merged[rank - 1 - i][0];
    strides[i] = merged[rank - 1 - i][1];
  }
  return rank;
}

/// Opcode::Attention and Opcode::AttentionGrad: ints[2] has bit i set when
/// tensor i is stored [B, S, H, D] (sequence-major) rather than [B, H, S,
/// D]. Tensors are numbered q, k, v, then attention's result, or
/// attention_grad's cotangent, dq, dk and dv; the mask is not numbered.
/// graph.attention's `seq_major` attribute lists the same numbers.
/// ints[3..4] = [Hq, Hk] (graph.attention's `qkv_heads`), or [0, 0]: when
/// set, q, k and v are each stored [B, S, Hq + 2 Hk, D] and read as heads
/// [0, Hq), [Hq, Hq + Hk) and [Hq + Hk, Hq + 2 Hk) of it (math/
/// AttentionLayout.h's attentionLayout).
/// ints[5] = 1 (kAttentionStatsInt): Attention has a second result, each
/// score row's log-sum-exp, [B, Hq, Sq] contiguous, f32 (f64 for f64
/// operands), -inf where a row has no key to attend to; AttentionGrad has
/// two more operands after the mask, the forward's result (stored as the
/// cotangent: seq_major bit 3) and those log-sum-exps.
constexpr int kAttentionTensors = 4;
constexpr int kAttentionGradTensors = 7;
constexpr int kAttentionStatsInt = 5;
/// The log-sum-exps' dtype for q of dtype `q`: the kernels' compute type.
inline DType attentionLseType(DType q) {
  return q == DType::F64 ? DType::F64 : DType::F32;
}

/// The schema's TrainingSignature as the compiler fills it and the runtime
/// reads it: indices into the executable's outputs and inputs, -1 for none.
struct TrainingSignature {
  int loss = -1, gradNorm = -1, lr = -1, lossScale = -1, stepSkipped = -1;
  int tokens = -1, targets = -1;
  /// Classes of the loss's cross-entropy (a language model's vocabulary).
  int64_t vocabulary = 0;
  /// (output index, parameter index) of each gradient output.
  std::vector<std::pair<uint32_t, uint32_t>> gradients;
};

} // namespace trainc

#endif // TRAINC_SCHEMA_EXECUTABLEFORMAT_H
