//===- GraphAttention.cpp - Verifiers of attention and its gradient -------===//
//
// graph.attention (C1-C15, type inference) and graph.attention_grad
// (C1-C10). Both read their tensors through `seq_major` and `qkv_heads`:
// the constraints are on the logical [B, H, S, D] shapes, whatever the
// stored layout.
//
//===----------------------------------------------------------------------===//

#include "VerifierUtil.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

namespace {

/// Checks that `seqMajor` lists tensor numbers in [0, count) in increasing
/// order (attention_c10, attention_grad_c4).
LogicalResult checkSeqMajor(std::optional<ArrayRef<int64_t>> seqMajor,
                            int64_t count, StringRef constraint,
                            EmitErrorFn emitError) {
  if (!seqMajor)
    return success();
  int64_t last = -1;
  for (int64_t i : *seqMajor) {
    if (i <= last || i >= count)
      return emitError() << constraint
                         << " seq_major must list tensor numbers in [0, "
                         << count << ") in increasing order; got " << i
                         << " after " << last;
    last = i;
  }
  return success();
}

/// Checks that `softcap`, when present, is finite and positive
/// (attention_c13, attention_grad_c8).
LogicalResult checkSoftcap(std::optional<APFloat> softcap, StringRef constraint,
                           EmitErrorFn emitError) {
  if (!softcap)
    return success();
  double c = softcap->convertToDouble();
  if (!std::isfinite(c) || c <= 0)
    return emitError() << constraint
                       << " softcap must be finite and positive, got " << c;
  return success();
}

/// Checks that `dropout`, when present, is in [0, 1) (attention_c14,
/// attention_grad_c9).
LogicalResult checkDropout(std::optional<APFloat> dropout, StringRef constraint,
                           EmitErrorFn emitError) {
  if (!dropout)
    return success();
  double r = dropout->convertToDouble();
  if (!(r >= 0 && r < 1))
    return emitError() << constraint << " dropout must be in [0, 1), got " << r;
  return success();
}

bool listed(std::optional<ArrayRef<int64_t>> seqMajor, int64_t i) {
  return seqMajor && llvm::is_contained(*seqMajor, i);
}

/// The type of the log-sum-exps of attention's score rows `dims` ([B, Hq,
/// Sq]) for operands of element type `e`: f32, or f64 for f64 (C12).
RankedTensorType lseType(ArrayRef<int64_t> dims, Type e) {
  return RankedTensorType::get(
      dims, e.isF64() ? e : Float32Type::get(e.getContext()));
}

/// The layout attributes both ops read their tensors through.
struct Layout {
  std::optional<ArrayRef<int64_t>> seqMajor, qkvHeads;
};

/// The logical [B, H, S, D] sizes of tensor `i` of type `t`.
SmallVector<int64_t, 4> logical(RankedTensorType t, Layout layout, int64_t i) {
  return attentionTensorDims(t.getShape(), layout.seqMajor, layout.qkvHeads, i);
}

/// Checks `qkv_heads` (attention_c11, attention_grad_c5): [Hq, Hk], each
/// at least 1, with query, key and value (rank 4) of one type, stored
/// sequence-major [B, S, Hq + 2 Hk, D].
LogicalResult checkQkvHeads(Layout layout, ArrayRef<RankedTensorType> qkv,
                            StringRef constraint, EmitErrorFn emitError) {
  if (!layout.qkvHeads)
    return success();
  ArrayRef<int64_t> heads = *layout.qkvHeads;
  if (heads.size() != 2 || heads[0] < 1 || heads[1] < 1)
    return emitError() << constraint
                       << " qkv_heads must be [query heads, key heads], each "
                          "at least 1";
  int64_t stored = heads[0] + 2 * heads[1];
  if (qkv[1] != qkv[0] || qkv[2] != qkv[0])
    return emitError() << constraint
                       << " qkv_heads needs query, key and value of one type; "
                          "got "
                       << qkv[0] << ", " << qkv[1] << ", " << qkv[2];
  for (int64_t i = 0; i < 3; ++i) {
    if (!listed(layout.seqMajor, i))
      return emitError() << constraint
                         << " qkv_heads needs query, key and value stored "
                            "sequence-major (seq_major 0, 1 and 2)";
    if (qkv[i].getDimSize(2) != stored)
      return emitError() << constraint << " qkv_heads = [" << heads[0] << ", "
                         << heads[1] << "] reads " << stored
                         << " heads, but operand " << i << " is " << qkv[i];
  }
  return success();
}

LogicalResult inferAttentionType(Value query, Value key, Value value,
                                 Value mask, double scale, Layout layout,
                                 bool withLse, SmallVectorImpl<Type> *types,
                                 EmitErrorFn emitError) {
  std::optional<ArrayRef<int64_t>> seqMajor = layout.seqMajor;
  auto qType = dyn_cast<RankedTensorType>(query.getType());
  auto kType = dyn_cast<RankedTensorType>(key.getType());
  auto vType = dyn_cast<RankedTensorType>(value.getType());
  if (!qType || !kType || !vType)
    return failure();
  if (failed(checkSeqMajor(seqMajor, 4, "(C10)", emitError))) // attention_c10
    return failure();
  if (qType.getRank() != 4 || kType.getRank() != 4 ||
      vType.getRank() != 4) // attention_c1
    return emitError() << "(C1) query, key and value must have rank 4 "
                          "[batch, heads, seq, head_dim]; got ranks "
                       << qType.getRank() << ", " << kType.getRank() << ", "
                       << vType.getRank();
  if (failed(checkQkvHeads(layout, {qType, kType, vType}, "(C11)",
                           emitError))) // attention_c11
    return failure();
  SmallVector<int64_t, 4> q = logical(qType, layout, 0),
                          k = logical(kType, layout, 1),
                          v = logical(vType, layout, 2);
  int64_t batch = q[0], qHeads = q[1], qSeq = q[2];
  int64_t kHeads = k[1], kSeq = k[2];
  if (k[0] != batch || v[0] != batch) // attention_c2
    return emitError() << "(C2) batch sizes differ: query " << batch << ", key "
                       << k[0] << ", value " << v[0];
  if (k[3] != q[3]) // attention_c3
    return emitError() << "(C3) query head dimension " << q[3]
                       << " differs from key head dimension " << k[3];
  if (v[1] != kHeads || v[2] != kSeq) // attention_c4
    return emitError() << "(C4) key has " << kHeads << " heads and sequence "
                       << kSeq << " but value has " << v[1]
                       << " heads and sequence " << v[2];
  if (kHeads == 0 || qHeads % kHeads != 0) // attention_c5
    return emitError() << "(C5) query heads (" << qHeads
                       << ") must be a multiple of key heads (" << kHeads
                       << ")";
  Type elementType = qType.getElementType();
  SmallVector<Type> operandTypes = {kType, vType};
  if (mask) {
    auto m = dyn_cast<RankedTensorType>(mask.getType());
    if (!m)
      return failure();
    int64_t scores[4] = {batch, qHeads, qSeq, kSeq};
    if (m.getRank() != 4) // attention_c6
      return emitError() << "(C6) mask must have rank 4, got " << m.getRank();
    for (int64_t d = 0; d < 4; ++d)
      if (m.getDimSize(d) != 1 && m.getDimSize(d) != scores[d]) // attention_c6
        return emitError() << "(C6) mask dimension " << d << " has size "
                           << m.getDimSize(d) << ", which is neither 1 nor "
                           << scores[d] << " (scores are [" << batch << ", "
                           << qHeads << ", " << qSeq << ", " << kSeq << "])";
    operandTypes.push_back(m);
  }
  for (Type t : operandTypes) // attention_c7
    if (cast<RankedTensorType>(t).getElementType() != elementType)
      return emitError() << "(C7) operand element types differ: query has "
                         << elementType << ", another operand has "
                         << cast<RankedTensorType>(t).getElementType();
  if (!std::isfinite(scale)) // attention_c8
    return emitError() << "(C8) scale must be finite, got " << scale;
  if (types) {
    types->push_back(RankedTensorType::get(
        attentionDims({batch, qHeads, qSeq, v[3]}, listed(seqMajor, 3)),
        elementType));
    if (withLse) // attention_c12
      types->push_back(lseType({batch, qHeads, qSeq}, elementType));
  }
  return success();
}

} // namespace

