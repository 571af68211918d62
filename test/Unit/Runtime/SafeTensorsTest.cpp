//===- SafeTensorsTest.cpp - Reading .safetensors and loading weights -----===//
//
// The reader against what the writer writes, against hand-made malformed
// headers (each an error naming the file and the tensor) and against every
// truncation and random bit flips of a valid file (a Status, never a crash
// or a read outside the file). Then trainc_trainer_load_safetensors through
// the C API on a training step in miniature built with the schema's
// generated builder: a round trip, the next step using the loaded weights
// with the optimizer state and step count kept, and every error leaving the
// parameters as they were.
//
//===----------------------------------------------------------------------===//

#include "io/SafeTensors.h"
#include "TempDirTest.h"
#include "trainc/runtime.h"
#include "trainc/schema/executable_generated.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace trainc {
namespace {

namespace fs = std::filesystem;

std::string readBytes(const fs::path &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

void writeBytes(const fs::path &path, const std::string &bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), std::streamsize(bytes.size()));
}

/// A safetensors file from its header text and `dataBytes` bytes of data
/// (0, 1, 2, ...): the way to write what writeSafetensors never would.
std::string rawFile(const std::string &header, size_t dataBytes) {
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i)
    file[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  file += header;
  for (size_t i = 0; i < dataBytes; ++i)
    file += char(i);
  return file;
}

/// readSafetensors on `path`, which also checks that readSafetensorsIndex
/// (the header alone, through a FileReader) gives the same status and the
/// same tensors.
Status readBoth(const std::string &path, SafetensorsFile &file) {
  Status whole = readSafetensors(path, file);
  FileReader reader;
  Status index = FileReader::open(path, "the safetensors file", reader);
  SafetensorsIndex header;
  if (index.ok())
    index = readSafetensorsIndex(reader, header);
  EXPECT_EQ(index.code(), whole.code()) << index.toString();
  EXPECT_EQ(index.message(), whole.message());
  if (whole.ok() && index.ok()) {
    EXPECT_EQ(header.path, file.path);
    EXPECT_EQ(header.tensors.size(), file.tensors.size());
    for (size_t i = 0; i < std::min(header.tensors.size(), file.tensors.size());
         ++i) {
      const SafetensorsIndex::Tensor &a = header.tensors[i],
                                     &b = file.tensors[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.fileDType, b.fileDType);
      EXPECT_EQ(a.dtype, b.dtype);
      EXPECT_EQ(a.shape, b.shape);
      EXPECT_EQ(a.offset, b.offset);
      EXPECT_EQ(a.bytes, b.bytes);
    }
  }
  return whole;
}

using testing::TempDirTest;

//===----------------------------------------------------------------------===//
// The reader
//===----------------------------------------------------------------------===//

using SafeTensorsRead = TempDirTest;

TEST_F(SafeTensorsRead, ReadsWhatTheWriterWrites) {
  struct Case {
    DType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Case> cases = {
      {DType::F64, {2}},     {DType::F32, {2, 3}},   {DType::F16, {3}},
      {DType::BF16, {1, 4}}, {DType::I64, {}},       {DType::I32, {0, 4}},
      {DType::I1, {5}},      {DType::I16, {2}},      {DType::I8, {3}},
      {DType::U64, {1}},     {DType::U32, {2}},      {DType::U16, {2}},
      {DType::U8, {7}},      {DType::F8E4M3FN, {4}}, {DType::F8E5M2, {4}}};
  std::vector<std::string> buffers;
  std::vector<NamedTensor> tensors;
  for (size_t i = 0; i < cases.size(); ++i) {
    size_t bytes = dtypeSize(cases[i].dtype);
    for (int64_t d : cases[i].shape)
      bytes *= size_t(d);
    std::string data;
    for (size_t k = 0; k < bytes; ++k)
      data += char(i * 31 + k);
    buffers.push_back(data);
  }
  for (size_t i = 0; i < cases.size(); ++i)
    tensors.push_back({std::string("t") + char('z' - i) + ".weight",
                       cases[i].dtype, cases[i].shape, buffers[i].data(),
                       buffers[i].size()});
  std::string path = (dir_ / "all.safetensors").string();
  ASSERT_TRUE(writeSafetensors(path, tensors).ok());

  SafetensorsFile file;
  Status s = readBoth(path, file);
  ASSERT_TRUE(s.ok()) << s.toString();
  EXPECT_EQ(file.path, path);
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SafetensorsFile::Tensor &t = file.tensors[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, tensors[i].name); // the header's order
    EXPECT_EQ(t.dtype, tensors[i].dtype);
    EXPECT_EQ(t.fileDType, safetensorsDType(tensors[i].dtype));
    EXPECT_EQ(t.shape, tensors[i].shape);
    EXPECT_EQ(std::string(file.data(t), t.bytes), buffers[i]);
  }
}

