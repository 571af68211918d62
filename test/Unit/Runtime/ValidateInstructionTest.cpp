//===- ValidateInstructionTest.cpp - The loader's rules per instruction --===//
//
// validateInstruction (exec/Validate*.cpp) on hand-made instructions over
// hand-made tensors: for each opcode family, an instruction it accepts and,
// for each rule, one that breaks only that rule and the words of the
// refusal. Whole files (arenas, lists, versions): ExecutableTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "base/DType.h"
#include "exec/Executable.h"

#include <gtest/gtest.h>

#include <limits>

#include <string>
#include <utility>
#include <vector>

namespace trainc {
namespace {

/// Expects the validator to refuse `inst` over `tensors` with a message
/// that contains `words`.
void expectRefused(const InstructionInfo &inst,
                   const std::vector<TensorInfo> &tensors,
                   const std::string &words) {
  Status s = validateInstruction(inst, 0, tensors);
  EXPECT_NE(s.message().find(words), std::string::npos)
      << words << " | " << s.toString();
}

/// An activation of `dtype` and `shape`, for validateInstruction.
TensorInfo tensor(DType dtype, std::vector<int64_t> shape) {
  TensorInfo t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

/// Places `tensors` one after another in arena 1, each in its own bytes,
/// for the validator's memory rules.
void placeOneAfterAnother(std::vector<TensorInfo> &tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    TensorInfo &t = tensors[i];
    t.arena = 1;
    t.size = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      t.size *= uint64_t(d);
    t.offset = i == 0 ? 0 : tensors[i - 1].offset + tensors[i - 1].size;
  }
}

/// Appends a copy of tensors[like] at `offset` with `size` bytes (the
/// validator's memory rules see only where the bytes are) and returns its
/// id.
uint32_t placedCopy(std::vector<TensorInfo> &tensors, uint32_t like,
                    uint64_t offset, uint64_t size) {
  TensorInfo t = tensors[like];
  t.offset = offset;
  t.size = size;
  tensors.push_back(t);
  return uint32_t(tensors.size() - 1);
}

// The optimizer step's multi-tensor instructions (format version 11): a
// group of N parameters, and the sum of squares of one dtype.
TEST(Executable, ChecksMultiTensorOptimizerInstructions) {
  // Activations all: the validator's role checks are the loader's.
  // 0-1: two parameters of different shapes, 2-3 gradients, 4-7 moments,
  // 8 a scalar, 9 the skip flag, 10 a bf16 gradient, 11 an f64 scalar.
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {4, 8}), tensor(DType::F32, {8}),
      tensor(DType::F32, {4, 8}), tensor(DType::F32, {8}),
      tensor(DType::F32, {4, 8}), tensor(DType::F32, {8}),
      tensor(DType::F32, {4, 8}), tensor(DType::F32, {8}),
      tensor(DType::F32, {}),     tensor(DType::I1, {}),
      tensor(DType::BF16, {8}),   tensor(DType::F64, {})};
  InstructionInfo adamw;
  adamw.op = Opcode::AdamwUpdate;
  adamw.operands = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8, 9};
  adamw.results = {0, 1, 4, 5, 6, 7};
  adamw.floats = {0.9, 0.999, 1e-8};
  EXPECT_TRUE(validateInstruction(adamw, 0, tensors).ok());
  auto fails = [&](const InstructionInfo &inst, const std::string &words) {
    expectRefused(inst, tensors, words);
  };
  InstructionInfo swapped = adamw; // parameter 1's gradient is parameter 0's
  swapped.operands[3] = 2;
  fails(swapped, "must have the same dtype and shape");
  InstructionInfo short1 = adamw; // one result too few
  short1.results.pop_back();
  fails(short1, "needs three results per parameter, not 5");
  InstructionInfo noSkip = adamw; // 12 operands: no flag, fine
  noSkip.operands.pop_back();
  EXPECT_TRUE(validateInstruction(noSkip, 0, tensors).ok());
  InstructionInfo extra = adamw; // 14 operands for two parameters
  extra.operands.push_back(8);
  fails(extra, "expects 12 operands and 6 results, has 14 and 6");
  InstructionInfo wideScalar = adamw;
  wideScalar.operands[9] = 11;
  fails(wideScalar, "the step's scalars must be 0-d of the parameters' type");

  InstructionInfo squares;
  squares.op = Opcode::SumOfSquares;
  squares.operands = {2, 3, 0};
  squares.results = {11};
  EXPECT_TRUE(validateInstruction(squares, 0, tensors).ok());
  InstructionInfo mixed = squares;
  mixed.operands = {2, 10};
  fails(mixed, "every operand must have the first one's dtype");
  InstructionInfo none = squares;
  none.operands = {};
  fails(none, "needs at least one operand");
  InstructionInfo f32Result = squares;
  f32Result.results = {8};
  fails(f32Result, "the result must be a 0-d f64");
}

// DotGeneral's result: the operands' dtype, or f32 for 16-bit operands
// (graph.dot_general's f32_result); DotGeneralBias has no widened form.
TEST(Executable, ChecksADotGeneralsResultDtype) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}), tensor(DType::BF16, {8, 2}), // 0, 1
      tensor(DType::F32, {4, 2}),  tensor(DType::BF16, {4, 2}), // 2, 3
      tensor(DType::F32, {4, 8}),  tensor(DType::F32, {8, 2}),  // 4, 5
      tensor(DType::F64, {4, 8}),  tensor(DType::F64, {8, 2}),  // 6, 7
      tensor(DType::BF16, {2}),    tensor(DType::F16, {4, 8}),  // 8, 9
      tensor(DType::F16, {8, 2})};                              // 10
  auto dot = [](std::vector<uint32_t> operands, uint32_t result,
                Opcode op = Opcode::DotGeneral) {
    InstructionInfo inst;
    inst.op = op;
    inst.operands = std::move(operands);
    inst.results = {result};
    inst.ints = {0, 1, 1, 0, int64_t(OperandRounding::Exact)};
    return inst;
  };
  EXPECT_TRUE(validateInstruction(dot({0, 1}, 3), 0, tensors).ok());
  EXPECT_TRUE(validateInstruction(dot({0, 1}, 2), 0, tensors).ok());
  EXPECT_TRUE(validateInstruction(dot({9, 10}, 2), 0, tensors).ok());
  const char *want = "operands and result must share one dtype";
  for (const InstructionInfo &bad :
       {dot({4, 5}, 3), dot({6, 7}, 2),
        dot({0, 1, 8}, 2, Opcode::DotGeneralBias)}) {
    Status s = validateInstruction(bad, 0, tensors);
    EXPECT_NE(s.message().find(want), std::string::npos) << s.toString();
  }
}

