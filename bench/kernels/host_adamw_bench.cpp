// ZeRO-Offload's host update: dsc's CPU AdamW (dsc/kernels/Optimizer.h,
// fp32 states, the kernel the host stream runs) on flat buffers holding
// GPT-2 124M's 148 parameter tensors, and the bandwidth bound of the bytes
// it must move, measured in the same run: a STREAM-like kernel with
// AdamW's exact traffic (reads p, g, m, v; writes p, m, v: 28 bytes an
// element) and trivial arithmetic, and an OpenMP memcpy of the same bytes.
// bench/offload_adamw_cpu.py runs it beside torch.optim.AdamW.
//
//   build/runtime/bench/bench-host-adamw [repetitions=5]
//
// Prints one line of JSON: seconds per update (median), the elements, the
// bandwidths (GB/s, bytes read + written, as STREAM counts them).

#include "BenchSupport.h"
#include "dsc/kernels/Optimizer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace dsc::kernels;
using dsc::bench::medianOf;
using dsc::bench::secondsOf;

namespace {

/// Every page touched once by the threads that will use it.
std::vector<float> filled(int64_t n, float value) {
  std::vector<float> v(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i)
    v[std::size_t(i)] = value * float((i % 97) + 1) / 97.0f;
  return v;
}

} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 5;
  const std::vector<int64_t> sizes = dsc::bench::gpt2ParameterSizes();
  int64_t total = 0;
  for (int64_t n : sizes)
    total += n;
  auto param = filled(total, 1.0f), grad = filled(total, 0.1f);
  auto m = filled(total, 0.01f), v = filled(total, 0.001f);
  std::vector<AdamTensor<float>> table;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    table.push_back({param.data() + offset, grad.data() + offset,
                     m.data() + offset, v.data() + offset, nullptr, n, 0});
    offset += n;
  }
  const int64_t count = int64_t(sizes.size());
  const int64_t chunks = assignChunks(table.data(), count);
  const float lr = 1e-4f;
  float step = 1;
  const OptimizerStep s{&lr, &step, nullptr, nullptr, nullptr};
  const AdamConfig adamw = adamConfig(0.9, 0.999, 1e-8, 0.01, true, 1e-4);

  // AdamW's traffic with trivial arithmetic: the bound of a kernel that
  // must move these bytes.
  float *p = param.data(), *m0 = m.data(), *v0 = v.data();
  const float *g = grad.data();
  auto stream = [&] {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < total; ++i) {
      const float gi = g[i];
      m0[i] = m0[i] + gi;
      v0[i] = v0[i] + gi;
      p[i] = p[i] - gi;
    }
  };
  const std::size_t copyBytes = std::size_t(total) * 14;
  std::vector<char> from(copyBytes, 1), to(copyBytes, 0);
  auto copy = [&] {
    const int64_t block = int64_t(1) << 20;
    const int64_t blocks = int64_t((copyBytes + block - 1) / block);
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const std::size_t begin = std::size_t(b * block);
      std::memcpy(to.data() + begin, from.data() + begin,
                  std::min<std::size_t>(std::size_t(block), copyBytes - begin));
    }
  };
  auto adam = [&] {
    cpu::adamUpdate({}, table.data(), count, chunks, adamw, s);
    step += 1;
  };
  adam(); // warm-up
  stream();
  copy();
  std::vector<double> tAdam, tStream, tCopy;
  for (int r = 0; r < reps; ++r) { // interleaved
    tAdam.push_back(secondsOf(adam));
    tStream.push_back(secondsOf(stream));
    tCopy.push_back(secondsOf(copy));
  }
  const double traffic = 28.0 * double(total);
  std::printf("{\"elements\": %lld, \"tensors\": %zu, \"threads\": %d, "
              "\"adamw_s\": %.6f, \"stream_s\": %.6f, \"copy_s\": %.6f, "
              "\"stream_GBps\": %.3f, \"copy_GBps\": %.3f}\n",
              (long long)total, sizes.size(), omp_get_max_threads(),
              medianOf(tAdam), medianOf(tStream), medianOf(tCopy),
              traffic / medianOf(tStream) / 1e9, traffic / medianOf(tCopy) / 1e9);
  return 0;
}
