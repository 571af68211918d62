//===- RunTool.cpp - The trainc-run command line --------------------------===//
//
// trainc-run model.tcx --input NAME=FILE ... [--output-dir DIR]
// Runs an executable on the CPU device with inputs from .npy files (dtype
// and shape checked) or raw files (size checked), and writes every output
// as DIR/<name>.npy. --inspect prints the executable instead.
//
//===----------------------------------------------------------------------===//

#include "tools/RunTool.h"

#include "exec/Session.h"
#include "io/Npy.h"
#include "io/SafeTensors.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace trainc {
namespace {

constexpr const char *kUsage = R"(Usage: trainc-run MODEL.tcx [options]

Runs a trainc executable on the CPU and writes its outputs as .npy files.

Options:
  --input NAME=FILE   value of input NAME: a .npy file (dtype and shape must
                      match the executable) or raw little-endian bytes of
                      exactly the input's size; repeat for every input
  --output-dir DIR    where to write <output name>.npy (default: .)
  --repeat N          run N times and report the median run time (default 1)
  --steps N           training: run N steps (parameters and optimizer state
                      carry over), printing each step's scalar outputs
                      (loss, grad_norm, lr)
  --save-state DIR    after the last run, write every parameter and
                      optimizer state as DIR/<name>.npy
  --save-safetensors FILE
                      after the last run, write the parameters (the trained
                      weights, by their model names) as a .safetensors file
  --check-writes      debug mode: verify that no kernel writes outside its
                      result buffers (slow)
  --inspect           print the executable's tensors, instructions and
                      memory plan, and exit
  -h, --help          show this help
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "trainc-run: error: %s\n", message.c_str());
  return 1;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const char *roleName(TensorRole role) {
  switch (role) {
  case TensorRole::kInput:
    return "input";
  case TensorRole::kOutput:
    return "output";
  case TensorRole::kParameter:
    return "parameter";
  case TensorRole::kConstant:
    return "constant";
  case TensorRole::kActivation:
    return "activation";
  case TensorRole::kState:
    return "state";
  }
  return "?";
}