// The types safetensors has no name for are written as their bytes and read
// back as u8/i8, with the dtype name that the loader compares.
TEST_F(SafeTensorsRead, StorageOnlyTypesReadAsBytes) {
  char data[4] = {1, 2, 3, 4};
  std::string path = (dir_ / "sub-byte.safetensors").string();
  ASSERT_TRUE(writeSafetensors(path, {{"q", DType::I4, {4}, data, 4},
                                      {"r", DType::F4E2M1FN, {4}, data, 4}})
                  .ok());
  SafetensorsFile file;
  ASSERT_TRUE(readSafetensors(path, file).ok());
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].fileDType, "I8");
  EXPECT_EQ(file.tensors[0].dtype, DType::I8);
  EXPECT_EQ(file.tensors[1].fileDType, "U8");
  EXPECT_EQ(file.tensors[1].dtype, DType::U8);
}

TEST_F(SafeTensorsRead, MetadataIsSkipped) {
  std::string path = (dir_ / "meta.safetensors").string();
  writeBytes(path, rawFile(R"({"__metadata__":{"format":"pt"},)"
                           R"("a":{"dtype":"U8","shape":[2],)"
                           R"("data_offsets":[0,2]}})",
                           2));
  SafetensorsFile file;
  Status s = readSafetensors(path, file);
  ASSERT_TRUE(s.ok()) << s.toString();
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].name, "a");
}

TEST_F(SafeTensorsRead, MalformedFilesAreErrorsNamingTheFile) {
  struct Case {
    std::string what, bytes;
    StatusCode code;
    std::string expected;
  };
  auto tensor = [](const std::string &fields) {
    return "{\"w\":{" + fields + "}}";
  };
  const std::string f32 = R"("dtype":"F32","shape":[2,3],)";
  std::string huge = rawFile("{}", 0);
  huge[7] = '\x01'; // a header of 2^56 bytes
  std::string badUtf8 = "{\"w\xff\":{}}";
  std::vector<Case> cases = {
      {"an empty file", "", StatusCode::kDataLoss,
       "truncated: 0 bytes, not even the 8-byte header length"},
      {"a short file", "abc", StatusCode::kDataLoss, "truncated: 3 bytes"},
      {"a header length past the end", huge, StatusCode::kDataLoss,
       "the header length (bytes 0-7) is 72057594037927938 but only 2 bytes "
       "follow"},
      {"a header that is not JSON", rawFile("{\"w\":", 0),
       StatusCode::kDataLoss, "the header (bytes 8-13) is not a JSON object"},
      {"a header that is a JSON array", rawFile("[1,2]", 0),
       StatusCode::kDataLoss, "the header (bytes 8-13) is not a JSON object"},
      {"invalid UTF-8 in the header", rawFile(badUtf8, 0),
       StatusCode::kDataLoss, "is not a JSON object"},
      {"a tensor that is not an object", rawFile("{\"w\":[1]}", 0),
       StatusCode::kDataLoss, "tensor 'w' is described by [1], not an object"},
      {"no dtype", rawFile(tensor(R"("shape":[1],"data_offsets":[0,4])"), 4),
       StatusCode::kDataLoss, "tensor 'w' has no dtype"},
      {"an unknown dtype",
       rawFile(tensor(R"("dtype":"C64","shape":[1],"data_offsets":[0,8])"), 8),
       StatusCode::kInvalidArgument,
       "tensor 'w' has dtype \"C64\", which trainc does not read (it reads "
       "F64, F32, F16, BF16, I64, I32, BOOL, I16, I8, U64, U32, U16, U8, "
       "F8_E4M3, F8_E5M2)"},
      {"no shape", rawFile(tensor(R"("dtype":"F32","data_offsets":[0,4])"), 4),
       StatusCode::kDataLoss, "tensor 'w' has no shape"},
      {"a negative dimension",
       rawFile(tensor(R"("dtype":"F32","shape":[-1],"data_offsets":[0,4])"), 4),
       StatusCode::kDataLoss,
       "tensor 'w' has shape [-1]: dimensions are integers >= 0"},
      {"a fractional dimension",
       rawFile(tensor(R"("dtype":"F32","shape":[1.5],"data_offsets":[0,4])"),
               4),
       StatusCode::kDataLoss, "has shape [1.5]: dimensions are integers"},
      {"no data_offsets", rawFile(tensor(R"("dtype":"F32","shape":[1])"), 4),
       StatusCode::kDataLoss, "tensor 'w' has no data_offsets [begin, end]"},
      {"one data offset", rawFile(tensor(f32 + R"("data_offsets":[0])"), 24),
       StatusCode::kDataLoss, "tensor 'w' has no data_offsets"},
      {"offsets past the data",
       rawFile(tensor(f32 + R"("data_offsets":[8,32])"), 24),
       StatusCode::kDataLoss,
       "tensor 'w' has data_offsets [8, 32], outside the 24 data bytes"},
      {"offsets backwards",
       rawFile(tensor(f32 + R"("data_offsets":[24,0])"), 24),
       StatusCode::kDataLoss, "has data_offsets [24, 0], outside the"},
      {"a byte count that is not dtype x shape",
       rawFile(tensor(f32 + R"("data_offsets":[0,20])"), 24),
       StatusCode::kDataLoss,
       "tensor 'w' has 20 bytes (data_offsets [0, 20]) but F32 [2, 3] is 24"},
      {"a shape of more than 2^64 bytes",
       rawFile(tensor(R"("dtype":"F32","shape":[4294967296,4294967296],)"
                      R"("data_offsets":[0,0])"),
               0),
       StatusCode::kDataLoss,
       "but F32 [4294967296, 4294967296] is more than 2^64"},
      {"a name given twice",
       rawFile(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
               R"("w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
               2),
       StatusCode::kDataLoss, "names tensor 'w' twice"},
      {"metadata that is not an object", rawFile(R"({"__metadata__":3})", 0),
       StatusCode::kDataLoss, "\"__metadata__\" is 3, not an object"},
      // The byte ranges must tile the data (the format's rule, which the
      // safetensors library enforces too): overlapping tensors would read
      // each other's bytes.
      {"overlapping tensors",
       rawFile(R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]},)"
               R"("a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})",
               6),
       StatusCode::kDataLoss,
       "tensor 'b' (data_offsets [2, 6]) overlaps tensor 'a' (data_offsets "
       "[0, 4])"},
      {"a hole between tensors",
       rawFile(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
               R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
               6),
       StatusCode::kDataLoss,
       "the data bytes [2, 4) belong to no tensor (before 'b'"},
      {"bytes after the last tensor",
       rawFile(tensor(R"("dtype":"U8","shape":[2],"data_offsets":[0,2])"), 4),
       StatusCode::kDataLoss,
       "the data bytes [2, 4) at the end belong to no tensor"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    std::string path = (dir_ / "bad.safetensors").string();
    writeBytes(path, c.bytes);
    SafetensorsFile file;
    Status s = readBoth(path, file);
    EXPECT_EQ(s.code(), c.code) << s.toString();
    EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.toString();
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.toString();
  }
}

