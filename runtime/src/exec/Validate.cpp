//===- Validate.cpp - Instruction checks before anything runs -------------===//
//
// The runtime does not trust a file: every instruction's arity, dtypes,
// attributes and shapes are checked against its opcode's contract
// (executable.fbs, enum Opcode) when the executable is loaded, so kernels never
// index outside their tensors. The rules mirror the graph dialect's verifier.
// The composite ops' rules are in ValidateComposites.cpp.
//
//===----------------------------------------------------------------------===//

#include "exec/ValidateChecker.h"
#include "math/AttentionLayout.h"
#include "math/FusedProgram.h"
#include "math/Patches.h"

namespace trainc {
namespace validate {

/// The program and shapes of a fused loop (math/FusedProgram.h checks the
/// program itself, math/BroadcastView.h how each operand is read).
Status Checker::checkFusedElementwise() const {
  size_t numInputs = inst.operands.size(), numResults = inst.results.size();
  if (numInputs < 1 || numInputs > size_t(kFusedMaxInputs) || numResults < 1 ||
      numResults > size_t(kFusedMaxResults))
    return error("takes 1 to " + std::to_string(kFusedMaxInputs) +
                 " operands and gives 1 to " +
                 std::to_string(kFusedMaxResults) + " results");
  TRAINC_RETURN_IF_ERROR(attrs(inst.ints.size(), 0));
  const Shape &shape = result(0).shape;
  DType inputTypes[kFusedMaxInputs], resultTypes[kFusedMaxResults];
  int inputRanks[kFusedMaxInputs];
  for (size_t i = 0; i < numResults; ++i) {
    TRAINC_RETURN_IF_ERROR(shapeIs(result(i), shape));
    resultTypes[i] = result(i).dtype;
  }
  for (size_t i = 0; i < numInputs; ++i) {
    inputTypes[i] = operand(i).dtype;
    inputRanks[i] = int(operand(i).shape.size());
  }
  math::FusedProgram program;
  std::string invalid = math::decodeFusedProgram(
      inst.ints.data(), int64_t(inst.ints.size()), inputTypes, inputRanks,
      int(numInputs), resultTypes, int(numResults), int(shape.size()), program);
  if (!invalid.empty())
    return error(invalid);
  for (size_t i = 0; i < numInputs; ++i) {
    math::BroadcastView view;
    invalid =
        math::fusedOperandView(program, int(i), shape.data(), int(shape.size()),
                               operand(i).shape.data(), inputRanks[i], view);
    if (!invalid.empty())
      return error(invalid + " ('" + operand(i).name + "')");
  }
  // Each element is read before the same element is written, and no
  // other: a result may be exactly an operand of its shape and dtype (the
  // plan's in-place reuse), and share no other byte with an operand or
  // another result.
  for (size_t r = 0; r < numResults; ++r) {
    for (size_t o = 0; o < numInputs; ++o) {
      const TensorInfo &x = operand(o), &y = result(r);
      bool same = x.arena == y.arena && x.offset == y.offset &&
                  x.size == y.size && x.dtype == y.dtype && x.shape == y.shape;
      if (overlap(y, x) && !same)
        return error("result " + std::to_string(r) +
                     " shares memory with operand " + std::to_string(o) +
                     " without being that operand's memory, shape and "
                     "dtype");
    }
    for (size_t q = 0; q < r; ++q)
      if (overlap(result(r), result(q)))
        return error("results " + std::to_string(q) + " and " +
                     std::to_string(r) + " share memory");
  }
  return okStatus();
}

Status Checker::checkDotGeneral() const {
  bool gelu = inst.op == Opcode::DotGeneralBiasGelu;
  bool geluGrad = inst.op == Opcode::DotGeneralGeluGrad;
  bool bias = inst.op == Opcode::DotGeneralBias || gelu;
  bool biasGrad = inst.op == Opcode::DotGeneralBiasGrad;
  TRAINC_RETURN_IF_ERROR(
      arity(bias || geluGrad ? 3 : 2, biasGrad || gelu ? 2 : 1));
  const TensorInfo &l = operand(0), &r = operand(1), &out = result(0);
  TRAINC_RETURN_IF_ERROR(floatType(l));
  // DotGeneral and DotGeneralBiasGrad may widen a 16-bit product to f32
  // (f32_result).
  bool sixteen = l.dtype == DType::BF16 || l.dtype == DType::F16;
  bool widened = !bias && !geluGrad && out.dtype == DType::F32 && sixteen;
  if (l.dtype != r.dtype || (l.dtype != out.dtype && !widened))
    return error("operands and result must share one dtype (or, for a "
                 "dot_general of 16-bit operands, the result be f32)");
  const auto &v = inst.ints;
  // Bounded first, so that the sum below cannot wrap around.
  // DotGeneralBiasGrad's sum_rhs, the GELU ops' approximation.
  size_t extra = biasGrad || gelu || geluGrad ? 1 : 0;
  if (v.size() < 2 || v[0] < 0 || v[1] < 0 || uint64_t(v[0]) > v.size() ||
      uint64_t(v[1]) > v.size() ||
      v.size() != 3 + 2 * size_t(v[0]) + 2 * size_t(v[1]) + extra)
    return error("malformed dimension numbers");
  size_t nb = v[0], nc = v[1];
  int64_t rounding = v[2 + 2 * nb + 2 * nc];
  if (rounding != int64_t(OperandRounding::Exact) &&
      rounding != int64_t(OperandRounding::Tf32))
    return error("unknown operand rounding " + std::to_string(rounding));
  if (rounding == int64_t(OperandRounding::Tf32) && l.dtype != DType::F32)
    return error("TF32 rounding needs f32 operands");
  const int64_t *lb = v.data() + 2, *rb = lb + nb, *lc = rb + nb, *rc = lc + nc;
  Shape lhsDims(lb, lb + nb), rhsDims(rb, rb + nb);
  lhsDims.insert(lhsDims.end(), lc, lc + nc);
  rhsDims.insert(rhsDims.end(), rc, rc + nc);
  TRAINC_RETURN_IF_ERROR(
      dimList(lhsDims.data(), lhsDims.size(), l.shape.size()));
  TRAINC_RETURN_IF_ERROR(
      dimList(rhsDims.data(), rhsDims.size(), r.shape.size()));
  Shape expected;
  for (size_t i = 0; i < nb; ++i) {
    if (l.shape[lb[i]] != r.shape[rb[i]])
      return error("batch dimension sizes differ");
    expected.push_back(l.shape[lb[i]]);
  }
  for (size_t i = 0; i < nc; ++i)
    if (l.shape[lc[i]] != r.shape[rc[i]])
      return error("contracting dimension sizes differ");
  for (size_t d = 0; d < l.shape.size(); ++d)
    if (std::find(lhsDims.begin(), lhsDims.end(), int64_t(d)) == lhsDims.end())
      expected.push_back(l.shape[d]);
  for (size_t d = 0; d < r.shape.size(); ++d)
    if (std::find(rhsDims.begin(), rhsDims.end(), int64_t(d)) == rhsDims.end())
      expected.push_back(r.shape[d]);
  if (bias) {
    // The bias: rhs's free dims, the result's last ones.
    const TensorInfo &b = operand(2);
    size_t rhsFree = r.shape.size() - nb - nc;
    if (b.dtype != l.dtype)
      return error("the bias must have the operands' dtype");
    if (b.shape != Shape(expected.end() - rhsFree, expected.end()))
      return error("the bias must have the shape of rhs's free dimensions");
  }
  if (biasGrad) {
    // The sum of lhs (rhs) over its contracting dims: its free dims, its
    // dtype or f32 (a widened 16-bit sum), as ReduceSum's.
    if (nb != 0)
      return error("the sum takes no batching dimensions");
    if (v.back() != 0 && v.back() != 1)
      return error("sum_rhs must be 0 or 1");
    bool sumRhs = v.back() == 1;
    const TensorInfo &summed = sumRhs ? r : l, &sum = result(1);
    const int64_t *contract = sumRhs ? rc : lc;
    Shape kept;
    for (size_t d = 0; d < summed.shape.size(); ++d)
      if (std::find(contract, contract + nc, int64_t(d)) == contract + nc)
        kept.push_back(summed.shape[d]);
    if (sum.dtype != l.dtype && !(sixteen && sum.dtype == DType::F32))
      return error("the sum must have the operands' dtype (or f32 for "
                   "16-bit operands)");
    TRAINC_RETURN_IF_ERROR(shapeIs(sum, kept));
    // The kernels read the operands again after writing the product.
    for (size_t i = 0; i < 2; ++i)
      for (size_t o = 0; o < 2; ++o)
        if (overlap(result(i), operand(o)))
          return error("a result shares memory with an operand");
    if (overlap(result(0), result(1)))
      return error("the product and the sum share memory");
  }
  if ((gelu || geluGrad) && v.back() != 0 && v.back() != 1)
    return error("the GELU approximation must be 0 (erf) or 1 (tanh)");
  if (geluGrad) {
    // The pre-activation: the product's type; the kernels write the
    // product, then read it and the pre-activation.
    const TensorInfo &pre = operand(2);
    if (pre.dtype != out.dtype)
      return error("the pre-activation must have the result's dtype");
    TRAINC_RETURN_IF_ERROR(shapeIs(pre, expected));
    for (size_t o = 0; o < 3; ++o)
      if (overlap(out, operand(o)))
        return error("the result shares memory with an operand");
  }
  if (gelu) {
    // The GELU and the pre-activation: one type and shape; the CPU kernel
    // reads the pre-activation after writing it.
    TRAINC_RETURN_IF_ERROR(sameType(result(0), result(1)));
    for (size_t i = 0; i < 2; ++i)
      for (size_t o = 0; o < 3; ++o)
        if (overlap(result(i), operand(o)))
          return error("a result shares memory with an operand");
    if (overlap(result(0), result(1)))
      return error("the GELU and the pre-activation share memory");
  }
  return shapeIs(out, expected);
}

Status Checker::checkDataMovement() const {
  const auto &v = inst.ints;
  switch (inst.op) {
  case Opcode::BroadcastInDim: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    const TensorInfo &in = operand(0), &out = result(0);
    if (in.dtype != out.dtype || v.size() != in.shape.size())
      return error("dims do not match the operand");
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] < 0 || v[i] >= int64_t(out.shape.size()) ||
          (i > 0 && v[i] <= v[i - 1]) ||
          (in.shape[i] != 1 && in.shape[i] != out.shape[v[i]]))
        return error("invalid broadcast dims");
    }
    return okStatus();
  }
  case Opcode::Reshape: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    if (operand(0).dtype != result(0).dtype ||
        operand(0).numElements() != result(0).numElements())
      return error("operand and result differ in dtype or element count");
    return okStatus();
  }
  case Opcode::Transpose: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    const TensorInfo &in = operand(0);
    if (v.size() != in.shape.size() || in.dtype != result(0).dtype)
      return error("permutation does not match the operand");
    TRAINC_RETURN_IF_ERROR(dimList(v.data(), v.size(), in.shape.size()));
    Shape expected;
    for (int64_t p : v)
      expected.push_back(in.shape[p]);
    return shapeIs(result(0), expected);
  }
  case Opcode::Slice: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    const TensorInfo &in = operand(0);
    size_t r = in.shape.size();
    if (v.size() != 3 * r || in.dtype != result(0).dtype)
      return error("start/limit/strides do not match the operand");
    Shape expected;
    for (size_t d = 0; d < r; ++d) {
      int64_t start = v[d], limit = v[r + d], stride = v[2 * r + d];
      if (stride < 1 || start < 0 || start > limit || limit > in.shape[d])
        return error("slice bounds are out of range");
      expected.push_back((limit - start + stride - 1) / stride);
    }
    return shapeIs(result(0), expected);
  }
  case Opcode::Concatenate: {
    if (inst.operands.empty() || inst.results.size() != 1 || v.size() != 1)
      return error("expects operands, one result and [dim]");
    const TensorInfo &first = operand(0);
    int64_t dim = v[0], total = 0;
    if (dim < 0 || dim >= int64_t(first.shape.size()))
      return error("dim is out of range");
    for (size_t i = 0; i < inst.operands.size(); ++i) {
      const TensorInfo &t = operand(i);
      if (t.dtype != first.dtype || t.shape.size() != first.shape.size())
        return error("operands differ in dtype or rank");
      for (size_t d = 0; d < t.shape.size(); ++d)
        if (int64_t(d) != dim && t.shape[d] != first.shape[d])
          return error("operands differ outside the concatenated dim");
      total += t.shape[dim];
    }
    Shape expected = first.shape;
    expected[dim] = total;
    if (result(0).dtype != first.dtype)
      return error("result dtype differs");
    return shapeIs(result(0), expected);
  }
  case Opcode::Gather: {
    TRAINC_RETURN_IF_ERROR(arity(2, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    const TensorInfo &table = operand(0), &idx = operand(1);
    int64_t axis = v[0];
    if (axis < 0 || axis >= int64_t(table.shape.size()) ||
        (idx.dtype != DType::I32 && idx.dtype != DType::I64) ||
        table.dtype != result(0).dtype)
      return error("invalid axis or index dtype");
    Shape expected(table.shape.begin(), table.shape.begin() + axis);
    expected.insert(expected.end(), idx.shape.begin(), idx.shape.end());
    expected.insert(expected.end(), table.shape.begin() + axis + 1,
                    table.shape.end());
    return shapeIs(result(0), expected);
  }
  case Opcode::ScatterAdd: {
    TRAINC_RETURN_IF_ERROR(arity(2, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    const TensorInfo &updates = operand(0), &idx = operand(1), &out = result(0);
    int64_t axis = v[0];
    if (axis < 0 || axis >= int64_t(out.shape.size()) ||
        (idx.dtype != DType::I32 && idx.dtype != DType::I64) ||
        updates.dtype != out.dtype ||
        !(isFloat(out.dtype) || out.dtype == DType::I32 ||
          out.dtype == DType::I64))
      return error("invalid axis or dtypes");
    Shape expected(out.shape.begin(), out.shape.begin() + axis);
    expected.insert(expected.end(), idx.shape.begin(), idx.shape.end());
    expected.insert(expected.end(), out.shape.begin() + axis + 1,
                    out.shape.end());
    return shapeIs(updates, expected);
  }
  case Opcode::Iota: {
    TRAINC_RETURN_IF_ERROR(arity(0, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    if (v[0] < 0 || v[0] >= int64_t(result(0).shape.size()))
      return error("dim is out of range");
    return okStatus();
  }
  case Opcode::ExtractPatches:
  case Opcode::FoldPatches: {
    // x [N, C, S...] and patches [C, K..., N, O...] (math/Patches.h).
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    bool extract = inst.op == Opcode::ExtractPatches;
    const TensorInfo &x = extract ? operand(0) : result(0);
    const TensorInfo &p = extract ? result(0) : operand(0);
    int64_t d = int64_t(x.shape.size()) - 2;
    if (d < 1 || d > math::kMaxPatchDims || v.size() != size_t(4 * d) ||
        p.shape.size() != size_t(2 * d + 2))
      return error("needs x of rank 3 to 5, patches of rank 2 (rank - 1) "
                   "and 4 ints per spatial dimension");
    if (x.dtype != p.dtype ||
        (!extract && x.dtype != DType::F32 && x.dtype != DType::F64 &&
         x.dtype != DType::F16 && x.dtype != DType::BF16))
      return error("x and the patches differ in dtype, or fold_patches' is "
                   "not f64, f32, f16 or bf16");
    Shape expected{x.shape[1]};
    for (int64_t i = 0; i < d; ++i) {
      // Bounded so that no position's arithmetic can overflow.
      constexpr int64_t kLimit = int64_t(1) << 31;
      int64_t kernel = v[i], stride = v[d + i], dilation = v[2 * d + i],
              low = v[3 * d + i];
      if (kernel < 1 || stride < 1 || dilation < 1 || low < 0 ||
          kernel >= kLimit || stride >= kLimit || dilation >= kLimit ||
          low >= kLimit || p.shape[d + 2 + i] < 1 ||
          p.shape[d + 2 + i] >= kLimit)
        return error("a window needs kernel, strides and dilation in [1, "
                     "2^31), padding in [0, 2^31) and outputs in [1, 2^31)");
      expected.push_back(kernel);
    }
    expected.push_back(x.shape[0]);
    for (int64_t i = 0; i < d; ++i)
      expected.push_back(p.shape[d + 2 + i]);
    return shapeIs(p, expected);
  }
  case Opcode::Argsort: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    TRAINC_RETURN_IF_ERROR(attrs(3, 0));
    const TensorInfo &x = operand(0), &out = result(0);
    if (v[0] < 0 || v[0] >= int64_t(x.shape.size()) ||
        (v[1] != 0 && v[1] != 1) || (v[2] != 0 && v[2] != 1))
      return error("invalid axis, direction or order");
    if (!(isFloat(x.dtype) || x.dtype == DType::I32 || x.dtype == DType::I64) ||
        out.dtype != DType::I64)
      return error("sorts f64, f32, f16, bf16, i32 or i64 into i64 indices");
    return shapeIs(out, x.shape);
  }
  default:
    return error("not a data movement opcode");
  }
}

/// And ... CountLeadingZeros: one integer dtype (8 to 64 bits) and shape.
Status Checker::checkBitwise() const {
  bool binary = inst.op != Opcode::Not && inst.op != Opcode::PopCount &&
                inst.op != Opcode::CountLeadingZeros;
  TRAINC_RETURN_IF_ERROR(arity(binary ? 2 : 1, 1));
  TRAINC_RETURN_IF_ERROR(attrs(0, 0));
  TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
  if (binary)
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), operand(1)));
  switch (operand(0).dtype) {
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return okStatus();
  default:
    return error(std::string("bitwise ops take 8- to 64-bit integers, not ") +
                 dtypeName(operand(0).dtype));
  }
}

