//===- ExecutableTest.cpp - Loading, validating and running executables ---===//
//
// Builds small executables with the schema's generated builder (as the
// compiler does) and checks what the loader accepts, what it rejects with
// which message, and that a session runs the program on the CPU. Each
// opcode's instruction rules: ValidateInstructionTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "base/DType.h"
#include "base/Utf8.h"
#include "cpu/Kernels.h"
#include "exec/Session.h"
#include "io/Json.h"
#include "trainc/schema/executable_generated.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace trainc {
namespace {

/// A program y = a + b over f32[2, 3], with knobs to break it.
struct TinyProgram {
  uint32_t formatVersion = kFormatVersion;
  fb::DType dtype = fb::DType::F32;
  uint64_t workArenaSize = 3 * 64;
  uint64_t yOffset = 128;
  fb::TensorRole yRole = fb::TensorRole::Output;
  std::vector<uint32_t> operands = {0, 1};
  uint16_t opcode = static_cast<uint16_t>(Opcode::Add);
  std::vector<uint32_t> outputs = {2};
  std::vector<int64_t> ints;
  std::vector<double> floats;
  /// The tensors' shape (6 elements) and the mesh's axes (none: one rank).
  std::vector<int64_t> shape = {2, 3};
  std::vector<std::pair<std::string, uint32_t>> mesh;
  /// The training signature's loss output and tokens input (-1: none), and
  /// whether to write a signature at all.
  int lossOutput = -1, tokensInput = -1;
  bool withSignature = false;
  std::string firstName = "a";
  /// A second result: tensor 3, an i1 output of the same shape (a
  /// dropout's mask).
  bool withMask = false;

  std::vector<char> build() const {
    flatbuffers::FlatBufferBuilder b;
    b.ForceDefaults(true);
    uint64_t bytes = 6 * dtypeSize(dtype);
    std::vector<flatbuffers::Offset<fb::Tensor>> tensors = {
        fb::CreateTensorDirect(b, firstName.c_str(), fb::TensorRole::Input,
                               dtype, &shape, 0, 0, bytes),
        fb::CreateTensorDirect(b, "b", fb::TensorRole::Input, dtype, &shape, 0,
                               64, bytes),
        fb::CreateTensorDirect(b, "y", yRole, dtype, &shape, 0, yOffset,
                               bytes)};
    std::vector<uint32_t> results = {2};
    if (withMask) {
      tensors.push_back(fb::CreateTensorDirect(
          b, "mask", fb::TensorRole::Output, fb::DType::I1, &shape, 0, 160, 6));
      results.push_back(3);
    }
    std::vector<flatbuffers::Offset<fb::Instruction>> insts = {
        fb::CreateInstructionDirect(b, opcode, &operands, &results, &ints,
                                    &floats)};
    std::vector<flatbuffers::Offset<fb::Arena>> arenas = {
        fb::CreateArenaDirect(b, "work", workArenaSize, 64)};
    std::vector<uint32_t> inputs = {0, 1}, params;
    flatbuffers::Offset<fb::TrainingSignature> signature;
    if (withSignature)
      signature = fb::CreateTrainingSignatureDirect(
          b, lossOutput, -1, -1, -1, -1, tokensInput, -1, 0, nullptr);
    std::vector<flatbuffers::Offset<fb::MeshAxis>> axes;
    for (const auto &[name, size] : mesh)
      axes.push_back(fb::CreateMeshAxisDirect(b, name.c_str(), size));
    auto exe = fb::CreateExecutableDirect(
        b, formatVersion, 0, &tensors, &arenas, &insts, &inputs, &outputs,
        &params, 0, 0, 0, nullptr, 0, signature,
        mesh.empty() ? nullptr : &axes);
    fb::FinishExecutableBuffer(b, exe);
    return std::vector<char>(b.GetBufferPointer(),
                             b.GetBufferPointer() + b.GetSize());
  }
};

Status load(const TinyProgram &p, std::unique_ptr<Executable> &out) {
  return Executable::fromBytes(p.build(), "tiny.tcx", out);
}

TEST(Executable, RunsAProgram) {
  std::unique_ptr<Executable> exe;
  ASSERT_TRUE(load(TinyProgram(), exe).ok());
  std::unique_ptr<Session> session;
  SessionOptions options;
  options.checkWrites = true;
  ASSERT_TRUE(Session::create(std::move(exe), options, session).ok());
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
  EXPECT_EQ(session->run().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(session->setInput(0, a, sizeof a).ok());
  EXPECT_EQ(session->setInput(1, b, 8).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(session->setInput(1, b, sizeof b).ok());
  Status s = session->run();
  ASSERT_TRUE(s.ok()) << s.toString();
  const float *y = session->output(0).as<float>();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y[i], a[i] + b[i]);
  EXPECT_EQ(session->measuredPeak(), 128u + 24u);
}

TEST(Executable, RejectsOtherFormatVersions) {
  TinyProgram p;
  p.formatVersion = 99;
  std::unique_ptr<Executable> exe;
  Status s = load(p, exe);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("format version 99, but this runtime reads "
                             "version " +
                             std::to_string(kFormatVersion)),
            std::string::npos)
      << s.toString();
}

TEST(Executable, RejectsForeignAndTruncatedBytes) {
  std::unique_ptr<Executable> exe;
  std::vector<char> text(64, 'x');
  Status s = Executable::fromBytes(text, "notes.txt", exe);
  EXPECT_NE(s.message().find("not a trainc executable"), std::string::npos)
      << s.toString();
  std::vector<char> bytes = TinyProgram().build();
  bytes.resize(bytes.size() / 2);
  s = Executable::fromBytes(bytes, "half.tcx", exe);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("half.tcx"), std::string::npos) << s.toString();
}