// FusedElementwise: the program in its ints (math/FusedProgram.h) and the
// shapes, each rule with a program that breaks only it.
TEST(Executable, ChecksFusedElementwisePrograms) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}), tensor(DType::F32, {4, 8}), // 0, 1
      tensor(DType::F32, {}),      tensor(DType::F32, {4, 8}), // 2, 3
      tensor(DType::BF16, {4, 8}), tensor(DType::F32, {8}),    // 4, 5
      tensor(DType::I32, {4, 8}),  tensor(DType::I1, {4, 8}),  // 6, 7
      tensor(DType::I16, {4, 8})};                             // 8
  auto op = [](Opcode o) { return int64_t(o); };
  auto type = [](DType t) { return int64_t(t); };
  // r0 = x (bf16), r1 = y (f32), r2 = s (0-d f32);
  // r3 = convert(r0) f32, r4 = add(r1, r3), r5 = mul(r4, r2),
  // r6 = convert(r5) bf16; results r5, r6.
  InstructionInfo fused;
  fused.op = Opcode::FusedElementwise;
  fused.operands = {0, 1, 2};
  fused.results = {3, 4};
  // clang-format off: one step per line.
  fused.ints = {4,
                op(Opcode::Convert),
                type(DType::F32),
                0,
                -1,
                -1,
                0,
                op(Opcode::Add),
                type(DType::F32),
                1,
                3,
                -1,
                0,
                op(Opcode::Mul),
                type(DType::F32),
                4,
                2,
                -1,
                0,
                op(Opcode::Convert),
                type(DType::BF16),
                5,
                -1,
                -1,
                0,
                5,
                6};
  // clang-format on
  EXPECT_TRUE(validateInstruction(fused, 0, tensors).ok());
  auto fails = [&](const InstructionInfo &inst, const std::string &words) {
    expectRefused(inst, tensors, words);
  };
  auto with = [&](size_t at, int64_t value) {
    InstructionInfo changed = fused;
    changed.ints[at] = value;
    return changed;
  };
  fails(with(0, 0), "needs a step count from 1 to");
  fails(with(0, 3), "has 27 ints; 3 steps and 2 results take 21");
  fails(with(1, op(Opcode::ReduceSum)), "step 0: opcode 19 cannot be a step");
  fails(with(2, 99), "step 0: dtype 99 is not a DType");
  fails(with(9, 4), "step 1: operand register 4 is not an operand or an "
                    "earlier step");
  fails(with(4, 1), "step 0: operand 1 must be -1, is 1");
  fails(with(12, 2), "step 1: attribute 2 is out of range");
  fails(with(8, type(DType::BF16)), "step 1: add does not take these dtypes");
  fails(with(25, 2), "result 0's register 2 is not a step's");
  fails(with(26, 5), "results 0 and 1 are the same register");
  fails(with(26, 4), "result 1's dtype is not its register's");
  InstructionInfo wrongShape = fused;
  wrongShape.operands = {0, 5, 2};
  fails(wrongShape, "operand 1 is neither 0-d nor of the results' shape, "
                    "and the program has no dims for it");
  // With the dims section, y [8] is read across the rows of [4, 8]
  // (math/BroadcastView.h): x spans dims 0 and 1, y dim 1, s none.
  InstructionInfo broadcast = wrongShape;
  broadcast.ints.insert(broadcast.ints.end(), {0, 1, 1});
  EXPECT_TRUE(validateInstruction(broadcast, 0, tensors).ok());
  InstructionInfo rows = broadcast;
  rows.ints.back() = 0; // y's 8 across the 4 rows.
  fails(rows, "operand 1 has dimension 0 of 8, neither 1 nor the results' "
              "dimension 0 of 4 ('");
  InstructionInfo past = broadcast;
  past.ints.back() = 2;
  fails(past, "operand 1's dims must increase from 0 to the results' rank 2");
  InstructionInfo unsorted = broadcast;
  unsorted.ints[unsorted.ints.size() - 3] = 1; // x spans 1 then 1.
  fails(unsorted, "operand 0's dims must increase");
  InstructionInfo short_ = broadcast;
  short_.ints.pop_back();
  fails(short_, "has 29 ints; 4 steps and 2 results take 27, with the "
                "operands' dims 30");
  // Memory: result 0 (f32 [4, 8]) may be y's memory exactly (in place),
  // not x's (bf16), nor y's shifted by one element.
  {
    std::vector<TensorInfo> placed = tensors;
    placeOneAfterAnother(placed);
    EXPECT_TRUE(validateInstruction(fused, 0, placed).ok());
    auto onto = [&](size_t o, uint64_t shift) {
      std::vector<TensorInfo> moved = placed;
      moved[3].offset = moved[o].offset + shift;
      return moved;
    };
    EXPECT_TRUE(validateInstruction(fused, 0, onto(1, 0)).ok());
    for (auto [o, shift] : {std::pair<size_t, uint64_t>{0, 0}, {1, 4}}) {
      Status st = validateInstruction(fused, 0, onto(o, shift));
      EXPECT_NE(st.message().find("result 0 shares memory with operand " +
                                  std::to_string(o)),
                std::string::npos)
          << st.toString();
    }
  }
  // An i32 operand is an integer register: no convert to f32 in the loop.
  InstructionInfo integer = fused;
  integer.operands = {6, 1, 2};
  fails(integer, "step 0: convert does not take these dtypes");
  InstructionInfo narrow = fused;
  narrow.operands = {8, 1, 2};
  fails(narrow, "operand 0 is not a float, i32, i64, ui32, ui64 or i1");
  InstructionInfo resultShape = fused;
  resultShape.results = {3, 2};
  fails(resultShape, "has the wrong shape for its operands");
  InstructionInfo floats = fused;
  floats.floats = {1.0};
  fails(floats, "expects");
  // An i1 select (the fp16 step's skip flag) is a step like a float one.
  InstructionInfo select;
  select.op = Opcode::FusedElementwise;
  select.operands = {7, 7, 1};
  select.results = {7};
  // clang-format off
  select.ints = {2,
                 op(Opcode::Compare), type(DType::I1), 2, 2, -1, 1,
                 op(Opcode::Select), type(DType::I1), 0, 1, 3, 0,
                 4};
  // clang-format on
  EXPECT_TRUE(validateInstruction(select, 0, tensors).ok());
}

// ConvertGroup: N pairs of one pair of float dtypes, each of one shape.
TEST(Executable, ChecksConvertGroups) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {4, 8}),  tensor(DType::F32, {8}),  // 0, 1
      tensor(DType::BF16, {4, 8}), tensor(DType::BF16, {8}), // 2, 3
      tensor(DType::F16, {8}),     tensor(DType::I32, {8}),  // 4, 5
      tensor(DType::F64, {8})};                              // 6
  InstructionInfo group;
  group.op = Opcode::ConvertGroup;
  group.operands = {0, 1};
  group.results = {2, 3};
  EXPECT_TRUE(validateInstruction(group, 0, tensors).ok());
  auto fails = [&](const InstructionInfo &inst, const std::string &words) {
    expectRefused(inst, tensors, words);
  };
  InstructionInfo swapped = group; // [4, 8] into [8]
  swapped.results = {3, 2};
  fails(swapped, "has the wrong shape for its operands");
  InstructionInfo mixedTarget = group;
  mixedTarget.results = {2, 4};
  fails(mixedTarget, "every pair must convert the first pair's dtypes");
  InstructionInfo mixedSource = group;
  mixedSource.operands = {0, 6};
  fails(mixedSource, "every pair must convert the first pair's dtypes");
  InstructionInfo integer = group;
  integer.results = {2, 5};
  fails(integer, "must be a float tensor");
  InstructionInfo uneven = group;
  uneven.results = {2};
  fails(uneven, "expects 2 operands and 2 results, has 2 and 1");
  InstructionInfo none;
  none.op = Opcode::ConvertGroup;
  fails(none, "needs at least one operand");
  InstructionInfo withInts = group;
  withInts.ints = {1};
  fails(withInts, "expects 0 and 0");
}

