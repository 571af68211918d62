//===- OnnxExportTest.cpp - Writing trained weights back into ONNX --------===//
//
// Exports tinygpt (../shared/data) with and without new weights and checks
// the bytes that come out; builds small models with the wire format by hand
// for external data, packed dims and malformed files; and truncates and
// bit-flips tinygpt to check that corrupt input gives a Status, not a crash,
// and never leaves a file behind.
//
//===----------------------------------------------------------------------===//

#include "io/OnnxExport.h"
#include "TempDirTest.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace trainc {
namespace {

namespace fs = std::filesystem;

const char *const kTinyGpt =
    TRAINC_SHARED_DATA_DIR "/tinygpt/tied_erf/model_train_opset17.onnx";

std::string readBytes(const fs::path &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
}

void writeBytes(const fs::path &path, const std::string &bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), std::streamsize(bytes.size()));
}

// Protobuf wire format, to build small models by hand.
std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7)
    out += char(uint8_t(v) | 0x80);
  return out + char(v);
}
std::string intField(uint32_t number, uint64_t v) {
  return varint(uint64_t(number) << 3) + varint(v);
}
std::string bytesField(uint32_t number, const std::string &payload) {
  return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload;
}
std::string entry(const std::string &key, const std::string &value) {
  return bytesField(13, bytesField(1, key) + bytesField(2, value));
}
/// A ModelProto with ir_version 8, a producer name and `graph`.
std::string model(const std::string &graph) {
  return intField(1, 8) + bytesField(2, "test") + bytesField(7, graph);
}

std::string f32Bytes(const std::vector<float> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float));
}

NamedTensor tensorOf(const std::string &name, DType dtype,
                     std::vector<int64_t> shape, const std::string &bytes) {
  return NamedTensor{name, dtype, std::move(shape), bytes.data(), bytes.size()};
}

class OnnxExport : public testing::TempDirTest {
protected:
  /// Exports and checks the invariant every call must keep: on success the
  /// output exists, on failure it does not; never a leftover .tmp. First,
  /// checkOnnxExport of the same call, given the weights without their
  /// data, must answer as the export does (the same status) and, when it
  /// succeeds, count the exported file's size exactly.
  Status exportTo(const fs::path &source, const fs::path &out,
                  const std::vector<NamedTensor> &weights) {
    std::vector<NamedTensor> specs = weights;
    for (NamedTensor &spec : specs)
      spec.data = nullptr;
    uint64_t measured = 0;
    Status checked =
        checkOnnxExport(source.string(), out.string(), specs, &measured);
    EXPECT_FALSE(fs::exists(out)) << "the check wrote " << out;
    Status s = exportOnnxWithWeights(source.string(), out.string(), weights);
    EXPECT_EQ(fs::exists(out), s.ok()) << s.toString();
    EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
    EXPECT_EQ(checked.toString(), s.toString());
    if (s.ok())
      EXPECT_EQ(measured, fs::file_size(out));
    return s;
  }
};

//===----------------------------------------------------------------------===//
// tinygpt
//===----------------------------------------------------------------------===//

TEST_F(OnnxExport, WithoutWeightsCopiesByteForByte) {
  fs::path out = dir_ / "out.onnx";
  ASSERT_TRUE(exportTo(kTinyGpt, out, {}).ok());
  std::string source = readBytes(kTinyGpt);
  ASSERT_GT(source.size(), 100000u) << "missing " << kTinyGpt;
  EXPECT_TRUE(readBytes(out) == source);
}

TEST_F(OnnxExport, ReplacedParametersReadBack) {
  std::vector<OnnxInitializer> before;
  ASSERT_TRUE(readOnnxInitializers(kTinyGpt, before).ok());
  ASSERT_EQ(before.size(), 28u);

  std::vector<float> wte(128 * 64), bias(64);
  for (size_t i = 0; i < wte.size(); ++i)
    wte[i] = 0.25f * float(i % 97) - 3.0f;
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = float(i) + 0.5f;
  std::string wteBytes = f32Bytes(wte), biasBytes = f32Bytes(bias);
  fs::path out = dir_ / "trained.onnx";
  ASSERT_TRUE(exportTo(kTinyGpt, out,
                       {tensorOf("wte.weight", DType::F32, {128, 64}, wteBytes),
                        tensorOf("h.1.ln_2.bias", DType::F32, {64}, biasBytes)})
                  .ok());

  std::vector<OnnxInitializer> after;
  ASSERT_TRUE(readOnnxInitializers(out.string(), after).ok());
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    SCOPED_TRACE(before[i].name);
    EXPECT_EQ(after[i].name, before[i].name);
    EXPECT_EQ(after[i].dataType, 1);
    EXPECT_EQ(after[i].dims, before[i].dims);
    ASSERT_TRUE(after[i].hasRawData);
    if (after[i].name == "wte.weight")
      EXPECT_TRUE(after[i].rawData == wteBytes);
    else if (after[i].name == "h.1.ln_2.bias")
      EXPECT_TRUE(after[i].rawData == biasBytes);
    else
      EXPECT_TRUE(after[i].rawData == before[i].rawData);
  }
}

