//===- DataScheduleTest.cpp - DeepSpeed's data-efficiency schedules -------===//
//
// The tables are DeepSpeed's (its curriculum scheduler's and random-LTD
// scheduler's formulas worked by hand for small parameters), so a change in
// the arithmetic, the step numbering or the clamping shows here.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/DataSchedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

using namespace dsc::rt;
using ::testing::ElementsAre;
using ::testing::Optional;
using ::testing::HasSubstr;

namespace {

std::vector<int64_t> seqlens(const CurriculumSchedule &s, int64_t steps) {
  std::vector<int64_t> out;
  for (int64_t step = 1; step <= steps; ++step)
    out.push_back(curriculumSeqlen(s, step));
  return out;
}

TEST(DataScheduleTest, CurriculumFixedLinearTable) {
  // min 2, max 10, total_curriculum_step 8, difficulty_step 2.
  CurriculumSchedule s;
  s.minDifficulty = 2;
  s.maxDifficulty = 10;
  s.totalSteps = 8;
  s.difficultyStep = 2;
  EXPECT_EQ(checkCurriculum(s), std::nullopt);
  EXPECT_THAT(seqlens(s, 10), ElementsAre(2, 4, 4, 6, 6, 8, 8, 10, 10, 10));
}

TEST(DataScheduleTest, CurriculumFixedDiscreteTable) {
  CurriculumSchedule s;
  s.type = CurriculumType::FixedDiscrete;
  s.minDifficulty = 1;
  s.maxDifficulty = 5;
  s.difficulty = {1, 2, 3, 4, 5};
  s.maxStep = {2, 4, 6, 8};
  EXPECT_EQ(checkCurriculum(s), std::nullopt);
  EXPECT_THAT(seqlens(s, 10), ElementsAre(1, 1, 2, 2, 3, 3, 4, 4, 5, 5));
}

TEST(DataScheduleTest, CurriculumFixedDiscreteStopsAtTheMaximum) {
  // update_difficulty moves only while below max_difficulty: a list that
  // reaches it and drops again stays at the maximum.
  CurriculumSchedule s;
  s.type = CurriculumType::FixedDiscrete;
  s.minDifficulty = 2;
  s.maxDifficulty = 8;
  s.difficulty = {4, 8, 2};
  s.maxStep = {1, 2};
  EXPECT_THAT(seqlens(s, 4), ElementsAre(4, 8, 8, 8));
}

TEST(DataScheduleTest, CurriculumFixedRootTable) {
  // floor(sqrt(s / 16) * 56 + 8) less its remainder modulo 8:
  // s=1: 22 -> 16; s=2: 27.79 -> 24; s=4: 36 -> 32; s=9: 50 -> 48;
  // s=16: 64.
  CurriculumSchedule s;
  s.type = CurriculumType::FixedRoot;
  s.minDifficulty = 8;
  s.maxDifficulty = 64;
  s.totalSteps = 16;
  s.difficultyStep = 8;
  s.rootDegree = 2;
  EXPECT_EQ(curriculumSeqlen(s, 1), 16);
  EXPECT_EQ(curriculumSeqlen(s, 2), 24);
  EXPECT_EQ(curriculumSeqlen(s, 4), 32);
  EXPECT_EQ(curriculumSeqlen(s, 9), 48);
  EXPECT_EQ(curriculumSeqlen(s, 16), 64);
  EXPECT_EQ(curriculumSeqlen(s, 100), 64);
}

TEST(DataScheduleTest, CurriculumChecks) {
  CurriculumSchedule s;
  s.minDifficulty = 8;
  s.maxDifficulty = 4;
  s.totalSteps = 1;
  EXPECT_THAT(checkCurriculum(s), Optional(HasSubstr("max_difficulty")));
  s.maxDifficulty = 16;
  s.difficultyStep = 0;
  EXPECT_THAT(checkCurriculum(s), Optional(HasSubstr("difficulty_step")));
  s.type = CurriculumType::FixedDiscrete;
  s.difficulty = {8, 16};
  s.maxStep = {};
  EXPECT_THAT(checkCurriculum(s), Optional(HasSubstr("one more")));
  s.difficulty = {8, 16, 32};
  s.maxStep = {2, 4};
  EXPECT_THAT(checkCurriculum(s), Optional(HasSubstr("max_difficulty")));
}

RandomLtdSchedule smallLtd() {
  RandomLtdSchedule s;
  s.minValue = 2;
  s.maxValue = 8;
  s.requireSteps = 6;
  s.seqPerStep = 2;
  s.totalLayers = 4;
  s.ltdLayers = 2;
  return s;
}

TEST(DataScheduleTest, RandomLtdFixedLinearTable) {
  // DeepSpeed's global step g = step - 1: floor(g / 6 * 6 + 2) less its
  // remainder modulo 2: 2, 2, 4, 4, 6, 6, 8, then 8.
  RandomLtdSchedule s = smallLtd();
  EXPECT_EQ(checkRandomLtd(s), std::nullopt);
  std::vector<int64_t> kept;
  for (int64_t step = 1; step <= 9; ++step)
    kept.push_back(randomLtdKept(s, step));
  EXPECT_THAT(kept, ElementsAre(2, 2, 4, 4, 6, 6, 8, 8, 8));
}

TEST(DataScheduleTest, RandomLtdConsumedLayerTokens) {
  // Global batch 4: each step adds 4 * (kept * 2 + 8 * 2):
  // 80, 80, 96, 96, 112, 112, 128.
  RandomLtdSchedule s = smallLtd();
  auto kept = [&](int64_t step) { return randomLtdKept(s, step); };
  EXPECT_EQ(consumedLayerTokens(s, 4, 1, kept), 80);
  EXPECT_EQ(consumedLayerTokens(s, 4, 7, kept), 704);
}

TEST(DataScheduleTest, RandomLtdChecks) {
  RandomLtdSchedule s = smallLtd();
  s.seqPerStep = 0;
  EXPECT_THAT(checkRandomLtd(s), Optional(HasSubstr("seq_per_step")));
  s = smallLtd();
  s.ltdLayers = 5;
  EXPECT_THAT(checkRandomLtd(s), Optional(HasSubstr("random_ltd_layer_num")));
}

TEST(DataScheduleTest, HistogramCountsStepsPerLength) {
  RandomLtdSchedule s = smallLtd();
  LengthHistogram h =
      lengthHistogram(9, [&](int64_t step) { return randomLtdKept(s, step); });
  EXPECT_EQ(h, (LengthHistogram{{2, 2}, {4, 2}, {6, 2}, {8, 3}}));
}

TEST(DataScheduleTest, BucketsAreTheFewestWithinTheBudget) {
  // Linear cost, exact total 2*3 + 4 + 6*2 + 8 = 30. Merging 2 into 4 costs
  // 6, 4 into 6 costs 2, 6 into 8 costs 4.
  LengthHistogram h{{2, 3}, {4, 1}, {6, 2}, {8, 1}};
  LengthCost linear{0, 1, 0};
  EXPECT_THAT(chooseBuckets(h, linear, 0), ElementsAre(2, 4, 6, 8));
  EXPECT_THAT(chooseBuckets(h, linear, 0.1), ElementsAre(2, 6, 8));
  // Two buckets cost at least 8 (2, 8): over 6 (20%), under 10 (33%).
  EXPECT_THAT(chooseBuckets(h, linear, 0.2), ElementsAre(2, 6, 8));
  EXPECT_THAT(chooseBuckets(h, linear, 0.27), ElementsAre(2, 8));
  EXPECT_NEAR(bucketOverhead(h, {2, 8}, linear), 8.0 / 30.0, 1e-12);
  EXPECT_THAT(chooseBuckets(h, linear, 10), ElementsAre(8));
}

TEST(DataScheduleTest, BucketForRoundsUp) {
  std::vector<int64_t> buckets{16, 48, 64};
  EXPECT_EQ(bucketFor(buckets, 1), 16);
  EXPECT_EQ(bucketFor(buckets, 16), 16);
  EXPECT_EQ(bucketFor(buckets, 17), 48);
  EXPECT_EQ(bucketFor(buckets, 64), 64);
}

TEST(DataScheduleTest, GptScaleScheduleNeedsFewBuckets) {
  // DeepSpeed's GPT-3 random-LTD example: 128 -> 2048 kept tokens over
  // 200000 steps in steps of 16 (121 lengths), FLOPs a quadratic of the
  // length; 2% of the exact FLOPs allows a few dozen buckets, not 121.
  RandomLtdSchedule s;
  s.minValue = 128;
  s.maxValue = 2048;
  s.requireSteps = 200000;
  s.seqPerStep = 16;
  s.totalLayers = 24;
  s.ltdLayers = 22;
  LengthHistogram h = lengthHistogram(
      250000, [&](int64_t step) { return randomLtdKept(s, step); });
  EXPECT_EQ(h.size(), 121u);
  LengthCost cost{1e9, 2e7, 3e3};
  std::vector<int64_t> buckets = chooseBuckets(h, cost, 0.02);
  EXPECT_EQ(buckets.back(), 2048);
  EXPECT_LE(bucketOverhead(h, buckets, cost), 0.02);
  EXPECT_LT(buckets.size(), 60u);
  // Dropping any bucket but the last breaks the budget: none is spare.
  for (size_t i = 0; i + 1 < buckets.size(); ++i) {
    std::vector<int64_t> fewer = buckets;
    fewer.erase(fewer.begin() + i);
    EXPECT_GT(bucketOverhead(h, fewer, cost), 0.02) << "bucket " << buckets[i];
  }
}

TEST(DataScheduleTest, RunSettingsPlanPicksEachStepsBuckets) {
  // What --dsc-data-variants compiles in: both schedules and their buckets.
  DataSchedulePlan plan;
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"curriculum_schedule", "fixed_linear"},
           {"curriculum_min", "2"},
           {"curriculum_max", "10"},
           {"curriculum_total_steps", "8"},
           {"curriculum_difficulty_step", "2"},
           {"curriculum_root_degree", "1.00000000000000000e+00"},
           {"seqlen_buckets", "4,8,10"},
           {"ltd_min", "2"},
           {"ltd_max", "8"},
           {"ltd_require_steps", "6"},
           {"ltd_seq_per_step", "2"},
           {"ltd_total_layers", "4"},
           {"ltd_layers", "2"},
           {"ltd_seed", "7"},
           {"ltd_buckets", "2,6,8"}}) {
    EXPECT_TRUE(isDataScheduleSetting(key)) << key;
    EXPECT_EQ(readDataScheduleSetting(plan, key, value), std::nullopt) << key;
  }
  EXPECT_EQ(checkDataSchedulePlan(plan), std::nullopt);
  EXPECT_EQ(plan.randomLtd->seed, 7);
  // Step 1: seqlen 2 -> bucket 4, kept 2 -> 2. Step 3: seqlen 4, kept 4 ->
  // bucket 6, at most the sequence: 4. Step 8: 10 and 8.
  EXPECT_EQ(plan.stepLengths(1, 10), std::make_pair(int64_t(4), int64_t(2)));
  EXPECT_EQ(plan.stepLengths(3, 10), std::make_pair(int64_t(4), int64_t(4)));
  EXPECT_EQ(plan.stepLengths(8, 10), std::make_pair(int64_t(10), int64_t(8)));
  // Without a schedule the length is the full one.
  DataSchedulePlan none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.stepLengths(5, 16), std::make_pair(int64_t(16), int64_t(16)));
}