// Attention reads each of its tensors through ints[2]'s seq_major bit
// ([B, S, H, D] when set): shapes are checked as [B, H, S, D] after the
// swap, and bits past the instruction's tensors are refused.
TEST(Executable, ChecksAttentionLayouts) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {2, 4, 8, 16}), // 0: [B, H, S, D]
      tensor(DType::F32, {2, 8, 4, 16}), // 1: the same, [B, S, H, D]
      tensor(DType::F32, {2, 4, 8, 8}),  // 2: another head size
      tensor(DType::BF16, {2, 8, 4, 16})};
  InstructionInfo canonical;
  canonical.op = Opcode::Attention;
  canonical.operands = {0, 0, 0};
  canonical.results = {0};
  canonical.ints = {1, 0, 0, 0, 0, 0};
  canonical.floats = {0.25};
  EXPECT_TRUE(validateInstruction(canonical, 0, tensors).ok());
  InstructionInfo seqMajor = canonical; // q and the result [B, S, H, D]
  seqMajor.operands = {1, 0, 0};
  seqMajor.results = {1};
  seqMajor.ints = {1, 0, 0b1001, 0, 0, 0};
  EXPECT_TRUE(validateInstruction(seqMajor, 0, tensors).ok());
  auto fails = [&](const InstructionInfo &inst, const std::string &words) {
    expectRefused(inst, tensors, words);
  };
  // q stored [B, S, H, D] with its bit clear reads as 8 heads of 4
  // positions (grouped over k's 4 heads), so the result is the wrong shape.
  InstructionInfo unlisted = seqMajor;
  unlisted.ints = {1, 0, 0b1000, 0, 0, 0};
  fails(unlisted, "has the wrong shape for its operands");
  InstructionInfo otherHeadSize = canonical;
  otherHeadSize.operands = {0, 2, 2};
  fails(otherHeadSize, "q, k and v shapes are inconsistent");
  InstructionInfo resultUnlisted = seqMajor;
  resultUnlisted.ints = {1, 0, 0b0001, 0, 0, 0};
  fails(resultUnlisted, "has the wrong shape for its operands");
  InstructionInfo pastTheTensors = canonical;
  pastTheTensors.ints = {1, 0, 0b10000, 0, 0, 0};
  fails(pastTheTensors, "seq_major bits 16 name a tensor");
  InstructionInfo twoInts = canonical; // a version 12 instruction
  twoInts.ints = {1, 0};
  fails(twoInts, "expects 6");
  InstructionInfo threeInts = canonical; // a version 15 instruction
  threeInts.ints = {1, 0, 0};
  fails(threeInts, "expects 6");
  // floats [scale, softcap] (version 31): the cap finite and positive.
  InstructionInfo capped = canonical;
  capped.floats = {0.25, 50.0};
  EXPECT_TRUE(validateInstruction(capped, 0, tensors).ok());
  capped.floats = {0.25, 0.0};
  fails(capped, "softcap 0.000000 must be finite and positive");
  capped.floats = {0.25, std::numeric_limits<double>::infinity()};
  fails(capped, "must be finite and positive");
  capped.floats = {0.25, 50.0, 1.0};
  fails(capped, "expects 7 and 3");
  // floats [scale, softcap or 0, ratio] and the stream's ints (version
  // 32): the ratio in [0, 1), the stream [seed] or [seed, axis, stride].
  InstructionInfo dropped = canonical;
  dropped.floats = {0.25, 0.0, 0.1};
  dropped.ints = {1, 0, 0, 0, 0, 0, 42};
  EXPECT_TRUE(validateInstruction(dropped, 0, tensors).ok());
  dropped.ints = {1, 0, 0, 0, 0, 0, 42, 0, 7};
  EXPECT_TRUE(validateInstruction(dropped, 0, tensors).ok());
  dropped.floats = {0.25, 50.0, 0.1};
  EXPECT_TRUE(validateInstruction(dropped, 0, tensors).ok());
  dropped.floats = {0.25, 0.0, 1.0};
  fails(dropped, "dropout ratio 1.000000 is outside [0, 1)");
  dropped.floats = {0.25, -1.0, 0.1};
  fails(dropped, "softcap -1.000000 must be finite and positive");
  dropped.floats = {0.25, 0.0, 0.1};
  dropped.ints = {1, 0, 0, 0, 0, 0};
  fails(dropped, "expects 7 and 3");
  dropped.ints = {1, 0, 0, 0, 0, 0, 42, 0};
  fails(dropped, "expects 7 and 3");
  // On a block of the heads (version 33): [seed, data axis, stride, tensor
  // axis, head blocks] (the axes and the blocks against the mesh are the
  // loader's).
  dropped.ints = {1, 0, 0, 0, 0, 0, 42, 0, 0, 1, 2};
  EXPECT_TRUE(validateInstruction(dropped, 0, tensors).ok());
  dropped.ints = {1, 0, 0, 0, 0, 0, 42, 0, 0, 1};
  fails(dropped, "expects 7 and 3");
  // The gradient: q, k, v, the cotangent, then dq, dk, dv (bits 4..6).
  InstructionInfo grad;
  grad.op = Opcode::AttentionGrad;
  grad.operands = {1, 1, 1, 1};
  grad.results = {0, 1, 1};
  grad.ints = {0, 0, 0b1101111, 0, 0, 0};
  grad.floats = {0.25};
  EXPECT_TRUE(validateInstruction(grad, 0, tensors).ok());
  InstructionInfo gradWrong = grad; // dq stored [B, H, S, D] but listed
  gradWrong.ints = {0, 0, 0b1111111, 0, 0, 0};
  fails(gradWrong, "gradient 0 must have the shape and dtype of its operand");
  InstructionInfo gradDtype = grad;
  gradDtype.results = {0, 3, 1};
  fails(gradDtype, "gradient 1 must have the shape and dtype of its operand");
}

// q, k and v as windows of one fused projection (ints[3..4] = [Hq, Hk]):
// each operand sequence-major with Hq + 2 Hk heads; the results are the
// windows' logical shapes.
TEST(Executable, ChecksQkvWindows) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {2, 8, 8, 16}), // 0: 4 query, 2 key, 2 value heads
      tensor(DType::F32, {2, 8, 4, 16}), // 1: the result, [B, S, Hq, D]
      tensor(DType::F32, {2, 8, 2, 16}), // 2: dk and dv
      tensor(DType::F32, {2, 8, 6, 16})};
  InstructionInfo attention;
  attention.op = Opcode::Attention;
  attention.operands = {0, 0, 0};
  attention.results = {1};
  attention.ints = {1, 0, 0b1111, 4, 2, 0};
  attention.floats = {0.25};
  EXPECT_TRUE(validateInstruction(attention, 0, tensors).ok());
  InstructionInfo grad;
  grad.op = Opcode::AttentionGrad;
  grad.operands = {0, 0, 0, 1};
  grad.results = {1, 2, 2};
  grad.ints = {1, 0, 0b1111111, 4, 2, 0};
  grad.floats = {0.25};
  EXPECT_TRUE(validateInstruction(grad, 0, tensors).ok());
  auto fails = [&](const InstructionInfo &inst, const std::string &words) {
    expectRefused(inst, tensors, words);
  };
  InstructionInfo wrongHeads = attention; // 3 + 2 * 2 = 7, not 8
  wrongHeads.ints = {1, 0, 0b1111, 3, 2, 0};
  fails(wrongHeads, "need q, k and v of one shape with 7 heads");
  InstructionInfo headMajor = attention;
  headMajor.ints = {1, 0, 0b1110, 4, 2, 0};
  fails(headMajor, "need q, k and v sequence-major");
  InstructionInfo oneSided = attention;
  oneSided.ints = {1, 0, 0b1111, 4, 0, 0};
  fails(oneSided, "qkv heads [4, 0] must both be at least 1");
  InstructionInfo smaller = attention; // 6 stored heads for [4, 2]
  smaller.operands = {3, 3, 3};
  fails(smaller, "with 8 heads");
  InstructionInfo otherKey = attention; // k of another shape
  otherKey.operands = {0, 3, 0};
  fails(otherKey, "need q, k and v of one shape");
  InstructionInfo huge = attention; // Hq + 2 Hk would overflow
  huge.ints = {1, 0, 0b1111, int64_t(1) << 62, int64_t(1) << 62, 0};
  fails(huge, "with that many heads");
  InstructionInfo resultWindow = attention; // the result is not a window
  resultWindow.results = {0};
  fails(resultWindow, "has the wrong shape for its operands");
  InstructionInfo gradWindow = grad; // nor are three gradients
  gradWindow.results = {1, 0, 2};
  fails(gradWindow, "gradient 1 must have the shape and dtype of its operand");
  InstructionInfo packed = grad; // one: the projection's, as q, k and v
  packed.results = {0};
  EXPECT_TRUE(validateInstruction(packed, 0, tensors).ok());
  InstructionInfo packedHeadMajor = packed;
  packedHeadMajor.ints = {1, 0, 0b0101111, 4, 2, 0};
  fails(packedHeadMajor, "must be stored as q, k and v are");
  InstructionInfo packedShape = packed;
  packedShape.results = {3};
  fails(packedShape, "must be stored as q, k and v are");
  InstructionInfo packedWithoutWindows = packed;
  packedWithoutWindows.ints = {1, 0, 0b1111111, 0, 0, 0};
  fails(packedWithoutWindows, "expects 4 operands and 3 results");
  // The kernels read q, k, v and the cotangent after writing: no gradient
  // may share their memory. Tensors laid out one after another, and a
  // fifth of q's shape in its own bytes.
  tensors.push_back(tensors[0]);
  placeOneAfterAnother(tensors);
  InstructionInfo own = packed;
  own.results = {4};
  EXPECT_TRUE(validateInstruction(own, 0, tensors).ok());
  fails(packed, "a gradient shares memory with q, k, v, the cotangent");
  InstructionInfo overCotangent = grad; // dq written over the cotangent
  fails(overCotangent, "a gradient shares memory with q, k, v, the cotangent");
}

