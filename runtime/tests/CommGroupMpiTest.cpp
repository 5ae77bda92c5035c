// The groups' communicators over 4 ranks (run by mpirun -np 4): who is in
// which group once the communicators are split (W = 4, P = 2: Expert
// groups {0, 1} and {2, 3}, ExpertData groups {0, 2} and {1, 3}), and the
// StepContext's collectives routed to them: an all-to-all over the Expert
// group, sums over the ExpertData group, each group's figures. Every value
// is a known function of the sending rank, so each rank works out exactly
// what it must receive. And with 2 pipeline stages of 2 ranks, expert
// groups that stay within a stage.

#include "dsc/runtime/CommGroups.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/MpiComm.h"
#include "dsc/runtime/Run.h"
#include "dsc/runtime/Stream.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <vector>

using namespace dsc::rt;

namespace {

constexpr int kRanks = 4;

/// The ranks of this rank's `group`, as the group's communicator sees
/// them: every member's world rank, gathered over it in index order.
std::vector<int64_t> gatheredMembers(Communicator &comm, int64_t worldRank) {
  std::vector<int64_t> ranks(size_t(comm.size()), -1);
  comm.allGather(&worldRank, ranks.data(), 1, CommDType::I64);
  return ranks;
}

std::vector<int64_t> layoutMembers(const GroupLayout &layout, CommGroup group,
                                   int rank) {
  std::vector<int64_t> ranks;
  for (int i = 0; i < layout.size(group); ++i)
    ranks.push_back(layout.member(group, rank, i));
  return ranks;
}

/// A context whose collectives stream runs inline, over the job's
/// communicator and the groups of expert-parallel size `p` (and
/// `stages` pipeline stages).
struct Job {
  explicit Job(int p, int stages = 1)
      : stream("comm", CpuStream::Mode::Inline),
        context({}, {}, {}, nullptr, world, {&stream}, 0, p, {}, 1, stages) {
    context.beginStep(1);
  }
  int rank() const { return world.rank(); }
  const GroupLayout &layout() const { return context.groups().layout(); }
  MpiCommunicator world;
  CpuStream stream;
  RunStepContext context;
};

/// Element i of block `block` that world rank `from` sends in an
/// all-to-all: distinct for every (sender, block, element).
float sent(int from, int block, int i) {
  return float(100 * from + 10 * block + i);
}

} // namespace

TEST(CommGroupMpi, SplitGroupsHoldTheirRanks) {
  Job job(2);
  const int r = job.rank();
  const GroupLayout &layout = job.layout();
  EXPECT_EQ(job.context.groups().communicator(CommGroup::World), &job.world);
  for (CommGroup group : {CommGroup::Expert, CommGroup::ExpertData}) {
    SCOPED_TRACE(name(group));
    Communicator *comm = job.context.groups().communicator(group);
    ASSERT_NE(comm, nullptr);
    EXPECT_NE(comm, &job.world);
    EXPECT_EQ(comm->size(), 2);
    EXPECT_EQ(comm->rank(), layout.index(group, r));
    EXPECT_EQ(comm->jobRank(), r);
    EXPECT_EQ(comm->label(), layout.describe(group, r));
    EXPECT_EQ(gatheredMembers(*comm, r), layoutMembers(layout, group, r));
    EXPECT_EQ(job.context.groupSize(group), 2);
    EXPECT_EQ(job.context.groupRank(group), layout.index(group, r));
  }
  // The membership the task states, written out.
  const std::vector<std::vector<int64_t>> expert = {
      {0, 1}, {0, 1}, {2, 3}, {2, 3}};
  const std::vector<std::vector<int64_t>> data = {
      {0, 2}, {1, 3}, {0, 2}, {1, 3}};
  EXPECT_EQ(layoutMembers(layout, CommGroup::Expert, r), expert[size_t(r)]);
  EXPECT_EQ(layoutMembers(layout, CommGroup::ExpertData, r), data[size_t(r)]);
  EXPECT_EQ(job.context.groupRank(CommGroup::World), r);
  EXPECT_EQ(job.context.groupSize(CommGroup::World), kRanks);
}

