#include "dsc/runtime/CommStats.h"

#include "dsc/runtime/Error.h"

#include <iomanip>
#include <ostream>
#include <string>

namespace dsc::rt {

std::uint64_t collectiveBytesSent(CollectiveKind kind,
                                  std::uint64_t payloadBytes, int rank,
                                  int size, int root) {
  check(size >= 1 && rank >= 0 && rank < size,
        "collectiveBytesSent: rank " + std::to_string(rank) + " of " +
            std::to_string(size));
  const std::uint64_t n = static_cast<std::uint64_t>(size);
  switch (kind) {
  case CollectiveKind::AllReduce: {
    // floor(2(N-1)B / N) without forming 2(N-1)B, which could overflow:
    // with B = qN + r, it is 2(N-1)q + floor(2(N-1)r / N), and r < N.
    std::uint64_t q = payloadBytes / n, r = payloadBytes % n;
    return 2 * (n - 1) * q + 2 * (n - 1) * r / n;
  }
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) * payloadBytes;
  case CollectiveKind::Broadcast:
    check(root >= 0 && root < size, "collectiveBytesSent: root " +
                                        std::to_string(root) + " of " +
                                        std::to_string(size));
    // The last rank of the ring root, root+1, ..., forwards to nobody.
    return rank == (root + size - 1) % size ? 0 : payloadBytes;
  case CollectiveKind::Send:
    return payloadBytes;
  case CollectiveKind::Barrier:
  case CollectiveKind::Recv:
    return 0;
  case CollectiveKind::Count:
    break;
  }
  throw Error("invalid CollectiveKind " + std::to_string(int(kind)));
}

void CommStats::record(CollectiveKind kind, std::uint64_t bytesSent) {
  CollectiveCounters &counters = perKind[static_cast<std::size_t>(kind)];
  ++counters.calls;
  counters.bytesSent += bytesSent;
}

CollectiveCounters CommStats::total() const {
  CollectiveCounters sum;
  for (const CollectiveCounters &counters : perKind) {
    sum.calls += counters.calls;
    sum.bytesSent += counters.bytesSent;
  }
  return sum;
}

void printStats(const CommStats &stats, std::ostream &os) {
  auto row = [&os](const char *label, const auto &calls, const auto &bytes) {
    os << std::left << std::setw(16) << label << std::right << std::setw(10)
       << calls << std::setw(20) << bytes << '\n';
  };
  row("collective", "calls", "bytes sent");
  for (std::size_t i = 0; i < kCollectiveKindCount; ++i) {
    const CollectiveCounters &counters = stats.perKind[i];
    row(name(static_cast<CollectiveKind>(i)), counters.calls,
        counters.bytesSent);
  }
  CollectiveCounters total = stats.total();
  row("total", total.calls, total.bytesSent);
}

} // namespace dsc::rt
