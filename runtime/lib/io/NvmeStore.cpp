//===- NvmeStore.cpp - the NVMe tier: states, requests, waits -------------===//
//
// The caller's side of NvmeStore: the state registry, submission (range and
// overlap checks) and waiting with a timeout. The transfers themselves run
// on the I/O thread (NvmeIoThread.cpp).
//
//===----------------------------------------------------------------------===//

#include "NvmeEngine.h"

#include "dsc/runtime/Error.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace dsc::rt {

using detail::NvmeRequest;

namespace {

uint64_t alignDown(uint64_t value, uint64_t alignment) {
  return value / alignment * alignment;
}
uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return alignDown(value + alignment - 1, alignment);
}

bool isPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

void checkOptions(const NvmeOptions &options) {
  check(options.rank >= 0, "NVMe store: rank " +
                               std::to_string(options.rank) + " is negative");
  check(options.queueDepth >= 1 && options.queueDepth <= 1024,
        "NVMe store: queue depth " + std::to_string(options.queueDepth) +
            " is outside [1, 1024]");
  check(isPowerOfTwo(options.blockBytes) &&
            options.blockBytes >= kDirectAlignment &&
            options.blockBytes <= (size_t(1) << 30),
        "NVMe store: block size " + std::to_string(options.blockBytes) +
            " is not a power of two in [" + std::to_string(kDirectAlignment) +
            ", 1 GiB]");
  check(std::isfinite(options.timeoutSeconds) && options.timeoutSeconds >= 0,
        "NVMe store: timeout " + std::to_string(options.timeoutSeconds) +
            " s is not a non-negative number");
}

detail::Notice noticeOf(const NvmeOptions &options) {
  if (options.notice)
    return options.notice;
  return [](const std::string &text) {
    std::fprintf(stderr, "dsc-run: nvme: %s\n", text.c_str());
    std::fflush(stderr);
  };
}

} // namespace

std::string NvmeRequest::describe() const {
  return std::string(write ? "write" : "read") + " of state " +
         std::to_string(state) + " bytes [" + std::to_string(offset) + ", " +
         std::to_string(offset + bytes) + ")";
}

NvmeStore::Engine::Engine(NvmeOptions options)
    : options_((checkOptions(options), std::move(options))),
      notice_(noticeOf(options_)),
      file_(options_.path, options_.rank, options_.mode, notice_) {
  try {
    wakeFd_ = ::eventfd(0, EFD_CLOEXEC);
    if (wakeFd_ < 0)
      detail::throwSystemError(file_.path(), "cannot create an eventfd", errno);
    bounce_ = detail::AlignedBuffer(options_.queueDepth * options_.blockBytes);
    if (!bounce_.pinned() && file_.direct())
      notice_("cannot pin " + std::to_string(bounce_.size()) +
              " bytes of bounce buffers (RLIMIT_MEMLOCK, ulimit -l); they "
              "stay pageable");
    chunks_.resize(options_.queueDepth);
    for (size_t i = 0; i < chunks_.size(); ++i) {
      chunks_[i].bounce = bounce_.data() + i * options_.blockBytes;
      freeChunks_.push_back(&chunks_[i]);
    }
    // The thread sets up the ring itself: a ring with a single issuer must
    // be created by the thread that submits.
    thread_ = std::thread([this] { run(); });
    std::unique_lock<std::mutex> lock(mutex_);
    doneChanged_.wait(lock, [&] { return started_; });
  } catch (...) {
    if (wakeFd_ >= 0)
      ::close(wakeFd_);
    throw;
  }
}

NvmeStore::Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
  ::close(wakeFd_);
}

void NvmeStore::Engine::wake() {
  uint64_t one = 1;
  // Cannot fail but for a counter at its maximum, which a pending wake-up
  // already stands for.
  (void)!::write(wakeFd_, &one, sizeof(one));
}

void NvmeStore::Engine::addState(StateId id, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  check(!states_.count(id), file_.path() + ": NVMe state " +
                                std::to_string(id) + " was already added");
  // A state of a block or more starts at a block boundary, so that its
  // chunks are whole blocks; a smaller one (a bias's or a norm's partition)
  // at the next page, sharing a block with its neighbours: the file is
  // then not mostly padding when there are many small states.
  uint64_t start = alignUp(fileBytes_, bytes >= options_.blockBytes
                                           ? options_.blockBytes
                                           : kDirectAlignment);
  uint64_t reserved = alignUp(bytes, kDirectAlignment);
  check(reserved >= bytes && start >= fileBytes_ && start + reserved >= start,
        file_.path() + ": NVMe state " + std::to_string(id) + " of " +
            std::to_string(bytes) + " bytes overflows the file's size");
  file_.reserve(start, reserved);
  states_[id] = {start, bytes};
  fileBytes_ = start + reserved;
}

