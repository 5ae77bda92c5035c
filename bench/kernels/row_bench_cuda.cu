// Bandwidth of the CUDA row kernels and the fused classifier
// (dsc/kernels/cuda/Row.cuh, Classifier.cuh) on GPT-2 124M's training
// shapes, beside a device-to-device copy of the same bytes in the same run
// (the roofline of a memory-bound kernel). Needs a GPU; built with the
// CUDA backend. Correctness is RowCudaTest's (against the CPU kernels).
//
//   build/runtime/bench/bench-row-kernels-cuda [repetitions=7] [tokens=8192]
//
// Per kernel: median time of `repetitions` runs (CUDA events), bytes it
// must move (inputs read once, outputs written once), GB/s, the copy's GB/s
// and the kernel's share of it.

#include "dsc/kernels/cuda/Classifier.cuh"
#include "dsc/kernels/cuda/Row.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace gpu = dsc::kernels::cuda;

namespace {

int gReps = 7;

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "bench-row-kernels-cuda: error: %s: %s\n", what,
                 cudaGetErrorString(status));
    std::exit(1);
  }
}

double medianSeconds(const std::function<void()> &f) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  f();
  check(cudaDeviceSynchronize(), "warm-up run");
  std::vector<double> t;
  for (int i = 0; i < gReps; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    f();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "kernel run");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    t.push_back(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename T> T *deviceRandom(std::size_t n, unsigned seed, float lo = -3, float hi = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> host(n);
  for (T &x : host)
    x = T(d(rng));
  T *out;
  check(cudaMalloc(&out, n * sizeof(T) + 16), "cudaMalloc");
  check(cudaMemcpy(out, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return out;
}

template <typename T> T *deviceZeros(std::size_t n) {
  T *p;
  check(cudaMalloc(&p, n * sizeof(T) + 16), "cudaMalloc");
  check(cudaMemset(p, 0, n * sizeof(T)), "cudaMemset");
  return p;
}

void report(const std::string &name, const std::string &shape, std::size_t bytes,
            const std::function<void()> &kernel) {
  char *src = deviceZeros<char>(bytes / 2), *dst = deviceZeros<char>(bytes / 2);
  double copy = medianSeconds(
      [&] { check(cudaMemcpyAsync(dst, src, bytes / 2, cudaMemcpyDeviceToDevice), "copy"); });
  cudaFree(src);
  cudaFree(dst);
  double t = medianSeconds(kernel);
  check(cudaGetLastError(), name.c_str());
  std::printf("%-28s %-16s %9.3f ms %8.1f GB/s   copy %8.1f GB/s   %5.1f%%\n", name.c_str(),
              shape.c_str(), t * 1e3, bytes / t / 1e9, bytes / copy / 1e9, 100 * copy / t);
}

template <typename T> void rowKernels(const char *type, std::int64_t rows, std::int64_t n) {
  const std::size_t e = sizeof(T), size = std::size_t(rows * n);
  T *x = deviceRandom<T>(size, 1), *dy = deviceRandom<T>(size, 2), *b2 = deviceRandom<T>(size, 3);
  T *y = deviceZeros<T>(size), *dx = deviceZeros<T>(size), *res = deviceZeros<T>(size);
  T *w = deviceRandom<T>(n, 4), *b = deviceRandom<T>(n, 5), *dw = deviceZeros<T>(n),
    *db = deviceZeros<T>(n);
  float *mean = deviceZeros<float>(rows), *rstd = deviceZeros<float>(rows);
  std::string shape = std::to_string(rows) + "x" + std::to_string(n), t = std::string(" ") + type;
  report("softmax" + t, shape, 2 * size * e, [&] { gpu::softmaxForward<T>(0, x, y, rows, n, 1); });
  report("log_softmax" + t, shape, 2 * size * e,
         [&] { gpu::logSoftmaxForward<T>(0, x, y, rows, n, 1); });
  report("softmax backward" + t, shape, 3 * size * e,
         [&] { gpu::softmaxBackward<T>(0, y, dy, dx, rows, n, 1); });
  report("layer_norm" + t, shape, 2 * size * e,
         [&] { gpu::layerNormForward<T>(0, x, w, b, y, mean, rstd, rows, n, 1e-5); });
  report("residual layer_norm" + t, shape, 4 * size * e, [&] {
    gpu::residualLayerNormForward<T>(0, x, b2, w, b, res, y, mean, rstd, rows, n, 1e-5);
  });
  report("layer_norm backward" + t, shape, 3 * size * e,
         [&] { gpu::layerNormBackward<T>(0, dy, x, w, mean, rstd, dx, dw, db, rows, n); });
  report("rms_norm" + t, shape, 2 * size * e,
         [&] { gpu::rmsNormForward<T>(0, x, w, y, rstd, rows, n, 1e-6); });
  report("rms_norm backward" + t, shape, 3 * size * e,
         [&] { gpu::rmsNormBackward<T>(0, dy, x, w, rstd, dx, dw, rows, n); });
  for (void *p : {(void *)x, (void *)dy, (void *)b2, (void *)y, (void *)dx, (void *)res, (void *)w,
                  (void *)b, (void *)dw, (void *)db, (void *)mean, (void *)rstd})
    cudaFree(p);
}

template <typename T> void classifier(const char *type, std::int64_t rows, std::int64_t V) {
  const std::size_t e = sizeof(T), size = std::size_t(rows * V);
  T *logits = deviceRandom<T>(size, 6, -4, 4), *loss = deviceZeros<T>(rows);
  std::vector<std::int64_t> targets(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    targets[r] = (r * 7919) % V;
  std::int64_t *dTargets;
  check(cudaMalloc(&dTargets, rows * sizeof(std::int64_t)), "cudaMalloc");
  check(cudaMemcpy(dTargets, targets.data(), rows * sizeof(std::int64_t), cudaMemcpyHostToDevice),
        "upload");
  T *scale = deviceRandom<T>(1, 7, 0.0001f, 0.0002f);
  gpu::IndexFault *fault = deviceZeros<gpu::IndexFault>(1);
  std::string shape = std::to_string(rows) + "x" + std::to_string(V), t = std::string(" ") + type;
  report("cross_entropy" + t, shape, size * e, [&] {
    gpu::crossEntropyForward<T, std::int64_t>(0, logits, dTargets, loss, rows, V, -100, fault);
  });
  // In place: the logits become their gradient (the numbers stay finite).
  report("fused classifier (in place)" + t, shape, 2 * size * e, [&] {
    gpu::fusedClassifier<T, std::int64_t>(0, logits, dTargets, scale, logits, loss, 0, rows, V,
                                          -100, fault);
  });
  for (void *p : {(void *)logits, (void *)loss, (void *)dTargets, (void *)scale, (void *)fault})
    cudaFree(p);
}

} // namespace

int main(int argc, char **argv) {
  gReps = std::max(5, argc > 1 ? std::atoi(argv[1]) : 7);
  std::int64_t tokens = argc > 2 ? std::atoll(argv[2]) : 8192;
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "no CUDA device");
  std::printf("row kernels on %s, median of %d; GPT-2 124M: %lld tokens, d_model 768, "
              "12 heads of 1024 keys, V 50257\n",
              prop.name, gReps, static_cast<long long>(tokens));
  rowKernels<float>("f32", tokens, 768);
  rowKernels<__nv_bfloat16>("bf16", tokens, 768);
  {
    std::int64_t rows = tokens * 12, n = 1024;
    float *s = deviceRandom<float>(std::size_t(rows * n), 8), *p = deviceZeros<float>(rows * n);
    report("softmax f32 (attention)", std::to_string(rows) + "x1024", 2 * rows * n * 4,
           [&] { gpu::softmaxForward<float>(0, s, p, rows, n, 1); });
    cudaFree(s);
    cudaFree(p);
  }
  classifier<float>("f32", tokens, 50257);
  classifier<__nv_bfloat16>("bf16", tokens, 50257);
  return 0;
}
