#include "dsc/runtime/MpiComm.h"

#include "MpiFloat16Ops.h"

#include "dsc/runtime/Error.h"
#include "dsc/runtime/RankInfo.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dsc::rt {

void checkMpi(int code, const char *call, const char *prefix) {
  if (code == MPI_SUCCESS)
    return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, message, &length) != MPI_SUCCESS)
    length = 0;
  throw Error(std::string(prefix) + call + " failed: " +
              std::string(message, static_cast<std::size_t>(length)));
}

MPI_Comm duplicateForCommunicator(MPI_Comm parent, const char *who,
                                  const char *errorPrefix, int &rank,
                                  int &size) {
  int initialized = 0;
  checkMpi(MPI_Initialized(&initialized), "MPI_Initialized", errorPrefix);
  check(initialized, std::string(who) + ": MPI_Init has not been called");
  checkMpi(MPI_Comm_rank(parent, &rank), "MPI_Comm_rank", errorPrefix);
  checkMpi(MPI_Comm_size(parent, &size), "MPI_Comm_size", errorPrefix);
  if (parent == MPI_COMM_WORLD)
    checkRankAgrees(detectRankFromEnvironment(), rank, size, "MPI_COMM_WORLD");
  MPI_Comm dup;
  checkMpi(MPI_Comm_dup(parent, &dup), "MPI_Comm_dup", errorPrefix);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return dup;
}

namespace {

MPI_Datatype mpiType(CommDType dtype) {
  switch (dtype) {
  case CommDType::F32:
    return MPI_FLOAT;
  case CommDType::F64:
    return MPI_DOUBLE;
  case CommDType::I32:
    return MPI_INT32_T;
  case CommDType::I64:
    return MPI_INT64_T;
  case CommDType::BF16:
  case CommDType::F16:
    return MPI_UINT16_T; // reduced by the 16-bit user operations
  }
  throw Error("invalid CommDType " + std::to_string(int(dtype)));
}

/// MPI counts are int (OpenMPI 4 has no large-count calls).
int mpiCount(std::size_t count) {
  check(count <= static_cast<std::size_t>(INT_MAX),
        "collective of " + std::to_string(count) +
            " elements exceeds MPI's int count");
  return static_cast<int>(count);
}

bool overlaps(const void *a, std::size_t aBytes, const void *b,
              std::size_t bBytes) {
  auto begin1 = reinterpret_cast<std::uintptr_t>(a);
  auto begin2 = reinterpret_cast<std::uintptr_t>(b);
  return aBytes && bBytes && begin1 < begin2 + bBytes &&
         begin2 < begin1 + aBytes;
}

} // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm parent,
                                 std::optional<double> timeoutSeconds)
    : Communicator(timeoutSeconds ? *timeoutSeconds
                                  : collectiveTimeoutFromEnvironment()) {
  // Nothing below throws once the duplicate exists, so it cannot leak.
  comm_ = duplicateForCommunicator(parent, "MpiCommunicator", "", rank_, size_);
  MPI_Op_create(bf16SumOp, /*commute=*/1, &bf16Sum_);
  MPI_Op_create(bf16MaxOp, /*commute=*/1, &bf16Max_);
  MPI_Op_create(f16SumOp, /*commute=*/1, &f16Sum_);
  MPI_Op_create(f16MaxOp, /*commute=*/1, &f16Max_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  MPI_Op_free(&bf16Sum_);
  MPI_Op_free(&bf16Max_);
  MPI_Op_free(&f16Sum_);
  MPI_Op_free(&f16Max_);
  MPI_Comm_free(&comm_);
}

void MpiCommunicator::runAllReduce(const void *send, void *recv,
                                   std::size_t count, CommDType dtype,
                                   ReduceOp op) {
  std::size_t bytes = count * byteSize(dtype);
  const void *input =
      send == recv ? MPI_IN_PLACE : unaliased(send, bytes, recv, bytes);
  MPI_Request request;
  checkMpi(MPI_Iallreduce(input, recv, mpiCount(count), mpiType(dtype),
                          mpiOp(op, dtype), comm_, &request),
           "MPI_Iallreduce");
  wait(request);
}

void MpiCommunicator::runAllGather(const void *send, void *recv,
                                   std::size_t count, CommDType dtype) {
  std::size_t bytes = count * byteSize(dtype);
  const void *ownBlock =
      static_cast<const char *>(recv) + static_cast<std::size_t>(rank_) * bytes;
  const void *input = send == ownBlock
                          ? MPI_IN_PLACE
                          : unaliased(send, bytes, recv, ranks() * bytes);
  MPI_Request request;
  checkMpi(MPI_Iallgather(input, mpiCount(count), mpiType(dtype), recv,
                          mpiCount(count), mpiType(dtype), comm_, &request),
           "MPI_Iallgather");
  wait(request);
}

void MpiCommunicator::runReduceScatter(const void *send, void *recv,
                                       std::size_t count, CommDType dtype,
                                       ReduceOp op) {
  std::size_t bytes = count * byteSize(dtype);
  const void *input = send == recv
                          ? MPI_IN_PLACE
                          : unaliased(send, ranks() * bytes, recv, bytes);
  MPI_Request request;
  checkMpi(MPI_Ireduce_scatter_block(input, recv, mpiCount(count),
                                     mpiType(dtype), mpiOp(op, dtype), comm_,
                                     &request),
           "MPI_Ireduce_scatter_block");
  wait(request);
}

void MpiCommunicator::runBroadcast(const void *send, void *recv,
                                   std::size_t count, CommDType dtype,
                                   int root) {
  if (rank_ == root && send != recv)
    std::memmove(recv, send, count * byteSize(dtype));
  MPI_Request request;
  checkMpi(
      MPI_Ibcast(recv, mpiCount(count), mpiType(dtype), root, comm_, &request),
      "MPI_Ibcast");
  wait(request);
}

void MpiCommunicator::runBarrier() {
  MPI_Request request;
  checkMpi(MPI_Ibarrier(comm_, &request), "MPI_Ibarrier");
  wait(request);
}

void MpiCommunicator::runAllToAll(const void *send, void *recv,
                                  std::size_t count, CommDType dtype) {
  // Always copied aside when aliased: MPI_IN_PLACE for the nonblocking
  // all-to-all is not supported by every MPI.
  std::size_t bytes = ranks() * count * byteSize(dtype);
  const void *input = unaliased(send, bytes, recv, bytes);
  MPI_Request request;
  checkMpi(MPI_Ialltoall(input, mpiCount(count), mpiType(dtype), recv,
                         mpiCount(count), mpiType(dtype), comm_, &request),
           "MPI_Ialltoall");
  wait(request);
}

void MpiCommunicator::runSend(const void *send, std::size_t count,
                              CommDType dtype, int peer, int tag) {
  // Completed sends give their copies back first.
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    checkMpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    it = done ? sends_.erase(it) : std::next(it);
  }
  const auto *bytes = static_cast<const unsigned char *>(send);
  PendingSend &pending = sends_.emplace_back();
  pending.data.assign(bytes, bytes + count * byteSize(dtype));
  checkMpi(MPI_Isend(pending.data.data(), mpiCount(count), mpiType(dtype), peer,
                     tag, comm_, &pending.request),
           "MPI_Isend");
}

