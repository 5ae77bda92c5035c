// The CPU optimizer kernels (dsc/kernels/Optimizer.h) on GPT-2 124M's 148
// parameter tensors (124,439,808 elements, lm_head tied to wte), beside an
// OpenMP-parallel memcpy of the same traffic and an OpenMP-parallel read
// (a sum of 64-bit words) of the gradients, measured in the same run: the
// kernels are memory-bound, so the copy's bandwidth is the updates'
// roofline and the read's that of the reductions, which only read.
// Medians of several repetitions, interleaved, after a warm-up.
//
//   build/runtime/bench/bench-kernels-optimizer [repetitions=7]
//
// Traffic per element (bytes read + written): AdamW fp32 16 + 12; AdamW
// with bf16 gradients and bf16 parameter copy 14 + 14; SGD with momentum
// fp32 12 + 8; sum of squares and the non-finite check read the gradient.

#include "BenchSupport.h"
#include "dsc/kernels/Optimizer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

/// Every page written once, in parallel, so that the timed runs see no
/// page faults and memory spread as the kernels' threads will touch it.
template <typename T> std::vector<T> filled(int64_t n, float value) {
  std::vector<T> v(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    v[std::size_t(i)] = T(value * float((i % 97) + 1) / 97.0f);
  return v;
}

/// An OpenMP-parallel memcpy of `bytes`, in the static chunks the kernels'
/// loops use.
void parallelCopy(char *to, const char *from, std::size_t bytes) {
  const int64_t block = int64_t(1) << 20;
  const int64_t blocks = int64_t((bytes + block - 1) / block);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const std::size_t begin = std::size_t(b * block);
    std::memcpy(to + begin, from + begin,
                std::min<std::size_t>(std::size_t(block), bytes - begin));
  }
}

/// The words of `bytes` at `from` summed on OpenMP threads: a read of
/// the memory at the machine's read bandwidth.
uint64_t parallelRead(const char *from, std::size_t bytes) {
  const uint64_t *words = reinterpret_cast<const uint64_t *>(from);
  const int64_t n = int64_t(bytes / 8);
  uint64_t sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += words[i];
  return sum;
}

struct Result {
  const char *name;
  double traffic; // bytes per call
  bool readOnly;  // roofline: the read, else the copy
};

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 7;
  const std::vector<int64_t> sizes = dsc::bench::gpt2ParameterSizes();
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n;
  std::printf("GPT-2 124M: %zu tensors, %lld elements; %d OpenMP threads; "
              "median of %d\n",
              sizes.size(), (long long)total, omp_get_max_threads(), reps);

  // One flat buffer per state, the tensors laid out back to back (as the
  // runtime's arenas hold them); the table points into them.
  auto param = filled<float>(total, 1.0f), m = filled<float>(total, 0.01f);
  auto v = filled<float>(total, 0.001f), grad = filled<float>(total, 0.1f);
  auto grad16 = filled<BFloat16>(total, 0.1f), copy16 = filled<BFloat16>(total, 0.0f);
  std::vector<AdamTensor<float>> adam32;
  std::vector<AdamTensor<BFloat16>> adam16;
  std::vector<SgdTensor<float>> sgd32;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    adam32.push_back({param.data() + offset, grad.data() + offset,
                      m.data() + offset, v.data() + offset, nullptr, n, 0});
    adam16.push_back({param.data() + offset, grad16.data() + offset,
                      m.data() + offset, v.data() + offset,
                      copy16.data() + offset, n, 0});
    sgd32.push_back({param.data() + offset, grad.data() + offset,
                     m.data() + offset, nullptr, n, 0});
    offset += n;
  }
  const int64_t count = int64_t(sizes.size());
  const int64_t chunks = assignChunks(adam32.data(), count);
  assignChunks(adam16.data(), count);
  assignChunks(sgd32.data(), count);
  std::vector<char> workspace(sumSquaresWorkspaceBytes(count, chunks));

  // The copy's source and destination: 14 bytes per element each way, the
  // largest kernel's traffic (AdamW with bf16 gradients and copy, 28 B).
  const std::size_t copyBytes = std::size_t(total) * 14;
  auto from = filled<char>(int64_t(copyBytes), 1.0f);
  auto to = filled<char>(int64_t(copyBytes), 0.0f);

  const float lr = 1e-4f, unscale = 1.0f / 1024, clip = 0.5f;
  float step = 1;
  const uint8_t noSkip = 0;
  const OptimizerStep s{&lr, &step, &unscale, &clip, &noSkip};
  const AdamConfig adamw = adamConfig(0.9, 0.95, 1e-8, 0.1, true, 1e-4);
  const SgdConfig sgd = sgdConfig(0.9, 0.0);
  float sum = 0;
  uint8_t found = 0;
  uint64_t words = 0;
  const double n = double(total);
  struct Case {
    Result result;
    std::function<void()> run;
  };
  std::vector<Case> cases = {
      {{"copy (memcpy, OpenMP)", 2.0 * double(copyBytes), false},
       [&] { parallelCopy(to.data(), from.data(), copyBytes); }},
      {{"read (OpenMP)", 4 * n, true},
       [&] {
         words += parallelRead(reinterpret_cast<const char *>(grad.data()),
                               std::size_t(4 * total));
       }},
      {{"adamw fp32", 28 * n, false},
       [&] { cpu::adamUpdate({}, adam32.data(), count, chunks, adamw, s); }},
      {{"adamw bf16 grad+copy", 28 * n, false},
       [&] { cpu::adamUpdate({}, adam16.data(), count, chunks, adamw, s); }},
      {{"sgd momentum fp32", 20 * n, false},
       [&] { cpu::sgdUpdate({}, sgd32.data(), count, chunks, sgd, s); }},
      {{"sum of squares fp32", 4 * n, true},
       [&] {
         cpu::multiTensorSumSquares({}, adam32.data(), count, chunks, &unscale,
                                    &sum, nullptr, workspace.data());
       }},
      {{"sum of squares bf16", 2 * n, true},
       [&] {
         cpu::multiTensorSumSquares({}, adam16.data(), count, chunks, &unscale,
                                    &sum, nullptr, workspace.data());
       }},
      {{"non-finite bf16", 2 * n, true},
       [&] { cpu::multiTensorNonFinite({}, adam16.data(), count, chunks, &found); }},
  };
  // Interleaved repetitions: every case sees the same machine state.
  std::vector<std::vector<double>> times(cases.size());
  for (int r = -1; r < reps; ++r)
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const double t = seconds(cases[c].run);
      step += 1;
      if (r >= 0)
        times[c].push_back(t);
    }
  const double copyRate = cases[0].result.traffic / median(times[0]);
  const double readRate = cases[1].result.traffic / median(times[1]);
  std::printf("%-24s %11s %9s %8s %8s %9s\n", "kernel", "traffic MB", "ms",
              "GB/s", "% copy", "% roof");
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const double t = median(times[c]);
    const double rate = cases[c].result.traffic / t;
    const double roof = cases[c].result.readOnly ? readRate : copyRate;
    std::printf("%-24s %11.1f %9.2f %8.2f %7.1f%% %5.1f%% %s\n",
                cases[c].result.name, cases[c].result.traffic / 1e6, t * 1e3,
                rate / 1e9, 100.0 * rate / copyRate, 100.0 * rate / roof,
                cases[c].result.readOnly ? "of read" : "of copy");
  }
  std::printf("(checksums %g %d %llu)\n", double(sum), int(found),
              (unsigned long long)words);
  return 0;
}
