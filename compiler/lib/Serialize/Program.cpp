//===- Program.cpp - @main as the executable's instruction list -----------===//
//
// See Program.h. Attribute layouts are those of enum Opcode in
// runtime/schema/executable.fbs; the runtime validates every instruction
// when it loads a file, so a mismatch is caught, not executed.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/Program.h"

#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <type_traits>

using namespace mlir;
using namespace trainc::graph;

namespace trainc {

std::optional<DType> dtypeOf(Type t) {
  if (t.isF64())
    return DType::F64;
  if (t.isF32())
    return DType::F32;
  if (t.isF16())
    return DType::F16;
  if (t.isBF16())
    return DType::BF16;
  if (t.isUnsignedInteger(64))
    return DType::U64;
  if (t.isUnsignedInteger(32))
    return DType::U32;
  if (t.isUnsignedInteger(16))
    return DType::U16;
  if (t.isUnsignedInteger(8))
    return DType::U8;
  if (t.isSignlessInteger(64))
    return DType::I64;
  if (t.isSignlessInteger(32))
    return DType::I32;
  if (t.isSignlessInteger(16))
    return DType::I16;
  if (t.isSignlessInteger(8))
    return DType::I8;
  if (t.isSignlessInteger(1))
    return DType::I1;
  if (t.isFloat8E4M3FN())
    return DType::F8E4M3FN;
  if (t.isFloat8E4M3FNUZ())
    return DType::F8E4M3FNUZ;
  if (t.isFloat8E5M2())
    return DType::F8E5M2;
  if (t.isFloat8E5M2FNUZ())
    return DType::F8E5M2FNUZ;
  if (t.isSignlessInteger(4))
    return DType::I4;
  if (t.isUnsignedInteger(4))
    return DType::U4;
  if (t.isSignlessInteger(2))
    return DType::I2;
  if (t.isUnsignedInteger(2))
    return DType::U2;
  if (isa<F4E2M1FNType>(t))
    return DType::F4E2M1FN;
  if (isa<F8E8M0FNUType>(t))
    return DType::F8E8M0FNU;
  return std::nullopt;
}

uint64_t bytesOf(RankedTensorType t) {
  return uint64_t(t.getNumElements()) * elementStorageBytes(t.getElementType());
}

std::optional<Opcode> opcodeForGraphOp(StringRef name) {
  for (int i = 0; i < kNumOpcodes; ++i)
    if (name == opcodeName(Opcode(i)))
      return Opcode(i);
  return std::nullopt;
}

namespace {

/// The dims of `values` as int64.
template <typename Range> std::vector<int64_t> toInts(Range values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

/// A cross-entropy op's classes: its `classes`, else the last dimension.
template <typename Op> int64_t classesOf(Op op) {
  if (std::optional<uint64_t> classes = op.getClasses())
    return int64_t(*classes);
  return op.getLogits().getType().getShape().back();
}

/// Attention's seq_major list as the instruction's bit mask
/// (ExecutableFormat.h: bit i for tensor i).
int64_t seqMajorBits(std::optional<ArrayRef<int64_t>> seqMajor) {
  int64_t bits = 0;
  for (int64_t i : seqMajor.value_or(ArrayRef<int64_t>()))
    bits |= int64_t(1) << i;
  return bits;
}

/// The ints of a dropout stream (executable.fbs' Dropout): [seed], or on a
/// mesh whose data ranks draw apart [seed, data axis, stride], and with
/// `blocks` of the tensor axis [seed, data axis, stride, tensor axis,
/// blocks].
std::vector<int64_t> streamInts(RandomOpInterface op, uint64_t stride,
                                int64_t blocks) {
  std::vector<int64_t> ints = {int64_t(op.getSeed())};
  Mesh mesh = getMesh(op);
  if (stride || blocks != 1)
    ints.insert(ints.end(), {int64_t(mesh.axisIndex("data")), int64_t(stride)});
  if (blocks != 1)
    ints.insert(ints.end(), {int64_t(mesh.axisIndex("tensor")), blocks});
  return ints;
}

/// The attributes of Opcode::Attention and Opcode::AttentionGrad
/// (executable.fbs): [causal, has_mask, seq_major, Hq, Hk, stats] and
/// [scale] or [scale, softcap], where stats says the forward gives its
/// log-sum-exps and the gradient reads them; with dropout, the stream's
/// ints follow (streamInts, its blocks the head blocks) and the floats are
/// [scale, softcap or 0, ratio].
template <typename Op>
void attentionAttrs(Op op, bool stats, ProgramInstruction &inst) {
  ArrayRef<int64_t> heads = op.getQkvHeads().value_or(ArrayRef<int64_t>());
  inst.ints = {op.getCausal(),
               op.getMask() != nullptr,
               seqMajorBits(op.getSeqMajor()),
               heads.empty() ? 0 : heads[0],
               heads.empty() ? 0 : heads[1],
               stats};
  inst.floats = {op.getScale().convertToDouble()};
  std::optional<APFloat> softcap = op.getSoftcap(), dropout = op.getDropout();
  if (softcap || dropout)
    inst.floats.push_back(softcap ? softcap->convertToDouble() : 0.0);
  if (!dropout)
    return;
  inst.floats.push_back(dropout->convertToDouble());
  llvm::append_range(
      inst.ints, streamInts(op, op.getDataSeedStride(), op.getHeadBlocks()));
}

/// The ints of Opcode::FusedElementwise (executable.fbs): registers
/// 0..I-1 are the body's arguments, I+k its k-th op's value; operand_dims,
/// where present, is the dims section.
LogicalResult fusedProgram(FusedElementwiseOp fused,
                           std::vector<int64_t> &ints) {
  Block &body = fused.getBody().front();
  llvm::DenseMap<Value, int64_t> registers;
  for (BlockArgument arg : body.getArguments())
    registers[arg] = arg.getArgNumber();
  int64_t steps = 0;
  std::vector<int64_t> program;
  for (Operation &op : body.without_terminator()) {
    std::optional<Opcode> opcode =
        opcodeForGraphOp(op.getName().stripDialect());
    std::optional<DType> dtype =
        dtypeOf(cast<ShapedType>(op.getResult(0).getType()).getElementType());
    if (!opcode || !dtype || op.getNumOperands() > 3)
      return op.emitError("'")
             << op.getName() << "' cannot be a step of a fused loop";
    program.push_back(int64_t(*opcode));
    program.push_back(int64_t(*dtype));
    for (unsigned j = 0; j < 3; ++j)
      program.push_back(
          j < op.getNumOperands() ? registers.lookup(op.getOperand(j)) : -1);
    int64_t attr = 0;
    if (auto c = dyn_cast<CompareOp>(op))
      attr = int64_t(c.getDirection());
    else if (auto g = dyn_cast<GeluOp>(op))
      attr = g.getApproximation() == GeluApproximation::tanh;
    else if (auto g = dyn_cast<GeluGradOp>(op))
      attr = g.getApproximation() == GeluApproximation::tanh;
    program.push_back(attr);
    registers[op.getResult(0)] = body.getNumArguments() + steps++;
  }
  // Each result is written from a step register of its own: a yielded
  // operand, or a value yielded twice, is copied by a same-type convert
  // (exact on both devices).
  std::vector<int64_t> results;
  for (Value v : body.getTerminator()->getOperands()) {
    int64_t reg = registers.lookup(v);
    if (isa<BlockArgument>(v) || llvm::is_contained(results, reg)) {
      std::optional<DType> dtype =
          dtypeOf(cast<ShapedType>(v.getType()).getElementType());
      program.insert(program.end(), {int64_t(Opcode::Convert), int64_t(*dtype),
                                     reg, -1, -1, 0});
      reg = body.getNumArguments() + steps++;
    }
    results.push_back(reg);
  }
  if (body.getNumArguments() > unsigned(kFusedMaxInputs) ||
      steps > kFusedMaxSteps ||
      fused.getNumResults() > unsigned(kFusedMaxResults))
    return fused.emitError("a fused loop of ")
           << body.getNumArguments() << " operands, " << steps << " steps and "
           << fused.getNumResults()
           << " results exceeds the executable's limits (" << kFusedMaxInputs
           << ", " << kFusedMaxSteps << ", " << kFusedMaxResults << ")";
  ints = {steps};
  ints.insert(ints.end(), program.begin(), program.end());
  ints.insert(ints.end(), results.begin(), results.end());
  // The dims section, where an operand is broadcast: each within the
  // strides the runtime reads it through.
  std::optional<ArrayAttr> operandDims = fused.getOperandDims();
  if (!operandDims)
    return success();
  ArrayRef<int64_t> shape =
      cast<ShapedType>(fused.getResult(0).getType()).getShape();
  for (auto [i, dims] : llvm::enumerate(*operandDims)) {
    ArrayRef<int64_t> spans = cast<DenseI64ArrayAttr>(dims).asArrayRef();
    uint64_t mask = 0;
    for (int64_t d : spans)
      mask |= d < 64 ? uint64_t(1) << d : 0;
    int64_t sizes[kFusedMaxViewDims], strides[kFusedMaxViewDims];
    if (shape.size() > 64 ||
        fusedOperandStrides(
            shape.data(), int(shape.size()),
            cast<ShapedType>(fused.getOperand(i).getType()).getShape().data(),
            mask, sizes, strides) < 0)
      return fused.emitError("operand ")
             << i << " of a fused loop is read through more than "
             << kFusedMaxViewDims
             << " strided dimensions of its results, the executable's limit";
    llvm::append_range(ints, spans);
  }
  return success();
}

class Builder {
public:
  Builder(func::FuncOp fn, bool withConstantData)
      : fn(fn), withConstantData(withConstantData) {}
  LogicalResult run();
  Program program;

private:
  /// A new tensor of `type`, recorded as the tensor of `v` when given.
  uint32_t addTensor(RankedTensorType type, Value v, TensorRole role,
                     std::string name = "");
  uint32_t addTensor(Value v, TensorRole role, std::string name = "") {
    return addTensor(cast<RankedTensorType>(v.getType()), v, role,
                     std::move(name));
  }
  LogicalResult lowerOp(Operation *op);
  /// Appends the bytes of `value` to the constant section; returns offset.
  /// A splat stores one element and sets `splat`.
  FailureOr<uint64_t> appendConstant(ElementsAttr value, Operation *where,
                                     bool &splat);

  func::FuncOp fn;
  bool withConstantData;
  ConstantSection &constants = program.constants;
  /// Parameters and states by name, for train.update results.
  llvm::StringMap<uint32_t> persistent;

  /// Records what function result `result` (output `output`) is to the
  /// training signature.
  void recordSignature(unsigned result, int output) {
    TrainingSignature &sig = program.signature;
    if (fn.getResultAttr(result, trainc::train::TrainDialect::kLossAttr))
      sig.loss = output;
    if (auto kind = fn.getResultAttrOfType<StringAttr>(
            result, trainc::train::TrainDialect::kMetricAttr)) {
      // The train dialect verified the kind.
      int *field = llvm::StringSwitch<int *>(kind.getValue())
                       .Case("grad_norm", &sig.gradNorm)
                       .Case("lr", &sig.lr)
                       .Case("loss_scale", &sig.lossScale)
                       .Case("step_skipped", &sig.stepSkipped)
                       .Default(nullptr);
      if (field)
        *field = output;
    }
    if (auto param = fn.getResultAttrOfType<StringAttr>(
            result, trainc::train::TrainDialect::kGradOfAttr)) {
      uint32_t id = persistent.lookup(param.getValue());
      auto index =
          llvm::find(program.parameters, id) - program.parameters.begin();
      sig.gradients.push_back({uint32_t(output), uint32_t(index)});
    }
  }
};

uint32_t Builder::addTensor(RankedTensorType type, Value v, TensorRole role,
                            std::string name) {
  uint32_t id = program.tensors.size();
  ProgramTensor t;
  t.role = role;
  t.type = type;
  t.name = name.empty() ? "%" + std::to_string(id) : name;
  program.tensors.push_back(t);
  if (v)
    program.ids[v] = id;
  return id;
}

FailureOr<uint64_t> Builder::appendConstant(ElementsAttr value,
                                            Operation *where, bool &splat) {
  splat = false;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return where->emitError("the value of ")
             << value.getType() << " is not available (it was elided when "
             << "the IR was printed; recompile from the model)";
    return constants.appendBorrowed(blob->getData());
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return where->emitError("unsupported constant attribute kind");
  std::vector<char> *piece = nullptr;
  uint64_t offset = constants.appendOwned(piece);
  Type e = dense.getElementType();
  unsigned width = e.getIntOrFloatBitWidth();
  unsigned bytes = elementStorageBytes(e);
  auto put = [&](uint64_t bits) {
    for (unsigned b = 0; b < bytes; ++b)
      piece->push_back(char((bits >> (8 * b)) & 0xff));
  };
  // A splat of several elements is stored once; the runtime repeats it.
  splat = dense.isSplat() && dense.getNumElements() > 1;
  int64_t count = splat ? 1 : dense.getNumElements();
  piece->reserve(size_t(count) * bytes);
  if (isa<FloatType>(e)) {
    for (APFloat v : llvm::make_range(dense.value_begin<APFloat>(),
                                      dense.value_begin<APFloat>() + count))
      put(v.bitcastToAPInt().getZExtValue());
  } else {
    for (APInt v : llvm::make_range(dense.value_begin<APInt>(),
                                    dense.value_begin<APInt>() + count))
      put(width == 1 ? (v.isZero() ? 0 : 1)
          // Sub-byte integers hold their value in the byte:
          // sign-extended when signed.
          : width < 8 ? (e.isUnsignedInteger() ? v.getZExtValue()
                                               : uint64_t(v.getSExtValue()))
                      : v.getZExtValue());
  }
  return offset;
}

LogicalResult Builder::lowerOp(Operation *op) {
  std::optional<Opcode> opcode =
      isa<GraphDialect>(op->getDialect())
          ? opcodeForGraphOp(op->getName().stripDialect())
          : std::nullopt;
  if (!opcode)
    return op->emitError("'")
           << op->getName() << "' cannot be lowered to a trainc executable";
  for (Value v : op->getResults())
    if (!dtypeOf(cast<ShapedType>(v.getType()).getElementType()))
      return op->emitError("result type ")
             << v.getType() << " has no executable element type";
  ProgramInstruction inst;
  inst.opcode = *opcode;
  inst.op = op;
  if (auto fused = dyn_cast<FusedElementwiseOp>(op))
    if (failed(fusedProgram(fused, inst.ints)))
      return failure();
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](CompareOp c) {
        inst.ints = {static_cast<int64_t>(c.getDirection())};
      })
      .Case<DotGeneralOp, DotGeneralBiasOp, DotGeneralBiasGeluOp,
            DotGeneralGeluGradOp, DotGeneralBiasGradOp>([&](auto d) {
        auto lb = d.getLhsBatchingDimensions(),
             rb = d.getRhsBatchingDimensions(),
             lc = d.getLhsContractingDimensions(),
             rc = d.getRhsContractingDimensions();
        inst.ints = {int64_t(lb.size()), int64_t(lc.size())};
        for (ArrayRef<int64_t> list : {lb, rb, lc, rc})
          inst.ints.insert(inst.ints.end(), list.begin(), list.end());
        inst.ints.push_back(int64_t(d.getTf32() ? OperandRounding::Tf32
                                                : OperandRounding::Exact));
        if constexpr (std::is_same_v<decltype(d), DotGeneralBiasGradOp>)
          inst.ints.push_back(int64_t(d.getSumRhs()));
        if constexpr (std::is_same_v<decltype(d), DotGeneralBiasGeluOp> ||
                      std::is_same_v<decltype(d), DotGeneralGeluGradOp>)
          inst.ints.push_back(d.getApproximation() == GeluApproximation::tanh);
      })
      .Case([&](AllReduceOp r) {
        inst.ints = {int64_t(getMesh(r).axisIndex(r.getAxis()))};
      })
      .Case([&](ReduceScatterOp r) {
        inst.ints = {int64_t(getMesh(r).axisIndex(r.getAxis()))};
      })
      .Case([&](AllGatherOp g) {
        inst.ints = {int64_t(getMesh(g).axisIndex(g.getAxis()))};
      })
      .Case([&](ShardSliceOp s) {
        inst.ints = {int64_t(getMesh(s).axisIndex(s.getAxis()))};
      })
      .Case<AllReduceStartOp, ReduceScatterStartOp, AllGatherStartOp>(
          [&](auto s) {
            inst.ints = {int64_t(getMesh(s).axisIndex(s.getAxis()))};
          })
      .Case([&](ReduceSumOp r) { inst.ints = toInts(r.getDims()); })
      .Case([&](ReduceMaxOp r) { inst.ints = toInts(r.getDims()); })
      .Case([&](ReduceMeanOp r) { inst.ints = toInts(r.getDims()); })
      .Case([&](ReduceProdOp r) { inst.ints = toInts(r.getDims()); })
      .Case([&](BroadcastInDimOp b) { inst.ints = toInts(b.getDims()); })
      .Case([&](TransposeOp t) { inst.ints = toInts(t.getPermutation()); })
      .Case([&](SliceOp s) {
        for (auto list : {s.getStart(), s.getLimit(), s.getStrides()})
          inst.ints.insert(inst.ints.end(), list.begin(), list.end());
      })
      .Case([&](ConcatenateOp c) { inst.ints = {int64_t(c.getDim())}; })
      .Case([&](GatherOp g) { inst.ints = {int64_t(g.getAxis())}; })
      .Case([&](ScatterAddOp s) { inst.ints = {int64_t(s.getAxis())}; })
      .Case([&](IotaOp i) { inst.ints = {int64_t(i.getDim())}; })
      .Case<ExtractPatchesOp, FoldPatchesOp>([&](auto p) {
        // The high paddings are what the patches' output sizes leave.
        for (auto list :
             {p.getKernel(), p.getStrides(), p.getDilation(), p.getPadLow()})
          inst.ints.insert(inst.ints.end(), list.begin(), list.end());
      })
      .Case([&](ArgsortOp s) {
        inst.ints = {int64_t(s.getAxis()), int64_t(s.getDescending()),
                     int64_t(s.getTotalOrder())};
      })
      .Case([&](SoftmaxOp s) { inst.ints = {int64_t(s.getDim())}; })
      .Case([&](GeluOp g) {
        inst.ints = {g.getApproximation() == GeluApproximation::tanh};
      })
      .Case([&](AdamwUpdateOp a) {
        inst.floats = {a.getBeta1().convertToDouble(),
                       a.getBeta2().convertToDouble(),
                       a.getEpsilon().convertToDouble()};
      })
      .Case([&](GeluGradOp g) {
        inst.ints = {g.getApproximation() == GeluApproximation::tanh};
      })
      .Case([&](NormGradOp n) {
        inst.ints = {int64_t(n.getAxis()), n.getScale() != nullptr,
                     n.getCentered()};
        inst.floats = {n.getEpsilon().convertToDouble()};
      })
      .Case([&](NormGradParamsOp n) {
        inst.ints = {int64_t(n.getAxis()), n.getCentered(),
                     n.getBiasGrad() != nullptr, n.getAddend() != nullptr,
                     n.getNarrowedInputGrad() != nullptr};
        inst.floats = {n.getEpsilon().convertToDouble()};
      })
      .Case([&](LayerNormOp l) {
        inst.ints = {int64_t(l.getAxis()), l.getScale() != nullptr,
                     l.getBias() != nullptr};
        inst.floats = {l.getEpsilon().convertToDouble()};
      })
      .Case([&](RmsNormOp r) {
        inst.ints = {int64_t(r.getAxis()), r.getScale() != nullptr};
        inst.floats = {r.getEpsilon().convertToDouble()};
      })
      .Case([&](DropoutOp d) {
        inst.ints = streamInts(d, d.getDataSeedStride(), d.getBlocks());
        if (d.getBlocks() != 1)
          inst.ints.push_back(d.getBlockDim());
        inst.floats = {d.getRatio().convertToDouble()};
      })
      .Case([&](AttentionOp a) { attentionAttrs(a, a.getWithLse(), inst); })
      .Case([&](AttentionGradOp a) { attentionAttrs(a, a.hasStats(), inst); })
      .Case<SoftmaxCrossEntropyOp, SoftmaxCrossEntropyAndGradOp>([&](auto s) {
        int64_t classes = classesOf(s);
        if (!program.signature.vocabulary)
          program.signature.vocabulary = classes;
        std::optional<uint64_t> ignore = s.getIgnoreIndex();
        inst.ints = {static_cast<int64_t>(s.getReduction()), ignore.has_value(),
                     ignore ? static_cast<int64_t>(*ignore) : 0, classes};
      })
      .Case([&](SoftmaxCrossEntropyGradOp s) { inst.ints = {classesOf(s)}; })
      .Default([](Operation *) {});
  for (Value v : op->getOperands())
    inst.operands.push_back(program.ids.lookup(v));
  for (Value r : op->getResults())
    inst.results.push_back(addTensor(r, TensorRole::Activation));
  program.instructions.push_back(std::move(inst));
  if (auto cost = dyn_cast<CostOpInterface>(op))
    program.flops += cost.getFlops();
  return success();
}

/// Records on `t` its graph.sharding and graph.global_shape, from the
/// attributes of an argument or result (verified by the dialect).
static void setSharding(ProgramTensor &t, DictionaryAttr attrs,
                        const Mesh &mesh) {
  t.shardAxes.clear();
  t.globalShape.clear();
  if (!attrs)
    return;
  if (auto sharding = attrs.getAs<ArrayAttr>(GraphDialect::kShardingAttr))
    for (Attribute dim : sharding) {
      StringRef axis = cast<StringAttr>(dim).getValue();
      t.shardAxes.push_back(axis.empty() ? -1 : int8_t(mesh.axisIndex(axis)));
    }
  if (auto global =
          attrs.getAs<DenseI64ArrayAttr>(GraphDialect::kGlobalShapeAttr))
    t.globalShape.assign(global.asArrayRef().begin(),
                         global.asArrayRef().end());
}

LogicalResult Builder::run() {
  Block &body = fn.getBody().front();
  Mesh mesh = getMesh(fn);
  if (mesh.numRanks() > 1)
    for (auto [name, size] : mesh.axes)
      program.mesh.push_back({name.str(), size});
  for (BlockArgument arg : body.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (!dtypeOf(type.getElementType()))
      return fn.emitError("argument ")
             << arg.getArgNumber() << " has an unsupported type " << type;
    unsigned i = arg.getArgNumber();
    auto param = fn.getArgAttrOfType<StringAttr>(
        i, trainc::train::TrainDialect::kParamAttr);
    auto state = fn.getArgAttrOfType<StringAttr>(
        i, trainc::train::TrainDialect::kStateAttr);
    if (param || state) {
      StringAttr name = param ? param : state;
      auto init = fn.getArgAttrOfType<ElementsAttr>(
          i, trainc::train::TrainDialect::kInitAttr);
      if (!init)
        return fn.emitError("'")
               << name.getValue() << "' has no initial value (train.init)";
      uint32_t id = addTensor(
          arg, param ? TensorRole::Parameter : TensorRole::State, name.str());
      ProgramTensor &t = program.tensors[id];
      t.arena = kStateArena;
      setSharding(t, fn.getArgAttrDict(i), mesh);
      if (withConstantData) {
        bool splat = false;
        auto offset = appendConstant(init, fn, splat);
        if (failed(offset))
          return failure();
        program.tensors[id].initOffset = *offset;
        program.tensors[id].splat = splat;
      }
      (param ? program.parameters : program.states).push_back(id);
      persistent[name.getValue()] = id;
      continue;
    }
    auto name = fn.getArgAttrOfType<StringAttr>(i, GraphDialect::kInputAttr);
    uint32_t id = addTensor(arg, TensorRole::Input,
                            name ? name.str() : "arg" + std::to_string(i));
    setSharding(program.tensors[id], fn.getArgAttrDict(i), mesh);
    if (auto data = fn.getArgAttrOfType<StringAttr>(
            i, trainc::train::TrainDialect::kDataAttr))
      (data.getValue() == "tokens" ? program.signature.tokens
                                   : program.signature.targets) =
          program.inputs.size();
    program.inputs.push_back(id);
  }
  for (Operation &op : body.without_terminator()) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      uint32_t id = addTensor(c.getResult(), TensorRole::Constant);
      if (!dtypeOf(c.getType().getElementType()))
        return c.emitError("constant of type ")
               << c.getType() << " has no executable element type";
      if (withConstantData) {
        bool splat = false;
        auto offset = appendConstant(c.getValue(), c, splat);
        if (failed(offset))
          return failure();
        program.tensors[id].offset = *offset;
        program.tensors[id].splat = splat;
      }
      continue;
    }
    if (failed(lowerOp(&op)))
      return failure();
  }
  // Outputs: each result gets its own tensor; values that are not fresh
  // activations (arguments, constants, values returned twice) are copied.
  // Results marked train.update are outputs the runtime copies back into
  // their parameter or state after each run.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto output =
        fn.getResultAttrOfType<StringAttr>(i, GraphDialect::kOutputAttr);
    auto target = fn.getResultAttrOfType<StringAttr>(
        i, trainc::train::TrainDialect::kUpdateAttr);
    std::string outName = output   ? output.str()
                          : target ? target.str() + ".next"
                                   : "result" + std::to_string(i);
    uint32_t id = program.ids.lookup(v);
    uint32_t out = id;
    if (program.tensors[id].role == TensorRole::Activation) {
      program.tensors[id].role = TensorRole::Output;
      program.tensors[id].name = outName;
    } else {
      ProgramInstruction copy;
      copy.opcode = Opcode::Reshape;
      copy.operands = {id};
      copy.resultIndex = i;
      out = addTensor(program.tensors[id].type, Value(), TensorRole::Output,
                      outName);
      copy.results = {out};
      program.instructions.push_back(copy);
    }
    program.resultTensors.push_back(out);
    setSharding(program.tensors[out], fn.getResultAttrDict(i), mesh);
    if (!target) {
      recordSignature(i, program.outputs.size());
      program.outputs.push_back(out);
      continue;
    }
    auto it = persistent.find(target.getValue());
    if (it == persistent.end())
      return fn.emitError("result ") << i << " updates '" << target.getValue()
                                     << "', which is not a parameter or state";
    if (program.tensors[out].type != program.tensors[it->second].type)
      return fn.emitError("result ")
             << i << " updates '" << target.getValue() << "' with a value of "
             << v.getType() << ", not the type of '" << target.getValue()
             << "'";
    program.updates.push_back({out, it->second});
  }
  return success();
}

} // namespace

FailureOr<Program> Program::build(func::FuncOp fn, bool withConstantData) {
  Builder builder(fn, withConstantData);
  if (failed(builder.run()))
    return failure();
  return std::move(builder.program);
}

uint64_t ConstantSection::appendBorrowed(llvm::ArrayRef<char> bytes) {
  uint64_t offset = alignUp(size());
  pieces_.push_back({offset, bytes, {}});
  return offset;
}

uint64_t ConstantSection::appendOwned(std::vector<char> *&bytes) {
  uint64_t offset = alignUp(size());
  pieces_.push_back({offset, {}, {}});
  bytes = &pieces_.back().owned;
  return offset;
}

void ConstantSection::write(llvm::raw_ostream &os) const {
  uint64_t at = 0;
  for (const Piece &piece : pieces_) {
    os.write_zeros(unsigned(piece.offset - at));
    llvm::ArrayRef<char> bytes = piece.bytes();
    os.write(bytes.data(), bytes.size());
    at = piece.offset + bytes.size();
  }
}

} // namespace trainc
