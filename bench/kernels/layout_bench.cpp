// CPU embedding and layout kernels of the kernel library (Embedding.h,
// Permute.h) on GPT-2 124M shapes: GB/s and % of a parallel copy of the
// same bytes, medians.
//
//   build/runtime/bench/bench-layout-cpu [repetitions=9]

#include "BenchSupport.h"

#include "dsc/kernels/Embedding.h"
#include "dsc/kernels/Permute.h"

#include <cstdlib>
#include <random>

using namespace dsc::kernels;
using namespace dsc::kernels::cpu;

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 9;
  std::printf("threads: %d\n", omp_get_max_threads());
  dsc::bench::printHeader();
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> d(-1, 1);
  auto random = [&](int64_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = d(rng);
    return v;
  };

  // Token embedding: 512 ids into the 50257 x 768 table.
  const int64_t vocab = 50257, dim = 768, count = 512;
  std::vector<int64_t> ids(count);
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  for (int64_t &id : ids)
    id = pick(rng);
  auto table = random(vocab * dim), dy = random(count * dim);
  std::vector<float> out(count * dim), dtable(vocab * dim);
  double s = dsc::bench::medianSeconds(reps, [&] {
    embeddingForward(Queue{}, table.data(), ids.data(), out.data(), count, vocab, dim);
  });
  dsc::bench::printRow("embeddingForward 512 ids of [50257,768]",
                       2 * count * dim * 4 + count * 8, s, reps);
  s = dsc::bench::medianSeconds(reps, [&] {
    embeddingBackward(Queue{}, dy.data(), ids.data(), dtable.data(), count, vocab, dim);
  });
  // Reads dy, writes the whole table gradient.
  dsc::bench::printRow("embeddingBackward 512 ids -> [50257,768]",
                       (count * dim + vocab * dim) * 4 + count * 8, s, reps);

  // Attention: K^T of [4,12,128,64], and the head split [4,128,12,64] ->
  // [4,12,128,64].
  auto k = random(4 * 12 * 128 * 64);
  std::vector<float> kt(k.size());
  s = dsc::bench::medianSeconds(reps, [&] {
    transpose(Queue{}, k.data(), kt.data(), 4 * 12, 128, 64);
  });
  dsc::bench::printRow("transpose [4,12,128,64] last two", 2 * int64_t(k.size()) * 4, s, reps);
  s = dsc::bench::medianSeconds(reps, [&] {
    permute(Queue{}, k.data(), kt.data(), Dims{4, {4, 128, 12, 64}}, Dims{4, {0, 2, 1, 3}});
  });
  dsc::bench::printRow("permute [4,128,12,64] (0,2,1,3)", 2 * int64_t(k.size()) * 4, s, reps);
  // A large transpose, out of cache: [48, 1024, 1024].
  auto big = random(48LL * 1024 * 1024);
  std::vector<float> bigT(big.size());
  s = dsc::bench::medianSeconds(reps, [&] {
    transpose(Queue{}, big.data(), bigT.data(), 48, 1024, 1024);
  });
  dsc::bench::printRow("transpose [48,1024,1024] last two", 2 * int64_t(big.size()) * 4, s,
                       reps);
  return 0;
}
