//===- StartupWatchdog.h - a rank stuck in start-up ends the job -*- C++ -*-===//
//
// The collective watchdog (Watchdog.h) covers collectives, but a job can
// hang before the first one: inside MPI_Init when one rank never joins, or
// reading a file that never answers. A StartupWatchdog is a timer thread,
// armed before MPI_Init; each phase of start-up re-arms it for the same
// DSC_COLLECTIVE_TIMEOUT, and when a phase overruns it the thread calls the
// expiry handler with the phase's name (dsc-run prints it and ends the
// process, with MPI_Abort once MPI is up, so that the launcher ends the
// others). Disarmed before the first step, where the collective watchdog
// takes over.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_STARTUPWATCHDOG_H
#define DSC_RUNTIME_STARTUPWATCHDOG_H

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dsc::rt {

class StartupWatchdog {
public:
  /// Called on the watchdog's thread with the phase that overran and the
  /// timeout. dsc-run's handler does not return; if one does, the watchdog
  /// stays expired and calls nothing more.
  using Expiry =
      std::function<void(const std::string &phase, double timeoutSeconds)>;

  /// Arms the watchdog for `phase`. Throws Error unless
  /// 0 < timeoutSeconds <= 1e9.
  StartupWatchdog(double timeoutSeconds, std::string phase, Expiry onExpiry);
  ~StartupWatchdog(); // disarms and joins the thread
  StartupWatchdog(const StartupWatchdog &) = delete;
  StartupWatchdog &operator=(const StartupWatchdog &) = delete;

  /// Starts `phase`: the deadline is now the timeout from now. Nothing once
  /// disarmed or expired.
  void enter(std::string phase);
  /// Stops the timer for good; the thread ends.
  void disarm();
  /// Whether a phase overran (and the handler was called).
  bool expired() const;
  /// The phase now timed (the one that overran, once expired).
  std::string phase() const;

private:
  void watch();

  using Clock = std::chrono::steady_clock;
  const Clock::duration timeout_;
  const Expiry onExpiry_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::string phase_;
  Clock::time_point deadline_;
  bool disarmed_ = false;
  bool expired_ = false;
  std::thread thread_; // last: starts once the members above exist
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_STARTUPWATCHDOG_H
