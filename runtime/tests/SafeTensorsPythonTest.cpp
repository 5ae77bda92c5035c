//===- SafeTensorsPythonTest.cpp - files written by python/dsc ------------===//
//
// Reads what Inputs/make_safetensors.py wrote with PyTorch and
// dsc.safetensors.save, and holds the C++ writer to the same bytes. ctest
// runs the script first (fixture SafeTensorsFromPython in io.cmake) and
// passes its output directory in DSC_SAFETENSORS_FROM_PYTHON; run by hand
// without it, the tests skip.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/SafeTensors.h"

#include "ScratchDir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

using namespace dsc::rt;
using dsc::rt::test::readBytes;
using dsc::rt::test::ScratchDir;

namespace {

struct Expected {
  const char *name;
  DType dtype;
  std::vector<int64_t> shape;
};

// What make_safetensors.py writes; keep the two in step.
const std::vector<Expected> &expectedTensors() {
  static const std::vector<Expected> tensors = {
      {"empty", DType::F32, {0, 3}},
      {"h.0.attn.c_attn.bias", DType::F16, {5}},
      {"h.0.attn.c_attn.weight", DType::F32, {2, 3}},
      {"idx", DType::I64, {4}},
      {"step", DType::I64, {}},
      {"wte.weight", DType::BF16, {3, 2}},
      {"\xc3\xa9.bias", DType::F32, {1}}, // é
  };
  return tensors;
}

const std::map<std::string, std::string> kMetadata = {
    {"format", "pt"},
    {"note", "dsc \xe2\x9c\x93 \"quoted\"\ttab \xf0\x9f\x9a\x80"}, // ✓, 🚀
};

class SafeTensorsFromPython : public testing::Test {
protected:
  void SetUp() override {
    const char *dir = std::getenv("DSC_SAFETENSORS_FROM_PYTHON");
    if (!dir)
      GTEST_SKIP() << "DSC_SAFETENSORS_FROM_PYTHON is not set (ctest sets it)";
    dir_ = dir;
  }
  std::string model() const { return dir_ + "/model.safetensors"; }
  std::string rawBytes(const std::string &name) const {
    return readBytes(dir_ + "/" + name + ".bin");
  }
  std::string dir_;
};

} // namespace

TEST_F(SafeTensorsFromPython, ReadsEveryTensorAndTheMetadata) {
  SafeTensorsFile file = SafeTensorsFile::open(model());
  std::vector<std::string> names;
  for (const Expected &e : expectedTensors())
    names.push_back(e.name);
  EXPECT_EQ(file.names(), names);
  EXPECT_EQ(file.metadata(), kMetadata);
  for (const Expected &e : expectedTensors()) {
    const TensorInfo &info = file.info(e.name);
    EXPECT_EQ(info.dtype, e.dtype) << e.name;
    EXPECT_EQ(info.shape, e.shape) << e.name;
    std::string expected = rawBytes(e.name);
    ASSERT_EQ(info.bytes, expected.size()) << e.name;
    std::string actual(info.bytes, '\0');
    file.read(e.name, actual.data(), actual.size());
    EXPECT_EQ(actual, expected) << e.name;
  }
  // A few values, so that the .bin files are not trusted blindly either.
  float weight[6];
  file.read("h.0.attn.c_attn.weight", weight, sizeof weight);
  EXPECT_EQ(weight[0], -1.0f);
  EXPECT_EQ(weight[5], 1.5f);
  int64_t idx[4];
  file.read("idx", idx, sizeof idx);
  EXPECT_EQ(idx[2], int64_t(1) << 40);
  EXPECT_EQ(idx[3], -(int64_t(1) << 62));
  int64_t step;
  file.read("step", &step, sizeof step);
  EXPECT_EQ(step, 1234567890123);
  uint16_t bf16[6];
  file.read("wte.weight", bf16, sizeof bf16);
  EXPECT_EQ(bf16[0], 0x3f80); // 1.0
  EXPECT_EQ(bf16[1], 0xbfc0); // -1.5
}

TEST_F(SafeTensorsFromPython, CppWriterWritesTheSameBytes) {
  std::vector<std::string> data;
  for (const Expected &e : expectedTensors())
    data.push_back(rawBytes(e.name));
  std::vector<TensorView> views;
  // Reversed: the writer must sort by name as the Python writer does.
  for (size_t i = expectedTensors().size(); i-- > 0;) {
    const Expected &e = expectedTensors()[i];
    views.push_back({e.name, e.dtype, e.shape, data[i].data()});
  }
  ScratchDir dir;
  std::string path = dir.file("cpp.safetensors");
  writeSafeTensors(path, views, kMetadata);
  std::string python = readBytes(model());
  ASSERT_FALSE(python.empty());
  EXPECT_EQ(readBytes(path), python);
}
