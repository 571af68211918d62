//===- ImportContext.h - State shared by the ONNX op importers -*- C++ -*-===//
//
// GraphImporter walks a GraphProto in order; for each node it builds a
// NodeContext and calls the op's import function (ElementwiseOps.cpp,
// ShapeOps.cpp, IndexingOps.cpp, NnOps.cpp). Import functions read inputs and
// attributes through the NodeContext, emit graph ops with createOrFold (so
// shape arithmetic on constants folds at once), and define the node's outputs.
// Every error they report names the node.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTENDS_ONNX_IMPORTCONTEXT_H
#define TRAINC_FRONTENDS_ONNX_IMPORTCONTEXT_H

#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trainc::onnx_import {

class NodeContext;

/// Largest constant an op like Range or ConstantOfShape may create.
constexpr int64_t kMaxConstantElements = int64_t(1) << 28;

/// The number of elements of `shape`.
inline int64_t product(llvm::ArrayRef<int64_t> shape) {
  int64_t p = 1;
  for (int64_t d : shape)
    p *= d;
  return p;
}

/// The import function of one op type.
using ImportFn = mlir::LogicalResult (*)(NodeContext &);

/// One row of the op table (OpTable.cpp).
struct OpEntry {
  const char *opType;
  int64_t minOpset;
  int64_t maxOpset;
  ImportFn import;
  const char *note;
};

/// Looks up `opType` in the default domain's table; null if absent.
const OpEntry *findOp(llvm::StringRef opType);
/// Why trainc cannot import `opType` whatever its inputs, for the error
/// ("its output's shape depends on ..."); "" for ops it merely lacks.
llvm::StringRef whyNotImported(llvm::StringRef opType);
llvm::ArrayRef<OpEntry> opTable();

/// Maps an ONNX TensorProto data type to an MLIR element type, or null for
/// types trainc does not support.
mlir::Type elementTypeFor(mlir::MLIRContext *ctx, int32_t onnxType);
/// TensorProto data types newer than libonnx 1.12's enum (onnx 1.23).
enum NewerOnnxTypes : int32_t {
  kOnnxFloat8E4M3FN = 17,
  kOnnxFloat8E4M3FNUZ = 18,
  kOnnxFloat8E5M2 = 19,
  kOnnxFloat8E5M2FNUZ = 20,
  kOnnxUint4 = 21,
  kOnnxInt4 = 22,
  kOnnxFloat4E2M1 = 23,
  kOnnxFloat8E8M0 = 24,
  kOnnxUint2 = 25,
  kOnnxInt2 = 26,
};

/// The ONNX element types elementTypeFor maps, for messages.
constexpr const char *kSupportedOnnxTypes =
    "FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT64, "
    "UINT32, UINT16, UINT8, BOOL and, for Cast only, FLOAT8E4M3FN, "
    "FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ, FLOAT4E2M1, FLOAT8E8M0, "
    "INT4, UINT4, INT2, UINT2";
/// "FLOAT", "INT8", ... or "data type N" for codes this ONNX does not name.
std::string onnxTypeName(int32_t onnxType);

