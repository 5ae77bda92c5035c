//===- OptionRangesTest.cpp - the training options' range table -----------===//

#include "dsc/Config/OptionRanges.h"

#include "llvm/ADT/STLExtras.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::dsc;

namespace {
/// The problem with `value` for `option`, or "" when there is none.
std::string problem(StringRef option, StringRef value) {
  return checkPipelineOption(option, value).value_or("");
}
} // namespace

TEST(OptionRanges, RealsAreFiniteAndWithinBounds) {
  EXPECT_EQ(problem("lr", "0.001"), "");
  EXPECT_EQ(problem("lr", "0"), "");
  EXPECT_EQ(problem("lr", "1e-400"), ""); // underflows to 0, which is in range
  EXPECT_EQ(problem("lr", "nan"), "'nan' is not a finite number");
  EXPECT_EQ(problem("lr", "-Inf"), "'-Inf' is not a finite number");
  EXPECT_EQ(problem("lr", "1e400"), "'1e400' is not a finite number");
  EXPECT_EQ(problem("lr", "-1"), "must be >= 0, got -1");
  EXPECT_EQ(problem("lr", "0x10"), "'0x10' is not a number");
  EXPECT_EQ(problem("lr", " 1"), "' 1' is not a number");
  EXPECT_EQ(problem("lr", "1 "), "'1 ' is not a number");
  EXPECT_EQ(problem("lr", ""), "'' is not a number");
  EXPECT_EQ(problem("eps", "0"), "must be > 0, got 0");
  EXPECT_EQ(problem("cos-min-ratio", "1"), "");
  EXPECT_EQ(problem("cos-min-ratio", "1.01"), "must be in [0, 1], got 1.01");
}

TEST(OptionRanges, IntegersAreDecimalAndBounded) {
  EXPECT_EQ(problem("world-size", "1048576"), "");
  EXPECT_EQ(problem("world-size", "1048577"), "must be in [1, 1048576], got 1048577");
  EXPECT_EQ(problem("world-size", "0"), "must be in [1, 1048576], got 0");
  EXPECT_EQ(problem("world-size", "9223372036854775808"),
            "must be in [1, 1048576], got 9223372036854775808");
  EXPECT_EQ(problem("world-size", "2.0"), "'2.0' is not an integer");
  EXPECT_EQ(problem("world-size", "0x2"), "'0x2' is not an integer");
  EXPECT_EQ(problem("world-size", "-"), "'-' is not an integer");
  EXPECT_EQ(problem("warmup-num-steps", "-1"),
            "must be in [1, 9007199254740992], got -1");
  EXPECT_EQ(problem("zero-stage", "3"), "");
  EXPECT_TRUE(isIntegerPipelineOption("grad-accum"));
  EXPECT_FALSE(isIntegerPipelineOption("lr"));
}

TEST(OptionRanges, ListsHaveTheirLengthAndNoEmptyItems) {
  EXPECT_EQ(problem("betas", "0.9,0.999"), "");
  EXPECT_EQ(problem("betas", "0.9,"), "expected 2 comma-separated numbers, got '0.9,'");
  EXPECT_EQ(problem("betas", ",0.9"), "expected 2 comma-separated numbers, got ',0.9'");
  EXPECT_EQ(problem("betas", "0.9,0.9,0.9"),
            "expected 2 comma-separated numbers, got '0.9,0.9,0.9'");
  EXPECT_EQ(problem("betas", "0.9,1"), "must be in [0, 1), got 1");
  EXPECT_EQ(problem("report", "memory,comm"), "");
  EXPECT_EQ(problem("report", "memory,"), "expected a comma-separated list, got 'memory,'");
  EXPECT_EQ(problem("report", "latency"), "'latency' is not one of memory, comm, estimate");
}

TEST(OptionRanges, ChoicesBooleansAndPathsAreExact) {
  EXPECT_EQ(problem("precision", "bf16"), "");
  EXPECT_EQ(problem("precision", "fp32 "), "'fp32 ' is not one of fp32, bf16, fp16");
  EXPECT_EQ(problem("report-format", ""), "'' is not one of text, json");
  EXPECT_EQ(problem("loss-scaling", "1"), "");
  EXPECT_EQ(problem("loss-scaling", "yes"), "'yes' is not true or false");
  EXPECT_TRUE(isBooleanPipelineOption("checkpoint-activations"));
  EXPECT_FALSE(isBooleanPipelineOption("report-file"));
  EXPECT_EQ(problem("report-file", "r.json"), "");
  EXPECT_EQ(problem("report-file", ""), "expected a file name, got nothing");
  EXPECT_EQ(problem("report-file", "a b.json"),
            "'a b.json': file names with white space are not supported");
  // Not in the table: the pipeline's parser has the last word.
  EXPECT_EQ(problem("no-such-option", "x"), "");
}

TEST(OptionRanges, SchedulesTakeTheirOwnOptions) {
  EXPECT_TRUE(scheduleOptions("none").empty());
  EXPECT_TRUE(llvm::is_contained(scheduleOptions("warmup-lr"), "warmup-max-lr"));
  EXPECT_FALSE(llvm::is_contained(scheduleOptions("warmup-lr"), "total-num-steps"));
  EXPECT_FALSE(llvm::is_contained(scheduleOptions("warmup-cosine-lr"), "warmup-max-lr"));
  EXPECT_TRUE(scheduleNeedsTotal("warmup-decay-lr"));
  EXPECT_FALSE(scheduleNeedsTotal("warmup-lr"));
  for (StringRef scheduler : {"warmup-lr", "warmup-decay-lr", "warmup-cosine-lr"})
    for (StringRef option : scheduleOptions(scheduler))
      EXPECT_TRUE(llvm::is_contained(allScheduleOptions(), option)) << option.str();
}
