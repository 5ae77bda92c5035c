//===- CudaStream.cpp - the CUDA backend of streams and events ------------===//
//
// Compiled into dsc_runtime_cuda (cuda/Cuda.cmake). Host tasks run through
// cudaLaunchHostFunc; each carries a reference to its stream's HostTasks,
// where the first failure is kept, so that the stream, its events and the
// tasks still in flight agree on it, whichever is destroyed first.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/CudaStream.h"

#include "RunTask.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"

#include <limits>

namespace dsc::rt::cuda {

namespace detail {

/// A CudaStream's host tasks: how many were enqueued, and the first that
/// failed. Every field is guarded by `mutex`.
struct HostTasks {
  explicit HostTasks(std::string streamName)
      : name(std::move(streamName)) {}

  /// "stream 'S': <failure>" when a task numbered `position` or less
  /// failed.
  std::optional<std::string> failureAt(std::uint64_t position) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failedAt != 0 && failedAt <= position)
      return "stream '" + name + "': " + failure;
    return std::nullopt;
  }

  /// Throws the failure, if any.
  void checkSucceeded() {
    if (std::optional<std::string> failed =
            failureAt(std::numeric_limits<std::uint64_t>::max()))
      throw Error(*failed);
  }

  /// The number of tasks enqueued; throws Error after a failure, as the
  /// CPU backend does.
  std::uint64_t checkAccepting() {
    std::lock_guard<std::mutex> lock(mutex);
    if (failedAt != 0)
      throw Error("stream '" + name +
                  "' refuses new work after a failure: " + failure);
    return enqueued;
  }

  const std::string name;
  std::mutex mutex;
  std::uint64_t enqueued = 0;
  std::uint64_t failedAt = 0; // 0: none has failed
  std::string failure;        // "task #3 (label) failed: what"
};

} // namespace detail

namespace {

using detail::HostTasks;

/// What cudaLaunchHostFunc's callback gets; it deletes it.
struct HostTask {
  std::shared_ptr<HostTasks> tasks;
  Stream::Task task;
  std::string label;
  std::uint64_t number = 0;
};

void CUDART_CB runHostTask(void *data) {
  std::unique_ptr<HostTask> hostTask(static_cast<HostTask *>(data));
  HostTasks &tasks = *hostTask->tasks;
  {
    std::lock_guard<std::mutex> lock(tasks.mutex);
    if (tasks.failedAt != 0)
      return; // skipped: an earlier task failed
  }
  std::optional<std::string> failure = dsc::rt::detail::runTask(
      hostTask->task, hostTask->number, hostTask->label);
  if (!failure)
    return;
  std::lock_guard<std::mutex> lock(tasks.mutex);
  if (tasks.failedAt == 0) {
    tasks.failedAt = hostTask->number;
    tasks.failure = std::move(*failure);
  }
}

/// `device`, or for -1 this thread's current device. Throws Error without
/// a GPU (in Device::requireDevice's words, naming `who`) or when the
/// device does not exist.
int chooseDevice(int device, const std::string &who) {
  int count = Device::requireDevice(who);
  if (device < 0)
    return Device::current(who);
  check(device < count, who + ": device " + std::to_string(device) +
                            " does not exist (" + std::to_string(count) +
                            " visible)");
  return device;
}

/// Calls `create` (which returns a cudaError_t) with `device` current,
/// makes the previous device current again, and checkCuda()s the status.
template <typename Create>
void createOnDevice(int device, const std::string &what, Create create) {
  int previous = -1;
  checkCuda(cudaGetDevice(&previous), what + ": cudaGetDevice");
  if (previous != device)
    checkCuda(cudaSetDevice(device),
              what + ": cudaSetDevice(" + std::to_string(device) + ")");
  cudaError_t status = create();
  if (previous != device)
    (void)cudaSetDevice(previous);
  checkCuda(status, what);
}

} // namespace

//===----------------------------------------------------------------------===//
// CudaEvent
//===----------------------------------------------------------------------===//

CudaEvent::CudaEvent(int device) : device_(chooseDevice(device, "CUDA event")) {
  createOnDevice(device_, "CUDA event: cudaEventCreateWithFlags", [&] {
    return cudaEventCreateWithFlags(&event_, cudaEventDisableTiming);
  });
}

