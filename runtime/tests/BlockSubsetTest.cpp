//===- BlockSubsetTest.cpp - dsc-ckpt blocks: a student from its teacher --===//

#include "dsc/runtime/BlockSubset.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/SafeTensors.h"

#include "ErrorOf.h"
#include "ScratchDir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace dsc::rt;
using dsc::rt::test::errorOf;
using dsc::rt::test::ScratchDir;
using testing::HasSubstr;

namespace {

const std::vector<std::string> kTeacher = {
    "h.0.attn.w", "h.0.mlp.w", "h.1.attn.w", "h.1.mlp.w", "h.2.attn.w",
    "h.2.mlp.w",  "h.10.attn.w", "wte.weight", "ln_f.weight", "hx.0.w"};

std::vector<std::pair<std::string, std::string>>
pairs(const std::vector<RenamedTensor> &plan) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const RenamedTensor &t : plan)
    out.emplace_back(t.name, t.source);
  return out;
}

TEST(BlockSubset, KeptBlocksAreRenumberedInTheOrderGiven) {
  // Blocks 2 and 0, in that order: 2 becomes 0 and 0 becomes 1; blocks 1
  // and 10 go; tensors outside h's blocks (hx is another prefix) stay.
  EXPECT_EQ(pairs(planBlockSubset(kTeacher, "h", {2, 0})),
            (std::vector<std::pair<std::string, std::string>>{
                {"h.0.attn.w", "h.2.attn.w"},
                {"h.0.mlp.w", "h.2.mlp.w"},
                {"h.1.attn.w", "h.0.attn.w"},
                {"h.1.mlp.w", "h.0.mlp.w"},
                {"hx.0.w", "hx.0.w"},
                {"ln_f.weight", "ln_f.weight"},
                {"wte.weight", "wte.weight"}}));
}

TEST(BlockSubset, RefusesWhatCannotBeMeant) {
  EXPECT_THAT(errorOf([] { planBlockSubset(kTeacher, "blocks", {0}); }),
              HasSubstr("no tensor is named 'blocks.<block>.<...>'"));
  EXPECT_THAT(errorOf([] { planBlockSubset(kTeacher, "h", {3}); }),
              HasSubstr("block 3 has no tensor; the file's blocks are 0..10"));
  EXPECT_THAT(errorOf([] { planBlockSubset(kTeacher, "h", {1, 1}); }),
              HasSubstr("block 1 is kept twice"));
  EXPECT_THAT(errorOf([] { planBlockSubset(kTeacher, "h", {}); }),
              HasSubstr("no block to keep"));
}

TEST(BlockSubset, WritesTheSameBytesUnderTheNewNames) {
  ScratchDir dir;
  const float a[2] = {1, 2}, b[3] = {3, 4, 5}, e[1] = {7};
  writeSafeTensors(dir.file("t.safetensors"),
                   {{"h.0.w", DType::F32, {2}, a},
                    {"h.1.w", DType::F32, {3}, b},
                    {"wte", DType::F32, {1}, e}});
  SafeTensorsFile teacher = SafeTensorsFile::open(dir.file("t.safetensors"));
  writeBlockSubset(teacher, "h", {1}, dir.file("s.safetensors"));
  SafeTensorsFile student = SafeTensorsFile::open(dir.file("s.safetensors"));
  EXPECT_EQ(student.names(), (std::vector<std::string>{"h.0.w", "wte"}));
  float got[3] = {};
  student.read("h.0.w", got, sizeof got);
  EXPECT_EQ(std::vector<float>(got, got + 3), std::vector<float>(b, b + 3));
  EXPECT_THAT(errorOf([&] {
                writeBlockSubset(teacher, "h", {4}, dir.file("x.safetensors"));
              }),
              HasSubstr("t.safetensors: block 4 has no tensor"));
}

} // namespace