TEST(DataScheduleTest, StagedKdRunsTheTeacherUpToItsStop) {
  // What --dsc-data-variants compiles in for --kd-stop-step=3: steps 1-3
  // with the teacher, the later ones without; the lengths stay full.
  DataSchedulePlan plan;
  EXPECT_TRUE(isDataScheduleSetting("kd_stop_step"));
  EXPECT_EQ(readDataScheduleSetting(plan, "kd_stop_step", "3"), std::nullopt);
  EXPECT_EQ(checkDataSchedulePlan(plan), std::nullopt);
  EXPECT_FALSE(plan.empty());
  EXPECT_FALSE(plan.changesLengths());
  EXPECT_TRUE(plan.teacherRuns(1));
  EXPECT_TRUE(plan.teacherRuns(3));
  EXPECT_FALSE(plan.teacherRuns(4));
  EXPECT_FALSE(plan.teacherRuns(1000));
  EXPECT_EQ(plan.stepLengths(4, 16), std::make_pair(int64_t(16), int64_t(16)));
  // Without staged KD every step runs the teacher (of an artifact that has one).
  EXPECT_TRUE(DataSchedulePlan().teacherRuns(1000));
  EXPECT_THAT(readDataScheduleSetting(plan, "kd_stop_step", "0"),
              Optional(HasSubstr("expected a positive integer, got '0'")));
  EXPECT_THAT(readDataScheduleSetting(plan, "kd_stop_step", "two"),
              Optional(HasSubstr("expected a positive integer")));
}