CudaEvent::~CudaEvent() {
  if (event_)
    (void)cudaEventDestroy(event_);
}

void CudaEvent::checkHostTasks() const {
  std::shared_ptr<HostTasks> tasks;
  std::uint64_t before = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks = hostTasks_;
    before = tasksBefore_;
  }
  if (!tasks)
    return;
  if (std::optional<std::string> failed = tasks->failureAt(before))
    throw Error(*failed);
}

bool CudaEvent::query() {
  cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady)
    return false;
  checkCuda(status, "CUDA event: cudaEventQuery");
  checkHostTasks();
  return true;
}

void CudaEvent::synchronize() {
  checkCuda(cudaEventSynchronize(event_), "CUDA event: cudaEventSynchronize");
  checkHostTasks();
}

//===----------------------------------------------------------------------===//
// CudaStream
//===----------------------------------------------------------------------===//

CudaStream::CudaStream(std::string name, int device)
    : Stream(name), device_(chooseDevice(device, "CUDA stream '" + name + "'")),
      hostTasks_(std::make_shared<HostTasks>(name)) {
  createOnDevice(device_,
                 "stream '" + this->name() + "': cudaStreamCreateWithFlags",
                 [&] {
                   return cudaStreamCreateWithFlags(&stream_,
                                                    cudaStreamNonBlocking);
                 });
}

CudaStream::~CudaStream() {
  if (!stream_)
    return;
  (void)cudaStreamSynchronize(stream_); // drains, running the host tasks
  (void)cudaStreamDestroy(stream_);
}

void CudaStream::enqueueTask(Task task, std::string label) {
  std::lock_guard<std::mutex> submit(submit_);
  auto hostTask = std::make_unique<HostTask>();
  hostTask->number = hostTasks_->checkAccepting() + 1;
  hostTask->tasks = hostTasks_;
  hostTask->task = std::move(task);
  hostTask->label = std::move(label);
  checkCuda(cudaLaunchHostFunc(stream_, runHostTask, hostTask.get()),
            "stream '" + name() + "': cudaLaunchHostFunc");
  std::uint64_t number = hostTask->number;
  hostTask.release(); // runHostTask deletes it
  std::lock_guard<std::mutex> lock(hostTasks_->mutex);
  hostTasks_->enqueued = number;
}

void CudaStream::record(Event &event) {
  auto *cudaEvent = dynamic_cast<CudaEvent *>(&event);
  if (!cudaEvent)
    throwForeignEvent(event, "record");
  std::lock_guard<std::mutex> submit(submit_);
  std::uint64_t tasks = hostTasks_->checkAccepting();
  checkCuda(cudaEventRecord(cudaEvent->event_, stream_),
            "stream '" + name() + "': cudaEventRecord");
  std::lock_guard<std::mutex> lock(cudaEvent->mutex_);
  cudaEvent->hostTasks_ = hostTasks_;
  cudaEvent->tasksBefore_ = tasks;
}

void CudaStream::wait(const Event &event) {
  const auto *cudaEvent = dynamic_cast<const CudaEvent *>(&event);
  if (!cudaEvent)
    throwForeignEvent(event, "wait for");
  std::lock_guard<std::mutex> submit(submit_);
  hostTasks_->checkAccepting();
  checkCuda(cudaStreamWaitEvent(stream_, cudaEvent->event_, 0),
            "stream '" + name() + "': cudaStreamWaitEvent");
}

void CudaStream::synchronize() {
  checkCuda(cudaStreamSynchronize(stream_),
            "stream '" + name() + "': cudaStreamSynchronize");
  hostTasks_->checkSucceeded();
}

bool CudaStream::query() {
  cudaError_t status = cudaStreamQuery(stream_);
  hostTasks_->checkSucceeded(); // complete: every host task has run
  if (status == cudaErrorNotReady)
    return false;
  checkCuda(status, "stream '" + name() + "': cudaStreamQuery");
  return true;
}

std::unique_ptr<Event> CudaStream::createEvent() {
  return std::make_unique<CudaEvent>(device_);
}

} // namespace dsc::rt::cuda
