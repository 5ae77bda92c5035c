// What the Communicator base class does for every backend (checking,
// numbering, counting, timing out), over a fake backend in one process.

#include "dsc/runtime/Comm.h"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

using namespace dsc::rt;

namespace {

struct Aborted {
  int exitCode;
};

/// Rank 1 of 4. Its collectives complete at once, unless `hang` is set: then
/// they never complete, and abortJob throws Aborted instead of ending the
/// process.
class FakeCommunicator final : public Communicator {
public:
  explicit FakeCommunicator(double timeoutSeconds = 10)
      : Communicator(timeoutSeconds) {}
  int rank() const override { return 1; }
  int size() const override { return 4; }
  /// Another rank 1 of 4 (the fake has no other ranks to group).
  std::unique_ptr<Communicator> split(int color, int) override {
    checkSplitColor(color);
    auto child = std::make_unique<FakeCommunicator>(timeoutSeconds());
    child->inheritFrom(*this);
    return child;
  }

  bool hang = false;
  int backendCalls = 0;

private:
  void run() {
    ++backendCalls;
    waitForCompletion([this] { return !hang; });
  }
  void runAllReduce(const void *, void *, std::size_t, CommDType,
                    ReduceOp) override {
    run();
  }
  void runAllGather(const void *, void *, std::size_t, CommDType) override {
    run();
  }
  void runReduceScatter(const void *, void *, std::size_t, CommDType,
                        ReduceOp) override {
    run();
  }
  void runBroadcast(const void *, void *, std::size_t, CommDType,
                    int) override {
    run();
  }
  void runBarrier() override { run(); }
  void runAllToAll(const void *, void *, std::size_t, CommDType) override {
    run();
  }
  [[noreturn]] void abortJob(int exitCode) override { throw Aborted{exitCode}; }
};

} // namespace

TEST(CommBase, BadArgumentsThrowBeforeAnythingIsIssued) {
  FakeCommunicator comm;
  float buffer[4] = {};
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  EXPECT_THROW(
      comm.allReduce(nullptr, buffer, 4, CommDType::F32, ReduceOp::Sum), Error);
  EXPECT_THROW(comm.allGather(buffer, nullptr, 1, CommDType::F32), Error);
  EXPECT_THROW(comm.allReduce(buffer, buffer, 4, CommDType::F32,
                              static_cast<ReduceOp>(7)),
               Error);
  EXPECT_THROW(comm.allReduce(buffer, buffer, 4, static_cast<CommDType>(9),
                              ReduceOp::Sum),
               Error);
  EXPECT_THROW(comm.allToAll(buffer, buffer, huge, CommDType::F64), Error);
  EXPECT_THROW(comm.broadcast(buffer, buffer, 4, CommDType::F32, 4), Error);
  EXPECT_THROW(comm.broadcast(buffer, buffer, 4, CommDType::F32, -1), Error);
  EXPECT_EQ(comm.lastSequenceNumber(), 0u);
  EXPECT_EQ(comm.stats().total().calls, 0u);
  EXPECT_EQ(comm.backendCalls, 0);
}

TEST(CommBase, EmptyCollectivesMayPassNull) {
  FakeCommunicator comm;
  comm.allReduce(nullptr, nullptr, 0, CommDType::F32, ReduceOp::Sum);
  comm.broadcast(nullptr, nullptr, 0, CommDType::I64, 0);
  EXPECT_EQ(comm.lastSequenceNumber(), 2u);
}

TEST(CommBase, BroadcastReadsSendOnTheRootOnly) {
  FakeCommunicator comm; // rank 1
  float buffer[4] = {};
  EXPECT_NO_THROW(comm.broadcast(nullptr, buffer, 4, CommDType::F32, 0));
  EXPECT_THROW(comm.broadcast(nullptr, buffer, 4, CommDType::F32, 1), Error);
}