void MpiCommunicator::runRecv(void *recv, std::size_t count, CommDType dtype,
                              int peer, int tag) {
  // One element more than expected: a longer message then shows as one,
  // not as MPI's truncation error.
  std::size_t bytes = count * byteSize(dtype);
  staging_.resize(bytes + byteSize(dtype));
  MPI_Request request;
  checkMpi(MPI_Irecv(staging_.data(), mpiCount(count + 1), mpiType(dtype), peer,
                     tag, comm_, &request),
           "MPI_Irecv");
  MPI_Status status;
  waitForCompletion([&request, &status] {
    int done = 0;
    checkMpi(MPI_Test(&request, &done, &status), "MPI_Test");
    return done != 0;
  });
  int received = 0;
  checkMpi(MPI_Get_count(&status, mpiType(dtype), &received), "MPI_Get_count");
  check(received == mpiCount(count),
        "recv: rank " + std::to_string(peer) + " sent " +
            std::to_string(received) + " " + name(dtype) +
            " elements with tag " + std::to_string(tag) + ", expected " +
            std::to_string(count));
  std::memcpy(recv, staging_.data(), bytes);
}

void MpiCommunicator::runCompleteSends() {
  for (PendingSend &pending : sends_)
    wait(pending.request);
  sends_.clear();
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  checkSplitColor(color);
  MPI_Comm part = MPI_COMM_NULL;
  checkMpi(MPI_Comm_split(comm_, color, key, &part), "MPI_Comm_split");
  std::unique_ptr<MpiCommunicator> child;
  try {
    child = std::make_unique<MpiCommunicator>(part, timeoutSeconds());
  } catch (...) {
    MPI_Comm_free(&part);
    throw;
  }
  MPI_Comm_free(&part); // the child works on its own duplicate
  child->inheritFrom(*this);
  return child;
}

void MpiCommunicator::abortJob(int exitCode) {
  // The whole job, not only this communicator's ranks: the others may wait
  // for them in another communicator's collective.
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode); // MPI_Abort does not return; this is for the compiler
}

void MpiCommunicator::wait(MPI_Request &request) {
  waitForCompletion([&request] {
    int done = 0;
    checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  });
}

MPI_Op MpiCommunicator::mpiOp(ReduceOp op, CommDType dtype) const {
  bool max = op == ReduceOp::Max;
  if (dtype == CommDType::BF16)
    return max ? bf16Max_ : bf16Sum_;
  if (dtype == CommDType::F16)
    return max ? f16Max_ : f16Sum_;
  return max ? MPI_MAX : MPI_SUM;
}

const void *MpiCommunicator::unaliased(const void *send, std::size_t sendBytes,
                                       const void *recv,
                                       std::size_t recvBytes) {
  if (!overlaps(send, sendBytes, recv, recvBytes))
    return send;
  staging_.resize(sendBytes);
  std::memcpy(staging_.data(), send, sendBytes);
  return staging_.data();
}

} // namespace dsc::rt
