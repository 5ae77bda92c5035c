// The watchdog on its own: timeout parsing, numbering, history, deadline and
// report, with polls that the test controls.

#include "dsc/runtime/Watchdog.h"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

using namespace dsc::rt;

namespace {

double timeoutFrom(std::optional<std::string> value) {
  return collectiveTimeoutFromEnvironment(
      [&value](const char *name) -> std::optional<std::string> {
        EXPECT_STREQ(name, "DSC_COLLECTIVE_TIMEOUT");
        return value;
      });
}

} // namespace

TEST(Watchdog, TimeoutFromEnvironment) {
  EXPECT_EQ(timeoutFrom(std::nullopt), 600.0);
  EXPECT_EQ(timeoutFrom("2"), 2.0);
  EXPECT_EQ(timeoutFrom("0.25"), 0.25);
  EXPECT_EQ(timeoutFrom("1e3"), 1000.0);
  for (const char *bad :
       {"", "0", "-1", "abc", "2s", " 2", "inf", "nan", "1e10"}) {
    try {
      timeoutFrom(bad);
      ADD_FAILURE() << "'" << bad << "' must be rejected";
    } catch (const Error &e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("DSC_COLLECTIVE_TIMEOUT='") + bad +
                    "' is not a number of seconds in (0, 1e9]");
    }
  }
}

TEST(Watchdog, ConstructorRejectsNonPositiveTimeouts) {
  EXPECT_THROW(CollectiveWatchdog(0), Error);
  EXPECT_THROW(CollectiveWatchdog(-1), Error);
  EXPECT_NO_THROW(CollectiveWatchdog(0.001));
}

TEST(Watchdog, NumbersCollectivesAndKeepsTheLastSixteen) {
  CollectiveWatchdog watchdog(1);
  EXPECT_EQ(watchdog.lastSequence(), 0u);
  EXPECT_TRUE(watchdog.history().empty());
  for (std::size_t i = 1; i <= 20; ++i) {
    CollectiveRecord record =
        watchdog.begin(CollectiveKind::AllReduce, i, CommDType::F32);
    EXPECT_EQ(record.sequence, i);
  }
  EXPECT_EQ(watchdog.lastSequence(), 20u);
  std::vector<CollectiveRecord> history = watchdog.history();
  ASSERT_EQ(history.size(), CollectiveWatchdog::kHistoryLength);
  for (std::size_t i = 0; i < history.size(); ++i) {
    EXPECT_EQ(history[i].sequence, 5 + i);
    EXPECT_EQ(history[i].count, 5 + i);
  }
}

TEST(Watchdog, WaitReturnsWhenThePollSaysDone) {
  CollectiveWatchdog watchdog(10);
  CollectiveRecord record =
      watchdog.begin(CollectiveKind::Barrier, 0, CommDType::F32);
  int polls = 0;
  EXPECT_TRUE(watchdog.waitUntilComplete(record, [&] { return ++polls == 5; }));
  EXPECT_EQ(polls, 5);
}

TEST(Watchdog, WaitGivesUpAtTheDeadline) {
  CollectiveWatchdog watchdog(0.2);
  CollectiveRecord record =
      watchdog.begin(CollectiveKind::AllReduce, 4, CommDType::F32);
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(watchdog.waitUntilComplete(record, [] { return false; }));
  double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_GE(waited, 0.19);
  EXPECT_LT(waited, 5.0);
}

TEST(Watchdog, DescribeNamesWhatMatters) {
  CollectiveRecord record;
  record.kind = CollectiveKind::AllReduce;
  record.count = 4;
  record.dtype = CommDType::BF16;
  record.op = ReduceOp::Max;
  EXPECT_EQ(describe(record), "allReduce(count=4, bf16, max)");
  record.kind = CollectiveKind::Broadcast;
  record.root = 1;
  EXPECT_EQ(describe(record), "broadcast(count=4, bf16, root=1)");
  record.kind = CollectiveKind::AllToAll;
  EXPECT_EQ(describe(record), "allToAll(count=4, bf16)");
  record.kind = CollectiveKind::Barrier;
  EXPECT_EQ(describe(record), "barrier()");
}

TEST(Watchdog, ReportNamesTheStuckCollectiveAndTheHistory) {
  CollectiveWatchdog watchdog(0.5);
  watchdog.begin(CollectiveKind::Barrier, 0, CommDType::F32);
  CollectiveRecord stuck = watchdog.begin(CollectiveKind::AllReduce, 4,
                                          CommDType::F32, ReduceOp::Sum);
  std::string report = watchdog.timeoutReport(3, stuck);
  EXPECT_EQ(report.rfind("dsc: rank 3: collective #2 allReduce(count=4, f32, "
                         "sum) did not complete within 0.5 s; last "
                         "collectives issued (oldest first):\n",
                         0),
            0u)
      << report;
  EXPECT_NE(report.find("\n  #1 barrier(), issued "), std::string::npos)
      << report;
  EXPECT_NE(report.find("\n  #2 allReduce(count=4, f32, sum), issued "),
            std::string::npos)
      << report;
}
