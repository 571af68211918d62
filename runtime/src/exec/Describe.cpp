//===- Describe.cpp - Executables and profiles as text --------------------===//
//
// See Describe.h.
//
//===----------------------------------------------------------------------===//

#include "exec/Describe.h"
#include "math/FusedProgram.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>

namespace trainc {
namespace {

/// Appends printf-formatted text to `out`.
__attribute__((format(printf, 2, 3))) void appendf(std::string &out,
                                                   const char *format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  if (n < 0)
    return;
  if (size_t(n) < sizeof buf) {
    out.append(buf, size_t(n));
    return;
  }
  std::string big(size_t(n) + 1, '\0');
  va_start(args, format);
  std::vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  out.append(big.data(), size_t(n));
}

/// A fused loop's program as text, "r2 = convert.f32(r0); r3 =
/// add.f32(r1, r2) -> r3", then each broadcast operand's dims ("; r1
/// spans [1]"), or "" when it does not decode (the loader rejects such
/// files; this is for text only).
std::string fusedProgramText(const Executable &exe,
                             const InstructionInfo &inst) {
  DType inputs[kFusedMaxInputs], results[kFusedMaxResults];
  int ranks[kFusedMaxInputs];
  if (inst.operands.size() > size_t(kFusedMaxInputs) ||
      inst.results.size() > size_t(kFusedMaxResults) || inst.results.empty())
    return "";
  for (size_t i = 0; i < inst.operands.size(); ++i) {
    inputs[i] = exe.tensors()[inst.operands[i]].dtype;
    ranks[i] = int(exe.tensors()[inst.operands[i]].shape.size());
  }
  for (size_t i = 0; i < inst.results.size(); ++i)
    results[i] = exe.tensors()[inst.results[i]].dtype;
  int resultRank = int(exe.tensors()[inst.results[0]].shape.size());
  math::FusedProgram program;
  if (!math::decodeFusedProgram(inst.ints.data(), int64_t(inst.ints.size()),
                                inputs, ranks, int(inst.operands.size()),
                                results, int(inst.results.size()), resultRank,
                                program)
           .empty())
    return "";
  std::string text;
  for (int k = 0; k < program.numSteps; ++k) {
    const math::FusedStep &step = program.steps[k];
    text += (k ? "; r" : "r") + std::to_string(program.numInputs + k) + " = " +
            opcodeName(step.op) + "." + dtypeName(step.dtype) + "(";
    for (int j = 0; j < math::fusedStepArity(step.op); ++j)
      text += (j ? ", r" : "r") + std::to_string(step.operand[j]);
    text += ")";
  }
  text += " ->";
  for (int r = 0; r < program.numResults; ++r)
    text += " r" + std::to_string(program.results[r]);
  const std::vector<int64_t> &shape = exe.tensors()[inst.results[0]].shape;
  for (int r = 0; program.hasDims && r < program.numInputs; ++r) {
    if (ranks[r] == 0 || exe.tensors()[inst.operands[r]].shape == shape)
      continue;
    text += "; r" + std::to_string(r) + " spans [";
    bool first = true;
    for (int d = 0; d < resultRank; ++d)
      if (program.operandDims[r] >> d & 1) {
        text += (first ? "" : ", ") + std::to_string(d);
        first = false;
      }
    text += "]";
  }
  return text;
}

/// The ops of a fused loop's steps, "convert,add" ("" if it does not
/// decode).
std::string fusedStepNames(const InstructionInfo &inst) {
  std::string names;
  if (inst.ints.empty())
    return names;
  int64_t steps = inst.ints[0];
  for (int64_t k = 0; k < steps; ++k) {
    size_t at = size_t(1 + k * kFusedStepInts);
    if (at >= inst.ints.size() || !isOpcode(uint32_t(inst.ints[at])))
      return "";
    names += (k ? "," : "") + std::string(opcodeName(Opcode(inst.ints[at])));
  }
  return names;
}

} // namespace

const char *roleName(TensorRole role) {
  switch (role) {
  case TensorRole::Input:
    return "input";
  case TensorRole::Output:
    return "output";
  case TensorRole::Parameter:
    return "parameter";
  case TensorRole::Constant:
    return "constant";
  case TensorRole::Activation:
    return "activation";
  case TensorRole::State:
    return "state";
  }
  return "?";
}

std::string describeExecutable(const Executable &exe) {
  std::string out;
  appendf(out, "executable %s\n  source: %s\n  command: %s\n",
          exe.origin().c_str(), exe.source().c_str(), exe.command().c_str());
  const MemoryPlanInfo &m = exe.memoryPlan();
  appendf(out,
          "memory plan: parameters %llu, persistent state %llu, "
          "activations %llu, temporaries %llu, workspace %llu, peak %llu "
          "bytes\nconstant section: offset %llu, %llu bytes\n",
          (unsigned long long)m.parameters,
          (unsigned long long)m.persistentState,
          (unsigned long long)m.activations, (unsigned long long)m.temporaries,
          (unsigned long long)m.workspace, (unsigned long long)m.peak,
          (unsigned long long)exe.constantsOffset(),
          (unsigned long long)exe.constantsSize());
  for (const ArenaInfo &a : exe.arenas())
    appendf(out, "arena %-6s %llu bytes\n", a.name.c_str(),
            (unsigned long long)a.size);
  if (!exe.mesh().empty()) {
    std::string mesh;
    for (const MeshAxisInfo &axis : exe.mesh())
      mesh += (mesh.empty() ? "" : ", ") + axis.name + "=" +
              std::to_string(axis.size);
    appendf(out, "mesh: %s (%lld ranks; shapes are one rank's part)\n",
            mesh.c_str(), (long long)exe.numRanks());
  }
  appendf(out, "tensors (%zu):\n", exe.tensors().size());
  for (size_t i = 0; i < exe.tensors().size(); ++i) {
    const TensorInfo &t = exe.tensors()[i];
    std::string where =
        t.role == TensorRole::Constant
            ? "constants+" + std::to_string(t.offset)
            : exe.arenas()[t.arena].name + "+" + std::to_string(t.offset);
    // Split dimensions: "data" after the tensor, one entry per dimension.
    std::string split;
    for (size_t d = 0; d < t.shardAxes.size(); ++d)
      split += std::string(d ? ", " : " split [") +
               (t.shardAxes[d] < 0 ? "-" : exe.mesh()[t.shardAxes[d]].name);
    if (!split.empty())
      split += "]";
    appendf(out, "  %%%zu %-10s %-5s %-18s %-26s %s%s\n", i, roleName(t.role),
            dtypeName(t.dtype), shapeString(t.shape).c_str(), where.c_str(),
            t.name.c_str(), split.c_str());
  }
  appendf(out, "instructions (%zu):\n", exe.instructions().size());
  for (size_t i = 0; i < exe.instructions().size(); ++i) {
    const InstructionInfo &inst = exe.instructions()[i];
    std::string line = "  " + std::to_string(i) + ": ";
    for (size_t r = 0; r < inst.results.size(); ++r)
      line += (r ? ", %" : "%") + std::to_string(inst.results[r]);
    line += std::string(" = ") + opcodeName(inst.op) + "(";
    for (size_t o = 0; o < inst.operands.size(); ++o)
      line += (o ? ", %" : "%") + std::to_string(inst.operands[o]);
    line += ")";
    std::string program = inst.op == Opcode::FusedElementwise
                              ? fusedProgramText(exe, inst)
                              : std::string();
    if (!program.empty()) {
      line += " { " + program + " }";
    } else if (!inst.ints.empty()) {
      line += " ints=[";
      for (size_t k = 0; k < inst.ints.size(); ++k)
        line += (k ? ", " : "") + std::to_string(inst.ints[k]);
      line += "]";
    }
    if (!inst.floats.empty()) {
      line += " floats=[";
      for (size_t k = 0; k < inst.floats.size(); ++k) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%s%g", k ? ", " : "", inst.floats[k]);
        line += buf;
      }
      line += "]";
    }
    out += line + "\n";
  }
  return out;
}