// ints[5] (version 19): the forward gives each score row's log-sum-exp as a
// second result, [B, Hq, Sq] of the compute type, and the gradient reads it
// with the forward's result (stored as the cotangent) after the mask; no
// gradient may be written over either.
TEST(Executable, ChecksAttentionStatistics) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {2, 8, 4, 16}), // 0: q, k, v, cotangent, result
      tensor(DType::F32, {2, 4, 8}),      // 1: the log-sum-exps
      tensor(DType::BF16, {2, 4, 8}),     // 2: 16-bit log-sum-exps
      tensor(DType::F32, {2, 8, 4}),      // 3: rows in [B, S, H] order
      tensor(DType::BF16, {2, 4, 8, 16}), // 4: a head-major result
      tensor(DType::BF16, {2, 8, 4, 16}), // 5: the result
      tensor(DType::BF16, {1, 1, 8, 8}),  // 6: a mask
      tensor(DType::BF16, {2, 8, 4, 16}), // 7-9: dq, dk, dv
      tensor(DType::BF16, {2, 8, 4, 16}), tensor(DType::BF16, {2, 8, 4, 16})};
  placeOneAfterAnother(tensors);
  auto fails = [&](const InstructionInfo &inst, const std::string &words) {
    expectRefused(inst, tensors, words);
  };
  InstructionInfo forward;
  forward.op = Opcode::Attention;
  forward.operands = {0, 0, 0};
  forward.results = {5, 1};
  forward.ints = {1, 0, 0b1111, 0, 0, 1};
  forward.floats = {0.25};
  EXPECT_TRUE(validateInstruction(forward, 0, tensors).ok());
  InstructionInfo oneResult = forward;
  oneResult.results = {5};
  fails(oneResult, "expects 3 operands and 2 results");
  InstructionInfo flag = forward;
  flag.ints[5] = 2;
  fails(flag, "stats flag 2 must be 0 or 1");
  InstructionInfo narrow = forward;
  narrow.results = {5, 2};
  fails(narrow, "the log-sum-exps must be f32");
  InstructionInfo seqOrder = forward;
  seqOrder.results = {5, 3};
  fails(seqOrder, "wrong shape");
  TensorInfo atQ = tensors[1]; // 10: log-sum-exps in q's first bytes
  atQ.offset = 0;
  tensors.push_back(atQ);
  InstructionInfo overQ = forward;
  overQ.results = {5, 10};
  fails(overQ, "the log-sum-exps share memory with an operand");
  InstructionInfo grad;
  grad.op = Opcode::AttentionGrad;
  grad.operands = {0, 0, 0, 0, 5, 1};
  grad.results = {7, 8, 9};
  grad.ints = {1, 0, 0b1111111, 0, 0, 1};
  grad.floats = {0.25};
  EXPECT_TRUE(validateInstruction(grad, 0, tensors).ok());
  InstructionInfo masked = grad; // the mask before the statistics
  masked.operands = {0, 0, 0, 0, 6, 5, 1};
  masked.ints[1] = 1;
  EXPECT_TRUE(validateInstruction(masked, 0, tensors).ok());
  InstructionInfo missing = grad;
  missing.operands = {0, 0, 0, 0};
  fails(missing, "expects 6 operands and 3 results");
  InstructionInfo headMajor = grad; // the result stored otherwise
  headMajor.operands = {0, 0, 0, 0, 4, 1};
  fails(headMajor, "the forward's result must be stored as the cotangent");
  InstructionInfo lse16 = grad;
  lse16.operands = {0, 0, 0, 0, 5, 2};
  fails(lse16, "the log-sum-exps must be f32 [B, Hq, Sq]");
  InstructionInfo overResult = grad; // dv written over the result
  overResult.results = {7, 8, 5};
  fails(overResult, "the forward's statistics");
  InstructionInfo overLse = grad; // dq written from the log-sum-exps on
  TensorInfo atLse = tensors[7];
  atLse.offset = tensors[1].offset;
  tensors.push_back(atLse); // 11
  overLse.results = {11, 8, 9};
  fails(overLse, "the mask or the forward's statistics");
  InstructionInfo overMask = masked; // dq from the mask's bytes on
  TensorInfo atMask = tensors[7];
  atMask.offset = tensors[6].offset;
  tensors.push_back(atMask); // 12
  overMask.results = {12, 8, 9};
  fails(overMask, "the mask or the forward's statistics");
  InstructionInfo resultOverQ = forward; // the result over q
  resultOverQ.results = {0, 1};
  fails(resultOverQ, "the result shares memory with an operand");
  InstructionInfo lseOverResult = forward;
  TensorInfo atResult = tensors[1];
  atResult.offset = tensors[5].offset;
  tensors.push_back(atResult); // 13
  lseOverResult.results = {5, 13};
  fails(lseOverResult, "the log-sum-exps share memory with the result");
}

// A sum of bf16 or f16 may be f32 (the compiler's widened sum); no other
// reduction, and no other dtype, changes type.
TEST(Executable, ChecksWidenedSums) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}), tensor(DType::F16, {4, 8}),
      tensor(DType::F32, {4}),     tensor(DType::F64, {4}),
      tensor(DType::F32, {4, 8}),  tensor(DType::BF16, {4})};
  InstructionInfo sum;
  sum.op = Opcode::ReduceSum;
  sum.ints = {1};
  for (uint32_t x : {0u, 1u}) {
    sum.operands = {x};
    sum.results = {2};
    EXPECT_TRUE(validateInstruction(sum, 0, tensors).ok()) << x;
  }
  InstructionInfo toF64 = sum;
  toF64.operands = {0};
  toF64.results = {3};
  expectRefused(toF64, tensors, "unsupported dtype");
  InstructionInfo narrowed = sum; // f32 to bf16
  narrowed.operands = {4};
  narrowed.results = {5};
  expectRefused(narrowed, tensors, "unsupported dtype");
  for (Opcode op : {Opcode::ReduceMax, Opcode::ReduceMean}) {
    InstructionInfo other = sum;
    other.op = op;
    other.operands = {0};
    other.results = {2};
    expectRefused(other, tensors, "unsupported dtype");
  }
}

