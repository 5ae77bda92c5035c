//===- StreamCpuTest.cpp - CPU streams and events -------------------------===//
//
// Every test body runs under finishesWithin (StreamTestSupport.h), and
// tasks that block wait on a Gate with a timeout, so that a deadlock in the
// streams fails the test instead of hanging it. Data handed from one
// stream to another is plain memory, never atomics, where the ordering is
// the stream's to provide: a ThreadSanitizer build checks it.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Stream.h"

#include "StreamTestSupport.h"

#include "dsc/runtime/Error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using dsc::rt::CpuEvent;
using dsc::rt::CpuStream;
using dsc::rt::Error;
using dsc::rt::Event;
using dsc::rt::Stream;
using dsc::rt::test::expectFailedForGood;
using dsc::rt::test::expectTasksRunInEnqueueOrder;
using dsc::rt::test::finishesWithin;
using dsc::rt::test::Gate;
using dsc::rt::test::OpenLater;
using testing::HasSubstr;
using testing::ThrowsMessage;
using Mode = CpuStream::Mode;
using namespace std::chrono_literals;

namespace {

constexpr auto kLimit = 60s;

/// The tests that hold for both modes run once per mode.
class CpuStreamModes : public testing::TestWithParam<Mode> {};

std::string modeName(const testing::TestParamInfo<Mode> &info) {
  return info.param == Mode::Threaded ? "Threaded" : "Inline";
}

/// An event of a backend the CPU streams do not know.
class ForeignEvent final : public Event {
public:
  const char *backend() const override { return "fake"; }
  bool query() override { return true; }
  void synchronize() override {}
};

} // namespace

INSTANTIATE_TEST_SUITE_P(CpuStream, CpuStreamModes,
                         testing::Values(Mode::Threaded, Mode::Inline),
                         modeName);

//===----------------------------------------------------------------------===//
// Order, and what enqueue does not wait for
//===----------------------------------------------------------------------===//

TEST_P(CpuStreamModes, RunsTasksInEnqueueOrder) {
  finishesWithin(kLimit, "RunsTasksInEnqueueOrder", [mode = GetParam()] {
    CpuStream stream("s", mode);
    EXPECT_EQ(stream.name(), "s");
    EXPECT_STREQ(stream.backend(), "cpu");
    expectTasksRunInEnqueueOrder(stream, 10000);
  });
}

TEST(CpuStream, EnqueueReturnsWithoutWaitingForTheTasks) {
  finishesWithin(kLimit, "EnqueueReturnsWithoutWaitingForTheTasks", [] {
    Gate gate;
    std::vector<int> ran;
    CpuStream stream("s");
    stream.enqueue([&] { gate.pass(); });
    for (int i = 0; i < 10; ++i)
      stream.enqueue([&ran, i] { ran.push_back(i); });
    std::unique_ptr<Event> event = stream.recordEvent();
    // The first task holds the stream: nothing behind it has run.
    EXPECT_FALSE(stream.query());
    EXPECT_FALSE(event->query());
    gate.open();
    event->synchronize();
    EXPECT_TRUE(event->query());
    EXPECT_EQ(ran.size(), 10u);
    stream.synchronize();
    EXPECT_TRUE(stream.query());
  });
}

TEST(CpuStream, InlineRunsEachTaskOnTheCallerBeforeEnqueueReturns) {
  CpuStream stream("inline", Mode::Inline);
  EXPECT_EQ(stream.mode(), Mode::Inline);
  std::thread::id ranOn;
  stream.enqueue([&] { ranOn = std::this_thread::get_id(); });
  EXPECT_EQ(ranOn, std::this_thread::get_id());
  EXPECT_TRUE(stream.query());
  EXPECT_TRUE(stream.recordEvent()->query());
}

