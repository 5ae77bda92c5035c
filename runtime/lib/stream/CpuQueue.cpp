//===- CpuQueue.cpp - a CpuStream's queue, counters and failure -----------===//

#include "CpuQueue.h"

#include "RunTask.h"

#include "dsc/runtime/Error.h"

#include <exception>

namespace dsc::rt::detail {

void CpuQueue::checkAccepting() const {
  if (failedAt != 0)
    throw Error("stream '" + name +
                "' refuses new work after a failure: " + failure);
}

std::optional<std::string>
CpuQueue::failureAt(std::uint64_t position) const {
  if (failedAt != 0 && failedAt <= position)
    return "stream '" + name + "': " + failure;
  return std::nullopt;
}

bool CpuQueue::query(std::uint64_t position) {
  std::lock_guard<std::mutex> lock(mutex);
  if (std::optional<std::string> failed = failureAt(position))
    throw Error(*failed);
  return completed >= position;
}

std::optional<std::string> CpuQueue::waitFor(std::uint64_t position) {
  std::unique_lock<std::mutex> lock(mutex);
  if (completed < position && executor == std::this_thread::get_id())
    throw Error("stream '" + name +
                "': one of its own tasks waits for work queued behind it "
                "(synchronize() of the stream or of a later event), which "
                "would deadlock");
  progressed.wait(lock, [&] { return completed >= position; });
  return failureAt(position);
}

void CpuQueue::submit(Item item, bool runHere) {
  if (!runHere) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      checkAccepting();
      item.sequence = ++enqueued;
      item.number = item.task ? ++tasks : 0;
      items.push_back(std::move(item));
    }
    workAvailable.notify_one();
    return;
  }

  // Inline: run it here and now, after any item another thread is running.
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (executor == std::this_thread::get_id())
      throw Error("stream '" + name +
                  "': a task of an Inline stream cannot enqueue work on "
                  "that same stream");
  }
  std::lock_guard<std::mutex> running(inlineRun);
  std::unique_lock<std::mutex> lock(mutex);
  checkAccepting();
  item.sequence = ++enqueued;
  item.number = item.task ? ++tasks : 0;
  executor = std::this_thread::get_id();
  run(lock, std::move(item));
  executor = std::thread::id();
}

void CpuQueue::serve() {
  std::unique_lock<std::mutex> lock(mutex);
  executor = std::this_thread::get_id();
  for (;;) {
    workAvailable.wait(lock, [&] { return stopping || !items.empty(); });
    if (items.empty())
      break; // stopping, and drained
    Item item = std::move(items.front());
    items.pop_front();
    run(lock, std::move(item));
  }
  executor = std::thread::id();
}

void CpuQueue::run(std::unique_lock<std::mutex> &lock, Item item) {
  lock.unlock();
  std::optional<std::string> failed = execute(item);
  std::uint64_t sequence = item.sequence;
  item = {}; // the task's captures are gone before it counts as finished
  lock.lock();
  finish(lock, sequence, std::move(failed));
}

std::optional<std::string> CpuQueue::execute(Item &item) {
  if (item.task)
    return runTask(item.task, item.number, item.label);
  try {
    if (std::optional<std::string> failed = item.source->waitFor(item.position))
      return "an event it waited for failed: " + *failed;
    return std::nullopt;
  } catch (const std::exception &e) { // waitFor's deadlock Error
    return "a wait for stream '" + item.source->name + "' failed: " + e.what();
  }
}

void CpuQueue::finish(std::unique_lock<std::mutex> &lock,
                      std::uint64_t sequence,
                      std::optional<std::string> failed) {
  if (failed) {
    failedAt = sequence; // refuses new work from here on
    failure = std::move(*failed);
    std::deque<Item> dropped;
    dropped.swap(items);
    lock.unlock();
    dropped.clear(); // the tasks' captures, destroyed without the lock
    lock.lock();
    completed = enqueued;
  } else {
    completed = sequence;
  }
  progressed.notify_all();
}

} // namespace dsc::rt::detail