// The header is JSON: a name that is not UTF-8 (which loaded executables
// never have) is refused, and nothing is written.
TEST_F(SafeTensorsRead, WritingANameThatIsNotUtf8IsRefused) {
  std::string path = (dir_ / "latin1.safetensors").string();
  float w = 1;
  Status s = writeSafetensors(path, {{"bi\xe9s", DType::F32, {1}, &w, 4}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("is not valid UTF-8"), std::string::npos)
      << s.toString();
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(SafeTensorsRead, MissingFileIsNotFound) {
  std::string path = (dir_ / "none.safetensors").string();
  SafetensorsFile file;
  Status s = readBoth(path, file);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.toString();
  s = readBoth(dir_.string(), file);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.toString();
  EXPECT_NE(s.message().find("must be a regular file, not a directory"),
            std::string::npos)
      << s.toString();
}

/// Reads `bytes` as a file: either an error naming the file, or tensors
/// that all lie inside it with exactly dtype x shape bytes.
void checkReadOf(const fs::path &path, const std::string &bytes) {
  writeBytes(path, bytes);
  SafetensorsFile file;
  Status s = readBoth(path.string(), file);
  if (!s.ok()) {
    ASSERT_EQ(s.message().rfind(path.string() + ": ", 0), 0u) << s.toString();
    return;
  }
  for (const SafetensorsFile::Tensor &t : file.tensors) {
    uint64_t expected = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      expected *= uint64_t(d);
    ASSERT_EQ(t.bytes, expected) << t.name;
    ASSERT_LE(t.offset + t.bytes, file.contents.size()) << t.name;
  }
}

TEST_F(SafeTensorsRead, EveryTruncationIsAnError) {
  std::vector<float> w(6, 1.0f), b(3, 2.0f);
  std::string path = (dir_ / "whole.safetensors").string();
  ASSERT_TRUE(writeSafetensors(path, {{"w", DType::F32, {2, 3}, w.data(), 24},
                                      {"b", DType::F32, {3}, b.data(), 12}})
                  .ok());
  std::string whole = readBytes(path);
  for (size_t length = 0; length < whole.size(); ++length) {
    SCOPED_TRACE("length " + std::to_string(length));
    fs::path cut = dir_ / "cut.safetensors";
    writeBytes(cut, whole.substr(0, length));
    SafetensorsFile file;
    Status s = readBoth(cut.string(), file);
    ASSERT_EQ(s.code(), StatusCode::kDataLoss) << s.toString();
    ASSERT_EQ(s.message().rfind(cut.string() + ": ", 0), 0u) << s.toString();
  }
}

// The header alone is read into memory: a length over the format's limit
// is refused before anything is allocated (the file is sparse).
TEST_F(SafeTensorsRead, IndexRefusesAHeaderOverTheLimit) {
  fs::path path = dir_ / "long-header.safetensors";
  uint64_t length = kMaxHeaderBytes + 8;
  std::string first8(8, '\0');
  for (int i = 0; i < 8; ++i)
    first8[size_t(i)] = char((length >> (8 * i)) & 0xff);
  writeBytes(path, first8);
  fs::resize_file(path, 8 + length + 16);
  FileReader reader;
  ASSERT_TRUE(FileReader::open(path.string(), "the file", reader).ok());
  SafetensorsIndex index;
  Status s = readSafetensorsIndex(reader, index);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path.string() + ": the header length (bytes "
                                             "0-7) is 104857608, over the "
                                             "104857600 bytes"),
            std::string::npos)
      << s.toString();
}

