//===- MemoryPlan.cpp - The memory plan as attributes of the IR -----------===//
//
// See MemoryPlan.h.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/MemoryPlan.h"

#include "trainc/Dialect/Graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"

#include <set>

using namespace mlir;

namespace trainc {

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
  if (!training)
    return;
  const TrainingState &t = *training;
  uint64_t p = t.parameterElements;
  int64_t n = t.dataRanks;
  os << llvm::format("training state per rank (AdamW; P = %llu parameters, "
                     "N = %lld data ranks",
                     (unsigned long long)p, (long long)n);
  if (t.tensorElements)
    os << llvm::format("; Pt = %llu of them split over T = %lld tensor ranks",
                       (unsigned long long)t.tensorElements,
                       (long long)t.tensorRanks);
  os << "):\n";
  uint64_t planned = 0, formula = 0, perElement = 0;
  auto share = [&](const char *name, const TrainingState::Share &s) {
    uint64_t f = s.formula(t);
    planned += s.bytes;
    formula += f;
    perElement += s.perElement;
    std::string b = std::to_string(s.perElement);
    std::string expr = s.split ? "P x " + b + " / " + std::to_string(n)
                       : t.tensorElements ? "(P-Pt+Pt/T) x " + b
                                          : "P x " + b;
    os << llvm::format("  %-18s %14llu bytes  %-12s = %12llu", name,
                       (unsigned long long)s.bytes, expr.c_str(),
                       (unsigned long long)f);
    if (s.bytes != f)
      os << llvm::format(" + %lld padding",
                         (long long)(int64_t(s.bytes) - int64_t(f)));
    os << (s.split            ? "  (split)\n"
           : t.tensorElements ? "  (Pt split)\n"
                              : "  (whole)\n");
  };
  share("parameters", t.parameters);
  share("gradients", t.gradients);
  share("optimizer state", t.optimizerState);
  os << llvm::format("  %-18s %14llu bytes  (formula %llu, %llu bytes per "
                     "parameter before splitting)\n",
                     (const char *)"total", (unsigned long long)planned,
                     (unsigned long long)formula,
                     (unsigned long long)perElement);
}

