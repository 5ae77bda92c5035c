//===- NvmeIoThread.cpp - NvmeStore's I/O thread over io_uring ------------===//
//
// The thread that owns the ring (or, where io_uring is unavailable or not
// wanted, makes each transfer a pread or pwrite): it takes new requests, cuts them into
// chunks (NvmeEngine.h) as slots free up, submits them and handles their
// completions: short transfers are resubmitted for the rest, EINTR and
// EAGAIN retried, any other failure ends the request with the path and
// errno's text. When the store closes, requests not yet started are
// failed, those in flight cancelled, and the thread waits for the kernel to
// give their slots back (bounded by the timeout) before it ends.
//
//===----------------------------------------------------------------------===//

#include "NvmeEngine.h"

#include "dsc/runtime/Error.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace dsc::rt {

namespace {

/// The eventfd read's user_data; chunks are addressed by their (aligned)
/// pointers, which are never 1, and a cancel's completion by 2.
constexpr uint64_t kWakeTag = 1;
constexpr uint64_t kCancelTag = 2;

/// How long a closing store waits for the transfers it cancelled when no
/// timeout was given.
constexpr double kCloseSecondsWithoutTimeout = 10;

} // namespace

void NvmeStore::Engine::armWake() {
  io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
  // The ring has an entry for it: the slots take queueDepth of the
  // queueDepth + 2, and a full submission queue was submitted before.
  io_uring_prep_read(sqe, wakeFd_, &wakeValue_, sizeof(wakeValue_), 0);
  io_uring_sqe_set_data64(sqe, kWakeTag);
}

void NvmeStore::Engine::takeIncoming(bool &stopping) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!incoming_.empty()) {
    active_.push_back(std::move(incoming_.front()));
    incoming_.pop_front();
  }
  stopping = stopping_;
}

void NvmeStore::Engine::run() {
  // One entry per slot, one for the eventfd read, one for a cancel. As fio
  // does: completions are handled when this thread asks for them, not by
  // interrupting it (kernels before 6.1 lack these flags: none then).
  const unsigned entries = options_.queueDepth + 2;
  int rc = io_uring_queue_init(entries, &ring_,
                               IORING_SETUP_COOP_TASKRUN |
                                   IORING_SETUP_SINGLE_ISSUER |
                                   IORING_SETUP_DEFER_TASKRUN);
  if (rc == -EINVAL)
    rc = io_uring_queue_init(entries, &ring_, 0);
  if (!options_.ioUring && rc >= 0) {
    io_uring_queue_exit(&ring_);
    rc = -1;
  } else if (rc < 0) {
    notice_("io_uring is unavailable (" + std::string(std::strerror(-rc)) +
            "; kernel.io_uring_disabled, or a seccomp filter?): transfers run "
            "one at a time with pread and pwrite");
  }
  sync_ = rc < 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    started_ = true;
  }
  doneChanged_.notify_all();
  if (sync_)
    return serveSync();
  serve();
  io_uring_queue_exit(&ring_);
}

void NvmeStore::Engine::cancelQueued() {
  for (const auto &request : active_) {
    if (request->failure.empty())
      request->failure = file_.path() + ": " + request->describe() +
                         ": cancelled, the NVMe store was closed";
    if (request->inFlight == 0)
      finish(*request);
  }
  active_.clear();
}

void NvmeStore::Engine::serveSync() {
  bool stopping = false;
  for (;;) {
    takeIncoming(stopping);
    if (stopping)
      return cancelQueued();
    issueChunks();
    if (syncReady_.empty()) {
      uint64_t value;
      while (::read(wakeFd_, &value, sizeof(value)) < 0 && errno == EINTR) {
      }
      continue;
    }
    while (!syncReady_.empty()) {
      Chunk &chunk = *syncReady_.front();
      syncReady_.pop_front();
      char *at = chunk.buffer + chunk.transferred;
      size_t bytes = chunk.spanBytes - chunk.transferred;
      auto offset = static_cast<off_t>(chunk.spanBegin + chunk.transferred);
      ssize_t n = chunk.phase == Chunk::Phase::Write
                      ? ::pwrite(file_.fd(), at, bytes, offset)
                      : ::pread(file_.fd(), at, bytes, offset);
      completeChunk(chunk, n < 0 ? -errno : static_cast<int>(n));
    }
  }
}

