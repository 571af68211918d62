//===- OpTable.cpp - The ONNX ops trainc imports, by opset ----------------===//
//
// One row per op of the default domain: the opsets whose semantics the
// import function implements. The upper bound is the newest opset checked
// against onnx 1.23 (opset 28); every version bump of these ops between 13
// and 28 only added element types, except those the import functions
// handle by opset (ReduceSum axes at 13, every other Reduce*'s axes at
// 18, Split num_outputs at 18, Shape start/end at 15, Reshape allowzero at
// 14, Range stash_type at 27), Mod's fmod = 0 on floats (defined at 28,
// read as 28 defines it at every opset) and Cast's float8-only attributes
// (saturate, round_mode), which do not apply to the types trainc supports.
//
//===----------------------------------------------------------------------===//

#include "ImportContext.h"

#include "llvm/ADT/StringRef.h"

namespace trainc::onnx_import {
namespace {

constexpr int64_t kLatest = 28;

const OpEntry kOps[] = {
    {"Abs", 13, kLatest, importAbs, ""},
    {"Acos", 13, kLatest, importAcos, "as atan2(sqrt((1 - x)(1 + x)), x)"},
    {"Acosh", 13, kLatest, importAcosh, "through log1p"},
    {"Add", 13, kLatest, importAdd, ""},
    {"And", 13, kLatest, importAnd, ""},
    {"ArgMax", 13, kLatest, importArgMax, "NaN is the maximum, as numpy"},
    {"ArgMin", 13, kLatest, importArgMin, "NaN is the minimum, as numpy"},
    {"Asin", 13, kLatest, importAsin, "as atan2(x, sqrt((1 - x)(1 + x)))"},
    {"Asinh", 13, kLatest, importAsinh, "through log1p"},
    {"Atan", 13, kLatest, importAtan, "a polynomial after range reduction"},
    {"Atanh", 13, kLatest, importAtanh, "through log1p"},
    {"BatchNormalization", 13, kLatest, importBatchNormalization,
     "training mode: batch statistics, and the running ones become the "
     "step's update of input_mean and input_var (frozen); their variance is "
     "the population's, as the specification says (PyTorch's running_var "
     "is the unbiased one)"},
    {"Cast", 13, kLatest, importCast,
     "all numeric types and BOOL (8-/4-bit floats, 4-/2-bit integers "
     "included); no strings; FLOAT8E8M0 with round_mode 'up' only"},
    {"CastLike", 15, kLatest, importCastLike, ""},
    {"Ceil", 13, kLatest, importCeil, "as -floor(-x)"},
    {"Celu", 13, kLatest, importCelu, ""},
    {"Clip", 13, kLatest, importClip,
     "hardtanh's gradient (none for x at a bound); a missing float bound is "
     "the largest finite value"},
    {"Concat", 13, kLatest, importConcat, ""},
    {"Constant", 13, kLatest, importConstant, "no sparse or string values"},
    {"ConstantOfShape", 13, kLatest, importConstantOfShape,
     "shape must be constant"},
    {"AveragePool", 13, kLatest, importAveragePool,
     "1 to 3 spatial dimensions; slices of the padded input summed"},
    {"Conv", 13, kLatest, importConv,
     "1 to 3 spatial dimensions, as im2col and one product (patches "
     "reshaped); float types"},
    {"ConvTranspose", 13, kLatest, importConvTranspose,
     "1 to 3 spatial dimensions: a convolution of X dilated by the strides "
     "with W's kernels transposed and flipped"},
    {"Cos", 13, kLatest, importCos, ""},
    {"Cosh", 13, kLatest, importCosh, ""},
    {"CumSum", 13, kLatest, importCumSum, "axis must be constant"},
    {"DepthToSpace", 13, kLatest, importDepthToSpace, "DCR and CRD"},
    {"Div", 13, kLatest, importDiv, ""},
    {"Dropout", 13, kLatest, importDropout,
     "ratio and training_mode must be constant"},
    {"Einsum", 13, kLatest, importEinsum,
     "f64, f32, f16, bf16; no diagonals (a label repeated in one term); "
     "ellipses of one rank"},
    {"Elu", 13, kLatest, importElu, "gradient alpha at 0, as torch"},
    {"Equal", 13, kLatest, importEqual, ""},
    {"Erf", 13, kLatest, importErf, ""},
    {"Exp", 13, kLatest, importExp, ""},
    {"Expand", 13, kLatest, importExpand, "shape must be constant"},
    {"EyeLike", 13, kLatest, importEyeLike, ""},
    {"Flatten", 13, kLatest, importFlatten, ""},
    {"Floor", 13, kLatest, importFloor, ""},
    {"Gather", 13, kLatest, importGather, ""},
    {"GatherElements", 13, kLatest, importGatherElements, ""},
    {"GatherND", 13, kLatest, importGatherND, "batch_dims 0"},
    {"Gelu", 20, kLatest, importGelu, ""},
    {"Gemm", 13, kLatest, importGemm, "float only"},
    {"GlobalAveragePool", 13, kLatest, importGlobalAveragePool, ""},
    {"GlobalMaxPool", 13, kLatest, importGlobalMaxPool, ""},
    {"Greater", 13, kLatest, importGreater, ""},
    {"GreaterOrEqual", 12, kLatest, importGreaterOrEqual, ""},
    {"HardSigmoid", 13, kLatest, importHardSigmoid, ""},
    {"HardSwish", 14, kLatest, importHardSwish, ""},
    {"Identity", 13, kLatest, importIdentity, "tensors only"},
    {"InstanceNormalization", 13, kLatest, importInstanceNormalization,
     "a layer norm over the spatial dimensions (no affine), then scale and "
     "B per channel"},
    {"IsInf", 13, kLatest, importIsInf, ""},
    {"IsNaN", 13, kLatest, importIsNaN, ""},
    {"LayerNormalization", 17, kLatest, importLayerNormalization, ""},
    {"LeakyRelu", 13, kLatest, importLeakyRelu,
     "gradient alpha at 0, as torch"},
    {"Less", 13, kLatest, importLess, ""},
    {"LessOrEqual", 12, kLatest, importLessOrEqual, ""},
    {"Log", 13, kLatest, importLog, ""},
    {"LogSoftmax", 13, kLatest, importLogSoftmax, ""},
    {"MatMul", 13, kLatest, importMatMul, "float only"},
    {"Max", 13, kLatest, importMax, ""},
    {"MaxPool", 13, kLatest, importMaxPool,
     "1 to 3 spatial dimensions; no Indices output; the gradient to each "
     "window's first maximum"},
    {"Min", 13, kLatest, importMin, ""},
    {"Mish", 18, kLatest, importMish, ""},
    {"Mod", 13, kLatest, importMod,
     "fmod = 0 on floats as opset 28 defines it (Python's %)"},
    {"Mul", 13, kLatest, importMul, ""},
    {"Neg", 13, kLatest, importNeg, ""},
    {"NegativeLogLikelihoodLoss", 13, kLatest, importNegativeLogLikelihoodLoss,
     ""},
    {"Not", 13, kLatest, importNot, ""},
    {"OneHot", 11, kLatest, importOneHot,
     "depth must be constant; a label's class as a comparison with an iota"},
    {"Or", 13, kLatest, importOr, ""},
    {"PRelu", 13, kLatest, importPRelu, "gradient slope at 0, as torch"},
    {"Pad", 13, kLatest, importPad,
     "constant mode; pads, constant_value and axes must be constant"},
    {"Pow", 13, kLatest, importPow,
     "an integer base computes in f64 (exact below 2^53)"},
    {"RMSNormalization", 23, kLatest, importRMSNormalization, ""},
    {"Range", 13, kLatest, importRange, "inputs must be constant"},
    {"Reciprocal", 13, kLatest, importReciprocal, ""},
    {"ReduceL1", 13, kLatest, importReduceL1, "axes must be constant"},
    {"ReduceL2", 13, kLatest, importReduceL2,
     "axes must be constant; floats; gradient 0 at a zero norm"},
    {"ReduceLogSum", 13, kLatest, importReduceLogSum,
     "axes must be constant; floats"},
    {"ReduceLogSumExp", 13, kLatest, importReduceLogSumExp,
     "axes must be constant; floats"},
    {"ReduceMax", 13, kLatest, importReduceMax, "axes must be constant"},
    {"ReduceMean", 13, kLatest, importReduceMean, "axes must be constant"},
    {"ReduceMin", 13, kLatest, importReduceMin, "axes must be constant"},
    {"ReduceProd", 13, kLatest, importReduceProd, "axes must be constant"},
    {"ReduceSum", 13, kLatest, importReduceSum, "axes must be constant"},
    {"ReduceSumSquare", 13, kLatest, importReduceSumSquare,
     "axes must be constant"},
    {"Relu", 13, kLatest, importRelu, ""},
    {"Reshape", 13, kLatest, importReshape, "shape must be constant"},
    {"Resize", 13, kLatest, importResize,
     "constant scales or sizes; not tf_crop_and_resize"},
    {"Round", 13, kLatest, importRound, "ties to even"},
    {"ScatterElements", 13, kLatest, importScatterElements,
     "indices must be constant; reduction none"},
    {"ScatterND", 13, kLatest, importScatterND,
     "indices must be constant; reduction none"},
    {"Selu", 13, kLatest, importSelu, ""},
    {"SequenceAt", 13, kLatest, importSequenceAt,
     "of a SplitToSequence output; position must be constant"},
    {"Shape", 13, kLatest, importShape, ""},
    {"Shrink", 13, kLatest, importShrink, "floats"},
    {"Sigmoid", 13, kLatest, importSigmoid, ""},
    {"Sign", 13, kLatest, importSign, ""},
    {"Sin", 13, kLatest, importSin, ""},
    {"Sinh", 13, kLatest, importSinh, ""},
    {"Slice", 13, kLatest, importSlice,
     "starts/ends/axes/steps must be constant"},
    {"Softmax", 13, kLatest, importSoftmax, ""},
    {"SoftmaxCrossEntropyLoss", 13, kLatest, importSoftmaxCrossEntropyLoss, ""},
    {"Softplus", 13, kLatest, importSoftplus,
     "without overflow: x + log1p(exp(-x)) for x > 0"},
    {"Softsign", 13, kLatest, importSoftsign, ""},
    {"SpaceToDepth", 13, kLatest, importSpaceToDepth, ""},
    {"Split", 13, kLatest, importSplit, "split must be constant"},
    {"SplitToSequence", 13, kLatest, importSplitToSequence,
     "split must be constant"},
    {"Sqrt", 13, kLatest, importSqrt, ""},
    {"Squeeze", 13, kLatest, importSqueeze, "axes must be constant"},
    {"Sub", 13, kLatest, importSub, ""},
    {"Sum", 13, kLatest, importSum, ""},
    {"Tan", 13, kLatest, importTan, "as sin(x) / cos(x)"},
    {"Tanh", 13, kLatest, importTanh, ""},
    {"ThresholdedRelu", 13, kLatest, importThresholdedRelu, ""},
    {"Tile", 13, kLatest, importTile, "repeats must be constant"},
    {"TopK", 11, kLatest, importTopK,
     "K must be constant; floats, int32, int64; always sorted, ties in "
     "index order, NaN largest"},
    {"Transpose", 13, kLatest, importTranspose, ""},
    {"Trilu", 14, kLatest, importTrilu, "k must be constant"},
    {"Unsqueeze", 13, kLatest, importUnsqueeze, "axes must be constant"},
    {"Where", 13, kLatest, importWhere, ""},
};

} // namespace

llvm::ArrayRef<OpEntry> opTable() { return kOps; }

const OpEntry *findOp(llvm::StringRef opType) {
  for (const OpEntry &e : kOps)
    if (opType == e.opType)
      return &e;
  return nullptr;
}

llvm::StringRef whyNotImported(llvm::StringRef opType) {
  // Ops whose result's shape depends on their inputs' values: a static
  // memory plan cannot hold them.
  if (opType == "NonZero")
    return "its output's shape depends on its input's values, and trainc "
           "compiles static shapes and a static memory plan (a "
           "mixture-of-experts layer that gathers each expert's tokens by "
           "index, as Hugging Face's eager experts loop does, needs a dense "
           "form)";
  static const char *const kValueShaped[] = {
      "Unique", "Compress", "NonMaxSuppression", "StringSplit"};
  for (const char *op : kValueShaped)
    if (opType == op)
      return "its output's shape depends on its input's values, and trainc "
             "compiles static shapes and a static memory plan";
  return "";
}

} // namespace trainc::onnx_import
