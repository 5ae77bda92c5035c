//===- Stream.h - streams and events ----------------------------*- C++ -*-===//
//
// Streams and events, so that communication and compute can overlap on both
// targets (docs/streams.md). A stream is an in-order queue
// of work; an event marks a point in one stream's queue, and another stream
// can wait for it. The same interface has two backends:
//
//   CpuStream / CpuEvent (here): each stream is a queue served by one worker
//   thread (or, in Inline mode, run on the enqueuing thread).
//   CudaStream / CudaEvent (CudaStream.h, dsc_runtime_cuda): cudaStream_t
//   and cudaEvent_t; host tasks run through cudaLaunchHostFunc.
//
// Semantics shared by both backends:
//   - Work enqueued on one stream runs in enqueue order, one item at a time.
//     Calls made from several threads at once are ordered as they take the
//     stream's lock. enqueue/record/wait never wait for earlier work (except
//     CpuStream's Inline mode, which runs everything at once).
//   - record(event) makes `event` stand for all the work enqueued on the
//     stream so far; it completes when that work has run. Recording again
//     moves it to the new point. An event that was never recorded is
//     complete.
//   - wait(event) makes the work enqueued on the stream afterwards start
//     only after the event, as recorded at the time of the call, completes.
//     Recording the event again later does not change what the wait waits
//     for. A stream can only record or wait for events of its own backend.
//   - synchronize() blocks until the work enqueued before the call has run.
//
// Failure: when a task throws, the stream has failed. Its queued work is
// dropped (CPU; see CudaStream.h for CUDA), and from then on enqueue,
// record and wait throw Error ("stream 'S' refuses new work after a
// failure: ..."), and synchronize() and query() throw Error("stream 'S':
// task #N (label) failed: <what()>", N counting the stream's tasks from 1)
// every time, not only once. An event recorded after the failing task
// throws the same Error from query() and synchronize(); one recorded before
// it is unaffected. On CPU a stream that waits for a failed event fails in
// turn, naming the stream it waited for.
//
// Destruction drains: a stream's destructor returns when the work already
// enqueued has run (or was dropped after a failure), joins its thread, and
// never throws; a failure that synchronize() did not report is then lost.
// Events may outlive their stream.
//
// Do not block inside a task on work that is queued behind it: synchronize()
// of the task's own stream, or of an event recorded after the task, throws
// Error instead of deadlocking; blocking on another stream that waits for
// this one cannot be detected. Use wait() for dependencies between streams.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_STREAM_H
#define DSC_RUNTIME_STREAM_H

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace dsc::rt {

/// A point in a stream's queue (see above).
class Event {
public:
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  virtual ~Event();

  /// "cpu" or "cuda".
  virtual const char *backend() const = 0;

  /// True when the work the event stands for has run (or when it was never
  /// recorded), false while it has not. Throws Error when that work failed.
  virtual bool query() = 0;

  /// Blocks until query() would return true; throws as query() does.
  virtual void synchronize() = 0;

protected:
  Event() = default;
};

/// An in-order queue of work (see above).
class Stream {
public:
  /// A host task. Tasks report failure by throwing.
  using Task = std::function<void()>;

  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  /// Drains (see above); never throws.
  virtual ~Stream();

  /// The name given at creation, used in every error ("compute", "comm").
  const std::string &name() const { return name_; }

  /// "cpu" or "cuda".
  virtual const char *backend() const = 0;

  /// Appends `task` to the queue and returns without waiting for it.
  /// `label` names the task in the error when it throws. Throws Error when
  /// `task` is empty or the stream has failed.
  void enqueue(Task task, std::string label = {});

  /// Makes `event` stand for the work enqueued so far. Throws Error when the
  /// event is of another backend or the stream has failed.
  virtual void record(Event &event) = 0;

  /// Makes work enqueued from now on wait for `event` (as recorded now),
  /// without blocking the caller. Throws Error as record() does.
  virtual void wait(const Event &event) = 0;

  /// Blocks until the work enqueued before the call has run. Throws Error
  /// when the stream has failed.
  virtual void synchronize() = 0;

  /// True when all the work enqueued so far has run. Throws Error when the
  /// stream has failed.
  virtual bool query() = 0;

  /// A new, unrecorded event of this stream's backend (and device).
  virtual std::unique_ptr<Event> createEvent() = 0;

  /// createEvent(), recorded on this stream.
  std::unique_ptr<Event> recordEvent();

protected:
  explicit Stream(std::string name);

  /// enqueue() after the checks common to all backends.
  virtual void enqueueTask(Task task, std::string label) = 0;

  /// Throws Error("stream 'S' (cpu) cannot <action> an event of the cuda
  /// backend"), for an event the backend does not know; `action` is
  /// "record" or "wait for".
  [[noreturn]] void throwForeignEvent(const Event &event,
                                      const char *action) const;

private:
  std::string name_;
};

namespace detail {
struct CpuQueue;
} // namespace detail

/// A CpuStream's event: the queue it was recorded on and a position in it.
class CpuEvent final : public Event {
public:
  CpuEvent();
  ~CpuEvent() override;

  const char *backend() const override { return "cpu"; }
  bool query() override;
  void synchronize() override;

private:
  friend class CpuStream;
  struct Point {
    std::shared_ptr<detail::CpuQueue> queue; // null: never recorded
    std::uint64_t position = 0;
  };
  Point point() const;
  void setPoint(Point point);

  mutable std::mutex mutex_;
  Point point_;
};

/// The CPU backend.
class CpuStream final : public Stream {
public:
  enum class Mode {
    /// One worker thread runs the tasks; enqueue/record/wait return at once.
    Threaded,
    /// No thread: enqueue runs the task on the calling thread before it
    /// returns, and wait(event) blocks the caller until the event completes.
    /// For single-threaded use and tests; a task that throws is still
    /// reported by synchronize(), not by enqueue().
    Inline,
  };

  explicit CpuStream(std::string name, Mode mode = Mode::Threaded);
  /// Drains, then joins the worker thread; never throws. Must not be called
  /// from one of the stream's own tasks.
  ~CpuStream() override;

  Mode mode() const { return mode_; }

  const char *backend() const override { return "cpu"; }
  void record(Event &event) override;
  void wait(const Event &event) override;
  void synchronize() override;
  bool query() override;
  std::unique_ptr<Event> createEvent() override;

private:
  void enqueueTask(Task task, std::string label) override;

  Mode mode_;
  std::shared_ptr<detail::CpuQueue> queue_;
  std::thread worker_; // Threaded mode only
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_STREAM_H
