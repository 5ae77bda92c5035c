// CUDA routing kernels of the kernel library (dsc/kernels/cuda/Moe.cuh) on
// MoE layers of GPT-2 width (8192 tokens) and of a large batch (1M
// tokens, for moeSlots), top-2 over 8 experts at capacity factor 1.25,
// f32 and bf16: GB/s and % of a device-to-device cudaMemcpyAsync of the
// same bytes, medians of CUDA-event timings in one process. Needs a GPU.
//
//   build/runtime/bench/bench-moe-cuda [repetitions=21]

#include "CudaBenchSupport.h"

#include "dsc/kernels/cuda/Moe.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

using namespace dsc::kernels;
namespace gpu = dsc::kernels::cuda;

namespace {



template <typename T> T *upload(const std::vector<T> &h) {
  T *p = nullptr;
  gpu::check(cudaMalloc(&p, h.size() * sizeof(T)), "cudaMalloc");
  gpu::check(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return p;
}

/// Top-2 experts (distinct) and uniform priorities for `shape`.
std::vector<int64_t> randomExperts(const MoeShape &shape, std::vector<float> &priority) {
  std::mt19937 rng(0);
  std::uniform_int_distribution<int64_t> pick(0, shape.experts - 1);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<int64_t> experts(shape.routeCount());
  for (int64_t s = 0; s < shape.tokens; ++s) {
    experts[s * 2] = pick(rng);
    do
      experts[s * 2 + 1] = pick(rng);
    while (experts[s * 2 + 1] == experts[s * 2]);
  }
  priority.resize(experts.size());
  for (float &p : priority)
    p = u(rng);
  return experts;
}

template <typename T>
void benchRows(const char *type, const MoeShape &shape, const int64_t *slots, int64_t kept,
               gpu::IndexFault *fault, int reps) {
  const int64_t S = shape.tokens, M = shape.width, rows = shape.slotCount();
  const int64_t sz = sizeof(T), routes = shape.routeCount();
  T *x = nullptr, *slotted = nullptr, *w = nullptr, *out = nullptr;
  gpu::check(cudaMalloc(&x, S * M * sz), "cudaMalloc");
  gpu::check(cudaMalloc(&slotted, rows * M * sz), "cudaMalloc");
  gpu::check(cudaMalloc(&w, routes * sz), "cudaMalloc");
  gpu::check(cudaMalloc(&out, std::max(rows, S) * M * sz), "cudaMalloc");
  cudaMemset(x, 0, S * M * sz);
  cudaMemset(slotted, 0, rows * M * sz);
  cudaMemset(w, 0, routes * sz);
  using dsc::bench::medianMs;
  auto print = [&](const std::string &name, int64_t bytes, double ms) {
    dsc::bench::printCudaRow(name.c_str(), bytes, ms, reps);
  };
  double ms = medianMs(reps, [&] { gpu::moeDispatch(nullptr, x, slots, w, out, shape, fault); });
  print(std::string("moeDispatch ") + type + " weighted", (kept + rows) * M * sz + routes * (8 + sz),
        ms);
  ms = medianMs(reps, [&] { gpu::moeCombine(nullptr, slotted, slots, w, out, shape, fault); });
  print(std::string("moeCombine ") + type + " weighted", (kept + S) * M * sz + routes * (8 + sz),
        ms);
  ms = medianMs(reps, [&] { gpu::moeRouteDot(nullptr, x, slotted, slots, out, shape, fault); });
  print(std::string("moeRouteDot ") + type, (kept + S) * M * sz + routes * (8 + sz), ms);
  cudaFree(x);
  cudaFree(slotted);
  cudaFree(w);
  cudaFree(out);
}

} // namespace

static int run(int argc, char **argv) {
  int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 21;
  cudaDeviceProp prop;
  gpu::check(cudaGetDeviceProperties(&prop, 0), "no CUDA device");
  std::printf("device: %s\n", prop.name);
  std::printf("%-44s %10s %9s %9s %9s %7s\n", "kernel (shape)", "MB moved", "median ms",
              "GB/s", "copy GB/s", "% copy");
  gpu::IndexFault *fault = nullptr;
  gpu::check(cudaMalloc(&fault, sizeof *fault), "cudaMalloc");
  cudaMemset(fault, 0, sizeof *fault);
  for (int64_t tokens : {int64_t(8192), int64_t(1) << 20}) {
    const MoeShape shape{tokens, 2, 768, 8, tokens * 2 * 5 / 4 / 8};
    std::vector<float> priority;
    auto experts = randomExperts(shape, priority);
    int64_t *dExperts = upload(experts), *dSlots = upload(experts),
            *dCounts = upload(std::vector<int64_t>(shape.experts));
    float *dPriority = upload(priority);
    const int64_t indexBytes = 2 * shape.routeCount() * 8;
    std::string at = " " + std::to_string(tokens) + " tokens";
    double ms = dsc::bench::medianMs(reps, [&] {
      gpu::moeSlots(nullptr, dExperts, nullptr, dSlots, dCounts, shape, fault);
    });
    dsc::bench::printCudaRow(("moeSlots top-2" + at).c_str(), indexBytes, ms, reps);
    ms = dsc::bench::medianMs(reps, [&] {
      gpu::moeSlots(nullptr, dExperts, dPriority, dSlots, dCounts, shape, fault);
    });
    dsc::bench::printCudaRow(("moeSlots top-2 by priority" + at).c_str(),
                             indexBytes + shape.routeCount() * 4, ms, reps);
    gpu::moeSlots(nullptr, dExperts, nullptr, dSlots, dCounts, shape, fault);
    std::vector<int64_t> slots(shape.routeCount());
    gpu::check(cudaMemcpy(slots.data(), dSlots, slots.size() * 8, cudaMemcpyDeviceToHost),
               "download");
    int64_t kept = std::count_if(slots.begin(), slots.end(), [](int64_t s) { return s >= 0; });
    if (tokens == 8192) {
      benchRows<float>("f32", shape, dSlots, kept, fault, reps);
      benchRows<__nv_bfloat16>("bf16", shape, dSlots, kept, fault, reps);
    }
    cudaFree(dExperts);
    cudaFree(dSlots);
    cudaFree(dCounts);
    cudaFree(dPriority);
  }
  cudaFree(fault);
  return 0;
}

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "bench-moe-cuda: error: %s\n", e.what());
    return 1;
  }
}
