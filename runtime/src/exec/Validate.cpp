//===- Validate.cpp - Instruction checks before anything runs -------------===//
//
// The runtime does not trust a file: every instruction's arity, dtypes,
// attributes and shapes are checked against its opcode's contract
// (executable.fbs, enum Opcode) when the executable is loaded, so kernels never
// index outside their tensors. The rules mirror the graph dialect's verifier.
//
//===----------------------------------------------------------------------===//

#include "exec/Executable.h"
#include "math/AttentionLayout.h"
#include "math/FusedProgram.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace trainc {
namespace {

using Shape = std::vector<int64_t>;

/// The error of an opcode this validator has no contract for (the
/// vocabulary test checks that no opcode of the schema gets it).
constexpr const char *kNoValidationRule = "has no validation rule";

/// Collects the checks of one instruction; the first failure wins.
class Checker {
public:
  Checker(const InstructionInfo &inst, size_t index,
          const std::vector<TensorInfo> &tensors)
      : inst(inst), index(index), tensors(tensors) {}

  Status error(const std::string &message) const {
    return invalidArgument("instruction " + std::to_string(index) + " (" +
                           opcodeName(inst.op) + "): " + message);
  }

  const TensorInfo &operand(size_t i) const {
    return tensors[inst.operands[i]];
  }
  const TensorInfo &result(size_t i) const { return tensors[inst.results[i]]; }

  Status arity(size_t operands, size_t results) const {
    if (inst.operands.size() != operands || inst.results.size() != results)
      return error("expects " + std::to_string(operands) + " operands and " +
                   std::to_string(results) + " results, has " +
                   std::to_string(inst.operands.size()) + " and " +
                   std::to_string(inst.results.size()));
    return okStatus();
  }
  Status attrs(size_t ints, size_t floats) const {
    if (inst.ints.size() != ints || inst.floats.size() != floats)
      return error("has " + std::to_string(inst.ints.size()) + " ints and " +
                   std::to_string(inst.floats.size()) + " floats, expects " +
                   std::to_string(ints) + " and " + std::to_string(floats));
    return okStatus();
  }
  Status sameType(const TensorInfo &a, const TensorInfo &b) const {
    if (a.dtype != b.dtype || a.shape != b.shape)
      return error("'" + a.name + "' and '" + b.name +
                   "' must have the same dtype and shape");
    return okStatus();
  }
  Status shapeIs(const TensorInfo &t, const Shape &shape) const {
    if (t.shape != shape)
      return error("'" + t.name + "' has the wrong shape for its operands");
    return okStatus();
  }
  /// A norm's (or its gradient's) ints[0], the axis, inside x's rank and
  /// floats[0], epsilon, finite and not negative.
  Status normAxisAndEpsilon(const TensorInfo &x) const {
    int64_t axis = inst.ints[0];
    double eps = inst.floats[0];
    if (axis < 0 || axis >= int64_t(x.shape.size()) || !(eps >= 0) ||
        !std::isfinite(eps))
      return error("invalid axis or epsilon");
    return okStatus();
  }
  /// Whether two tensors' planned bytes overlap (same arena; constants
  /// live in the constant section, which no result is).
  static bool overlap(const TensorInfo &a, const TensorInfo &b) {
    return a.role != TensorRole::Constant && b.role != TensorRole::Constant &&
           a.arena == b.arena && a.offset < b.offset + b.size &&
           b.offset < a.offset + a.size;
  }
  /// A cross-entropy's class count: in [1, the logits' last dimension], or
  /// 0 for an empty last dimension.
  Status classesIn(const TensorInfo &logits, int64_t classes) const {
    int64_t size = logits.shape.empty() ? -1 : logits.shape.back();
    if (classes < 0 || classes > size || (classes == 0 && size != 0))
      return error("classes " + std::to_string(classes) +
                   " is not in [1, the logits' last dimension]");
    return okStatus();
  }
  Status floatType(const TensorInfo &t) const {
    if (!isFloat(t.dtype))
      return error("'" + t.name + "' must be a float tensor");
    return okStatus();
  }
  /// `dims` are distinct and in [0, rank).
  Status dimList(const int64_t *dims, size_t n, int64_t rank) const {
    std::vector<bool> seen(std::max<int64_t>(rank, 0), false);
    for (size_t i = 0; i < n; ++i) {
      if (dims[i] < 0 || dims[i] >= rank || seen[dims[i]])
        return error("dimension list is out of range or repeats");
      seen[dims[i]] = true;
    }
    return okStatus();
  }