TEST(DataScheduleTest, FixedRandomLtdDrawIsNoSchedule) {
  // What the emitter compiles in for --ltd-kept=8 on 16 tokens, site seed 3
  // (dsc-run --dump-ltd-indices reads it): no schedule, no variants.
  DataSchedulePlan plan;
  EXPECT_TRUE(isDataScheduleSetting("random_ltd_draw"));
  EXPECT_EQ(readDataScheduleSetting(plan, "random_ltd_draw", "16,8,3"), std::nullopt);
  ASSERT_TRUE(plan.ltdDraw.has_value());
  EXPECT_EQ(plan.ltdDraw->length, 16);
  EXPECT_EQ(plan.ltdDraw->kept, 8);
  EXPECT_EQ(plan.ltdDraw->seed, 3);
  EXPECT_EQ(checkDataSchedulePlan(plan), std::nullopt);
  EXPECT_TRUE(plan.empty());
  EXPECT_FALSE(plan.changesLengths());
  for (const char *bad : {"16,8", "16,0,3", "8,16,3", "16,8,3,1", "a,b,c"})
    EXPECT_THAT(readDataScheduleSetting(plan, "random_ltd_draw", bad),
                Optional(HasSubstr("expected LENGTH,KEPT,SEED with 1 <= KEPT <= LENGTH")))
        << bad;
}