void accountTrainingState(const Program &program, MemoryPlanReport &report) {
  report.training.reset();
  MemoryPlanReport::TrainingState t;
  bool any = false;
  auto elements = [](const ProgramTensor &tensor) {
    uint64_t n = 1;
    if (!tensor.globalShape.empty()) {
      for (int64_t d : tensor.globalShape)
        n *= uint64_t(d);
      return n;
    }
    return uint64_t(tensor.type.getNumElements());
  };
  // The mesh axes' indices in shardAxes.
  int dataAxis = -1, tensorAxis = -1;
  for (auto [i, axis] : llvm::enumerate(program.mesh)) {
    if (axis.first == "data")
      dataAxis = int(i);
    if (axis.first == "tensor") {
      tensorAxis = int(i);
      t.tensorRanks = axis.second;
    }
  }
  auto splitOver = [](const ProgramTensor &tensor, int axis) {
    return axis >= 0 && llvm::is_contained(tensor.shardAxes, int8_t(axis));
  };
  auto isSplit = [&](const ProgramTensor &tensor) {
    return splitOver(tensor, dataAxis);
  };
  auto elementBytes = [](const ProgramTensor &tensor) {
    return uint64_t(
        trainc::graph::elementStorageBytes(tensor.type.getElementType()));
  };
  // The gradients are counted as the data-parallel collectives deliver
  // them (whole after an all_reduce, parts after a reduce_scatter; once per
  // bucket): through the divide by N (an instruction or a fused loop), the
  // slices and reshapes back to each parameter's shape, ZeRO-1's shard_slice,
  // the padding and the done of an asynchronous collective.
  std::vector<int64_t> producer(program.tensors.size(), -1);
  for (auto [i, inst] : llvm::enumerate(program.instructions))
    for (uint32_t id : inst.results)
      producer[id] = int64_t(i);
  std::set<uint32_t> counted;
  auto countGradient = [&](uint32_t id) {
    uint32_t at = id;
    for (int64_t p = producer[at]; p >= 0; p = producer[at]) {
      const ProgramInstruction &inst = program.instructions[p];
      Opcode op = inst.opcode;
      if (op == Opcode::AllReduce || op == Opcode::ReduceScatter ||
          op == Opcode::AllReduceStart || op == Opcode::ReduceScatterStart) {
        id = at;
        break;
      }
      if (op == Opcode::FusedElementwise) {
        // The divide by N as a loop: one operand of the result's shape,
        // the others 0-d.
        std::optional<uint32_t> tensorOperand;
        bool scalars = true;
        for (uint32_t operand : inst.operands) {
          ArrayRef<int64_t> shape = program.tensors[operand].type.getShape();
          if (shape == program.tensors[at].type.getShape() && !tensorOperand)
            tensorOperand = operand;
          else
            scalars = scalars && shape.empty();
        }
        if (!tensorOperand || !scalars)
          break;
        at = *tensorOperand;
        continue;
      }
      if (op != Opcode::Reshape && op != Opcode::Slice &&
          op != Opcode::ShardSlice && op != Opcode::Div &&
          op != Opcode::Concatenate && op != Opcode::CollectiveDone)
        break;
      at = inst.operands[0];
    }
    if (counted.insert(id).second)
      t.gradients.bytes += program.tensors[id].bytes();
  };
  for (const ProgramInstruction &inst : program.instructions) {
    if (inst.opcode != Opcode::AdamwUpdate)
      continue;
    // Operands: N params, grads, exp_avgs, exp_avg_sqs, then the scalars.
    size_t n = inst.results.size() / 3;
    for (size_t i = 0; i < n; ++i) {
      const ProgramTensor &g = program.tensors[inst.operands[n + i]];
      const ProgramTensor &m = program.tensors[inst.operands[2 * n + i]];
      const ProgramTensor &v = program.tensors[inst.operands[3 * n + i]];
      any = true;
      countGradient(inst.operands[n + i]);
      t.gradients.perElement = elementBytes(g);
      t.optimizerState.bytes += m.bytes() + v.bytes();
      t.optimizerState.perElement = elementBytes(m) + elementBytes(v);
      t.optimizerState.split |= isSplit(m);
    }
  }
  if (!any)
    return;
  // Split when what was counted is (a reduce_scatter's parts).
  for (uint32_t id : counted) {
    Opcode op = producer[id] >= 0 ? program.instructions[producer[id]].opcode
                                  : Opcode::Add;
    if (op == Opcode::ReduceScatter || op == Opcode::ReduceScatterStart)
      t.gradients.split = true;
  }
  for (uint32_t id : program.parameters) {
    const ProgramTensor &p = program.tensors[id];
    t.parameterElements += elements(p);
    t.parameters.bytes += p.bytes();
    t.parameters.perElement = elementBytes(p);
    t.parameters.split |= isSplit(p);
    if (splitOver(p, tensorAxis))
      t.tensorElements += elements(p);
  }
  for (const auto &[name, size] : program.mesh)
    if (name == "data")
      t.dataRanks = size;
  report.training = t;
}

namespace {

/// The report's fields by their attribute names, in printed order.
template <typename Report, typename F> void forEachField(Report &r, F f) {
  f("parameters", r.parameters);
  f("persistent_state", r.persistentState);
  f("activations", r.activations);
  f("peak", r.peak);
  f("activations_without_reuse", r.activationsWithoutReuse);
}

} // namespace