TEST(CpuStream, ThreadedRunsTasksOnOneWorkerThread) {
  finishesWithin(kLimit, "ThreadedRunsTasksOnOneWorkerThread", [] {
    CpuStream stream("s");
    std::vector<std::thread::id> ranOn(100);
    for (int i = 0; i < 100; ++i)
      stream.enqueue([&ranOn, i] { ranOn[i] = std::this_thread::get_id(); });
    stream.synchronize();
    EXPECT_NE(ranOn[0], std::this_thread::get_id());
    for (const std::thread::id &id : ranOn)
      EXPECT_EQ(id, ranOn[0]);
  });
}

TEST(CpuStream, TasksFromManyThreadsKeepEachThreadsOrder) {
  finishesWithin(kLimit, "TasksFromManyThreadsKeepEachThreadsOrder", [] {
    constexpr int kThreads = 4, kTasks = 2000;
    CpuStream stream("shared");
    std::vector<std::pair<int, int>> ran;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&stream, &ran, t] {
        for (int i = 0; i < kTasks; ++i)
          stream.enqueue([&ran, t, i] { ran.emplace_back(t, i); });
      });
    for (std::thread &thread : threads)
      thread.join();
    stream.synchronize();
    ASSERT_EQ(ran.size(), std::size_t(kThreads * kTasks));
    std::vector<int> next(kThreads, 0);
    for (auto [t, i] : ran)
      EXPECT_EQ(i, next[t]++) << "thread " << t;
  });
}

TEST(CpuStream, RefusesAnEmptyTask) {
  CpuStream stream("s");
  EXPECT_THAT([&] { stream.enqueue(Stream::Task()); },
              ThrowsMessage<Error>("stream 's': enqueue of an empty task"));
  stream.synchronize(); // not a failure of the stream
}

//===----------------------------------------------------------------------===//
// Events and waits between streams
//===----------------------------------------------------------------------===//

TEST(CpuStream, WaitMakesLaterTasksSeeTheOtherStreamsWork) {
  finishesWithin(kLimit, "WaitMakesLaterTasksSeeTheOtherStreamsWork", [] {
    CpuStream a("a"), b("b");
    int value = 0; // written by a's task, read by b's: ordered by the event
    int seen = -1;
    a.enqueue([&] {
      std::this_thread::sleep_for(100ms);
      value = 42;
    });
    std::unique_ptr<Event> done = a.recordEvent();
    b.wait(*done);
    b.enqueue([&] { seen = value; });
    b.synchronize();
    EXPECT_EQ(seen, 42);
  });
}