void inspect(const Executable &exe) {
  std::printf("executable %s\n  source: %s\n  command: %s\n",
              exe.origin().c_str(), exe.source().c_str(),
              exe.command().c_str());
  const MemoryPlanInfo &m = exe.memoryPlan();
  std::printf(
      "memory plan: parameters %llu, persistent state %llu, "
      "activations %llu, temporaries %llu, workspace %llu, peak %llu "
      "bytes\nconstant section: offset %llu, %llu bytes\n",
      (unsigned long long)m.parameters, (unsigned long long)m.persistentState,
      (unsigned long long)m.activations, (unsigned long long)m.temporaries,
      (unsigned long long)m.workspace, (unsigned long long)m.peak,
      (unsigned long long)exe.constantsOffset(),
      (unsigned long long)exe.constantsSize());
  for (const ArenaInfo &a : exe.arenas())
    std::printf("arena %-6s %llu bytes\n", a.name.c_str(),
                (unsigned long long)a.size);
  std::printf("tensors (%zu):\n", exe.tensors().size());
  for (size_t i = 0; i < exe.tensors().size(); ++i) {
    const TensorInfo &t = exe.tensors()[i];
    std::string where =
        t.role == TensorRole::kConstant
            ? "constants+" + std::to_string(t.offset)
            : exe.arenas()[t.arena].name + "+" + std::to_string(t.offset);
    std::printf("  %%%zu %-10s %-5s %-18s %-26s %s\n", i, roleName(t.role),
                dtypeName(t.dtype), shapeString(t.shape).c_str(), where.c_str(),
                t.name.c_str());
  }
  std::printf("instructions (%zu):\n", exe.instructions().size());
  for (size_t i = 0; i < exe.instructions().size(); ++i) {
    const InstructionInfo &inst = exe.instructions()[i];
    std::string line = "  " + std::to_string(i) + ": ";
    for (size_t r = 0; r < inst.results.size(); ++r)
      line += (r ? ", %" : "%") + std::to_string(inst.results[r]);
    line += std::string(" = ") + cpu::opcodeName(inst.op) + "(";
    for (size_t o = 0; o < inst.operands.size(); ++o)
      line += (o ? ", %" : "%") + std::to_string(inst.operands[o]);
    line += ")";
    if (!inst.ints.empty()) {
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
    std::printf("%s\n", line.c_str());
  }
}

/// Loads the bytes for input `index` from `file`.
Status loadInput(const Executable &exe, size_t index, const std::string &file,
                 std::vector<char> &bytes) {
  const TensorInfo &t = exe.tensors()[exe.inputs()[index]];
  if (file.size() > 4 && file.compare(file.size() - 4, 4, ".npy") == 0) {
    NpyArray array;
    TRAINC_RETURN_IF_ERROR(readNpy(file, array));
    if (array.dtype != t.dtype || array.shape != t.shape)
      return invalidArgument(file + " holds " + dtypeName(array.dtype) + " " +
                             shapeString(array.shape) + " but input '" +
                             t.name + "' is " + dtypeName(t.dtype) + " " +
                             shapeString(t.shape));
    bytes = std::move(array.data);
    return okStatus();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return notFound(file + ": cannot open");
  bytes.assign(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
  if (bytes.size() != t.size)
    return invalidArgument(file + " has " + std::to_string(bytes.size()) +
                           " bytes but input '" + t.name + "' (" +
                           dtypeName(t.dtype) + " " + shapeString(t.shape) +
                           ") needs " + std::to_string(t.size));
  return okStatus();
}

/// A file name for an output: its name with path separators replaced.
std::string fileNameFor(const std::string &name) {
  std::string s = name;
  for (char &c : s)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return s.empty() ? "output" : s;
}

} // namespace

int runRunTool(int argc, char **argv) {
  std::string model, outputDir = ".", saveStateDir, safetensorsPath;
  bool printSteps = false;
  std::map<std::string, std::string> inputFiles;
  bool doInspect = false, checkWrites = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      if (i + 1 >= argc) {
        fail(std::string(flag) + " needs a value");
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--input") {
      const char *v = value("--input");
      if (!v)
        return 1;
      std::string spec = v;
      size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
        return fail("--input '" + spec + "': expected NAME=FILE");
      if (!inputFiles.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
        return fail("--input gives '" + spec.substr(0, eq) + "' twice");
    } else if (arg == "--output-dir") {
      const char *v = value("--output-dir");
      if (!v)
        return 1;
      outputDir = v;
    } else if (arg == "--repeat") {
      const char *v = value("--repeat");
      if (!v)
        return 1;
      repeat = std::atoi(v);
      if (repeat < 1)
        return fail("--repeat needs a positive count");
    } else if (arg == "--steps") {
      const char *v = value("--steps");
      if (!v)
        return 1;
      repeat = std::atoi(v);
      printSteps = true;
      if (repeat < 1)
        return fail("--steps needs a positive count");
    } else if (arg == "--save-state") {
      const char *v = value("--save-state");
      if (!v)
        return 1;
      saveStateDir = v;
    } else if (arg == "--save-safetensors") {
      const char *v = value("--save-safetensors");
      if (!v)
        return 1;
      safetensorsPath = v;
    } else if (arg == "--check-writes") {
      checkWrites = true;
    } else if (arg == "--inspect") {
      doInspect = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see trainc-run --help)");
    } else if (model.empty()) {
      model = arg;
    } else {
      return fail("more than one executable given ('" + model + "', '" + arg +
                  "')");
    }
  }
  if (model.empty())
    return fail("no executable given (see trainc-run --help)");

  std::unique_ptr<Executable> loaded;
  Status status = Executable::load(model, loaded);
  if (!status.ok())
    return fail(status.toString());
  std::shared_ptr<const Executable> exe = std::move(loaded);
  if (doInspect) {
    inspect(*exe);
    return 0;
  }

  SessionOptions options;
  options.checkWrites = checkWrites;
  std::unique_ptr<Session> session;
  status = Session::create(exe, options, session);
  if (!status.ok())
    return fail(status.toString());
  for (size_t i = 0; i < exe->inputs().size(); ++i) {
    const std::string &name = exe->tensors()[exe->inputs()[i]].name;
    auto it = inputFiles.find(name);
    if (it == inputFiles.end())
      return fail("input '" + name + "' is missing: give it with --input " +
                  name + "=FILE");
    std::vector<char> bytes;
    status = loadInput(*exe, i, it->second, bytes);
    if (status.ok())
      status = session->setInput(i, bytes.data(), bytes.size());
    if (!status.ok())
      return fail(status.toString());
    inputFiles.erase(it);
  }
  if (!inputFiles.empty())
    return fail("--input names '" + inputFiles.begin()->first +
                "', which is not an input of the executable");

  std::vector<double> times;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    status = session->run();
    if (!status.ok())
      return fail(status.toString());
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
    if (printSteps) {
      std::printf("step %d:", r + 1);
      for (size_t i = 0; i < exe->outputs().size(); ++i) {
        const TensorInfo &t = exe->tensors()[exe->outputs()[i]];
        if (t.shape.empty() && t.dtype == DType::kF32)
          std::printf(" %s %.9g", t.name.c_str(),
                      *static_cast<float *>(session->output(i).data));
        else if (t.shape.empty() && t.dtype == DType::kF64)
          std::printf(" %s %.17g", t.name.c_str(),
                      *static_cast<double *>(session->output(i).data));
      }
      std::printf("\n");
    }
  }
  if (!saveStateDir.empty()) {
    for (uint32_t id = 0; id < exe->tensors().size(); ++id) {
      const TensorInfo &t = exe->tensors()[id];
      if (t.role != TensorRole::kParameter && t.role != TensorRole::kState)
        continue;
      status = writeNpy(saveStateDir + "/" + fileNameFor(t.name) + ".npy",
                        t.dtype, t.shape, session->tensorData(id), t.size);
      if (!status.ok())
        return fail(status.toString());
    }
  }
  std::sort(times.begin(), times.end());

  if (!safetensorsPath.empty()) {
    std::vector<NamedTensor> weights;
    for (uint32_t id : exe->parameters()) {
      const TensorInfo &t = exe->tensors()[id];
      weights.push_back(
          {t.name, t.dtype, t.shape, session->tensorData(id), size_t(t.size)});
    }
    status = writeSafetensors(safetensorsPath, weights);
    if (!status.ok())
      return fail(status.toString());
    std::printf("parameters: %zu tensors -> %s\n", weights.size(),
                safetensorsPath.c_str());
  }
  for (size_t i = 0; i < exe->outputs().size(); ++i) {
    const TensorInfo &t = exe->tensors()[exe->outputs()[i]];
    cpu::TensorRef out = session->output(i);
    std::string path = outputDir + "/" + fileNameFor(t.name) + ".npy";
    status = writeNpy(path, t.dtype, t.shape, out.data, t.size);
    if (!status.ok())
      return fail(status.toString());
    std::printf("%s: %s %s -> %s", t.name.c_str(), dtypeName(t.dtype),
                shapeString(t.shape).c_str(), path.c_str());
    if (t.shape.empty() && t.dtype == DType::kF32)
      std::printf(" = %.9g", *static_cast<float *>(out.data));
    else if (t.shape.empty() && t.dtype == DType::kF64)
      std::printf(" = %.17g", *static_cast<double *>(out.data));
    std::printf("\n");
  }
  std::printf("run: median %.3f ms over %d run(s); memory peak planned %llu, "
              "measured %llu bytes\n",
              times[times.size() / 2], repeat,
              (unsigned long long)exe->memoryPlan().peak,
              (unsigned long long)session->measuredPeak());
  return 0;
}

} // namespace trainc
