//===- StartupWatchdogTest.cpp - the start-up timer ----------------------===//
//
// The watchdog calls its handler (on its own thread) with the phase that
// overran; a new phase moves the deadline; disarming stops it for good.
// Timeouts are short; each test waits a few times longer than the timeout
// before it decides that the handler was not called.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Error.h"
#include "dsc/runtime/StartupWatchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <thread>

namespace dsc::rt {
namespace {

using namespace std::chrono_literals;

/// What the handler saw.
struct Expiries {
  std::mutex mutex;
  int calls = 0;
  std::string phase;
  double seconds = 0;

  StartupWatchdog::Expiry handler() {
    return [this](const std::string &p, double s) {
      std::lock_guard<std::mutex> lock(mutex);
      ++calls;
      phase = p;
      seconds = s;
    };
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex);
    return calls;
  }
};

/// Waits up to `limit` for the handler's first call.
bool waitForCall(Expiries &expiries, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (expiries.count() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  return expiries.count() > 0;
}

TEST(StartupWatchdogTest, NamesThePhaseThatOverran) {
  Expiries expiries;
  StartupWatchdog watchdog(0.05, "in MPI_Init", expiries.handler());
  watchdog.enter("loading the state");
  ASSERT_TRUE(waitForCall(expiries, 5000ms));
  EXPECT_EQ(expiries.phase, "loading the state");
  EXPECT_DOUBLE_EQ(expiries.seconds, 0.05);
  EXPECT_TRUE(watchdog.expired());
  // Expired, it stays so: a later phase neither re-arms nor calls again.
  watchdog.enter("connecting");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(expiries.count(), 1);
  EXPECT_EQ(watchdog.phase(), "loading the state");
}

TEST(StartupWatchdogTest, DoesNotFireWhileDisarmed) {
  Expiries expiries;
  {
    StartupWatchdog watchdog(0.1, "in MPI_Init", expiries.handler());
    watchdog.disarm();
    std::this_thread::sleep_for(400ms);
    EXPECT_FALSE(watchdog.expired());
    watchdog.enter("after disarming"); // ignored
    std::this_thread::sleep_for(400ms);
  }
  EXPECT_EQ(expiries.count(), 0);
}

TEST(StartupWatchdogTest, EachPhaseGetsTheWholeTimeout) {
  // Five phases of 0.1 s each under a 0.3 s timeout: 0.5 s in all, more
  // than the timeout, but no single phase overran.
  Expiries expiries;
  StartupWatchdog watchdog(0.3, "phase 0", expiries.handler());
  for (int phase = 1; phase <= 5; ++phase) {
    std::this_thread::sleep_for(100ms);
    watchdog.enter("phase " + std::to_string(phase));
  }
  watchdog.disarm();
  EXPECT_EQ(expiries.count(), 0);
}

TEST(StartupWatchdogTest, DestructorEndsTheThreadAtOnce) {
  Expiries expiries;
  auto start = std::chrono::steady_clock::now();
  {
    StartupWatchdog watchdog(600, "in MPI_Init", expiries.handler());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(expiries.count(), 0);
}

TEST(StartupWatchdogTest, RefusesTimeoutsOutOfRange) {
  Expiries expiries;
  for (double seconds : {0.0, -1.0, 2e9,
                         std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()})
    EXPECT_THROW(StartupWatchdog(seconds, "x", expiries.handler()), Error)
        << seconds;
}

} // namespace
} // namespace dsc::rt