// A norm's result has x's type, or for an f32 x bf16 or f16 (a norm the
// compiler narrowed); nothing else.
TEST(Executable, ChecksNarrowedNorms) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {4, 8}), tensor(DType::BF16, {4, 8}),
      tensor(DType::F16, {4, 8}), tensor(DType::F64, {4, 8}),
      tensor(DType::BF16, {8, 4})};
  for (Opcode op : {Opcode::LayerNorm, Opcode::RmsNorm}) {
    InstructionInfo norm;
    norm.op = op;
    norm.operands = {0};
    norm.results = {0};
    norm.ints = op == Opcode::LayerNorm ? std::vector<int64_t>{1, 0, 0}
                                        : std::vector<int64_t>{1, 0};
    norm.floats = {1e-5};
    for (uint32_t ok : {0u, 1u, 2u}) {
      norm.operands = {0};
      norm.results = {ok};
      EXPECT_TRUE(validateInstruction(norm, 0, tensors).ok()) << ok;
    }
    const char *words = "the result must have x's shape and x's dtype";
    for (auto [x, y] :
         {std::pair<uint32_t, uint32_t>{0, 3}, {1, 0}, {1, 2}, {0, 4}}) {
      norm.operands = {x};
      norm.results = {y};
      Status s = validateInstruction(norm, 0, tensors);
      EXPECT_NE(s.message().find(words), std::string::npos)
          << x << " -> " << y << " | " << s.toString();
    }
  }
}

TEST(Executable, ChecksNormGradParams) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {4, 8}),  tensor(DType::F32, {8}),
      tensor(DType::F64, {8}),     tensor(DType::F32, {4}),
      tensor(DType::BF16, {4, 8}), tensor(DType::BF16, {8}),
      tensor(DType::F16, {4, 8}),  tensor(DType::F64, {4, 8}),
      tensor(DType::BF16, {4, 7})};
  InstructionInfo inst;
  inst.op = Opcode::NormGradParams;
  inst.operands = {0, 1, 0};
  inst.results = {0, 1, 1};
  inst.ints = {1, 1, 1, 0, 0};
  inst.floats = {1e-5};
  ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
  InstructionInfo noBias = inst;
  noBias.ints = {1, 0, 0, 0, 0};
  noBias.results = {0, 1};
  ASSERT_TRUE(validateInstruction(noBias, 0, tensors).ok());
  const char *shapes = "scale and the parameters' gradients must have x's "
                       "dtype and the normalized shape";
  auto refused = [&](auto edit, const char *words) {
    InstructionInfo copy = inst;
    edit(copy);
    expectRefused(copy, tensors, words);
  };
  refused([](InstructionInfo &i) { i.results = {0, 1}; }, "results");
  refused([](InstructionInfo &i) { i.operands = {0, 1}; }, "operands");
  refused([](InstructionInfo &i) { i.ints = {2, 1, 1, 0, 0}; }, "invalid axis");
  refused([](InstructionInfo &i) { i.ints = {1, 1, 1}; }, "ints");
  refused([](InstructionInfo &i) { i.floats = {-1}; }, "or epsilon");
  refused([](InstructionInfo &i) { i.operands = {0, 3, 0}; }, shapes);
  refused([](InstructionInfo &i) { i.operands = {0, 2, 0}; }, shapes);
  refused([](InstructionInfo &i) { i.results = {0, 1, 3}; }, shapes);
  refused([](InstructionInfo &i) { i.results = {0, 2, 1}; }, shapes);
  refused(
      [](InstructionInfo &i) {
        i.operands = {4, 5, 4};
        i.results = {4, 5, 5};
      },
      "x must be f32 or f64");
  // Format 20: the addend (x's type) and the 16-bit copy (bf16 or f16 of
  // an f32 x's shape, last), each where its flag says.
  InstructionInfo summed = inst;
  summed.operands = {0, 1, 0, 0};
  summed.results = {0, 1, 1, 4};
  summed.ints = {1, 1, 1, 1, 1};
  ASSERT_TRUE(validateInstruction(summed, 0, tensors).ok());
  summed.results = {0, 1, 1, 6};
  ASSERT_TRUE(validateInstruction(summed, 0, tensors).ok());
  InstructionInfo copyOnly = noBias;
  copyOnly.results = {0, 1, 4};
  copyOnly.ints = {1, 0, 0, 0, 1};
  ASSERT_TRUE(validateInstruction(copyOnly, 0, tensors).ok());
  auto summedRefused = [&](auto edit, const char *words) {
    InstructionInfo copy = summed;
    edit(copy);
    expectRefused(copy, tensors, words);
  };
  summedRefused([](InstructionInfo &i) { i.operands = {0, 1, 0}; }, "operands");
  summedRefused([](InstructionInfo &i) { i.results = {0, 1, 1}; }, "results");
  summedRefused(
      [](InstructionInfo &i) {
        i.operands = {0, 1, 0, 7};
      },
      "must have the same dtype and shape");
  const char *narrow = "the narrowed input gradient must be bf16 or f16";
  summedRefused([](InstructionInfo &i) { i.results = {0, 1, 1, 0}; }, narrow);
  summedRefused([](InstructionInfo &i) { i.results = {0, 1, 1, 8}; }, narrow);
  summedRefused(
      [](InstructionInfo &i) {
        i.operands = {7, 2, 7, 7};
        i.results = {7, 2, 2, 4};
      },
      narrow);
  // Planned bytes: x [0, 128), the cotangent [128, 256); dx over the
  // cotangent's last half is refused, dx after it is fine, and so is dx
  // at a constant x's offset (constants live in the constant section).
  std::vector<TensorInfo> planned = tensors;
  auto at = [&](uint64_t offset) {
    TensorInfo t = tensors[0];
    t.offset = offset;
    t.size = 128;
    planned.push_back(t);
    return uint32_t(planned.size() - 1);
  };
  uint32_t x = at(0), g = at(128), over = at(192), after = at(256);
  InstructionInfo sized = inst;
  sized.operands = {x, 1, g};
  sized.results = {over, 1, 1};
  expectRefused(sized, planned, "result 0 shares memory with operand 2");
  sized.results = {after, 1, 1};
  EXPECT_TRUE(validateInstruction(sized, 0, planned).ok());
  // The input gradient may be exactly the addend's memory, nothing else.
  InstructionInfo inPlace = sized;
  inPlace.operands = {x, 1, g, after};
  inPlace.ints = {1, 1, 1, 1, 0};
  EXPECT_TRUE(validateInstruction(inPlace, 0, planned).ok());
  inPlace.results = {at(384), 1, 1};
  EXPECT_TRUE(validateInstruction(inPlace, 0, planned).ok());
  inPlace.operands = {x, 1, g, at(300)};
  expectRefused(inPlace, planned, "result 0 shares memory with operand 3");
  inPlace.operands = {x, 1, g, g};
  inPlace.results = {g, 1, 1};
  expectRefused(inPlace, planned, "result 0 shares memory with operand 2");
  planned[x].role = TensorRole::Constant;
  sized.results = {at(0), 1, 1};
  EXPECT_TRUE(validateInstruction(sized, 0, planned).ok());
}

