//===- NvmeEngine.h - NvmeStore's requests and its I/O thread ---*- C++ -*-===//
//
// NvmeStore::Engine holds the state registry and the requests callers
// submitted (NvmeStore.cpp, under one mutex), and runs the I/O thread that
// owns the io_uring (NvmeIoThread.cpp). A request is cut into chunks: the
// part of its file range inside one block, so at most blockBytes and never
// across a block boundary. Each chunk is a slot with its own bounce buffer;
// `queueDepth` slots bound the transfers in flight. Callers wake the thread
// through an eventfd that the ring itself reads, so the thread sleeps in
// one place (io_uring_submit_and_wait) for both. Without io_uring the
// thread transfers each chunk with pread or pwrite and sleeps in a read of
// the eventfd. Internal to lib/io.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_IO_NVMEENGINE_H
#define DSC_RUNTIME_LIB_IO_NVMEENGINE_H

#include "NvmeFile.h"

#include "dsc/runtime/NvmeStore.h"

#include <liburing.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace dsc::rt {

namespace detail {

/// One read or write a caller submitted.
struct NvmeRequest {
  uint64_t id = 0;
  bool write = false;
  uint32_t state = 0;
  uint64_t offset = 0; // in the state
  size_t bytes = 0;
  char *user = nullptr;
  uint64_t fileBegin = 0, fileEnd = 0; // the range in the file
  // The I/O thread's: where the next chunk starts, the chunks in flight,
  // why it gave up (a chunk failed, or the store closes; empty: it did not).
  uint64_t nextChunk = 0;
  unsigned inFlight = 0;
  std::string failure;
  // Under the engine's mutex: set once, when no chunk is left in flight.
  bool done = false;
  std::string error; // empty: it worked
  /// "read of state 3 bytes [0, 4096)".
  std::string describe() const;
};

/// A slot for one transfer in flight: the part of a request in one block.
struct NvmeChunk {
  std::shared_ptr<NvmeRequest> request;
  /// MergeRead reads the aligned span around a write that does not cover
  /// whole aligned blocks, so that the write keeps the bytes beside it.
  enum class Phase { Read, Write, MergeRead } phase = Phase::Read;
  uint64_t spanBegin = 0; // the file range transferred: aligned for O_DIRECT
  size_t spanBytes = 0;
  uint64_t userBegin = 0, userEnd = 0; // the file range the caller's bytes cover
  char *buffer = nullptr;  // the span's memory: the caller's, or `bounce`
  char *bounce = nullptr;  // this slot's bounce buffer (blockBytes)
  size_t transferred = 0;  // of the span so far (short transfers)
  char *userData() const {
    return request->user + (userBegin - request->fileBegin);
  }
  bool bounced() const { return buffer == bounce; }
};

} // namespace detail

class NvmeStore::Engine {
public:
  explicit Engine(NvmeOptions options);
  ~Engine();

  void addState(StateId id, uint64_t bytes);
  uint64_t stateBytes(StateId id) const;
  NvmeHandle submit(bool write, StateId id, uint64_t offset, char *buffer,
                    size_t bytes);
  void wait(NvmeHandle handle);
  bool ready(NvmeHandle handle) const;
  bool direct() const { return file_.direct(); }
  /// After construction (the I/O thread set it before the constructor
  /// returned).
  bool ioUring() const { return !sync_; }
  const std::string &file() const { return file_.path(); }
  NvmeStats stats() const;

private:
  struct Extent {
    uint64_t begin = 0, bytes = 0;
  };
  using Request = detail::NvmeRequest;
  using Chunk = detail::NvmeChunk;

  // The I/O thread (NvmeIoThread.cpp).
  void run();
  void serve();
  void serveSync();
  void cancelQueued();
  void takeIncoming(bool &stopping);
  void issueChunks();
  void startChunk(Chunk &chunk, const std::shared_ptr<Request> &request);
  void submitChunk(Chunk &chunk);
  void completeChunk(Chunk &chunk, int result);
  void failChunk(Chunk &chunk, const std::string &what, int error);
  /// Frees the slot; finishes its request when that was its last chunk.
  void releaseChunk(Chunk &chunk);
  void finish(Request &request);
  void armWake();
  void cancelInFlight();
  void failEverything(const std::string &message);
  /// Wakes the I/O thread (callers, the destructor).
  void wake();

  size_t alignment() const { return file_.direct() ? kDirectAlignment : 1; }

  NvmeOptions options_;
  detail::Notice notice_;
  detail::NvmeFile file_;
  io_uring ring_{};
  int wakeFd_ = -1;
  uint64_t wakeValue_ = 0;

  // The I/O thread's own.
  std::vector<Chunk> chunks_;
  std::vector<Chunk *> freeChunks_;
  detail::AlignedBuffer bounce_; // queueDepth x blockBytes, one per slot
  std::deque<std::shared_ptr<Request>> active_; // chunks left to issue
  unsigned chunksInFlight_ = 0;
  bool sync_ = false; // pread/pwrite instead of the ring
  std::deque<Chunk *> syncReady_; // sync_: chunks to transfer next

  // Shared with callers, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable doneChanged_;
  std::map<StateId, Extent> states_;
  uint64_t fileBytes_ = 0;
  std::unordered_map<uint64_t, std::shared_ptr<Request>> requests_; // not waited for
  std::deque<std::shared_ptr<Request>> incoming_;
  uint64_t nextId_ = 1;
  bool started_ = false; // the I/O thread has set up its ring, or not
  bool stopping_ = false;
  std::string broken_; // the I/O thread's fatal error; refuses new requests
  NvmeStats stats_;

  std::thread thread_; // last: started once everything above exists
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_LIB_IO_NVMEENGINE_H
