//===- SafeTensorsTest.cpp - safetensors round trip and corrupt files -----===//

#include "dsc/runtime/SafeTensors.h"

#include "ScratchDir.h"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

using namespace dsc::rt;
using dsc::rt::test::readBytes;
using dsc::rt::test::ScratchDir;

namespace {

// A safetensors file: the 8-byte little-endian header length, then the
// header as given (no padding), then `data`.
std::string fileBytes(const std::string &header, const std::string &data) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

// The Error that opening `path` throws; fails the test when none does.
std::string openError(const std::string &path) {
  try {
    SafeTensorsFile::open(path);
  } catch (const Error &e) {
    return e.what();
  }
  ADD_FAILURE() << path << " opened without an error";
  return "";
}

template <typename T> std::string bytesOf(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(T));
}

} // namespace

TEST(SafeTensorsDType, NamesSizesAndParsing) {
  const std::pair<DType, size_t> sizes[] = {
      {DType::F64, 8}, {DType::F32, 4}, {DType::F16, 2}, {DType::BF16, 2},
      {DType::I64, 8}, {DType::I32, 4}, {DType::I16, 2}, {DType::I8, 1},
      {DType::U8, 1},  {DType::U16, 2}, {DType::BOOL, 1}};
  for (auto [dtype, size] : sizes) {
    EXPECT_EQ(dtypeSize(dtype), size) << dtypeName(dtype);
    EXPECT_EQ(parseDType(dtypeName(dtype)), dtype);
  }
  EXPECT_STREQ(dtypeName(DType::BF16), "BF16");
  EXPECT_THROW(parseDType("F8_E4M3"), Error);
  EXPECT_THROW(parseDType("f32"), Error); // the format's names are upper case
}

TEST(SafeTensors, RoundTrip) {
  ScratchDir dir;
  std::vector<float> weight = {1.5f, -2.f, 0.f, 3.25f, 1e-3f, -7.f};
  std::vector<int64_t> step = {1234567890123};
  std::vector<uint16_t> bf16 = {0x3f80, 0xbfc0, 0x0000, 0x7f80};
  std::vector<uint8_t> flags = {1, 0, 1};
  std::vector<TensorView> tensors = {
      {"wte.weight", DType::F32, {2, 3}, weight.data()},
      {"step", DType::I64, {}, step.data()},
      {"h.0.ln_1.weight", DType::BF16, {4}, bf16.data()},
      {"empty", DType::F32, {0, 3}, nullptr},
      {"mask", DType::BOOL, {3}, flags.data()},
  };
  std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                 {"step", "7"}};
  std::string path = dir.file("model.safetensors");
  writeSafeTensors(path, tensors, metadata);

  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.path(), path);
  EXPECT_EQ(file.names(),
            (std::vector<std::string>{"empty", "h.0.ln_1.weight", "mask",
                                      "step", "wte.weight"}));
  EXPECT_EQ(file.metadata(), metadata);
  EXPECT_TRUE(file.contains("step"));
  EXPECT_FALSE(file.contains("lm_head.weight"));

  const TensorInfo &w = file.info("wte.weight");
  EXPECT_EQ(w.name, "wte.weight");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w.numel(), 6);
  EXPECT_EQ(w.bytes, 24u);
  std::vector<float> weightBack(6);
  file.read("wte.weight", weightBack.data(), 24);
  EXPECT_EQ(weightBack, weight);

  const TensorInfo &s = file.info("step");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.numel(), 1);
  int64_t stepBack = 0;
  file.read("step", &stepBack, sizeof stepBack);
  EXPECT_EQ(stepBack, step[0]);

  std::vector<uint16_t> bf16Back(4);
  file.read("h.0.ln_1.weight", bf16Back.data(), 8);
  EXPECT_EQ(bf16Back, bf16);
  std::vector<uint8_t> flagsBack(3);
  file.read("mask", flagsBack.data(), 3);
  EXPECT_EQ(flagsBack, flags);

  EXPECT_EQ(file.info("empty").numel(), 0);
  EXPECT_EQ(file.info("empty").bytes, 0u);
  file.read("empty", nullptr, 0);

  // The layout the Python writer produces: a header padded to a multiple of
  // 8 bytes, then the tensors back to back in name order.
  std::string raw = readBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  size_t expectedOffset = 8 + n;
  for (const std::string &name : file.names()) {
    EXPECT_EQ(file.info(name).offset, expectedOffset) << name;
    expectedOffset += file.info(name).bytes;
  }
  EXPECT_EQ(raw.size(), expectedOffset);
}

