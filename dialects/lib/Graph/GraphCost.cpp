//===- GraphCost.cpp - FLOP counts of graph ops ---------------------------===//
//
// CostOpInterface overrides. Conventions (those of MFU accounting, e.g.
// PaLM's appendix B): a multiply-add is 2 FLOPs; exp, erf, tanh, sqrt and
// divisions count 1 each. Counts are per execution of the forward op.
//
//===----------------------------------------------------------------------===//

#include "trainc/Dialect/Graph/GraphOps.h"

#include <algorithm>

using namespace mlir;
using namespace trainc::graph;

static int64_t product(ArrayRef<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t s : sizes)
    p *= s;
  return p;
}

/// 2 FLOPs per multiply-add: each result element sums over the contraction.
int64_t DotGeneralOp::getFlops() {
  int64_t contraction = 1;
  for (int64_t d : getLhsContractingDimensions())
    contraction *= getLhs().getType().getDimSize(d);
  return 2 * numElements(getResult()) * contraction;
}

/// The product's FLOPs and one add per result element.
int64_t DotGeneralBiasOp::getFlops() {
  int64_t contraction = 1;
  for (int64_t d : getLhsContractingDimensions())
    contraction *= getLhs().getType().getDimSize(d);
  return (2 * contraction + 1) * numElements(getResult());
}

/// dot_general_bias's FLOPs and gelu's.
int64_t DotGeneralBiasGeluOp::getFlops() {
  int64_t contraction = 1;
  for (int64_t d : getLhsContractingDimensions())
    contraction *= getLhs().getType().getDimSize(d);
  int64_t gelu = getApproximation() == GeluApproximation::erf ? 5 : 9;
  return (2 * contraction + 1 + gelu) * numElements(getResult());
}

/// The product's FLOPs and gelu_grad's.
int64_t DotGeneralGeluGradOp::getFlops() {
  int64_t contraction = 1;
  for (int64_t d : getLhsContractingDimensions())
    contraction *= getLhs().getType().getDimSize(d);
  int64_t grad = getApproximation() == GeluApproximation::erf ? 9 : 16;
  return (2 * contraction + grad) * numElements(getResult());
}

/// The product's FLOPs and one add per summed element.
int64_t DotGeneralBiasGradOp::getFlops() {
  int64_t contraction = 1;
  for (int64_t d : getLhsContractingDimensions())
    contraction *= getLhs().getType().getDimSize(d);
  return 2 * numElements(getResult()) * contraction +
         numElements(getSumRhs() ? getRhs() : getLhs());
}

// A reduction does one operation per input element.
int64_t ReduceSumOp::getFlops() { return numElements(getOperand()); }
int64_t ReduceMaxOp::getFlops() { return numElements(getOperand()); }
int64_t ReduceProdOp::getFlops() { return numElements(getOperand()); }
// A comparison sort: about n log2(n) comparisons per row of n.
int64_t ArgsortOp::getFlops() {
  int64_t n = getOperand().getType().getDimSize(getAxis()), log2 = 0;
  while ((int64_t(1) << log2) < n)
    ++log2;
  return numElements(getOperand()) * std::max<int64_t>(log2, 1);
}
int64_t ReduceMeanOp::getFlops() {
  return numElements(getOperand()) + numElements(getResult());
}

// Data movement does no arithmetic.
int64_t BroadcastInDimOp::getFlops() { return 0; }
int64_t ReshapeOp::getFlops() { return 0; }
int64_t TransposeOp::getFlops() { return 0; }
int64_t SliceOp::getFlops() { return 0; }
int64_t ConcatenateOp::getFlops() { return 0; }
int64_t GatherOp::getFlops() { return 0; }
int64_t ExtractPatchesOp::getFlops() { return 0; }
int64_t ConstantOp::getFlops() { return 0; }
// A bitcast moves bits unchanged.
int64_t BitcastOp::getFlops() { return 0; }
/// One add per update element.
int64_t ScatterAddOp::getFlops() { return numElements(getUpdates()); }
/// At most one add per patch element.
int64_t FoldPatchesOp::getFlops() { return numElements(getOperand()); }

/// A reshape is a view: the runtime moves no bytes for it.
int64_t ReshapeOp::getBytesAccessed() { return 0; }
/// Constants live in the executable; reading them is charged to consumers.
int64_t ConstantOp::getBytesAccessed() { return 0; }

/// max, subtract, exp, sum, divide: 5 per element.
int64_t SoftmaxOp::getFlops() { return 5 * numElements(getResult()); }

/// erf form: divide, erf, add, two multiplies (5); tanh form: cube (2),
/// multiply-add (2), scale, tanh, add, two multiplies (5): 9.
int64_t GeluOp::getFlops() {
  int64_t perElement = getApproximation() == GeluApproximation::erf ? 5 : 9;
  return perElement * numElements(getResult());
}