TEST(DataScheduleTest, RunSettingsErrors) {
  DataSchedulePlan plan;
  EXPECT_FALSE(isDataScheduleSetting("steps_per_print"));
  EXPECT_THAT(readDataScheduleSetting(plan, "curriculum_schedule", "fixed_cubic"),
              Optional(HasSubstr("expected fixed_linear, fixed_root or fixed_discrete")));
  EXPECT_THAT(readDataScheduleSetting(plan, "ltd_min", "-3"),
              Optional(HasSubstr("expected an integer")));
  EXPECT_THAT(readDataScheduleSetting(plan, "ltd_buckets", "2,,4"),
              Optional(HasSubstr("comma-separated integers")));
  EXPECT_THAT(readDataScheduleSetting(plan, "ltd_colour", "red"),
              Optional(HasSubstr("unknown compiled-in run setting")));
  // A schedule without its buckets.
  DataSchedulePlan partial;
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"ltd_min", "2"}, {"ltd_max", "8"}, {"ltd_total_layers", "4"},
           {"ltd_layers", "2"}})
    EXPECT_EQ(readDataScheduleSetting(partial, key, value), std::nullopt);
  EXPECT_THAT(checkDataSchedulePlan(partial), Optional(HasSubstr("without ltd_buckets")));
}

} // namespace
