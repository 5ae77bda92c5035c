// CPU reductions of the kernel library (dsc/kernels/Reduce.h) on GPT-2 124M
// shapes: GB/s and % of a parallel copy of the same bytes, medians.
//
//   build/runtime/bench/bench-reduce-cpu [repetitions=9]

#include "BenchSupport.h"

#include "dsc/kernels/Reduce.h"

#include <cstdlib>
#include <random>

using namespace dsc::kernels::cpu;

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 9;
  std::printf("threads: %d\n", omp_get_max_threads());
  dsc::bench::printHeader();
  struct Case {
    const char *name;
    int64_t outer, n, inner;
    bool squares;
  };
  const Case cases[] = {
      {"reduceSum bias grad [512,768]->[768]", 1, 512, 768, false},
      {"reduceSum bias grad [512,3072]->[3072]", 1, 512, 3072, false},
      {"reduceSum rows [512,768]->[512]", 512, 768, 1, false},
      {"reduceSum rows [512,50257]->[512]", 512, 50257, 1, false},
      {"sumSquares full [16M]->[1] (grad norm)", 1, 1 << 24, 1, true},
      {"reduceSum columns [16M/768,768]->[768]", 1, (1 << 24) / 768, 768, false},
  };
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> d(-1, 1);
  for (const Case &c : cases) {
    std::vector<float> in(c.outer * c.n * c.inner), out(c.outer * c.inner);
    for (float &x : in)
      x = d(rng);
    double s = dsc::bench::medianSeconds(reps, [&] {
      if (c.squares)
        sumSquares(Queue{}, in.data(), out.data(), c.outer, c.n, c.inner);
      else
        reduceSum(Queue{}, in.data(), out.data(), c.outer, c.n, c.inner);
    });
    dsc::bench::printRow(c.name, int64_t((in.size() + out.size()) * sizeof(float)), s, reps);
  }
  return 0;
}
