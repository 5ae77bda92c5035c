//===- MemoryPool.cpp - host memory pool with a high-water mark -----------===//

#include "dsc/runtime/MemoryPool.h"

#include "dsc/runtime/Error.h"

#include <cstdlib>
#include <limits>

namespace dsc::rt {

static bool isPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

size_t MemoryPool::roundUp(size_t bytes, size_t alignment) {
  check(isPowerOfTwo(alignment),
        "alignment " + std::to_string(alignment) + " is not a power of two");
  check(bytes <= std::numeric_limits<size_t>::max() - (alignment - 1),
        std::to_string(bytes) + " bytes overflow when rounded up to " +
            std::to_string(alignment));
  return (bytes + alignment - 1) & ~(alignment - 1);
}

MemoryPool::MemoryPool(std::string name, size_t alignment)
    : name_(std::move(name)), alignment_(alignment) {
  check(isPowerOfTwo(alignment_), "pool '" + name_ + "': alignment " +
                                      std::to_string(alignment_) +
                                      " is not a power of two");
}

MemoryPool::~MemoryPool() {
  for (auto &entry : live_)
    std::free(entry.first);
}

void *MemoryPool::allocate(size_t bytes) {
  size_t counted = roundUp(bytes, alignment_);
  // aligned_alloc wants a non-zero multiple of the alignment; a zero-byte
  // buffer still takes one unit so that its pointer is unique.
  size_t real = counted == 0 ? alignment_ : counted;
  void *p = std::aligned_alloc(alignment_, real);
  if (!p) {
    std::lock_guard<std::mutex> lock(mutex_);
    throw Error("pool '" + name_ + "': out of memory allocating " +
                std::to_string(counted) + " bytes with " +
                std::to_string(bytesInUse_) + " in use");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    live_.emplace(p, counted);
  } catch (...) { // the map itself could not grow
    std::free(p);
    throw;
  }
  bytesInUse_ += counted;
  if (bytesInUse_ > highWaterMark_)
    highWaterMark_ = bytesInUse_;
  return p;
}

void MemoryPool::release(void *p) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(p);
    check(it != live_.end(), "pool '" + name_ +
                                 "': release of a pointer it did not "
                                 "allocate or already released");
    bytesInUse_ -= it->second;
    live_.erase(it);
  }
  std::free(p);
}

size_t MemoryPool::bytesInUse() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytesInUse_;
}

size_t MemoryPool::highWaterMark() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return highWaterMark_;
}

void MemoryPool::resetHighWaterMark() {
  std::lock_guard<std::mutex> lock(mutex_);
  highWaterMark_ = bytesInUse_;
}

size_t MemoryPool::allocationCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

} // namespace dsc::rt