TEST(Executable, RejectsTensorsOutsideTheirArena) {
  TinyProgram p;
  p.yOffset = 180;
  std::unique_ptr<Executable> exe;
  Status s = load(p, exe);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("'y' lies outside its arena"), std::string::npos)
      << s.toString();
}

TEST(Executable, RejectsImpossibleArenasAndMisroledLists) {
  TinyProgram hugeArena;
  hugeArena.workArenaSize = ~uint64_t(0);
  std::unique_ptr<Executable> exe;
  Status s = load(hugeArena, exe);
  EXPECT_NE(s.message().find("impossible size"), std::string::npos)
      << s.toString();

  // The output list naming an input (a writable role check would miss it).
  TinyProgram outputIsInput;
  outputIsInput.yRole = fb::TensorRole::Activation;
  s = load(outputIsInput, exe);
  EXPECT_NE(s.message().find("does not have that role"), std::string::npos)
      << s.toString();
}

// Names end up in checkpoints' JSON and safetensors headers: one that is
// not UTF-8 is refused at load, not thrown on at the first save.
TEST(Executable, RejectsNamesThatAreNotUtf8) {
  std::unique_ptr<Executable> exe;
  TinyProgram p;
  p.firstName = "ln_f.bi\xe9s";
  Status s = load(p, exe);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("tensor 0's name is not valid UTF-8 (byte 7 of "
                             "'ln_f.bi...')"),
            std::string::npos)
      << s.toString();
  p.firstName = "ln_f.bi\xc3\xa9s"; // the same name in UTF-8
  EXPECT_TRUE(load(p, exe).ok());
}