// tinygpt was written by protobuf itself, so rewriting every initializer
// with its own value must give protobuf's encoding back exactly.
TEST_F(OnnxExport, ReplacingEveryParameterByItselfReproducesTheFile) {
  std::vector<OnnxInitializer> inits;
  ASSERT_TRUE(readOnnxInitializers(kTinyGpt, inits).ok());
  std::vector<NamedTensor> weights;
  for (const OnnxInitializer &init : inits)
    weights.push_back(tensorOf(init.name, DType::F32, init.dims, init.rawData));
  fs::path out = dir_ / "same.onnx";
  ASSERT_TRUE(exportTo(kTinyGpt, out, weights).ok());
  EXPECT_TRUE(readBytes(out) == readBytes(kTinyGpt));
}

TEST_F(OnnxExport, MismatchesAreErrorsNamingTheInitializer) {
  std::string bytes(128 * 64 * 8, '\0');
  fs::path out = dir_ / "out.onnx";
  struct Case {
    NamedTensor tensor;
    std::vector<std::string> expected;
  } cases[] = {
      {tensorOf("wte.weight", DType::F32, {64, 128},
                bytes.substr(0, 128 * 64 * 4)),
       {"initializer 'wte.weight'", "FLOAT [128, 64]", "f32 [64, 128]",
        kTinyGpt}},
      {tensorOf("wte.weight", DType::F64, {128, 64}, bytes),
       {"initializer 'wte.weight'", "FLOAT [128, 64]", "f64 [128, 64]"}},
      {tensorOf("wte.weight", DType::F32, {128, 64}, bytes),
       {"initializer 'wte.weight'", "65536 bytes", "takes 32768"}},
      {tensorOf("wte", DType::F32, {128, 64}, bytes.substr(0, 32768)),
       {"parameter 'wte' is not an initializer of", kTinyGpt}},
  };
  for (const Case &c : cases) {
    Status s = exportTo(kTinyGpt, out, {c.tensor});
    ASSERT_FALSE(s.ok());
    for (const std::string &text : c.expected)
      EXPECT_NE(s.message().find(text), std::string::npos)
          << s.message() << " lacks " << text;
  }
  NamedTensor bias =
      tensorOf("ln_f.bias", DType::F32, {64}, bytes.substr(0, 256));
  Status twice = exportTo(kTinyGpt, out, {bias, bias});
  EXPECT_EQ(twice.message(), "parameter 'ln_f.bias' is given twice");
}

TEST_F(OnnxExport, RefusesToOverwriteTheSource) {
  fs::path source = dir_ / "model.onnx";
  std::string original = readBytes(kTinyGpt);
  writeBytes(source, original);
  std::string bias(256, '\0');
  std::vector<NamedTensor> weights = {
      tensorOf("ln_f.bias", DType::F32, {64}, bias)};
  Status s = exportOnnxWithWeights(source.string(), source.string(), weights);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("would overwrite"), std::string::npos);
  // Also when spelled differently, and through the temporary's name.
  s = exportOnnxWithWeights(source.string(),
                            (dir_ / "." / "model.onnx").string(), weights);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = exportOnnxWithWeights(source.string(), (dir_ / "model").string(),
                            weights);
  EXPECT_TRUE(s.ok()) << s.toString();
  fs::path tmpNamed = dir_ / "m.onnx.tmp";
  writeBytes(tmpNamed, original);
  s = exportOnnxWithWeights(tmpNamed.string(), (dir_ / "m.onnx").string(),
                            weights);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(readBytes(source) == original);
  EXPECT_TRUE(readBytes(tmpNamed) == original);
}

