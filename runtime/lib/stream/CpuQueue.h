//===- CpuQueue.h - the shared state of a CpuStream -------------*- C++ -*-===//
//
// A CpuStream's queue, counters and failure, shared with the events
// recorded on it (which may outlive the stream) and with the streams that
// wait for them. Every field is guarded by `mutex`.
//
// Every item enqueued (a task, or a wait for another queue's event) gets the
// next sequence number, from 1. `completed` is the number of items that
// have run or were dropped; as items run in order, item n has finished
// exactly when completed >= n. An event recorded when `enqueued` was P
// completes when completed >= P, and has failed when the queue failed at an
// item numbered P or less.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_STREAM_CPUQUEUE_H
#define DSC_RUNTIME_LIB_STREAM_CPUQUEUE_H

#include "dsc/runtime/Stream.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace dsc::rt::detail {

struct CpuQueue {
  /// A task, or (when `task` is empty) a wait for `source` to complete
  /// `position`.
  struct Item {
    std::uint64_t sequence = 0;
    std::uint64_t number = 0; // tasks: 1 for the first task, 2, ...
    Stream::Task task;
    std::string label;
    std::shared_ptr<CpuQueue> source;
    std::uint64_t position = 0;
  };

  explicit CpuQueue(std::string streamName) : name(std::move(streamName)) {}

  const std::string name;

  std::mutex mutex;
  std::condition_variable workAvailable; // the worker waits here
  std::condition_variable progressed;    // completed or failedAt changed
  std::deque<Item> items;                // Threaded mode only
  std::uint64_t enqueued = 0; // items (tasks and waits)
  std::uint64_t tasks = 0;    // tasks among them
  std::uint64_t completed = 0;
  std::uint64_t failedAt = 0; // 0: has not failed
  std::string failure;        // "task #3 (label) failed: what"
  bool stopping = false;      // the stream is being destroyed
  /// The thread running this queue's items (the worker, or the caller of an
  /// Inline stream while it runs a task); blocking on the queue from it
  /// would deadlock.
  std::thread::id executor;

  /// Held by an Inline stream while it runs an item, so that items run one
  /// at a time and in order even when several threads enqueue. Taken
  /// before `mutex`.
  std::mutex inlineRun;

  // Call these two with `mutex` held.

  /// Throws Error when this queue has failed: "stream 'S' refuses new work
  /// after a failure: <failure>".
  void checkAccepting() const;

  /// The failure of an event at `position`, if any: "stream 'S': <failure>".
  std::optional<std::string> failureAt(std::uint64_t position) const;

  // The rest take `mutex` themselves where they need it.

  /// Whether `position` has completed; throws Error when it failed.
  bool query(std::uint64_t position);

  /// Blocks until `position` has completed. Returns the failure, if any,
  /// instead of throwing it; throws Error when called from the thread that
  /// would have to complete it.
  std::optional<std::string> waitFor(std::uint64_t position);

  /// Numbers `item` and queues it for the worker (Threaded), or runs it on
  /// this thread now (`runHere`: Inline). Throws Error when the queue has
  /// failed.
  void submit(Item item, bool runHere);

  /// The worker of a Threaded stream: runs the items in order until
  /// `stopping` is set and the queue is empty.
  void serve();

  /// Runs `item` on this thread (its task, or its wait) with `lock`
  /// released, then finish()es it; `lock` is held again on return.
  void run(std::unique_lock<std::mutex> &lock, Item item);

  /// Runs `item`; its failure, if any. Does not take `mutex`.
  std::optional<std::string> execute(Item &item);

  /// With `lock` (on `mutex`) held: marks item `sequence` finished, or the
  /// queue failed at it, and wakes the waiters. A failure drops the queued
  /// items, destroying them with the lock released, before they count as
  /// finished.
  void finish(std::unique_lock<std::mutex> &lock, std::uint64_t sequence,
              std::optional<std::string> failure);
};

} // namespace dsc::rt::detail

#endif // DSC_RUNTIME_LIB_STREAM_CPUQUEUE_H
