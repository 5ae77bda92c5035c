// CPU GEMM throughput of the runtime (dsc::rt::cpu::gemmF32: single-threaded
// OpenBLAS calls on blocks of C, one per OpenMP thread) beside OpenBLAS's
// cblas_sgemm called directly with its own threads (as many as OpenMP's), on
// the shapes of GPT-2 124M's linear layers, measured alternately in the same
// process; medians of several repetitions.
//
//   build/runtime/bench/bench-gemm-cpu [repetitions=7] [tokens=128]

#include "dsc/runtime/CpuGemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using dsc::rt::cpu::GemmShape;

template <typename F> static double seconds(F &&f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  int64_t tokens = argc > 2 ? std::atoll(argv[2]) : 128;
  struct Case { const char *name; int64_t n, k; };
  // x[tokens, k] @ W^T with W [n, k] (PyTorch's Linear layout: transB).
  const Case cases[] = {{"attn.c_attn", 2304, 768}, {"attn.c_proj", 768, 768},
                        {"mlp.c_fc", 3072, 768},    {"mlp.c_proj", 768, 3072},
                        {"lm_head", 50257, 768}};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> d(-1, 1);
  std::printf("%-12s %6s %6s %6s %12s %12s %7s\n", "layer", "m", "n", "k",
              "runtime GF/s", "openblas GF/s", "ratio");
  for (const Case &c : cases) {
    GemmShape s;
    s.m = tokens, s.n = c.n, s.k = c.k, s.transB = true;
    std::vector<float> a(s.m * s.k), b(s.n * s.k), out(s.m * s.n);
    for (float &x : a) x = d(rng);
    for (float &x : b) x = d(rng);
    std::vector<double> ours, theirs;
    dsc::rt::cpu::gemmF32(s, a.data(), b.data(), out.data()); // warm up
    for (int r = 0; r < reps; ++r) {
      openblas_set_num_threads(1); // as the runtime keeps it
      ours.push_back(seconds([&] { dsc::rt::cpu::gemmF32(s, a.data(), b.data(), out.data()); }));
      openblas_set_num_threads(omp_get_max_threads());
      theirs.push_back(seconds([&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.m, s.n, s.k, 1.0f,
                    a.data(), s.k, b.data(), s.k, 0.0f, out.data(), s.n);
      }));
    }
    double flops = dsc::rt::cpu::gemmFlops(s);
    double g1 = flops / median(ours) / 1e9, g2 = flops / median(theirs) / 1e9;
    std::printf("%-12s %6lld %6lld %6lld %12.2f %12.2f %7.3f\n", c.name, (long long)s.m,
                (long long)s.n, (long long)s.k, g1, g2, g1 / g2);
  }
  return 0;
}