TEST_F(OnnxExport, MissingSourceIsNotFound) {
  fs::path missing = dir_ / "missing.onnx";
  Status s = exportTo(missing, dir_ / "out.onnx", {});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find(missing.string()), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Hand-built models
//===----------------------------------------------------------------------===//

// w: FLOAT [2, 3] (packed dims) in external file w.bin at offset 4;
// b: INT64 [2] as int64_data with a doc_string.
std::string externalW(const std::string &location = "w.bin") {
  return bytesField(1, varint(2) + varint(3)) + intField(2, 1) +
         bytesField(8, "w") + entry("location", location) +
         entry("offset", "4") + entry("length", "24") + intField(14, 1);
}
std::string int64B() {
  return intField(1, 2) + intField(2, 7) +
         bytesField(7, varint(5) + varint(6)) + bytesField(8, "b") +
         bytesField(12, "bias");
}
std::string node() { return bytesField(1, bytesField(1, "x")); }
std::string smallModel() {
  return model(node() + bytesField(5, externalW()) + bytesField(5, int64B()) +
               bytesField(2, "g"));
}
std::string wBinBytes() {
  std::string bytes = "head";
  bytes += f32Bytes({1, 2, 3, 4, 5, 6});
  return bytes + "tail";
}

TEST_F(OnnxExport, ReplacedTensorsDropTypedDataAndKeepOtherFields) {
  fs::path source = dir_ / "small.onnx", out = dir_ / "out.onnx";
  writeBytes(source, smallModel());
  std::vector<int64_t> b = {-7, 9};
  std::string bBytes(reinterpret_cast<const char *>(b.data()), 16);
  std::string wBytes = f32Bytes({6, 5, 4, 3, 2, 1});
  ASSERT_TRUE(exportTo(source, out,
                       {tensorOf("b", DType::I64, {2}, bBytes),
                        tensorOf("w", DType::F32, {2, 3}, wBytes)})
                  .ok());
  std::string newW = intField(1, 2) + intField(1, 3) + intField(2, 1) +
                     bytesField(8, "w") + bytesField(9, wBytes);
  std::string newB = intField(1, 2) + intField(2, 7) + bytesField(8, "b") +
                     bytesField(9, bBytes) + bytesField(12, "bias");
  EXPECT_TRUE(readBytes(out) ==
              model(node() + bytesField(5, newW) + bytesField(5, newB) +
                    bytesField(2, "g")));
}

TEST_F(OnnxExport, ExternalDataStaysBesideTheSource) {
  fs::path source = dir_ / "small.onnx", out = dir_ / "out.onnx";
  writeBytes(source, smallModel());
  writeBytes(dir_ / "w.bin", wBinBytes());
  ASSERT_TRUE(exportTo(source, out, {}).ok());
  EXPECT_TRUE(readBytes(out) == smallModel());
}

TEST_F(OnnxExport, ExternalDataIsInlinedElsewhere) {
  fs::path source = dir_ / "small.onnx", out = dir_ / "sub" / "out.onnx";
  fs::create_directory(dir_ / "sub");
  writeBytes(source, smallModel());
  writeBytes(dir_ / "w.bin", wBinBytes());
  ASSERT_TRUE(exportTo(source, out, {}).ok());
  std::string inlined = bytesField(1, varint(2) + varint(3)) + intField(2, 1) +
                        bytesField(8, "w") +
                        bytesField(9, f32Bytes({1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(readBytes(out) ==
              model(node() + bytesField(5, inlined) + bytesField(5, int64B()) +
                    bytesField(2, "g")));

  // Missing, short, or outside the model's directory: errors naming both.
  fs::remove(out);
  writeBytes(dir_ / "w.bin", "short");
  Status s = exportTo(source, out, {});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("w.bin: has 5 bytes, but initializer 'w'"),
            std::string::npos)
      << s.message();
  fs::remove(dir_ / "w.bin");
  s = exportTo(source, out, {});
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("w.bin: cannot open (external data of "
                             "initializer 'w' in " +
                             source.string()),
            std::string::npos)
      << s.message();
  writeBytes(source, model(bytesField(5, externalW("../w.bin"))));
  s = exportTo(source, out, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("outside the model's directory"),
            std::string::npos);
  writeBytes(source,
             model(bytesField(5, bytesField(8, "w") + intField(14, 1))));
  s = exportTo(source, out, {});
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("initializer 'w' has external data without a "
                             "location"),
            std::string::npos);
}

TEST_F(OnnxExport, RefusesToOverwriteExternalData) {
  fs::path source = dir_ / "small.onnx";
  writeBytes(source, smallModel());
  writeBytes(dir_ / "w.bin", wBinBytes());
  Status s =
      exportOnnxWithWeights(source.string(), (dir_ / "w.bin").string(), {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(readBytes(dir_ / "w.bin") == wBinBytes());
}

TEST_F(OnnxExport, MalformedFilesAreErrorsNamingTheFile) {
  fs::path source = dir_ / "bad.onnx", out = dir_ / "out.onnx";
  struct Case {
    std::string bytes;
    std::string expected;
  } cases[] = {
      {"\x08\x80", "byte 0: field 1 of the model has a truncated varint"},
      {"\x08\x01\x80", "byte 2: truncated field tag in the model"},
      {"\x3a\x05"
       "ab",
       "has length 5, past the end of the model"},
      {intField(7, 1), "field 7 (graph) of the model has wire type 0"},
      {model(intField(5, 3)), "field 5 (initializer) of the graph"},
      {model(bytesField(5, intField(8, 1))),
       "field 8 (name) of initializer #0 has wire type 0"},
      {model(bytesField(5, bytesField(8, "w") + bytesField(2, ""))),
       "field 2 (data_type) of initializer 'w' has wire type 2"},
      {model(bytesField(5, bytesField(8, "w") + bytesField(1, "\x80"))),
       "truncated packed dims of initializer 'w'"},
      {"\x0b", "is a group (wire type 3)"},
      {"\x0c", "is a group (wire type 4)"},
      {"\x0e", "invalid wire type 6"},
      {std::string("\x00", 1), "invalid field number 0"},
      {"\x09"
       "1234567",
       "field 1 of the model runs past the end"},
  };
  for (const Case &c : cases) {
    writeBytes(source, c.bytes);
    Status s = exportTo(source, out, {});
    ASSERT_FALSE(s.ok()) << c.expected;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.message();
    EXPECT_EQ(s.message().rfind(source.string() + ": ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(c.expected), std::string::npos)
        << s.message() << " lacks " << c.expected;
    std::vector<OnnxInitializer> inits;
    EXPECT_FALSE(readOnnxInitializers(source.string(), inits).ok());
  }
}

TEST_F(OnnxExport, DuplicateInitializerIsAnError) {
  fs::path source = dir_ / "dup.onnx";
  std::string b = intField(1, 1) + intField(2, 1) + bytesField(8, "b");
  writeBytes(source, model(bytesField(5, b) + bytesField(5, b)));
  std::string value(4, '\0');
  Status s = exportTo(source, dir_ / "out.onnx",
                      {tensorOf("b", DType::F32, {1}, value)});
  EXPECT_NE(s.message().find("initializer 'b' appears more than once"),
            std::string::npos)
      << s.toString();
  // Without weights the duplicate is not export's business.
  EXPECT_TRUE(exportTo(source, dir_ / "out.onnx", {}).ok());
}

//===----------------------------------------------------------------------===//
// Corrupt tinygpt
//===----------------------------------------------------------------------===//

class OnnxExportFuzz : public OnnxExport {
protected:
  /// Exports `bytes` with and without a replaced parameter; an export
  /// without weights that succeeds must reproduce its input.
  void check(const std::string &bytes, const std::string &trace) {
    SCOPED_TRACE(trace);
    fs::path source = dir_ / "fuzz.onnx", out = dir_ / "sub" / "out.onnx";
    fs::create_directories(dir_ / "sub");
    writeBytes(source, bytes);
    Status s = exportTo(source, out, {});
    if (s.ok())
      ASSERT_TRUE(readBytes(out) == bytes);
    else
      ASSERT_FALSE(s.message().empty());
    fs::remove(out);
    std::string bias(256, '\x01');
    s = exportTo(source, out, {tensorOf("ln_f.bias", DType::F32, {64}, bias)});
    fs::remove(out);
  }
};

TEST_F(OnnxExportFuzz, TruncatedFiles) {
  std::string model = readBytes(kTinyGpt);
  ASSERT_GT(model.size(), 100000u);
  size_t valid = 0;
  for (size_t length = 0; length < model.size();
       length += length < 2000 ? 1 : 997) {
    check(model.substr(0, length), "length " + std::to_string(length));
    if (HasFatalFailure())
      return;
    std::vector<OnnxInitializer> inits;
    valid += readOnnxInitializers((dir_ / "fuzz.onnx").string(), inits).ok();
  }
  // Cuts between top-level fields parse (e.g. before the graph).
  EXPECT_GT(valid, 0u);
}

TEST_F(OnnxExportFuzz, BitFlips) {
  std::string model = readBytes(kTinyGpt);
  ASSERT_GT(model.size(), 100000u);
  std::mt19937 random(12345);
  for (int i = 0; i < 400; ++i) {
    std::string flipped = model;
    // Half in the first 4 KiB, where the structure (rather than tensor
    // bytes) is dense.
    size_t limit = i % 2 ? flipped.size() : 4096;
    size_t at = random() % limit;
    int bit = int(random() % 8);
    flipped[at] = char(flipped[at] ^ (1 << bit));
    check(flipped,
          "byte " + std::to_string(at) + " bit " + std::to_string(bit));
    if (HasFatalFailure())
      return;
  }
}

} // namespace
} // namespace trainc
