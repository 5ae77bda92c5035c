//===- offload_copy_bench.cu - ZeRO-Offload's copies: pinned vs pageable -===//
//
// The bandwidth of the copies ZeRO-Offload makes between the GPU and host
// memory, each way, from and to the memory dsc-run gives the artifact's
// host buffers (pinned: cudaHostAlloc, as CudaMemoryPool's PinnedHost) and,
// in the same run, from and to plain pageable memory (malloc) and pageable
// memory registered with cudaHostRegister: cudaMemcpyAsync on a
// non-blocking stream, timed with events, the median of `reps` copies per
// size. The sizes span one bucket's gradient partition of GPT-2 124M at 8
// ranks (about 6 MB) to the whole 16-bit model (250 MB).
//
//   bench-offload-copy-cuda [reps]
//
// Prints one line per (size, direction, memory): MB, GB/s, and the ratio
// to pinned memory. Runs on a GPU; without one it says so and exits 1.
//
//===----------------------------------------------------------------------===//

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void check(cudaError_t status, const char *what) {
  if (status == cudaSuccess)
    return;
  std::fprintf(stderr, "bench-offload-copy-cuda: %s: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

/// The median milliseconds of `reps` copies of `bytes` on `stream`.
double medianCopyMs(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                    cudaStream_t stream, int reps) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  // One copy first: the first touch of pageable memory and the driver's
  // staging buffers are not what a step pays every time.
  check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    check(cudaMemcpyAsync(dst, src, bytes, kind, stream), "cudaMemcpyAsync");
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  if (reps < 1) {
    std::fprintf(stderr, "usage: bench-offload-copy-cuda [reps >= 1]\n");
    return 1;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench-offload-copy-cuda: no GPU\n");
    return 1;
  }
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  std::printf("GPU: %s; median of %d copies per row\n", properties.name, reps);
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const size_t sizes[] = {size_t(6) << 20, size_t(32) << 20, size_t(250) << 20};
  std::printf("%10s %5s %10s %8s %10s\n", "MB", "way", "memory", "GB/s", "vs pinned");
  for (size_t bytes : sizes) {
    void *device = nullptr, *pinned = nullptr;
    check(cudaMalloc(&device, bytes), "cudaMalloc");
    check(cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable), "cudaHostAlloc");
    void *pageable = std::malloc(bytes);
    void *registered = std::malloc(bytes);
    if (!pageable || !registered) {
      std::fprintf(stderr, "bench-offload-copy-cuda: out of host memory\n");
      return 1;
    }
    std::memset(pinned, 1, bytes);
    std::memset(pageable, 1, bytes);
    std::memset(registered, 1, bytes);
    check(cudaHostRegister(registered, bytes, cudaHostRegisterPortable), "cudaHostRegister");
    struct Memory {
      const char *name;
      void *host;
    } memories[] = {{"pinned", pinned}, {"registered", registered}, {"pageable", pageable}};
    for (bool toDevice : {false, true}) {
      double pinnedGbps = 0;
      for (const Memory &memory : memories) {
        double ms = toDevice ? medianCopyMs(device, memory.host, bytes, cudaMemcpyHostToDevice,
                                            stream, reps)
                             : medianCopyMs(memory.host, device, bytes, cudaMemcpyDeviceToHost,
                                            stream, reps);
        double gbps = double(bytes) / (ms * 1e-3) / 1e9;
        if (memory.host == pinned)
          pinnedGbps = gbps;
        std::printf("%10.1f %5s %10s %8.2f %10.2f\n", double(bytes) / 1e6,
                    toDevice ? "h2d" : "d2h", memory.name, gbps, gbps / pinnedGbps);
      }
    }
    check(cudaHostUnregister(registered), "cudaHostUnregister");
    std::free(registered);
    std::free(pageable);
    check(cudaFreeHost(pinned), "cudaFreeHost");
    check(cudaFree(device), "cudaFree");
  }
  cudaStreamDestroy(stream);
  return 0;
}
