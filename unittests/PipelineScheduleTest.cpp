#include "dsc/Analysis/PipelineSchedule.h"
#include "dsc/Analysis/PipelineStages.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace mlir::dsc::pipeline;

namespace {
Schedule build(ScheduleKind kind, int64_t p, int64_t m, int64_t v = 1) {
  auto schedule = buildSchedule(kind, {p, m, v});
  if (!schedule) {
    ADD_FAILURE() << llvm::toString(schedule.takeError());
    return {};
  }
  return std::move(*schedule);
}

Simulation run(const Schedule &schedule, PassCosts costs, double latency = 0) {
  auto simulation = simulatePipeline(schedule, costs, latency);
  if (!simulation) {
    ADD_FAILURE() << llvm::toString(simulation.takeError());
    return {};
  }
  return *simulation;
}

// Costs with no common structure, so that a formula that holds only for
// equal passes would show.
const PassCosts kCosts[] = {{1, 2, 0}, {1.5, 2.5, 0}, {3, 7, 0}};
} // namespace

TEST(PipelineSchedule, NamesRoundTrip) {
  for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::oneFOneB,
                            ScheduleKind::interleaved, ScheduleKind::zeroBubbleH1})
    EXPECT_EQ(parseScheduleKind(stringifyScheduleKind(kind)), kind);
  EXPECT_FALSE(parseScheduleKind("pipedream"));
}

TEST(PipelineSchedule, OneFOneBOrderOfEachRank) {
  // P = 4, M = 6: rank r warms up with P - r - 1 forwards (DeepSpeed's and
  // Megatron's 1F1B), the last rank alternates from the start.
  Schedule s = build(ScheduleKind::oneFOneB, 4, 6);
  auto F = [](int64_t mb) { return Action{PassKind::forward, mb, 0}; };
  auto B = [](int64_t mb) { return Action{PassKind::backward, mb, 0}; };
  EXPECT_EQ(s.ranks[0], (llvm::SmallVector<Action>{F(0), F(1), F(2), F(3), B(0), F(4),
                                                   B(1), F(5), B(2), B(3), B(4), B(5)}));
  EXPECT_EQ(s.ranks[3], (llvm::SmallVector<Action>{F(0), B(0), F(1), B(1), F(2), B(2),
                                                   F(3), B(3), F(4), B(4), F(5), B(5)}));
}

TEST(PipelineSchedule, InterleavedOrderOfEachRank) {
  // P = 2, M = 4, V = 2 (the e2e test's shape): rank r warms up with
  // 2(P - r - 1) + (V - 1)P forwards, groups of P micro-batches through
  // chunk 0, then chunk 1; the backwards run the chunks in reverse.
  Schedule s = build(ScheduleKind::interleaved, 2, 4, 2);
  auto F = [](int64_t mb, int64_t c) { return Action{PassKind::forward, mb, c}; };
  auto B = [](int64_t mb, int64_t c) { return Action{PassKind::backward, mb, c}; };
  EXPECT_EQ(s.ranks[0],
            (llvm::SmallVector<Action>{F(0, 0), F(1, 0), F(0, 1), F(1, 1),
                                       F(2, 0), B(0, 1), F(3, 0), B(1, 1),
                                       F(2, 1), B(0, 0), F(3, 1), B(1, 0),
                                       B(2, 1), B(3, 1), B(2, 0), B(3, 0)}));
  EXPECT_EQ(s.ranks[1],
            (llvm::SmallVector<Action>{F(0, 0), F(1, 0), F(0, 1), B(0, 1),
                                       F(1, 1), B(1, 1), F(2, 0), B(0, 0),
                                       F(3, 0), B(1, 0), F(2, 1), B(2, 1),
                                       F(3, 1), B(3, 1), B(2, 0), B(3, 0)}));
}

TEST(PipelineSchedule, GPipeAndOneFOneBBubbleIsPMinusOneOverM) {
  for (int64_t p : {1, 2, 4, 8})
    for (int64_t m : {1, 3, 8, 16})
      for (PassCosts c : kCosts)
        for (ScheduleKind kind : {ScheduleKind::gpipe, ScheduleKind::oneFOneB}) {
          Simulation sim = run(build(kind, p, m), c);
          EXPECT_NEAR(sim.bubbleFraction(), double(p - 1) / double(m), 1e-12)
              << stringifyScheduleKind(kind).str() << " P=" << p << " M=" << m;
        }
}

