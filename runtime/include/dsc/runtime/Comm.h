//===- Comm.h - the communicator interface ----------------------*- C++ -*-===//
//
// The collectives that generated code calls. All ranks of a
// communicator must issue the same collectives in the same order with the
// same counts, dtypes, ops and roots: the compiler emits them that way
// (every collective is an op of the program, in one order on every rank),
// and the watchdog turns a violation into a message.
//
// The public calls are not virtual: they check the arguments, number the
// collective (Watchdog.h), add it to the counters (CommStats.h), and only
// then hand it to the backend, so that every backend counts identically.
//
// Backends:
//   MpiCommunicator (MpiComm.h) - host buffers, over MPI; the CPU target.
//   NcclCommunicator (NcclComm.h) - device buffers, over NCCL on a CUDA
//   stream, bootstrapped by an MPI broadcast of the ncclUniqueId; completion
//   polled against the same watchdog deadline (built with the CUDA toolkit).
//
// Buffers: `count` is the count argument of the call, in elements of
// `dtype`; N is size(). Send and receive buffers may overlap in any way: a
// call behaves as if it read all of `send` before writing `recv` (the
// backend copies `send` aside when it must). The in-place layouts named
// below take no copy.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_COMM_H
#define DSC_RUNTIME_COMM_H

#include "dsc/runtime/CommStats.h"
#include "dsc/runtime/CommTypes.h"
#include "dsc/runtime/Watchdog.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

namespace dsc::rt {

class Communicator {
public:
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// recv[i] = op over all ranks of send[i], for i < count.
  /// In place: send == recv.
  void allReduce(const void *send, void *recv, std::size_t count,
                 CommDType dtype, ReduceOp op);

  /// recv (N * count) = every rank's send (count), in rank order.
  /// In place: send == recv + rank * count elements (MPI's and NCCL's).
  void allGather(const void *send, void *recv, std::size_t count,
                 CommDType dtype);

  /// send holds N blocks of count; recv (count) = op over all ranks of their
  /// block number rank(). In place: send == recv; recv then holds the N *
  /// count input, the result lands in its first count elements and the
  /// rest is left unspecified.
  void reduceScatter(const void *send, void *recv, std::size_t count,
                     CommDType dtype, ReduceOp op = ReduceOp::Sum);

  /// recv (count) = root's send. `send` is read on the root only (others may
  /// pass nullptr). In place: send == recv.
  void broadcast(const void *send, void *recv, std::size_t count,
                 CommDType dtype, int root);

  /// Returns once every rank has entered it.
  void barrier();

  /// send and recv hold N blocks of count: block j of send goes to rank j,
  /// block j of recv comes from rank j (expert parallelism's dispatch and
  /// combine). send == recv is allowed (copied aside).
  void allToAll(const void *send, void *recv, std::size_t count,
                CommDType dtype);

  /// Point to point (pipeline parallelism): `count` elements of `send` to
  /// rank `peer`, tagged `tag`; the rank receives them with a recv from
  /// this rank with the same tag (messages of one tag between two ranks
  /// arrive in the order they were sent). send() returns once the data is
  /// copied aside, never waiting for the receiver, so ranks that each
  /// send before they receive cannot deadlock; completeSends() waits until
  /// every send issued so far has been delivered. recv() returns once the
  /// message is in `recv`; one of another size is an Error. Counted (send:
  /// B bytes, recv: 0) and watched as the collectives are.
  void send(const void *send, std::size_t count, CommDType dtype, int peer,
            int tag);
  void recv(void *recv, std::size_t count, CommDType dtype, int peer, int tag);
  void completeSends();

  /// Calls and bytes sent per collective kind, by the formulas of
  /// CommStats.h.
  const CommStats &stats() const { return stats_; }
  void printStats(std::ostream &os) const;

  /// Sequence number of the last collective issued (0 before the first);
  /// equal on all ranks between collectives.
  std::uint64_t lastSequenceNumber() const { return watchdog_.lastSequence(); }
  double timeoutSeconds() const { return watchdog_.timeoutSeconds(); }

  /// A communicator of the ranks of this one that pass the same `color`,
  /// ranked by `key` (ties by their rank here), as MPI_Comm_split and
  /// ncclCommSplit make. Collective over this communicator: every rank
  /// calls it, in the same order as its other collectives (it is not one of
  /// them: it is neither numbered nor counted). The new communicator has
  /// this one's backend, timeout and jobRank(), numbers and counts its own
  /// collectives (from #1, CommStats of its own), and ends the whole job
  /// when one of them times out. Throws Error for a negative color.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  /// The rank timeout reports name: this process's rank in the job, for a
  /// communicator split from another as for the one it was split from;
  /// rank() unless setJobRank or split set it.
  int jobRank() const { return jobRank_ >= 0 ? jobRank_ : rank(); }
  void setJobRank(int rank) { jobRank_ = rank; }
  /// What timeout reports call this communicator ("the expert group
  /// (ranks 0, 1)"); empty (the default) for the job's own.
  const std::string &label() const { return label_; }
  void setLabel(std::string label) { label_ = std::move(label); }

protected:
  /// `timeoutSeconds`: the watchdog's deadline for one collective.
  explicit Communicator(double timeoutSeconds);

  /// size(), as the number of blocks in the N-block buffers.
  std::size_t ranks() const { return static_cast<std::size_t>(size()); }

  // Backend hooks, called with checked arguments after the collective has
  // been numbered and counted. Each returns when the collective is complete
  // on this rank, having waited through waitForCompletion.
  virtual void runAllReduce(const void *send, void *recv, std::size_t count,
                            CommDType dtype, ReduceOp op) = 0;
  virtual void runAllGather(const void *send, void *recv, std::size_t count,
                            CommDType dtype) = 0;
  virtual void runReduceScatter(const void *send, void *recv, std::size_t count,
                                CommDType dtype, ReduceOp op) = 0;
  virtual void runBroadcast(const void *send, void *recv, std::size_t count,
                            CommDType dtype, int root) = 0;
  virtual void runBarrier() = 0;
  virtual void runAllToAll(const void *send, void *recv, std::size_t count,
                           CommDType dtype) = 0;

  /// Point to point; the default backend has none (Error).
  virtual void runSend(const void *send, std::size_t count, CommDType dtype,
                       int peer, int tag);
  virtual void runRecv(void *recv, std::size_t count, CommDType dtype,
                       int peer, int tag);
  virtual void runCompleteSends() {}

  /// split()'s checks, and what the new communicator inherits from this
  /// one (jobRank()), for the backends' split.
  static void checkSplitColor(int color);
  void inheritFrom(const Communicator &parent) { jobRank_ = parent.jobRank(); }

  /// Polls `isComplete` against the current collective's deadline. On
  /// timeout, prints the watchdog's report to stderr and calls abortJob.
  void waitForCompletion(const std::function<bool()> &isComplete);

  /// Ends every rank of the job with `exitCode` (MPI_Abort for MPI), the
  /// ranks outside this communicator too.
  [[noreturn]] virtual void abortJob(int exitCode) = 0;

private:
  /// Numbers and counts one collective; `payloadBytes` is B of CommStats.h.
  void issue(CollectiveKind kind, std::size_t count, CommDType dtype,
             ReduceOp op, int root, std::uint64_t payloadBytes);

  CollectiveWatchdog watchdog_;
  CollectiveRecord current_;
  CommStats stats_;
  int jobRank_ = -1;
  std::string label_;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_COMM_H
