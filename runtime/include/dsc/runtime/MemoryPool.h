//===- MemoryPool.h - host memory pool with a high-water mark ---*- C++ -*-===//
//
// Generated code and the runtime allocate their host buffers from a
// MemoryPool. Its high-water mark is the per-rank peak memory that dsc-run
// reports, and tests hold it equal to the compiler's memory plan
// (test/e2e/report-agreement-*.test). Both count every buffer at
// roundUp(bytes, alignment), 256 by
// default, as the compiler's planBuffers (dsc/Analysis/BufferPlan.h) does:
// that rounding is what "equal within the allocator's rounding" allows, and
// with it the pool's high-water mark for a step is the plan's maxLiveBytes.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_MEMORYPOOL_H
#define DSC_RUNTIME_MEMORYPOOL_H

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dsc::rt {

class MemoryPool {
public:
  /// `alignment` must be a power of two; every returned pointer is aligned
  /// to it and every size is counted rounded up to a multiple of it. The
  /// name appears in error messages ("pool 'weights': ...").
  explicit MemoryPool(std::string name, size_t alignment = 256);
  ~MemoryPool(); // frees what was never released
  MemoryPool(const MemoryPool &) = delete;
  MemoryPool &operator=(const MemoryPool &) = delete;

  /// Returns a buffer of at least `bytes` bytes, counted as
  /// roundUp(bytes, alignment). A zero-byte allocation returns a unique
  /// non-null pointer (one alignment unit of real memory, so that it can be
  /// told apart from every other buffer) but counts 0 bytes, as
  /// roundUp(0, alignment) == 0: an empty tensor costs nothing in the plan
  /// either. Throws Error when the system has no memory left.
  void *allocate(size_t bytes);

  /// Returns `p`, which allocate() returned, to the system. Throws Error
  /// for any other pointer, including nullptr and a pointer already
  /// released: a bad release is a runtime bug, never something to ignore.
  void release(void *p);

  /// Rounded bytes of the live allocations.
  size_t bytesInUse() const;
  /// The largest bytesInUse() has been since construction or the last
  /// resetHighWaterMark().
  size_t highWaterMark() const;
  /// Starts the high-water mark over from bytesInUse(): dsc-run measures
  /// the steps after staged KD's stop, once the teacher's buffers are
  /// released, apart from those before it.
  void resetHighWaterMark();
  /// Live allocations (allocated and not yet released), zero-byte ones
  /// included.
  size_t allocationCount() const;

  const std::string &name() const { return name_; }
  size_t alignment() const { return alignment_; }

  /// `bytes` rounded up to a multiple of `alignment` (a power of two).
  /// Throws Error when the result does not fit in size_t.
  static size_t roundUp(size_t bytes, size_t alignment);

private:
  std::string name_;
  size_t alignment_;
  mutable std::mutex mutex_;
  std::unordered_map<void *, size_t> live_; // pointer -> counted bytes
  size_t bytesInUse_ = 0;
  size_t highWaterMark_ = 0;
};

} // namespace dsc::rt

#endif // DSC_RUNTIME_MEMORYPOOL_H
