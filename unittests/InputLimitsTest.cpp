#include "dsc/Support/InputLimits.h"

#include <gtest/gtest.h>

#include <string>

using mlir::dsc::findExcessiveNesting;

static std::string nestedModules(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i)
    s += "module {";
  for (int i = 0; i < depth; ++i)
    s += "}";
  return s;
}

TEST(InputLimits, ShallowInputPasses) {
  EXPECT_FALSE(findExcessiveNesting(nestedModules(10), 10));
  EXPECT_FALSE(findExcessiveNesting(
      "func.func @f(%a: tensor<2x8xf32>) -> tensor<2x8xf32> {\n"
      "  return %a : tensor<2x8xf32>\n}\n",
      3));
}

TEST(InputLimits, ReportsTheFirstBracketTooDeep) {
  std::string text = nestedModules(11);
  std::optional<size_t> at = findExcessiveNesting(text, 10);
  ASSERT_TRUE(at);
  // The 11th "module {" opens at offset 10 * 8 + 7.
  EXPECT_EQ(*at, 10u * 8 + 7);
  EXPECT_EQ(text[*at], '{');
}

TEST(InputLimits, ArrowsAndComparisonsAreNotBrackets) {
  // Every `->` and `>=` would otherwise close a level and hide real depth.
  std::string text = "(((( -> -> -> >= >= ((";
  EXPECT_TRUE(findExcessiveNesting(text, 5));
  EXPECT_FALSE(findExcessiveNesting("((<=))", 2));
}

TEST(InputLimits, StringsAndCommentsAreSkipped) {
  EXPECT_FALSE(findExcessiveNesting("\"{{{{{{\" // ((((((((\n()", 1));
  // An escaped quote does not end the string.
  EXPECT_FALSE(findExcessiveNesting("\"\\\"{{{{\" {}", 1));
  // An unterminated string or comment is not an error here.
  EXPECT_FALSE(findExcessiveNesting("\"{{{", 1));
}

TEST(InputLimits, UnbalancedClosersDoNotUnderflow) {
  EXPECT_TRUE(findExcessiveNesting("}}}}}}))))(((", 2));
}

TEST(InputLimits, BytecodeIsNotScanned) {
  std::string bytecode = "ML\xef" "R";
  bytecode += std::string(1000, '{');
  EXPECT_FALSE(findExcessiveNesting(bytecode, 10));
}