std::string profileReport(const Session &session, size_t runs) {
  std::string out;
  const Executable &exe = session.executable();
  const std::vector<double> &seconds = session.instructionSeconds();
  double total = 0;
  std::map<std::string, std::pair<double, int>> byOp;
  for (size_t i = 0; i < seconds.size(); ++i) {
    total += seconds[i];
    auto &entry = byOp[opcodeName(exe.instructions()[i].op)];
    entry.first += seconds[i];
    ++entry.second;
  }
  if (runs == 0)
    runs = size_t(session.profiledRuns());
  if (total <= 0 || runs == 0)
    return out;
  std::vector<std::pair<double, std::string>> ops;
  for (auto &[name, entry] : byOp)
    ops.push_back({entry.first, name});
  std::sort(ops.rbegin(), ops.rend());
  appendf(out, "profile: %.3f ms per run in %zu instructions%s\n",
          total / runs * 1e3, seconds.size(),
          session.profileSkipsFirstRun()
              ? " (the first run left out: one-time costs)"
              : "");
  for (auto &[t, name] : ops)
    appendf(out, "  %-24s %9.3f ms %5.1f%%  (%d instructions)\n", name.c_str(),
            t / runs * 1e3, 100 * t / total, byOp[name].second);
  // Instructions of one op on operands of the same shapes, slowest first.
  std::map<std::string, std::pair<double, int>> groups;
  for (size_t i = 0; i < seconds.size(); ++i) {
    const InstructionInfo &inst = exe.instructions()[i];
    std::string key = opcodeName(inst.op);
    if (inst.op == Opcode::FusedElementwise)
      key += "[" + fusedStepNames(inst) + "]";
    key += "(";
    // A multi-tensor op's first operands, then their count.
    constexpr size_t kShown = 6;
    for (size_t o = 0; o < std::min(inst.operands.size(), kShown); ++o) {
      const TensorInfo &t = exe.tensors()[inst.operands[o]];
      key += (o ? ", " : "") + std::string(dtypeName(t.dtype)) +
             shapeString(t.shape);
    }
    if (inst.operands.size() > kShown)
      key += ", ... " + std::to_string(inst.operands.size()) + " operands";
    key += ")";
    groups[key].first += seconds[i];
    ++groups[key].second;
  }
  std::vector<std::pair<double, std::string>> slowest;
  for (auto &[key, entry] : groups)
    slowest.push_back({entry.first, key});
  std::sort(slowest.rbegin(), slowest.rend());
  appendf(out, "slowest instructions, by op and operand shapes:\n");
  for (size_t k = 0; k < std::min<size_t>(20, slowest.size()); ++k)
    appendf(out, "  %9.3f ms  %3dx %s\n", slowest[k].first / runs * 1e3,
            groups[slowest[k].second].second, slowest[k].second.c_str());
  return out;
}

} // namespace trainc
