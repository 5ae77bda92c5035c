//===- CudaMemoryPoolTest.cpp - device and pinned host pools --------------===//
//
// The accounting over a fake allocator (runs anywhere); the CUDA kinds
// without a GPU (a clear Error) and with one (real memory).

#include "dsc/runtime/CudaMemoryPool.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/MemoryPool.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using dsc::rt::Error;
using dsc::rt::cuda::CudaMemoryPool;
using dsc::rt::cuda::MemoryKind;
using dsc::rt::cuda::RawAllocator;
using testing::HasSubstr;
using testing::StartsWith;
using testing::ThrowsMessage;

namespace {

bool haveGpu() { return dsc::rt::cuda::Device::count() > 0; }

/// Host memory handed out `native` bytes aligned but deliberately not more
/// (so that a larger pool alignment has work to do), with a record of what
/// is outstanding and an optional budget after which it reports exhaustion.
struct FakeMemory {
  std::size_t native = 16;
  std::size_t budget = SIZE_MAX;
  std::size_t outstanding = 0;
  std::map<void *, std::pair<void *, std::size_t>>
      live; // returned -> raw, bytes
  std::vector<std::size_t> requests;

  RawAllocator allocator() {
    RawAllocator a;
    a.allocate = [this](std::size_t bytes) -> void * {
      requests.push_back(bytes);
      if (bytes > budget - outstanding)
        return nullptr;
      // Aligned to `native`, and off any larger power of two.
      char *raw = static_cast<char *>(std::malloc(bytes + 2 * native + 4096));
      auto address = reinterpret_cast<std::uintptr_t>(raw) + native;
      address = (address + 4095) / 4096 * 4096 + native;
      void *p = reinterpret_cast<void *>(address);
      live[p] = {raw, bytes};
      outstanding += bytes;
      return p;
    };
    a.free = [this](void *p) {
      auto it = live.find(p);
      ASSERT_NE(it, live.end()) << "freed a pointer it never returned";
      outstanding -= it->second.second;
      std::free(it->second.first);
      live.erase(it);
    };
    a.nativeAlignment = native;
    a.what = "fake";
    return a;
  }
};

} // namespace

TEST(CudaMemoryPool, CountsLikeTheHostPool) {
  FakeMemory memory;
  CudaMemoryPool pool("test", memory.allocator());
  dsc::rt::MemoryPool host("host");
  for (std::size_t bytes : {1u, 300u, 256u, 1000u}) {
    void *p = pool.allocate(bytes);
    void *q = host.allocate(bytes);
    EXPECT_EQ(pool.bytesInUse(), host.bytesInUse()) << bytes;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
    std::memset(p, 0xab, bytes); // the memory is really there
    (void)q;
  }
  EXPECT_EQ(pool.bytesInUse(), 256u + 512u + 256u + 1024u);
  EXPECT_EQ(pool.allocationCount(), 4u);
  EXPECT_EQ(pool.highWaterMark(), pool.bytesInUse());
  EXPECT_EQ(pool.name(), "test");
  EXPECT_EQ(pool.alignment(), 256u);
  EXPECT_EQ(pool.device(), -1);
}

TEST(CudaMemoryPool, CountsExactlyAsTheHostPoolDoes) {
  // The same random allocations (a fifth of them of zero bytes) and
  // releases on both pools: every counter agrees after every step, whatever
  // the alignment.
  for (std::size_t alignment : {64u, 256u, 4096u}) {
    FakeMemory memory;
    CudaMemoryPool pool("test", memory.allocator(), alignment);
    dsc::rt::MemoryPool host("host", alignment);
    std::vector<std::pair<void *, void *>> live; // (pool's, host's)
    std::mt19937 rng(alignment);
    for (int step = 0; step < 500; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        std::size_t victim = rng() % live.size();
        pool.release(live[victim].first);
        host.release(live[victim].second);
        live.erase(live.begin() + std::ptrdiff_t(victim));
      } else {
        std::size_t bytes = rng() % 5 == 0 ? 0 : rng() % 20000;
        void *ours = pool.allocate(bytes);
        // Unique and non-null, zero-byte buffers too (which count 0).
        ASSERT_NE(ours, nullptr);
        for (auto &other : live)
          ASSERT_NE(other.first, ours) << step;
        live.emplace_back(ours, host.allocate(bytes));
      }
      ASSERT_EQ(pool.bytesInUse(), host.bytesInUse()) << step;
      ASSERT_EQ(pool.highWaterMark(), host.highWaterMark()) << step;
      ASSERT_EQ(pool.allocationCount(), host.allocationCount()) << step;
    }
    for (auto &[ours, theirs] : live) {
      pool.release(ours);
      host.release(theirs);
    }
    EXPECT_EQ(pool.bytesInUse(), 0u);
    EXPECT_GT(pool.highWaterMark(), 0u);
    EXPECT_TRUE(memory.live.empty()); // every release reached the allocator
  }
}

