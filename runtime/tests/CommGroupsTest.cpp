// Who is in which group (Artifact.h, CommGroup) for a few world and
// expert-parallel sizes, in one process: the arithmetic every placement by
// group shares. CommGroupMpiTest.cpp checks that the communicators made
// from it hold those ranks.

#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/Error.h"

#include "ErrorOf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

using namespace dsc::rt;
using dsc::rt::test::errorOf;

namespace {

/// The ranks of `rank`'s group of kind `group`, by index.
std::vector<int> members(const GroupLayout &layout, CommGroup group, int rank) {
  std::vector<int> ranks;
  for (int i = 0; i < layout.size(group); ++i)
    ranks.push_back(layout.member(group, rank, i));
  return ranks;
}

} // namespace

TEST(CommGroups, FourRanksTwoExpertsWide) {
  GroupLayout layout(4, 2);
  EXPECT_EQ(layout.size(CommGroup::World), 4);
  EXPECT_EQ(layout.size(CommGroup::Expert), 2);
  EXPECT_EQ(layout.size(CommGroup::ExpertData), 2);
  // Expert groups {0, 1} and {2, 3}; ExpertData groups {0, 2} and {1, 3}.
  const std::vector<std::vector<int>> expert = {{0, 1}, {0, 1}, {2, 3}, {2, 3}};
  const std::vector<std::vector<int>> data = {{0, 2}, {1, 3}, {0, 2}, {1, 3}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(members(layout, CommGroup::World, r),
              (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(members(layout, CommGroup::Expert, r), expert[size_t(r)]) << r;
    EXPECT_EQ(members(layout, CommGroup::ExpertData, r), data[size_t(r)]) << r;
    EXPECT_EQ(layout.index(CommGroup::World, r), r);
    EXPECT_EQ(layout.index(CommGroup::Expert, r), r % 2);
    EXPECT_EQ(layout.index(CommGroup::ExpertData, r), r / 2);
    EXPECT_EQ(layout.color(CommGroup::World, r), 0);
    EXPECT_EQ(layout.color(CommGroup::Expert, r), r / 2);
    EXPECT_EQ(layout.color(CommGroup::ExpertData, r), r % 2);
    // A rank is in its own group, at its own index.
    for (CommGroup g :
         {CommGroup::World, CommGroup::Expert, CommGroup::ExpertData})
      EXPECT_EQ(layout.member(g, r, layout.index(g, r)), r);
  }
  EXPECT_EQ(layout.describe(CommGroup::Expert, 3),
            "the expert group (ranks 2, 3)");
  EXPECT_EQ(layout.describe(CommGroup::ExpertData, 1),
            "the expert_data group (ranks 1, 3)");
}

TEST(CommGroups, MegatronMeshTensorInnermost) {
  // W = 8, T = 2: tensor groups {0, 1}, {2, 3}, ...; data groups
  // {0, 2, 4, 6} and {1, 3, 5, 7}.
  GroupLayout layout(8, 1, 2);
  EXPECT_EQ(layout.size(CommGroup::Tensor), 2);
  EXPECT_EQ(layout.size(CommGroup::Data), 4);
  for (int r = 0; r < 8; ++r) {
    int first = r - r % 2;
    EXPECT_EQ(members(layout, CommGroup::Tensor, r),
              (std::vector<int>{first, first + 1}))
        << r;
    EXPECT_EQ(members(layout, CommGroup::Data, r),
              (std::vector<int>{r % 2, r % 2 + 2, r % 2 + 4, r % 2 + 6}))
        << r;
    EXPECT_EQ(layout.index(CommGroup::Tensor, r), r % 2);
    EXPECT_EQ(layout.index(CommGroup::Data, r), r / 2);
    EXPECT_EQ(groupIndex(CommGroup::Data, r, 1, 2), r / 2);
    for (CommGroup g : {CommGroup::Tensor, CommGroup::Data})
      EXPECT_EQ(layout.member(g, r, layout.index(g, r)), r);
  }
  EXPECT_EQ(layout.describe(CommGroup::Tensor, 5),
            "the tensor group (ranks 4, 5)");
  EXPECT_EQ(layout.describe(CommGroup::Data, 5),
            "the data group (ranks 1, 3, 5, 7)");
  EXPECT_EQ(errorOf([] { GroupLayout(4, 1, 3); }),
            "tensor-parallel size 3 does not divide the world size 4");
}

TEST(CommGroups, TedMeshExpertGroupsAlongTheData) {
  // W = 8, T = 2, P = 2 (DeepSpeed-TED): tensor groups {0, 1}, {2, 3}, ...;
  // the expert groups pair data indices 0-1 and 2-3 at one tensor index,
  // the expert-data groups the data indices of one parity.
  GroupLayout layout(8, 2, 2);
  EXPECT_EQ(layout.size(CommGroup::Expert), 2);
  EXPECT_EQ(layout.size(CommGroup::ExpertData), 2);
  EXPECT_EQ(layout.size(CommGroup::Data), 4);
  const std::vector<std::vector<int>> expert = {
      {0, 2}, {1, 3}, {0, 2}, {1, 3}, {4, 6}, {5, 7}, {4, 6}, {5, 7}};
  const std::vector<std::vector<int>> replicas = {
      {0, 4}, {1, 5}, {2, 6}, {3, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(members(layout, CommGroup::Expert, r), expert[size_t(r)]) << r;
    EXPECT_EQ(members(layout, CommGroup::ExpertData, r), replicas[size_t(r)])
        << r;
    EXPECT_EQ(layout.index(CommGroup::Expert, r), r / 2 % 2);
    EXPECT_EQ(layout.index(CommGroup::ExpertData, r), r / 4);
    EXPECT_EQ(groupIndex(CommGroup::Expert, r, 2, 2), r / 2 % 2);
    // A rank's expert group shares its tensor index.
    for (int other : expert[size_t(r)])
      EXPECT_EQ(other % 2, r % 2);
  }
  EXPECT_EQ(layout.describe(CommGroup::Expert, 5),
            "the expert group (ranks 5, 7)");
  EXPECT_EQ(errorOf([] { GroupLayout(4, 4, 2); }),
            "expert-parallel size 4 times tensor-parallel size 2 does not "
            "divide the world size 4");
}

TEST(CommGroups, PipelineStagesOutermost) {
  // W = 8, T = 2, P = 2: stage 0 is ranks 0-3, stage 1 ranks 4-7; pipeline
  // groups {r % 4, r % 4 + 4}; data groups within a stage, tensor index
  // alike: {0, 2}, {1, 3}, {4, 6}, {5, 7}.
  GroupLayout layout(8, 1, 2, 2);
  EXPECT_EQ(layout.size(CommGroup::Pipeline), 2);
  EXPECT_EQ(layout.size(CommGroup::Data), 2);
  EXPECT_EQ(layout.size(CommGroup::Tensor), 2);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(layout.stage(r), r / 4) << r;
    EXPECT_EQ(members(layout, CommGroup::Pipeline, r),
              (std::vector<int>{r % 4, r % 4 + 4}))
        << r;
    int base = r / 4 * 4 + r % 2;
    EXPECT_EQ(members(layout, CommGroup::Data, r),
              (std::vector<int>{base, base + 2}))
        << r;
    EXPECT_EQ(layout.index(CommGroup::Pipeline, r), r / 4);
    EXPECT_EQ(layout.index(CommGroup::Data, r), r % 4 / 2);
    EXPECT_EQ(layout.index(CommGroup::Tensor, r), r % 2);
    for (CommGroup g : {CommGroup::Tensor, CommGroup::Data, CommGroup::Pipeline})
      EXPECT_EQ(layout.member(g, r, layout.index(g, r)), r);
  }
  EXPECT_EQ(layout.describe(CommGroup::Pipeline, 6),
            "the pipeline group (ranks 2, 6)");
  EXPECT_EQ(layout.describe(CommGroup::Data, 5),
            "the data group (ranks 5, 7)");
  // P = W: every rank a stage, the pipeline the world.
  GroupLayout deep(4, 1, 1, 4);
  EXPECT_EQ(members(deep, CommGroup::Pipeline, 2),
            (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(members(deep, CommGroup::Data, 2), std::vector<int>{2});
  EXPECT_EQ(errorOf([] { GroupLayout(4, 1, 2, 3); }),
            "tensor-parallel size 2 times pipeline-parallel size 3 does not "
            "divide the world size 4");
}

TEST(CommGroups, ExpertGroupsWithinPipelineStages) {
  // W = 4, P = 2, EP = 2 (rank = p * D + d, D = 2): stage 0 is ranks 0-1,
  // stage 1 ranks 2-3; each stage's two data ranks are its expert group,
  // and hold different experts, so each expert-data group is one rank.
  GroupLayout layout(4, 2, 1, 2);
  EXPECT_EQ(layout.size(CommGroup::Expert), 2);
  EXPECT_EQ(layout.size(CommGroup::ExpertData), 1);
  EXPECT_EQ(layout.size(CommGroup::Data), 2);
  const std::vector<std::vector<int>> expert = {{0, 1}, {0, 1}, {2, 3}, {2, 3}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(members(layout, CommGroup::Expert, r), expert[size_t(r)]) << r;
    EXPECT_EQ(members(layout, CommGroup::ExpertData, r), std::vector<int>{r});
    EXPECT_EQ(members(layout, CommGroup::Pipeline, r),
              (std::vector<int>{r % 2, r % 2 + 2}));
    EXPECT_EQ(layout.index(CommGroup::Expert, r), r % 2);
    EXPECT_EQ(layout.index(CommGroup::ExpertData, r), 0);
    EXPECT_EQ(layout.color(CommGroup::Expert, r), r / 2);
    EXPECT_EQ(layout.color(CommGroup::ExpertData, r), r);
  }
  EXPECT_EQ(layout.describe(CommGroup::Expert, 3),
            "the expert group (ranks 2, 3)");

  // W = 16, T = 2, P = 2, EP = 2 (rank = (p * D + d) * T + t, D = 4):
  // stage 0 is ranks 0-7, stage 1 ranks 8-15. An expert group pairs data
  // indices 0-1 or 2-3 of one stage at one tensor index; an expert-data
  // group the data indices of one parity there.
  GroupLayout ted(16, 2, 2, 2);
  EXPECT_EQ(ted.size(CommGroup::Expert), 2);
  EXPECT_EQ(ted.size(CommGroup::ExpertData), 2);
  EXPECT_EQ(ted.size(CommGroup::Data), 4);
  const std::vector<std::vector<int>> tedExpert = {
      {0, 2},   {1, 3},   {0, 2},   {1, 3},   {4, 6},   {5, 7},
      {4, 6},   {5, 7},   {8, 10},  {9, 11},  {8, 10},  {9, 11},
      {12, 14}, {13, 15}, {12, 14}, {13, 15}};
  const std::vector<std::vector<int>> tedReplicas = {
      {0, 4},   {1, 5},   {2, 6},   {3, 7},   {0, 4},   {1, 5},
      {2, 6},   {3, 7},   {8, 12},  {9, 13},  {10, 14}, {11, 15},
      {8, 12},  {9, 13},  {10, 14}, {11, 15}};
  for (int r = 0; r < 16; ++r) {
    EXPECT_EQ(members(ted, CommGroup::Expert, r), tedExpert[size_t(r)]) << r;
    EXPECT_EQ(members(ted, CommGroup::ExpertData, r), tedReplicas[size_t(r)])
        << r;
    EXPECT_EQ(ted.index(CommGroup::Expert, r), r % 8 / 2 % 2) << r;
    EXPECT_EQ(ted.index(CommGroup::ExpertData, r), r % 8 / 4) << r;
  }

  // W = 8, T = 2, P = 2, EP = 2: a stage's 2 data ranks are one expert
  // group per tensor index.
  GroupLayout small(8, 2, 2, 2);
  EXPECT_EQ(members(small, CommGroup::Expert, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(members(small, CommGroup::ExpertData, 5), std::vector<int>{5});
  EXPECT_EQ(members(small, CommGroup::Data, 5), (std::vector<int>{5, 7}));

  // EP must divide a stage's data ranks, not only the world's.
  EXPECT_EQ(errorOf([] { GroupLayout(4, 4, 1, 2); }),
            "expert-parallel size 4 times tensor-parallel size 1 does not "
            "divide the 2 ranks of a pipeline stage");
  EXPECT_EQ(errorOf([] { GroupLayout(8, 4, 2, 2); }),
            "expert-parallel size 4 times tensor-parallel size 2 does not "
            "divide the 4 ranks of a pipeline stage");
}

TEST(CommGroups, EveryRankIsInExactlyOneGroupOfEachKind) {
  for (auto [world, expert, tensor, stages] :
       {std::tuple{8, 2, 2, 1}, {8, 4, 2, 1}, {8, 2, 4, 1}, {6, 3, 1, 1},
        {6, 1, 3, 1}, {12, 3, 2, 1}, {12, 2, 3, 1}, {4, 2, 1, 2},
        {8, 2, 2, 2}, {16, 2, 2, 2}, {12, 3, 1, 2}, {24, 2, 2, 3}}) {
    GroupLayout layout(world, expert, tensor, stages);
    for (CommGroup g : {CommGroup::World, CommGroup::Expert,
                        CommGroup::ExpertData, CommGroup::Tensor,
                        CommGroup::Data, CommGroup::Pipeline}) {
      // The groups of one kind cut the ranks into disjoint parts, and every
      // member of a group sees the same group.
      std::set<int> seen;
      for (int r = 0; r < world; ++r) {
        std::vector<int> mine = members(layout, g, r);
        for (int other : mine)
          EXPECT_EQ(members(layout, g, other), mine);
        if (layout.index(g, r) == 0)
          for (int other : mine)
            EXPECT_TRUE(seen.insert(other).second) << name(g) << " " << other;
      }
      EXPECT_EQ(seen.size(), size_t(world)) << name(g);
      // A group's color is its own, and a rank sits at its own index.
      for (int r = 0; r < world; ++r) {
        EXPECT_EQ(layout.member(g, r, layout.index(g, r)), r) << name(g);
        for (int other = 0; other < world; ++other) {
          std::vector<int> mine = members(layout, g, r);
          bool together =
              std::find(mine.begin(), mine.end(), other) != mine.end();
          EXPECT_EQ(layout.color(g, r) == layout.color(g, other), together)
              << name(g) << " " << r << " " << other;
        }
      }
      // Every group but the world and the pipeline within one stage.
      if (g != CommGroup::World && g != CommGroup::Pipeline)
        for (int r = 0; r < world; ++r)
          for (int other : members(layout, g, r))
            EXPECT_EQ(layout.stage(other), layout.stage(r)) << name(g);
    }
  }
}

TEST(CommGroups, OneAndAllRanksWide) {
  GroupLayout one(4, 1);
  EXPECT_EQ(members(one, CommGroup::Expert, 2), std::vector<int>{2});
  EXPECT_EQ(members(one, CommGroup::ExpertData, 2),
            (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(one.index(CommGroup::ExpertData, 2), 2);
  EXPECT_EQ(one.describe(CommGroup::Expert, 2), "the expert group (rank 2)");
  GroupLayout all(4, 4);
  EXPECT_EQ(members(all, CommGroup::Expert, 2), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(members(all, CommGroup::ExpertData, 2), std::vector<int>{2});
  EXPECT_EQ(all.index(CommGroup::ExpertData, 2), 0);
}

TEST(CommGroups, RefusesSizesThatDoNotDivide) {
  EXPECT_EQ(errorOf([] { GroupLayout(4, 3); }),
            "expert-parallel size 3 does not divide the world size 4");
  EXPECT_EQ(errorOf([] { GroupLayout(4, 0); }),
            "expert-parallel size 0 does not divide the world size 4");
  EXPECT_EQ(errorOf([] { GroupLayout(2, 4); }),
            "expert-parallel size 4 does not divide the world size 2");
  EXPECT_EQ(errorOf([] { GroupLayout(0, 1); }), "world size 0 is not positive");
}

TEST(CommGroups, NamesRoundTrip) {
  for (CommGroup g : {CommGroup::World, CommGroup::Expert,
                      CommGroup::ExpertData, CommGroup::Tensor,
                      CommGroup::Data}) {
    CommGroup parsed = CommGroup::World;
    EXPECT_TRUE(parseCommGroup(name(g), parsed));
    EXPECT_EQ(parsed, g);
    EXPECT_TRUE(isCommGroup(static_cast<int32_t>(g)));
  }
  CommGroup parsed;
  EXPECT_TRUE(parseCommGroup("pipeline", parsed));
  EXPECT_EQ(parsed, CommGroup::Pipeline);
  EXPECT_FALSE(parseCommGroup("stage", parsed));
  EXPECT_FALSE(isCommGroup(6));
  EXPECT_FALSE(isCommGroup(-1));
  EXPECT_THROW(name(static_cast<CommGroup>(6)), Error);
}
