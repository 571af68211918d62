//===- PlanMemory.cpp - Liveness and static offsets of every buffer -------===//
//
// See PlanMemory in Passes.td. The plan is made on the instruction view of
// @main (Program.h) and written back as attributes, which the serializer
// reads; `trainc --compile-to=plan-memory` and trainc-opt show them.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/MemoryPlan.h"
#include "trainc/Compiler/Passes.h"
#include "trainc/Compiler/Program.h"
#include "trainc/Dialect/Graph/GraphOps.h"

#include "mlir/IR/Builders.h"

#include <algorithm>

namespace trainc {
#define GEN_PASS_DEF_PLANMEMORY
#include "trainc/Compiler/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc::graph;

namespace trainc {

BufferLiveness::BufferLiveness(const Program &program) {
  size_t n = program.tensors.size();
  int64_t end = program.instructions.size();
  firstUse.assign(n, end);
  lastUse.assign(n, 0);
  // Inputs live for the whole program (a session may run again without
  // binding them again), outputs until its end.
  for (uint32_t id = 0; id < n; ++id) {
    TensorRole role = program.tensors[id].role;
    if (role == TensorRole::Input)
      firstUse[id] = 0;
    if (role == TensorRole::Output || role == TensorRole::Input)
      lastUse[id] = end;
  }
  for (int64_t i = 0; i < end; ++i) {
    for (uint32_t id : program.instructions[i].results)
      firstUse[id] = std::min(firstUse[id], i);
    for (uint32_t id : program.instructions[i].operands)
      lastUse[id] = std::max(lastUse[id], i);
  }
  for (uint32_t id = 0; id < n; ++id)
    lastUse[id] = std::max(lastUse[id], firstUse[id]);
}

namespace {

/// Whether instruction `inst` may write its result `result` into the memory
/// of its operand `operand` (InPlaceOpInterface; copies never may).
bool canOverwrite(const ProgramInstruction &inst, uint32_t result,
                  uint32_t operand) {
  auto inPlace = dyn_cast_or_null<InPlaceOpInterface>(inst.op);
  if (!inPlace || llvm::count(inst.operands, operand) != 1)
    return false;
  unsigned r = llvm::find(inst.results, result) - inst.results.begin();
  unsigned o = llvm::find(inst.operands, operand) - inst.operands.begin();
  return inPlace.canOverwriteOperand(r, o);
}

/// Whether `op` is a slice whose result is its operand's first elements in
/// order, so its bytes can be the operand's first bytes: starts 0, strides
/// 1, whole dimensions after the first one it shortens and dimensions of
/// one element before it (the padded classes' rows of a gradient cut back
/// to the vocabulary).
bool isPrefixSlice(Operation *op) {
  auto slice = dyn_cast_or_null<SliceOp>(op);
  if (!slice)
    return false;
  ArrayRef<int64_t> shape =
      cast<RankedTensorType>(slice.getOperand().getType()).getShape();
  ArrayRef<int64_t> start = slice.getStart(), limit = slice.getLimit(),
                    strides = slice.getStrides();
  size_t cut = 0;
  while (cut < shape.size() && limit[cut] == shape[cut])
    ++cut;
  for (size_t d = 0; d < shape.size(); ++d)
    if (start[d] != 0 || strides[d] != 1 ||
        (d < cut && cut < shape.size() && shape[d] != 1) ||
        (d > cut && limit[d] != shape[d]))
      return false;
  return true;
}

} // namespace

MemoryPlanReport planMemory(Program &program,
                            std::vector<bool> &aliasInstructions) {
  std::vector<ProgramTensor> &tensors = program.tensors;
  std::vector<ProgramInstruction> &instructions = program.instructions;
  MemoryPlanReport report;
  // Parameters, then optimizer state: packed in the state arena, in order.
  std::vector<uint32_t> persistentIds = program.parameters;
  persistentIds.insert(persistentIds.end(), program.states.begin(),
                       program.states.end());
  uint64_t stateSize = 0, workSize = 0, parameterBytes = 0;
  // Each at an aligned offset; the arena ends where its last tensor does
  // (no trailing padding, so the measured peak can equal the planned one).
  for (uint32_t id : persistentIds) {
    tensors[id].arena = kStateArena;
    tensors[id].offset = alignUp(stateSize);
    stateSize = tensors[id].offset + tensors[id].bytes();
    if (tensors[id].role == TensorRole::Parameter)
      parameterBytes = stateSize;
  }
  // Views of parameters: a reshape of a parameter, or of such a view,
  // reads the parameter's bytes where they are (a convolution's weight
  // [Cout, Cin, kh, kw] as the GEMM's [Cout, Cin kh kw]) instead of copying
  // them into the work arena every step. viewed[id] is the parameter a view
  // reads; nothing writes a view (the grouping below skips the state arena).
  aliasInstructions.assign(instructions.size(), false);
  std::vector<int64_t> viewed(tensors.size(), -1);
  for (int64_t i = 0; i < int64_t(instructions.size()); ++i) {
    const ProgramInstruction &inst = instructions[i];
    if (!inst.op || !isa<ReshapeOp>(inst.op) || inst.operands.size() != 1 ||
        inst.results.size() != 1)
      continue;
    uint32_t operand = inst.operands[0], result = inst.results[0];
    int64_t param = tensors[operand].role == TensorRole::Parameter
                        ? int64_t(operand)
                        : viewed[operand];
    if (param < 0 || tensors[result].role != TensorRole::Activation ||
        tensors[result].bytes() != tensors[param].bytes())
      continue;
    viewed[result] = param;
    tensors[result].arena = kStateArena;
    tensors[result].offset = tensors[param].offset;
    aliasInstructions[i] = true;
  }
  // Training updates in place: a new parameter or state value is written
  // straight into its target's bytes when nothing reads the target (or a
  // view of it) after the instruction that produces it, or when that
  // instruction overwrites the target element by element (the fused
  // optimizer update). The copy after the run is then not needed.
  {
    std::vector<int64_t> lastRead(tensors.size(), -1),
        producer(tensors.size(), -1);
    for (int64_t i = 0; i < int64_t(instructions.size()); ++i) {
      for (uint32_t id : instructions[i].operands)
        lastRead[viewed[id] >= 0 ? viewed[id] : id] = i;
      for (uint32_t id : instructions[i].results)
        producer[id] = i;
    }
    // Whether instruction p reads a view of `target` (which an
    // element-by-element overwrite of the target would change under it).
    auto readsView = [&](int64_t p, uint32_t target) {
      return llvm::any_of(instructions[p].operands, [&](uint32_t id) {
        return viewed[id] == int64_t(target);
      });
    };
    for (auto [result, target] : program.updates) {
      int64_t p = producer[result];
      if (p < 0 || (lastRead[target] >= p &&
                    !(lastRead[target] == p && !readsView(p, target) &&
                      canOverwrite(instructions[p], result, target))))
        continue;
      tensors[result].arena = kStateArena;
      tensors[result].offset = tensors[target].offset;
    }
  }
  BufferLiveness liveness(program);
  int64_t end = instructions.size();
  std::vector<uint32_t> work;
  for (uint32_t id = 0; id < tensors.size(); ++id) {
    TensorRole role = tensors[id].role;
    if (role == TensorRole::Constant || role == TensorRole::Parameter ||
        role == TensorRole::State || tensors[id].arena == kStateArena)
      continue;
    tensors[id].arena = kWorkArena;
    work.push_back(id);
  }
  std::vector<int64_t> firstUse = liveness.firstUse;
  // In-place reuse. Buffers are grouped: a reshape of a work-arena value
  // shares its operand's bytes (and its instruction is dropped), and an
  // index-wise result takes the buffer of an operand of the same size that
  // dies at that instruction. Groups are then placed as one buffer.
  std::vector<uint32_t> group(tensors.size());
  for (uint32_t id = 0; id < tensors.size(); ++id)
    group[id] = id;
  auto find = [&](uint32_t id) {
    while (group[id] != id)
      id = group[id] = group[group[id]];
    return id;
  };
  // The last instruction reading any member of each group.
  std::vector<int64_t> groupLastUse = liveness.lastUse;
  // (Not the views of parameters, nor updates written in place.)
  auto inWork = [&](uint32_t id) {
    auto role = tensors[id].role;
    return (role == TensorRole::Activation || role == TensorRole::Input) &&
           tensors[id].arena != kStateArena;
  };
  for (int64_t i = 0; i < end; ++i) {
    ProgramInstruction &inst = instructions[i];
    // One result, or the several of an op that says which operand each
    // may overwrite (a fused loop's, the fused loss and gradient's), each
    // taking its own operand.
    if (inst.results.size() != 1 &&
        !(inst.op && isa<InPlaceOpInterface>(inst.op)))
      continue;
    // Copies of function results are Outputs, so only graph.reshape ops
    // reach here as reshapes. A reshape, or a slice of the operand's first
    // elements, is a view: its result shares the operand's bytes (the
    // slice's its first bytes; a group's root is its largest member).
    bool prefix = isPrefixSlice(inst.op);
    bool isView = prefix || (inst.op && isa<ReshapeOp>(inst.op));
    llvm::SmallVector<uint32_t, 4> taken;
    for (uint32_t result : inst.results) {
      if (tensors[result].role != TensorRole::Activation ||
          tensors[result].arena == kStateArena)
        continue;
      for (uint32_t operand : inst.operands) {
        uint64_t have = tensors[operand].bytes(),
                 need = tensors[result].bytes();
        if (!inWork(operand) || (prefix ? need > have : need != have))
          continue;
        uint32_t root = find(operand);
        if (llvm::is_contained(taken, root))
          continue;
        if (!isView &&
            (!canOverwrite(inst, result, operand) || groupLastUse[root] != i ||
             tensors[operand].role != TensorRole::Activation))
          continue;
        group[result] = root;
        groupLastUse[root] =
            std::max(groupLastUse[root], liveness.lastUse[result]);
        firstUse[root] = std::min(firstUse[root], firstUse[result]);
        aliasInstructions[i] = isView;
        taken.push_back(root);
        break;
      }
    }
  }
  // Greedy by size: largest group first, each at the lowest aligned offset
  // that overlaps no placed group alive at the same time. Ties by id keep
  // it deterministic.
  // Sizes are computed once (from the MLIR types) and the placed groups
  // kept as plain records, indexed by time.
  std::vector<uint64_t> size(tensors.size(), 0);
  std::vector<uint32_t> order;
  uint64_t withoutReuse = 0;
  for (uint32_t id : work) {
    size[id] = tensors[id].bytes();
    withoutReuse += alignUp(size[id]);
    if (find(id) == id)
      order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return size[a] > size[b]; });
  struct Placed {
    int64_t first, last;
    uint64_t begin, end;
  };
  std::vector<Placed> placed;
  placed.reserve(order.size());
  // The placed groups by time: bucket b lists those alive at some
  // instruction in [b * kBucket, (b + 1) * kBucket), so a group meets only
  // the groups of its own stretch of the program, not every one placed
  // (with --grad-accum the program is long and most groups short-lived).
  constexpr int64_t kBucket = 256;
  std::vector<std::vector<uint32_t>> buckets(end / kBucket + 1);
  std::vector<uint32_t> seenAt;
  seenAt.reserve(order.size());
  uint32_t stamp = 0;
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (uint32_t id : order) {
    int64_t first = firstUse[id], last = groupLastUse[id];
    busy.clear();
    ++stamp;
    for (int64_t b = first / kBucket; b <= last / kBucket; ++b)
      for (uint32_t k : buckets[b]) {
        if (seenAt[k] == stamp)
          continue;
        seenAt[k] = stamp;
        const Placed &o = placed[k];
        if (o.first <= last && first <= o.last)
          busy.push_back({o.begin, o.end});
      }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [begin, limit] : busy) {
      if (offset + size[id] <= begin)
        break;
      offset = std::max(offset, alignUp(limit));
    }
    tensors[id].offset = offset;
    workSize = std::max(workSize, offset + size[id]);
    placed.push_back({first, last, offset, offset + size[id]});
    seenAt.push_back(0);
    for (int64_t b = first / kBucket; b <= last / kBucket; ++b)
      buckets[b].push_back(uint32_t(placed.size() - 1));
  }
  for (uint32_t id : work)
    tensors[id].offset = tensors[find(id)].offset;
  report.stateArena = stateSize;
  report.workArena = workSize;
  report.parameters = parameterBytes;
  report.persistentState = stateSize - parameterBytes;
  report.activations = workSize;
  report.peak = stateSize + workSize;
  report.activationsWithoutReuse = withoutReuse;
  return report;
}

namespace {

struct PlanMemoryPass : public impl::PlanMemoryBase<PlanMemoryPass> {
  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!fn) {
      getOperation().emitError("no function @main to plan");
      return signalPassFailure();
    }
    FailureOr<Program> program = Program::build(fn, /*withConstantData=*/false);
    if (failed(program))
      return signalPassFailure();
    std::vector<bool> alias;
    MemoryPlanReport report = planMemory(*program, alias);
    writeMemoryPlan(fn, *program, alias, report);
  }
};

} // namespace
} // namespace trainc
