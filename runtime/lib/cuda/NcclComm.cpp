//===- NcclComm.cpp - the NCCL backend of Communicator --------------------===//

#include "dsc/runtime/NcclComm.h"

#include "dsc/runtime/MpiComm.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/RankInfo.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace dsc::rt {

using cuda::checkCuda;

namespace {

constexpr const char *kErrorPrefix = "NcclCommunicator: ";

ncclDataType_t ncclType(CommDType dtype) {
  switch (dtype) {
  case CommDType::F32:
    return ncclFloat32;
  case CommDType::F64:
    return ncclFloat64;
  case CommDType::I32:
    return ncclInt32;
  case CommDType::I64:
    return ncclInt64;
  case CommDType::BF16:
    return ncclBfloat16;
  case CommDType::F16:
    return ncclFloat16;
  }
  throw Error("invalid CommDType " + std::to_string(int(dtype)));
}

ncclRedOp_t ncclOp(ReduceOp op) {
  return op == ReduceOp::Max ? ncclMax : ncclSum;
}

bool overlaps(const void *a, std::size_t aBytes, const void *b,
              std::size_t bBytes) {
  auto begin1 = reinterpret_cast<std::uintptr_t>(a);
  auto begin2 = reinterpret_cast<std::uintptr_t>(b);
  return aBytes && bBytes && begin1 < begin2 + bBytes &&
         begin2 < begin1 + aBytes;
}

/// Makes `device` current for this thread: collectives may come from
/// another thread than the one that built the communicator.
void makeCurrent(int device) {
  if (cuda::Device::current("the NCCL communicator") != device)
    checkCuda(cudaSetDevice(device), "NcclCommunicator: cudaSetDevice(" +
                                         std::to_string(device) + ")");
}

const char *offset(const void *p, std::size_t bytes) {
  return static_cast<const char *>(p) + bytes;
}

/// Makes `buffer` (device memory, idle) hold at least `bytes`.
void reserve(void *&buffer, std::size_t &capacity, std::size_t bytes) {
  if (capacity >= bytes)
    return;
  if (buffer)
    checkCuda(cudaFree(buffer), "NcclCommunicator: cudaFree");
  buffer = nullptr;
  capacity = 0;
  checkCuda(cudaMalloc(&buffer, bytes), "NcclCommunicator: cudaMalloc of " +
                                            std::to_string(bytes) +
                                            " staging bytes");
  capacity = bytes;
}

/// "NCCL set-up did not complete within 600 s" for the set-up and tear-down
/// waits, which have no collective record of their own.
std::string notWithin(int rank, const char *what, double seconds) {
  std::ostringstream os;
  os << "dsc: rank " << rank << ": " << what << " did not complete within "
     << seconds << " s\n";
  return os.str();
}

} // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm parent, cudaStream_t stream,
                                   std::optional<double> timeoutSeconds)
    : Communicator(timeoutSeconds ? *timeoutSeconds
                                  : collectiveTimeoutFromEnvironment()) {
  mpiComm_ = duplicateForCommunicator(parent, "NcclCommunicator", kErrorPrefix,
                                      rank_, size_);
  try {
    // 1. GPU, stream, buffers; rank 0 also makes the unique id.
    ncclUniqueId id{};
    bool ok = true;
    std::string error;
    try {
      setUpLocal(-1, stream);
      if (rank_ == 0)
        checkResult(ncclGetUniqueId(&id), "ncclGetUniqueId");
    } catch (const Error &e) {
      ok = false;
      error = e.what();
    }
    agree(mpiComm_, ok, error, "set up a GPU");
    // 2. The id to every rank, and the NCCL communicator.
    checkMpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpiComm_),
             "MPI_Bcast of the ncclUniqueId", kErrorPrefix);
    ok = true;
    error.clear();
    try {
      initNccl(id);
    } catch (const Error &e) {
      ok = false;
      error = e.what();
    }
    agree(mpiComm_, ok, error, "create the NCCL communicator");
  } catch (...) {
    failed_ = true; // abort, not finalize: some rank has given up on it
    releaseResources();
    throw;
  }
}

