//===- ExecutableWriter.cpp - Graph IR to a trainc executable -------------===//
//
// See ExecutableWriter.h for the phases. Opcode numbers and attribute
// layouts are those of runtime/src/cpu/Kernels.h (mirrored in kOpcode below;
// the runtime validates every instruction when it loads a file, so a
// mismatch is caught, not executed).
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/ExecutableWriter.h"

#include "trainc/Dialect/Graph/GraphOps.h"
#include "trainc/Dialect/Train/TrainDialect.h"
#include "trainc/schema/ExecutableFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace mlir;
using namespace trainc::graph;

namespace trainc {
namespace {

constexpr uint64_t kAlignment = kTensorAlignment;
constexpr uint32_t kStateArena = 0, kWorkArena = 1;

std::optional<Opcode> opcodeFor(Operation *op) {
  if (!isa<GraphDialect>(op->getDialect()))
    return std::nullopt;
  return opcodeForGraphOp(op->getName().stripDialect());
}

uint64_t alignUp(uint64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

FailureOr<fb::DType> dtypeOf(Type t) {
  if (t.isF64())
    return fb::DType::F64;
  if (t.isF32())
    return fb::DType::F32;
  if (t.isF16())
    return fb::DType::F16;
  if (t.isBF16())
    return fb::DType::BF16;
  if (t.isInteger(64))
    return fb::DType::I64;
  if (t.isInteger(32))
    return fb::DType::I32;
  if (t.isInteger(1))
    return fb::DType::I1;
  return failure();
}

uint64_t bytesOf(RankedTensorType t) {
  unsigned bits = t.getElementTypeBitWidth();
  return uint64_t(t.getNumElements()) * (bits == 1 ? 1 : bits / 8);
}

/// One logical tensor of the program being built.
struct Tensor {
  std::string name;
  fb::TensorRole role = fb::TensorRole::Activation;
  RankedTensorType type;
  uint32_t arena = kWorkArena;
  uint64_t offset = 0;
  uint64_t initOffset = 0;
  /// The stored constant or initial value is one repeated element.
  bool splat = false;
  // Liveness in instruction indices (work arena only).
  int64_t firstUse = 0, lastUse = 0;
};

struct Instruction {
  Opcode opcode;
  std::vector<uint32_t> operands, results;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

/// The program under construction.
/// A dot_general operand read through the transpose that made it: dims of
/// the transposed value map to the source's by `perm`. Possible when the
/// operand's free dims keep their order in the source, since the result
/// lists them in operand order. Returns the remapped (batch, contract)
/// dims, or nothing.
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
throughTranspose(TransposeOp t, ArrayRef<int64_t> batch,
                 ArrayRef<int64_t> contract) {
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t last = -1;
  for (int64_t d = 0; d < int64_t(perm.size()); ++d) {
    if (llvm::is_contained(batch, d) || llvm::is_contained(contract, d))
      continue;
    if (perm[d] < last)
      return std::nullopt;
    last = perm[d];
  }
  SmallVector<int64_t> b, c;
  for (int64_t d : batch)
    b.push_back(perm[d]);
  for (int64_t d : contract)
    c.push_back(perm[d]);
  return std::make_pair(b, c);
}

/// Whether every use of `t` is a dot_general that can read its source
/// directly (then the transpose is never materialized: a weight W[N, K]
/// used as W^T becomes a GEMM with a transposed operand).
bool absorbedByDots(TransposeOp t) {
  if (t->use_empty())
    return false;
  for (OpOperand &use : t->getUses()) {
    auto dot = dyn_cast<DotGeneralOp>(use.getOwner());
    if (!dot)
      return false;
    bool lhs = use.getOperandNumber() == 0;
    if (!throughTranspose(t,
                          lhs ? dot.getLhsBatchingDimensions()
                              : dot.getRhsBatchingDimensions(),
                          lhs ? dot.getLhsContractingDimensions()
                              : dot.getRhsContractingDimensions()))
      return false;
  }
  return true;
}

class Lowering {
public:
  explicit Lowering(func::FuncOp fn) : fn(fn) {}
  LogicalResult run();
  void planMemory(MemoryPlanReport &report);
  std::vector<char> serialize(const WriterOptions &options,
                              const MemoryPlanReport &report);

private:
  /// A new tensor of `type`, recorded as the tensor of `v` when given.
  uint32_t addTensor(RankedTensorType type, Value v, fb::TensorRole role,
                     std::string name = "");
  uint32_t addTensor(Value v, fb::TensorRole role, std::string name = "") {
    return addTensor(cast<RankedTensorType>(v.getType()), v, role,
                     std::move(name));
  }
  LogicalResult addConstant(Value v, ElementsAttr value);
  LogicalResult lowerOp(Operation *op);
  /// Appends the bytes of `value` to the constant section; returns offset.
  /// A splat stores one element and sets `splat`.
  FailureOr<uint64_t> appendConstant(ElementsAttr value, Operation *where,
                                     bool &splat);

  func::FuncOp fn;
  std::vector<Tensor> tensors;
  llvm::DenseMap<Value, uint32_t> ids;
  /// Parameters and states by name, for train.update results.
  llvm::StringMap<uint32_t> persistent;
  std::vector<Instruction> instructions;
  std::vector<uint32_t> inputs, outputs, parameters;
  /// FLOPs of one run (the cost interface summed over the ops).
  uint64_t flops = 0;
  /// Transposes read by their dot_general users directly (no instruction).
  llvm::DenseSet<Operation *> absorbed;
  /// Optimizer state (persistent, initialized like parameters).
  std::vector<uint32_t> states;
  /// (result, target) pairs copied after every run.
  std::vector<std::pair<uint32_t, uint32_t>> updates;
  /// New values written in place into their parameter or state.
  std::vector<uint32_t> inPlaceUpdates;
  std::vector<char> constants;
  uint64_t stateSize = 0, workSize = 0;
};

uint32_t Lowering::addTensor(RankedTensorType type, Value v,
                             fb::TensorRole role, std::string name) {
  uint32_t id = tensors.size();
  Tensor t;
  t.role = role;
  t.type = type;
  t.name = name.empty() ? "%" + std::to_string(id) : name;
  tensors.push_back(t);
  if (v)
    ids[v] = id;
  return id;
}

FailureOr<uint64_t> Lowering::appendConstant(ElementsAttr value,
                                             Operation *where, bool &splat) {
  splat = false;
  uint64_t offset = alignUp(constants.size());
  constants.resize(offset);
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return where->emitError("the value of ")
             << value.getType() << " is not available (it was elided when "
             << "the IR was printed; recompile from the model)";
    ArrayRef<char> data = blob->getData();
    constants.insert(constants.end(), data.begin(), data.end());
    return offset;
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return where->emitError("unsupported constant attribute kind");
  Type e = dense.getElementType();
  unsigned width = e.getIntOrFloatBitWidth();
  unsigned bytes = width == 1 ? 1 : width / 8;
  auto put = [&](uint64_t bits) {
    for (unsigned b = 0; b < bytes; ++b)
      constants.push_back(char((bits >> (8 * b)) & 0xff));
  };
  // A splat of several elements is stored once; the runtime repeats it.
  splat = dense.isSplat() && dense.getNumElements() > 1;
  int64_t count = splat ? 1 : dense.getNumElements();
  if (isa<FloatType>(e)) {
    for (APFloat v : llvm::make_range(dense.value_begin<APFloat>(),
                                      dense.value_begin<APFloat>() + count))
      put(v.bitcastToAPInt().getZExtValue());
  } else {
    for (APInt v : llvm::make_range(dense.value_begin<APInt>(),
                                    dense.value_begin<APInt>() + count))
      put(width == 1 ? (v.isZero() ? 0 : 1) : v.getZExtValue());
  }
  return offset;
}

LogicalResult Lowering::addConstant(Value v, ElementsAttr value) {
  bool splat = false;
  auto offset = appendConstant(value, v.getDefiningOp(), splat);
  if (failed(offset))
    return failure();
  uint32_t id = addTensor(v, fb::TensorRole::Constant);
  tensors[id].offset = *offset;
  tensors[id].splat = splat;
  return success();
}

/// The dims of `values` as int64.
template <typename Range> std::vector<int64_t> toInts(Range values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

LogicalResult Lowering::lowerOp(Operation *op) {
  std::optional<Opcode> opcode = opcodeFor(op);
  if (!opcode)
    return op->emitError("'")
           << op->getName() << "' cannot be lowered to a trainc executable";
  Instruction inst;
  inst.opcode = *opcode;
  // The operands read, when not the op's own (see absorbedByDots).
  SmallVector<Value> operands;
  bool lowered =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case([&](CompareOp c) {
            inst.ints = {static_cast<int64_t>(c.getDirection())};
            return true;
          })
          .Case([&](DotGeneralOp d) {
            SmallVector<int64_t> lb(d.getLhsBatchingDimensions()),
                rb(d.getRhsBatchingDimensions()),
                lc(d.getLhsContractingDimensions()),
                rc(d.getRhsContractingDimensions());
            operands = {d.getLhs(), d.getRhs()};
            // Operands made by an absorbed transpose: read its source.
            for (auto [value, batch, contract] :
                 {std::tie(operands[0], lb, lc),
                  std::tie(operands[1], rb, rc)}) {
              auto t = value.getDefiningOp<TransposeOp>();
              if (!t || !absorbed.contains(t))
                continue;
              auto dims = *throughTranspose(t, batch, contract);
              value = t.getOperand();
              batch = dims.first;
              contract = dims.second;
            }
            inst.ints = {int64_t(lb.size()), int64_t(lc.size())};
            for (auto *list : {&lb, &rb, &lc, &rc})
              inst.ints.insert(inst.ints.end(), list->begin(), list->end());
            return true;
          })
          .Case([&](ReduceSumOp r) {
            inst.ints = toInts(r.getDims());
            return true;
          })
          .Case([&](ReduceMaxOp r) {
            inst.ints = toInts(r.getDims());
            return true;
          })
          .Case([&](ReduceMeanOp r) {
            inst.ints = toInts(r.getDims());
            return true;
          })
          .Case([&](BroadcastInDimOp b) {
            inst.ints = toInts(b.getDims());
            return true;
          })
          .Case([&](TransposeOp t) {
            inst.ints = toInts(t.getPermutation());
            return true;
          })
          .Case([&](SliceOp s) {
            for (auto list : {s.getStart(), s.getLimit(), s.getStrides()})
              inst.ints.insert(inst.ints.end(), list.begin(), list.end());
            return true;
          })
          .Case([&](ConcatenateOp c) {
            inst.ints = {int64_t(c.getDim())};
            return true;
          })
          .Case([&](GatherOp g) {
            inst.ints = {int64_t(g.getAxis())};
            return true;
          })
          .Case([&](ScatterAddOp s) {
            inst.ints = {int64_t(s.getAxis())};
            return true;
          })
          .Case([&](IotaOp i) {
            inst.ints = {int64_t(i.getDim())};
            return true;
          })
          .Case([&](SoftmaxOp s) {
            inst.ints = {int64_t(s.getDim())};
            return true;
          })
          .Case([&](GeluOp g) {
            inst.ints = {g.getApproximation() == GeluApproximation::tanh};
            return true;
          })
          .Case([&](AdamwUpdateOp a) {
            inst.floats = {a.getBeta1().convertToDouble(),
                           a.getBeta2().convertToDouble(),
                           a.getEpsilon().convertToDouble()};
            return true;
          })
          .Case([&](GeluGradOp g) {
            inst.ints = {g.getApproximation() == GeluApproximation::tanh};
            return true;
          })
          .Case([&](NormGradOp n) {
            inst.ints = {int64_t(n.getAxis()), n.getScale() != nullptr,
                         n.getCentered()};
            inst.floats = {n.getEpsilon().convertToDouble()};
            return true;
          })
          .Case([&](LayerNormOp l) {
            inst.ints = {int64_t(l.getAxis()), l.getScale() != nullptr,
                         l.getBias() != nullptr};
            inst.floats = {l.getEpsilon().convertToDouble()};
            return true;
          })
          .Case([&](RmsNormOp r) {
            inst.ints = {int64_t(r.getAxis()), r.getScale() != nullptr};
            inst.floats = {r.getEpsilon().convertToDouble()};
            return true;
          })
          .Case([&](DropoutOp d) {
            inst.ints = {int64_t(d.getSeed())};
            inst.floats = {d.getRatio().convertToDouble()};
            return true;
          })
          .Case([&](AttentionOp a) {
            inst.ints = {a.getCausal(), a.getMask() != nullptr};
            inst.floats = {a.getScale().convertToDouble()};
            return true;
          })
          .Case([&](SoftmaxCrossEntropyOp s) {
            std::optional<uint64_t> ignore = s.getIgnoreIndex();
            inst.ints = {static_cast<int64_t>(s.getReduction()),
                         ignore.has_value(),
                         ignore ? static_cast<int64_t>(*ignore) : 0};
            return true;
          })
          .Default([](Operation *) { return true; });
  (void)lowered;
  for (Value v :
       operands.empty() ? SmallVector<Value>(op->getOperands()) : operands)
    inst.operands.push_back(ids.lookup(v));
  for (Value r : op->getResults())
    inst.results.push_back(addTensor(r, fb::TensorRole::Activation));
  instructions.push_back(std::move(inst));
  return success();
}

LogicalResult Lowering::run() {
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (failed(dtypeOf(type.getElementType())))
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
          arg, param ? fb::TensorRole::Parameter : fb::TensorRole::State,
          name.str());
      bool splat = false;
      auto offset = appendConstant(init, fn, splat);
      if (failed(offset))
        return failure();
      tensors[id].initOffset = *offset;
      tensors[id].splat = splat;
      tensors[id].arena = kStateArena;
      (param ? parameters : states).push_back(id);
      persistent[name.getValue()] = id;
      continue;
    }
    auto name = fn.getArgAttrOfType<StringAttr>(i, GraphDialect::kInputAttr);
    uint32_t id = addTensor(arg, fb::TensorRole::Input,
                            name ? name.str() : "arg" + std::to_string(i));
    inputs.push_back(id);
  }
  body.walk([&](TransposeOp t) {
    if (absorbedByDots(t))
      absorbed.insert(t);
  });
  for (Operation &op : body.without_terminator()) {
    if (auto t = dyn_cast<TransposeOp>(op); t && absorbed.contains(t))
      continue;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      if (failed(addConstant(c.getResult(), c.getValue())))
        return failure();
      continue;
    }
    if (failed(lowerOp(&op)))
      return failure();
    if (auto cost = dyn_cast<CostOpInterface>(op))
      flops += cost.getFlops();
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
    uint32_t id = ids.lookup(v);
    uint32_t out = id;
    if (tensors[id].role == fb::TensorRole::Activation) {
      tensors[id].role = fb::TensorRole::Output;
      tensors[id].name = outName;
    } else {
      Instruction copy;
      copy.opcode = Opcode::Reshape;
      copy.operands = {id};
      out =
          addTensor(tensors[id].type, Value(), fb::TensorRole::Output, outName);
      copy.results = {out};
      instructions.push_back(copy);
    }
    if (!target) {
      outputs.push_back(out);
      continue;
    }
    auto it = persistent.find(target.getValue());
    if (it == persistent.end())
      return fn.emitError("result ") << i << " updates '" << target.getValue()
                                     << "', which is not a parameter or state";
    updates.push_back({out, it->second});
  }
  return success();
}

void Lowering::planMemory(MemoryPlanReport &report) {
  // Parameters, then optimizer state: packed in the state arena, in order.
  std::vector<uint32_t> persistentIds = parameters;
  persistentIds.insert(persistentIds.end(), states.begin(), states.end());
  uint64_t parameterBytes = 0;
  for (uint32_t id : persistentIds) {
    tensors[id].offset = stateSize;
    stateSize = alignUp(stateSize + bytesOf(tensors[id].type));
    if (tensors[id].role == fb::TensorRole::Parameter)
      parameterBytes = stateSize;
  }
  // Training updates in place: a new parameter or state value is written
  // straight into its target's bytes when nothing reads the target after
  // the instruction that produces it (the optimizer reads each parameter
  // and moment before computing its new value). The copy after the run is
  // then not needed.
  {
    std::vector<int64_t> lastRead(tensors.size(), -1),
        producer(tensors.size(), -1);
    for (int64_t i = 0; i < int64_t(instructions.size()); ++i) {
      for (uint32_t id : instructions[i].operands)
        lastRead[id] = i;
      for (uint32_t id : instructions[i].results)
        producer[id] = i;
    }
    // adamw_update reads each element of the parameter and moments before
    // it writes that element of their new values: result k may overwrite
    // the operand it replaces even though the instruction reads it.
    auto overwritesOwnOperand = [&](uint32_t result, uint32_t target) {
      const Instruction &inst = instructions[producer[result]];
      if (inst.opcode != Opcode::AdamwUpdate ||
          lastRead[target] != producer[result])
        return false;
      static constexpr int kReplaced[] = {0, 2, 3}; // param, exp_avg, _sq
      for (int k = 0; k < 3; ++k)
        if (inst.results[k] == result)
          return inst.operands[kReplaced[k]] == target &&
                 llvm::count(inst.operands, target) == 1;
      return false;
    };
    std::vector<std::pair<uint32_t, uint32_t>> remaining;
    for (auto [result, target] : updates) {
      if (producer[result] < 0 || (lastRead[target] >= producer[result] &&
                                   !overwritesOwnOperand(result, target))) {
        remaining.push_back({result, target});
        continue;
      }
      tensors[result].arena = kStateArena;
      tensors[result].offset = tensors[target].offset;
      // Still an Output (writable, never aliased by the work-arena planner),
      // but no longer copied.
      inPlaceUpdates.push_back(result);
    }
    updates = std::move(remaining);
  }
  // Liveness of work-arena tensors, in instruction indices. Inputs live for
  // the whole program (a session may run again without re-binding them),
  // outputs until the end.
  int64_t end = instructions.size();
  std::vector<uint32_t> work;
  for (uint32_t id = 0; id < tensors.size(); ++id) {
    Tensor &t = tensors[id];
    if (t.role == fb::TensorRole::Constant ||
        t.role == fb::TensorRole::Parameter ||
        t.role == fb::TensorRole::State || t.arena == kStateArena)
      continue;
    t.firstUse = t.role == fb::TensorRole::Input ? 0 : end;
    t.lastUse =
        t.role == fb::TensorRole::Output || t.role == fb::TensorRole::Input
            ? end
            : 0;
    work.push_back(id);
  }
  for (int64_t i = 0; i < end; ++i) {
    for (uint32_t id : instructions[i].results)
      tensors[id].firstUse = std::min(tensors[id].firstUse, i);
    for (uint32_t id : instructions[i].operands)
      tensors[id].lastUse = std::max(tensors[id].lastUse, i);
  }
  for (uint32_t id : work)
    tensors[id].lastUse = std::max(tensors[id].lastUse, tensors[id].firstUse);
  // In-place reuse. Buffers are grouped: a reshape of a work-arena value
  // shares its operand's bytes (and its instruction is dropped), and an
  // elementwise result whose kernel reads and writes index by index takes
  // the buffer of an operand of the same size that dies at that
  // instruction. Groups are then placed as one buffer.
  std::vector<uint32_t> group(tensors.size());
  for (uint32_t id = 0; id < tensors.size(); ++id)
    group[id] = id;
  auto find = [&](uint32_t id) {
    while (group[id] != id)
      id = group[id] = group[group[id]];
    return id;
  };
  // The last instruction reading any member of each group.
  std::vector<int64_t> groupLastUse(tensors.size());
  for (uint32_t id = 0; id < tensors.size(); ++id)
    groupLastUse[id] = tensors[id].lastUse;
  auto inWork = [&](uint32_t id) {
    auto role = tensors[id].role;
    return role == fb::TensorRole::Activation || role == fb::TensorRole::Input;
  };
  std::vector<bool> dropped(instructions.size(), false);
  for (int64_t i = 0; i < end; ++i) {
    Instruction &inst = instructions[i];
    if (inst.results.size() != 1 ||
        tensors[inst.results[0]].role != fb::TensorRole::Activation)
      continue;
    uint32_t result = inst.results[0];
    bool isReshape = inst.opcode == Opcode::Reshape;
    bool indexWise = inst.opcode <= Opcode::Min ||
                     inst.opcode == Opcode::Select ||
                     inst.opcode == Opcode::Gelu;
    for (uint32_t operand : inst.operands) {
      if (!inWork(operand) ||
          bytesOf(tensors[operand].type) != bytesOf(tensors[result].type))
        continue;
      uint32_t root = find(operand);
      if (!isReshape && (!indexWise || groupLastUse[root] != i ||
                         tensors[operand].role != fb::TensorRole::Activation))
        continue;
      group[result] = root;
      groupLastUse[root] =
          std::max(groupLastUse[root], tensors[result].lastUse);
      tensors[root].firstUse =
          std::min(tensors[root].firstUse, tensors[result].firstUse);
      dropped[i] = isReshape;
      break;
    }
  }
  // Greedy by size: largest group first, each at the lowest aligned offset
  // that overlaps no placed group alive at the same time. Ties by id keep
  // it deterministic.
  std::vector<uint32_t> order;
  uint64_t withoutReuse = 0;
  for (uint32_t id : work) {
    withoutReuse += alignUp(bytesOf(tensors[id].type));
    if (find(id) == id)
      order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return bytesOf(tensors[a].type) > bytesOf(tensors[b].type);
  });
  std::vector<uint32_t> placed;
  for (uint32_t id : order) {
    Tensor &t = tensors[id];
    uint64_t size = bytesOf(t.type);
    int64_t first = t.firstUse, last = groupLastUse[id];
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (uint32_t other : placed) {
      const Tensor &o = tensors[other];
      if (o.firstUse <= last && first <= groupLastUse[other])
        busy.push_back({o.offset, o.offset + bytesOf(o.type)});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [begin, limit] : busy) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, alignUp(limit));
    }
    t.offset = offset;
    workSize = std::max(workSize, offset + size);
    placed.push_back(id);
  }
  for (uint32_t id : work)
    tensors[id].offset = tensors[find(id)].offset;
  // Reshapes that now alias their operand move no data.
  std::vector<Instruction> kept;
  for (int64_t i = 0; i < end; ++i)
    if (!dropped[i])
      kept.push_back(std::move(instructions[i]));
  instructions = std::move(kept);
  report.parameters = parameterBytes;
  report.persistentState = stateSize - parameterBytes;
  report.activations = workSize;
  report.constants = constants.size();
  report.peak = stateSize + workSize;
  report.activationsWithoutReuse = withoutReuse;
}