TEST(Utf8, AcceptsWellFormedTextOnly) {
  EXPECT_TRUE(isUtf8(""));
  EXPECT_TRUE(isUtf8("h.0.attn"));
  EXPECT_TRUE(isUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")); // é € 😀
  EXPECT_TRUE(isUtf8("\xf4\x8f\xbf\xbf"));                     // U+10FFFF
  size_t bad = 0;
  EXPECT_FALSE(isUtf8("ab\xe9", &bad)); // a lone Latin-1 byte
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(isUtf8("\xc0\xaf"));         // overlong '/'
  EXPECT_FALSE(isUtf8("\xe0\x80\xaf"));     // overlong, 3 bytes
  EXPECT_FALSE(isUtf8("\xed\xa0\x80"));     // a surrogate
  EXPECT_FALSE(isUtf8("\xf4\x90\x80\x80")); // above U+10FFFF
  EXPECT_FALSE(isUtf8("\xe2\x82"));         // truncated
  EXPECT_FALSE(isUtf8("\x80"));             // a continuation byte alone
  // JSON writers replace what is not UTF-8 and keep the rest.
  EXPECT_EQ(jsonString("a\xe9\xc3\xa9\""), "\"a\\ufffd\xc3\xa9\\\"\"");
}

TEST(Executable, RejectsMalformedInstructions) {
  std::unique_ptr<Executable> exe;
  TinyProgram wrongArity;
  wrongArity.operands = {0};
  Status s = load(wrongArity, exe);
  EXPECT_NE(s.message().find("instruction 0 (add): expects 2 operands"),
            std::string::npos)
      << s.toString();

  TinyProgram badId;
  badId.operands = {0, 7};
  s = load(badId, exe);
  EXPECT_NE(s.message().find("operand tensor 7 does not exist"),
            std::string::npos)
      << s.toString();

  TinyProgram writesInput;
  writesInput.yRole = fb::TensorRole::Input;
  writesInput.outputs = {};
  s = load(writesInput, exe);
  EXPECT_NE(s.message().find("which is read-only"), std::string::npos)
      << s.toString();

  TinyProgram unknownOpcode;
  unknownOpcode.opcode = 999;
  s = load(unknownOpcode, exe);
  EXPECT_NE(s.message().find("unknown opcode 999"), std::string::npos)
      << s.toString();

  // Dimension counts so large that their sum would wrap around.
  TinyProgram hugeDims;
  hugeDims.opcode = static_cast<uint16_t>(Opcode::DotGeneral);
  hugeDims.ints = {int64_t(1) << 62, int64_t(1) << 62};
  s = load(hugeDims, exe);
  EXPECT_NE(s.message().find("malformed dimension numbers"), std::string::npos)
      << s.toString();

  // dot_general_bias: three operands, the bias of rhs's free dims' shape.
  TinyProgram biasArity;
  biasArity.opcode = static_cast<uint16_t>(Opcode::DotGeneralBias);
  biasArity.ints = {0, 1, 0, 0, 0}; // contract dim 0 with dim 0: [3] x [3]
  s = load(biasArity, exe);
  EXPECT_NE(s.message().find("expects 3 operands"), std::string::npos)
      << s.toString();
  TinyProgram biasShape = biasArity;
  biasShape.operands = {0, 1, 0}; // bias [2, 3], rhs's free dims [3]
  s = load(biasShape, exe);
  EXPECT_NE(s.message().find("the bias must have the shape of rhs's free "
                             "dimensions"),
            std::string::npos)
      << s.toString();

  // The operand rounding, last: a known one, and TF32 only on f32.
  TinyProgram rounding;
  rounding.opcode = static_cast<uint16_t>(Opcode::DotGeneral);
  rounding.ints = {0, 1, 0, 0, 7};
  s = load(rounding, exe);
  EXPECT_NE(s.message().find("unknown operand rounding 7"), std::string::npos)
      << s.toString();
  rounding.ints.back() = int64_t(OperandRounding::Tf32);
  rounding.dtype = fb::DType::BF16;
  s = load(rounding, exe);
  EXPECT_NE(s.message().find("TF32 rounding needs f32 operands"),
            std::string::npos)
      << s.toString();
  rounding.ints.pop_back(); // a version 9 instruction
  s = load(rounding, exe);
  EXPECT_NE(s.message().find("malformed dimension numbers"), std::string::npos)
      << s.toString();
}

// Attention's dropout on a block of the heads names the tensor axis and
// its size (ints[9..10], version 33): both must be the mesh's.
TEST(Executable, RejectsHeadBlocksOffTheMesh) {
  TinyProgram p;
  p.shape = {1, 1, 2, 3};
  p.opcode = static_cast<uint16_t>(Opcode::Attention);
  p.operands = {0, 1, 1};
  p.floats = {0.5, 0.0, 0.1};
  p.mesh = {{"data", 1}, {"tensor", 2}};
  p.ints = {0, 0, 0, 0, 0, 0, 42, 0, 0, 1, 2};
  std::unique_ptr<Executable> exe;
  Status s = load(p, exe);
  ASSERT_TRUE(s.ok()) << s.toString();
  for (auto [axis, blocks] : {std::pair<int64_t, int64_t>{1, 3}, {0, 2}}) {
    TinyProgram bad = p;
    bad.ints[9] = axis;
    bad.ints[10] = blocks;
    s = load(bad, exe);
    EXPECT_EQ(s.code(), StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("instruction 0 (attention) splits its heads "
                               "into " +
                               std::to_string(blocks) +
                               " blocks over mesh "
                               "axis " +
                               std::to_string(axis) +
                               ", which is not an axis of that size"),
              std::string::npos)
        << s.toString();
  }
  TinyProgram noAxis = p;
  noAxis.ints[9] = 2;
  s = load(noAxis, exe);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("blocks over mesh axis 2"), std::string::npos)
      << s.toString();
  // Dropout's operand on a block of one dimension: ints[3..4].
  TinyProgram dropout;
  dropout.opcode = static_cast<uint16_t>(Opcode::Dropout);
  dropout.operands = {0};
  dropout.floats = {0.1};
  dropout.mesh = p.mesh;
  dropout.outputs = {2, 3};
  dropout.withMask = true;
  dropout.ints = {42, 0, 0, 1, 2, 1};
  s = load(dropout, exe);
  ASSERT_TRUE(s.ok()) << s.toString();
  for (auto [axis, blocks] : {std::pair<int64_t, int64_t>{1, 3}, {0, 2}}) {
    TinyProgram bad = dropout;
    bad.ints[3] = axis;
    bad.ints[4] = blocks;
    Status b = load(bad, exe);
    EXPECT_EQ(b.code(), StatusCode::kDataLoss);
    EXPECT_NE(b.message().find("instruction 0 (dropout) splits its operand "
                               "into " +
                               std::to_string(blocks) +
                               " blocks over mesh axis " +
                               std::to_string(axis)),
              std::string::npos)
        << b.toString();
  }
}