TEST(SafeTensors, WriterReplacesAtomicallyAndLeavesNoTemporaryFile) {
  ScratchDir dir;
  std::string path = dir.file("ckpt.safetensors");
  std::vector<int32_t> a = {1, 2}, b = {3, 4, 5};
  writeSafeTensors(path, {{"x", DType::I32, {2}, a.data()}});
  writeSafeTensors(path, {{"x", DType::I32, {3}, b.data()}});
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.info("x").shape, (std::vector<int64_t>{3}));
  EXPECT_TRUE(file.metadata().empty());
  size_t entries = 0;
  for ([[maybe_unused]] const auto &entry :
       std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(SafeTensors, WriterWithNoTensors) {
  ScratchDir dir;
  std::string path = dir.file("empty.safetensors");
  writeSafeTensors(path, {});
  EXPECT_EQ(readBytes(path), fileBytes("{}      ", ""));
  EXPECT_TRUE(SafeTensorsFile::open(path).names().empty());
}

TEST(SafeTensors, WriterRefusesBadTensorsNamingThePath) {
  ScratchDir dir;
  std::string path = dir.file("bad.safetensors");
  float value = 1;
  struct Case {
    std::vector<TensorView> tensors;
    const char *problem;
  };
  const Case cases[] = {
      {{{"x", DType::F32, {1}, &value}, {"x", DType::F32, {1}, &value}},
       "tensor 'x': written twice"},
      {{{"__metadata__", DType::F32, {1}, &value}}, "the name is reserved"},
      {{{"x", DType::F32, {2, -1}, &value}}, "negative dimension"},
      {{{"x", DType::F32, {INT64_MAX, 2}, &value}}, "more elements"},
      {{{"x", DType::F32, {1}, nullptr}}, "no data"},
      {{{"\xff", DType::F32, {1}, &value}}, "not UTF-8"},
  };
  for (const Case &c : cases) {
    try {
      writeSafeTensors(path, c.tensors);
      ADD_FAILURE() << "no error for " << c.problem;
    } catch (const Error &e) {
      std::string message = e.what();
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(c.problem), std::string::npos) << message;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())); // no temporary left

  std::string nowhere = dir.file("no/such/dir/x.safetensors");
  try {
    writeSafeTensors(nowhere, {{"x", DType::F32, {1}, &value}});
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(nowhere), std::string::npos)
        << e.what();
  }
}

TEST(SafeTensors, MissingTensorAndWrongDestinationSize) {
  ScratchDir dir;
  std::string path = dir.file("m.safetensors");
  std::vector<float> x = {1, 2, 3};
  writeSafeTensors(path, {{"x", DType::F32, {3}, x.data()}});
  SafeTensorsFile file = SafeTensorsFile::open(path);
  try {
    file.info("h.0.mlp.c_fc.weight");
    FAIL() << "no error for a missing tensor";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": no tensor 'h.0.mlp.c_fc.weight'");
  }
  std::vector<float> dst(4);
  EXPECT_THROW(file.read("x", dst.data(), 16), Error);
  EXPECT_THROW(file.read("y", dst.data(), 12), Error);
}

