//===- CudaBenchSupport.h - timing and the copy roofline on a GPU ---------===//
//
// The CUDA counterpart of BenchSupport.h: medians of CUDA-event timings,
// and a kernel's bytes moved per second beside a device-to-device
// cudaMemcpyAsync of the same bytes in the same process.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_BENCH_KERNELS_CUDABENCHSUPPORT_H
#define DSC_BENCH_KERNELS_CUDABENCHSUPPORT_H

#include "dsc/kernels/cuda/Elements.cuh"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace dsc::bench {

/// Median milliseconds of `reps` runs of f on the default stream, after
/// one warm-up run.
template <typename F> double medianMs(int reps, F &&f) {
  namespace gpu = dsc::kernels::cuda;
  cudaEvent_t start, stop;
  gpu::check(cudaEventCreate(&start), "cudaEventCreate");
  gpu::check(cudaEventCreate(&stop), "cudaEventCreate");
  f();
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start);
    f();
    cudaEventRecord(stop);
    gpu::check(cudaEventSynchronize(stop), "timing a kernel");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    t.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// One line: `bytes` moved by the kernel (read + written) in `ms`, beside
/// a device-to-device copy of the same bytes.
inline void printCudaRow(const char *name, int64_t bytes, double ms, int reps) {
  namespace gpu = dsc::kernels::cuda;
  void *a = nullptr, *b = nullptr;
  int64_t half = std::max<int64_t>(bytes / 2, 1);
  gpu::check(cudaMalloc(&a, half), "cudaMalloc");
  gpu::check(cudaMalloc(&b, half), "cudaMalloc");
  double copyMs = medianMs(reps, [&] { cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice); });
  cudaFree(a);
  cudaFree(b);
  double gbs = bytes / ms / 1e6, copy = 2.0 * half / copyMs / 1e6;
  std::printf("%-44s %10.2f %9.4f %9.1f %9.1f %6.1f%%\n", name, bytes / 1e6, ms, gbs, copy,
              100 * gbs / copy);
}

} // namespace dsc::bench

#endif // DSC_BENCH_KERNELS_CUDABENCHSUPPORT_H
