//===- StreamCudaTest.cpp - CUDA streams and events -----------------------===//
//
// Runs with and without a GPU: without one, creating a stream or an event
// must be the clear no-GPU error; the other tests need a GPU and skip.
//
//===----------------------------------------------------------------------===//

#include "dsc/runtime/CudaStream.h"

#include "StreamTestSupport.h"

#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using dsc::rt::CpuEvent;
using dsc::rt::CpuStream;
using dsc::rt::Error;
using dsc::rt::Event;
using dsc::rt::cuda::CudaEvent;
using dsc::rt::cuda::CudaStream;
using dsc::rt::cuda::Device;
using dsc::rt::test::expectFailedForGood;
using dsc::rt::test::expectTasksRunInEnqueueOrder;
using dsc::rt::test::finishesWithin;
using dsc::rt::test::Gate;
using testing::StartsWith;
using testing::ThrowsMessage;
using namespace std::chrono_literals;

namespace {

constexpr auto kLimit = 60s;

#define SKIP_WITHOUT_GPU()                                                     \
  if (Device::count() == 0)                                                    \
  GTEST_SKIP() << "no GPU here; NoGpuIsAClearError covers it"

} // namespace

TEST(CudaStream, NoGpuIsAClearError) {
  if (Device::count() > 0)
    GTEST_SKIP() << "a GPU is present";
  EXPECT_THAT([] { CudaStream stream("compute"); },
              ThrowsMessage<Error>(StartsWith(
                  "CUDA stream 'compute' needs a GPU, but cudaGetDeviceCount "
                  "found none on host ")));
  EXPECT_THAT([] { CudaStream stream("comm", 0); },
              ThrowsMessage<Error>(StartsWith(
                  "CUDA stream 'comm' needs a GPU, but ")));
  EXPECT_THAT([] { CudaEvent event; },
              ThrowsMessage<Error>(StartsWith("CUDA event needs a GPU, but ")));
}

TEST(CudaStream, ADeviceThatDoesNotExistIsAnError) {
  SKIP_WITHOUT_GPU();
  int count = Device::count();
  EXPECT_THAT([count] { CudaStream stream("s", count); },
              ThrowsMessage<Error>("CUDA stream 's': device " +
                                   std::to_string(count) +
                                   " does not exist (" +
                                   std::to_string(count) + " visible)"));
}

TEST(CudaStream, RunsHostTasksInEnqueueOrder) {
  SKIP_WITHOUT_GPU();
  finishesWithin(kLimit, "RunsHostTasksInEnqueueOrder", [] {
    CudaStream stream("s");
    EXPECT_STREQ(stream.backend(), "cuda");
    EXPECT_NE(stream.handle(), nullptr);
    expectTasksRunInEnqueueOrder(stream, 1000);
  });
}

TEST(CudaStream, WaitOrdersHostAndDeviceWorkAcrossStreams) {
  SKIP_WITHOUT_GPU();
  finishesWithin(kLimit, "WaitOrdersAcrossStreams", [] {
    constexpr std::size_t kBytes = 1 << 20;
    void *device = nullptr, *host = nullptr;
    ASSERT_EQ(cudaMalloc(&device, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMallocHost(&host, kBytes), cudaSuccess);
    std::memset(host, 0, kBytes);
    {
      CudaStream a("a"), b("b");
      int value = 0, seen = -1;
      a.enqueue([&] {
        std::this_thread::sleep_for(50ms);
        value = 42;
      });
      ASSERT_EQ(cudaMemsetAsync(device, 7, kBytes, a.handle()), cudaSuccess);
      std::unique_ptr<Event> done = a.recordEvent();
      b.wait(*done);
      b.enqueue([&] { seen = value; });
      ASSERT_EQ(cudaMemcpyAsync(host, device, kBytes, cudaMemcpyDeviceToHost,
                                b.handle()),
                cudaSuccess);
      b.synchronize();
      EXPECT_EQ(seen, 42);
      const auto *bytes = static_cast<const unsigned char *>(host);
      EXPECT_EQ(bytes[0], 7);
      EXPECT_EQ(bytes[kBytes - 1], 7);
    }
    EXPECT_EQ(cudaFreeHost(host), cudaSuccess);
    EXPECT_EQ(cudaFree(device), cudaSuccess);
  });
}

TEST(CudaEvent, QueryAndSynchronizeFollowTheRecordedWork) {
  SKIP_WITHOUT_GPU();
  finishesWithin(kLimit, "CudaEventQueryAndSynchronize", [] {
    CudaStream stream("s");
    CudaEvent never;
    EXPECT_TRUE(never.query());
    never.synchronize();
    Gate gate;
    stream.enqueue([&] { gate.pass(); });
    std::unique_ptr<Event> after = stream.recordEvent();
    EXPECT_STREQ(after->backend(), "cuda");
    EXPECT_FALSE(after->query());
    EXPECT_FALSE(stream.query());
    gate.open();
    after->synchronize();
    EXPECT_TRUE(after->query());
  });
}

TEST(CudaStream, AHostTaskThatThrowsFailsTheStream) {
  SKIP_WITHOUT_GPU();
  finishesWithin(kLimit, "AHostTaskThatThrowsFailsTheStream", [] {
    Gate gate;
    CudaStream stream("compute");
    bool thirdRan = false;
    stream.enqueue([] {});
    std::unique_ptr<Event> before = stream.recordEvent();
    stream.enqueue(
        [&] {
          gate.pass();
          throw std::runtime_error("boom");
        },
        "step 3");
    std::unique_ptr<Event> after = stream.recordEvent();
    stream.enqueue([&] { thirdRan = true; }); // skipped when it comes up
    gate.open();
    expectFailedForGood(stream, "task #2 (step 3) failed: boom", *before,
                        after.get());
    EXPECT_FALSE(thirdRan);
  });
}

TEST(CudaStream, CpuAndCudaEventsDoNotMix) {
  SKIP_WITHOUT_GPU();
  CudaStream gpu("gpu");
  CpuStream cpu("cpu");
  CpuEvent cpuEvent;
  CudaEvent cudaEvent;
  EXPECT_THAT([&] { gpu.record(cpuEvent); },
              ThrowsMessage<Error>("stream 'gpu' (cuda) cannot record an "
                                   "event of the cpu backend"));
  EXPECT_THAT([&] { cpu.wait(cudaEvent); },
              ThrowsMessage<Error>("stream 'cpu' (cpu) cannot wait for an "
                                   "event of the cuda backend"));
}

TEST(CudaStream, DestructionRunsThePendingHostTasks) {
  SKIP_WITHOUT_GPU();
  finishesWithin(kLimit, "CudaDestructionRunsThePendingHostTasks", [] {
    std::atomic<int> ran{0};
    auto held = std::make_shared<int>(0);
    {
      CudaStream stream("s");
      stream.enqueue([] { std::this_thread::sleep_for(20ms); });
      for (int i = 0; i < 100; ++i)
        stream.enqueue([&ran, held] { ++ran; });
    }
    EXPECT_EQ(ran.load(), 100);
    EXPECT_EQ(held.use_count(), 1);
  });
}
