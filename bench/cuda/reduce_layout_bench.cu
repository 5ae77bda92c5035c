// CUDA kernels of the kernel library (dsc/kernels/cuda/Reduce.cuh,
// Embedding.cuh, Permute.cuh) on GPT-2 124M shapes: GB/s and % of a
// device-to-device cudaMemcpyAsync of the same bytes, medians of CUDA-event
// timings in one process. Needs a GPU; built where the CUDA language is.
//
//   build/runtime/bench/bench-reduce-layout-cuda [repetitions=21]

#include "CudaBenchSupport.h"

#include "dsc/kernels/cuda/Embedding.cuh"
#include "dsc/kernels/cuda/Permute.cuh"
#include "dsc/kernels/cuda/Reduce.cuh"
#include "dsc/kernels/cuda/Routing.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <random>
#include <vector>

using namespace dsc::kernels;
namespace gpu = dsc::kernels::cuda;

namespace {

using dsc::bench::medianMs;
constexpr auto row = dsc::bench::printCudaRow;

/// Device buffer of n floats, uniform in [-1, 1).
float *randomFloats(int64_t n) {
  std::vector<float> h(n);
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> d(-1, 1);
  for (float &x : h)
    x = d(rng);
  float *p = nullptr;
  gpu::check(cudaMalloc(&p, n * sizeof(float)), "cudaMalloc");
  gpu::check(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice), "upload");
  return p;
}


} // namespace

static int run(int argc, char **argv) {
  int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 21;
  cudaDeviceProp prop;
  gpu::check(cudaGetDeviceProperties(&prop, 0), "no CUDA device");
  std::printf("device: %s\n", prop.name);
  std::printf("%-44s %10s %9s %9s %9s %7s\n", "kernel (shape)", "MB moved", "median ms",
              "GB/s", "copy GB/s", "% copy");
  struct Case {
    const char *name;
    int64_t outer, n, inner;
    bool squares;
  };
  const Case cases[] = {
      {"reduceSum bias grad [512,768]->[768]", 1, 512, 768, false},
      {"reduceSum bias grad [512,3072]->[3072]", 1, 512, 3072, false},
      {"reduceSum bias grad [8192,768]->[768]", 1, 8192, 768, false},
      {"reduceSum rows [8192,768]->[8192]", 8192, 768, 1, false},
      {"sumSquares full [124M]->[1] (grad norm)", 1, 124 << 20, 1, true},
  };
  for (const Case &c : cases) {
    float *in = randomFloats(c.outer * c.n * c.inner), *out = randomFloats(c.outer * c.inner);
    double ms = medianMs(reps, [&] {
      if (c.squares)
        gpu::sumSquares<float>(nullptr, in, out, c.outer, c.n, c.inner);
      else
        gpu::reduceSum<float>(nullptr, in, out, c.outer, c.n, c.inner);
    });
    row(c.name, (c.outer * c.n * c.inner + c.outer * c.inner) * 4, ms, reps);
    cudaFree(in);
    cudaFree(out);
  }

  const int64_t vocab = 50257, dim = 768;
  for (int64_t count : {int64_t(512), int64_t(8192)}) {
    std::vector<int64_t> ids(count);
    std::mt19937 rng(1);
    std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
    for (int64_t &id : ids)
      id = pick(rng);
    int64_t *dIds = nullptr;
    gpu::IndexFault *fault = nullptr;
    gpu::check(cudaMalloc(&dIds, count * 8), "cudaMalloc");
    gpu::check(cudaMalloc(&fault, sizeof *fault), "cudaMalloc");
    cudaMemset(fault, 0, sizeof *fault);
    cudaMemcpy(dIds, ids.data(), count * 8, cudaMemcpyHostToDevice);
    float *table = randomFloats(vocab * dim), *out = randomFloats(count * dim);
    double ms = medianMs(reps, [&] {
      gpu::embeddingForward<float>(nullptr, table, dIds, out, count, vocab, dim, fault);
    });
    char name[64];
    std::snprintf(name, sizeof name, "embeddingForward %lld ids of [50257,768]",
                  (long long)count);
    row(name, 2 * count * dim * 4 + count * 8, ms, reps);
    ms = medianMs(reps, [&] {
      gpu::embeddingBackward<float>(nullptr, out, dIds, table, count, vocab, dim, fault);
    });
    std::snprintf(name, sizeof name, "embeddingBackward %lld ids -> [50257,768]",
                  (long long)count);
    row(name, (count * dim + vocab * dim) * 4 + count * 8, ms, reps);
    // The same gradient as the IR writes it: a scatter-add of dy into
    // zeros at the ids broadcast along each row (bucketed on the device).
    std::vector<int64_t> rowsOfIds(count * dim);
    for (int64_t p = 0; p < count * dim; ++p)
      rowsOfIds[p] = ids[p / dim];
    int64_t *dIndex = nullptr;
    gpu::check(cudaMalloc(&dIndex, count * dim * 8), "cudaMalloc");
    cudaMemcpy(dIndex, rowsOfIds.data(), count * dim * 8, cudaMemcpyHostToDevice);
    float *zeros = randomFloats(vocab * dim);
    ms = medianMs(reps, [&] {
      gpu::scatterAdd<float>(nullptr, zeros, dIndex, out, table, Dims{2, {vocab, dim}},
                             Dims{2, {count, dim}}, Dims{2, {count, dim}}, 0, fault);
    });
    std::snprintf(name, sizeof name, "scatterAdd %lld id rows -> [50257,768]",
                  (long long)count);
    row(name, (count * dim * 2 + 2 * vocab * dim) * 4 + count * dim * 8, ms, reps);
    cudaFree(zeros);
    cudaFree(dIndex);
    gpu::IndexFault seen;
    gpu::check(cudaMemcpy(&seen, fault, sizeof seen, cudaMemcpyDeviceToHost), "index check");
    if (seen.state != 0)
      throw std::runtime_error("a benchmark id was outside the table");
    cudaFree(table);
    cudaFree(out);
    cudaFree(dIds);
    cudaFree(fault);
  }

  for (int64_t batch : {int64_t(4), int64_t(16)}) {
    int64_t n = batch * 12 * 1024 * 64;
    float *k = randomFloats(n), *kt = randomFloats(n);
    double ms = medianMs(reps, [&] { gpu::transpose<float>(nullptr, k, kt, batch * 12, 1024, 64); });
    char name[64];
    std::snprintf(name, sizeof name, "transpose [%lld,12,1024,64] last two", (long long)batch);
    row(name, 2 * n * 4, ms, reps);
    ms = medianMs(reps, [&] {
      gpu::permute<float>(nullptr, k, kt, Dims{4, {batch, 1024, 12, 64}}, Dims{4, {0, 2, 1, 3}});
    });
    std::snprintf(name, sizeof name, "permute [%lld,1024,12,64] (0,2,1,3)", (long long)batch);
    row(name, 2 * n * 4, ms, reps);
    cudaFree(k);
    cudaFree(kt);
  }
  return 0;
}

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench-reduce-layout-cuda: error: %s\n", e.what());
    return 1;
  }
}