TEST_F(SafeTensorsRead, BitFlipsNeverReadOutOfBounds) {
  std::vector<float> w(6, 1.0f), b(3, 2.0f);
  std::string path = (dir_ / "whole.safetensors").string();
  ASSERT_TRUE(writeSafetensors(path, {{"w", DType::F32, {2, 3}, w.data(), 24},
                                      {"b", DType::F32, {3}, b.data(), 12}})
                  .ok());
  std::string whole = readBytes(path);
  std::mt19937 random(4242);
  size_t valid = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string flipped = whole;
    // Mostly in the length and the header, where the structure is.
    size_t limit = i % 4 ? whole.size() - 36 : whole.size();
    size_t at = random() % limit;
    if (i % 3 == 0) // a digit or a character JSON cares about
      flipped[at] = "0123456789-.[]{},:\"e "[random() % 21];
    else
      flipped[at] = char(flipped[at] ^ (1 << (random() % 8)));
    SCOPED_TRACE("change " + std::to_string(i) + " at byte " +
                 std::to_string(at));
    checkReadOf(dir_ / "flipped.safetensors", flipped);
    if (HasFatalFailure())
      return;
    SafetensorsFile file;
    valid +=
        readSafetensors((dir_ / "flipped.safetensors").string(), file).ok();
  }
  // Flips in the data and in insignificant header bytes still read.
  EXPECT_GT(valid, 100u);
}

//===----------------------------------------------------------------------===//
// trainc_trainer_load_safetensors
//===----------------------------------------------------------------------===//

/// A training step in miniature: y = x + w over f32 [2, 3], then the
/// updates w := y and m := y, so that each run changes a parameter (w) and
/// an optimizer-state tensor (m); b (bf16 [3]) is a parameter that no
/// instruction reads. Initial values: w = 1..6, b = 1, 2, 3, m = 0.5.
std::string toyStep() {
  // Built twice, as the compiler does: the first pass measures the
  // FlatBuffer so the second can say where the constant section starts.
  auto build = [](uint64_t constantsOffset) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.ForceDefaults(true);
    std::vector<int64_t> matrix = {2, 3}, vector = {3};
    std::vector<flatbuffers::Offset<fb::Tensor>> tensors = {
        fb::CreateTensorDirect(fbb, "x", fb::TensorRole::Input, fb::DType::F32,
                               &matrix, 1, 0, 24),
        fb::CreateTensorDirect(fbb, "w", fb::TensorRole::Parameter,
                               fb::DType::F32, &matrix, 0, 0, 24, 0),
        fb::CreateTensorDirect(fbb, "b", fb::TensorRole::Parameter,
                               fb::DType::BF16, &vector, 0, 64, 6, 64),
        fb::CreateTensorDirect(fbb, "m", fb::TensorRole::State, fb::DType::F32,
                               &matrix, 0, 128, 24, 128),
        fb::CreateTensorDirect(fbb, "y", fb::TensorRole::Output, fb::DType::F32,
                               &matrix, 1, 64, 24)};
    std::vector<uint32_t> operands = {0, 1}, results = {4};
    std::vector<flatbuffers::Offset<fb::Instruction>> instructions = {
        fb::CreateInstructionDirect(fbb, static_cast<uint16_t>(Opcode::Add),
                                    &operands, &results)};
    std::vector<flatbuffers::Offset<fb::Arena>> arenas = {
        fb::CreateArenaDirect(fbb, "state", 192, 64),
        fb::CreateArenaDirect(fbb, "work", 128, 64)};
    std::vector<uint32_t> inputs = {0}, outputs = {4}, parameters = {1, 2};
    std::vector<flatbuffers::Offset<fb::Update>> updates = {
        fb::CreateUpdate(fbb, 4, 1), fb::CreateUpdate(fbb, 4, 3)};
    auto exe = fb::CreateExecutableDirect(
        fbb, kFormatVersion, 0, &tensors, &arenas, &instructions, &inputs,
        &outputs, &parameters, constantsOffset, 192, 0, &updates);
    fb::FinishExecutableBuffer(fbb, exe);
    return std::string(reinterpret_cast<const char *>(fbb.GetBufferPointer()),
                       fbb.GetSize());
  };
  uint64_t offset = (build(0).size() + 63) / 64 * 64;
  std::string file = build(offset);
  file.resize(offset, '\0');
  std::string constants(192, '\0');
  float w[6] = {1, 2, 3, 4, 5, 6}, m[6] = {.5f, .5f, .5f, .5f, .5f, .5f};
  uint16_t b[3] = {0x3f80, 0x4000, 0x4040};
  std::memcpy(&constants[0], w, sizeof w);
  std::memcpy(&constants[64], b, sizeof b);
  std::memcpy(&constants[128], m, sizeof m);
  return file + constants;
}

