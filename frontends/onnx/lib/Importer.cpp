//===- Importer.cpp - ONNX ModelProto to the graph dialect ----------------===//
//
// Reads the protobuf (any IR version: fields newer than libonnx 1.12 knows
// are skipped by protobuf, and op semantics come from trainc's own table,
// keyed by opset), makes float initializers parameters and integer ones
// constants, gives graph inputs static shapes, then imports the nodes in
// order. See frontends/README.md for the contract of the result.
//
//===----------------------------------------------------------------------===//

#include "trainc/Frontends/Onnx/OnnxImporter.h"

#include "ImportContext.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include <climits>
#include <exception>

using namespace mlir;
using namespace trainc::graph;

namespace trainc::onnx_import {
namespace {

/// The newest opset whose semantics trainc's op table was checked against
/// (onnx 1.23). Later opsets may change an op, so they are refused.
constexpr int64_t kNewestKnownOpset = 28;
constexpr int64_t kOldestSupportedOpset = 13;
/// Bound on a graph input's element count, far above any real batch, so
/// that sizes computed from shapes cannot overflow int64.
constexpr int64_t kMaxInputElements = int64_t(1) << 40;

InFlightDiagnostic fileError(MLIRContext *ctx, StringRef path) {
  InFlightDiagnostic diag = mlir::emitError(UnknownLoc::get(ctx));
  diag << path << ": ";
  return diag;
}

/// Parses the file into `model`, telling a missing, empty, truncated or
/// non-ONNX file apart.
LogicalResult loadModel(MLIRContext *ctx, StringRef path,
                        onnx::ModelProto &model) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fileError(ctx, path)
           << "cannot read the file: " << buffer.getError().message();
  size_t size = (*buffer)->getBufferSize();
  if (size == 0)
    return fileError(ctx, path) << "the file is empty, not an ONNX model";
  if (size > static_cast<size_t>(INT_MAX))
    return fileError(ctx, path)
           << "the file is " << size
           << " bytes; protobuf cannot parse more than 2 GiB: store the "
              "weights as ONNX external data";
  google::protobuf::io::ArrayInputStream raw((*buffer)->getBufferStart(),
                                             static_cast<int>(size));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return fileError(ctx, path)
           << "not a valid ONNX model: the protobuf is malformed or "
              "truncated ("
           << size << " bytes read)";
  if (model.ir_version() <= 0 || !model.has_graph())
    return fileError(ctx, path)
           << "not an ONNX model: it has no "
           << (model.ir_version() <= 0 ? "ir_version" : "graph");
  return success();
}

/// The model's opset of the default domain, checked against what trainc
/// supports.
FailureOr<int64_t> defaultOpset(MLIRContext *ctx, StringRef path,
                                const onnx::ModelProto &model) {
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") {
      int64_t v = entry.version();
      if (v < kOldestSupportedOpset)
        return fileError(ctx, path)
               << "opset " << v << " is older than trainc supports ("
               << kOldestSupportedOpset << " to " << kNewestKnownOpset
               << "); convert the model with onnx.version_converter";
      if (v > kNewestKnownOpset)
        return fileError(ctx, path)
               << "opset " << v << " is newer than trainc knows (up to "
               << kNewestKnownOpset << ")";
      return v;
    }
  return fileError(ctx, path)
         << "the model imports no opset of the default (ai.onnx) domain";
}

/// "8x128" for error messages.
std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s;
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? "x" : "") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

