#include "dsc/runtime/Watchdog.h"

#include "dsc/runtime/Error.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <thread>

namespace dsc::rt {

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char *kTimeoutVariable = "DSC_COLLECTIVE_TIMEOUT";
constexpr double kMaxTimeoutSeconds = 1e9;

/// How long the watchdog polls back to back (yielding the core between
/// polls) before it starts sleeping. MPI progresses nonblocking collectives
/// only inside MPI calls, so collectives shorter than this run at full
/// speed; a longer wait is a straggler, and sleeping frees its core.
constexpr std::chrono::milliseconds kHotPolling{50};
constexpr std::chrono::microseconds kFirstSleep{10};
constexpr std::chrono::microseconds kLongestSleep{1000};

double secondsSince(Clock::time_point start, Clock::time_point now) {
  return std::chrono::duration<double>(now - start).count();
}

} // namespace

bool isValidTimeout(double seconds) {
  return std::isfinite(seconds) && seconds > 0 && seconds <= kMaxTimeoutSeconds;
}

double collectiveTimeoutFromEnvironment(const EnvLookup &lookup) {
  std::optional<std::string> value = lookup(kTimeoutVariable);
  if (!value)
    return kDefaultCollectiveTimeoutSeconds;
  double seconds = 0;
  const char *end = value->data() + value->size();
  auto [stop, ec] = std::from_chars(value->data(), end, seconds);
  check(!value->empty() && ec == std::errc() && stop == end &&
            isValidTimeout(seconds),
        std::string(kTimeoutVariable) + "='" + *value +
            "' is not a number of seconds in (0, 1e9]");
  return seconds;
}

double collectiveTimeoutFromEnvironment() {
  return collectiveTimeoutFromEnvironment(processEnvironment);
}

std::string describe(const CollectiveRecord &record) {
  std::ostringstream os;
  os << name(record.kind) << '(';
  switch (record.kind) {
  case CollectiveKind::Barrier:
    break;
  case CollectiveKind::AllReduce:
  case CollectiveKind::ReduceScatter:
    os << "count=" << record.count << ", " << name(record.dtype) << ", "
       << name(record.op);
    break;
  case CollectiveKind::Broadcast:
    os << "count=" << record.count << ", " << name(record.dtype)
       << ", root=" << record.root;
    break;
  case CollectiveKind::Send:
  case CollectiveKind::Recv:
    os << "count=" << record.count << ", " << name(record.dtype)
       << ", peer=" << record.root;
    break;
  case CollectiveKind::AllGather:
  case CollectiveKind::AllToAll:
  case CollectiveKind::Count:
    os << "count=" << record.count << ", " << name(record.dtype);
    break;
  }
  os << ')';
  return os.str();
}

CollectiveWatchdog::CollectiveWatchdog(double timeoutSeconds)
    : timeoutSeconds_(timeoutSeconds) {
  check(isValidTimeout(timeoutSeconds), "collective timeout of " +
                                            std::to_string(timeoutSeconds) +
                                            " s is not in (0, 1e9]");
}

CollectiveRecord CollectiveWatchdog::begin(CollectiveKind kind,
                                           std::size_t count, CommDType dtype,
                                           ReduceOp op, int root) {
  CollectiveRecord record{nextSequence_, kind,        count, dtype, op,
                          root,          Clock::now()};
  ring_[(nextSequence_ - 1) % kHistoryLength] = record;
  ++nextSequence_;
  return record;
}

bool CollectiveWatchdog::waitUntilComplete(
    const CollectiveRecord &record,
    const std::function<bool()> &isComplete) const {
  const Clock::time_point deadline =
      record.start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeoutSeconds_));
  const Clock::time_point hotUntil = record.start + kHotPolling;
  std::chrono::microseconds pause = kFirstSleep;
  while (!isComplete()) {
    Clock::time_point now = Clock::now();
    if (now >= deadline)
      return false;
    if (now < hotUntil) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, kLongestSleep);
    }
  }
  return true;
}

std::vector<CollectiveRecord> CollectiveWatchdog::history() const {
  std::uint64_t last = lastSequence();
  std::uint64_t first = last > kHistoryLength ? last - kHistoryLength + 1 : 1;
  std::vector<CollectiveRecord> records;
  for (std::uint64_t sequence = first; sequence <= last; ++sequence)
    records.push_back(ring_[(sequence - 1) % kHistoryLength]);
  return records;
}

std::string
CollectiveWatchdog::timeoutReport(int rank, const CollectiveRecord &stuck,
                                  const std::string &communicator) const {
  Clock::time_point now = Clock::now();
  std::ostringstream os;
  os << "dsc: rank " << rank << ": collective #" << stuck.sequence << ' '
     << describe(stuck);
  if (!communicator.empty())
    os << " on " << communicator;
  os << " did not complete within " << timeoutSeconds_
     << " s; last collectives issued (oldest first):\n";
  for (const CollectiveRecord &record : history())
    os << "  #" << record.sequence << ' ' << describe(record) << ", issued "
       << std::fixed << std::setprecision(3) << secondsSince(record.start, now)
       << std::defaultfloat << " s ago\n";
  return os.str();
}

} // namespace dsc::rt