TEST(PipelineSchedule, InterleavedBubbleIsPMinusOneOverVM) {
  for (int64_t p : {2, 4, 8})
    for (int64_t m : {p, 2 * p, 3 * p})
      for (int64_t v : {2, 3, 4})
        for (PassCosts c : kCosts) {
          Simulation sim = run(build(ScheduleKind::interleaved, p, m, v), c);
          EXPECT_NEAR(sim.bubbleFraction(), double(p - 1) / double(v * m), 1e-9)
              << "P=" << p << " M=" << m << " V=" << v;
        }
}

TEST(PipelineSchedule, ZeroBubbleH1BubbleIsPMinusOneTimesFPlusBMinusW) {
  // The zero-bubble paper's ZB-H1: (P-1)(F+B-W) of idle time where 1F1B with
  // the same split costs has (P-1)(F+B+W), for W no larger than F or B.
  const PassCosts split[] = {{1, 1, 1}, {1, 2, 1}, {2, 2, 1}, {3, 3, 2}, {1.5, 1.25, 0.75}};
  for (int64_t p : {2, 4, 8})
    for (int64_t m : {p, 2 * p, 3 * p})
      for (PassCosts c : split) {
        Simulation zb = run(build(ScheduleKind::zeroBubbleH1, p, m), c);
        EXPECT_NEAR(zb.makespan - zb.ideal, double(p - 1) * (c.forward + c.backward - c.weight),
                    1e-9)
            << "P=" << p << " M=" << m;
        PassCosts whole{c.forward, c.backward + c.weight, 0};
        Simulation ofob = run(build(ScheduleKind::oneFOneB, p, m), whole);
        EXPECT_NEAR(ofob.makespan - ofob.ideal,
                    double(p - 1) * (c.forward + c.backward + c.weight), 1e-9);
      }
}

TEST(PipelineSchedule, PeakActivationsPerRank) {
  // GPipe holds every micro-batch; 1F1B holds P - r on rank r; ZB-H1 holds
  // P on every rank (its deferred weight passes keep their inputs), which is
  // 1F1B's peak over the ranks: the same memory.
  const int64_t p = 4, m = 8;
  Simulation gpipe = run(build(ScheduleKind::gpipe, p, m), {1, 2, 0});
  Simulation ofob = run(build(ScheduleKind::oneFOneB, p, m), {1, 2, 0});
  Simulation zb = run(build(ScheduleKind::zeroBubbleH1, p, m), {1, 1, 1});
  for (int64_t r = 0; r < p; ++r) {
    EXPECT_EQ(gpipe.peakInFlight[r], m);
    EXPECT_EQ(ofob.peakInFlight[r], p - r);
    EXPECT_EQ(zb.peakInFlight[r], p);
  }
}

TEST(PipelineSchedule, SendLatencyLengthensTheCriticalPath) {
  // 1F1B's critical path crosses P - 1 stage boundaries forward and P - 1
  // backward once each: 2 (P - 1) sends; every other send overlaps compute
  // when the latency is below a pass.
  const int64_t p = 4, m = 8;
  Schedule s = build(ScheduleKind::oneFOneB, p, m);
  Simulation none = run(s, {1, 2, 0});
  Simulation some = run(s, {1, 2, 0}, 0.25);
  EXPECT_GE(some.makespan, none.makespan + 2 * (p - 1) * 0.25 - 1e-12);
}

TEST(PipelineSchedule, InvalidShapesAreErrors) {
  auto message = [](ScheduleKind kind, ScheduleShape shape) {
    auto s = buildSchedule(kind, shape);
    return s ? std::string() : llvm::toString(s.takeError());
  };
  EXPECT_NE(message(ScheduleKind::interleaved, {4, 6, 2}).find("multiple of the pipeline stages"),
            std::string::npos);
  EXPECT_NE(message(ScheduleKind::interleaved, {4, 8, 1}).find("at least 2 model chunks"),
            std::string::npos);
  EXPECT_NE(message(ScheduleKind::oneFOneB, {4, 8, 2}).find("one model chunk"),
            std::string::npos);
  EXPECT_NE(message(ScheduleKind::gpipe, {0, 8, 1}).find("at least one stage"),
            std::string::npos);
}

