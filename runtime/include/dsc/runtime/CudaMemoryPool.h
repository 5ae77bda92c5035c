//===- CudaMemoryPool.h - device and pinned host memory pools ---*- C++ -*-===//
//
// The CUDA backend's MemoryPool (MemoryPool.h): the same interface and the
// same accounting (every buffer counted at MemoryPool::roundUp(bytes,
// alignment), zero-byte buffers unique and counted as 0, a high-water mark,
// a bad release is an Error), over cudaMalloc/cudaFree for device memory or
// cudaHostAlloc/cudaFreeHost for pinned host memory, the staging buffers of
// inputs and outputs (copies from pinned memory run asynchronously and at
// full bus speed).
//
// Why not a MemoryPool inside: MemoryPool allocates its buffers itself, with
// aligned_alloc, and has no way to take another allocator; its accounting
// would cost a host buffer the size of every device buffer. So this pool
// reuses MemoryPool::roundUp (the rounding the compiler's plan uses too) and
// keeps its own counters, with the same rules.
//
// A device pool allocates on the device that was current when it was built,
// whatever device is current when allocate() is called.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CUDAMEMORYPOOL_H
#define DSC_RUNTIME_CUDAMEMORYPOOL_H

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dsc::rt::cuda {

enum class MemoryKind { Device, PinnedHost };

/// "device", "pinned host".
const char *name(MemoryKind kind);

/// Where a pool's memory comes from. `allocate` returns nullptr when the
/// memory is exhausted and throws Error on any other failure; `free` never
/// throws. The CUDA kinds use makeAllocator(kind); tests hand in their own.
struct RawAllocator {
  std::function<void *(std::size_t bytes)> allocate;
  std::function<void(void *)> free;
  /// Alignment every pointer from `allocate` has (a power of two); a pool
  /// with a larger alignment allocates more and aligns up.
  std::size_t nativeAlignment = 256;
  std::string what = "device"; // "out of <what> memory"
};

/// cudaMalloc/cudaFree on the current device (256-byte aligned), or
/// cudaHostAlloc(portable)/cudaFreeHost (page aligned).
RawAllocator makeAllocator(MemoryKind kind);

class CudaMemoryPool {
public:
  /// `alignment` must be a power of two. Device pools remember the current
  /// device (cudaGetDevice: throws Error without a GPU).
  CudaMemoryPool(std::string name, MemoryKind kind,
                 std::size_t alignment = 256);
  /// A pool over any allocator, with the same accounting (tests).
  CudaMemoryPool(std::string name, RawAllocator allocator,
                 std::size_t alignment = 256);
  ~CudaMemoryPool(); // frees what was never released
  CudaMemoryPool(const CudaMemoryPool &) = delete;
  CudaMemoryPool &operator=(const CudaMemoryPool &) = delete;

  /// As MemoryPool::allocate. Throws Error naming the pool when the memory
  /// is exhausted ("pool 'arena': out of device memory allocating N bytes
  /// with M in use") or when CUDA fails.
  void *allocate(std::size_t bytes);
  /// As MemoryPool::release. Does not synchronize beyond what cudaFree does:
  /// the caller makes sure no stream still uses the buffer.
  void release(void *p);

  std::size_t bytesInUse() const;
  std::size_t highWaterMark() const;
  /// As MemoryPool::resetHighWaterMark.
  void resetHighWaterMark();
  std::size_t allocationCount() const;

  const std::string &name() const { return name_; }
  std::size_t alignment() const { return alignment_; }
  /// The device ordinal of a device pool; -1 for other pools.
  int device() const { return device_; }

private:
  struct Block {
    void *base;          // what the allocator returned
    std::size_t counted; // roundUp(bytes, alignment)
  };

  std::string name_;
  RawAllocator allocator_;
  std::size_t alignment_;
  int device_ = -1;
  mutable std::mutex mutex_;
  std::unordered_map<void *, Block> live_; // aligned pointer -> block
  std::size_t bytesInUse_ = 0;
  std::size_t highWaterMark_ = 0;
};

} // namespace dsc::rt::cuda

#endif // DSC_RUNTIME_CUDAMEMORYPOOL_H
