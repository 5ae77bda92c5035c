//===- CudaStream.h - the CUDA backend of streams and events ----*- C++ -*-===//
//
// Stream.h's interface over cudaStream_t and cudaEvent_t, in
// dsc_runtime_cuda (docs/streams.md, docs/cuda.md):
//
//   CudaStream   cudaStreamCreateWithFlags(cudaStreamNonBlocking): does not
//                synchronize with the legacy default stream. Kernels,
//                cuBLASLt and NCCL calls go on handle().
//   record       cudaEventRecord        wait   cudaStreamWaitEvent
//   synchronize  cudaStreamSynchronize  query  cudaStreamQuery
//   CudaEvent    cudaEventCreateWithFlags(cudaEventDisableTiming);
//                query/synchronize are cudaEventQuery/cudaEventSynchronize.
//
// Without a GPU, creating either throws Device::requireDevice's Error
// ("CUDA stream 'compute' needs a GPU, but cudaGetDeviceCount found none on
// host ..."). A CUDA call that fails throws Error naming the stream and the
// call (checkCuda).
//
// Host tasks: enqueue() runs a task through cudaLaunchHostFunc, in stream
// order, on a thread of the CUDA driver. Restrictions (CUDA's): the task
// must make no CUDA API call, and neither may the destructors of what it
// captures (no freeing of device memory, no event or stream calls); it
// should be short, because it holds up its stream and, as the driver may
// run all host functions of the process on one thread, other streams' host
// tasks; and it must not block on work of another stream.
//
// Failure, where CUDA differs from CPU: a task that throws is captured as
// on CPU (synchronize(), query() and the events recorded after it throw;
// enqueue/record/wait refuse new work), and the host tasks behind it that
// have not started are skipped. But the device work already enqueued
// behind it (kernels, copies, collectives) still runs: CUDA cannot take it
// back. The failure is seen once the task has run, asynchronously. A
// stream that waits for an event of a failed stream does not fail in turn
// (its device work cannot be held back either); its events and
// synchronize() report only its own failures. A CUDA error (a fault in a
// kernel) is CUDA's own: sticky, reported by every call afterwards.
//
// Destruction drains: cudaStreamSynchronize, then cudaStreamDestroy; CUDA
// errors at that point are dropped (destructors do not throw).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CUDASTREAM_H
#define DSC_RUNTIME_CUDASTREAM_H

#include "dsc/runtime/Stream.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace dsc::rt::cuda {

namespace detail {
struct HostTasks;
} // namespace detail

class CudaEvent final : public Event {
public:
  /// An event on `device` (-1: this thread's current device). Throws
  /// Error without a GPU or for a device that does not exist.
  explicit CudaEvent(int device = -1);
  ~CudaEvent() override;

  const char *backend() const override { return "cuda"; }
  bool query() override;
  void synchronize() override;

  cudaEvent_t handle() const { return event_; }
  int device() const { return device_; }

private:
  friend class CudaStream;
  /// Throws when a host task before the recorded point failed.
  void checkHostTasks() const;

  int device_ = -1;
  cudaEvent_t event_ = nullptr;
  mutable std::mutex mutex_;
  /// The host tasks of the stream it was last recorded on, and how many of
  /// them it follows.
  std::shared_ptr<detail::HostTasks> hostTasks_;
  std::uint64_t tasksBefore_ = 0;
};

class CudaStream final : public Stream {
public:
  /// A non-blocking stream on `device` (-1: this thread's current device),
  /// named `name` in errors. Throws Error without a GPU or for a device
  /// that does not exist.
  explicit CudaStream(std::string name, int device = -1);
  /// Drains (see above); never throws.
  ~CudaStream() override;

  const char *backend() const override { return "cuda"; }
  void record(Event &event) override;
  void wait(const Event &event) override;
  void synchronize() override;
  bool query() override;
  /// A CudaEvent on this stream's device.
  std::unique_ptr<Event> createEvent() override;

  cudaStream_t handle() const { return stream_; }
  int device() const { return device_; }

private:
  void enqueueTask(Task task, std::string label) override;

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  std::shared_ptr<detail::HostTasks> hostTasks_;
  /// Held while numbering a host task, recording or waiting, so that the
  /// numbers follow stream order. Never held by the host tasks.
  std::mutex submit_;
};

} // namespace dsc::rt::cuda

#endif // DSC_RUNTIME_CUDASTREAM_H