uint64_t NvmeStore::Engine::stateBytes(StateId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = states_.find(id);
  check(it != states_.end(),
        file_.path() + ": no NVMe state " + std::to_string(id));
  return it->second.bytes;
}

NvmeHandle NvmeStore::Engine::submit(bool write, StateId id, uint64_t offset,
                                     char *buffer, size_t bytes) {
  auto request = std::make_shared<Request>();
  request->write = write;
  request->state = id;
  request->offset = offset;
  request->bytes = bytes;
  request->user = buffer;
  std::unique_lock<std::mutex> lock(mutex_);
  check(broken_.empty(), broken_);
  auto it = states_.find(id);
  check(it != states_.end(), file_.path() + ": " + request->describe() +
                                 ": no NVMe state " + std::to_string(id));
  const Extent &extent = it->second;
  check(offset <= extent.bytes && bytes <= extent.bytes - offset,
        file_.path() + ": " + request->describe() +
            ": past the state's end (" + std::to_string(extent.bytes) +
            " bytes)");
  check(buffer || bytes == 0,
        file_.path() + ": " + request->describe() + ": null buffer");
  request->fileBegin = extent.begin + offset;
  request->fileEnd = request->fileBegin + bytes;
  request->nextChunk = request->fileBegin;
  // The blocks a transfer touches: with O_DIRECT, whole aligned blocks.
  uint64_t a = alignment();
  uint64_t begin = alignDown(request->fileBegin, a),
           end = alignUp(request->fileEnd, a);
  for (const auto &entry : requests_) {
    const Request &other = *entry.second;
    if (other.bytes == 0 || bytes == 0 || (!write && !other.write))
      continue;
    if (begin < alignUp(other.fileEnd, a) &&
        alignDown(other.fileBegin, a) < end)
      throw Error(file_.path() + ": " + request->describe() + " overlaps the " +
                  other.describe() +
                  " not yet waited for (same blocks); wait for it first");
  }
  request->id = nextId_++;
  requests_[request->id] = request;
  if (bytes == 0) {
    request->done = true;
    return {request->id};
  }
  incoming_.push_back(request);
  lock.unlock();
  wake();
  return {request->id};
}

void NvmeStore::Engine::wait(NvmeHandle handle) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = requests_.find(handle.id);
  check(it != requests_.end(),
        file_.path() + ": NVMe handle " + std::to_string(handle.id) +
            " is unknown or was already waited for");
  std::shared_ptr<Request> request = it->second;
  auto done = [&] { return request->done; };
  if (options_.timeoutSeconds > 0) {
    auto limit = std::chrono::duration<double>(options_.timeoutSeconds);
    if (!doneChanged_.wait_for(lock, limit, done)) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", options_.timeoutSeconds);
      throw Error(file_.path() + ": " + request->describe() +
                  " is not complete after " + seconds +
                  " s (the NVMe timeout); is the device answering?");
    }
  } else {
    doneChanged_.wait(lock, done);
  }
  requests_.erase(handle.id);
  if (!request->error.empty())
    throw Error(request->error);
}

bool NvmeStore::Engine::ready(NvmeHandle handle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = requests_.find(handle.id);
  return it == requests_.end() || it->second->done;
}

NvmeStats NvmeStore::Engine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

NvmeStore::NvmeStore(NvmeOptions options)
    : engine_(std::make_unique<Engine>(std::move(options))) {}
NvmeStore::~NvmeStore() = default;

void NvmeStore::addState(StateId id, uint64_t bytes) {
  engine_->addState(id, bytes);
}
uint64_t NvmeStore::stateBytes(StateId id) const {
  return engine_->stateBytes(id);
}
NvmeHandle NvmeStore::read(StateId id, uint64_t offset, void *dst,
                           size_t bytes) {
  return engine_->submit(false, id, offset, static_cast<char *>(dst), bytes);
}
NvmeHandle NvmeStore::write(StateId id, uint64_t offset, const void *src,
                            size_t bytes) {
  // Written only by reads; a write only reads from it.
  return engine_->submit(true, id, offset,
                         const_cast<char *>(static_cast<const char *>(src)),
                         bytes);
}
void NvmeStore::wait(NvmeHandle handle) { engine_->wait(handle); }
bool NvmeStore::ready(NvmeHandle handle) const {
  return engine_->ready(handle);
}
bool NvmeStore::direct() const { return engine_->direct(); }
bool NvmeStore::ioUring() const { return engine_->ioUring(); }
const std::string &NvmeStore::file() const { return engine_->file(); }
NvmeStats NvmeStore::stats() const { return engine_->stats(); }

} // namespace dsc::rt
