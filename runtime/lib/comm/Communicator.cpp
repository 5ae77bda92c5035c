#include "dsc/runtime/Comm.h"

#include "dsc/runtime/Error.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

namespace dsc::rt {

namespace {

/// Checks the buffers of one collective: `send` of `sendBlocks` blocks of
/// `count` elements (0: not read), `recv` of `recvBlocks`. Returns the bytes
/// of one block, B of CommStats.h.
std::size_t checkBuffers(const char *collective, const void *send,
                         std::size_t sendBlocks, const void *recv,
                         std::size_t recvBlocks, std::size_t count,
                         CommDType dtype) {
  const std::size_t element = byteSize(dtype);
  const std::size_t maxBlocks = std::max(sendBlocks, recvBlocks);
  check(count <= std::numeric_limits<std::size_t>::max() / element / maxBlocks,
        std::string(collective) + ": count " + std::to_string(count) +
            " overflows the buffer size");
  check(count == 0 || sendBlocks == 0 || send,
        std::string(collective) + ": null send buffer");
  check(count == 0 || recvBlocks == 0 || recv,
        std::string(collective) + ": null receive buffer");
  return count * element;
}

void checkOp(ReduceOp op) { (void)name(op); } // throws when out of range

} // namespace

Communicator::Communicator(double timeoutSeconds) : watchdog_(timeoutSeconds) {}

Communicator::~Communicator() = default;

void Communicator::allReduce(const void *send, void *recv, std::size_t count,
                             CommDType dtype, ReduceOp op) {
  checkOp(op);
  std::size_t bytes = checkBuffers("allReduce", send, 1, recv, 1, count, dtype);
  issue(CollectiveKind::AllReduce, count, dtype, op, 0, bytes);
  runAllReduce(send, recv, count, dtype, op);
}

void Communicator::allGather(const void *send, void *recv, std::size_t count,
                             CommDType dtype) {
  std::size_t bytes =
      checkBuffers("allGather", send, 1, recv, ranks(), count, dtype);
  issue(CollectiveKind::AllGather, count, dtype, ReduceOp::Sum, 0, bytes);
  runAllGather(send, recv, count, dtype);
}

void Communicator::reduceScatter(const void *send, void *recv,
                                 std::size_t count, CommDType dtype,
                                 ReduceOp op) {
  checkOp(op);
  std::size_t bytes =
      checkBuffers("reduceScatter", send, ranks(), recv, 1, count, dtype);
  issue(CollectiveKind::ReduceScatter, count, dtype, op, 0, bytes);
  runReduceScatter(send, recv, count, dtype, op);
}

void Communicator::broadcast(const void *send, void *recv, std::size_t count,
                             CommDType dtype, int root) {
  check(root >= 0 && root < size(), "broadcast: root " + std::to_string(root) +
                                        " is not a rank of " +
                                        std::to_string(size()));
  std::size_t bytes = checkBuffers("broadcast", send, rank() == root ? 1 : 0,
                                   recv, 1, count, dtype);
  issue(CollectiveKind::Broadcast, count, dtype, ReduceOp::Sum, root, bytes);
  runBroadcast(send, recv, count, dtype, root);
}

void Communicator::barrier() {
  issue(CollectiveKind::Barrier, 0, CommDType::F32, ReduceOp::Sum, 0, 0);
  runBarrier();
}

void Communicator::allToAll(const void *send, void *recv, std::size_t count,
                            CommDType dtype) {
  std::size_t bytes =
      checkBuffers("allToAll", send, ranks(), recv, ranks(), count, dtype);
  issue(CollectiveKind::AllToAll, count, dtype, ReduceOp::Sum, 0, bytes);
  runAllToAll(send, recv, count, dtype);
}

void Communicator::send(const void *send, std::size_t count, CommDType dtype,
                        int peer, int tag) {
  check(peer >= 0 && peer < size() && peer != rank(),
        "send: peer " + std::to_string(peer) + " is not another rank of " +
            std::to_string(size()));
  check(tag >= 0, "send: tag " + std::to_string(tag) + " is negative");
  std::size_t bytes = checkBuffers("send", send, 1, nullptr, 0, count, dtype);
  current_ = watchdog_.begin(CollectiveKind::Send, count, dtype, ReduceOp::Sum,
                             peer);
  stats_.record(CollectiveKind::Send, bytes);
  runSend(send, count, dtype, peer, tag);
}

void Communicator::recv(void *recv, std::size_t count, CommDType dtype,
                        int peer, int tag) {
  check(peer >= 0 && peer < size() && peer != rank(),
        "recv: peer " + std::to_string(peer) + " is not another rank of " +
            std::to_string(size()));
  check(tag >= 0, "recv: tag " + std::to_string(tag) + " is negative");
  checkBuffers("recv", nullptr, 0, recv, 1, count, dtype);
  current_ = watchdog_.begin(CollectiveKind::Recv, count, dtype, ReduceOp::Sum,
                             peer);
  stats_.record(CollectiveKind::Recv, 0);
  runRecv(recv, count, dtype, peer, tag);
}

void Communicator::completeSends() { runCompleteSends(); }

void Communicator::runSend(const void *, std::size_t, CommDType, int, int) {
  throw Error("send: this communicator has no point-to-point transfers");
}

void Communicator::runRecv(void *, std::size_t, CommDType, int, int) {
  throw Error("recv: this communicator has no point-to-point transfers");
}

void Communicator::printStats(std::ostream &os) const {
  dsc::rt::printStats(stats_, os);
}

void Communicator::issue(CollectiveKind kind, std::size_t count,
                         CommDType dtype, ReduceOp op, int root,
                         std::uint64_t payloadBytes) {
  current_ = watchdog_.begin(kind, count, dtype, op, root);
  stats_.record(kind,
                collectiveBytesSent(kind, payloadBytes, rank(), size(), root));
}

void Communicator::checkSplitColor(int color) {
  check(color >= 0, "split: color " + std::to_string(color) +
                        " is negative; every rank must join a group");
}

void Communicator::waitForCompletion(const std::function<bool()> &isComplete) {
  if (watchdog_.waitUntilComplete(current_, isComplete))
    return;
  // stderr, unbuffered and flushed: the abort that follows gives no chance
  // to flush anything later.
  std::string report = watchdog_.timeoutReport(jobRank(), current_, label_);
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  abortJob(kCollectiveTimeoutExitCode);
}

} // namespace dsc::rt
