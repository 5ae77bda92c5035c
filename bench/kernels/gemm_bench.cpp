// The kernel library's strided-batched GEMM (dsc/kernels/Gemm.h) on the
// batched matmuls of GPT-2's attention and on a broadcast weight, beside
// two references measured in the same run: a loop of plain OpenBLAS
// cblas_sgemm calls, one per batch item (what a batched matmul cost
// before), and one GEMM of the same FLOPs (the items stacked into one
// [batch * m, k] x [k, n] product, what a batch can at best approach).
// bf16 rows compare with a loop of single-item bf16 calls. Medians of
// several repetitions, interleaved, after a warm-up.
//
//   build/runtime/bench/bench-kernels-gemm [repetitions=7]

#include "dsc/kernels/Gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <type_traits>
#include <vector>

using namespace dsc::kernels;
using dsc::rt::BFloat16;

namespace {

template <typename F> double seconds(F &&f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename T> std::vector<T> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(d(rng));
  return v;
}

struct Case {
  const char *name;
  int64_t batch, m, n, k;
  bool transB, broadcastB;
};

/// One case in element type T: batched, loop, and one big GEMM.
template <typename T> void run(const Case &c, int reps) {
  GemmShape s;
  s.batch = c.batch, s.m = c.m, s.n = c.n, s.k = c.k, s.transB = c.transB;
  s.strideA = s.m * s.k, s.strideB = c.broadcastB ? 0 : s.k * s.n;
  s.strideC = s.m * s.n;
  auto a = random<T>(std::size_t(s.batch * s.strideA), 1);
  auto b = random<T>(std::size_t(c.broadcastB ? s.k * s.n : s.batch * s.strideB), 2);
  std::vector<T> out(std::size_t(s.batch * s.strideC));
  // The same FLOPs as one product: the A items stacked (B is one matrix
  // in the big GEMM, which is what a broadcast B is anyway).
  GemmShape big = s;
  big.batch = 1, big.m = s.batch * s.m, big.strideA = big.strideB = big.strideC = 0;
  GemmShape one = s;
  one.batch = 1;

  auto batched = [&] {
    cpu::batchedGemm(cpu::Queue{}, s, a.data(), b.data(), out.data());
  };
  auto loop = [&] {
    for (int64_t i = 0; i < s.batch; ++i) {
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, CblasNoTrans,
                    s.transB ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                    a.data() + i * s.strideA, s.k, b.data() + i * s.strideB,
                    s.transB ? s.k : s.n, 0.0f, out.data() + i * s.strideC,
                    s.n);
      else
        cpu::batchedGemm(cpu::Queue{}, one, a.data() + i * s.strideA,
                         b.data() + i * s.strideB, out.data() + i * s.strideC);
    }
  };
  auto single = [&] {
    cpu::batchedGemm(cpu::Queue{}, big, a.data(), b.data(), out.data());
  };
  std::vector<double> tBatched, tLoop, tBig;
  for (int r = -1; r < reps; ++r) {
    const double x = seconds(batched), y = seconds(loop), z = seconds(single);
    if (r >= 0)
      tBatched.push_back(x), tLoop.push_back(y), tBig.push_back(z);
  }
  const double flops = dsc::rt::cpu::gemmFlops(s);
  const double gb = flops / median(tBatched) / 1e9;
  const double gl = flops / median(tLoop) / 1e9;
  const double gg = flops / median(tBig) / 1e9;
  std::printf("%-26s %-4s %5lld %5lld %5lld %5lld %9.2f %9.2f %9.2f %7.1f%% %7.1f%%\n",
              c.name, std::is_same_v<T, float> ? "f32" : "bf16",
              (long long)s.batch, (long long)s.m, (long long)s.n,
              (long long)s.k, gb, gl, gg, 100 * gb / gl, 100 * gb / gg);
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 7;
  std::printf("%d OpenMP threads, %d OpenBLAS threads; median of %d\n",
              omp_get_max_threads(), openblas_get_num_threads(), reps);
  // GPT-2 124M attention at batch 4 x 128 tokens (12 heads of 64): scores
  // Q K^T and the weighted sum P V; at 512 tokens; a [4, 128, 768] input
  // times one broadcast [768, 768] weight.
  const Case cases[] = {
      {"attn scores T=128", 48, 128, 128, 64, true, false},
      {"attn P@V T=128", 48, 128, 64, 128, false, false},
      {"attn scores T=512", 48, 512, 512, 64, true, false},
      {"attn P@V T=512", 48, 512, 64, 512, false, false},
      {"x @ W (broadcast W)", 4, 128, 768, 768, false, true},
  };
  std::printf("%-26s %-4s %5s %5s %5s %5s %9s %9s %9s %8s %8s\n", "case", "type",
              "batch", "m", "n", "k", "batched", "loop", "one GEMM", "vs loop",
              "vs one");
  std::printf("%-26s %-4s %5s %5s %5s %5s %9s %9s %9s\n", "", "", "", "", "",
              "", "GF/s", "GF/s", "GF/s");
  for (const Case &c : cases)
    run<float>(c, reps);
  for (const Case &c : cases)
    run<BFloat16>(c, reps);
  return 0;
}