NcclCommunicator::NcclCommunicator(NcclCommunicator &parent, MPI_Comm part,
                                   int color, int key)
    : Communicator(parent.timeoutSeconds()) {
  mpiComm_ = duplicateForCommunicator(part, "NcclCommunicator", kErrorPrefix,
                                      rank_, size_);
  inheritFrom(parent);
  // ncclCommSplit is collective over the parent: its ranks agree.
  try {
    bool ok = true;
    std::string error;
    try {
      check(parent.comm_ && !parent.failed_,
            "NcclCommunicator: split: the NCCL communicator failed earlier "
            "and was aborted");
      setUpLocal(parent.device_, parent.stream_);
    } catch (const Error &e) {
      ok = false;
      error = e.what();
    }
    agree(parent.mpiComm_, ok, error, "set up a split communicator");
    ok = true;
    error.clear();
    try {
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0; // as the parent: every wait under the deadline
      checkResult(ncclCommSplit(parent.comm_, color, key, &comm_, &config),
                  "ncclCommSplit");
      waitUntilReady("ncclCommSplit");
    } catch (const Error &e) {
      ok = false;
      error = e.what();
    }
    agree(parent.mpiComm_, ok, error, "split the NCCL communicator");
  } catch (...) {
    failed_ = true;
    releaseResources();
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() { releaseResources(); }

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  checkSplitColor(color);
  MPI_Comm part = MPI_COMM_NULL;
  checkMpi(MPI_Comm_split(mpiComm_, color, key, &part), "MPI_Comm_split",
           kErrorPrefix);
  std::unique_ptr<NcclCommunicator> child;
  try {
    child.reset(new NcclCommunicator(*this, part, color, key));
  } catch (...) {
    MPI_Comm_free(&part);
    throw;
  }
  MPI_Comm_free(&part); // the child works on its own duplicate
  return child;
}

void NcclCommunicator::setUpLocal(int device, cudaStream_t stream) {
  if (device < 0) {
    device_ = cuda::Device::select(rank_, "the NCCL communicator");
  } else {
    device_ = device;
    makeCurrent(device_);
  }
  if (stream) {
    stream_ = stream;
  } else {
    checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              "NcclCommunicator: cudaStreamCreateWithFlags");
    ownsStream_ = true;
  }
  checkCuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming),
            "NcclCommunicator: cudaEventCreateWithFlags");
  checkCuda(cudaMalloc(&scratch_, sizeof(std::int32_t)),
            "NcclCommunicator: cudaMalloc");
  checkCuda(cudaMemset(scratch_, 0, sizeof(std::int32_t)),
            "NcclCommunicator: cudaMemset");
}

void NcclCommunicator::initNccl(const ncclUniqueId &id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0; // every wait goes through the deadline below
  checkResult(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config),
              "ncclCommInitRankConfig");
  waitUntilReady("ncclCommInitRankConfig");
}

void NcclCommunicator::waitUntilReady(const char *call) {
  // Not a collective of the communicator: a watchdog of its own, with the
  // same deadline and polling.
  CollectiveWatchdog setUp(timeoutSeconds());
  CollectiveRecord record =
      setUp.begin(CollectiveKind::Barrier, 0, CommDType::F32);
  bool done = setUp.waitUntilComplete(record, [this, call] {
    ncclResult_t state = ncclSuccess;
    checkResult(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
    checkResult(state, call);
    return state == ncclSuccess;
  });
  if (!done) {
    std::string what = "NCCL set-up (" + std::string(call) + ")";
    std::string message = notWithin(jobRank(), what.c_str(), timeoutSeconds());
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    abortJob(kCollectiveTimeoutExitCode);
  }
}

void NcclCommunicator::agree(MPI_Comm comm, bool ok,
                             const std::string &localError, const char *what) {
  int mine = ok ? 1 : 0;
  int ranks = 0;
  checkMpi(MPI_Comm_size(comm, &ranks), "MPI_Comm_size", kErrorPrefix);
  std::vector<int> all(static_cast<std::size_t>(ranks), 0);
  checkMpi(MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm),
           "MPI_Allgather", kErrorPrefix);
  if (!ok)
    throw Error(localError);
  std::string failed;
  int failures = 0;
  for (int r = 0; r < ranks; ++r)
    if (!all[static_cast<std::size_t>(r)]) {
      failed += (failures++ ? ", " : "") + std::to_string(r);
    }
  if (failures)
    throw Error(std::string("NcclCommunicator: rank") +
                (failures > 1 ? "s " : " ") + failed + " could not " + what);
}