TEST(CpuStream, WaitDoesNotBlockTheCallerNorLetLaterTasksStartEarly) {
  finishesWithin(kLimit, "WaitDoesNotBlockTheCaller", [] {
    Gate gate;
    CpuStream a("a"), b("b");
    int value = 0;
    std::atomic<bool> bRan{false};
    a.enqueue([&] {
      gate.pass(); // would time out, failing a, if b.wait() blocked us
      value = 7;
    });
    std::unique_ptr<Event> done = a.recordEvent();
    b.wait(*done);
    int seen = -1;
    b.enqueue([&] {
      seen = value;
      bRan = true;
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(bRan); // a has not finished, so b's task has not started
    EXPECT_FALSE(b.query());
    gate.open();
    b.synchronize();
    EXPECT_TRUE(bRan);
    EXPECT_EQ(seen, 7);
    a.synchronize();
  });
}

TEST(CpuStream, WaitIsForTheEventAsRecordedAtTheCall) {
  finishesWithin(kLimit, "WaitIsForTheEventAsRecordedAtTheCall", [] {
    Gate first, second;
    CpuStream a("a"), b("b");
    a.enqueue([&] { first.pass(); });
    CpuEvent event;
    a.record(event);
    b.wait(event);
    bool bRan = false;
    b.enqueue([&] { bRan = true; });
    a.enqueue([&] { second.pass(); });
    a.record(event); // moves the event; b's wait keeps the first point
    first.open();
    b.synchronize(); // returns while `second` is still closed
    EXPECT_TRUE(bRan);
    EXPECT_FALSE(event.query());
    second.open();
    event.synchronize();
    a.synchronize();
  });
}

TEST_P(CpuStreamModes, AnEventNeverRecordedIsComplete) {
  finishesWithin(kLimit, "AnEventNeverRecordedIsComplete", [mode = GetParam()] {
    CpuStream stream("s", mode);
    std::unique_ptr<Event> event = stream.createEvent();
    EXPECT_STREQ(event->backend(), "cpu");
    EXPECT_TRUE(event->query());
    event->synchronize();
    stream.wait(*event); // nothing to wait for
    bool ran = false;
    stream.enqueue([&] { ran = true; });
    stream.synchronize();
    EXPECT_TRUE(ran);
  });
}

TEST(CpuStream, WaitForAnEventOfTheSameStreamIsAlreadyInOrder) {
  finishesWithin(kLimit, "WaitForAnEventOfTheSameStream", [] {
    CpuStream stream("s");
    std::vector<int> ran;
    stream.enqueue([&] { ran.push_back(1); });
    std::unique_ptr<Event> event = stream.recordEvent();
    stream.wait(*event);
    stream.enqueue([&] { ran.push_back(2); });
    stream.synchronize();
    EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  });
}

TEST(CpuStream, InlineWaitBlocksTheCallerUntilTheEventCompletes) {
  finishesWithin(kLimit, "InlineWaitBlocksTheCaller", [] {
    Gate gate;
    CpuStream worker("worker");
    CpuStream here("here", Mode::Inline);
    int value = 0;
    worker.enqueue([&] {
      gate.pass();
      value = 5;
    });
    std::unique_ptr<Event> done = worker.recordEvent();
    {
      OpenLater opener(gate, 20ms);
      here.wait(*done); // returns once the worker's task has run
    }
    EXPECT_TRUE(done->query());
    int seen = -1;
    here.enqueue([&] { seen = value; });
    EXPECT_EQ(seen, 5);
    here.synchronize();
  });
}

TEST(CpuEvent, QueryAndSynchronizeFollowTheRecordedWork) {
  finishesWithin(kLimit, "QueryAndSynchronizeFollowTheRecordedWork", [] {
    Gate gate;
    CpuStream stream("s");
    std::unique_ptr<Event> before = stream.recordEvent(); // nothing before it
    stream.enqueue([&] { gate.pass(); });
    std::unique_ptr<Event> after = stream.recordEvent();
    EXPECT_TRUE(before->query());
    before->synchronize();
    EXPECT_FALSE(after->query());
    gate.open();
    after->synchronize();
    EXPECT_TRUE(after->query());
  });
}

TEST(CpuEvent, OutlivesItsStream) {
  finishesWithin(kLimit, "OutlivesItsStream", [] {
    std::unique_ptr<Event> event;
    int ran = 0;
    {
      CpuStream stream("s");
      for (int i = 0; i < 100; ++i)
        stream.enqueue([&] { ++ran; });
      event = stream.recordEvent();
    } // drains
    EXPECT_EQ(ran, 100);
    EXPECT_TRUE(event->query());
    event->synchronize();
    CpuStream other("other"); // and can still be waited for
    other.wait(*event);
    other.synchronize();
  });
}

TEST(CpuStream, RefusesEventsOfAnotherBackend) {
  CpuStream stream("s");
  ForeignEvent foreign;
  EXPECT_THAT([&] { stream.record(foreign); },
              ThrowsMessage<Error>("stream 's' (cpu) cannot record an event "
                                   "of the fake backend"));
  EXPECT_THAT([&] { stream.wait(foreign); },
              ThrowsMessage<Error>("stream 's' (cpu) cannot wait for an "
                                   "event of the fake backend"));
  stream.synchronize(); // not a failure of the stream
}

//===----------------------------------------------------------------------===//
// Failure
//===----------------------------------------------------------------------===//

TEST_P(CpuStreamModes, ATaskThatThrowsFailsTheStreamForGood) {
  finishesWithin(kLimit, "ATaskThatThrowsFails", [mode = GetParam()] {
    // Threaded: the failing task waits for `gate`, so that the work behind
    // it is enqueued before the failure is known. Inline: it fails at once.
    const bool threaded = mode == Mode::Threaded;
    Gate gate;
    CpuStream stream("compute", mode);
    bool firstRan = false, thirdRan = false;
    stream.enqueue([&] { firstRan = true; });
    std::unique_ptr<Event> before = stream.recordEvent();
    stream.enqueue(
        [&] {
          if (threaded)
            gate.pass();
          throw std::runtime_error("boom");
        },
        "step 3");
    std::unique_ptr<Event> after;
    if (threaded) {
      after = stream.recordEvent();
      stream.enqueue([&] { thirdRan = true; }); // accepted, then dropped
      gate.open();
    }
    expectFailedForGood(stream, "task #2 (step 3) failed: boom", *before,
                        after.get());
    EXPECT_TRUE(firstRan);
    EXPECT_FALSE(thirdRan);
    CpuEvent event;
    EXPECT_THROW(stream.record(event), Error);
    EXPECT_TRUE(event.query()) << "the refused record left it unrecorded";
  });
}

TEST(CpuStream, FailureMessagesSayWhatWasThrown) {
  finishesWithin(kLimit, "FailureMessagesSayWhatWasThrown", [] {
    CpuStream unlabelled("s");
    unlabelled.enqueue([] { throw Error("bad shape"); });
    EXPECT_THAT([&] { unlabelled.synchronize(); },
                ThrowsMessage<Error>("stream 's': task #1 failed: bad shape"));
    CpuStream unknown("t");
    unknown.enqueue([] {});
    unknown.enqueue([] { throw 42; }, "odd");
    EXPECT_THAT(
        [&] { unknown.synchronize(); },
        ThrowsMessage<Error>("stream 't': task #2 (odd) failed: unknown "
                             "exception"));
  });
}

TEST(CpuStream, FailureDropsTheQueuedTasksAndWhatTheyHold) {
  finishesWithin(kLimit, "FailureDropsTheQueuedTasks", [] {
    Gate gate;
    auto held = std::make_shared<int>(0);
    int ran = 0;
    CpuStream stream("s");
    stream.enqueue([&] {
      gate.pass();
      throw std::runtime_error("boom");
    });
    for (int i = 0; i < 100; ++i)
      stream.enqueue([&ran, held] { ++ran; });
    EXPECT_EQ(held.use_count(), 101);
    gate.open();
    EXPECT_THROW(stream.synchronize(), Error);
    EXPECT_EQ(ran, 0);
    EXPECT_EQ(held.use_count(), 1) << "the dropped tasks were destroyed";
  });
}

TEST(CpuStream, WaitingForAFailedEventFailsTheWaiter) {
  finishesWithin(kLimit, "WaitingForAFailedEventFailsTheWaiter", [] {
    Gate gate; // holds a's failure back until b and c have queued their work
    CpuStream a("a"), b("b"), c("c");
    a.enqueue([&] {
      gate.pass();
      throw std::runtime_error("boom");
    });
    std::unique_ptr<Event> failed = a.recordEvent();
    bool bRan = false, cRan = false;
    b.wait(*failed);
    b.enqueue([&] { bRan = true; });
    c.wait(*b.recordEvent());
    c.enqueue([&] { cRan = true; });
    gate.open();
    const std::string bFailure = "stream 'b': an event it waited for failed: "
                                 "stream 'a': task #1 failed: boom";
    EXPECT_THAT([&] { b.synchronize(); }, ThrowsMessage<Error>(bFailure));
    EXPECT_THAT([&] { c.synchronize(); },
                ThrowsMessage<Error>("stream 'c': an event it waited for "
                                     "failed: " +
                                     bFailure));
    EXPECT_FALSE(bRan);
    EXPECT_FALSE(cRan);
    EXPECT_THROW(a.synchronize(), Error);
  });
}

TEST_P(CpuStreamModes, BlockingOnItselfFromATaskIsAnErrorNotADeadlock) {
  finishesWithin(kLimit, "BlockingOnItselfFromATask", [mode = GetParam()] {
    CpuStream stream("s", mode);
    stream.enqueue([&] { stream.synchronize(); }, "sync");
    EXPECT_THAT([&] { stream.synchronize(); },
                ThrowsMessage<Error>(
                    "stream 's': task #1 (sync) failed: stream 's': "
                    "synchronize() called from one of its own tasks, which "
                    "would deadlock"));
  });
}

TEST(CpuStream, SynchronizingALaterEventFromATaskIsAnError) {
  finishesWithin(kLimit, "SynchronizingALaterEventFromATask", [] {
    Gate gate;
    CpuStream stream("s");
    CpuEvent later;
    stream.enqueue([&] {
      gate.pass();
      later.synchronize();
    });
    stream.record(later); // behind the task
    gate.open();
    EXPECT_THAT([&] { stream.synchronize(); },
                ThrowsMessage<Error>(HasSubstr("one of its own tasks waits "
                                               "for work queued behind it")));
  });
}

TEST(CpuStream, InlineTaskCannotEnqueueOnItsOwnStream) {
  CpuStream stream("s", Mode::Inline);
  bool innerRan = false;
  stream.enqueue([&] { stream.enqueue([&] { innerRan = true; }); });
  EXPECT_FALSE(innerRan);
  EXPECT_THAT([&] { stream.synchronize(); },
              ThrowsMessage<Error>(HasSubstr(
                  "a task of an Inline stream cannot enqueue work on that "
                  "same stream")));
}

TEST(CpuStream, ThreadedTaskMayEnqueueOnItsOwnStream) {
  finishesWithin(kLimit, "ThreadedTaskMayEnqueueOnItsOwnStream", [] {
    CpuStream stream("s");
    std::vector<int> ran;
    Gate go; // task 2 is queued before task 1 runs
    stream.enqueue([&] {
      go.pass();
      ran.push_back(1);
      stream.enqueue([&] { ran.push_back(3); }); // behind task 2
    });
    stream.enqueue([&] { ran.push_back(2); });
    go.open();
    // synchronize() waits for the work enqueued before it is called: the
    // first returns once tasks 1 and 2 have run, task 3 being enqueued by
    // then; the second waits for task 3.
    stream.synchronize();
    stream.synchronize();
    EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  });
}

//===----------------------------------------------------------------------===//
// Destruction
//===----------------------------------------------------------------------===//

TEST(CpuStream, DestructionRunsThePendingWork) {
  finishesWithin(kLimit, "DestructionRunsThePendingWork", [] {
    Gate gate;
    std::atomic<int> ran{0};
    auto held = std::make_shared<int>(0);
    {
      std::optional<OpenLater> opener;
      CpuStream stream("s");
      stream.enqueue([&] { gate.pass(); });
      for (int i = 0; i < 1000; ++i)
        stream.enqueue([&ran, held] { ++ran; });
      EXPECT_EQ(ran.load(), 0);
      opener.emplace(gate, 50ms);
    } // the stream drains (the gate opens meanwhile), then the opener joins
    EXPECT_EQ(ran.load(), 1000);
    EXPECT_EQ(held.use_count(), 1);
  });
}

TEST(CpuStream, DestructionWaitsForTheEventsItsWorkWaitsFor) {
  finishesWithin(kLimit, "DestructionWaitsForTheEvents", [] {
    Gate gate;
    CpuStream a("a");
    int value = 0, seen = -1;
    a.enqueue([&] {
      gate.pass();
      value = 9;
    });
    {
      std::optional<OpenLater> opener;
      CpuStream b("b");
      b.wait(*a.recordEvent());
      b.enqueue([&] { seen = value; });
      opener.emplace(gate, 50ms);
    } // b drains (a's task finishes meanwhile), then the opener joins
    EXPECT_EQ(seen, 9);
  });
}

TEST(CpuStream, DestructionAfterAFailureDoesNotThrow) {
  finishesWithin(kLimit, "DestructionAfterAFailure", [] {
    auto held = std::make_shared<int>(0);
    {
      Gate gate; // the tasks behind the failing one are queued first
      CpuStream stream("s");
      stream.enqueue([&] {
        gate.pass();
        throw std::runtime_error("never reported");
      });
      for (int i = 0; i < 100; ++i)
        stream.enqueue([held] {});
      gate.open();
    }
    EXPECT_EQ(held.use_count(), 1);
  });
}

TEST(CpuStream, ManyStreamsComeAndGo) {
  finishesWithin(kLimit, "ManyStreamsComeAndGo", [] {
    std::atomic<int> ran{0};
    for (int round = 0; round < 50; ++round) {
      std::vector<std::unique_ptr<Stream>> streams;
      for (int s = 0; s < 8; ++s) {
        streams.push_back(
            std::make_unique<CpuStream>("s" + std::to_string(s)));
        streams.back()->enqueue([&ran] { ++ran; });
      }
    }
    EXPECT_EQ(ran.load(), 400);
  });
}

//===----------------------------------------------------------------------===//
// Stress
//===----------------------------------------------------------------------===//

// Two streams of 10000 tasks; every 100 tasks each records an event and
// waits for the other's. Task i of a stream writes slot i of its progress
// once; after a wait, a task reads the other stream's slot of that round,
// which the event must have ordered (plain memory: ThreadSanitizer checks).
TEST(CpuStream, TwoStreamsWithCrossWaitsEvery100Tasks) {
  finishesWithin(kLimit, "TwoStreamsWithCrossWaits", [] {
    constexpr int kTasks = 10000, kEvery = 100;
    std::vector<std::unique_ptr<Stream>> streams;
    streams.push_back(std::make_unique<CpuStream>("a"));
    streams.push_back(std::make_unique<CpuStream>("b"));
    std::vector<std::vector<int>> progress(2, std::vector<int>(kTasks, 0));
    std::vector<std::vector<int>> seen(2, std::vector<int>(kTasks / kEvery, 0));
    std::vector<int> order[2];
    for (int i = 0; i < kTasks; ++i) {
      for (int s = 0; s < 2; ++s)
        streams[s]->enqueue([&, s, i] {
          progress[s][i] = i + 1;
          order[s].push_back(i);
        });
      if ((i + 1) % kEvery != 0)
        continue;
      std::unique_ptr<Event> events[2] = {streams[0]->recordEvent(),
                                          streams[1]->recordEvent()};
      for (int s = 0; s < 2; ++s) {
        streams[s]->wait(*events[1 - s]);
        streams[s]->enqueue([&, s, i] {
          seen[s][i / kEvery] = progress[1 - s][i];
        });
      }
    }
    for (auto &stream : streams)
      stream->synchronize();
    std::vector<int> expectedOrder(kTasks);
    std::iota(expectedOrder.begin(), expectedOrder.end(), 0);
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(order[s], expectedOrder);
      for (int k = 0; k < kTasks / kEvery; ++k)
        ASSERT_EQ(seen[s][k], (k + 1) * kEvery) << "stream " << s;
    }
  });
}

// A ring of 8 streams: in each of 200 rounds, stream s waits for the event
// of stream s-1 of the same round (stream 0 for stream 7's of the round
// before) and adds one to a value handed round the ring.
TEST(CpuStream, ARingOfStreamsHandsAValueRound) {
  finishesWithin(kLimit, "ARingOfStreams", [] {
    constexpr int kStreams = 8, kRounds = 200;
    std::vector<std::unique_ptr<Stream>> ring;
    for (int s = 0; s < kStreams; ++s)
      ring.push_back(std::make_unique<CpuStream>("ring" + std::to_string(s)));
    long value = 0; // only ever touched by one task at a time, in ring order
    std::unique_ptr<Event> last;
    for (int round = 0; round < kRounds; ++round)
      for (int s = 0; s < kStreams; ++s) {
        if (last)
          ring[s]->wait(*last);
        ring[s]->enqueue([&value] { ++value; });
        last = ring[s]->recordEvent();
      }
    last->synchronize();
    EXPECT_EQ(value, long(kStreams) * kRounds);
  });
}