/// The static type of graph input `info`, using --input-shape where given.
FailureOr<RankedTensorType> inputType(MLIRContext *ctx, StringRef path,
                                      const onnx::ValueInfoProto &info,
                                      const ImportOptions &options) {
  StringRef name = info.name();
  if (!info.type().has_tensor_type())
    return fileError(ctx, path) << "graph input '" << name
                                << "' is not a tensor (sequences, maps and "
                                   "optionals are not supported)";
  const auto &tensor = info.type().tensor_type();
  Type elementType = elementTypeFor(ctx, tensor.elem_type());
  if (!elementType)
    return fileError(ctx, path)
           << "graph input '" << name << "' has element type "
           << onnxTypeName(tensor.elem_type())
           << ", which trainc does not support";
  auto given = options.inputShapes.find(name.str());
  if (!tensor.has_shape() && given == options.inputShapes.end())
    return fileError(ctx, path)
           << "graph input '" << name << "' has no shape in the model; give "
           << "one with --input-shape " << name << "=<d0>x<d1>...";
  SmallVector<int64_t> shape;
  if (tensor.has_shape()) {
    const auto &dims = tensor.shape().dim();
    if (given != options.inputShapes.end() &&
        given->second.size() != static_cast<size_t>(dims.size()))
      return fileError(ctx, path)
             << "--input-shape " << name << "=" << shapeString(given->second)
             << " has rank " << given->second.size()
             << " but the model's input has rank " << dims.size();
    for (int d = 0; d < dims.size(); ++d) {
      const auto &dim = dims.Get(d);
      int64_t fromModel = dim.has_dim_value() ? dim.dim_value() : -1;
      int64_t fromUser =
          given != options.inputShapes.end() ? given->second[d] : -1;
      if (fromModel >= 0 && fromUser >= 0 && fromModel != fromUser)
        return fileError(ctx, path)
               << "--input-shape " << name << "=" << shapeString(given->second)
               << " sets dimension " << d << " to " << fromUser
               << " but the model fixes it to " << fromModel;
      int64_t size = fromUser >= 0 ? fromUser : fromModel;
      if (size < 0) {
        InFlightDiagnostic diag = fileError(ctx, path);
        diag << "graph input '" << name << "' dimension " << d;
        if (dim.has_dim_param())
          diag << " ('" << dim.dim_param() << "')";
        diag << " has no static size; give the input's shape with "
             << "--input-shape " << name << "=<d0>x<d1>...";
        return diag;
      }
      shape.push_back(size);
    }
  } else {
    shape.assign(given->second.begin(), given->second.end());
  }
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d > 0 && elements > kMaxInputElements / d)
      return fileError(ctx, path)
             << "graph input '" << name << "' of shape " << shapeString(shape)
             << " has more than " << kMaxInputElements << " elements";
    elements *= d;
  }
  return RankedTensorType::get(shape, elementType);
}

/// A stable location for a node: its name (or op type and index) in the
/// model file.
Location nodeLocation(MLIRContext *ctx, StringRef path,
                      const onnx::NodeProto &node, int64_t index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "#" + std::to_string(index)
                         : node.name();
  return NameLoc::get(StringAttr::get(ctx, name),
                      FileLineColLoc::get(ctx, path, 0, 0));
}

LogicalResult importNodes(GraphImporter &graph, StringRef path,
                          const onnx::GraphProto &g) {
  MLIRContext *ctx = graph.builder.getContext();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &node = g.node(i);
    NodeContext ctxNode(graph, node, i, nodeLocation(ctx, path, node, i));
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      return ctxNode.error()
             << "op '" << node.op_type() << "' of domain '" << node.domain()
             << "' is not supported (trainc imports the "
                "default ai.onnx domain; see "
                "trainc --list-onnx-ops)";
    const OpEntry *entry = findOp(node.op_type());
    if (!entry) {
      StringRef why = whyNotImported(node.op_type());
      if (!why.empty())
        return ctxNode.error()
               << "unsupported op '" << node.op_type() << "': " << why;
      return ctxNode.error() << "unsupported op '" << node.op_type()
                             << "' (trainc --list-onnx-ops lists the "
                                "supported ops and opsets)";
    }
    if (graph.opset < entry->minOpset || graph.opset > entry->maxOpset)
      return ctxNode.error() << node.op_type() << " is supported for opsets "
                             << entry->minOpset << " to " << entry->maxOpset;
    if (failed(entry->import(ctxNode)))
      return failure();
    for (int o = 0; o < node.output_size(); ++o)
      if (ctxNode.outputRequested(o) && !graph.lookup(node.output(o)) &&
          !graph.lookupSequence(node.output(o)))
        return ctxNode.error() << "output " << o << " '" << node.output(o)
                               << "' is not supported by trainc's importer";
  }
  return success();
}