TEST(CommBase, NumbersAndCountsEveryCollective) {
  FakeCommunicator comm; // rank 1 of 4
  double buffer[64] = {};
  comm.allReduce(buffer, buffer, 10, CommDType::F64, ReduceOp::Sum);
  comm.allGather(buffer, buffer, 3, CommDType::F32);
  comm.reduceScatter(buffer, buffer, 5, CommDType::BF16, ReduceOp::Sum);
  comm.broadcast(buffer, buffer, 7, CommDType::I32, 2);
  comm.broadcast(buffer, buffer, 7, CommDType::I32, 2);
  comm.broadcast(buffer, buffer, 7, CommDType::I32, 1);
  comm.barrier();
  comm.allToAll(buffer, buffer, 2, CommDType::I64);
  EXPECT_EQ(comm.lastSequenceNumber(), 8u);
  EXPECT_EQ(comm.backendCalls, 8);

  const CommStats &stats = comm.stats();
  // 2 * 3 * 80 / 4
  EXPECT_EQ(stats[CollectiveKind::AllReduce].bytesSent, 120u);
  EXPECT_EQ(stats[CollectiveKind::AllGather].bytesSent, 3u * 12);
  EXPECT_EQ(stats[CollectiveKind::ReduceScatter].bytesSent, 3u * 10);
  // Ring from root 2: 2, 3, 0, 1 (rank 1 is last: 0 bytes); from root 1:
  // 1, 2, 3, 0 (28 bytes).
  EXPECT_EQ(stats[CollectiveKind::Broadcast].calls, 3u);
  EXPECT_EQ(stats[CollectiveKind::Broadcast].bytesSent, 28u);
  EXPECT_EQ(stats[CollectiveKind::Barrier].calls, 1u);
  EXPECT_EQ(stats[CollectiveKind::Barrier].bytesSent, 0u);
  EXPECT_EQ(stats[CollectiveKind::AllToAll].bytesSent, 3u * 16);
}

TEST(CommBase, TimeoutPrintsTheReportAndAborts) {
  FakeCommunicator comm(0.1);
  float buffer[4] = {};
  comm.barrier();
  comm.hang = true;
  testing::internal::CaptureStderr();
  try {
    comm.allReduce(buffer, buffer, 4, CommDType::F32, ReduceOp::Max);
    ADD_FAILURE() << "the hung collective must abort";
  } catch (const Aborted &aborted) {
    EXPECT_EQ(aborted.exitCode, kCollectiveTimeoutExitCode);
  }
  std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("dsc: rank 1: collective #2 allReduce(count=4, f32, "
                        "max) did not complete within 0.1 s"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("  #1 barrier()"), std::string::npos) << report;
}

TEST(CommBase, ASplitCommunicatorNumbersItsOwnAndNamesItselfOnTimeout) {
  FakeCommunicator world(0.1);
  world.setJobRank(5);
  float buffer[4] = {};
  world.barrier();
  world.barrier();
  std::unique_ptr<Communicator> part = world.split(1, 0);
  EXPECT_EQ(part->jobRank(), 5);
  EXPECT_EQ(part->timeoutSeconds(), 0.1);
  part->setLabel("the expert group (ranks 4, 5)");
  part->allReduce(buffer, buffer, 4, CommDType::F32, ReduceOp::Sum);
  // Its own numbers and counters, from #1; the parent's are untouched.
  EXPECT_EQ(part->lastSequenceNumber(), 1u);
  EXPECT_EQ(part->stats()[CollectiveKind::AllReduce].calls, 1u);
  EXPECT_EQ(world.lastSequenceNumber(), 2u);
  EXPECT_EQ(world.stats()[CollectiveKind::AllReduce].calls, 0u);
  static_cast<FakeCommunicator &>(*part).hang = true;
  testing::internal::CaptureStderr();
  try {
    part->allToAll(buffer, buffer, 1, CommDType::F32);
    ADD_FAILURE() << "the hung collective must abort";
  } catch (const Aborted &aborted) {
    EXPECT_EQ(aborted.exitCode, kCollectiveTimeoutExitCode);
  }
  std::string report = testing::internal::GetCapturedStderr();
  EXPECT_NE(report.find("dsc: rank 5: collective #2 allToAll(count=1, f32) "
                        "on the expert group (ranks 4, 5) did not complete "
                        "within 0.1 s"),
            std::string::npos)
      << report;
  EXPECT_THROW(world.split(-1, 0), Error);
}
