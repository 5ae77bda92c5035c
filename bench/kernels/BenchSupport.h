//===- BenchSupport.h - timing and the copy roofline of kernel benchmarks -===//
//
// A memory-bound kernel is measured against a copy of the same bytes done
// in the same process, on the same threads (an OpenMP memcpy of
// 64 KiB blocks): its bytes moved per second over the copy's is how close
// it is to the machine's bandwidth for that working set (in cache for the
// small GPT-2 shapes, in DRAM for the large ones).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_BENCH_KERNELS_BENCHSUPPORT_H
#define DSC_BENCH_KERNELS_BENCHSUPPORT_H

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dsc::bench {

/// Element counts of GPT-2 124M's 148 parameter tensors, in the model's
/// order (124,439,808 elements, lm_head tied to wte).
inline std::vector<int64_t> gpt2ParameterSizes() {
  const int64_t d = 768;
  std::vector<int64_t> sizes = {50257 * d, 1024 * d};
  for (int layer = 0; layer < 12; ++layer) {
    const int64_t block[] = {d, d, 3 * d * d, 3 * d, d * d, d,
                             d, d, 4 * d * d, 4 * d, 4 * d * d, d};
    sizes.insert(sizes.end(), std::begin(block), std::end(block));
  }
  sizes.push_back(d);
  sizes.push_back(d);
  return sizes;
}

/// Seconds of one run of f.
template <typename F> double secondsOf(F &&f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The median of `v`.
inline double medianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median seconds of `reps` runs of f, after one warm-up run.
template <typename F> double medianSeconds(int reps, F &&f) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// GB/s of a parallel copy of `bytes` bytes (read + write counted).
inline double copyBandwidth(int64_t bytes, int reps) {
  std::vector<char> a(bytes, 1), b(bytes);
  constexpr int64_t kBlock = 1 << 16;
  double s = medianSeconds(reps, [&] {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < bytes; i += kBlock)
      std::memcpy(b.data() + i, a.data() + i, std::min(kBlock, bytes - i));
  });
  return 2.0 * double(bytes) / s / 1e9;
}

inline void printHeader() {
  std::printf("%-44s %10s %9s %9s %9s %7s\n", "kernel (shape)", "MB moved", "median ms",
              "GB/s", "copy GB/s", "% copy");
}

/// One line: `bytes` moved by the kernel (read + written) in `seconds`,
/// beside a copy of the same bytes.
inline void printRow(const char *name, int64_t bytes, double seconds, int reps) {
  double gbs = double(bytes) / seconds / 1e9;
  double copy = copyBandwidth(bytes / 2 > 0 ? bytes / 2 : 1, reps);
  std::printf("%-44s %10.2f %9.4f %9.2f %9.2f %6.1f%%\n", name, double(bytes) / 1e6,
              seconds * 1e3, gbs, copy, 100.0 * gbs / copy);
}

} // namespace dsc::bench

#endif // DSC_BENCH_KERNELS_BENCHSUPPORT_H
