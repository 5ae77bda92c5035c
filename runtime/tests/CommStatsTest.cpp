// The byte formulas of CommStats.h, with the figures worked out by hand.

#include "dsc/runtime/CommStats.h"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace dsc::rt;

TEST(CommStats, AllReduceIsTwiceNMinusOneOverNOfTheBuffer) {
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 4000, 0, 2), 4000u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 4096, 3, 4), 6144u);
  // 2 * 2 * 4000 / 3 = 5333.33..., rounded down.
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 4000, 1, 3), 5333u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 4000, 0, 1), 0u);
  // No overflow where 2(N-1)B would not fit in 64 bits.
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 1ull << 62, 0, 2),
            1ull << 62);
}

TEST(CommStats, GatherScatterAndAllToAllAreNMinusOneTimesTheBlock) {
  for (CollectiveKind kind :
       {CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
        CollectiveKind::AllToAll}) {
    EXPECT_EQ(collectiveBytesSent(kind, 100, 0, 4), 300u);
    EXPECT_EQ(collectiveBytesSent(kind, 100, 1, 2), 100u);
    EXPECT_EQ(collectiveBytesSent(kind, 100, 0, 1), 0u);
  }
}

TEST(CommStats, BroadcastIsTheBufferOnAllButTheLastOfTheRing) {
  // Ring from root 1 over 4 ranks: 1, 2, 3, 0; rank 0 forwards to nobody.
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Broadcast, 64, 0, 4, 1), 0u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Broadcast, 64, 1, 4, 1), 64u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Broadcast, 64, 2, 4, 1), 64u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Broadcast, 64, 3, 4, 1), 64u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Broadcast, 64, 1, 2, 0), 0u);
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Broadcast, 64, 0, 1, 0), 0u);
}

TEST(CommStats, BarrierSendsNothing) {
  EXPECT_EQ(collectiveBytesSent(CollectiveKind::Barrier, 0, 0, 8), 0u);
}

TEST(CommStats, BadRankRootOrKindThrow) {
  EXPECT_THROW(collectiveBytesSent(CollectiveKind::AllGather, 8, 2, 2), Error);
  EXPECT_THROW(collectiveBytesSent(CollectiveKind::AllGather, 8, 0, 0), Error);
  EXPECT_THROW(collectiveBytesSent(CollectiveKind::Broadcast, 8, 0, 2, 2),
               Error);
  EXPECT_THROW(collectiveBytesSent(CollectiveKind::Count, 8, 0, 2), Error);
}

TEST(CommStats, RecordTotalAndTable) {
  CommStats stats;
  stats.record(CollectiveKind::AllReduce, 4000);
  stats.record(CollectiveKind::AllReduce, 96);
  stats.record(CollectiveKind::Barrier, 0);
  EXPECT_EQ(stats[CollectiveKind::AllReduce].calls, 2u);
  EXPECT_EQ(stats[CollectiveKind::AllReduce].bytesSent, 4096u);
  EXPECT_EQ(stats.total().calls, 3u);
  EXPECT_EQ(stats.total().bytesSent, 4096u);

  std::ostringstream table;
  printStats(stats, table);
  EXPECT_EQ(table.str(), "collective           calls          bytes sent\n"
                         "allReduce                2                4096\n"
                         "allGather                0                   0\n"
                         "reduceScatter            0                   0\n"
                         "broadcast                0                   0\n"
                         "barrier                  1                   0\n"
                         "allToAll                 0                   0\n"
                         "send                     0                   0\n"
                         "recv                     0                   0\n"
                         "total                    3                4096\n");
}
