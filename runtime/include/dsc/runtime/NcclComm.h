//===- NcclComm.h - the NCCL backend of Communicator ------------*- C++ -*-===//
//
// Collectives over device buffers with NCCL, on a CUDA stream (the GPU
// target). Part of dsc_runtime_cuda (docs/cuda.md).
//
// Set-up, collective over the given MPI communicator: every rank selects its
// GPU (Device::select: by local rank) and creates its stream; rank 0 makes
// an ncclUniqueId, which MPI_Bcast hands to the others; then
// ncclCommInitRankConfig. Each step that can fail on one rank alone ends in
// an agreement (MPI_Allreduce of the outcome), so that a rank without a GPU
// makes every rank throw Error (its own message on that rank, "rank(s) R
// could not ..." on the others) instead of leaving them waiting in the
// broadcast.
//
// The NCCL communicator is non-blocking (ncclConfig_t::blocking = 0): no
// NCCL call waits for the peers on the host, so the collective watchdog
// (Watchdog.h) sees every wait. Each collective is enqueued, then
// waitForCompletion polls ncclCommGetAsyncError until NCCL has enqueued it,
// records an event on the stream and polls cudaEventQuery (and NCCL's
// asynchronous error) until it completes, against the same deadline as the
// MPI backend. On timeout the base class prints the watchdog's report, and
// abortJob calls ncclCommAbort, then MPI_Abort(MPI_COMM_WORLD,
// kCollectiveTimeoutExitCode) as the MPI backend does. A set-up that does not
// complete within the timeout ends the job the same way. An NCCL error (a peer
// that failed, a bad buffer) is an Error naming the call, NCCL's result and its
// last error; the communicator is then aborted, and later collectives throw.
//
// Buffers are device memory of device(). Collectives run on stream(): the
// caller orders the work that produces `send` before the call (same stream,
// or synchronized). Overlapping send and receive buffers follow Comm.h: the
// in-place layouts take no copy (reduceScatter's send == recv runs as NCCL's
// in-place form and moves the result to the front), any other overlap is
// copied aside into a device staging buffer first. allToAll is a group of
// ncclSend/ncclRecv pairs; barrier is an allReduce of one int on the stream.
// Collectives of count 0 make no NCCL call.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_NCCLCOMM_H
#define DSC_RUNTIME_NCCLCOMM_H

#include "dsc/runtime/Comm.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace dsc::rt {

class NcclCommunicator final : public Communicator {
public:
  /// Requires MPI_Init; collective over `parent`. When `parent` is
  /// MPI_COMM_WORLD, checks that the launcher's environment (RankInfo.h)
  /// agrees with MPI's rank and size. `stream`: where collectives run;
  /// nullptr creates the communicator's own (non-blocking) stream.
  /// `timeoutSeconds` defaults to DSC_COLLECTIVE_TIMEOUT (Watchdog.h).
  /// Throws Error on every rank when any rank cannot set up (no GPU, a
  /// CUDA or NCCL failure).
  explicit NcclCommunicator(
      MPI_Comm parent = MPI_COMM_WORLD, cudaStream_t stream = nullptr,
      std::optional<double> timeoutSeconds = std::nullopt);
  /// Destroys the NCCL communicator (ncclCommAbort when it failed), the
  /// stream it created and its buffers; frees the MPI duplicate unless MPI
  /// is finalized.
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  /// The GPU this rank uses (current after construction).
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

  /// ncclCommSplit of this communicator (non-blocking too, polled against
  /// the timeout as the set-up is), with an MPI_Comm_split of its MPI
  /// duplicate beside it for the new communicator's agreements. The new
  /// communicator uses this one's GPU and stream: this one must outlive it.
  /// Throws Error on every rank when any rank cannot set it up.
  std::unique_ptr<Communicator> split(int color, int key) override;

private:
  /// split()'s: a communicator of `parent`'s ranks that passed `color`,
  /// on `parent`'s GPU and stream; `part` is their MPI communicator (not
  /// owned: duplicated).
  NcclCommunicator(NcclCommunicator &parent, MPI_Comm part, int color, int key);

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
  /// NCCL's sends wait for their receiver, so two neighbours that send to
  /// each other before receiving (1F1B's steady state) would both wait. A
  /// send is therefore copied aside and held: the next receive from the
  /// same peer runs with it in one NCCL group (Megatron's paired
  /// send-and-receive), anything else runs it alone first.
  void runSend(const void *send, std::size_t count, CommDType dtype, int peer,
               int tag) override;
  void runRecv(void *recv, std::size_t count, CommDType dtype, int peer,
               int tag) override;
  void runCompleteSends() override;
  [[noreturn]] void abortJob(int exitCode) override;

  /// Everything the constructor sets up before the NCCL communicator, on
  /// GPU `device` (-1: Device::select's, by local rank).
  void setUpLocal(int device, cudaStream_t stream);
  void initNccl(const ncclUniqueId &id);
  /// Waits until the NCCL communicator that `call` started (non-blocking)
  /// is ready, under a watchdog of the collectives' timeout; ends the job
  /// when it is not ready in time.
  void waitUntilReady(const char *call);
  /// Throws on every rank of `comm` unless `ok` is true on every rank;
  /// `what` says what the failing ranks could not do.
  void agree(MPI_Comm comm, bool ok, const std::string &localError,
             const char *what);
  void releaseResources();

  /// Enqueues a collective with `issue` (an NCCL call or group), then, once
  /// NCCL has enqueued it, `after` (stream work that must follow it), and
  /// waits through the watchdog until the stream has run it all.
  void run(const char *call, const std::function<ncclResult_t()> &issue,
           const std::function<void()> &after = nullptr);
  /// Throws Error for an NCCL result other than success or in-progress,
  /// after aborting the communicator.
  void checkResult(ncclResult_t result, const char *call);
  /// `send`, copied into the staging buffer (on the stream) when it
  /// overlaps `recv`.
  const void *unaliased(const void *send, std::size_t sendBytes,
                        const void *recv, std::size_t recvBytes);

  MPI_Comm mpiComm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int device_ = -1;
  ncclComm_t comm_ = nullptr;
  bool failed_ = false; // an NCCL error: the communicator was aborted
  cudaStream_t stream_ = nullptr;
  bool ownsStream_ = false;
  cudaEvent_t done_ = nullptr;
  void *scratch_ = nullptr; // barrier's int
  void *staging_ = nullptr;
  std::size_t stagingBytes_ = 0;
  /// The held send (runSend), from its copy in sendStaging_.
  struct HeldSend {
    std::size_t count;
    CommDType dtype;
    int peer;
  };
  std::optional<HeldSend> held_;
  void *sendStaging_ = nullptr;
  std::size_t sendStagingBytes_ = 0;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_NCCLCOMM_H