TEST(CommGroupMpi, AllToAllOverTheExpertGroup) {
  Job job(2);
  const int r = job.rank();
  const GroupLayout &layout = job.layout();
  const int count = 3, members = 2;
  const int index = layout.index(CommGroup::Expert, r);
  std::vector<float> buffer(size_t(members * count));
  for (int j = 0; j < members; ++j)
    for (int i = 0; i < count; ++i)
      buffer[size_t(j * count + i)] = sent(r, j, i);
  job.context.allToAll(buffer.data(), count, ElementType::F32, 0, job.stream,
                       CommGroup::Expert);
  // Block j: what the group's member j sent as its block `index`.
  for (int j = 0; j < members; ++j)
    for (int i = 0; i < count; ++i)
      EXPECT_EQ(buffer[size_t(j * count + i)],
                sent(layout.member(CommGroup::Expert, r, j), index, i))
          << "block " << j << " element " << i;

  // Counted for the Expert group, by the group's size: (P - 1) blocks of
  // 3 f32 leave the rank; the same in the sub-communicator's own figures.
  const CollectiveCounters &counted =
      job.context.groupStats(CommGroup::Expert)[CollectiveKind::AllToAll];
  EXPECT_EQ(counted.calls, 1u);
  EXPECT_EQ(counted.bytesSent, 12u);
  const Communicator &expert =
      *job.context.groups().communicator(CommGroup::Expert);
  EXPECT_EQ(expert.stats()[CollectiveKind::AllToAll].bytesSent, 12u);
  EXPECT_EQ(expert.lastSequenceNumber(), 1u);
  EXPECT_EQ(job.world.lastSequenceNumber(), 0u);
  EXPECT_EQ(job.context.groupStats(CommGroup::World).total().calls, 0u);
}

TEST(CommGroupMpi, SumsOverTheExpertDataGroup) {
  Job job(2);
  const int r = job.rank();
  const GroupLayout &layout = job.layout();
  // allReduceSum: the two ranks holding the same experts, r % 2 + 2k.
  std::vector<int64_t> grads(5);
  for (int i = 0; i < 5; ++i)
    grads[size_t(i)] = 1000 * r + i;
  job.context.allReduceSum(grads.data(), 5, ElementType::I64, 0, job.stream,
                           CommGroup::ExpertData);
  for (int i = 0; i < 5; ++i) {
    int64_t expected = 0;
    for (int k = 0; k < 2; ++k)
      expected += 1000 * (r % 2 + 2 * k) + i;
    EXPECT_EQ(grads[size_t(i)], expected) << i;
  }
  // reduceScatterSum over the same group: block index(r) of the sum.
  std::vector<double> send(4), recv(2);
  for (int i = 0; i < 4; ++i)
    send[size_t(i)] = 10.0 * r + i;
  job.context.reduceScatterSum(send.data(), recv.data(), 2, ElementType::F64, 1,
                               job.stream, CommGroup::ExpertData);
  const int index = layout.index(CommGroup::ExpertData, r);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(recv[size_t(i)],
              10.0 * (r % 2) + 10.0 * (r % 2 + 2) + 2.0 * (2 * index + i));
  // allGather over the Expert group: the members' blocks, by index.
  int32_t mine[2] = {r, -r};
  std::vector<int32_t> all(4);
  job.context.allGather(mine, all.data(), 2, ElementType::I32, 2, job.stream,
                        CommGroup::Expert);
  const int first = layout.member(CommGroup::Expert, r, 0);
  EXPECT_EQ(all, (std::vector<int32_t>{first, -first, first + 1, -first - 1}));

  const CommStats &data = job.context.groupStats(CommGroup::ExpertData);
  EXPECT_EQ(data[CollectiveKind::AllReduce].calls, 1u);
  EXPECT_EQ(data[CollectiveKind::AllReduce].bytesSent, 40u); // 2*(2-1)*40/2
  EXPECT_EQ(data[CollectiveKind::ReduceScatter].bytesSent, 16u);
  EXPECT_EQ(job.context.groupStats(CommGroup::Expert)[CollectiveKind::AllGather]
                .bytesSent,
            8u);
}

