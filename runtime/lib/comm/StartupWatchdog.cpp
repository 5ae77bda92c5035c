//===- StartupWatchdog.cpp - the timer thread of dsc-run's start-up -------===//

#include "dsc/runtime/StartupWatchdog.h"

#include "dsc/runtime/Error.h"
#include "dsc/runtime/Watchdog.h"

namespace dsc::rt {

namespace {

std::chrono::steady_clock::duration checkedTimeout(double seconds) {
  check(isValidTimeout(seconds),
        "start-up timeout of " + std::to_string(seconds) +
            " s is not in (0, 1e9]");
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

} // namespace

StartupWatchdog::StartupWatchdog(double timeoutSeconds, std::string phase,
                                 Expiry onExpiry)
    : timeout_(checkedTimeout(timeoutSeconds)),
      onExpiry_(std::move(onExpiry)), phase_(std::move(phase)),
      deadline_(Clock::now() + timeout_), thread_([this] { watch(); }) {}

StartupWatchdog::~StartupWatchdog() {
  disarm();
  thread_.join();
}

void StartupWatchdog::enter(std::string phase) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (disarmed_ || expired_)
    return;
  phase_ = std::move(phase);
  deadline_ = Clock::now() + timeout_;
  changed_.notify_one();
}

void StartupWatchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  disarmed_ = true;
  changed_.notify_one();
}

bool StartupWatchdog::expired() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return expired_;
}

std::string StartupWatchdog::phase() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return phase_;
}

void StartupWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!disarmed_) {
    if (Clock::now() >= deadline_) {
      expired_ = true;
      std::string phase = phase_;
      lock.unlock();
      onExpiry_(phase, std::chrono::duration<double>(timeout_).count());
      return;
    }
    // Woken early by enter() (a later deadline) or disarm().
    changed_.wait_until(lock, deadline_);
  }
}

} // namespace dsc::rt