TEST(PipelineSchedule, MalformedListsAreErrorsNotHangs) {
  // Rank 0 starting with the backward of a micro-batch it has not run
  // forward waits on itself, and rank 1 on rank 0.
  Schedule s = build(ScheduleKind::oneFOneB, 2, 2);
  std::swap(s.ranks[0][0], s.ranks[0].back());
  auto deadlocked = simulatePipeline(s, {1, 2, 0});
  ASSERT_FALSE(deadlocked);
  EXPECT_NE(llvm::toString(deadlocked.takeError()).find("deadlocks"), std::string::npos);

  Schedule missing = build(ScheduleKind::zeroBubbleH1, 2, 2);
  missing.ranks[1].pop_back(); // a weight pass nobody waits for
  auto incomplete = simulatePipeline(missing, {1, 1, 1});
  ASSERT_FALSE(incomplete);
  EXPECT_NE(llvm::toString(incomplete.takeError()).find("misses"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Stage cuts
//===----------------------------------------------------------------------===//

TEST(PipelineStages, EqualBlocksSplitEvenly) {
  auto cut = balanceStages(llvm::SmallVector<double>(12, 1.0), 4);
  ASSERT_TRUE(bool(cut)) << llvm::toString(cut.takeError());
  EXPECT_EQ(cut->firstBlock, (llvm::SmallVector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(cut->maxStageCost(), 3.0);
}

TEST(PipelineStages, TheHeadTakesBlocksFromTheLastStage) {
  // GPT-2-like: 12 equal blocks and a head costing two of them. The best
  // largest stage is 4 (14 in 4 stages); the last stage then holds one
  // block beside the head.
  auto cut = balanceStages(llvm::SmallVector<double>(12, 1.0), 4, 0, 2);
  ASSERT_TRUE(bool(cut)) << llvm::toString(cut.takeError());
  EXPECT_EQ(cut->firstBlock, (llvm::SmallVector<int64_t>{0, 4, 8, 11}));
  EXPECT_EQ(cut->stageCost, (llvm::SmallVector<double>{4, 4, 3, 3}));
}

TEST(PipelineStages, OptimalAgainstEveryCut) {
  // Every way to cut n ≤ 8 blocks into P stages, against the DP's answer.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> costOf(0, 9);
  for (int trial = 0; trial < 200; ++trial) {
    int n = 1 + trial % 8;
    int p = 1 + trial % std::min(n, 4);
    llvm::SmallVector<double> costs;
    for (int i = 0; i < n; ++i)
      costs.push_back(costOf(rng));
    double prologue = costOf(rng), epilogue = costOf(rng);
    double bestMax = std::numeric_limits<double>::infinity();
    std::function<void(int, int, double)> visit = [&](int stage, int begin, double most) {
      if (stage == p - 1) {
        double c = epilogue + (stage == 0 ? prologue : 0);
        for (int i = begin; i < n; ++i)
          c += costs[i];
        bestMax = std::min(bestMax, std::max(most, c));
        return;
      }
      double c = stage == 0 ? prologue : 0;
      for (int end = begin + 1; end <= n - (p - 1 - stage); ++end) {
        c += costs[end - 1];
        visit(stage + 1, end, std::max(most, c));
      }
    };
    visit(0, 0, 0);
    auto cut = balanceStages(costs, p, prologue, epilogue);
    ASSERT_TRUE(bool(cut)) << llvm::toString(cut.takeError());
    EXPECT_EQ(cut->maxStageCost(), bestMax) << "trial " << trial;
    ASSERT_EQ(cut->firstBlock.size(), size_t(p));
    EXPECT_EQ(cut->firstBlock[0], 0);
    for (int s = 1; s < p; ++s)
      EXPECT_LT(cut->firstBlock[s - 1], cut->firstBlock[s]) << "empty stage";
  }
}

TEST(PipelineStages, ImpossibleCutsAreErrors) {
  auto tooMany = balanceStages(llvm::SmallVector<double>(3, 1.0), 4);
  ASSERT_FALSE(bool(tooMany));
  EXPECT_NE(llvm::toString(tooMany.takeError()).find("cannot cut 3 blocks into 4"),
            std::string::npos);
  auto negative = balanceStages({1.0, -1.0}, 1);
  ASSERT_FALSE(bool(negative));
  llvm::consumeError(negative.takeError());
}
