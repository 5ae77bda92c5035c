//===- StreamTestSupport.h - bounded waits for the stream tests -*- C++ -*-===//
//
// No stream test may hang, even when the code under test deadlocks: tasks
// block on a Gate with a timeout, and the test body runs under
// finishesWithin(), which ends the process with a message when it does not
// return in time (a thread stuck in a deadlock cannot be cancelled). ctest's
// TIMEOUT (stream.cmake) is the last resort.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_STREAMTESTSUPPORT_H
#define DSC_RUNTIME_TESTS_STREAMTESTSUPPORT_H

#include "dsc/runtime/Error.h"
#include "dsc/runtime/Stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dsc::rt::test {

using namespace std::chrono_literals;

/// Opened once, by the test; tasks wait for it, at most 10 s.
class Gate {
public:
  Gate() : opened_(promise_.get_future().share()) {}
  void open() { promise_.set_value(); }
  /// Waits for open(); throws (failing the task that waits) after 10 s.
  void pass() const {
    if (opened_.wait_for(10s) != std::future_status::ready)
      throw std::runtime_error("the gate was not opened within 10 s");
  }

private:
  std::promise<void> promise_;
  std::shared_future<void> opened_;
};

/// Runs `body` on a thread of its own and returns when it does; an
/// exception it throws is rethrown here. When it has not returned within
/// `limit`, fails: prints `what` and ends the process, since the stuck
/// thread cannot be stopped.
template <typename Body>
void finishesWithin(std::chrono::seconds limit, const std::string &what,
                    Body body) {
  std::packaged_task<void()> task(std::move(body));
  std::future<void> done = task.get_future();
  std::thread thread(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FATAL: %s did not finish within %lld s (a hang)\n",
                 what.c_str(), static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  thread.join();
  done.get();
}

/// Opens `gate` from another thread after `delay`, and joins that thread
/// when destroyed.
class OpenLater {
public:
  OpenLater(Gate &gate, std::chrono::milliseconds delay)
      : thread_([&gate, delay] {
          std::this_thread::sleep_for(delay);
          gate.open();
        }) {}
  ~OpenLater() { thread_.join(); }
  OpenLater(const OpenLater &) = delete;
  OpenLater &operator=(const OpenLater &) = delete;

private:
  std::thread thread_;
};

/// What every backend promises about order: `count` tasks enqueued on
/// `stream` run in enqueue order, and have all run after synchronize().
inline void expectTasksRunInEnqueueOrder(Stream &stream, int count) {
  std::vector<int> ran; // touched by the stream's tasks only, until sync
  for (int i = 0; i < count; ++i)
    stream.enqueue([&ran, i] { ran.push_back(i); });
  stream.synchronize();
  std::vector<int> expected(count);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(ran, expected);
  EXPECT_TRUE(stream.query());
}

/// What every backend promises after a task failed with `failure` (the
/// message without the "stream 'S': " prefix): synchronize() and query()
/// throw it every time; enqueue, record and wait refuse new work; `before`
/// (recorded before the failing task) is fine and `after` (recorded after
/// it; may be null) throws it.
inline void expectFailedForGood(Stream &stream, const std::string &failure,
                                Event &before, Event *after) {
  using testing::ThrowsMessage;
  const std::string reported = "stream '" + stream.name() + "': " + failure;
  EXPECT_THAT([&] { stream.synchronize(); }, ThrowsMessage<Error>(reported));
  EXPECT_THAT([&] { stream.synchronize(); }, ThrowsMessage<Error>(reported))
      << "reported every time, not once";
  EXPECT_THAT([&] { stream.query(); }, ThrowsMessage<Error>(reported));

  const std::string refusal = "stream '" + stream.name() +
                              "' refuses new work after a failure: " + failure;
  EXPECT_THAT([&] { stream.enqueue([] {}); }, ThrowsMessage<Error>(refusal));
  EXPECT_THAT([&] { stream.record(before); }, ThrowsMessage<Error>(refusal));
  EXPECT_THAT([&] { stream.wait(before); }, ThrowsMessage<Error>(refusal));

  EXPECT_TRUE(before.query());
  before.synchronize();
  if (after) {
    EXPECT_THAT([&] { after->query(); }, ThrowsMessage<Error>(reported));
    EXPECT_THAT([&] { after->synchronize(); }, ThrowsMessage<Error>(reported));
  }
}

} // namespace dsc::rt::test

#endif // DSC_RUNTIME_TESTS_STREAMTESTSUPPORT_H