// DotGeneralBiasGrad (format 17): DotGeneral's ints and sum_rhs, no
// batching dims, the sum of the summed operand's free dims in its dtype or
// (16-bit operands) f32, and no result over an operand or the other result.
TEST(Executable, ChecksDotGeneralBiasGrad) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}),   tensor(DType::BF16, {4, 2}), // 0, 1
      tensor(DType::F32, {8, 2}),    tensor(DType::F32, {8}),     // 2, 3
      tensor(DType::F32, {2}),       tensor(DType::BF16, {8}),    // 4, 5
      tensor(DType::F32, {4, 8}),    tensor(DType::F32, {4, 2}),  // 6, 7
      tensor(DType::F64, {8}),       tensor(DType::BF16, {8, 2}), // 8, 9
      tensor(DType::F32, {2, 4, 8}), tensor(DType::F32, {2, 4, 2}),
      tensor(DType::F32, {2, 8, 2}), tensor(DType::F32, {2, 8})}; // 10-13
  // dw = dy^T x, db = sum(dy): dy [4, 8] lhs, x [4, 2] rhs.
  InstructionInfo inst;
  inst.op = Opcode::DotGeneralBiasGrad;
  inst.operands = {0, 1};
  inst.results = {2, 3};
  inst.ints = {0, 1, 0, 0, int64_t(OperandRounding::Exact), 0};
  ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
  auto with = [&](auto edit) {
    InstructionInfo copy = inst;
    edit(copy);
    return copy;
  };
  // A 16-bit sum and product; rhs summed ([2]); f32 operands.
  EXPECT_TRUE(validateInstruction(with([](InstructionInfo &i) {
                                    i.results = {9, 5};
                                  }),
                                  0, tensors)
                  .ok());
  EXPECT_TRUE(validateInstruction(with([](InstructionInfo &i) {
                                    i.results = {2, 4};
                                    i.ints.back() = 1;
                                  }),
                                  0, tensors)
                  .ok());
  EXPECT_TRUE(validateInstruction(with([](InstructionInfo &i) {
                                    i.operands = {6, 7};
                                  }),
                                  0, tensors)
                  .ok());
  expectRefused(with([](InstructionInfo &i) { i.results = {2}; }), tensors,
                "results");
  expectRefused(with([](InstructionInfo &i) { i.ints.pop_back(); }), tensors,
                "malformed dimension numbers");
  expectRefused(with([](InstructionInfo &i) { i.ints.back() = 2; }), tensors,
                "sum_rhs must be 0 or 1");
  expectRefused(with([](InstructionInfo &i) {
                  i.results = {2, 4};
                }),
                tensors, "shape");
  expectRefused(with([](InstructionInfo &i) {
                  i.results = {2, 8};
                }),
                tensors, "the sum must have the operands' dtype");
  expectRefused(with([](InstructionInfo &i) {
                  i.operands = {6, 7};
                  i.results = {2, 5};
                }),
                tensors, "the sum must have the operands' dtype");
  // Batched: dw[b] = dy[b]^T x[b] has no single sum.
  expectRefused(with([](InstructionInfo &i) {
                  i.operands = {10, 11};
                  i.results = {12, 13};
                  i.ints = {1, 1, 0, 0, 1, 1, int64_t(OperandRounding::Exact),
                            0};
                }),
                tensors, "the sum takes no batching dimensions");
  // Planned bytes: dy at [0, 64); a product over dy's second half, or a sum
  // inside the product, is refused; apart, fine.
  std::vector<TensorInfo> planned = tensors;
  auto at = [&](uint32_t like, uint64_t offset, uint64_t size) {
    return placedCopy(planned, like, offset, size);
  };
  uint32_t dy = at(0, 0, 64), x = at(1, 64, 16);
  InstructionInfo sized = inst;
  sized.operands = {dy, x};
  sized.results = {at(2, 32, 64), at(3, 128, 32)};
  expectRefused(sized, planned, "a result shares memory with an operand");
  sized.results = {at(2, 128, 64), at(3, 160, 32)};
  expectRefused(sized, planned, "the product and the sum share memory");
  sized.results = {at(2, 128, 64), at(3, 192, 32)};
  EXPECT_TRUE(validateInstruction(sized, 0, planned).ok());
}

// Cross-entropy's classes (format 15): in [1, C], or 0 for C = 0.
TEST(Executable, ChecksCrossEntropyClasses) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {4, 8}), tensor(DType::I64, {4}),
      tensor(DType::F32, {}), tensor(DType::F32, {4}),
      tensor(DType::F32, {4, 0})};
  InstructionInfo loss;
  loss.op = Opcode::SoftmaxCrossEntropy;
  loss.operands = {0, 1};
  loss.results = {2};
  InstructionInfo grad;
  grad.op = Opcode::SoftmaxCrossEntropyGrad;
  grad.operands = {0, 1, 3};
  grad.results = {0};
  const char *words = "is not in [1, the logits' last dimension]";
  for (int64_t classes : {1, 5, 8}) {
    loss.ints = {2, 0, 0, classes};
    grad.ints = {classes};
    EXPECT_TRUE(validateInstruction(loss, 0, tensors).ok()) << classes;
    EXPECT_TRUE(validateInstruction(grad, 0, tensors).ok()) << classes;
  }
  for (int64_t classes : {0, 9, -1}) {
    loss.ints = {2, 0, 0, classes};
    grad.ints = {classes};
    expectRefused(loss, tensors, words);
    expectRefused(grad, tensors, words);
  }
  loss.operands = {4, 1};
  loss.ints = {2, 0, 0, 0};
  EXPECT_TRUE(validateInstruction(loss, 0, tensors).ok());
  loss.ints = {2, 0, 0};
  expectRefused(loss, tensors, "expects 4 and 0");
}

