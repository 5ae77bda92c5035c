//===- Watchdog.h - collectives that never finish end the job ---*- C++ -*-===//
//
// A rank that dies or diverges leaves the others blocked in a collective
// forever; a hung rank must end the job with a message, not a hang. So
// every collective is numbered (the same numbers on every rank,
// since all ranks issue the same collectives in the same order) and issued
// nonblocking; the watchdog polls it against a deadline, and keeps the last
// kHistoryLength collectives so that the message says where each rank was.
// What to do on timeout (print and MPI_Abort) is the communicator's
// business; the watchdog only detects it and writes the report.
//
// The deadline is DSC_COLLECTIVE_TIMEOUT seconds (default 600; fractional
// values allowed), or what the communicator's constructor was given.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_WATCHDOG_H
#define DSC_RUNTIME_WATCHDOG_H

#include "dsc/runtime/CommTypes.h"
#include "dsc/runtime/EnvLookup.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dsc::rt {

constexpr double kDefaultCollectiveTimeoutSeconds = 600;
/// Exit status of a job ended by the watchdog (timeout(1)'s "timed out").
constexpr int kCollectiveTimeoutExitCode = 124;

/// Whether `seconds` is a timeout the watchdogs accept: finite, in (0, 1e9]
/// (a bound that keeps the deadline arithmetic exact).
bool isValidTimeout(double seconds);

/// DSC_COLLECTIVE_TIMEOUT in seconds, or the default when it is not set.
/// Throws Error unless the value is a positive finite decimal number of at
/// most 1e9 seconds (a bound that keeps the deadline arithmetic exact).
double collectiveTimeoutFromEnvironment(const EnvLookup &lookup);
double collectiveTimeoutFromEnvironment();

/// One issued collective, as the timeout report describes it.
struct CollectiveRecord {
  std::uint64_t sequence = 0; // 1 for the first collective of a communicator
  CollectiveKind kind = CollectiveKind::Barrier;
  std::size_t count = 0;
  CommDType dtype = CommDType::F32;
  ReduceOp op = ReduceOp::Sum; // allReduce and reduceScatter only
  int root = 0;                // broadcast only
  std::chrono::steady_clock::time_point start;
};

/// "allReduce(count=4, f32, sum)", "broadcast(count=8, i64, root=1)",
/// "barrier()".
std::string describe(const CollectiveRecord &record);

class CollectiveWatchdog {
public:
  static constexpr std::size_t kHistoryLength = 16;

  /// Throws Error unless 0 < timeoutSeconds <= 1e9.
  explicit CollectiveWatchdog(double timeoutSeconds);

  double timeoutSeconds() const { return timeoutSeconds_; }

  /// Numbers the next collective, stamps its start and remembers it.
  CollectiveRecord begin(CollectiveKind kind, std::size_t count,
                         CommDType dtype, ReduceOp op = ReduceOp::Sum,
                         int root = 0);

  /// Calls `isComplete` (which also drives the library's progress, as
  /// MPI_Test does) until it returns true, then returns true; returns false
  /// once `record` has been running for the timeout. For the first 50 ms it
  /// polls back to back, yielding between polls; then it sleeps between
  /// polls, at most a millisecond, so that a rank waiting for a straggler
  /// leaves its core to others.
  bool waitUntilComplete(const CollectiveRecord &record,
                         const std::function<bool()> &isComplete) const;

  /// Sequence number of the last collective begun; 0 before the first.
  std::uint64_t lastSequence() const { return nextSequence_ - 1; }

  /// The last (up to kHistoryLength) collectives begun, oldest first.
  std::vector<CollectiveRecord> history() const;

  /// The message printed when `stuck` times out on `rank`:
  ///   dsc: rank 0: collective #3 allReduce(count=4, f32, sum) did not
  ///   complete within 2 s; last collectives issued:
  ///     #1 allReduce(count=4, f32, sum), issued 2.05 s ago
  ///     ...
  /// `communicator`, when not empty, says which communicator numbered them
  /// (a sub-communicator counts its own collectives): "... allReduce(count=4,
  /// f32, sum) on the expert group (ranks 0, 1) did not complete ...".
  std::string timeoutReport(int rank, const CollectiveRecord &stuck,
                            const std::string &communicator = {}) const;

private:
  double timeoutSeconds_;
  std::uint64_t nextSequence_ = 1;
  std::array<CollectiveRecord, kHistoryLength> ring_{};
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_WATCHDOG_H