void writeMemoryPlan(func::FuncOp fn, const Program &program,
                     const std::vector<bool> &aliasInstructions,
                     const MemoryPlanReport &report) {
  Builder b(fn.getContext());
  auto slot = [&](const ProgramTensor &t) {
    return std::make_pair(
        b.getNamedAttr(plan::kArena, b.getI64IntegerAttr(t.arena)),
        b.getNamedAttr(plan::kOffset, b.getI64IntegerAttr(t.offset)));
  };
  for (BlockArgument arg : fn.getArguments()) {
    auto [arena, offset] = slot(program.tensors[program.ids.lookup(arg)]);
    fn.setArgAttr(arg.getArgNumber(), arena.getName(), arena.getValue());
    fn.setArgAttr(arg.getArgNumber(), offset.getName(), offset.getValue());
  }
  for (auto [i, inst] : llvm::enumerate(program.instructions)) {
    if (!inst.op) {
      auto [arena, offset] = slot(program.tensors[inst.results[0]]);
      fn.setResultAttr(inst.resultIndex, arena.getName(), arena.getValue());
      fn.setResultAttr(inst.resultIndex, offset.getName(), offset.getValue());
      continue;
    }
    SmallVector<int64_t> arenas, offsets;
    for (uint32_t id : inst.results) {
      arenas.push_back(program.tensors[id].arena);
      offsets.push_back(program.tensors[id].offset);
    }
    inst.op->setAttr(plan::kArenas, b.getDenseI64ArrayAttr(arenas));
    inst.op->setAttr(plan::kOffsets, b.getDenseI64ArrayAttr(offsets));
    if (aliasInstructions[i])
      inst.op->setAttr(plan::kAlias, b.getUnitAttr());
    else
      inst.op->removeAttr(plan::kAlias);
  }
  fn->setAttr(plan::kArenaSizes,
              b.getDenseI64ArrayAttr(
                  {int64_t(report.stateArena), int64_t(report.workArena)}));
  SmallVector<NamedAttribute> peak;
  forEachField(report, [&](StringRef name, uint64_t value) {
    peak.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
  });
  fn->setAttr(plan::kPeak, b.getDictionaryAttr(peak));
}

LogicalResult readMemoryPlan(func::FuncOp fn, Program &program,
                             std::vector<bool> &aliasInstructions,
                             MemoryPlanReport &report) {
  auto missing = [&](Operation *where, StringRef what) {
    return where->emitError("no memory plan for ")
           << what << ": run the plan-memory phase (--trainc-plan-memory) "
           << "before writing an executable";
  };
  auto sizes = fn->getAttrOfType<DenseI64ArrayAttr>(plan::kArenaSizes);
  auto peak = fn->getAttrOfType<DictionaryAttr>(plan::kPeak);
  if (!sizes || sizes.size() != 2 || !peak)
    return missing(fn, "@main");
  report.stateArena = sizes[0];
  report.workArena = sizes[1];
  bool complete = true;
  forEachField(report, [&](StringRef name, uint64_t &value) {
    auto attr = peak.getAs<IntegerAttr>(name);
    complete &= bool(attr);
    value = attr ? attr.getInt() : 0;
  });
  if (!complete)
    return missing(fn, "@main's plan.peak");
  auto setSlot = [&](ProgramTensor &t, DictionaryAttr attrs) {
    auto arena = attrs ? attrs.getAs<IntegerAttr>(plan::kArena) : nullptr;
    auto offset = attrs ? attrs.getAs<IntegerAttr>(plan::kOffset) : nullptr;
    if (!arena || !offset)
      return false;
    t.arena = arena.getInt();
    t.offset = offset.getInt();
    return true;
  };
  for (BlockArgument arg : fn.getArguments())
    if (!setSlot(program.tensors[program.ids.lookup(arg)],
                 fn.getArgAttrDict(arg.getArgNumber())))
      return missing(fn, "argument " + std::to_string(arg.getArgNumber()));
  aliasInstructions.assign(program.instructions.size(), false);
  for (auto [i, inst] : llvm::enumerate(program.instructions)) {
    if (!inst.op) {
      if (!setSlot(program.tensors[inst.results[0]],
                   fn.getResultAttrDict(inst.resultIndex)))
        return missing(fn, "result " + std::to_string(inst.resultIndex));
      continue;
    }
    auto arenas = inst.op->getAttrOfType<DenseI64ArrayAttr>(plan::kArenas);
    auto offsets = inst.op->getAttrOfType<DenseI64ArrayAttr>(plan::kOffsets);
    if (!arenas || !offsets || arenas.size() != int64_t(inst.results.size()) ||
        offsets.size() != int64_t(inst.results.size()))
      return missing(inst.op, "this op");
    for (auto [k, id] : llvm::enumerate(inst.results)) {
      program.tensors[id].arena = arenas[k];
      program.tensors[id].offset = offsets[k];
    }
    aliasInstructions[i] = inst.op->hasAttr(plan::kAlias);
  }
  return success();
}

} // namespace trainc