Status Checker::check() const {
  for (uint32_t id : inst.operands)
    if (id >= tensors.size())
      return error("operand tensor " + std::to_string(id) + " does not exist");
  for (uint32_t id : inst.results) {
    if (id >= tensors.size())
      return error("result tensor " + std::to_string(id) + " does not exist");
    TensorRole role = tensors[id].role;
    if (role != TensorRole::Activation && role != TensorRole::Output)
      return error("writes " + describeTensor(tensors, id) +
                   ", which is read-only");
  }
  int op = static_cast<int>(inst.op);
  if (inst.op == Opcode::CollectiveDone) {
    // Which start a done ends is found when it runs (its pending buffer).
    TRAINC_RETURN_IF_ERROR(arity(2, 1));
    TRAINC_RETURN_IF_ERROR(attrs(0, 0));
    return sameType(operand(0), result(0));
  }
  if (inst.op == Opcode::AllReduce || inst.op == Opcode::AllReduceStart) {
    // The axis is checked against the mesh by the loader.
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    TRAINC_RETURN_IF_ERROR(floatType(operand(0)));
    return sameType(operand(0), result(0));
  }
  if (inst.op == Opcode::ReduceScatter || inst.op == Opcode::AllGather ||
      inst.op == Opcode::ShardSlice || inst.op == Opcode::ReduceScatterStart ||
      inst.op == Opcode::AllGatherStart) {
    // One dtype and rank >= 1, equal dimensions after the first; dimension
    // 0 against the axis size is checked by the loader, which knows it.
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    if (inst.op == Opcode::ReduceScatter ||
        inst.op == Opcode::ReduceScatterStart)
      TRAINC_RETURN_IF_ERROR(floatType(operand(0)));
    const TensorInfo &in = operand(0), &out = result(0);
    if (in.dtype != out.dtype || in.shape.empty() ||
        in.shape.size() != out.shape.size() ||
        !std::equal(in.shape.begin() + 1, in.shape.end(),
                    out.shape.begin() + 1))
      return error("operand " + shapeString(in.shape) + " and result " +
                   shapeString(out.shape) +
                   " must have one dtype and equal dimensions after the "
                   "first");
    return okStatus();
  }
  if (op <= static_cast<int>(Opcode::Rsqrt) || inst.op == Opcode::Cos ||
      inst.op == Opcode::Sin || inst.op == Opcode::Floor ||
      inst.op == Opcode::Round) {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
    if (operand(0).dtype == DType::I1 ||
        (inst.op > Opcode::Abs && !isFloat(operand(0).dtype)))
      return error("unsupported dtype");
    return okStatus();
  }
  if (op <= static_cast<int>(Opcode::Min) || inst.op == Opcode::Remainder) {
    TRAINC_RETURN_IF_ERROR(arity(2, 1));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), operand(1)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
    bool floatOnly = inst.op == Opcode::Pow || inst.op == Opcode::Remainder;
    if (operand(0).dtype == DType::I1 ||
        (floatOnly && !isFloat(operand(0).dtype)))
      return error("unsupported dtype");
    return okStatus();
  }
  if (inst.op >= Opcode::And && inst.op <= Opcode::CountLeadingZeros)
    return checkBitwise();
  if (inst.op == Opcode::Bitcast) {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    TRAINC_RETURN_IF_ERROR(attrs(0, 0));
    DType from = operand(0).dtype, to = result(0).dtype;
    // Types whose storage is the value's own bits (no i1, no sub-byte).
    auto bitsOfValue = [](DType t) {
      switch (t) {
      case DType::F64:
      case DType::F32:
      case DType::F16:
      case DType::BF16:
      case DType::I64:
      case DType::I32:
      case DType::I16:
      case DType::I8:
      case DType::U64:
      case DType::U32:
      case DType::U16:
      case DType::U8:
      case DType::F8E4M3FN:
      case DType::F8E4M3FNUZ:
      case DType::F8E5M2:
      case DType::F8E5M2FNUZ:
      case DType::F8E8M0FNU:
        return true;
      case DType::I1:
      case DType::I4:
      case DType::U4:
      case DType::I2:
      case DType::U2:
      case DType::F4E2M1FN:
        return false;
      }
      return false;
    };
    if (!bitsOfValue(from) || !bitsOfValue(to) ||
        dtypeSize(from) != dtypeSize(to))
      return error(std::string("cannot bitcast ") + dtypeName(from) + " to " +
                   dtypeName(to) +
                   " (one element size, no i1 or sub-byte types)");
    return shapeIs(result(0), operand(0).shape);
  }
  switch (inst.op) {
  case Opcode::Compare:
    TRAINC_RETURN_IF_ERROR(arity(2, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), operand(1)));
    if (inst.ints[0] < 0 || inst.ints[0] > 5 || result(0).dtype != DType::I1)
      return error("invalid direction or result dtype");
    return shapeIs(result(0), operand(0).shape);
  case Opcode::Select:
    TRAINC_RETURN_IF_ERROR(arity(3, 1));
    TRAINC_RETURN_IF_ERROR(sameType(operand(1), operand(2)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(1), result(0)));
    if (operand(0).dtype != DType::I1 || operand(0).shape != operand(1).shape)
      return error("the predicate must be i1 of the operands' shape");
    return okStatus();
  case Opcode::Convert:
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    return shapeIs(result(0), operand(0).shape);
  case Opcode::DotGeneral:
  case Opcode::DotGeneralBias:
  case Opcode::DotGeneralBiasGelu:
  case Opcode::DotGeneralGeluGrad:
  case Opcode::DotGeneralBiasGrad:
    return checkDotGeneral();
  case Opcode::ReduceSum:
  case Opcode::ReduceMax:
  case Opcode::ReduceMean:
  case Opcode::ReduceProd: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    const TensorInfo &in = operand(0);
    TRAINC_RETURN_IF_ERROR(
        dimList(inst.ints.data(), inst.ints.size(), in.shape.size()));
    // A 16-bit sum may be f32 (widened: not rounded to 16 bits).
    bool widened = inst.op == Opcode::ReduceSum &&
                   (in.dtype == DType::BF16 || in.dtype == DType::F16) &&
                   result(0).dtype == DType::F32;
    if ((in.dtype != result(0).dtype && !widened) || in.dtype == DType::I1 ||
        (inst.op == Opcode::ReduceMean && !isFloat(in.dtype)))
      return error("unsupported dtype");
    Shape expected;
    for (size_t d = 0; d < in.shape.size(); ++d)
      if (std::find(inst.ints.begin(), inst.ints.end(), int64_t(d)) ==
          inst.ints.end())
        expected.push_back(in.shape[d]);
    return shapeIs(result(0), expected);
  }
  case Opcode::BroadcastInDim:
  case Opcode::Reshape:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::Concatenate:
  case Opcode::Gather:
  case Opcode::ScatterAdd:
  case Opcode::Iota:
  case Opcode::Argsort:
  case Opcode::ExtractPatches:
  case Opcode::FoldPatches:
    return checkDataMovement();
  case Opcode::FusedElementwise:
    return checkFusedElementwise();
  case Opcode::ConvertGroup: {
    if (inst.operands.empty())
      return error("needs at least one operand");
    TRAINC_RETURN_IF_ERROR(arity(inst.operands.size(), inst.operands.size()));
    TRAINC_RETURN_IF_ERROR(attrs(0, 0));
    for (size_t i = 0; i < inst.operands.size(); ++i) {
      TRAINC_RETURN_IF_ERROR(floatType(operand(i)));
      TRAINC_RETURN_IF_ERROR(floatType(result(i)));
      TRAINC_RETURN_IF_ERROR(shapeIs(result(i), operand(i).shape));
      if (operand(i).dtype != operand(0).dtype ||
          result(i).dtype != result(0).dtype)
        return error("every pair must convert the first pair's dtypes");
    }
    return okStatus();
  }
  default:
    return checkComposite();
  }
}

} // namespace validate

Status validateInstruction(const InstructionInfo &inst, size_t index,
                           const std::vector<TensorInfo> &tensors) {
  return validate::Checker(inst, index, tensors).check();
}

} // namespace trainc
