//===- MemoryPlan.cpp - The memory plan as attributes of the IR -----------===//
//
// See MemoryPlan.h.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/MemoryPlan.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"

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
