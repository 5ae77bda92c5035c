// The CUDA optimizer kernels (dsc/kernels/cuda/Optimizer.cuh) on GPT-2
// 124M's 148 parameter tensors, beside a device-to-device cudaMemcpyAsync of
// the same traffic (the roofline: a read-only reduction is at best as fast
// per byte as the copy), timed with CUDA events in the same run; median of
// several repetitions. Built
// with the CUDA language (sm_90); needs a GPU to run.
//
//   build/runtime/bench/bench-kernels-optimizer-cuda [repetitions=20]

#include "BenchSupport.h"
#include "dsc/kernels/cuda/Optimizer.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

using namespace dsc::kernels;

namespace {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "bench-kernels-optimizer-cuda: %s: %s\n", what,
                 cudaGetErrorString(status));
    std::exit(1);
  }
}

template <typename T> T *deviceArray(int64_t n) {
  void *p = nullptr;
  check(cudaMalloc(&p, std::size_t(n) * sizeof(T)), "cudaMalloc");
  check(cudaMemset(p, 0, std::size_t(n) * sizeof(T)), "cudaMemset");
  return static_cast<T *>(p);
}

template <typename T> T *upload(const std::vector<T> &host) {
  T *d = deviceArray<T>(int64_t(host.size()));
  check(cudaMemcpy(d, host.data(), host.size() * sizeof(T),
                   cudaMemcpyHostToDevice),
        "cudaMemcpy");
  return d;
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 20;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench-kernels-optimizer-cuda: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const std::vector<int64_t> sizes = dsc::bench::gpt2ParameterSizes();
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n;
  std::printf("%s; GPT-2 124M: %zu tensors, %lld elements; median of %d\n",
              prop.name, sizes.size(), (long long)total, reps);

  float *param = deviceArray<float>(total), *m = deviceArray<float>(total);
  float *v = deviceArray<float>(total), *grad = deviceArray<float>(total);
  __nv_bfloat16 *grad16 = deviceArray<__nv_bfloat16>(total);
  __nv_bfloat16 *copy16 = deviceArray<__nv_bfloat16>(total);
  std::vector<AdamTensor<float>> adam32;
  std::vector<AdamTensor<__nv_bfloat16>> adam16;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    adam32.push_back({param + offset, grad + offset, m + offset, v + offset,
                      nullptr, n, 0});
    adam16.push_back({param + offset, grad16 + offset, m + offset, v + offset,
                      copy16 + offset, n, 0});
    offset += n;
  }
  const int64_t count = int64_t(sizes.size());
  const int64_t chunks = assignChunks(adam32.data(), count);
  assignChunks(adam16.data(), count);
  AdamTensor<float> *table32 = upload(adam32);
  AdamTensor<__nv_bfloat16> *table16 = upload(adam16);
  char *workspace = deviceArray<char>(int64_t(sumSquaresWorkspaceBytes(count, chunks)));
  // Step scalars on the device: lr, step, unscale, clip, total; skip.
  float *scalars = upload(std::vector<float>{1e-4f, 1.0f, 1.0f / 1024, 0.5f, 0});
  std::uint8_t *flags = deviceArray<std::uint8_t>(2);
  const OptimizerStep step{scalars, scalars + 1, scalars + 2, scalars + 3, flags};
  const AdamConfig adamw = adamConfig(0.9, 0.95, 1e-8, 0.1, true);
  const std::size_t copyBytes = std::size_t(total) * 14;
  char *from = deviceArray<char>(int64_t(copyBytes));
  char *to = deviceArray<char>(int64_t(copyBytes));

  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  struct Case {
    const char *name;
    double traffic;
    std::function<void()> run;
  };
  const double n = double(total);
  std::vector<Case> cases = {
      {"copy (D2D memcpy)", 2.0 * double(copyBytes),
       [&] { cudaMemcpyAsync(to, from, copyBytes, cudaMemcpyDeviceToDevice, stream); }},
      {"adamw fp32", 28 * n,
       [&] { cuda::adamUpdate(stream, table32, count, chunks, adamw, step); }},
      {"adamw bf16 grad+copy", 28 * n,
       [&] { cuda::adamUpdate(stream, table16, count, chunks, adamw, step); }},
      {"sum of squares fp32", 4 * n,
       [&] {
         cuda::multiTensorSumSquares(stream, table32, count, chunks, step.unscale,
                                     scalars + 4, nullptr, workspace);
       }},
      {"sum of squares bf16", 2 * n,
       [&] {
         cuda::multiTensorSumSquares(stream, table16, count, chunks, step.unscale,
                                     scalars + 4, nullptr, workspace);
       }},
      {"non-finite bf16", 2 * n,
       [&] { cuda::multiTensorNonFinite(stream, table16, count, chunks, flags + 1); }},
  };
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<std::vector<float>> times(cases.size());
  for (int r = -1; r < reps; ++r)
    for (std::size_t c = 0; c < cases.size(); ++c) {
      check(cudaEventRecord(start, stream), "cudaEventRecord");
      cases[c].run();
      check(cudaEventRecord(stop, stream), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      if (r >= 0)
        times[c].push_back(ms);
    }
  auto median = [](std::vector<float> t) {
    std::sort(t.begin(), t.end());
    return double(t[t.size() / 2]) / 1e3;
  };
  const double copyRate = cases[0].traffic / median(times[0]);
  std::printf("%-24s %11s %9s %9s %8s\n", "kernel", "traffic MB", "ms", "GB/s",
              "% roof");
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const double t = median(times[c]), rate = cases[c].traffic / t;
    std::printf("%-24s %11.1f %9.3f %9.1f %7.1f%%\n", cases[c].name,
                cases[c].traffic / 1e6, t * 1e3, rate / 1e9,
                100.0 * rate / copyRate);
  }
  return 0;
}
