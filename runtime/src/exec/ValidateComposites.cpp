//===- ValidateComposites.cpp - The composite ops' contracts --------------===//
//
// Checker::checkComposite (ValidateChecker.h): attention, norms, softmax,
// cross-entropy, the optimizer's multi-tensor ops and the other composites,
// as Validate.cpp checks the rest.
//
//===----------------------------------------------------------------------===//

#include "exec/ValidateChecker.h"
#include "math/AttentionLayout.h"

namespace trainc::validate {

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
    // [seed], [seed, axis, stride] or [seed, axis, stride, tensor axis,
    // blocks, dim] (the axes and the blocks are checked by the loader).
    if (inst.ints.size() != 1 && inst.ints.size() != 3 && inst.ints.size() != 6)
      return error("expects ints [seed], [seed, axis, stride] or [seed, "
                   "axis, stride, tensor axis, blocks, dim]");
    TRAINC_RETURN_IF_ERROR(attrs(inst.ints.size(), 1));
    TRAINC_RETURN_IF_ERROR(floatType(operand(0)));
    TRAINC_RETURN_IF_ERROR(sameType(operand(0), result(0)));
    if (result(1).dtype != DType::I1 || result(1).shape != operand(0).shape ||
        !(inst.floats[0] >= 0 && inst.floats[0] < 1))
      return error("invalid mask or ratio");
    if (inst.ints.size() == 6 &&
        (v[5] < 0 || v[5] >= int64_t(operand(0).shape.size())))
      return error("block dimension " + std::to_string(v[5]) +
                   " is not a dimension of the operand");
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
    // floats = [scale], [scale, softcap] or, with dropout, [scale,
    // softcap or 0, ratio] and the stream's ints, [seed], [seed, axis,
    // stride] or [seed, axis, stride, tensor axis, head blocks], after the
    // six.
    bool dropout = inst.floats.size() == 3;
    size_t streamInts = inst.ints.size() == 9    ? 3
                        : inst.ints.size() == 11 ? 5
                                                 : 1;
    TRAINC_RETURN_IF_ERROR(
        attrs(dropout ? 6 + streamInts : 6, dropout                   ? 3
                                            : inst.floats.size() == 2 ? 2
                                                                      : 1));
    if (inst.floats.size() >= 2 &&
        !(std::isfinite(inst.floats[1]) &&
          (inst.floats[1] > 0 || (dropout && inst.floats[1] == 0))))
      return error("softcap " + std::to_string(inst.floats[1]) +
                   " must be finite and positive" +
                   (dropout ? std::string(", or 0 (none)") : std::string()));
    // (A stream's axes are checked by the loader, as Dropout's, and the
    // head blocks against the tensor axis's size.)
    if (dropout && !(inst.floats[2] >= 0 && inst.floats[2] < 1))
      return error("dropout ratio " + std::to_string(inst.floats[2]) +
                   " is outside [0, 1)");
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

} // namespace trainc::validate
