//===- ExecutableWriter.cpp - The serializer: IR to a trainc executable ---===//
//
// See ExecutableWriter.h. Everything is decided by the phases before it:
// the instructions are @main's ops (Program.h), the arenas and offsets are
// the plan-memory phase's attributes; this file only writes the FlatBuffer
// and the constant section.
//
//===----------------------------------------------------------------------===//

#include "trainc/Compiler/ExecutableWriter.h"

#include "trainc/Compiler/MemoryPlan.h"
#include "trainc/Compiler/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"

using namespace mlir;

namespace trainc {
namespace {

std::vector<char> serialize(const Program &program,
                            const std::vector<bool> &aliasInstructions,
                            const WriterOptions &options,
                            const MemoryPlanReport &report) {
  const std::vector<ProgramTensor> &tensors = program.tensors;
  const ConstantSection &constants = program.constants;
  // Updates written in place (the plan put the new value in its target's
  // bytes) need no copy after the run.
  std::vector<std::pair<uint32_t, uint32_t>> updates;
  for (auto [result, target] : program.updates)
    if (tensors[result].arena != kStateArena)
      updates.push_back({result, target});
  // Built twice: the first pass measures the FlatBuffer so the second can
  // record where the (64-byte aligned) constant section starts. Defaults
  // are forced so both passes have the same size.
  auto build = [&](uint64_t constantsOffset) {
    flatbuffers::FlatBufferBuilder b(1 << 16);
    b.ForceDefaults(true);
    std::vector<flatbuffers::Offset<fb::Tensor>> fbTensors;
    for (const ProgramTensor &t : tensors) {
      std::vector<int64_t> shape(t.type.getShape().begin(),
                                 t.type.getShape().end());
      fbTensors.push_back(fb::CreateTensorDirect(
          b, t.name.c_str(), t.role, *dtypeOf(t.type.getElementType()), &shape,
          t.arena, t.offset, t.bytes(), t.initOffset,
          t.shardAxes.empty() ? nullptr : &t.shardAxes,
          t.globalShape.empty() ? nullptr : &t.globalShape, t.splat));
    }
    std::vector<flatbuffers::Offset<fb::Instruction>> fbInsts;
    for (auto [index, i] : llvm::enumerate(program.instructions)) {
      // Reshapes and prefix slices that alias their operand move no data.
      if (aliasInstructions[index])
        continue;
      fbInsts.push_back(fb::CreateInstructionDirect(
          b, static_cast<uint16_t>(i.opcode), &i.operands, &i.results, &i.ints,
          &i.floats));
    }
    std::vector<flatbuffers::Offset<fb::Arena>> arenas = {
        fb::CreateArenaDirect(b, "state", report.stateArena, kTensorAlignment),
        fb::CreateArenaDirect(b, "work", report.workArena, kTensorAlignment)};
    auto memory = fb::CreateMemoryPlan(
        b, report.parameters, report.persistentState, report.activations,
        report.temporaries, report.workspace, report.peak);
    auto opts = fb::CreateCompileOptionsDirect(
        b, "trainc 0.1.0", options.source.c_str(), options.command.c_str());
    std::vector<flatbuffers::Offset<fb::Update>> fbUpdates;
    for (auto [result, target] : updates)
      fbUpdates.push_back(fb::CreateUpdate(b, result, target));
    const TrainingSignature &sig = program.signature;
    std::vector<flatbuffers::Offset<fb::Gradient>> gradients;
    for (auto [output, parameter] : sig.gradients)
      gradients.push_back(fb::CreateGradient(b, output, parameter));
    auto signature = fb::CreateTrainingSignatureDirect(
        b, sig.loss, sig.gradNorm, sig.lr, sig.lossScale, sig.stepSkipped,
        sig.tokens, sig.targets, sig.vocabulary, &gradients);
    std::vector<flatbuffers::Offset<fb::MeshAxis>> mesh;
    for (const auto &[name, size] : program.mesh)
      mesh.push_back(fb::CreateMeshAxisDirect(b, name.c_str(), uint32_t(size)));
    auto exe = fb::CreateExecutableDirect(
        b, kFormatVersion, opts, &fbTensors, &arenas, &fbInsts, &program.inputs,
        &program.outputs, &program.parameters, constantsOffset,
        constants.size(), memory, &fbUpdates, program.flops, signature, &mesh);
    fb::FinishExecutableBuffer(b, exe);
    return std::vector<char>(b.GetBufferPointer(),
                             b.GetBufferPointer() + b.GetSize());
  };
  uint64_t offset = alignUp(build(0).size());
  std::vector<char> bytes = build(offset);
  bytes.resize(offset, 0);
  return bytes;
}

/// Creates, exclusively, a new file `path.tmp-XXXXXXXX` (random hex) for
/// writing, beside `path` so that a rename can replace it. Not
/// TempFile::create: it reads every '%' of its model as a random digit,
/// and a user's `path` may hold some.
std::error_code createTempBeside(StringRef path, std::string &tempPath,
                                 int &fd) {
  std::error_code ec;
  for (int attempt = 0; attempt < 128; ++attempt) {
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), ".tmp-%08x",
                  llvm::sys::Process::GetRandomNumber());
    tempPath = (path + suffix).str();
    ec = llvm::sys::fs::openFileForWrite(tempPath, fd,
                                         llvm::sys::fs::CD_CreateNew);
    if (ec != std::errc::file_exists)
      return ec;
  }
  return ec;
}

} // namespace

LogicalResult writeExecutable(ModuleOp module, StringRef path,
                              const WriterOptions &options,
                              MemoryPlanReport &report) {
  auto fn = module.lookupSymbol<func::FuncOp>("main");
  if (!fn)
    return module.emitError("no function @main to compile");
  FailureOr<Program> program = Program::build(fn, /*withConstantData=*/true);
  if (failed(program))
    return failure();
  std::vector<bool> alias;
  if (failed(readMemoryPlan(fn, *program, alias, report)))
    return failure();
  report.constants = program->constants.size();
  accountTrainingState(*program, report);
  // The FlatBuffer (padded to the constant section's offset), then the
  // constants straight from the program: no second copy of the weights in
  // memory. Written to a temporary file renamed over `path` once complete,
  // so a failure (a full disk) leaves no truncated executable behind.
  std::vector<char> header = serialize(*program, alias, options, report);
  std::string tempPath;
  int fd = -1;
  if (std::error_code ec = createTempBeside(path, tempPath, fd))
    return module.emitError("cannot write ") << path << ": " << ec.message();
  llvm::sys::RemoveFileOnSignal(tempPath);
  std::string error;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(header.data(), header.size());
    program->constants.write(os);
    os.close();
    if (os.has_error()) {
      error = os.error().message();
      os.clear_error();
    }
  }
  std::error_code renamed;
  if (error.empty())
    renamed = llvm::sys::fs::rename(tempPath, path);
  if (!error.empty() || renamed) {
    llvm::sys::fs::remove(tempPath);
    llvm::sys::DontRemoveFileOnSignal(tempPath);
    return module.emitError("cannot write ")
           << path << ": " << (error.empty() ? renamed.message() : error);
  }
  llvm::sys::DontRemoveFileOnSignal(tempPath);
  return success();
}

} // namespace trainc