/// The code and message of `status`, which it frees ("ok" for NULL).
std::pair<trainc_status_code, std::string> consume(trainc_status status) {
  std::pair<trainc_status_code, std::string> out = {
      trainc_status_get_code(status), trainc_status_message(status)};
  trainc_status_free(status);
  return out;
}

class LoadSafetensors : public TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    writeBytes(dir_ / "toy.tcx", toyStep());
    trainer_ = newTrainer();
  }
  void TearDown() override {
    for (trainc_trainer *t : trainers_)
      trainc_trainer_release(t);
    TempDirTest::TearDown();
  }

  /// A trainer of the toy step (no data: it steps on its input x, set to
  /// 10, 20, ..., 60), released at the end of the test.
  trainc_trainer *newTrainer() {
    trainc_executable *exe = nullptr;
    auto [code, message] =
        consume(trainc_executable_open((dir_ / "toy.tcx").c_str(), &exe));
    EXPECT_EQ(code, TRAINC_OK) << message;
    if (!exe)
      return nullptr;
    trainc_train_config config;
    trainc_train_config_init(&config);
    trainc_trainer *trainer = nullptr;
    std::tie(code, message) =
        consume(trainc_trainer_create(exe, nullptr, &config, &trainer));
    trainc_executable_release(exe);
    EXPECT_EQ(code, TRAINC_OK) << message;
    if (!trainer)
      return nullptr;
    trainers_.push_back(trainer);
    float x[6] = {10, 20, 30, 40, 50, 60};
    std::tie(code, message) = consume(trainc_session_set_input(
        trainc_trainer_session(trainer), 0, x, sizeof x));
    EXPECT_EQ(code, TRAINC_OK) << message;
    return trainer;
  }

  /// The parameters of `trainer` as trainc_trainer_save_safetensors
  /// writes them.
  std::string weights(trainc_trainer *trainer) {
    fs::path path = dir_ / "current.safetensors";
    auto [code, message] =
        consume(trainc_trainer_save_safetensors(trainer, path.c_str()));
    EXPECT_EQ(code, TRAINC_OK) << message;
    return readBytes(path);
  }

  std::pair<trainc_status_code, std::string> load(trainc_trainer *trainer,
                                                  const fs::path &path) {
    return consume(trainc_trainer_load_safetensors(trainer, path.c_str()));
  }

  /// y after one more step of `trainer`.
  std::vector<float> step(trainc_trainer *trainer) {
    auto [code, message] =
        consume(trainc_trainer_run(trainer, 1, 0, nullptr, nullptr));
    EXPECT_EQ(code, TRAINC_OK) << message;
    const void *data = nullptr;
    size_t bytes = 0;
    std::tie(code, message) = consume(trainc_session_output(
        trainc_trainer_session(trainer), 0, &data, &bytes));
    EXPECT_EQ(code, TRAINC_OK) << message;
    if (bytes != 24)
      return {};
    const float *y = static_cast<const float *>(data);
    return std::vector<float>(y, y + 6);
  }

  trainc_trainer *trainer_ = nullptr;
  std::vector<trainc_trainer *> trainers_;
};