TEST(SafeTensors, EmptyTensorsMayLieAnywhereOnTheTiling) {
  ScratchDir dir;
  std::string header =
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
      R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
      R"("c":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}})"
      "      "; // padding spaces, as the format allows
  std::string path = dir.write("tiled.safetensors", fileBytes(header, "abcd"));
  SafeTensorsFile file = SafeTensorsFile::open(path);
  char b[2];
  file.read("b", b, 2);
  EXPECT_EQ(std::string(b, 2), "cd");
}

// The header length field a few bytes short: the JSON still parses (its
// padding absorbs the difference), but every tensor would be read shifted.
TEST(SafeTensors, AHeaderLengthThatIsOffIsRefused) {
  ScratchDir dir;
  std::vector<float> x = {1, 2, 3}, y = {4, 5};
  std::string path = dir.file("w.safetensors");
  writeSafeTensors(path, {{"x", DType::F32, {3}, x.data()},
                          {"y", DType::F32, {2}, y.data()}});
  std::string good = readBytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(good[size_t(i)]);
  for (uint64_t shortBy = 1; shortBy <= 4; ++shortBy) {
    std::string bad = good;
    for (int i = 0; i < 8; ++i)
      bad[size_t(i)] = static_cast<char>(((n - shortBy) >> (8 * i)) & 0xff);
    std::string damaged = dir.write("short.safetensors", bad);
    std::string message = openError(damaged);
    // Cut into the JSON, the header no longer parses; cut into its padding,
    // it does, and the tiling is what refuses it.
    bool intoPadding = good[8 + n - shortBy] == ' ';
    EXPECT_NE(message.find(intoPadding ? "after the last tensor's data"
                                       : "header is not valid JSON"),
              std::string::npos)
        << "short by " << shortBy << ": " << message;
  }
  EXPECT_EQ(good[8 + n - 1], ' ') << "no padding: the case is not tested";
}

// Every way a file can be corrupt: each is an Error "PATH: <problem>".
struct CorruptFile {
  const char *label;
  std::string bytes;
  const char *problem; // a part of the message
};

// Names the case in test listings; gtest would otherwise print the bytes of
// the struct, pointers included, and the discovered test names would change
// from build to build.
void PrintTo(const CorruptFile &file, std::ostream *os) { *os << file.label; }

class SafeTensorsCorrupt : public testing::TestWithParam<CorruptFile> {};