void NvmeStore::Engine::serve() {
  armWake();
  bool stopping = false;
  bool cancelled = false;
  std::chrono::steady_clock::time_point closeBy;
  std::vector<std::pair<uint64_t, int>> completions;
  for (;;) {
    takeIncoming(stopping);
    if (stopping && !cancelled) {
      cancelQueued();
      cancelInFlight();
      cancelled = true;
      double seconds = options_.timeoutSeconds > 0
                           ? options_.timeoutSeconds
                           : kCloseSecondsWithoutTimeout;
      closeBy = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(seconds));
    }
    if (stopping && chunksInFlight_ == 0)
      return;
    issueChunks();

    int rc;
    if (stopping) {
      // Bounded: a device that never answers must not hang the exit. The
      // chunks still in flight then stay with the kernel, which owns the
      // ring's memory until they end.
      auto left = closeBy - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero())
        return;
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left);
      __kernel_timespec ts{static_cast<long long>(ns.count() / 1000000000),
                           static_cast<long long>(ns.count() % 1000000000)};
      io_uring_cqe *cqe = nullptr;
      rc = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
      if (rc == -ETIME)
        continue;
    } else {
      rc = io_uring_submit_and_wait(&ring_, 1);
    }
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      failEverything(file_.path() + ": the NVMe I/O thread stopped: " +
                     std::strerror(-rc));
      return;
    }

    completions.clear();
    io_uring_cqe *cqe;
    unsigned head;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      completions.emplace_back(io_uring_cqe_get_data64(cqe), cqe->res);
    }
    io_uring_cq_advance(&ring_, static_cast<unsigned>(completions.size()));
    for (auto [tag, result] : completions) {
      if (tag == kWakeTag) {
        if (!stopping)
          armWake();
      } else if (tag != kCancelTag) {
        completeChunk(*reinterpret_cast<Chunk *>(tag), result);
      }
    }
  }
}

void NvmeStore::Engine::issueChunks() {
  while (!freeChunks_.empty() && !active_.empty()) {
    std::shared_ptr<Request> request = active_.front();
    if (!request->failure.empty() || request->nextChunk >= request->fileEnd) {
      active_.pop_front();
      continue;
    }
    Chunk &chunk = *freeChunks_.back();
    freeChunks_.pop_back();
    startChunk(chunk, request);
  }
}

void NvmeStore::Engine::startChunk(Chunk &chunk,
                                   const std::shared_ptr<Request> &request) {
  const uint64_t block = options_.blockBytes, a = alignment();
  chunk.request = request;
  chunk.userBegin = request->nextChunk;
  chunk.userEnd = std::min(request->fileEnd, chunk.userBegin / block * block + block);
  request->nextChunk = chunk.userEnd;
  ++request->inFlight;
  ++chunksInFlight_;

  chunk.spanBegin = chunk.userBegin / a * a;
  uint64_t spanEnd = (chunk.userEnd + a - 1) / a * a;
  chunk.spanBytes = static_cast<size_t>(spanEnd - chunk.spanBegin);
  chunk.transferred = 0;
  char *user = chunk.userData();
  size_t userBytes = static_cast<size_t>(chunk.userEnd - chunk.userBegin);
  bool whole = chunk.spanBegin == chunk.userBegin && spanEnd == chunk.userEnd;
  bool inPlace = whole && reinterpret_cast<uintptr_t>(user) % a == 0;
  chunk.buffer = inPlace ? user : chunk.bounce;
  if (!request->write)
    chunk.phase = Chunk::Phase::Read;
  else if (inPlace)
    chunk.phase = Chunk::Phase::Write;
  else if (whole) {
    std::memcpy(chunk.bounce, user, userBytes);
    chunk.phase = Chunk::Phase::Write;
  } else {
    chunk.phase = Chunk::Phase::MergeRead;
  }
  submitChunk(chunk);
}