TEST(CommGroupMpi, GroupsOfOneRankAndOfAllRanks) {
  {
    // P = 1: ExpertData is the job's communicator; the Expert group is each
    // rank alone and has none: its collectives move nothing between ranks.
    Job job(1);
    const int r = job.rank();
    EXPECT_EQ(job.context.groups().communicator(CommGroup::ExpertData),
              &job.world);
    EXPECT_EQ(job.context.groups().communicator(CommGroup::Expert), nullptr);
    float block[2] = {float(r), float(r + 1)};
    job.context.allToAll(block, 2, ElementType::F32, 0, job.stream,
                         CommGroup::Expert);
    EXPECT_EQ(block[0], float(r));
    EXPECT_EQ(block[1], float(r + 1));
    float gathered[2] = {-1, -1};
    job.context.allGather(block, gathered, 2, ElementType::F32, 1, job.stream,
                          CommGroup::Expert);
    EXPECT_EQ(gathered[0], float(r));
    EXPECT_EQ(gathered[1], float(r + 1));
    int32_t sum = r;
    job.context.allReduceSum(&sum, 1, ElementType::I32, 2, job.stream,
                             CommGroup::ExpertData);
    EXPECT_EQ(sum, 0 + 1 + 2 + 3);
    const CommStats &expert = job.context.groupStats(CommGroup::Expert);
    EXPECT_EQ(expert.total().calls, 2u);
    EXPECT_EQ(expert.total().bytesSent, 0u);
    // Counted for its group, though the job's communicator ran it.
    EXPECT_EQ(
        job.context.groupStats(CommGroup::ExpertData)[CollectiveKind::AllReduce]
            .calls,
        1u);
    EXPECT_EQ(job.context.groupStats(CommGroup::World).total().calls, 0u);
    EXPECT_EQ(job.world.stats().total().calls, 1u);
  }
  {
    // P = 4: the Expert group is the job; ExpertData each rank alone.
    Job job(4);
    const int r = job.rank();
    EXPECT_EQ(job.context.groups().communicator(CommGroup::Expert), &job.world);
    EXPECT_EQ(job.context.groups().communicator(CommGroup::ExpertData),
              nullptr);
    std::vector<float> buffer(kRanks);
    for (int j = 0; j < kRanks; ++j)
      buffer[size_t(j)] = sent(r, j, 0);
    job.context.allToAll(buffer.data(), 1, ElementType::F32, 0, job.stream,
                         CommGroup::Expert);
    for (int j = 0; j < kRanks; ++j)
      EXPECT_EQ(buffer[size_t(j)], sent(j, r, 0));
    double grad = r;
    job.context.allReduceSum(&grad, 1, ElementType::F64, 1, job.stream,
                             CommGroup::ExpertData);
    EXPECT_EQ(grad, double(r));
  }
}

TEST(CommGroupMpi, ExpertGroupsWithinPipelineStages) {
  // EP = 2 within P = 2 stages of 2 ranks: the Expert groups are the
  // stages, {0, 1} and {2, 3}; each expert is held by one rank (no
  // ExpertData communicator); the Pipeline groups are {0, 2} and {1, 3}.
  Job job(2, 2);
  const int r = job.rank();
  const GroupLayout &layout = job.layout();
  Communicator *expert = job.context.groups().communicator(CommGroup::Expert);
  ASSERT_NE(expert, nullptr);
  EXPECT_EQ(gatheredMembers(*expert, r),
            (std::vector<int64_t>{r / 2 * 2, r / 2 * 2 + 1}));
  EXPECT_EQ(expert->rank(), r % 2);
  EXPECT_EQ(job.context.groups().communicator(CommGroup::ExpertData), nullptr);
  Communicator *pipeline =
      job.context.groups().communicator(CommGroup::Pipeline);
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(gatheredMembers(*pipeline, r),
            (std::vector<int64_t>{r % 2, r % 2 + 2}));
  // An all-to-all over the Expert group stays within the stage.
  const int count = 2;
  std::vector<float> buffer(size_t(2 * count));
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < count; ++i)
      buffer[size_t(j * count + i)] = sent(r, j, i);
  job.context.allToAll(buffer.data(), count, ElementType::F32, 0, job.stream,
                       CommGroup::Expert);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < count; ++i)
      EXPECT_EQ(buffer[size_t(j * count + i)],
                sent(layout.member(CommGroup::Expert, r, j), r % 2, i));
  // A sum over the ExpertData group of one rank is the rank's own.
  double grad = r;
  job.context.allReduceSum(&grad, 1, ElementType::F64, 1, job.stream,
                           CommGroup::ExpertData);
  EXPECT_EQ(grad, double(r));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int result = 1;
  if (size != kRanks)
    std::fprintf(stderr, "CommGroupMpiTest runs on %d ranks, not %d\n", kRanks,
                 size);
  else
    result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}