std::vector<char> Lowering::serialize(const WriterOptions &options,
                                      const MemoryPlanReport &report) {
  // Built twice: the first pass measures the FlatBuffer so the second can
  // record where the (64-byte aligned) constant section starts. Defaults
  // are forced so both passes have the same size.
  auto build = [&](uint64_t constantsOffset) {
    flatbuffers::FlatBufferBuilder b(1 << 16);
    b.ForceDefaults(true);
    std::vector<flatbuffers::Offset<fb::Tensor>> fbTensors;
    for (const Tensor &t : tensors) {
      std::vector<int64_t> shape(t.type.getShape().begin(),
                                 t.type.getShape().end());
      fbTensors.push_back(fb::CreateTensorDirect(
          b, t.name.c_str(), t.role, *dtypeOf(t.type.getElementType()), &shape,
          t.arena, t.offset, bytesOf(t.type), t.initOffset, "", t.splat));
    }
    std::vector<flatbuffers::Offset<fb::Instruction>> fbInsts;
    for (const Instruction &i : instructions)
      fbInsts.push_back(fb::CreateInstructionDirect(
          b, static_cast<uint16_t>(i.opcode), &i.operands, &i.results, &i.ints,
          &i.floats));
    std::vector<flatbuffers::Offset<fb::Arena>> arenas = {
        fb::CreateArenaDirect(b, "state", stateSize, kAlignment),
        fb::CreateArenaDirect(b, "work", workSize, kAlignment)};
    auto memory = fb::CreateMemoryPlan(
        b, report.parameters, report.persistentState, report.activations,
        report.temporaries, report.workspace, report.peak);
    auto opts = fb::CreateCompileOptionsDirect(
        b, "trainc 0.1.0", options.source.c_str(), options.command.c_str());
    std::vector<flatbuffers::Offset<fb::Update>> fbUpdates;
    for (auto [result, target] : updates)
      fbUpdates.push_back(fb::CreateUpdate(b, result, target));
    auto exe = fb::CreateExecutableDirect(
        b, kFormatVersion, opts, &fbTensors, &arenas, &fbInsts, &inputs,
        &outputs, &parameters, constantsOffset, constants.size(), memory,
        &fbUpdates, flops);
    fb::FinishExecutableBuffer(b, exe);
    return std::vector<char>(b.GetBufferPointer(),
                             b.GetBufferPointer() + b.GetSize());
  };
  uint64_t offset = alignUp(build(0).size());
  std::vector<char> bytes = build(offset);
  bytes.resize(offset, 0);
  bytes.insert(bytes.end(), constants.begin(), constants.end());
  return bytes;
}

} // namespace