// The loader checks the training signature like everything else it reads:
// indices in range, and the loss a float scalar.
TEST(Executable, RejectsABrokenTrainingSignature) {
  std::unique_ptr<Executable> exe;
  TinyProgram none;
  none.withSignature = true;
  ASSERT_TRUE(load(none, exe).ok());
  EXPECT_EQ(exe->signature().loss, -1);

  TinyProgram missing = none;
  missing.lossOutput = 5;
  Status s = load(missing, exe);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("the training signature's loss is output 5, "
                             "which does not exist"),
            std::string::npos)
      << s.toString();

  TinyProgram notScalar = none;
  notScalar.lossOutput = 0; // y is f32 [2, 3]
  s = load(notScalar, exe);
  EXPECT_NE(s.message().find("the training signature's loss tensor 2 'y' "
                             "(f32 [2, 3]) is not a float scalar"),
            std::string::npos)
      << s.toString();

  TinyProgram badInput = none;
  badInput.tokensInput = 2;
  s = load(badInput, exe);
  EXPECT_NE(s.message().find("the training signature's tokens input 2 "
                             "does not exist"),
            std::string::npos)
      << s.toString();
}

/// A fresh empty directory under the test's temporary directory.
std::string scratchDirectory(const std::string &name) {
  std::string dir =
      testing::TempDir() + "/" + name + "." + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void writeBytes(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), std::streamsize(bytes.size()));
}

// Executable::load maps the file (io/MappedFile.h); a session runs from it.
TEST(Executable, LoadsAMappedFile) {
  std::string dir = scratchDirectory("mapped");
  writeBytes(dir + "/tiny.tcx", TinyProgram().build());
  std::unique_ptr<Executable> exe;
  Status s = Executable::load(dir + "/tiny.tcx", exe);
  ASSERT_TRUE(s.ok()) << s.toString();
  std::unique_ptr<Session> session;
  ASSERT_TRUE(Session::create(std::move(exe), SessionOptions(), session).ok());
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
  ASSERT_TRUE(session->setInput(0, a, sizeof a).ok());
  ASSERT_TRUE(session->setInput(1, b, sizeof b).ok());
  ASSERT_TRUE(session->run().ok());
  EXPECT_EQ(session->output(0).as<float>()[5], 66.0f);

  // What cannot be mapped, or is no executable once mapped, is named.
  writeBytes(dir + "/empty.tcx", {});
  s = Executable::load(dir + "/empty.tcx", exe);
  EXPECT_NE(s.message().find("empty.tcx: not a trainc executable"),
            std::string::npos)
      << s.toString();
  s = Executable::load(dir, exe);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must be a regular file, not a directory"),
            std::string::npos)
      << s.toString();
  s = Executable::load(dir + "/missing.tcx", exe);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.toString();
  EXPECT_NE(s.message().find("missing.tcx"), std::string::npos);
  std::filesystem::remove_all(dir);
}