TEST(CudaMemoryPool, AlignsBeyondTheAllocator) {
  FakeMemory memory; // 16-byte aligned pointers only
  for (std::size_t alignment : {16u, 256u, 4096u}) {
    CudaMemoryPool pool("test", memory.allocator(), alignment);
    memory.requests.clear();
    for (std::size_t bytes : {0u, 1u, 255u, 10000u}) {
      void *p = pool.allocate(bytes);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignment, 0u)
          << bytes << " bytes at alignment " << alignment;
      std::memset(p, 0xcd, bytes);
      std::size_t counted = dsc::rt::MemoryPool::roundUp(bytes, alignment);
      EXPECT_EQ(memory.requests.back(),
                (counted ? counted : alignment) + alignment - 16);
    }
  }
  EXPECT_TRUE(memory.live.empty()); // the destructors freed the leftovers
}

TEST(CudaMemoryPool, BadReleaseAndBadAlignmentAreErrors) {
  FakeMemory memory;
  CudaMemoryPool pool("activations", memory.allocator());
  int local = 0;
  void *p = pool.allocate(16);
  EXPECT_THAT([&] { pool.release(&local); },
              ThrowsMessage<Error>(HasSubstr("pool 'activations'")));
  EXPECT_THROW(pool.release(nullptr), Error);
  pool.release(p);
  EXPECT_THROW(pool.release(p), Error); // twice
  EXPECT_EQ(pool.bytesInUse(), 0u);
  EXPECT_THROW(CudaMemoryPool("bad", memory.allocator(), 100), Error);
  EXPECT_THROW(CudaMemoryPool("bad", memory.allocator(), 0), Error);
  EXPECT_THROW(CudaMemoryPool("bad", RawAllocator{}), Error);
}

TEST(CudaMemoryPool, ExhaustionNamesThePool) {
  FakeMemory memory;
  memory.budget = 1024;
  CudaMemoryPool pool("arena", memory.allocator());
  void *p = pool.allocate(512);
  EXPECT_THAT([&] { pool.allocate(1000); },
              ThrowsMessage<Error>("pool 'arena': out of fake memory "
                                   "allocating 1024 bytes with 512 in use"));
  EXPECT_EQ(pool.bytesInUse(), 512u); // the failure counted nothing
  EXPECT_EQ(pool.allocationCount(), 1u);
  pool.release(p);
}

TEST(CudaMemoryPool, AllocatorErrorsNameThePool) {
  RawAllocator broken;
  broken.allocate = [](std::size_t) -> void * {
    throw Error("cudaMalloc: boom");
  };
  broken.free = [](void *) {};
  CudaMemoryPool pool("weights", broken);
  EXPECT_THAT([&] { pool.allocate(8); },
              ThrowsMessage<Error>("pool 'weights': cudaMalloc: boom"));
  EXPECT_EQ(pool.allocationCount(), 0u);
}

TEST(CudaMemoryPool, CudaKindsWithoutAGpuAreClearErrors) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present; CudaKindsOnTheGpu covers them";
  // A device pool needs the current device at once.
  EXPECT_THAT([] { CudaMemoryPool pool("state", MemoryKind::Device); },
              ThrowsMessage<Error>(
                  StartsWith("pool 'state': device memory needs a GPU, but "
                             "cudaGetDeviceCount found none")));
  // A pinned pool needs CUDA at its first allocation.
  CudaMemoryPool pinned("io", MemoryKind::PinnedHost);
  EXPECT_THAT([&] { pinned.allocate(100); },
              ThrowsMessage<Error>(
                  StartsWith("pool 'io': pinned host memory needs a GPU, but "
                             "cudaGetDeviceCount found none")));
  EXPECT_EQ(pinned.allocationCount(), 0u);
}

TEST(CudaMemoryPool, CudaKindsOnTheGpu) {
  if (!haveGpu())
    GTEST_SKIP() << "no GPU here";
  CudaMemoryPool device("state", MemoryKind::Device);
  CudaMemoryPool pinned("io", MemoryKind::PinnedHost, 4096);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(device.device(), current);
  EXPECT_EQ(pinned.device(), -1);
  constexpr std::size_t kBytes = 1000;
  auto *host = static_cast<unsigned char *>(pinned.allocate(kBytes));
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(host) % 4096, 0u);
  for (std::size_t i = 0; i < kBytes; ++i)
    host[i] = static_cast<unsigned char>(i * 7);
  void *buffer = device.allocate(kBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer) % 256, 0u);
  EXPECT_EQ(device.bytesInUse(), 1024u);
  EXPECT_EQ(pinned.bytesInUse(), 4096u);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, buffer), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, host), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  std::vector<unsigned char> back(kBytes, 0);
  ASSERT_EQ(cudaMemcpy(buffer, host, kBytes, cudaMemcpyHostToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(back.data(), buffer, kBytes, cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (std::size_t i = 0; i < kBytes; ++i)
    ASSERT_EQ(back[i], static_cast<unsigned char>(i * 7)) << i;
  device.release(buffer);
  pinned.release(host);
  EXPECT_EQ(device.highWaterMark(), 1024u);
  EXPECT_THROW(device.release(buffer), Error);
  // Exhaustion is an Error naming the pool, not a crash.
  EXPECT_THAT(
      [&] { device.allocate(std::size_t(1) << 50); },
      ThrowsMessage<Error>(StartsWith("pool 'state': out of device memory")));
}