/// The value of graph input `info` bound with --bind to `file`, an ONNX
/// TensorProto: its element type must be the input's, and its shape the
/// input's where the model fixes dimensions.
FailureOr<DenseElementsAttr> readBoundTensor(MLIRContext *ctx, StringRef path,
                                             const onnx::ValueInfoProto &info,
                                             const std::string &file,
                                             StringRef baseDir) {
  auto emit = [&] {
    return fileError(ctx, path)
           << "--bind " << info.name() << "=" << file << ": ";
  };
  auto buffer = llvm::MemoryBuffer::getFile(file);
  if (!buffer)
    return emit() << "cannot read the file: " << buffer.getError().message();
  onnx::TensorProto tensor;
  if (!tensor.ParseFromArray((*buffer)->getBufferStart(),
                             int((*buffer)->getBufferSize())))
    return emit() << "not an ONNX TensorProto";
  auto value = tensorToElements(tensor, baseDir, ctx, info.name(), emit);
  if (failed(value))
    return failure();
  const auto &t = info.type().tensor_type();
  if (t.elem_type() != tensor.data_type())
    return emit() << "holds " << onnxTypeName(tensor.data_type())
                  << " but the input is " << onnxTypeName(t.elem_type());
  ArrayRef<int64_t> shape = value->getType().getShape();
  bool fits = !t.has_shape() || t.shape().dim_size() == int(shape.size());
  for (int d = 0; fits && t.has_shape() && d < t.shape().dim_size(); ++d)
    fits = !t.shape().dim(d).has_dim_value() ||
           t.shape().dim(d).dim_value() == shape[d];
  if (!fits)
    return emit() << "the value's shape " << value->getType()
                  << " does not fit the input's";
  return *value;
}