  Status check() const;

private:
  Status checkDotGeneral() const;
  Status checkDataMovement() const;
  Status checkComposite() const;
  Status checkFusedElementwise() const;
  Status checkBitwise() const;

  const InstructionInfo &inst;
  size_t index;
  const std::vector<TensorInfo> &tensors;
};

/// The program and shapes of a fused loop (math/FusedProgram.h checks the
/// program itself).
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
  for (size_t i = 0; i < numResults; ++i) {
    TRAINC_RETURN_IF_ERROR(shapeIs(result(i), shape));
    resultTypes[i] = result(i).dtype;
  }
  for (size_t i = 0; i < numInputs; ++i) {
    if (!operand(i).shape.empty() && operand(i).shape != shape)
      return error("operand '" + operand(i).name +
                   "' must have the results' shape or be 0-d");
    inputTypes[i] = operand(i).dtype;
  }
  math::FusedProgram program;
  std::string invalid = math::decodeFusedProgram(
      inst.ints.data(), int64_t(inst.ints.size()), inputTypes, int(numInputs),
      resultTypes, int(numResults), program);
  if (!invalid.empty())
    return error(invalid);
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

Status Checker::checkComposite() const {
  const auto &v = inst.ints;
  switch (inst.op) {
  case Opcode::Softmax:
  case Opcode::Gelu: {
    TRAINC_RETURN_IF_ERROR(arity(1, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    TRAINC_RETURN_IF_ERROR(floatType(operand(0)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
    int64_t limit =
        inst.op == Opcode::Softmax ? int64_t(operand(0).shape.size()) : 2;
    if (v[0] < 0 || v[0] >= limit)
      return error("attribute out of range");
    return okStatus();
  }
  case Opcode::GeluGrad: {
    TRAINC_RETURN_IF_ERROR(arity(2, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    TRAINC_RETURN_IF_ERROR(floatType(operand(0)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), operand(1)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
    if (v[0] < 0 || v[0] > 1)
      return error("attribute out of range");
    return okStatus();
  }
  case Opcode::AdamwUpdate: {
    // N parameters: N params, grads, exp_avgs and exp_avg_sqs, the four
    // scalars and the optional skip flag; N new params and moments each.
    size_t n = inst.results.size() / 3;
    bool skip = inst.operands.size() == 4 * n + 5;
    if (n == 0 || inst.results.size() != 3 * n)
      return error("needs three results per parameter, not " +
                   std::to_string(inst.results.size()));
    TRAINC_RETURN_IF_ERROR(arity(4 * n + 4 + skip, 3 * n));
    if (skip && (operand(4 * n + 4).dtype != DType::I1 ||
                 !operand(4 * n + 4).shape.empty()))
      return error("the skip flag must be a 0-d i1");
    TRAINC_RETURN_IF_ERROR(attrs(0, 3));
    for (size_t i = 0; i < n; ++i) {
      const TensorInfo &p = operand(i);
      TRAINC_RETURN_IF_ERROR(floatType(p));
      if (p.dtype != operand(0).dtype)
        return error("every parameter must have the first one's dtype");
      for (size_t k : {1, 2, 3})
        TRAINC_RETURN_IF_ERROR(sameType(p, operand(k * n + i)));
      for (size_t k : {0, 1, 2})
        TRAINC_RETURN_IF_ERROR(sameType(p, result(k * n + i)));
    }
    for (size_t i = 4 * n; i < 4 * n + 4; ++i)
      if (operand(i).dtype != operand(0).dtype || !operand(i).shape.empty())
        return error("the step's scalars must be 0-d of the parameters' type");
    const std::vector<double> &f = inst.floats;
    if (!(f[0] >= 0 && f[0] < 1) || !(f[1] >= 0 && f[1] < 1) ||
        !std::isfinite(f[2]) || f[2] < 0)
      return error("invalid betas or epsilon");
    return okStatus();
  }
  case Opcode::SumOfSquares: {
    if (inst.operands.empty())
      return error("needs at least one operand");
    TRAINC_RETURN_IF_ERROR(arity(inst.operands.size(), 1));
    TRAINC_RETURN_IF_ERROR(attrs(0, 0));
    for (size_t i = 0; i < inst.operands.size(); ++i) {
      TRAINC_RETURN_IF_ERROR(floatType(operand(i)));
      if (operand(i).dtype != operand(0).dtype)
        return error("every operand must have the first one's dtype");
    }
    if (result(0).dtype != DType::F64 || !result(0).shape.empty())
      return error("the result must be a 0-d f64");
    return okStatus();
  }
  case Opcode::NormGrad: {
    TRAINC_RETURN_IF_ERROR(attrs(3, 1));
    bool hasScale = v[1] != 0;
    TRAINC_RETURN_IF_ERROR(arity(2 + hasScale, 2));
    const TensorInfo &x = operand(0);
    TRAINC_RETURN_IF_ERROR(floatType(x));
    TRAINC_RETURN_IF_ERROR(sameType(x, operand(1 + hasScale)));
    TRAINC_RETURN_IF_ERROR(sameType(x, result(0)));
    TRAINC_RETURN_IF_ERROR(sameType(x, result(1)));
    TRAINC_RETURN_IF_ERROR(normAxisAndEpsilon(x));
    if (hasScale &&
        (operand(1).dtype != x.dtype ||
         operand(1).shape != Shape(x.shape.begin() + v[0], x.shape.end())))
      return error("scale must have the normalized shape");
    return okStatus();
  }
  case Opcode::NormGradParams: {
    TRAINC_RETURN_IF_ERROR(attrs(5, 1));
    bool withBias = v[2] != 0, withAddend = v[3] != 0, narrowed = v[4] != 0;
    TRAINC_RETURN_IF_ERROR(arity(3 + withAddend, 2 + withBias + narrowed));
    const TensorInfo &x = operand(0);
    if (x.dtype != DType::F32 && x.dtype != DType::F64)
      return error("x must be f32 or f64");
    TRAINC_RETURN_IF_ERROR(sameType(x, operand(2)));
    TRAINC_RETURN_IF_ERROR(sameType(x, result(0)));
    if (withAddend)
      TRAINC_RETURN_IF_ERROR(sameType(x, operand(3)));
    TRAINC_RETURN_IF_ERROR(normAxisAndEpsilon(x));
    Shape normalized(x.shape.begin() + v[0], x.shape.end());
    for (const TensorInfo *t :
         {&operand(1), &result(1), withBias ? &result(2) : &operand(1)})
      if (t->dtype != x.dtype || t->shape != normalized)
        return error("scale and the parameters' gradients must have x's "
                     "dtype and the normalized shape");
    size_t last = inst.results.size() - 1;
    if (narrowed && (x.dtype != DType::F32 || result(last).shape != x.shape ||
                     (result(last).dtype != DType::BF16 &&
                      result(last).dtype != DType::F16)))
      return error("the narrowed input gradient must be bf16 or f16 of an "
                   "f32 x's shape");
    // The kernels read x and the cotangent again after writing the input
    // gradient; each element of the addend is read just before that
    // element of the input gradient is written, so the input gradient may
    // be exactly the addend's memory, and no other result may overlap an
    // operand.
    for (size_t r = 0; r < inst.results.size(); ++r)
      for (size_t o = 0; o < inst.operands.size(); ++o) {
        if (!overlap(result(r), operand(o)))
          continue;
        bool inPlace = r == 0 && o == 3 &&
                       result(0).offset == operand(3).offset &&
                       result(0).arena == operand(3).arena;
        if (!inPlace)
          return error("result " + std::to_string(r) +
                       " shares memory with operand " + std::to_string(o) +
                       " (only the input gradient may be the addend's)");
      }
    return okStatus();
  }
  case Opcode::LayerNorm:
  case Opcode::RmsNorm: {
    bool layer = inst.op == Opcode::LayerNorm;
    TRAINC_RETURN_IF_ERROR(attrs(layer ? 3 : 2, 1));
    int64_t affine = (v[1] != 0) + (layer && v[2] != 0);
    TRAINC_RETURN_IF_ERROR(arity(1 + affine, 1));
    const TensorInfo &x = operand(0), &y = result(0);
    TRAINC_RETURN_IF_ERROR(floatType(x));
    // The result has x's type, or is an f32 norm rounded to 16 bits.
    bool narrowed = x.dtype == DType::F32 &&
                    (y.dtype == DType::BF16 || y.dtype == DType::F16);
    if (y.shape != x.shape || (y.dtype != x.dtype && !narrowed))
      return error("the result must have x's shape and x's dtype (or bf16 or "
                   "f16 for an f32 x)");
    TRAINC_RETURN_IF_ERROR(normAxisAndEpsilon(x));
    Shape normalized(x.shape.begin() + v[0], x.shape.end());
    for (int64_t i = 1; i <= affine; ++i)
      if (operand(i).dtype != x.dtype || operand(i).shape != normalized)
        return error("scale/bias must have the normalized shape");
    return okStatus();
  }
  case Opcode::Dropout: {
    TRAINC_RETURN_IF_ERROR(arity(1, 2));
    // [seed] or [seed, axis, stride] (the axis is checked by the loader).
    if (inst.ints.size() != 1 && inst.ints.size() != 3)
      return error("expects ints [seed] or [seed, axis, stride]");
    TRAINC_RETURN_IF_ERROR(attrs(inst.ints.size(), 1));
    TRAINC_RETURN_IF_ERROR(floatType(operand(0)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
    if (result(1).dtype != DType::I1 || result(1).shape != operand(0).shape ||
        !(inst.floats[0] >= 0 && inst.floats[0] < 1))
      return error("invalid mask or ratio");
    return okStatus();
  }
  case Opcode::Attention:
  case Opcode::AttentionGrad: {
    // The gradient reads the result's cotangent after v (then the mask,
    // then, with stats, the forward's result and log-sum-exps); it has one
    // result per q, k and v, or, with qkv windows, one (the fused
    // projection's gradient, dq, dk and dv in its windows). With stats
    // the forward gives the log-sum-exps second.
    // Shapes are checked as [B, H, S, D], each tensor read through
    // math::attentionLayout (its seq_major bit; q, k and v through their
    // qkv windows).
    bool grad = inst.op == Opcode::AttentionGrad;
    TRAINC_RETURN_IF_ERROR(attrs(6, 1));
    int tensors = grad ? kAttentionGradTensors : kAttentionTensors;
    if (v[kAttentionStatsInt] != 0 && v[kAttentionStatsInt] != 1)
      return error("stats flag " + std::to_string(v[kAttentionStatsInt]) +
                   " must be 0 or 1");
    bool stats = v[kAttentionStatsInt] != 0;
    if (v[2] < 0 || v[2] >= (int64_t(1) << tensors))
      return error("seq_major bits " + std::to_string(v[2]) +
                   " name a tensor the instruction does not have");
    bool windows = v[3] != 0 || v[4] != 0;
    if (windows && (v[3] < 1 || v[4] < 1))
      return error("qkv heads [" + std::to_string(v[3]) + ", " +
                   std::to_string(v[4]) + "] must both be at least 1");
    bool packedGrad = grad && windows && inst.results.size() == 1;
    TRAINC_RETURN_IF_ERROR(
        arity(3 + grad + (v[1] != 0) + (grad && stats ? 2 : 0),
              grad ? (packedGrad ? 1 : 3) : 1 + stats));
    const TensorInfo &qT = operand(0), &kT = operand(1), &vT = operand(2);
    for (const TensorInfo *t : {&qT, &kT, &vT})
      if (t->shape.size() != 4 || t->dtype != qT.dtype)
        return error("q, k and v must be rank-4 tensors of one dtype");
    TRAINC_RETURN_IF_ERROR(floatType(qT));
    // The logical [B, H, S, D] shape of tensor `i` stored as `t`.
    auto logical = [&](const TensorInfo &t, int i) {
      if (t.shape.size() != 4)
        return t.shape;
      math::HeadLayout l = math::attentionLayout(
          t.shape.data(), v[2], math::qkvHeadsOf(v.data(), int64_t(v.size())),
          i, packedGrad);
      return Shape{l.batch, l.heads, l.seq, l.features};
    };
    // Windows of one shape [B, S, Hq + 2 Hk, D] (graph.attention's C11;
    // Hq and Hk bounded first, so that the sum cannot overflow).
    if (windows) {
      int64_t stored = qT.shape[2];
      if (kT.shape != qT.shape || vT.shape != qT.shape || v[3] > stored ||
          v[4] > stored || stored != v[3] + 2 * v[4])
        return error(
            "qkv heads [" + std::to_string(v[3]) + ", " + std::to_string(v[4]) +
            "] need q, k and v of one shape with " +
            (v[3] <= stored && v[4] <= stored ? std::to_string(v[3] + 2 * v[4])
                                              : std::string("that many")) +
            " heads");
      for (int i = 0; i < 3; ++i)
        if (!math::isSeqMajor(v[2], i))
          return error("qkv heads need q, k and v sequence-major");
    }
    Shape q = logical(qT, 0), k = logical(kT, 1), val = logical(vT, 2);
    if (k[0] != q[0] || val[0] != q[0] || k[3] != q[3] || val[1] != k[1] ||
        val[2] != k[2] || k[1] == 0 || q[1] % k[1] != 0 ||
        !std::isfinite(inst.floats[0]))
      return error("q, k and v shapes are inconsistent");
    Shape out = {q[0], q[1], q[2], val[3]};
    if (v[1]) {
      const TensorInfo &m = operand(3 + grad);
      Shape scores = {q[0], q[1], q[2], k[2]};
      if (m.dtype != qT.dtype || m.shape.size() != 4)
        return error("the mask must be rank 4 of q's dtype");
      for (int d = 0; d < 4; ++d)
        if (m.shape[d] != 1 && m.shape[d] != scores[d])
          return error("the mask does not broadcast to the scores");
    }
    // The log-sum-exps: one per score row, in the compute type.
    DType lseType = attentionLseType(qT.dtype);
    Shape rows = {q[0], q[1], q[2]};
    if (!grad) {
      if (result(0).dtype != qT.dtype)
        return error("result dtype differs");
      Shape stored = out; // the result is never a window
      if (math::isSeqMajor(v[2], 3))
        std::swap(stored[1], stored[2]);
      TRAINC_RETURN_IF_ERROR(shapeIs(result(0), stored));
      // Later query tiles read q, k, v and the mask after earlier ones
      // wrote their rows.
      for (size_t o = 0; o < inst.operands.size(); ++o)
        if (overlap(result(0), operand(o)))
          return error("the result shares memory with an operand");
      if (!stats)
        return okStatus();
      if (result(1).dtype != lseType)
        return error(std::string("the log-sum-exps must be ") +
                     dtypeName(lseType));
      TRAINC_RETURN_IF_ERROR(shapeIs(result(1), rows));
      // Each row's is written while its result row is being made.
      for (size_t o = 0; o < inst.operands.size(); ++o)
        if (overlap(result(1), operand(o)))
          return error("the log-sum-exps share memory with an operand");
      if (overlap(result(1), result(0)))
        return error("the log-sum-exps share memory with the result");
      return okStatus();
    }
    const TensorInfo &g = operand(3);
    if (g.dtype != qT.dtype || g.shape.size() != 4 || logical(g, 3) != out)
      return error("the cotangent must have the result's shape and q's dtype");
    if (stats) {
      const TensorInfo &o = operand(4 + (v[1] != 0)),
                       &lse = operand(5 + (v[1] != 0));
      if (o.dtype != g.dtype || o.shape != g.shape)
        return error("the forward's result must be stored as the cotangent");
      if (lse.dtype != lseType || lse.shape != rows)
        return error(std::string("the log-sum-exps must be ") +
                     dtypeName(lseType) + " [B, Hq, Sq]");
    }
    // The kernels read every operand (q, k, v, the cotangent, the mask and
    // the forward's stats) after writing results.
    for (size_t r = 0; r < inst.results.size(); ++r)
      for (size_t o = 0; o < inst.operands.size(); ++o)
        if (overlap(result(r), operand(o)))
          return error("a gradient shares memory with q, k, v, the "
                       "cotangent, the mask or the forward's statistics");
    if (packedGrad) {
      // The projection's gradient: its type, dq, dk and dv sequence-major.
      if (result(0).dtype != qT.dtype || result(0).shape != qT.shape ||
          (v[2] & 0b1110000) != 0b1110000)
        return error("the fused projection's gradient must be stored as q, "
                     "k and v are (seq_major bits 4, 5 and 6)");
      return okStatus();
    }
    const Shape *shapes[3] = {&q, &k, &val};
    for (int i = 0; i < 3; ++i)
      if (result(i).dtype != qT.dtype ||
          logical(result(i), 4 + i) != *shapes[i])
        return error("gradient " + std::to_string(i) +
                     " must have the shape and dtype of its operand");
    return okStatus();
  }
  case Opcode::SoftmaxCrossEntropy:
  case Opcode::SoftmaxCrossEntropyAndGrad: {
    bool withGrad = inst.op == Opcode::SoftmaxCrossEntropyAndGrad;
    TRAINC_RETURN_IF_ERROR(withGrad ? arity(3, 2) : arity(2, 1));
    TRAINC_RETURN_IF_ERROR(attrs(4, 0));
    TRAINC_RETURN_IF_ERROR(classesIn(operand(0), v[3]));
    const TensorInfo &logits = operand(0), &targets = operand(1);
    TRAINC_RETURN_IF_ERROR(floatType(logits));
    if (logits.shape.empty() || v[0] < 0 || v[0] > 2 ||
        (targets.dtype != DType::I32 && targets.dtype != DType::I64) ||
        Shape(logits.shape.begin(), logits.shape.end() - 1) != targets.shape ||
        (result(0).dtype != logits.dtype &&
         !(result(0).dtype == DType::F32 &&
           (logits.dtype == DType::F16 || logits.dtype == DType::BF16))))
      return error("logits, targets or reduction are inconsistent");
    TRAINC_RETURN_IF_ERROR(
        shapeIs(result(0), v[0] == 0 ? targets.shape : Shape()));
    if (!withGrad)
      return okStatus();
    // The gradient's operand and result, as SoftmaxCrossEntropyGrad's; it
    // may be the logits' memory, whole, and nothing else's.
    const TensorInfo &weight = operand(2), &loss = result(0), &grad = result(1);
    if (weight.shape != targets.shape || !isFloat(weight.dtype))
      return error("logits, targets and weight are inconsistent");
    TRAINC_RETURN_IF_ERROR(sameType(logits, grad));
    bool inPlace = grad.role == logits.role && grad.arena == logits.arena &&
                   grad.offset == logits.offset;
    if ((overlap(grad, logits) && !inPlace) || overlap(grad, targets) ||
        overlap(grad, weight) || overlap(loss, grad) || overlap(loss, logits) ||
        overlap(loss, targets) || overlap(loss, weight))
      return error("the loss may share no operand's memory, and the "
                   "gradient only the logits' whole");
    return okStatus();
  }
  case Opcode::SoftmaxCrossEntropyGrad: {
    TRAINC_RETURN_IF_ERROR(arity(3, 1));
    TRAINC_RETURN_IF_ERROR(attrs(1, 0));
    TRAINC_RETURN_IF_ERROR(classesIn(operand(0), v[0]));
    const TensorInfo &logits = operand(0), &targets = operand(1),
                     &weight = operand(2);
    TRAINC_RETURN_IF_ERROR(floatType(logits));
    Shape positions = logits.shape.empty()
                          ? Shape()
                          : Shape(logits.shape.begin(), logits.shape.end() - 1);
    if (logits.shape.empty() ||
        (targets.dtype != DType::I32 && targets.dtype != DType::I64) ||
        targets.shape != positions || weight.shape != positions ||
        !isFloat(weight.dtype))
      return error("logits, targets and weight are inconsistent");
    return sameType(logits, result(0));
  }
  default:
    return error(kNoValidationRule);
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

} // namespace

Status validateInstruction(const InstructionInfo &inst, size_t index,
                           const std::vector<TensorInfo> &tensors) {
  return Checker(inst, index, tensors).check();
}

} // namespace trainc