TEST_F(LoadSafetensors, SavedLoadedAndSavedAgainEqualsTheFile) {
  ASSERT_NE(trainer_, nullptr);
  std::string original = weights(trainer_);
  // New values for every parameter, written as another program would.
  float w[6] = {-1.5f, 0.25f, 1e-3f, 7, -8, 3.125f};
  uint16_t b[3] = {0xbf80, 0x3e00, 0x7f7f}; // bf16 -1, 0.125, max
  fs::path path = dir_ / "modified.safetensors";
  ASSERT_TRUE(
      writeSafetensors(path.string(), {{"w", DType::F32, {2, 3}, w, sizeof w},
                                       {"b", DType::BF16, {3}, b, sizeof b}})
          .ok());
  auto [code, message] = load(trainer_, path);
  ASSERT_EQ(code, TRAINC_OK) << message;
  std::string saved = weights(trainer_);
  EXPECT_NE(saved, original);
  EXPECT_TRUE(saved == readBytes(path)) << "the weights saved after the load "
                                           "differ from the file loaded";
  // In another order, with metadata: the same weights.
  writeBytes(path, rawFile(R"({"__metadata__":{"format":"pt"},)"
                           R"("b":{"dtype":"BF16","shape":[3],)"
                           R"("data_offsets":[0,6]},)"
                           R"("w":{"dtype":"F32","shape":[2,3],)"
                           R"("data_offsets":[6,30]}})",
                           30));
  std::tie(code, message) = load(trainer_, path);
  ASSERT_EQ(code, TRAINC_OK) << message;
  weights(trainer_);
  SafetensorsFile file;
  ASSERT_TRUE(
      readSafetensors((dir_ / "current.safetensors").string(), file).ok());
  ASSERT_EQ(file.tensors.size(), 2u);
  std::string data = rawFile("", 30).substr(8);
  EXPECT_EQ(std::string(file.data(file.tensors[0]), 24), data.substr(6, 24));
  EXPECT_EQ(std::string(file.data(file.tensors[1]), 6), data.substr(0, 6));
}

// One trainer steps 3 times and saves its weights; a fresh one loads them:
// its next step computes what the first one's next step does, bit for bit.
// The load sets parameters only: the fresh trainer's optimizer state (m)
// and step count stay its own.
TEST_F(LoadSafetensors, TheNextStepUsesTheLoadedWeights) {
  ASSERT_NE(trainer_, nullptr);
  for (int i = 0; i < 3; ++i)
    step(trainer_);
  fs::path trained = dir_ / "trained.safetensors";
  auto [code, message] =
      consume(trainc_trainer_save_safetensors(trainer_, trained.c_str()));
  ASSERT_EQ(code, TRAINC_OK) << message;

  trainc_trainer *fresh = newTrainer();
  ASSERT_NE(fresh, nullptr);
  ASSERT_NE(weights(fresh), readBytes(trained));
  std::tie(code, message) = load(fresh, trained);
  ASSERT_EQ(code, TRAINC_OK) << message;
  EXPECT_EQ(weights(fresh), readBytes(trained));
  EXPECT_EQ(trainc_trainer_step_count(fresh), 0);
  EXPECT_EQ(trainc_trainer_step_count(trainer_), 3);

  // The optimizer state is untouched: a checkpoint of the fresh trainer
  // holds the loaded w and its own initial m.
  fs::path checkpoint = dir_ / "checkpoint";
  std::tie(code, message) =
      consume(trainc_trainer_save(fresh, checkpoint.c_str()));
  ASSERT_EQ(code, TRAINC_OK) << message;
  SafetensorsFile shard;
  Status s = readSafetensors(
      (checkpoint / "step-000000000000" / "rank-00000-of-00001.safetensors")
          .string(),
      shard);
  ASSERT_TRUE(s.ok()) << s.toString();
  float w3[6], m0[6] = {.5f, .5f, .5f, .5f, .5f, .5f};
  for (int i = 0; i < 6; ++i)
    w3[i] = float(i + 1) + 3 * 10 * float(i + 1);
  bool sawW = false, sawM = false;
  for (const SafetensorsFile::Tensor &t : shard.tensors) {
    if (t.name == "w") {
      sawW = true;
      EXPECT_EQ(std::memcmp(shard.data(t), w3, sizeof w3), 0);
    } else if (t.name == "m") {
      sawM = true;
      EXPECT_EQ(std::memcmp(shard.data(t), m0, sizeof m0), 0);
    }
  }
  EXPECT_TRUE(sawW && sawM);

  std::vector<float> a = step(trainer_), b = step(fresh);
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), 24), 0);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(b[size_t(i)], float(i + 1) + 4 * 10 * float(i + 1));
  EXPECT_EQ(weights(fresh), weights(trainer_));
  EXPECT_EQ(trainc_trainer_step_count(fresh), 1);
}