void NvmeStore::Engine::submitChunk(Chunk &chunk) {
  if (sync_) {
    syncReady_.push_back(&chunk);
    return;
  }
  io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
  if (!sqe) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  char *at = chunk.buffer + chunk.transferred;
  unsigned bytes = static_cast<unsigned>(chunk.spanBytes - chunk.transferred);
  uint64_t offset = chunk.spanBegin + chunk.transferred;
  if (chunk.phase == Chunk::Phase::Write)
    io_uring_prep_write(sqe, file_.fd(), at, bytes, offset);
  else
    io_uring_prep_read(sqe, file_.fd(), at, bytes, offset);
  io_uring_sqe_set_data(sqe, &chunk);
}

void NvmeStore::Engine::completeChunk(Chunk &chunk, int result) {
  bool writing = chunk.phase == Chunk::Phase::Write;
  if (result == -EINTR || result == -EAGAIN) {
    submitChunk(chunk);
    return;
  }
  if (result < 0)
    return failChunk(chunk, writing ? "cannot write" : "cannot read", -result);
  if (result == 0)
    return failChunk(chunk,
                     writing ? "the file system wrote nothing"
                             : "the file ends early (truncated while in use?)",
                     EIO);
  chunk.transferred += static_cast<size_t>(result);
  if (chunk.transferred < chunk.spanBytes) {
    // A short transfer: the rest, which O_DIRECT needs aligned too.
    if (chunk.transferred % alignment() != 0)
      return failChunk(chunk, "short transfer not on an aligned boundary",
                       EIO);
    submitChunk(chunk);
    return;
  }
  size_t userBytes = static_cast<size_t>(chunk.userEnd - chunk.userBegin);
  char *inBounce = chunk.bounce + (chunk.userBegin - chunk.spanBegin);
  if (chunk.phase == Chunk::Phase::MergeRead) {
    std::memcpy(inBounce, chunk.userData(), userBytes);
    chunk.phase = Chunk::Phase::Write;
    chunk.transferred = 0;
    submitChunk(chunk);
    return;
  }
  if (!writing && chunk.bounced())
    std::memcpy(chunk.userData(), inBounce, userBytes);
  if (chunk.bounced()) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bouncedBytes += userBytes;
  }
  releaseChunk(chunk);
}

void NvmeStore::Engine::failChunk(Chunk &chunk, const std::string &what,
                                  int error) {
  std::shared_ptr<Request> request = chunk.request;
  std::string message = file_.path() + ": " + what + " (" +
                        request->describe() + ", file bytes [" +
                        std::to_string(chunk.spanBegin) + ", " +
                        std::to_string(chunk.spanBegin + chunk.spanBytes) +
                        ")): " + std::strerror(error);
  // The first failure is the one reported; the request's other chunks in
  // flight end first, so that its buffer is no longer in use when wait()
  // returns.
  if (request->failure.empty())
    request->failure = message;
  releaseChunk(chunk);
}

void NvmeStore::Engine::releaseChunk(Chunk &chunk) {
  std::shared_ptr<Request> request = std::move(chunk.request);
  --request->inFlight;
  --chunksInFlight_;
  freeChunks_.push_back(&chunk);
  if (request->inFlight == 0 && (!request->failure.empty() ||
                                 request->nextChunk >= request->fileEnd))
    finish(*request);
}

void NvmeStore::Engine::finish(Request &request) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request.done = true;
    request.error = request.failure;
    if (request.failure.empty()) {
      if (request.write) {
        ++stats_.writes;
        stats_.bytesWritten += request.bytes;
      } else {
        ++stats_.reads;
        stats_.bytesRead += request.bytes;
      }
    }
  }
  doneChanged_.notify_all();
}

void NvmeStore::Engine::cancelInFlight() {
  if (chunksInFlight_ == 0)
    return;
  io_uring_sqe *sqe = io_uring_get_sqe(&ring_);
  if (!sqe) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
  }
  // Every request on the file; the device may finish them anyway.
  io_uring_prep_cancel_fd(sqe, file_.fd(), IORING_ASYNC_CANCEL_ALL);
  io_uring_sqe_set_data64(sqe, kCancelTag);
}

void NvmeStore::Engine::failEverything(const std::string &message) {
  std::lock_guard<std::mutex> lock(mutex_);
  broken_ = message;
  for (auto &entry : requests_)
    if (!entry.second->done) {
      entry.second->done = true;
      entry.second->error = message;
    }
  doneChanged_.notify_all();
}

} // namespace dsc::rt
