// CPU routing kernels of the kernel library (Moe.h) on a GPT-2-width MoE
// layer: 8192 tokens of width 768, top-2 over 8 experts at capacity factor
// 1.25 (C = 2560), f32 and bf16. GB/s and % of a parallel copy of the same
// bytes, medians. Bytes: what each kernel must read and write (the kept
// routes' rows, the results, the indices).
//
//   build/runtime/bench/bench-moe-cpu [repetitions=9]

#include "BenchSupport.h"

#include "dsc/kernels/Moe.h"

#include <cstdlib>
#include <random>
#include <string>

using namespace dsc::kernels;
using namespace dsc::kernels::cpu;

namespace {

const MoeShape kShape{8192, 2, 768, 8, 2560};

std::vector<int64_t> randomExperts(std::mt19937 &rng) {
  std::vector<int64_t> experts(kShape.routeCount());
  std::uniform_int_distribution<int64_t> pick(0, kShape.experts - 1);
  for (int64_t s = 0; s < kShape.tokens; ++s) {
    experts[s * 2] = pick(rng);
    do
      experts[s * 2 + 1] = pick(rng);
    while (experts[s * 2 + 1] == experts[s * 2]);
  }
  return experts;
}

template <typename T> void benchRows(const char *type, const std::vector<int64_t> &slots,
                                     int64_t kept, int reps) {
  const int64_t S = kShape.tokens, M = kShape.width, rows = kShape.slotCount();
  const int64_t sz = sizeof(T), routes = kShape.routeCount();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  auto random = [&](int64_t n) {
    std::vector<T> v(n);
    for (T &x : v)
      x = T(d(rng));
    return v;
  };
  auto x = random(S * M), slotted = random(rows * M), w = random(routes);
  std::vector<T> dispatched(rows * M), combined(S * M), dots(routes);
  std::string name = std::string("moeDispatch ") + type + " weighted";
  double s = dsc::bench::medianSeconds(reps, [&] {
    moeDispatch(Queue{}, x.data(), slots.data(), w.data(), dispatched.data(), kShape);
  });
  dsc::bench::printRow(name.c_str(), (kept + rows) * M * sz + routes * (8 + sz), s, reps);
  name = std::string("moeCombine ") + type + " weighted";
  s = dsc::bench::medianSeconds(reps, [&] {
    moeCombine(Queue{}, slotted.data(), slots.data(), w.data(), combined.data(), kShape);
  });
  dsc::bench::printRow(name.c_str(), (kept + S) * M * sz + routes * (8 + sz), s, reps);
  name = std::string("moeRouteDot ") + type;
  s = dsc::bench::medianSeconds(reps, [&] {
    moeRouteDot(Queue{}, x.data(), slotted.data(), slots.data(), dots.data(), kShape);
  });
  dsc::bench::printRow(name.c_str(), (kept + S) * M * sz + routes * (8 + sz), s, reps);
}

} // namespace

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 9;
  std::printf("threads: %d; %lld tokens x %lld, top-%lld over %lld experts, capacity %lld\n",
              omp_get_max_threads(), (long long)kShape.tokens, (long long)kShape.width,
              (long long)kShape.choices, (long long)kShape.experts,
              (long long)kShape.capacity);
  dsc::bench::printHeader();
  std::mt19937 rng(0);
  auto experts = randomExperts(rng);
  std::vector<float> priority(kShape.routeCount());
  std::uniform_real_distribution<float> u(0, 1);
  for (float &p : priority)
    p = u(rng);
  std::vector<int64_t> slots(kShape.routeCount()), counts(kShape.experts);
  const int64_t indexBytes = 2 * kShape.routeCount() * 8;
  double s = dsc::bench::medianSeconds(reps, [&] {
    moeSlots(Queue{}, experts.data(), nullptr, slots.data(), counts.data(), kShape);
  });
  dsc::bench::printRow("moeSlots top-2", indexBytes, s, reps);
  s = dsc::bench::medianSeconds(reps, [&] {
    moeSlots(Queue{}, experts.data(), priority.data(), slots.data(), counts.data(), kShape);
  });
  dsc::bench::printRow("moeSlots top-2 by priority", indexBytes + kShape.routeCount() * 4, s,
                       reps);
  moeSlots(Queue{}, experts.data(), nullptr, slots.data(), counts.data(), kShape);
  int64_t kept = 0;
  for (int64_t slot : slots)
    kept += slot >= 0;
  std::printf("routes kept: %lld of %lld\n", (long long)kept, (long long)kShape.routeCount());
  benchRows<float>("f32", slots, kept, reps);
  benchRows<dsc::rt::BFloat16>("bf16", slots, kept, reps);
  return 0;
}