TEST_P(SafeTensorsCorrupt, IsAnErrorNamingTheFile) {
  ScratchDir dir;
  std::string path = dir.write("corrupt.safetensors", GetParam().bytes);
  std::string message = openError(path);
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_NE(message.find(GetParam().problem), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// A file holding the one tensor "t", its header fields given as JSON text.
static std::string oneTensor(const std::string &dtype, const std::string &shape,
                             const std::string &offsets,
                             const std::string &data) {
  return fileBytes(R"({"t":{"dtype":")" + dtype + R"(","shape":)" + shape +
                       R"(,"data_offsets":)" + offsets + "}}",
                   data);
}

INSTANTIATE_TEST_SUITE_P(
    Files, SafeTensorsCorrupt,
    testing::Values(
        CorruptFile{"Empty", "", "too short"},
        CorruptFile{"Short", std::string("\x10\0\0", 3), "too short"},
        CorruptFile{"HeaderBeyondFile", fileBytes("{}", "").substr(0, 8) + "{",
                    "header length 2 exceeds the file (9 bytes)"},
        CorruptFile{"HugeHeaderLength", std::string(8, '\xff') + "{}",
                    "exceeds the file"},
        CorruptFile{"NotJson", fileBytes("{\"t\":", ""),
                    "header is not valid JSON"},
        CorruptFile{"Garbage", fileBytes("\x01\x02\xfe", ""),
                    "header is not valid JSON"},
        CorruptFile{"NotAnObject", fileBytes("[1,2]", ""),
                    "header is not a JSON object"},
        CorruptFile{"EntryNotAnObject", fileBytes(R"({"t":3})", ""),
                    "tensor 't': entry is not an object"},
        CorruptFile{"UnknownDType", oneTensor("F8", "[1]", "[0,1]", "x"),
                    "tensor 't': unknown dtype 'F8'"},
        CorruptFile{
            "NoDType",
            fileBytes(R"({"t":{"shape":[1],"data_offsets":[0,1]}})", "x"),
            "has no dtype"},
        CorruptFile{"NegativeDimension", oneTensor("U8", "[2,-1]", "[0,0]", ""),
                    "shape [2, -1] has a negative dimension"},
        CorruptFile{"ElementCountOverflow",
                    oneTensor("U8", "[4294967296,4294967296]", "[0,0]", ""),
                    "more elements than int64 holds"},
        CorruptFile{"ByteCountOverflow",
                    oneTensor("F64", "[4611686018427387904]", "[0,0]", ""),
                    "more bytes than size_t holds"},
        CorruptFile{"DimensionBeyondInt64",
                    oneTensor("U8", "[18446744073709551615]", "[0,0]", ""),
                    "dimension beyond int64"},
        CorruptFile{"ShapeNotIntegers", oneTensor("U8", "[1.5]", "[0,1]", "x"),
                    "shape is not a list of integers"},
        CorruptFile{"OffsetsBeyondData",
                    oneTensor("F32", "[2]", "[0,8]", "1234"),
                    "data_offsets [0, 8] outside the data section (4 bytes)"},
        CorruptFile{"EndBeforeBegin", oneTensor("U8", "[0]", "[3,1]", "1234"),
                    "data_offsets [3, 1] end before begin"},
        CorruptFile{"NegativeOffset", oneTensor("U8", "[1]", "[-1,0]", "1"),
                    "not a pair of non-negative integers"},
        CorruptFile{"ByteCountMismatch",
                    oneTensor("F32", "[3]", "[0,8]", "12345678"),
                    "hold 8 bytes, shape [3] of F32 needs 12"},
        CorruptFile{
            "Overlap",
            fileBytes(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                      R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                      "123456"),
            "tensors 'a' and 'b' overlap"},
        CorruptFile{
            "Hole",
            fileBytes(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                      R"("b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                      "123456"),
            "2 unused bytes before tensor 'b'"},
        CorruptFile{"HoleFirst", oneTensor("U8", "[1]", "[1,2]", "12"),
                    "1 unused bytes before tensor 't'"},
        CorruptFile{"DataAfterTheLastTensor",
                    oneTensor("U8", "[1]", "[0,1]", "123"),
                    "2 bytes after the last tensor's data"},
        CorruptFile{"DataButNoTensor", fileBytes("{}", "1"),
                    "1 bytes after the last tensor's data"},
        CorruptFile{"LeadingSpace", fileBytes(" {}", ""),
                    "header of 3 bytes is not a JSON object padded with spaces"},
        CorruptFile{"PaddedWithANewline", fileBytes("{}\n", ""),
                    "is not a JSON object padded with spaces"},
        CorruptFile{"PartOfTheDataInTheHeader",
                    fileBytes(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}x)", ""),
                    "header is not valid JSON"},
        CorruptFile{"MetadataNotStrings",
                    fileBytes(R"({"__metadata__":{"step":7}})", ""),
                    "__metadata__ entry 'step' is not a string"},
        CorruptFile{"MetadataNotAnObject",
                    fileBytes(R"({"__metadata__":"pt"})", ""),
                    "__metadata__ is not an object"}),
    [](const testing::TestParamInfo<CorruptFile> &info) {
      return std::string(info.param.label);
    });

TEST(SafeTensors, MissingFileAndDirectory) {
  ScratchDir dir;
  std::string missing = dir.file("missing.safetensors");
  std::string message = openError(missing);
  EXPECT_EQ(message.rfind(missing + ": cannot open: ", 0), 0u) << message;
  message = openError(dir.path());
  EXPECT_EQ(message, dir.path() + ": not a regular file");
}