TEST_F(LoadSafetensors, ErrorsNameTheFileAndChangeNothing) {
  ASSERT_NE(trainer_, nullptr);
  step(trainer_); // weights other than the initial ones
  std::string before = weights(trainer_);

  float w[6] = {9, 9, 9, 9, 9, 9}, m[6] = {0};
  uint16_t b[3] = {0x3f80, 0x3f80, 0x3f80};
  float b32[3] = {1, 1, 1};
  struct Case {
    std::string what;
    std::vector<NamedTensor> tensors;
    std::vector<std::string> expected;
  };
  std::vector<Case> cases = {
      {"a wrong shape",
       {{"w", DType::F32, {3, 2}, w, 24}, {"b", DType::BF16, {3}, b, 6}},
       {"'w' is f32 [3, 2] in the file but f32 [2, 3] in the executable"}},
      {"a wrong dtype",
       {{"w", DType::F32, {2, 3}, w, 24}, {"b", DType::F32, {3}, b32, 12}},
       {"'b' is f32 [3] in the file but bf16 [3] in the executable"}},
      {"an extra tensor (optimizer state is not a parameter)",
       {{"w", DType::F32, {2, 3}, w, 24},
        {"b", DType::BF16, {3}, b, 6},
        {"m", DType::F32, {2, 3}, m, 24}},
       {"not a parameter: 'm' (f32 [2, 3])"}},
      {"a missing tensor",
       {{"w", DType::F32, {2, 3}, w, 24}},
       {"missing from the file: 'b' (bf16 [3])"}},
      {"everything wrong at once",
       {{"w", DType::F16, {6}, w, 12}, {"x", DType::F32, {2, 3}, w, 24}},
       {"'w' is f16 [6] in the file but f32 [2, 3] in the executable",
        "missing from the file: 'b' (bf16 [3])",
        "not a parameter: 'x' (f32 [2, 3])"}},
      {"no tensors at all",
       {},
       {"missing from the file: 'w' (f32 [2, 3]), "
        "'b' (bf16 [3])"}},
  };
  fs::path path = dir_ / "bad.safetensors";
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_TRUE(writeSafetensors(path.string(), c.tensors).ok());
    auto [code, message] = load(trainer_, path);
    EXPECT_EQ(code, TRAINC_INVALID_ARGUMENT) << message;
    EXPECT_EQ(message.rfind(path.string() +
                                " does not match the parameters "
                                "of " +
                                (dir_ / "toy.tcx").string() +
                                " (nothing was loaded); ",
                            0),
              0u)
        << message;
    for (const std::string &e : c.expected)
      EXPECT_NE(message.find(e), std::string::npos) << message;
    EXPECT_EQ(weights(trainer_), before);
  }

  // A good file, cut anywhere: always data loss naming the file.
  ASSERT_TRUE(writeSafetensors(path.string(), {{"w", DType::F32, {2, 3}, w, 24},
                                               {"b", DType::BF16, {3}, b, 6}})
                  .ok());
  std::string good = readBytes(path);
  for (size_t length = 0; length < good.size(); ++length) {
    SCOPED_TRACE("cut to " + std::to_string(length) + " bytes");
    writeBytes(path, good.substr(0, length));
    auto [code, message] = load(trainer_, path);
    EXPECT_EQ(code, TRAINC_DATA_LOSS) << message;
    EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
  }
  EXPECT_EQ(weights(trainer_), before);

  fs::path missing = dir_ / "missing.safetensors";
  auto [code, message] = load(trainer_, missing);
  EXPECT_EQ(code, TRAINC_NOT_FOUND) << message;
  EXPECT_NE(message.find(missing.string()), std::string::npos) << message;
  std::tie(code, message) =
      consume(trainc_trainer_load_safetensors(trainer_, nullptr));
  EXPECT_EQ(code, TRAINC_INVALID_ARGUMENT) << message;
  std::tie(code, message) =
      consume(trainc_trainer_load_safetensors(nullptr, path.c_str()));
  EXPECT_EQ(code, TRAINC_INVALID_ARGUMENT) << message;
  EXPECT_EQ(weights(trainer_), before);
  EXPECT_EQ(trainc_trainer_step_count(trainer_), 1);

  // The good file loads.
  writeBytes(path, good);
  std::tie(code, message) = load(trainer_, path);
  EXPECT_EQ(code, TRAINC_OK) << message;
  EXPECT_EQ(weights(trainer_), good);
}

// trainc_saved_run_info reads the manifests only: with the newest
// checkpoint's tensors damaged, it still names that checkpoint's step (and
// the run's seed), while restoring checks the tensors and takes the one
// before it.
TEST_F(LoadSafetensors, SavedRunInfoReadsOnlyTheManifests) {
  ASSERT_NE(trainer_, nullptr);
  fs::path dir = dir_ / "run";
  for (int i = 0; i < 2; ++i) {
    step(trainer_);
    auto [code, message] = consume(trainc_trainer_save(trainer_, dir.c_str()));
    ASSERT_EQ(code, TRAINC_OK) << message;
  }
  fs::path shard =
      dir / "step-000000000002" / "rank-00000-of-00001.safetensors";
  std::string bytes = readBytes(shard);
  ASSERT_GT(bytes.size(), 8u);
  bytes.back() ^= 0x40; // a tensor byte: the manifest still verifies
  writeBytes(shard, bytes);

  int64_t savedStep = -1;
  uint64_t seed = 1;
  auto [code, message] =
      consume(trainc_saved_run_info(dir.c_str(), &savedStep, &seed));
  ASSERT_EQ(code, TRAINC_OK) << message;
  EXPECT_EQ(savedStep, 2);
  EXPECT_EQ(seed, 0u);

  trainc_trainer *fresh = newTrainer();
  ASSERT_NE(fresh, nullptr);
  std::tie(code, message) = consume(trainc_trainer_restore(fresh, dir.c_str()));
  ASSERT_EQ(code, TRAINC_OK) << message;
  EXPECT_EQ(trainc_trainer_step_count(fresh), 1);
  EXPECT_NE(
      std::string(trainc_trainer_restore_note(fresh)).find("step-000000000002"),
      std::string::npos);
}