void NcclCommunicator::checkResult(ncclResult_t result, const char *call) {
  if (result == ncclSuccess || result == ncclInProgress)
    return;
  std::string message =
      std::string(call) + " failed: " + ncclGetErrorString(result);
  const char *last = ncclGetLastError(comm_);
  if (last && *last)
    message += " (" + std::string(last) + ")";
  if (comm_) { // unusable now: the peers may be inside the collective
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  failed_ = true;
  throw Error(message);
}

void NcclCommunicator::releaseResources() {
  if (comm_) {
    bool clean = false;
    ncclResult_t state = failed_ ? ncclInternalError : ncclCommFinalize(comm_);
    if (state == ncclSuccess || state == ncclInProgress) {
      // Bounded: a peer that has gone must not hang this destructor.
      CollectiveWatchdog tearDown(timeoutSeconds());
      CollectiveRecord record =
          tearDown.begin(CollectiveKind::Barrier, 0, CommDType::F32);
      tearDown.waitUntilComplete(record, [&] {
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess)
          state = ncclInternalError;
        return state != ncclInProgress;
      });
      clean = state == ncclSuccess;
    }
    if (clean)
      (void)ncclCommDestroy(comm_);
    else
      (void)ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  if (done_)
    (void)cudaEventDestroy(done_);
  if (scratch_)
    (void)cudaFree(scratch_);
  if (staging_)
    (void)cudaFree(staging_);
  if (sendStaging_)
    (void)cudaFree(sendStaging_);
  sendStaging_ = nullptr;
  if (ownsStream_ && stream_)
    (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
  done_ = nullptr;
  scratch_ = staging_ = nullptr;
  stagingBytes_ = 0;
  stream_ = nullptr;
  ownsStream_ = false;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpiComm_ != MPI_COMM_NULL)
    MPI_Comm_free(&mpiComm_);
  mpiComm_ = MPI_COMM_NULL;
}

void NcclCommunicator::run(const char *call,
                           const std::function<ncclResult_t()> &issue,
                           const std::function<void()> &after) {
  check(comm_ && !failed_,
        std::string(call) +
            ": the NCCL communicator failed earlier and was aborted");
  if (held_) {
    // A held send runs before any other call (runRecv takes the one it
    // pairs with out first).
    HeldSend send = *held_;
    held_.reset();
    run("ncclSend", [&] {
      return ncclSend(sendStaging_, send.count, ncclType(send.dtype), send.peer,
                      comm_, stream_);
    });
  }
  try {
    makeCurrent(device_);
    checkResult(issue(), call);
    bool recorded = false;
    waitForCompletion([&] {
      ncclResult_t state = ncclSuccess;
      checkResult(ncclCommGetAsyncError(comm_, &state),
                  "ncclCommGetAsyncError");
      checkResult(state, call); // a peer's failure shows here
      if (state == ncclInProgress)
        return false; // NCCL is still enqueuing it
      if (!recorded) {
        if (after)
          after();
        checkCuda(cudaEventRecord(done_, stream_),
                  std::string(call) + ": cudaEventRecord");
        recorded = true;
      }
      cudaError_t status = cudaEventQuery(done_);
      if (status == cudaErrorNotReady)
        return false;
      checkCuda(status, std::string(call) + ": cudaEventQuery");
      return true;
    });
  } catch (...) {
    if (comm_) { // the peers cannot complete this collective with us
      (void)ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    failed_ = true;
    throw;
  }
}

const void *NcclCommunicator::unaliased(const void *send, std::size_t sendBytes,
                                        const void *recv,
                                        std::size_t recvBytes) {
  if (!overlaps(send, sendBytes, recv, recvBytes))
    return send;
  // The last collective has completed (each one is waited for), so the
  // old buffer is idle.
  reserve(staging_, stagingBytes_, sendBytes);
  checkCuda(cudaMemcpyAsync(staging_, send, sendBytes, cudaMemcpyDeviceToDevice,
                            stream_),
            "NcclCommunicator: cudaMemcpyAsync to the staging buffer");
  return staging_;
}

void NcclCommunicator::runAllReduce(const void *send, void *recv,
                                    std::size_t count, CommDType dtype,
                                    ReduceOp op) {
  if (count == 0)
    return;
  std::size_t bytes = count * byteSize(dtype);
  run("ncclAllReduce", [&] {
    const void *input =
        send == recv ? send : unaliased(send, bytes, recv, bytes);
    return ncclAllReduce(input, recv, count, ncclType(dtype), ncclOp(op), comm_,
                         stream_);
  });
}

void NcclCommunicator::runAllGather(const void *send, void *recv,
                                    std::size_t count, CommDType dtype) {
  if (count == 0)
    return;
  std::size_t bytes = count * byteSize(dtype);
  const void *ownBlock = offset(recv, static_cast<std::size_t>(rank_) * bytes);
  run("ncclAllGather", [&] {
    const void *input =
        send == ownBlock ? send : unaliased(send, bytes, recv, ranks() * bytes);
    return ncclAllGather(input, recv, count, ncclType(dtype), comm_, stream_);
  });
}

void NcclCommunicator::runReduceScatter(const void *send, void *recv,
                                        std::size_t count, CommDType dtype,
                                        ReduceOp op) {
  if (count == 0)
    return;
  std::size_t bytes = count * byteSize(dtype);
  if (send == recv) {
    // Comm.h's in-place form puts the result in the first block; NCCL's
    // puts it in block rank(). Run NCCL's, then move it to the front (the
    // two blocks are disjoint unless rank() is 0, where they coincide).
    void *own = const_cast<char *>(
        offset(recv, static_cast<std::size_t>(rank_) * bytes));
    run(
        "ncclReduceScatter",
        [&] {
          return ncclReduceScatter(send, own, count, ncclType(dtype),
                                   ncclOp(op), comm_, stream_);
        },
        [&] {
          if (own != recv)
            checkCuda(cudaMemcpyAsync(recv, own, bytes,
                                      cudaMemcpyDeviceToDevice, stream_),
                      "ncclReduceScatter: cudaMemcpyAsync of the result");
        });
    return;
  }
  run("ncclReduceScatter", [&] {
    const void *input = unaliased(send, ranks() * bytes, recv, bytes);
    return ncclReduceScatter(input, recv, count, ncclType(dtype), ncclOp(op),
                             comm_, stream_);
  });
}

void NcclCommunicator::runBroadcast(const void *send, void *recv,
                                    std::size_t count, CommDType dtype,
                                    int root) {
  if (count == 0)
    return;
  std::size_t bytes = count * byteSize(dtype);
  run("ncclBroadcast", [&] {
    const void *input = recv; // read on the root only
    if (rank_ == root && send != recv)
      input = unaliased(send, bytes, recv, bytes);
    return ncclBroadcast(input, recv, count, ncclType(dtype), root, comm_,
                         stream_);
  });
}

void NcclCommunicator::runBarrier() {
  run("ncclAllReduce (barrier)", [&] {
    return ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_,
                         stream_);
  });
}

void NcclCommunicator::runAllToAll(const void *send, void *recv,
                                   std::size_t count, CommDType dtype) {
  if (count == 0)
    return;
  std::size_t block = count * byteSize(dtype);
  run("ncclSend/ncclRecv (allToAll)", [&] {
    const void *input = unaliased(send, ranks() * block, recv, ranks() * block);
    ncclResult_t result = ncclGroupStart();
    if (result != ncclSuccess)
      return result;
    for (int peer = 0; peer < size_; ++peer) {
      std::size_t at = static_cast<std::size_t>(peer) * block;
      ncclResult_t sent = ncclSend(offset(input, at), count, ncclType(dtype),
                                   peer, comm_, stream_);
      ncclResult_t received = ncclRecv(static_cast<char *>(recv) + at, count,
                                       ncclType(dtype), peer, comm_, stream_);
      if (result == ncclSuccess)
        result = sent != ncclSuccess ? sent : received;
    }
    ncclResult_t ended = ncclGroupEnd(); // always closes the group
    return result != ncclSuccess ? result : ended;
  });
}

void NcclCommunicator::runSend(const void *send, std::size_t count,
                               CommDType dtype, int peer, int /*tag*/) {
  runCompleteSends(); // the staging buffer is idle once it returns
  std::size_t bytes = count * byteSize(dtype);
  makeCurrent(device_);
  reserve(sendStaging_, sendStagingBytes_, bytes);
  checkCuda(cudaMemcpyAsync(sendStaging_, send, bytes, cudaMemcpyDeviceToDevice,
                            stream_),
            "NcclCommunicator: cudaMemcpyAsync of a send");
  held_ = HeldSend{count, dtype, peer};
}

void NcclCommunicator::runRecv(void *recv, std::size_t count, CommDType dtype,
                               int peer, int /*tag*/) {
  std::optional<HeldSend> send;
  if (held_ && held_->peer == peer)
    std::swap(send, held_);
  run(send ? "ncclSend/ncclRecv" : "ncclRecv", [&] {
    if (!send)
      return ncclRecv(recv, count, ncclType(dtype), peer, comm_, stream_);
    ncclResult_t result = ncclGroupStart();
    if (result != ncclSuccess)
      return result;
    ncclResult_t sent = ncclSend(sendStaging_, send->count,
                                 ncclType(send->dtype), peer, comm_, stream_);
    ncclResult_t received =
        ncclRecv(recv, count, ncclType(dtype), peer, comm_, stream_);
    result = sent != ncclSuccess ? sent : received;
    ncclResult_t ended = ncclGroupEnd(); // always closes the group
    return result != ncclSuccess ? result : ended;
  });
}

void NcclCommunicator::runCompleteSends() {
  if (!held_)
    return;
  HeldSend send = *held_;
  held_.reset();
  run("ncclSend", [&] {
    return ncclSend(sendStaging_, send.count, ncclType(send.dtype), send.peer,
                    comm_, stream_);
  });
}

void NcclCommunicator::abortJob(int exitCode) {
  if (comm_) {
    (void)ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  // The whole job, not only this communicator's ranks: the others may wait
  // for them in another communicator's collective.
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode); // MPI_Abort does not return; this is for the compiler
}

} // namespace dsc::rt
