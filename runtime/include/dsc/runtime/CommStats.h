//===- CommStats.h - calls and bytes sent, per collective -------*- C++ -*-===//
//
// The communicator counts, per collective kind, how many calls this rank
// issued and how many bytes this rank sent. The compiler's communication
// report predicts the same figures from the program (tests hold the two
// equal: test/e2e/report-agreement-*.test), so the
// byte count is not measured on the wire (that depends on the MPI or NCCL
// algorithm of the day) but computed from the call by the formulas below,
// those of the ring algorithms that the bandwidth-optimal implementations
// use (they are also nccl-tests' "bus bandwidth" factors).
//
// N is the number of ranks; B is the payload of the call in bytes,
// count * byteSize(dtype), with `count` the count argument of the call:
//
//   allReduce      2 * (N-1) * B / N, rounded down to a whole byte per call.
//                  (a ring reduce-scatter then a ring all-gather, each moving
//                  (N-1)/N of the buffer; B = the whole buffer)
//   allGather      (N-1) * B         (B = this rank's contribution; the
//                  (N-1)/N share of the N*B gathered bytes)
//   reduceScatter  (N-1) * B         (B = this rank's share of the result;
//                  the (N-1)/N share of the N*B reduced bytes)
//   allToAll       (N-1) * B         (B = the block for one destination; the
//                  block addressed to itself does not leave the rank)
//   broadcast      B on every rank but the last of the ring that starts at
//                  the root, i.e. rank (root + N - 1) % N, which sends 0
//                  (a pipelined ring: each rank forwards the buffer once;
//                  the N ranks together send (N-1) * B)
//   barrier        0
//   send           B                 (point to point, to one peer)
//   recv           0
//
// With N = 1 every figure is 0. All figures are unsigned 64-bit integers and
// depend only on the call's arguments and the rank, never on timing, so two
// runs of a program report identical counters.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_COMMSTATS_H
#define DSC_RUNTIME_COMMSTATS_H

#include "dsc/runtime/CommTypes.h"

#include <array>
#include <cstdint>
#include <iosfwd>

namespace dsc::rt {

/// Bytes this rank sends for one collective, by the formulas above.
/// `payloadBytes` is B; `root` matters for broadcast only.
std::uint64_t collectiveBytesSent(CollectiveKind kind,
                                  std::uint64_t payloadBytes, int rank,
                                  int size, int root = 0);

struct CollectiveCounters {
  std::uint64_t calls = 0;
  std::uint64_t bytesSent = 0;
};

struct CommStats {
  std::array<CollectiveCounters, kCollectiveKindCount> perKind{};

  const CollectiveCounters &operator[](CollectiveKind kind) const {
    return perKind[static_cast<std::size_t>(kind)];
  }
  /// Adds one call of `kind` that sent `bytesSent`.
  void record(CollectiveKind kind, std::uint64_t bytesSent);
  /// Sums over all kinds.
  CollectiveCounters total() const;
};

/// Prints a table, one row per kind and a total:
///   collective          calls      bytes sent
///   allReduce               3           12288
///   ...
///   total                   7           20480
void printStats(const CommStats &stats, std::ostream &os);

} // namespace dsc::rt

#endif // DSC_RUNTIME_COMMSTATS_H