// SoftmaxCrossEntropyAndGrad (format 18): the loss's ints and result, the
// gradient's weight and result, the gradient over the logits only whole
// and the loss over nothing.
TEST(Executable, ChecksCrossEntropyAndGrad) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}), tensor(DType::I64, {4}), // 0, 1
      tensor(DType::F32, {4}),     tensor(DType::F32, {}),  // 2, 3
      tensor(DType::BF16, {4, 8}), tensor(DType::F32, {4, 8}),
      tensor(DType::F32, {2}),     tensor(DType::F32, {4})}; // 4-7
  InstructionInfo inst;
  inst.op = Opcode::SoftmaxCrossEntropyAndGrad;
  inst.operands = {0, 1, 2};
  inst.results = {3, 4};
  inst.ints = {2, 1, -100, 8};
  ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
  auto with = [&](auto edit) {
    InstructionInfo copy = inst;
    edit(copy);
    return copy;
  };
  // reduction none: one loss per position (the weight's shape).
  EXPECT_TRUE(validateInstruction(with([](InstructionInfo &i) {
                                    i.ints[0] = 0;
                                    i.results = {7, 4};
                                  }),
                                  0, tensors)
                  .ok());
  expectRefused(with([](InstructionInfo &i) { i.results = {3}; }), tensors,
                "expects 3 operands and 2 results");
  expectRefused(with([](InstructionInfo &i) { i.ints.pop_back(); }), tensors,
                "expects 4 and 0");
  expectRefused(with([](InstructionInfo &i) { i.ints[3] = 9; }), tensors,
                "classes 9 is not in");
  expectRefused(with([](InstructionInfo &i) {
                  i.results = {7, 4};
                }),
                tensors, "wrong shape");
  expectRefused(with([](InstructionInfo &i) {
                  i.results = {3, 5};
                }),
                tensors, "must have the same dtype and shape");
  expectRefused(with([](InstructionInfo &i) {
                  i.operands = {0, 1, 6};
                }),
                tensors, "logits, targets and weight are inconsistent");
  // Planned bytes: the logits at [0, 64); the gradient on them whole is
  // fine, half over them or over the weight is not, nor a loss inside
  // either.
  std::vector<TensorInfo> planned = tensors;
  auto at = [&](uint32_t like, uint64_t offset, uint64_t size) {
    return placedCopy(planned, like, offset, size);
  };
  uint32_t logits = at(0, 0, 64), weight = at(2, 64, 16);
  uint32_t targets = at(1, 96, 32);
  InstructionInfo sized = inst;
  sized.operands = {logits, targets, weight};
  const char *words = "the loss may share no operand's memory";
  sized.results = {at(3, 128, 4), at(4, 0, 64)};
  EXPECT_TRUE(validateInstruction(sized, 0, planned).ok());
  sized.results = {at(3, 128, 4), at(4, 192, 64)};
  EXPECT_TRUE(validateInstruction(sized, 0, planned).ok());
  sized.results = {at(3, 128, 4), at(4, 32, 64)};
  expectRefused(sized, planned, words);
  sized.results = {at(3, 128, 4), at(4, 64, 64)};
  expectRefused(sized, planned, words);
  sized.results = {at(3, 8, 4), at(4, 192, 64)};
  expectRefused(sized, planned, words);
  sized.results = {at(3, 72, 4), at(4, 192, 64)};
  expectRefused(sized, planned, words);
  sized.results = {at(3, 200, 4), at(4, 192, 64)};
  expectRefused(sized, planned, words);
  sized.results = {at(3, 200, 4), at(4, 96, 64)}; // over the targets
  expectRefused(sized, planned, words);
  // At the logits' offset of another arena: apart, fine; the logits'
  // offset in their own arena but another role is not their memory.
  uint32_t otherArena = at(4, 0, 64);
  planned[otherArena].arena = planned[logits].arena + 1;
  sized.results = {at(3, 200, 4), otherArena};
  EXPECT_TRUE(validateInstruction(sized, 0, planned).ok());
  uint32_t otherRole = at(4, 0, 64);
  planned[otherRole].role = TensorRole::Output;
  sized.results = {at(3, 200, 4), otherRole};
  expectRefused(sized, planned, words);
}

// Argsort (format version 24): ints [axis, descending, total_order], a
// float or i32/i64 operand, an i64 result of its shape.
TEST(Executable, ChecksArgsort) {
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {3, 5}), tensor(DType::I64, {3, 5}),
      tensor(DType::I32, {3, 5}), tensor(DType::I1, {3, 5}),
      tensor(DType::I64, {5, 3})};
  InstructionInfo inst;
  inst.op = Opcode::Argsort;
  inst.operands = {0};
  inst.results = {1};
  inst.ints = {1, 1, 1};
  ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
  auto refused = [&](auto edit, const char *words) {
    InstructionInfo copy = inst;
    edit(copy);
    expectRefused(copy, tensors, words);
  };
  const char *flags = "invalid axis, direction or order";
  const char *types = "sorts f64, f32, f16, bf16, i32 or i64 into i64 indices";
  refused([](InstructionInfo &i) { i.ints = {2, 0, 0}; }, flags);
  refused([](InstructionInfo &i) { i.ints = {-1, 0, 0}; }, flags);
  refused([](InstructionInfo &i) { i.ints = {0, 2, 0}; }, flags);
  refused([](InstructionInfo &i) { i.ints = {0, 0, 7}; }, flags);
  refused([](InstructionInfo &i) { i.ints = {0, 0}; }, "ints");
  refused([](InstructionInfo &i) { i.results = {2}; }, types);
  refused([](InstructionInfo &i) { i.operands = {3}; }, types);
  refused([](InstructionInfo &i) { i.results = {4}; }, "shape");
}

// Dropout's stream: [seed], [seed, axis, stride], or (format 33) on a
// block of one dimension [seed, axis, stride, tensor axis, blocks, dim]
// (the axes and the blocks against the mesh are the loader's).
TEST(Executable, ChecksDropoutStreams) {
  std::vector<TensorInfo> tensors = {tensor(DType::F32, {3, 4}),
                                     tensor(DType::I1, {3, 4})};
  InstructionInfo inst;
  inst.op = Opcode::Dropout;
  inst.operands = {0};
  inst.results = {0, 1};
  inst.floats = {0.1};
  for (std::vector<int64_t> ints : {std::vector<int64_t>{7},
                                    {7, 0, 9},
                                    {7, 0, 0, 1, 2, 0},
                                    {7, 0, 9, 1, 2, 1}}) {
    inst.ints = ints;
    EXPECT_TRUE(validateInstruction(inst, 0, tensors).ok()) << ints.size();
  }
  const char *count = "expects ints [seed], [seed, axis, stride] or [seed, "
                      "axis, stride, tensor axis, blocks, dim]";
  for (std::vector<int64_t> ints :
       {std::vector<int64_t>{}, {7, 0}, {7, 0, 0, 1, 2}}) {
    inst.ints = ints;
    expectRefused(inst, tensors, count);
  }
  inst.ints = {7, 0, 0, 1, 2, 2};
  expectRefused(inst, tensors,
                "block dimension 2 is not a dimension of the operand");
  inst.ints = {7, 0, 0, 1, 2, -1};
  expectRefused(inst, tensors,
                "block dimension -1 is not a dimension of the operand");
}

// ExtractPatches and FoldPatches (format 29): x [N, C, S...] and patches
// [C, K..., N, O...] of one dtype (FoldPatches': a float), ints the kernel,
// strides, dilations and low paddings, each bounded so that no position's
// arithmetic overflows.
TEST(Executable, ChecksPatches) {
  // 0: x [2, 3, 8, 8], 1: patches [3, 3, 3, 2, 4, 4], 2: an i32 x, 3: i32
  // patches, 4: patches of the wrong kernel.
  std::vector<TensorInfo> tensors = {
      tensor(DType::F32, {2, 3, 8, 8}), tensor(DType::F32, {3, 3, 3, 2, 4, 4}),
      tensor(DType::I32, {2, 3, 8, 8}), tensor(DType::I32, {3, 3, 3, 2, 4, 4}),
      tensor(DType::F32, {3, 2, 3, 2, 4, 4})};
  for (Opcode op : {Opcode::ExtractPatches, Opcode::FoldPatches}) {
    SCOPED_TRACE(opcodeName(op));
    bool extract = op == Opcode::ExtractPatches;
    InstructionInfo inst;
    inst.op = op;
    inst.operands = {extract ? 0u : 1u};
    inst.results = {extract ? 1u : 0u};
    inst.ints = {3, 3, 2, 2, 1, 1, 1, 1};
    ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
    auto refused = [&](auto edit, const char *words) {
      InstructionInfo copy = inst;
      edit(copy);
      expectRefused(copy, tensors, words);
    };
    const char *window = "a window needs kernel, strides and dilation";
    refused([](InstructionInfo &i) { i.ints[2] = 0; }, window);
    refused([](InstructionInfo &i) { i.ints[4] = 0; }, window);
    refused([](InstructionInfo &i) { i.ints[6] = -1; }, window);
    refused([](InstructionInfo &i) { i.ints[3] = int64_t(1) << 40; }, window);
    refused([](InstructionInfo &i) { i.ints.pop_back(); },
            "4 ints per spatial");
    refused(
        [&](InstructionInfo &i) { (extract ? i.results : i.operands) = {4}; },
        "shape");
    refused(
        [&](InstructionInfo &i) { (extract ? i.operands : i.results) = {2}; },
        "dtype");
  }
  // Integer patches are extracted (copied) but not folded (summed).
  InstructionInfo fold;
  fold.op = Opcode::FoldPatches;
  fold.operands = {3};
  fold.results = {2};
  fold.ints = {3, 3, 2, 2, 1, 1, 1, 1};
  expectRefused(fold, tensors, "not f64, f32, f16 or bf16");
  InstructionInfo extract = fold;
  extract.op = Opcode::ExtractPatches;
  extract.operands = {2};
  extract.results = {3};
  EXPECT_TRUE(validateInstruction(extract, 0, tensors).ok());
}