/// Writes `manifest` to `path` with its checksum, as trainc writes one.
void writeManifest(const fs::path &path, nlohmann::json manifest) {
  manifest.erase("manifest_xxh3");
  std::string canonical = manifest.dump();
  char digest[17];
  std::snprintf(
      digest, sizeof digest, "%016llx",
      (unsigned long long)XXH3_64bits(canonical.data(), canonical.size()));
  manifest["manifest_xxh3"] = digest;
  writeBytes(path, manifest.dump(1));
}

// A manifest whose parts do not fit the tensor's layout (a part of the
// wrong size, or a sharding that disagrees with the shards listed) is
// damaged, even with a valid checksum: nothing is read past a part.
TEST_F(LoadSafetensors, PartsThatDoNotFitTheLayoutAreRefused) {
  ASSERT_NE(trainer_, nullptr);
  fs::path dir = dir_ / "parts";
  step(trainer_);
  auto [code, message] = consume(trainc_trainer_save(trainer_, dir.c_str()));
  ASSERT_EQ(code, TRAINC_OK) << message;
  fs::path manifestPath = dir / "step-000000000001" / "manifest.json";
  nlohmann::json saved = nlohmann::json::parse(readBytes(manifestPath));
  // (parts claimed, dimension split, the error): two shards, each the
  // whole tensor.
  struct Case {
    int parts, dim;
    const char *error;
  };
  for (Case c : {Case{2, 0, "has a part of"},
                 Case{3, 0, "lists 2 shards but its sharding"},
                 Case{2, 7, "cannot be split along dimension 7"}}) {
    nlohmann::json manifest = saved;
    nlohmann::json &t = manifest["tensors"][0];
    t["sharding"] = {{"axis", "data"}, {"dim", c.dim}, {"parts", c.parts}};
    t["shards"].push_back(t["shards"][0]);
    writeManifest(manifestPath, manifest);
    trainc_trainer *fresh = newTrainer();
    ASSERT_NE(fresh, nullptr);
    std::tie(code, message) =
        consume(trainc_trainer_restore(fresh, dir.c_str()));
    EXPECT_NE(code, TRAINC_OK);
    EXPECT_NE(message.find(c.error), std::string::npos) << message;
  }
}

// A checkpoint of format 2 (one shard of one rank, each tensor's file and
// checksum beside it in the manifest, as trainc wrote before one shard per
// rank) still restores.
TEST_F(LoadSafetensors, Format2CheckpointsStillRestore) {
  ASSERT_NE(trainer_, nullptr);
  fs::path dir = dir_ / "old";
  step(trainer_);
  auto [code, message] = consume(trainc_trainer_save(trainer_, dir.c_str()));
  ASSERT_EQ(code, TRAINC_OK) << message;
  std::vector<float> next = step(trainer_);

  // Rewrite the format-3 manifest as format 2 wrote it.
  fs::path manifestPath = dir / "step-000000000001" / "manifest.json";
  nlohmann::json manifest = nlohmann::json::parse(readBytes(manifestPath));
  ASSERT_EQ(manifest["format"], 3);
  manifest["format"] = 2;
  manifest.erase("mesh");
  manifest.erase("manifest_xxh3");
  for (nlohmann::json &t : manifest["tensors"]) {
    ASSERT_EQ(t["sharding"], "replicated");
    nlohmann::json shard = t["shards"][0];
    t.erase("shards");
    t["shard"] = shard["file"];
    t["bytes"] = shard["bytes"];
    t["xxh3"] = shard["xxh3"];
  }
  writeManifest(manifestPath, manifest);

  trainc_trainer *fresh = newTrainer();
  ASSERT_NE(fresh, nullptr);
  std::tie(code, message) = consume(trainc_trainer_restore(fresh, dir.c_str()));
  ASSERT_EQ(code, TRAINC_OK) << message;
  EXPECT_EQ(trainc_trainer_step_count(fresh), 1);
  EXPECT_EQ(step(fresh), next);
}

} // namespace
} // namespace trainc