/// Initializers that PyTorch's dynamo exporter records as buffers or
/// constant tensors rather than parameters (`rotary_emb.inv_freq`, ...):
/// they become constants, never trained. The exporter writes the kind as
/// metadata_props "pkg.torch.export.graph_signature.InputSpec.kind" on the
/// value's ValueInfoProto (field 4 since ONNX 1.16); the ONNX library trainc
/// builds with is older and keeps that field as an unknown one, so it is
/// parsed from there.
llvm::StringSet<> exporterBuffers(const onnx::GraphProto &g) {
  constexpr int kValueInfoMetadataProps = 4;
  llvm::StringSet<> buffers;
  auto scan = [&](const onnx::ValueInfoProto &info) {
    const google::protobuf::UnknownFieldSet &fields = info.unknown_fields();
    for (int i = 0; i < fields.field_count(); ++i) {
      const google::protobuf::UnknownField &field = fields.field(i);
      if (field.number() != kValueInfoMetadataProps ||
          field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
        continue;
      onnx::StringStringEntryProto entry;
      if (!entry.ParseFromString(field.length_delimited()))
        continue;
      if (entry.key() == "pkg.torch.export.graph_signature.InputSpec.kind" &&
          (entry.value() == "BUFFER" || entry.value() == "CONSTANT_TENSOR"))
        buffers.insert(info.name());
    }
  };
  for (const onnx::ValueInfoProto &info : g.value_info())
    scan(info);
  for (const onnx::ValueInfoProto &info : g.input())
    scan(info);
  return buffers;
}

FailureOr<OwningOpRef<ModuleOp>> importOnnxModel(MLIRContext &context,
                                                 StringRef path,
                                                 const ImportOptions &options) {
  MLIRContext *ctx = &context;
  loadImportDialects(context);
  onnx::ModelProto model;
  if (failed(loadModel(ctx, path, model)))
    return failure();
  auto opset = defaultOpset(ctx, path, model);
  if (failed(opset))
    return failure();
  const onnx::GraphProto &g = model.graph();
  // Initializers, inputs and outputs name the executable's tensors, which
  // checkpoints and safetensors files write as JSON: their names must be
  // UTF-8 (ONNX's protobuf does not check).
  auto notUtf8 = [&](const std::string &name, StringRef what) {
    return fileError(ctx, path) << what << " '" << llvm::json::fixUTF8(name)
                                << "' has a name that is not valid UTF-8";
  };
  for (const onnx::TensorProto &init : g.initializer())
    if (!llvm::json::isUTF8(init.name()))
      return notUtf8(init.name(), "initializer");
  for (const onnx::ValueInfoProto &info : g.input())
    if (!llvm::json::isUTF8(info.name()))
      return notUtf8(info.name(), "graph input");
  for (const onnx::ValueInfoProto &info : g.output())
    if (!llvm::json::isUTF8(info.name()))
      return notUtf8(info.name(), "graph output");
  std::string baseDir = llvm::sys::path::parent_path(path).str();
  if (baseDir.empty())
    baseDir = ".";

  // Initializers: float ones are parameters, the rest constants; so are
  // float ones the exporter says are buffers, except a batch norm's
  // statistics: state the step updates, which the dynamo exporter marks
  // as buffers too (its BUFFER_MUTATION values are no graph outputs, so
  // the BatchNormalization node is what says how they change).
  llvm::StringSet<> buffers = exporterBuffers(g);
  for (const onnx::NodeProto &node : g.node())
    if (node.op_type() == "BatchNormalization" &&
        (node.domain().empty() || node.domain() == "ai.onnx"))
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        buffers.erase(node.input(i));
  struct Param {
    std::string name;
    RankedTensorType type;
    AsmResourceBlob blob;
  };
  SmallVector<Param> params;
  SmallVector<std::pair<std::string, DenseElementsAttr>> constants;
  llvm::StringSet<> initializerNames;
  // Mutable: a parameter's raw_data moves into its blob (tensorBlob).
  for (onnx::TensorProto &init :
       *model.mutable_graph()->mutable_initializer()) {
    auto emit = [&] { return fileError(ctx, path); };
    if (!initializerNames.insert(init.name()).second)
      return emit() << "initializer '" << init.name() << "' is defined twice";
    Type elementType = elementTypeFor(ctx, init.data_type());
    if (elementType && isa<FloatType>(elementType) &&
        !buffers.contains(init.name())) {
      SmallVector<int64_t> shape;
      int64_t n = 1;
      for (int64_t d : init.dims()) {
        if (d < 0 || (d > 0 && n > (int64_t(1) << 40) / d))
          return emit() << "initializer '" << init.name()
                        << "' has invalid dimension " << d;
        shape.push_back(d);
        n *= d;
      }
      auto blob = tensorBlob(init, elementType, n, baseDir, init.name(), emit);
      if (failed(blob))
        return failure();
      params.push_back({init.name(), RankedTensorType::get(shape, elementType),
                        std::move(*blob)});
      continue;
    }
    auto elements = tensorToElements(init, baseDir, ctx, init.name(), emit);
    if (failed(elements))
      return failure();
    constants.push_back({init.name(), *elements});
  }
  // --freeze: exact names, or glob patterns ("*.inv_freq") when the entry
  // has a wildcard; either must name at least one parameter.
  llvm::StringSet<> frozen;
  for (const std::string &name : options.frozen) {
    bool isPattern = name.find_first_of("*?[") != std::string::npos;
    std::optional<llvm::GlobPattern> glob;
    if (isPattern) {
      auto parsed = llvm::GlobPattern::create(name);
      if (!parsed) {
        std::string why = llvm::toString(parsed.takeError());
        return fileError(ctx, path)
               << "--freeze '" << name << "': not a valid pattern: " << why;
      }
      glob = std::move(*parsed);
    }
    size_t matched = 0;
    for (const Param &p : params)
      if (isPattern ? glob->match(p.name) : p.name == name) {
        frozen.insert(p.name);
        ++matched;
      }
    if (matched)
      continue;
    InFlightDiagnostic diag = fileError(ctx, path);
    if (isPattern)
      diag << "--freeze '" << name << "': no parameter matches the pattern";
    else
      diag << "--freeze " << name << ": the model has no parameter named '"
           << name << "'";
    if (!params.empty()) {
      diag << " (parameters: ";
      for (size_t k = 0; k < std::min<size_t>(params.size(), 8); ++k)
        diag << (k ? ", " : "") << "'" << params[k].name << "'";
      diag << (params.size() > 8 ? ", ...)" : ")");
    }
    return diag;
  }

  // Data inputs: graph inputs that are not initializers. Those bound with
  // --bind become constants instead.
  SmallVector<std::pair<std::string, RankedTensorType>> inputs;
  SmallVector<std::pair<std::string, DenseElementsAttr>> bound;
  llvm::StringSet<> inputNames;
  for (const onnx::ValueInfoProto &info : g.input()) {
    if (initializerNames.contains(info.name()))
      continue;
    inputNames.insert(info.name());
    auto binding = options.bindings.find(info.name());
    if (binding != options.bindings.end()) {
      auto value = readBoundTensor(ctx, path, info, binding->second, baseDir);
      if (failed(value))
        return failure();
      bound.push_back({info.name(), *value});
      continue;
    }
    auto type = inputType(ctx, path, info, options);
    if (failed(type))
      return failure();
    inputs.push_back({info.name(), *type});
  }
  for (const auto &[name, file] : options.bindings)
    if (!inputNames.contains(name)) {
      InFlightDiagnostic diag = fileError(ctx, path);
      diag << "--bind names '" << name
           << "', which is not a graph input (inputs:";
      for (const onnx::ValueInfoProto &info : g.input())
        if (!initializerNames.contains(info.name()))
          diag << " '" << info.name() << "'";
      diag << ")";
      return diag;
    }
  for (const auto &[name, shape] : options.inputShapes)
    if (!inputNames.contains(name)) {
      InFlightDiagnostic diag = fileError(ctx, path);
      diag << "--input-shape names '" << name
           << "', which is not a graph input (inputs:";
      for (const auto &input : inputs)
        diag << " '" << input.first << "'";
      diag << ")";
      return diag;
    }

  // The function: parameters first, then data inputs.
  OpBuilder builder(ctx);
  Location fileLoc = FileLineColLoc::get(ctx, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());
  SmallVector<Type> argTypes;
  for (const Param &p : params)
    argTypes.push_back(p.type);
  for (const auto &input : inputs)
    argTypes.push_back(input.second);
  auto fn = builder.create<func::FuncOp>(fileLoc, "main",
                                         builder.getFunctionType(argTypes, {}));
  Block *entry = fn.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  GraphImporter graph(builder, path.str(), baseDir, *opset, options.dropoutSeed,
                      options.evalMode, options.trainingStep,
                      options.unbiasedRunningVar, options.trainModelessDropout);
  graph.paddingIndices = options.embeddingPaddingIndex;
  for (auto [i, p] : llvm::enumerate(params)) {
    fn.setArgAttr(i, trainc::train::TrainDialect::kParamAttr,
                  builder.getStringAttr(p.name));
    fn.setArgAttr(
        i, trainc::train::TrainDialect::kInitAttr,
        DenseResourceElementsAttr::get(p.type, p.name, std::move(p.blob)));
    if (frozen.contains(p.name))
      fn.setArgAttr(i, trainc::train::TrainDialect::kFrozenAttr,
                    builder.getUnitAttr());
    graph.defineParameter(p.name, entry->getArgument(i));
  }
  for (auto [k, input] : llvm::enumerate(inputs)) {
    unsigned i = params.size() + k;
    fn.setArgAttr(i, GraphDialect::kInputAttr,
                  builder.getStringAttr(input.first));
    graph.define(input.first, entry->getArgument(i));
  }
  for (const auto &[name, value] : constants)
    graph.define(
        name, builder.create<ConstantOp>(
                  NameLoc::get(builder.getStringAttr(name), fileLoc), value));
  for (const auto &[name, value] : bound)
    graph.define(
        name, builder.create<ConstantOp>(
                  NameLoc::get(builder.getStringAttr(name), fileLoc), value));

  if (failed(importNodes(graph, path, g)))
    return failure();
  if (!graph.modelessDropouts.empty()) {
    const std::vector<std::string> &names = graph.modelessDropouts;
    InFlightDiagnostic diag = mlir::emitWarning(fileLoc);
    diag << names.size() << " Dropout node" << (names.size() > 1 ? "s" : "")
         << " without a training_mode input (" << names[0]
         << (names.size() > 1 ? ", and others) apply" : ") applies")
         << " no dropout: ONNX defines a Dropout without "
            "training_mode as the identity. PyTorch's exporters write "
            "scaled_dot_product_attention's dropout_p so, even in training "
            "mode; to train with that dropout, pass --train-modeless-dropout, "
            "or export attention written out (Hugging Face: "
            "attn_implementation=\"eager\"), whose dropout trainc fuses "
            "into graph.attention";
  }
  for (const auto &[name, row] : graph.paddingIndices)
    if (!graph.paddedTablesRead.count(name))
      return fileError(ctx, path)
             << "--embedding-padding-index names '" << name
             << "', which no Gather on axis 0 reads as its data (an "
                "initializer's name, as the exporter wrote it)";

  // Results: the graph outputs, by name, then the parameters the forward
  // pass updates (running statistics), which are frozen.
  SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : g.output()) {
    Value v = graph.lookup(out.name());
    if (!v)
      return fileError(ctx, path) << "graph output '" << out.name()
                                  << "' is not produced by any node";
    results.push_back(v);
  }
  for (const auto &update : graph.getUpdates())
    results.push_back(update.second);
  builder.create<func::ReturnOp>(fileLoc, results);
  fn.setFunctionType(
      builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(g.output()))
    fn.setResultAttr(i, GraphDialect::kOutputAttr,
                     builder.getStringAttr(out.name()));
  for (auto [k, update] : llvm::enumerate(graph.getUpdates()))
    fn.setResultAttr(g.output_size() + k,
                     trainc::train::TrainDialect::kUpdateAttr,
                     builder.getStringAttr(graph.parameterName(update.first)));
  for (unsigned i = 0; i < params.size(); ++i)
    if (graph.isStatistic(i))
      fn.setArgAttr(i, trainc::train::TrainDialect::kFrozenAttr,
                    builder.getUnitAttr());
  if (failed(mlir::verify(*module)))
    return fileError(ctx, path)
           << "the imported IR does not verify (a trainc importer bug; the "
              "errors above name the op)";
  return module;
}

} // namespace

void loadImportDialects(MLIRContext &context) {
  context.loadDialect<GraphDialect, trainc::train::TrainDialect,
                      func::FuncDialect>();
}

FailureOr<OwningOpRef<ModuleOp>> importOnnxFile(MLIRContext &context,
                                                StringRef path,
                                                const ImportOptions &options) {
  // protobuf and the standard library may throw (e.g. std::bad_alloc on a
  // corrupt size); report it instead of terminating.
  try {
    return importOnnxModel(context, path, options);
  } catch (const std::exception &e) {
    fileError(&context, path) << "import failed: " << e.what();
    return failure();
  }
}

std::vector<SupportedOp> supportedOps() {
  std::vector<SupportedOp> ops;
  for (const OpEntry &e : opTable())
    ops.push_back({e.opType, e.minOpset, e.maxOpset, e.note});
  llvm::sort(ops, [](const SupportedOp &a, const SupportedOp &b) {
    return a.opType < b.opType;
  });
  return ops;
}

} // namespace trainc::onnx_import
