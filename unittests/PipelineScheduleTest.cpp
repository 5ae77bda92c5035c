#include "dsc/Analysis/PipelineSchedule.h"

#include <gtest/gtest.h>

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