/// Converts a TensorProto to elements of a graph tensor type. `baseDir`
/// resolves external data. `what` names the tensor in errors.
mlir::FailureOr<mlir::DenseElementsAttr>
tensorToElements(const onnx::TensorProto &tensor, llvm::StringRef baseDir,
                 mlir::MLIRContext *ctx, llvm::StringRef what,
                 llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// Raw little-endian bytes of a TensorProto (from raw_data, typed fields or
/// an external file) in the layout of its MLIR element type.
mlir::FailureOr<std::vector<char>>
tensorBytes(const onnx::TensorProto &tensor, mlir::Type elementType,
            int64_t numElements, llvm::StringRef baseDir, llvm::StringRef what,
            llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The same bytes as a resource blob for a parameter's initial value. When
/// raw_data already holds them in the element type's layout, the blob takes
/// that string over (the proto no longer holds it): the weights are not
/// copied. Otherwise it owns tensorBytes's result.
mlir::FailureOr<mlir::AsmResourceBlob>
tensorBlob(onnx::TensorProto &tensor, mlir::Type elementType,
           int64_t numElements, llvm::StringRef baseDir, llvm::StringRef what,
           llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The values defined so far in the graph being imported.
class GraphImporter {
public:
  GraphImporter(mlir::OpBuilder &builder, std::string modelPath,
                std::string baseDir, int64_t opset, uint64_t dropoutSeed,
                bool evalMode, bool trainingStep, bool unbiasedRunningVar,
                bool trainModelessDropout)
      : builder(builder), modelPath(std::move(modelPath)),
        baseDir(std::move(baseDir)), opset(opset), dropoutSeed(dropoutSeed),
        evalMode(evalMode), trainingStep(trainingStep),
        unbiasedRunningVar(unbiasedRunningVar),
        trainModelessDropout(trainModelessDropout) {}

  mlir::OpBuilder &builder;
  const std::string modelPath;
  const std::string baseDir;
  /// The model's opset of the default domain.
  const int64_t opset;
  const uint64_t dropoutSeed;
  /// Training-mode Dropout and BatchNormalization are read in inference
  /// mode (--eval-mode).
  const bool evalMode;
  /// Running statistics become the step's updates (ImportOptions).
  const bool trainingStep;
  /// The running variance blends the unbiased variance (ImportOptions).
  const bool unbiasedRunningVar;
  /// A training step's Dropout without training_mode trains
  /// (ImportOptions).
  const bool trainModelessDropout;
  /// Embedding tables' padding rows (ImportOptions), and the tables a
  /// Gather has read so far.
  std::map<std::string, int64_t> paddingIndices;
  std::set<std::string> paddedTablesRead;
  /// Dropout nodes of a training step that have no training_mode input
  /// (and a ratio above 0), which ONNX reads as the identity
  /// (importDropout), described: the import warns about them.
  std::vector<std::string> modelessDropouts;

  /// The value named `name`, or null if not defined (yet).
  mlir::Value lookup(llvm::StringRef name) const { return values.lookup(name); }
  void define(llvm::StringRef name, mlir::Value value) { values[name] = value; }

  // --- Parameters the forward pass updates ---------------------------------
  /// Defines `name` as the parameter that is @main's argument `arg` (its
  /// `train.param` attribute already set).
  void defineParameter(llvm::StringRef name, mlir::BlockArgument arg) {
    define(name, arg);
    entry = arg.getOwner();
  }
  /// The argument number of `v` when it is a parameter itself.
  std::optional<unsigned> parameterIndex(mlir::Value v) const;
  /// The `train.param` name of @main's argument `index`.
  llvm::StringRef parameterName(unsigned index) const;
  /// Marks a parameter as a statistic (BatchNormalization's input_mean or
  /// input_var): state, which the importer freezes.
  void markStatistic(unsigned index) { statistics.insert(index); }
  bool isStatistic(unsigned index) const { return statistics.count(index); }
  /// Records `next` as the parameter's value after the step (a `train.update`
  /// result); fails when the parameter already has one.
  mlir::LogicalResult addUpdate(unsigned index, mlir::Value next) {
    return mlir::success(updates.insert({index, next}).second);
  }
  /// The recorded updates, in the order they were made.
  const llvm::MapVector<unsigned, mlir::Value> &getUpdates() const {
    return updates;
  }
  /// Makes `next` the parameter's value after the step in place of the
  /// update it already has (a later node updating it again).
  void replaceUpdate(unsigned index, mlir::Value next) {
    updates[index] = next;
  }
  /// Running statistics nodes returned as a parameter's new value (the
  /// specification's outputs), and the parameter: a later training-mode
  /// node that reads the latest one continues the parameter's updates (a
  /// batch norm module called twice, as torch.export's exporter writes it).
  llvm::DenseMap<mlir::Value, unsigned> statisticOutputs;
  llvm::DenseMap<unsigned, mlir::Value> latestStatistic;

  /// Sequence values (SplitToSequence's output), which only SequenceAt
  /// reads: the graph dialect has tensors only, so a sequence is the list
  /// of its tensors at import time. Null if `name` is not a sequence.
  const llvm::SmallVector<mlir::Value> *
  lookupSequence(llvm::StringRef name) const {
    auto it = sequences.find(name);
    return it == sequences.end() ? nullptr : &it->second;
  }
  void defineSequence(llvm::StringRef name,
                      llvm::SmallVector<mlir::Value> items) {
    sequences[name] = std::move(items);
  }

private:
  llvm::StringMap<mlir::Value> values;
  llvm::StringMap<llvm::SmallVector<mlir::Value>> sequences;
  /// @main's entry block (the parameters' owner), once one is defined.
  mlir::Block *entry = nullptr;
  std::set<unsigned> statistics;
  llvm::MapVector<unsigned, mlir::Value> updates;
};

/// One node being imported.
class NodeContext {
public:
  NodeContext(GraphImporter &graph, const onnx::NodeProto &node, int64_t index,
              mlir::Location loc)
      : graph(graph), node(node), index(index), loc(loc),
        builder(graph.builder) {}

  GraphImporter &graph;
  const onnx::NodeProto &node;
  const int64_t index; ///< Position in GraphProto.node.
  const mlir::Location loc;
  mlir::OpBuilder &builder;

  int64_t opset() const { return graph.opset; }
  mlir::MLIRContext *context() const { return builder.getContext(); }

  /// "node #3 'name' (Reshape, domain 'ai.onnx', opset 17)".
  std::string describe() const;
  /// An error about this node: "<model path>: <describe()>: ...".
  mlir::InFlightDiagnostic error() const;

  // --- Inputs -------------------------------------------------------------
  /// True when input `i` exists and is not the empty name (omitted).
  bool hasInput(int i) const {
    return i < node.input_size() && !node.input(i).empty();
  }
  /// Input `i` as a value; an error if it is missing or undefined.
  mlir::FailureOr<mlir::Value> input(int i) const;
  mlir::RankedTensorType inputType(mlir::Value v) const {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }
  /// Input `i`, which must be a compile-time constant (after folding);
  /// `what` says what it is used for in the error.
  mlir::FailureOr<mlir::DenseElementsAttr>
  constantInput(int i, llvm::StringRef what) const;
  /// A constant integer input as a list of int64.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  intListInput(int i, llvm::StringRef what) const;
  /// A constant scalar (or one-element) input as a double.
  mlir::FailureOr<double> scalarInput(int i, llvm::StringRef what) const;

  // --- Attributes ---------------------------------------------------------
  const onnx::AttributeProto *attribute(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue) const;
  float floatAttr(llvm::StringRef name, float defaultValue) const;
  std::string stringAttr(llvm::StringRef name,
                         llvm::StringRef defaultValue) const;
  std::optional<llvm::SmallVector<int64_t>>
  intsAttr(llvm::StringRef name) const;
  /// Fails with an error naming the attribute if the node sets it.
  mlir::LogicalResult rejectAttribute(llvm::StringRef name,
                                      llvm::StringRef why) const;

  // --- Outputs ------------------------------------------------------------
  int numOutputs() const { return node.output_size(); }
  /// True when output `i` exists and has a name (is requested).
  bool outputRequested(int i) const {
    return i < node.output_size() && !node.output(i).empty();
  }
  /// Defines output `i` (ignored when it is not requested).
  void setOutput(int i, mlir::Value value) const;

  // --- Building -----------------------------------------------------------
  template <typename OpT, typename... Args>
  mlir::Value create(Args &&...args) const {
    return builder.createOrFold<OpT>(loc, std::forward<Args>(args)...);
  }
  /// A constant of `type` with every element `value`.
  mlir::Value splat(mlir::RankedTensorType type, double value) const;
  mlir::Value constant(mlir::DenseElementsAttr value) const;
  /// Broadcasts `value` to `shape` (numpy rules, trailing alignment).
  mlir::Value broadcastTo(mlir::Value value,
                          llvm::ArrayRef<int64_t> shape) const;
  /// Broadcasts all `values` to their common numpy shape; an error if the
  /// shapes are incompatible.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  broadcastAll(llvm::ArrayRef<mlir::Value> values) const;
  mlir::Value reshape(mlir::Value value, llvm::ArrayRef<int64_t> shape) const;
  mlir::Value convert(mlir::Value value, mlir::Type elementType) const;
  /// Normalizes a possibly negative axis into [0, rank); an error naming
  /// `what` if it is out of range.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what) const;
  /// Normalizes each axis against `rank`, rejecting duplicates.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank) const;
  /// Requires a float element type of input `v`.
  mlir::LogicalResult requireFloat(mlir::Value v, llvm::StringRef what) const;
};

/// The node's `epsilon` attribute (default 1e-5), which must be finite and
/// not negative: the normalizations'.
mlir::FailureOr<double> epsilonAttr(NodeContext &ctx);

/// begin, begin + 1, ..., end - 1.
llvm::SmallVector<int64_t> iotaVector(int64_t begin, int64_t end);
/// Broadcasts a value reduced over `dims` (dims dropped) back to `shape`.
mlir::Value expandReduced(NodeContext &ctx, mlir::Value reduced,
                          llvm::ArrayRef<int64_t> shape,
                          llvm::ArrayRef<int64_t> dims);

// Import functions, by family (ElementwiseOps.cpp, ActivationOps.cpp,
// ShapeOps.cpp, IndexingOps.cpp, ReduceOps.cpp, NnOps.cpp, EinsumOp.cpp,
// WindowOps.cpp, ResizeOps.cpp, BatchNormOp.cpp).
#define TRAINC_ONNX_IMPORT_FN(name)                                            \
  mlir::LogicalResult import##name(NodeContext &ctx);
TRAINC_ONNX_IMPORT_FN(Add)
TRAINC_ONNX_IMPORT_FN(Sub)
TRAINC_ONNX_IMPORT_FN(Mul)
TRAINC_ONNX_IMPORT_FN(Div)
TRAINC_ONNX_IMPORT_FN(Pow)
TRAINC_ONNX_IMPORT_FN(Max)
TRAINC_ONNX_IMPORT_FN(Min)
TRAINC_ONNX_IMPORT_FN(Sum)
TRAINC_ONNX_IMPORT_FN(Equal)
TRAINC_ONNX_IMPORT_FN(Less)
TRAINC_ONNX_IMPORT_FN(LessOrEqual)
TRAINC_ONNX_IMPORT_FN(Greater)
TRAINC_ONNX_IMPORT_FN(GreaterOrEqual)
TRAINC_ONNX_IMPORT_FN(And)
TRAINC_ONNX_IMPORT_FN(Or)
TRAINC_ONNX_IMPORT_FN(Not)
TRAINC_ONNX_IMPORT_FN(Where)
TRAINC_ONNX_IMPORT_FN(IsNaN)
TRAINC_ONNX_IMPORT_FN(IsInf)
TRAINC_ONNX_IMPORT_FN(Neg)
TRAINC_ONNX_IMPORT_FN(Abs)
TRAINC_ONNX_IMPORT_FN(Sqrt)
TRAINC_ONNX_IMPORT_FN(Reciprocal)
TRAINC_ONNX_IMPORT_FN(Exp)
TRAINC_ONNX_IMPORT_FN(Log)
TRAINC_ONNX_IMPORT_FN(Tanh)
TRAINC_ONNX_IMPORT_FN(Erf)
TRAINC_ONNX_IMPORT_FN(Pad)
TRAINC_ONNX_IMPORT_FN(Conv)
TRAINC_ONNX_IMPORT_FN(Cos)
TRAINC_ONNX_IMPORT_FN(Sin)
TRAINC_ONNX_IMPORT_FN(Floor)
TRAINC_ONNX_IMPORT_FN(Ceil)
TRAINC_ONNX_IMPORT_FN(Round)
TRAINC_ONNX_IMPORT_FN(Sigmoid)
TRAINC_ONNX_IMPORT_FN(Relu)
TRAINC_ONNX_IMPORT_FN(Atan)
TRAINC_ONNX_IMPORT_FN(Asin)
TRAINC_ONNX_IMPORT_FN(Acos)
TRAINC_ONNX_IMPORT_FN(Tan)
TRAINC_ONNX_IMPORT_FN(Sinh)
TRAINC_ONNX_IMPORT_FN(Cosh)
TRAINC_ONNX_IMPORT_FN(Asinh)
TRAINC_ONNX_IMPORT_FN(Acosh)
TRAINC_ONNX_IMPORT_FN(Atanh)
TRAINC_ONNX_IMPORT_FN(Softplus)
TRAINC_ONNX_IMPORT_FN(Softsign)
TRAINC_ONNX_IMPORT_FN(Mish)
TRAINC_ONNX_IMPORT_FN(LeakyRelu)
TRAINC_ONNX_IMPORT_FN(PRelu)
TRAINC_ONNX_IMPORT_FN(Elu)
TRAINC_ONNX_IMPORT_FN(Selu)
TRAINC_ONNX_IMPORT_FN(Celu)
TRAINC_ONNX_IMPORT_FN(HardSigmoid)
TRAINC_ONNX_IMPORT_FN(HardSwish)
TRAINC_ONNX_IMPORT_FN(ThresholdedRelu)
TRAINC_ONNX_IMPORT_FN(Shrink)
TRAINC_ONNX_IMPORT_FN(Sign)
TRAINC_ONNX_IMPORT_FN(Clip)
TRAINC_ONNX_IMPORT_FN(Mod)
TRAINC_ONNX_IMPORT_FN(Cast)
TRAINC_ONNX_IMPORT_FN(CastLike)
TRAINC_ONNX_IMPORT_FN(Identity)
TRAINC_ONNX_IMPORT_FN(Constant)
TRAINC_ONNX_IMPORT_FN(ConstantOfShape)
TRAINC_ONNX_IMPORT_FN(Range)
TRAINC_ONNX_IMPORT_FN(Shape)
TRAINC_ONNX_IMPORT_FN(Reshape)
TRAINC_ONNX_IMPORT_FN(Flatten)
TRAINC_ONNX_IMPORT_FN(Squeeze)
TRAINC_ONNX_IMPORT_FN(Unsqueeze)
TRAINC_ONNX_IMPORT_FN(Transpose)
TRAINC_ONNX_IMPORT_FN(Concat)
TRAINC_ONNX_IMPORT_FN(Split)
TRAINC_ONNX_IMPORT_FN(Slice)
TRAINC_ONNX_IMPORT_FN(Gather)
TRAINC_ONNX_IMPORT_FN(GatherElements)
TRAINC_ONNX_IMPORT_FN(GatherND)
TRAINC_ONNX_IMPORT_FN(TopK)
TRAINC_ONNX_IMPORT_FN(ScatterElements)
TRAINC_ONNX_IMPORT_FN(ScatterND)
TRAINC_ONNX_IMPORT_FN(SplitToSequence)
TRAINC_ONNX_IMPORT_FN(SequenceAt)
TRAINC_ONNX_IMPORT_FN(Expand)
TRAINC_ONNX_IMPORT_FN(CumSum)
TRAINC_ONNX_IMPORT_FN(Tile)
TRAINC_ONNX_IMPORT_FN(Trilu)
TRAINC_ONNX_IMPORT_FN(EyeLike)
TRAINC_ONNX_IMPORT_FN(OneHot)
TRAINC_ONNX_IMPORT_FN(MatMul)
TRAINC_ONNX_IMPORT_FN(Einsum)
TRAINC_ONNX_IMPORT_FN(Gemm)
TRAINC_ONNX_IMPORT_FN(ReduceSum)
TRAINC_ONNX_IMPORT_FN(ReduceMean)
TRAINC_ONNX_IMPORT_FN(ReduceMax)
TRAINC_ONNX_IMPORT_FN(ReduceProd)
TRAINC_ONNX_IMPORT_FN(ReduceMin)
TRAINC_ONNX_IMPORT_FN(ReduceL1)
TRAINC_ONNX_IMPORT_FN(ReduceL2)
TRAINC_ONNX_IMPORT_FN(ReduceSumSquare)
TRAINC_ONNX_IMPORT_FN(ReduceLogSum)
TRAINC_ONNX_IMPORT_FN(ReduceLogSumExp)
TRAINC_ONNX_IMPORT_FN(ArgMax)
TRAINC_ONNX_IMPORT_FN(ArgMin)
TRAINC_ONNX_IMPORT_FN(Softmax)
TRAINC_ONNX_IMPORT_FN(LogSoftmax)
TRAINC_ONNX_IMPORT_FN(LayerNormalization)
TRAINC_ONNX_IMPORT_FN(BatchNormalization)
TRAINC_ONNX_IMPORT_FN(InstanceNormalization)
TRAINC_ONNX_IMPORT_FN(RMSNormalization)
TRAINC_ONNX_IMPORT_FN(Gelu)
TRAINC_ONNX_IMPORT_FN(Dropout)
TRAINC_ONNX_IMPORT_FN(SoftmaxCrossEntropyLoss)
TRAINC_ONNX_IMPORT_FN(NegativeLogLikelihoodLoss)
TRAINC_ONNX_IMPORT_FN(AveragePool)
TRAINC_ONNX_IMPORT_FN(ConvTranspose)
TRAINC_ONNX_IMPORT_FN(GlobalAveragePool)
TRAINC_ONNX_IMPORT_FN(GlobalMaxPool)
TRAINC_ONNX_IMPORT_FN(MaxPool)
TRAINC_ONNX_IMPORT_FN(Resize)
TRAINC_ONNX_IMPORT_FN(DepthToSpace)
TRAINC_ONNX_IMPORT_FN(SpaceToDepth)
#undef TRAINC_ONNX_IMPORT_FN

} // namespace trainc::onnx_import

#endif // TRAINC_FRONTENDS_ONNX_IMPORTCONTEXT_H