LogicalResult AttentionOp::verifyShapeConstraints() {
  if (failed(checkSoftcap(getSoftcap(), "(C13)", [&] { // attention_c13
        return emitOpError();
      })))
    return failure();
  if (failed(checkDropout(getDropout(), "(C14)", [&] { // attention_c14
        return emitOpError();
      })))
    return failure();
  if (failed(checkTensorBlocks(*this, getHeadBlocks(), drawsMasks(),
                               "head_blocks", "(C15)", [&] { // attention_c15
                                 return emitOpError();
                               })))
    return failure();
  return inferAttentionType(getQuery(), getKey(), getValue(), getMask(),
                            getScale().convertToDouble(),
                            {getSeqMajor(), getQkvHeads()}, getWithLse(),
                            nullptr, [&] { return emitOpError(); });
}

SmallVector<int64_t, 4> AttentionOp::logicalDims(int i) {
  Type t = i < 3 ? getOperand(i).getType() : getResult().getType();
  return attentionTensorDims(cast<ShapedType>(t).getShape(), getSeqMajor(),
                             getQkvHeads(), i);
}

SmallVector<int64_t, 4> AttentionGradOp::logicalDims(int i) {
  if (i >= 4 && hasPackedGrad()) // a window of the one result (C6)
    return attentionTensorDims(
        cast<ShapedType>(getGrads()[0].getType()).getShape(), getSeqMajor(),
        getQkvHeads(), i - 4);
  Type t = i < 4 ? getOperand(i).getType() : getResult(i - 4).getType();
  return attentionTensorDims(cast<ShapedType>(t).getShape(), getSeqMajor(),
                             getQkvHeads(), i);
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  return inferAttentionType(
      adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
      adaptor.getMask(), adaptor.getScale().convertToDouble(),
      {adaptor.getSeqMajor(), adaptor.getQkvHeads()}, adaptor.getWithLse(),
      &types,
      [&] { return mlir::emitError(loc ? *loc : UnknownLoc::get(ctx)); });
}