std::optional<Opcode> opcodeForGraphOp(StringRef name) {
  for (int i = 0; i < kNumOpcodes; ++i)
    if (name == opcodeName(Opcode(i)))
      return Opcode(i);
  return std::nullopt;
}

void MemoryPlanReport::print(llvm::raw_ostream &os) const {
  auto row = [&](const char *name, uint64_t bytes) {
    os << llvm::format("  %-18s %14llu bytes  %10.3f MiB\n", name,
                       (unsigned long long)bytes, bytes / 1048576.0);
  };
  os << "memory plan (peak by category):\n";
  row("parameters", parameters);
  row("persistent state", persistentState);
  row("activations", activations);
  row("temporaries", temporaries);
  row("workspace", workspace);
  row("peak (arenas)", peak);
  row("constants (file)", constants);
  os << llvm::format("  activations reuse: %llu bytes planned for %llu "
                     "bytes of buffers (%.1fx)\n",
                     (unsigned long long)activations,
                     (unsigned long long)activationsWithoutReuse,
                     activations ? double(activationsWithoutReuse) / activations
                                 : 0.0);
}

LogicalResult writeExecutable(ModuleOp module, StringRef path,
                              const WriterOptions &options,
                              MemoryPlanReport &report) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  if (!fn)
    return module.emitError("no function @main to compile");
  Lowering lowering(fn);
  if (failed(lowering.run()))
    return failure();
  lowering.planMemory(report);
  std::vector<char> bytes = lowering.serialize(options, report);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError("cannot write ") << path << ": " << ec.message();
  os.write(bytes.data(), bytes.size());
  return success();
}

} // namespace trainc
