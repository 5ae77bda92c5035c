#include "dsc/Analysis/BufferPlan.h"

#include <gtest/gtest.h>

#include <random>

using mlir::dsc::BufferPlan;
using mlir::dsc::BufferRequest;
using mlir::dsc::planBuffers;

/// No two buffers alive at the same time share a byte; every offset is
/// aligned; the arena holds every buffer and is never below the live bound.
static void expectValid(llvm::ArrayRef<BufferRequest> rs, const BufferPlan &p,
                        int64_t alignment) {
  ASSERT_EQ(p.offsets.size(), rs.size());
  auto rounded = [&](int64_t b) { return (b + alignment - 1) / alignment * alignment; };
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(p.offsets[i] % alignment, 0);
    EXPECT_LE(p.offsets[i] + rounded(rs[i].bytes), p.arenaBytes);
    for (size_t j = i + 1; j < rs.size(); ++j) {
      bool together = rs[i].firstUse <= rs[j].lastUse && rs[j].firstUse <= rs[i].lastUse;
      bool disjoint = p.offsets[i] + rounded(rs[i].bytes) <= p.offsets[j] ||
                      p.offsets[j] + rounded(rs[j].bytes) <= p.offsets[i];
      if (together && rs[i].bytes > 0 && rs[j].bytes > 0)
        EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " overlap";
    }
  }
  EXPECT_GE(p.arenaBytes, p.maxLiveBytes);
}

TEST(BufferPlan, ChainReusesMemory) {
  // a -> b -> c -> d: each buffer dies when the next is made, so two slots
  // suffice however long the chain.
  std::vector<BufferRequest> rs = {{1024, 0, 1}, {1024, 1, 2}, {1024, 2, 3}, {1024, 3, 4}};
  auto p = planBuffers(rs);
  ASSERT_TRUE(p);
  expectValid(rs, *p, 256);
  EXPECT_EQ(p->arenaBytes, 2048);
  EXPECT_EQ(p->maxLiveBytes, 2048);
  EXPECT_EQ(p->offsets[0], p->offsets[2]);
}

TEST(BufferPlan, SizesRoundToTheAlignment) {
  std::vector<BufferRequest> rs = {{1, 0, 0}, {257, 0, 0}, {0, 0, 0}};
  auto p = planBuffers(rs, 256);
  ASSERT_TRUE(p);
  expectValid(rs, *p, 256);
  EXPECT_EQ(p->arenaBytes, 256 + 512);
}

TEST(BufferPlan, SmallBufferFillsAGap) {
  // A big long-lived buffer, two medium ones in sequence, and a small one
  // alive with the second medium that fits where the first medium was.
  std::vector<BufferRequest> rs = {
      {4096, 0, 10}, {2048, 0, 3}, {2048, 4, 10}, {1024, 5, 6}};
  auto p = planBuffers(rs);
  ASSERT_TRUE(p);
  expectValid(rs, *p, 256);
  EXPECT_EQ(p->arenaBytes, 4096 + 2048 + 1024);
  EXPECT_EQ(p->maxLiveBytes, 4096 + 2048 + 1024);
  // Reached while the small buffer lives, first at its first use.
  EXPECT_EQ(p->busiestPosition, 5);
}

TEST(BufferPlan, BusiestPositionIsTheFirstAtTheMaximum) {
  // 512 bytes live at 2 and again at 7 (a different pair), 256 elsewhere.
  std::vector<BufferRequest> rs = {
      {256, 0, 9}, {256, 2, 3}, {256, 7, 8}};
  auto p = planBuffers(rs);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->maxLiveBytes, 512);
  EXPECT_EQ(p->busiestPosition, 2);
}

TEST(BufferPlan, RandomProgramsAreValidAndNearTheBound) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> rs;
    int n = 1 + rng() % 40;
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % 50;
      rs.push_back({int64_t(rng() % 100000), first, first + int64_t(rng() % 10)});
    }
    auto p = planBuffers(rs, 64);
    ASSERT_TRUE(p);
    expectValid(rs, *p, 64);
    // Best-fit stays within a factor 2 of the lower bound on such inputs.
    EXPECT_LE(p->arenaBytes, 2 * p->maxLiveBytes);
  }
}

TEST(BufferPlan, DeterministicPlans) {
  std::vector<BufferRequest> rs = {{512, 0, 2}, {512, 1, 3}, {512, 2, 4}, {512, 0, 4}};
  auto a = planBuffers(rs), b = planBuffers(rs);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->offsets, b->offsets);
}

TEST(BufferPlan, MalformedRequestsAreRefused) {
  EXPECT_FALSE(planBuffers({{-1, 0, 0}}));
  EXPECT_FALSE(planBuffers({{16, 3, 2}}));
  EXPECT_FALSE(planBuffers({{16, 0, 0}}, 3));
  EXPECT_FALSE(planBuffers({{INT64_MAX, 0, 0}}));
  EXPECT_FALSE(planBuffers({{INT64_MAX / 2, 0, 0}, {INT64_MAX / 2, 0, 0}}, 256));
}