LogicalResult AttentionGradOp::verify() {
  std::optional<ArrayRef<int64_t>> seqMajor = getSeqMajor();
  Layout layout{seqMajor, getQkvHeads()};
  if (failed(checkSoftcap(getSoftcap(), "(C8)", [&] { // attention_grad_c8
        return emitOpError();
      })))
    return failure();
  if (failed(checkDropout(getDropout(), "(C9)", [&] { // attention_grad_c9
        return emitOpError();
      })))
    return failure();
  if (failed(checkTensorBlocks(*this, getHeadBlocks(), drawsMasks(),
                               "head_blocks", "(C10)",
                               [&] { // attention_grad_c10
                                 return emitOpError();
                               })))
    return failure();
  if (failed(checkSeqMajor(seqMajor, 7, "(C4)", [&] { // attention_grad_c4
        return emitOpError();
      })))
    return failure();
  RankedTensorType qType = getQuery().getType(), kType = getKey().getType(),
                   vType = getValue().getType(),
                   gType = getCotangent().getType();
  if (qType.getRank() != 4 || kType.getRank() != 4 || vType.getRank() != 4 ||
      gType.getRank() != 4) // attention_grad_c1
    return emitOpError("(C1) query, key, value and the cotangent must have "
                       "rank 4");
  if (failed(checkQkvHeads(layout, {qType, kType, vType}, "(C5)",
                           [&] { return emitOpError(); }))) // attention_grad_c5
    return failure();
  SmallVector<int64_t, 4> q = logical(qType, layout, 0),
                          k = logical(kType, layout, 1),
                          v = logical(vType, layout, 2),
                          g = logical(gType, layout, 3);
  int64_t b = q[0], hq = q[1], sq = q[2];
  int64_t hk = k[1], sk = k[2];
  if (k[0] != b || v[0] != b || k[3] != q[3] || v[1] != hk || v[2] != sk ||
      hk == 0 || hq % hk != 0 ||
      ArrayRef<int64_t>(g) !=
          ArrayRef<int64_t>{b, hq, sq, v[3]}) // attention_grad_c1
    return emitOpError("(C1) the shapes are not attention's: query ")
           << qType << ", key " << kType << ", value " << vType
           << ", cotangent " << gType
           << (seqMajor ? " (read through seq_major)" : "");
  if (Value mask = getMask()) {
    auto m = cast<RankedTensorType>(mask.getType());
    int64_t scores[4] = {b, hq, sq, sk};
    if (m.getRank() != 4 || llvm::any_of(llvm::seq(0, 4), [&](int i) {
          return m.getDimSize(i) != 1 && m.getDimSize(i) != scores[i];
        })) // attention_grad_c1
      return emitOpError("(C1) the mask ")
             << m << " does not broadcast to the scores";
  }
  Type e = qType.getElementType();
  ValueRange stats = getStats();
  // attention_grad_c2: the log-sum-exps (C7) have their own type.
  for (Value x : getOperands().drop_back(stats.empty() ? 0 : 1))
    if (cast<RankedTensorType>(x.getType()).getElementType() != e)
      return emitOpError("(C2) all operands must have one element type");
  if (!stats.empty()) {
    RankedTensorType want = lseType({b, hq, sq}, e);
    if (stats.size() != 2 || stats[0].getType() != gType ||
        stats[1].getType() != want) // attention_grad_c7
      return emitOpError("(C7) stats must be the forward's result, of the "
                         "cotangent's type ")
             << gType << ", and its log-sum-exps " << want << "; got "
             << stats.size() << " operands";
  }
  ValueRange grads = getGrads();
  if (grads.size() == 1) { // attention_grad_c6: the fused projection's
    auto t = cast<RankedTensorType>(grads[0].getType());
    if (!layout.qkvHeads || !isSeqMajor(4) || !isSeqMajor(5) || !isSeqMajor(6))
      return emitOpError("(C6) one result, the fused projection's gradient, "
                         "needs qkv_heads and seq_major 4, 5 and 6");
    if (t != qType)
      return emitOpError("(C6) the fused projection's gradient ")
             << t << " must have the projection's type " << qType;
    if (!std::isfinite(getScale().convertToDouble())) // attention_grad_c3
      return emitOpError("(C3) scale must be finite");
    return success();
  }
  if (grads.size() != 3) // attention_grad_c6
    return emitOpError("(C6) expects three results (the gradients of query, "
                       "key and value) or one (the fused projection's); got ")
           << grads.size();
  // attention_grad_c2: each gradient is its tensor's logical shape, stored
  // in its own layout.
  ArrayRef<int64_t> shapes[3] = {q, k, v};
  for (int i = 0; i < 3; ++i) {
    auto t = cast<RankedTensorType>(grads[i].getType());
    if (t.getElementType() != e ||
        ArrayRef<int64_t>(logical(t, layout, 4 + i)) != shapes[i])
      return emitOpError("(C2) the results must have the shapes and element "
                         "type of query, key and value");
  }
  if (!std::isfinite(getScale().convertToDouble())) // attention_grad_c3
    return emitOpError("(C3) scale must be finite");
  return success();
}

/// A ratio of 0 drops nothing and draws nothing.
bool AttentionOp::drawsMasks() {
  return getDropout() && !getDropout()->isZero();
}
bool AttentionGradOp::drawsMasks() {
  return getDropout() && !getDropout()->isZero();
}
