// Bandwidth of the row kernels and the fused classifier of the kernel library
// (dsc/kernels/Row.h, Classifier.h) on GPT-2 124M's shapes, beside the copy
// bandwidth measured in the same run on the same bytes: the roofline of a
// memory-bound kernel is a copy of what it must read and write.
//
//   build/runtime/bench/bench-row-kernels [repetitions=7] [tokens=512]
//
// For each kernel: the median time of `repetitions` runs, the bytes it must
// move (every input read once, every output written once), its GB/s, the
// GB/s of an OpenMP-parallel copy of the same number of bytes (half read,
// half written; median of as many runs, measured just before), and the
// kernel's share of it. Threads: OMP_NUM_THREADS, as for the kernels.

#include "dsc/kernels/Classifier.h"
#include "dsc/kernels/Row.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace cpu = dsc::kernels::cpu;
using dsc::rt::BFloat16;

namespace {

int gReps = 7;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double medianSeconds(const std::function<void()> &f) {
  f(); // warm: pages touched, thread pool started
  std::vector<double> t;
  for (int i = 0; i < gReps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

// The copy roofline: `bytes` moved, half read from src, half written to dst,
// in contiguous chunks per thread.
double copySeconds(std::size_t bytes) {
  std::vector<char> src(bytes / 2, 1), dst(bytes / 2);
  const std::size_t chunk = 1 << 16, chunks = (src.size() + chunk - 1) / chunk;
  return medianSeconds([&] {
#pragma omp parallel for schedule(static)
    for (std::size_t c = 0; c < chunks; ++c) {
      std::size_t begin = c * chunk, len = std::min(chunk, src.size() - begin);
      std::memcpy(dst.data() + begin, src.data() + begin, len);
    }
  });
}

template <typename T>
std::vector<T> random(std::size_t n, unsigned seed, float lo = -3, float hi = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(d(rng));
  return v;
}

void report(const std::string &name, const std::string &shape, std::size_t bytes,
            const std::function<void()> &kernel) {
  double copy = copySeconds(bytes);
  double t = medianSeconds(kernel);
  std::printf("%-26s %-16s %9.3f ms %8.2f GB/s   copy %8.2f GB/s   %5.1f%%\n", name.c_str(),
              shape.c_str(), t * 1e3, bytes / t / 1e9, bytes / copy / 1e9, 100 * copy / t);
}

template <typename T> void rowKernels(const char *type, std::int64_t rows, std::int64_t n) {
  const std::size_t e = sizeof(T), size = std::size_t(rows * n);
  std::vector<T> x = random<T>(size, 1), dy = random<T>(size, 2), y(size), dx(size),
                 b2 = random<T>(size, 3), res(size);
  std::vector<T> w = random<T>(n, 4), b = random<T>(n, 5), dw(n), db(n);
  std::vector<float> mean(rows), rstd(rows);
  cpu::Queue q;
  std::string shape = std::to_string(rows) + "x" + std::to_string(n);
  std::string t = std::string(" ") + type;
  report("softmax" + t, shape, 2 * size * e,
         [&] { cpu::softmaxForward(q, x.data(), y.data(), rows, n, 1); });
  report("log_softmax" + t, shape, 2 * size * e,
         [&] { cpu::logSoftmaxForward(q, x.data(), y.data(), rows, n, 1); });
  cpu::softmaxForward(q, x.data(), y.data(), rows, n, 1);
  report("softmax backward" + t, shape, 3 * size * e,
         [&] { cpu::softmaxBackward(q, y.data(), dy.data(), dx.data(), rows, n, 1); });
  report("log_softmax backward" + t, shape, 3 * size * e,
         [&] { cpu::logSoftmaxBackward(q, y.data(), dy.data(), dx.data(), rows, n, 1); });
  report("layer_norm" + t, shape, 2 * size * e, [&] {
    cpu::layerNormForward(q, x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows,
                          n, 1e-5);
  });
  report("residual layer_norm" + t, shape, 4 * size * e, [&] {
    cpu::residualLayerNormForward(q, x.data(), b2.data(), w.data(), b.data(), res.data(), y.data(),
                                  mean.data(), rstd.data(), rows, n, 1e-5);
  });
  report("layer_norm backward" + t, shape, 3 * size * e, [&] {
    cpu::layerNormBackward(q, dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(),
                           dw.data(), db.data(), rows, n);
  });
  report("rms_norm" + t, shape, 2 * size * e,
         [&] { cpu::rmsNormForward(q, x.data(), w.data(), y.data(), rstd.data(), rows, n, 1e-6); });
  report("rms_norm backward" + t, shape, 3 * size * e, [&] {
    cpu::rmsNormBackward(q, dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), rows,
                         n);
  });
}

template <typename T> void classifier(const char *type, std::int64_t rows, std::int64_t V) {
  const std::size_t e = sizeof(T), size = std::size_t(rows * V);
  std::vector<T> logits = random<T>(size, 6, -4, 4), dlogits(size), loss(rows);
  std::vector<std::int64_t> targets(rows);
  for (std::int64_t r = 0; r < rows; ++r)
    targets[r] = (r * 7919) % V;
  std::vector<T> scale = {T(1.0f / float(rows))};
  cpu::Queue q;
  std::string shape = std::to_string(rows) + "x" + std::to_string(V);
  std::string t = std::string(" ") + type;
  report("cross_entropy" + t, shape, size * e, [&] {
    cpu::crossEntropyForward(q, logits.data(), targets.data(), loss.data(), rows, V, -100);
  });
  report("fused classifier" + t, shape, 2 * size * e, [&] {
    cpu::fusedClassifier(q, logits.data(), targets.data(), scale.data(), dlogits.data(),
                         loss.data(), 0, rows, V, -100);
  });
}

} // namespace

int main(int argc, char **argv) {
  gReps = std::max(5, argc > 1 ? std::atoi(argv[1]) : 7);
  std::int64_t tokens = argc > 2 ? std::atoll(argv[2]) : 512;
  std::printf("row kernels, %d threads, median of %d; GPT-2 124M: %lld tokens, "
              "d_model 768, 12 heads of 128 keys (tokens/128 sequences), V 50257\n",
              omp_get_max_threads(), gReps, static_cast<long long>(tokens));
  rowKernels<float>("f32", tokens, 768);
  rowKernels<BFloat16>("bf16", tokens, 768);
  // Attention probabilities: [batch * heads * T, T] with T = 128.
  {
    std::int64_t rows = tokens * 12, n = 128;
    std::vector<float> s = random<float>(std::size_t(rows * n), 7), p(s.size());
    report("softmax f32 (attention)", std::to_string(rows) + "x128", 2 * s.size() * 4,
           [&] { cpu::softmaxForward(cpu::Queue{}, s.data(), p.data(), rows, n, 1); });
  }
  classifier<float>("f32", tokens, 50257);
  classifier<BFloat16>("bf16", tokens, 50257);
  return 0;
}
