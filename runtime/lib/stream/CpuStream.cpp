//===- CpuStream.cpp - the CPU backend of streams and events --------------===//
//
// The queue, its worker and its events' waits are in CpuQueue.cpp.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/Stream.h"

#include "CpuQueue.h"

#include "dsc/runtime/Error.h"

namespace dsc::rt {

using detail::CpuQueue;

//===----------------------------------------------------------------------===//
// CpuEvent
//===----------------------------------------------------------------------===//

CpuEvent::CpuEvent() = default;

CpuEvent::~CpuEvent() = default;

CpuEvent::Point CpuEvent::point() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return point_;
}

void CpuEvent::setPoint(Point point) {
  std::lock_guard<std::mutex> lock(mutex_);
  point_ = std::move(point);
}

bool CpuEvent::query() {
  Point recorded = point();
  return !recorded.queue || recorded.queue->query(recorded.position);
}

void CpuEvent::synchronize() {
  Point recorded = point();
  if (!recorded.queue)
    return;
  if (std::optional<std::string> failure =
          recorded.queue->waitFor(recorded.position))
    throw Error(*failure);
}

//===----------------------------------------------------------------------===//
// CpuStream
//===----------------------------------------------------------------------===//

CpuStream::CpuStream(std::string name, Mode mode)
    : Stream(name), mode_(mode),
      queue_(std::make_shared<CpuQueue>(std::move(name))) {
  if (mode_ == Mode::Threaded)
    worker_ = std::thread(&CpuQueue::serve, queue_.get());
}

CpuStream::~CpuStream() {
  if (!worker_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->stopping = true;
  }
  queue_->workAvailable.notify_one();
  worker_.join();
}

void CpuStream::enqueueTask(Task task, std::string label) {
  CpuQueue::Item item;
  item.task = std::move(task);
  item.label = std::move(label);
  queue_->submit(std::move(item), mode_ == Mode::Inline);
}

void CpuStream::record(Event &event) {
  auto *cpuEvent = dynamic_cast<CpuEvent *>(&event);
  if (!cpuEvent)
    throwForeignEvent(event, "record");
  std::uint64_t position = 0;
  {
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->checkAccepting();
    position = queue_->enqueued;
  }
  cpuEvent->setPoint({queue_, position});
}

void CpuStream::wait(const Event &event) {
  const auto *cpuEvent = dynamic_cast<const CpuEvent *>(&event);
  if (!cpuEvent)
    throwForeignEvent(event, "wait for");
  CpuEvent::Point recorded = cpuEvent->point();
  if (!recorded.queue || recorded.queue == queue_) {
    // Never recorded, or recorded here: already in order.
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->checkAccepting();
    return;
  }
  CpuQueue::Item item;
  item.source = std::move(recorded.queue);
  item.position = recorded.position;
  queue_->submit(std::move(item), mode_ == Mode::Inline);
}

void CpuStream::synchronize() {
  std::unique_lock<std::mutex> lock(queue_->mutex);
  std::uint64_t target = queue_->enqueued;
  if (queue_->completed < target &&
      queue_->executor == std::this_thread::get_id())
    throw Error("stream '" + name() +
                "': synchronize() called from one of its own tasks, which "
                "would deadlock");
  queue_->progressed.wait(lock,
                          [&] { return queue_->completed >= target; });
  if (queue_->failedAt != 0)
    throw Error("stream '" + name() + "': " + queue_->failure);
}

bool CpuStream::query() {
  std::lock_guard<std::mutex> lock(queue_->mutex);
  if (queue_->failedAt != 0)
    throw Error("stream '" + name() + "': " + queue_->failure);
  return queue_->completed >= queue_->enqueued;
}

std::unique_ptr<Event> CpuStream::createEvent() {
  return std::make_unique<CpuEvent>();
}

} // namespace dsc::rt
