// The kernel library's CPU attention (dsc/kernels/Attention.h), forward and
// backward, on GPT-2's causal shapes, beside its GEMM roofline measured in
// the same run: OpenBLAS's cblas_sgemm on one product of the same FLOPs
// ([B*H*T, D] x [D, T]), what the scores and P@V products cost at best
// when materialised. FLOPs count the visible (causal) scores only: the
// forward 4*B*H*D*T*(T+1)/2 (scores and P@V), the backward 2.5 times that
// (q.k recomputed, dOut.v, dq, dk, dv). Medians of several repetitions,
// interleaved, after a warm-up.
//
//   build/bench/bench-kernels-attention [repetitions=7]

#include "BenchSupport.h"
#include "dsc/kernels/Attention.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace dsc::kernels::cpu;
using dsc::bench::medianOf;
using dsc::bench::secondsOf;

namespace {

struct Shape {
  const char *name;
  int64_t batch, heads, tokens, headDim;
};

void run(const Shape &s, int reps) {
  const int64_t B = s.batch, H = s.heads, T = s.tokens, D = s.headDim;
  const int64_t n = B * H * T * D;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> q(n), k(n), v(n), dOut(n), out(n), lse(B * H * T), dq(n),
      dk(n), dv(n), scores(B * H * T * T);
  for (auto *x : {&q, &k, &v, &dOut})
    for (float &e : *x)
      e = normal(rng);
  const double scale = 1.0 / 8.0;
  const float *noMask = nullptr;
  auto forward = [&] {
    attentionForward(Queue{}, q.data(), k.data(), v.data(), noMask, 0, 0, 0, 0,
                     out.data(), lse.data(), B, H, T, T, D, D, scale, true);
  };
  auto backward = [&] {
    attentionBackward(Queue{}, q.data(), k.data(), v.data(), out.data(),
                      dOut.data(), lse.data(), noMask, 0, 0, 0, 0, dq.data(),
                      dk.data(), dv.data(), B, H, T, T, D, D, scale, true);
  };
  // The roofline: one [B*H*T, D] x [D, T] product.
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(B * H * T), int(T),
                int(D), 1.0f, q.data(), int(D), k.data(), int(D), 0.0f,
                scores.data(), int(T));
  };
  forward();
  backward();
  gemm();
  std::vector<double> f, b, g;
  for (int r = 0; r < reps; ++r) {
    f.push_back(secondsOf(forward));
    b.push_back(secondsOf(backward));
    g.push_back(secondsOf(gemm));
  }
  const double visible = double(B * H * D) * double(T) * double(T + 1) / 2;
  const double fFlops = 4 * visible, bFlops = 2.5 * fFlops;
  const double gemmRate = 2.0 * double(B * H * T) * double(T) * double(D) / medianOf(g);
  const double fRate = fFlops / medianOf(f), bRate = bFlops / medianOf(b);
  std::printf("| %s | %lld×%lld×%lld×%lld | %.3f | %.1f | %.3f | %.1f | %.1f | %.0f %% | %.0f %% |\n",
              s.name, (long long)B, (long long)H, (long long)T, (long long)D,
              medianOf(f) * 1e3, fRate * 1e-9, medianOf(b) * 1e3, bRate * 1e-9,
              gemmRate * 1e-9, 100 * fRate / gemmRate, 100 * bRate / gemmRate);
}

} // namespace

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  std::printf("%d OpenMP threads, medians of %d\n", omp_get_max_threads(), reps);
  std::printf("| shape | B×H×T×D | forward ms | GFLOP/s | backward ms | GFLOP/s | "
              "sgemm GFLOP/s | forward / sgemm | backward / sgemm |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  run({"GPT-2 124M, batch 4 × 128", 4, 12, 128, 64}, reps);
  run({"GPT-2 124M, batch 1 × 1024", 1, 12, 1024, 64}, reps);
  return 0;
}