// dot_general_bias_gelu (format 25): dot_general_bias's operands, its
// dimension numbers and the GELU's approximation; two results of the
// product's type and shape, apart from the operands and each other.
TEST(Executable, ChecksDotGeneralBiasGelu) {
  // 0: x [4, 8], 1: w [16, 8], 2: b [16], 3-4: results [4, 16], 5: an f32
  // result, 6: a [4, 8] result.
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}),  tensor(DType::BF16, {16, 8}),
      tensor(DType::BF16, {16}),    tensor(DType::BF16, {4, 16}),
      tensor(DType::BF16, {4, 16}), tensor(DType::F32, {4, 16}),
      tensor(DType::BF16, {4, 8})};
  placeOneAfterAnother(tensors);
  InstructionInfo inst;
  inst.op = Opcode::DotGeneralBiasGelu;
  inst.operands = {0, 1, 2};
  inst.results = {3, 4};
  inst.ints = {0, 1, 1, 1, int64_t(OperandRounding::Exact), 1};
  ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
  auto refused = [&](auto edit, const char *words) {
    InstructionInfo copy = inst;
    edit(copy);
    expectRefused(copy, tensors, words);
  };
  refused([](InstructionInfo &i) { i.ints.back() = 2; },
          "the GELU approximation must be 0 (erf) or 1 (tanh)");
  refused([](InstructionInfo &i) { i.ints.pop_back(); },
          "malformed dimension numbers");
  refused([](InstructionInfo &i) { i.results = {3}; }, "result");
  refused([](InstructionInfo &i) { i.operands = {0, 1}; }, "operand");
  refused([](InstructionInfo &i) { i.results = {3, 5}; }, "type");
  refused(
      [](InstructionInfo &i) {
        i.results = {6, 4};
      },
      "must have the same dtype and shape");
  refused(
      [](InstructionInfo &i) {
        i.results = {3, 3};
      },
      "the GELU and the pre-activation share memory");
  std::vector<TensorInfo> overX = tensors;
  overX[4].offset = 0;
  expectRefused(inst, overX, "a result shares memory with an operand");
}

// The bitwise ops and bitcast (format 26): integers of one dtype and shape
// (two operands but for not, pop_count and count_leading_zeros); a bitcast
// to a dtype of the operand's element size, of its shape.
TEST(Executable, ChecksBitwiseAndBitcast) {
  // 0-2: ui32 [4], 3: f32 [4], 4: f64 [4], 5: i1 [4], 6: u8 [4], 7: ui32 [2].
  std::vector<TensorInfo> tensors = {
      tensor(DType::U32, {4}), tensor(DType::U32, {4}), tensor(DType::U32, {4}),
      tensor(DType::F32, {4}), tensor(DType::F64, {4}), tensor(DType::I1, {4}),
      tensor(DType::U8, {4}),  tensor(DType::U32, {2})};
  placeOneAfterAnother(tensors);
  InstructionInfo xorOp;
  xorOp.op = Opcode::Xor;
  xorOp.operands = {0, 1};
  xorOp.results = {2};
  ASSERT_TRUE(validateInstruction(xorOp, 0, tensors).ok());
  InstructionInfo notOp = xorOp;
  notOp.op = Opcode::Not;
  notOp.operands = {0};
  ASSERT_TRUE(validateInstruction(notOp, 0, tensors).ok());
  auto refused = [&](InstructionInfo inst, auto edit, const char *words) {
    edit(inst);
    expectRefused(inst, tensors, words);
  };
  refused(
      xorOp, [](InstructionInfo &i) { i.operands = {0}; }, "operand");
  refused(
      notOp,
      [](InstructionInfo &i) {
        i.operands = {0, 1};
      },
      "operand");
  refused(
      xorOp,
      [](InstructionInfo &i) {
        i.operands = {3, 3}, i.results = {3};
      },
      "bitwise ops take 8- to 64-bit integers, not f32");
  refused(
      xorOp,
      [](InstructionInfo &i) {
        i.operands = {5, 5}, i.results = {5};
      },
      "not i1");
  refused(
      xorOp,
      [](InstructionInfo &i) {
        i.operands = {0, 6};
      },
      "the same dtype and shape");
  refused(
      xorOp, [](InstructionInfo &i) { i.results = {7}; },
      "the same dtype and shape");
  refused(
      xorOp, [](InstructionInfo &i) { i.ints = {1}; }, "expects 0 and 0");

  InstructionInfo bitcast;
  bitcast.op = Opcode::Bitcast;
  bitcast.operands = {0};
  bitcast.results = {3};
  ASSERT_TRUE(validateInstruction(bitcast, 0, tensors).ok());
  refused(
      bitcast, [](InstructionInfo &i) { i.results = {4}; },
      "cannot bitcast ui32 to f64");
  refused(
      bitcast, [](InstructionInfo &i) { i.operands = {6}, i.results = {5}; },
      "cannot bitcast ui8 to i1");
  refused(
      bitcast, [](InstructionInfo &i) { i.results = {7}; }, "shape");
}

// dot_general_gelu_grad (format 25): dot_general's operands, the
// pre-activation of the product's type and shape, dot_general's dimension
// numbers and the approximation; the result apart from every operand.
TEST(Executable, ChecksDotGeneralGeluGrad) {
  // 0: dy [4, 8], 1: v [8, 16], 2: pre [4, 16], 3: the result, 4: an f32
  // pre-activation, 5: a [4, 8] one.
  std::vector<TensorInfo> tensors = {
      tensor(DType::BF16, {4, 8}),  tensor(DType::BF16, {8, 16}),
      tensor(DType::BF16, {4, 16}), tensor(DType::BF16, {4, 16}),
      tensor(DType::F32, {4, 16}),  tensor(DType::BF16, {4, 8})};
  placeOneAfterAnother(tensors);
  InstructionInfo inst;
  inst.op = Opcode::DotGeneralGeluGrad;
  inst.operands = {0, 1, 2};
  inst.results = {3};
  inst.ints = {0, 1, 1, 0, int64_t(OperandRounding::Exact), 0};
  ASSERT_TRUE(validateInstruction(inst, 0, tensors).ok());
  auto refused = [&](auto edit, const char *words) {
    InstructionInfo copy = inst;
    edit(copy);
    expectRefused(copy, tensors, words);
  };
  refused([](InstructionInfo &i) { i.ints.back() = -1; },
          "the GELU approximation must be 0 (erf) or 1 (tanh)");
  refused([](InstructionInfo &i) { i.ints.pop_back(); },
          "malformed dimension numbers");
  refused([](InstructionInfo &i) { i.operands = {0, 1}; }, "operand");
  refused(
      [](InstructionInfo &i) {
        i.operands = {0, 1, 4};
      },
      "the pre-activation must have the result's dtype");
  refused([](InstructionInfo &i) { i.operands = {0, 1, 5}; }, "shape");
  refused([](InstructionInfo &i) { i.results = {2}; },
          "the result shares memory with an operand");
}

} // namespace
} // namespace trainc