/// The derivative (as gelu's forward, plus its polynomial) and the product
/// with the cotangent.
int64_t GeluGradOp::getFlops() {
  int64_t perElement = getApproximation() == GeluApproximation::erf ? 9 : 16;
  return perElement * numElements(getResult());
}

/// Statistics (as the norms' forward), xhat, dxhat, the two means of
/// products and the combination.
int64_t NormGradOp::getFlops() {
  return int64_t(12 + (getScale() ? 1 : 0)) * numElements(getInputGrad());
}

/// norm_grad's, with the scale, then a product and one or two sums, and
/// the addend's add.
int64_t NormGradParamsOp::getFlops() {
  return int64_t(13 + 2 + (getBiasGrad() ? 1 : 0) + (getAddend() ? 1 : 0)) *
         numElements(getInputGrad());
}

/// Clip, decay, two moment updates (3 + 4), sqrt, two divides, the step's
/// multiply and add.
int64_t AdamwUpdateOp::getFlops() {
  int64_t flops = 0;
  for (Value p : getNewParams())
    flops += 14 * numElements(p);
  return flops;
}
/// A multiply and an add per element.
int64_t SumOfSquaresOp::getFlops() {
  int64_t flops = 0;
  for (Value v : getOperands())
    flops += 2 * numElements(v);
  return flops;
}

/// A random draw, a compare and a scaling multiply per element.
/// Communication, not model FLOPs (MFU counts the model's work).
int64_t AllReduceOp::getFlops() { return 0; }
int64_t ReduceScatterOp::getFlops() { return 0; }
int64_t AllGatherOp::getFlops() { return 0; }
int64_t ShardSliceOp::getFlops() { return 0; }
int64_t AllReduceStartOp::getFlops() { return 0; }
int64_t ReduceScatterStartOp::getFlops() { return 0; }
int64_t AllGatherStartOp::getFlops() { return 0; }
int64_t CollectiveDoneOp::getFlops() { return 0; }

int64_t DropoutOp::getFlops() { return 3 * numElements(getResult()); }

/// mean (1), subtract (1), square-accumulate (2), normalize (1), then a
/// multiply per affine operand present.
int64_t LayerNormOp::getFlops() {
  int64_t perElement = 5 + (getScale() ? 1 : 0) + (getBias() ? 1 : 0);
  return perElement * numElements(getResult());
}

/// square-accumulate (2), normalize (1), scale (1 if present).
int64_t RmsNormOp::getFlops() {
  return (3 + (getScale() ? 1 : 0)) * numElements(getResult());
}

/// Two matmuls (q k^T and p v, 2 FLOPs per multiply-add), the scaling,
/// the mask add and a softmax (5 per score). Causal masking is not
/// discounted: kernels that skip masked blocks beat this count, as MFU
/// conventions assume.
int64_t AttentionOp::getFlops() {
  auto q = logicalDims(0), k = logicalDims(1);
  int64_t dv = getValue().getType().getDimSize(3);
  int64_t scores = q[0] * q[1] * q[2] * k[2];
  int64_t flops = 2 * scores * q[3] + 2 * scores * dv;
  // The scale, the mask's add, the softmax; a soft cap's divide, tanh
  // and multiply; dropout's draw, test and scale (graph.dropout's 3).
  flops += scores * (1 + (getMask() ? 1 : 0) + 5 + (getSoftcap() ? 3 : 0) +
                     (getDropout() ? 3 : 0));
  return flops;
}

/// max, subtract, exp, sum per logit; log and the target pick per row.
int64_t SoftmaxCrossEntropyOp::getFlops() {
  auto logits = getLogits().getType();
  int64_t rows = product(logits.getShape().drop_back());
  return 4 * logits.getNumElements() + 2 * rows;
}

/// softmax (5 per logit), the one-hot subtraction and the weighting.
int64_t SoftmaxCrossEntropyGradOp::getFlops() {
  return 6 * numElements(getResult());
}

/// The gradient's, and the log and the target pick per row.
int64_t SoftmaxCrossEntropyAndGradOp::getFlops() {
  auto logits = getLogits().getType();
  return 6 * logits.getNumElements() +
         2 * product(logits.getShape().drop_back());
}

/// The scores again (2 D per score), dP = g v^T and dv = P^T g (2 Dv each),
/// dq and dk (2 D each), and softmax, the row dot and dS (8 per score).
int64_t AttentionGradOp::getFlops() {
  auto q = logicalDims(0), k = logicalDims(1);
  int64_t d = q[3], dv = getValue().getType().getDimSize(3);
  int64_t scores = q[0] * q[1] * q[2] * k[2];
  // A soft cap: its divide, tanh and multiply remade, and dS's 1 - t^2.
  // Dropout: the mask drawn again, applied to P and to dP.
  return scores *
         (6 * d + 4 * dv + 8 + (getSoftcap() ? 6 : 0) + (getDropout() ? 5 : 0));
}
