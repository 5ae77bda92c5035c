//===- MpiComm.h - the MPI backend of Communicator --------------*- C++ -*-===//
//
// Collectives over host buffers with MPI's nonblocking collectives
// (MPI_Iallreduce, ...), each polled with MPI_Test by the watchdog. The
// communicator works on its own duplicate of the given MPI communicator, so
// its traffic never matches anyone else's; MPI errors are returned, not
// fatal, and become Error. bf16 and f16 reductions use MPI user operations
// that add or compare in float and round to nearest even.
//
// On a collective timeout it prints the watchdog's report and calls
// MPI_Abort(MPI_COMM_WORLD, kCollectiveTimeoutExitCode), which makes mpirun
// end every rank, those outside a split communicator too.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_MPICOMM_H
#define DSC_RUNTIME_MPICOMM_H

#include "dsc/runtime/Comm.h"

#include <mpi.h>

#include <cstddef>
#include <optional>
#include <list>
#include <vector>

namespace dsc::rt {

/// Throws Error("<prefix><call> failed: <MPI's message>") unless `code` is
/// MPI_SUCCESS.
void checkMpi(int code, const char *call, const char *prefix = "");

/// How every communicator joins a job (MPI and NCCL alike): requires
/// MPI_Init (else Error "<who>: MPI_Init has not been called"), reads the
/// rank and size of `parent`, checks them against the launcher's environment
/// (RankInfo.h) when `parent` is MPI_COMM_WORLD, and returns a duplicate of
/// `parent` whose errors are returned, not fatal. MPI failures are Errors
/// prefixed with `errorPrefix`. Collective over `parent`.
MPI_Comm duplicateForCommunicator(MPI_Comm parent, const char *who,
                                  const char *errorPrefix, int &rank,
                                  int &size);

class MpiCommunicator final : public Communicator {
public:
  /// Requires MPI_Init. `timeoutSeconds` defaults to DSC_COLLECTIVE_TIMEOUT
  /// (Watchdog.h). When `parent` is MPI_COMM_WORLD, checks that the
  /// launcher's environment (RankInfo.h) agrees with MPI's rank and size.
  /// Collective over `parent`, like MPI_Comm_dup.
  explicit MpiCommunicator(MPI_Comm parent = MPI_COMM_WORLD,
                           std::optional<double> timeoutSeconds = std::nullopt);
  /// Frees the duplicate; must run before MPI_Finalize (after it, skips).
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  /// MPI_Comm_split of this communicator's duplicate; the new
  /// communicator works on its own duplicate of the result.
  std::unique_ptr<Communicator> split(int color, int key) override;

private:
  void runAllReduce(const void *send, void *recv, std::size_t count,
                    CommDType dtype, ReduceOp op) override;
  void runAllGather(const void *send, void *recv, std::size_t count,
                    CommDType dtype) override;
  void runReduceScatter(const void *send, void *recv, std::size_t count,
                        CommDType dtype, ReduceOp op) override;
  void runBroadcast(const void *send, void *recv, std::size_t count,
                    CommDType dtype, int root) override;
  void runBarrier() override;
  void runAllToAll(const void *send, void *recv, std::size_t count,
                   CommDType dtype) override;
  /// MPI_Isend from a copy kept until the send completes (the caller's
  /// buffer may be reused at once), MPI_Irecv waited for.
  void runSend(const void *send, std::size_t count, CommDType dtype, int peer,
               int tag) override;
  void runRecv(void *recv, std::size_t count, CommDType dtype, int peer,
               int tag) override;
  void runCompleteSends() override;
  [[noreturn]] void abortJob(int exitCode) override;

  /// Waits for `request` through the watchdog.
  void wait(MPI_Request &request);
  MPI_Op mpiOp(ReduceOp op, CommDType dtype) const;
  /// `send`, copied into staging_ when it overlaps `recv`.
  const void *unaliased(const void *send, std::size_t sendBytes,
                        const void *recv, std::size_t recvBytes);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  MPI_Op bf16Sum_ = MPI_OP_NULL;
  MPI_Op bf16Max_ = MPI_OP_NULL;
  MPI_Op f16Sum_ = MPI_OP_NULL;
  MPI_Op f16Max_ = MPI_OP_NULL;
  std::vector<unsigned char> staging_;
  /// Sends in flight: each request with the copy it sends from.
  struct PendingSend {
    MPI_Request request;
    std::vector<unsigned char> data;
  };
  std::list<PendingSend> sends_;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_MPICOMM_H