/// Whether the page holding `p` is in this process's resident set (bit 63
/// of its /proc/self/pagemap entry; readable without privileges).
bool resident(const char *p) {
  static const long page = ::sysconf(_SC_PAGESIZE);
  int fd = ::open("/proc/self/pagemap", O_RDONLY); // (streams cannot seek it)
  uint64_t entry = 0;
  ssize_t got = fd < 0
                    ? -1
                    : ::pread(fd, &entry, sizeof entry,
                              off_t(reinterpret_cast<uintptr_t>(p) / page * 8));
  if (fd >= 0)
    ::close(fd);
  EXPECT_EQ(got, ssize_t(sizeof entry)) << "/proc/self/pagemap unreadable";
  return (entry >> 63) != 0;
}

// Released pages leave the resident set but not the bytes: a later read
// faults them in from the file again, unchanged.
TEST(FileBytes, ReleasedPagesStayReadable) {
  std::string dir = scratchDirectory("released");
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  std::vector<char> pattern(3 * page + 100);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = char(i * 131 % 251);
  writeBytes(dir + "/pattern.bin", pattern);
  FileBytes mapped;
  ASSERT_TRUE(FileBytes::map(dir + "/pattern.bin", "the pattern", mapped).ok());
  ASSERT_TRUE(mapped.isMapped());
  ASSERT_EQ(mapped.size(), pattern.size());
  EXPECT_EQ(std::memcmp(mapped.data(), pattern.data(), pattern.size()), 0);
  for (size_t p = 0; p < 4; ++p)
    ASSERT_TRUE(resident(mapped.data() + p * page)) << "page " << p;
  // Bytes [page / 2, 2.5 pages): only page 1 is whole, only it goes.
  mapped.releasePages(page / 2, 2 * page);
  EXPECT_TRUE(resident(mapped.data()));
  EXPECT_FALSE(resident(mapped.data() + page));
  EXPECT_TRUE(resident(mapped.data() + 2 * page));
  mapped.releasePages(0, mapped.size());
  for (size_t p = 0; p < 3; ++p)
    EXPECT_FALSE(resident(mapped.data() + p * page)) << "page " << p;
  mapped.releasePages(mapped.size() + 1, page); // past the end: nothing
  EXPECT_EQ(std::memcmp(mapped.data(), pattern.data(), pattern.size()), 0);
  EXPECT_TRUE(resident(mapped.data() + page)); // read back in

  FileBytes moved = std::move(mapped);
  EXPECT_FALSE(mapped.isMapped());
  EXPECT_EQ(std::memcmp(moved.data(), pattern.data(), pattern.size()), 0);

  FileBytes inMemory(pattern);
  inMemory.releasePages(0, inMemory.size()); // bytes in memory: no effect
  EXPECT_EQ(std::memcmp(inMemory.data(), pattern.data(), pattern.size()), 0);
  std::filesystem::remove_all(dir);
}

// The one vocabulary: every opcode of the schema has a name, a validation
// rule and a CPU kernel. (The compiler side, every graph op lowering to an
// opcode, is test/Unit/Compiler/VocabularyTest.cpp.)
TEST(Vocabulary, EveryOpcodeHasANameAValidatorAndAKernel) {
  std::vector<TensorInfo> noTensors;
  for (int i = 0; i < kNumOpcodes; ++i) {
    auto op = static_cast<Opcode>(i);
    SCOPED_TRACE(opcodeName(op));
    EXPECT_STRNE(opcodeName(op), "unknown");
    EXPECT_NE(cpu::kernelFor(op), nullptr);
    InstructionInfo inst;
    inst.op = op;
    Status s = validateInstruction(inst, 0, noTensors);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.message().find("has no validation rule"), std::string::npos)
        << s.toString();
  }
  EXPECT_STREQ(opcodeName(Opcode::DotGeneral), "dot_general");
  EXPECT_STREQ(opcodeName(Opcode::SoftmaxCrossEntropy),
               "softmax_cross_entropy");
  EXPECT_STREQ(opcodeName(static_cast<Opcode>(kNumOpcodes)), "unknown");
  EXPECT_EQ(cpu::kernelFor(static_cast<Opcode>(kNumOpcodes)), nullptr);
}

} // namespace
} // namespace trainc
