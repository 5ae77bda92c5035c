//===- MemoryPool.cpp - device and pinned host memory pools ---------------===//

#include "dsc/runtime/CudaMemoryPool.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/MemoryPool.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>

namespace dsc::rt::cuda {

namespace {

/// Makes `device` current for the lifetime of the guard, when it is not.
class DeviceGuard {
public:
  explicit DeviceGuard(int device) {
    checkCuda(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device)
      checkCuda(cudaSetDevice(device),
                "cudaSetDevice(" + std::to_string(device) + ")");
    else
      previous_ = -1;
  }
  ~DeviceGuard() {
    if (previous_ >= 0)
      (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  int previous_ = -1;
};

/// nullptr when CUDA reports the memory exhausted; Error otherwise, in
/// requireDevice's words when there is no GPU.
void *exhaustedOrThrow(cudaError_t status, const std::string &call,
                       const char *memory) {
  (void)cudaGetLastError();
  if (status == cudaErrorMemoryAllocation)
    return nullptr;
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver)
    Device::requireDevice(std::string(memory) + " memory");
  checkCuda(status, call);
  return nullptr; // not reached
}

RawAllocator deviceAllocator(int device) {
  RawAllocator allocator;
  allocator.allocate = [device](std::size_t bytes) -> void * {
    DeviceGuard guard(device);
    void *p = nullptr;
    cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaSuccess)
      return p;
    return exhaustedOrThrow(
        status, "cudaMalloc of " + std::to_string(bytes) + " bytes", "device");
  };
  allocator.free = [device](void *p) {
    // Best effort: a free that fails (the runtime shutting down at exit)
    // has nothing better to do.
    int previous = -1;
    if (cudaGetDevice(&previous) == cudaSuccess && previous != device)
      (void)cudaSetDevice(device);
    (void)cudaFree(p);
    if (previous >= 0 && previous != device)
      (void)cudaSetDevice(previous);
    (void)cudaGetLastError();
  };
  allocator.nativeAlignment = 256; // cudaMalloc's guarantee
  allocator.what = "device";
  return allocator;
}

RawAllocator pinnedHostAllocator() {
  RawAllocator allocator;
  allocator.allocate = [](std::size_t bytes) -> void * {
    void *p = nullptr;
    cudaError_t status = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (status == cudaSuccess)
      return p;
    return exhaustedOrThrow(
        status, "cudaHostAlloc of " + std::to_string(bytes) + " bytes",
        "pinned host");
  };
  allocator.free = [](void *p) {
    (void)cudaFreeHost(p);
    (void)cudaGetLastError();
  };
  allocator.nativeAlignment = 256; // pages in practice; 256 is all we rely on
  allocator.what = "pinned host";
  return allocator;
}

bool isPowerOfTwo(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

} // namespace

const char *name(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Device:
    return "device";
  case MemoryKind::PinnedHost:
    return "pinned host";
  }
  throw Error("invalid MemoryKind " + std::to_string(int(kind)));
}

RawAllocator makeAllocator(MemoryKind kind) {
  switch (kind) {
  case MemoryKind::Device:
    return deviceAllocator(Device::current("device memory"));
  case MemoryKind::PinnedHost:
    return pinnedHostAllocator();
  }
  throw Error("invalid MemoryKind " + std::to_string(int(kind)));
}

CudaMemoryPool::CudaMemoryPool(std::string name, RawAllocator allocator,
                               std::size_t alignment)
    : name_(std::move(name)), allocator_(std::move(allocator)),
      alignment_(alignment) {
  check(isPowerOfTwo(alignment_), "pool '" + name_ + "': alignment " +
                                      std::to_string(alignment_) +
                                      " is not a power of two");
  check(allocator_.allocate && allocator_.free &&
            isPowerOfTwo(allocator_.nativeAlignment),
        "pool '" + name_ + "': incomplete allocator");
}

CudaMemoryPool::CudaMemoryPool(std::string name, MemoryKind kind,
                               std::size_t alignment)
    : name_(std::move(name)), alignment_(alignment) {
  check(isPowerOfTwo(alignment_), "pool '" + name_ + "': alignment " +
                                      std::to_string(alignment_) +
                                      " is not a power of two");
  (void)cuda::name(kind); // throws when out of range
  try {
    if (kind == MemoryKind::Device) {
      device_ = Device::current("device memory");
      allocator_ = deviceAllocator(device_);
    } else {
      allocator_ = pinnedHostAllocator();
    }
  } catch (const Error &e) {
    throw Error("pool '" + name_ + "': " + e.what());
  }
}

CudaMemoryPool::~CudaMemoryPool() {
  for (auto &entry : live_)
    allocator_.free(entry.second.base);
}

void *CudaMemoryPool::allocate(std::size_t bytes) {
  std::size_t counted = MemoryPool::roundUp(bytes, alignment_);
  // A zero-byte buffer still takes one unit, so that its pointer is unique;
  // an alignment beyond the allocator's takes the difference on top.
  std::size_t real = counted == 0 ? alignment_ : counted;
  std::size_t slack = alignment_ > allocator_.nativeAlignment
                          ? alignment_ - allocator_.nativeAlignment
                          : 0;
  check(real <= std::numeric_limits<std::size_t>::max() - slack,
        "pool '" + name_ + "': " + std::to_string(bytes) +
            " bytes overflow with the alignment slack");
  real += slack;
  void *base = nullptr;
  try {
    base = allocator_.allocate(real);
  } catch (const Error &e) {
    throw Error("pool '" + name_ + "': " + e.what());
  }
  if (!base) {
    std::lock_guard<std::mutex> lock(mutex_);
    throw Error("pool '" + name_ + "': out of " + allocator_.what +
                " memory allocating " + std::to_string(counted) +
                " bytes with " + std::to_string(bytesInUse_) + " in use");
  }
  auto address = reinterpret_cast<std::uintptr_t>(base);
  auto aligned = reinterpret_cast<void *>((address + alignment_ - 1) &
                                          ~std::uintptr_t(alignment_ - 1));
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    live_.emplace(aligned, Block{base, counted});
  } catch (...) { // the map itself could not grow
    allocator_.free(base);
    throw;
  }
  bytesInUse_ += counted;
  if (bytesInUse_ > highWaterMark_)
    highWaterMark_ = bytesInUse_;
  return aligned;
}

void CudaMemoryPool::release(void *p) {
  void *base = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(p);
    check(it != live_.end(), "pool '" + name_ +
                                 "': release of a pointer it did not "
                                 "allocate or already released");
    bytesInUse_ -= it->second.counted;
    base = it->second.base;
    live_.erase(it);
  }
  allocator_.free(base);
}

std::size_t CudaMemoryPool::bytesInUse() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytesInUse_;
}

std::size_t CudaMemoryPool::highWaterMark() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return highWaterMark_;
}

void CudaMemoryPool::resetHighWaterMark() {
  std::lock_guard<std::mutex> lock(mutex_);
  highWaterMark_ = bytesInUse_;
}

std::size_t CudaMemoryPool::allocationCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

} // namespace dsc::rt::cuda
