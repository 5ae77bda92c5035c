//===- MemoryPoolTest.cpp - MemoryPool accounting and alignment -----------===//

#include "dsc/runtime/MemoryPool.h"

#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

using dsc::rt::Error;
using dsc::rt::MemoryPool;

TEST(MemoryPool, RoundUpToTheAlignment) {
  EXPECT_EQ(MemoryPool::roundUp(0, 256), 0u);
  EXPECT_EQ(MemoryPool::roundUp(1, 256), 256u);
  EXPECT_EQ(MemoryPool::roundUp(256, 256), 256u);
  EXPECT_EQ(MemoryPool::roundUp(257, 256), 512u);
  EXPECT_EQ(MemoryPool::roundUp(1000, 8), 1000u);
  EXPECT_EQ(MemoryPool::roundUp(1001, 8), 1008u);
  EXPECT_THROW(MemoryPool::roundUp(SIZE_MAX, 256), Error);
  EXPECT_THROW(MemoryPool::roundUp(1, 48), Error);
  EXPECT_THROW(MemoryPool("bad", 0), Error);
  EXPECT_THROW(MemoryPool("bad", 100), Error);
}

TEST(MemoryPool, CountsRoundedBytes) {
  MemoryPool pool("test");
  void *a = pool.allocate(1);
  void *b = pool.allocate(300);
  EXPECT_EQ(pool.bytesInUse(), 256u + 512u);
  EXPECT_EQ(pool.allocationCount(), 2u);
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.bytesInUse(), 0u);
  EXPECT_EQ(pool.allocationCount(), 0u);
}

TEST(MemoryPool, HighWaterMarkAfterInterleavedAllocateAndRelease) {
  MemoryPool pool("test");
  void *a = pool.allocate(1000); // 1024 in use
  void *b = pool.allocate(2048); // 3072
  pool.release(a);               // 2048
  void *c = pool.allocate(512);  // 2560
  EXPECT_EQ(pool.highWaterMark(), 3072u);
  void *d = pool.allocate(1024); // 3584: a new peak
  EXPECT_EQ(pool.highWaterMark(), 3584u);
  pool.release(b);
  pool.release(c);
  pool.release(d);
  EXPECT_EQ(pool.bytesInUse(), 0u);
  EXPECT_EQ(pool.highWaterMark(), 3584u); // the peak stays
}

TEST(MemoryPool, ResetHighWaterMarkStartsOverFromWhatIsInUse) {
  MemoryPool pool("test");
  void *teacher = pool.allocate(4096);
  void *student = pool.allocate(1000); // 5120: the peak with the teacher
  pool.release(teacher);
  EXPECT_EQ(pool.highWaterMark(), 5120u);
  pool.resetHighWaterMark();
  EXPECT_EQ(pool.highWaterMark(), 1024u);
  void *more = pool.allocate(256); // a new peak, without the teacher
  EXPECT_EQ(pool.highWaterMark(), 1280u);
  pool.release(more);
  pool.release(student);
  EXPECT_EQ(pool.highWaterMark(), 1280u);
}

TEST(MemoryPool, ZeroByteAllocationsAreUniqueAndCountNothing) {
  MemoryPool pool("test");
  void *a = pool.allocate(0);
  void *b = pool.allocate(0);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(pool.bytesInUse(), 0u);
  EXPECT_EQ(pool.highWaterMark(), 0u);
  EXPECT_EQ(pool.allocationCount(), 2u);
  pool.release(a);
  pool.release(b);
  EXPECT_EQ(pool.allocationCount(), 0u);
}

TEST(MemoryPool, PointersAreAligned) {
  for (size_t alignment : {64u, 256u, 4096u}) {
    MemoryPool pool("test", alignment);
    std::vector<void *> buffers;
    for (size_t bytes : {0u, 1u, 7u, 255u, 256u, 257u, 10000u}) {
      void *p = pool.allocate(bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u)
          << bytes << " bytes at alignment " << alignment;
      std::memset(p, 0xab, bytes); // the memory is really there
      buffers.push_back(p);
    }
    for (void *p : buffers)
      pool.release(p);
  }
}

TEST(MemoryPool, ReleaseOfAnUnknownPointerThrows) {
  MemoryPool pool("activations");
  int local = 0;
  void *p = pool.allocate(16);
  try {
    pool.release(&local);
    FAIL() << "releasing a foreign pointer must throw";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("pool 'activations'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(pool.release(nullptr), Error);
  pool.release(p);
  EXPECT_THROW(pool.release(p), Error); // twice
  EXPECT_EQ(pool.bytesInUse(), 0u);
}

TEST(MemoryPool, DestructorFreesLeftovers) {
  // Leaks would show under a sanitizer build; here it must not crash.
  MemoryPool pool("test");
  pool.allocate(100);
  pool.allocate(0);
  EXPECT_EQ(pool.allocationCount(), 2u);
}

TEST(MemoryPool, ConcurrentAllocationsKeepCountsConsistent) {
  MemoryPool pool("test");
  constexpr int kRounds = 2000;
  // Each thread holds at most 3 buffers of 256 bytes at a time, so the peak
  // is at most 2 * 3 * 256 and every count returns to zero.
  auto work = [&pool](unsigned seed) {
    std::vector<void *> held;
    for (int i = 0; i < kRounds; ++i) {
      held.push_back(pool.allocate((seed + i) % 256 + 1));
      if (held.size() == 3) {
        for (void *p : held)
          pool.release(p);
        held.clear();
      }
    }
    for (void *p : held)
      pool.release(p);
  };
  std::thread first(work, 1u), second(work, 2u);
  first.join();
  second.join();
  EXPECT_EQ(pool.bytesInUse(), 0u);
  EXPECT_EQ(pool.allocationCount(), 0u);
  EXPECT_GE(pool.highWaterMark(), 3u * 256u);
  EXPECT_LE(pool.highWaterMark(), 2u * 3u * 256u);
}
