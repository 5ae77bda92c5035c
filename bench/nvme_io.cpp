// The NVMe tier's engine (dsc/runtime/NvmeStore.h) against fio on the same
// file, block size, queue depth and I/O engine (io_uring, O_DIRECT): the
// store writes and reads one state of SIZE MiB as one request; fio writes
// and reads the store's own file sequentially with bs=BLOCK and
// iodepth=DEPTH. Alternating, median GB/s of REPS each. A last pair of rows
// has the engine move a buffer that is not page-aligned, through its bounce
// buffers (no fio counterpart).
//
//   build/runtime/bench/bench-nvme-io DIR [size_mib=1024] [reps=5]
//                                     [depth=8] [block_kib=1024]

#include "dsc/runtime/Error.h"
#include "dsc/runtime/NvmeStore.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

double seconds(const std::function<void()> &body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

/// fio's bandwidth (bytes/s) of one sequential pass over `file`.
double fioBytesPerSecond(const std::string &file, bool write, size_t bytes,
                         size_t block, unsigned depth) {
  std::string command =
      "fio --name=nvme --filename=" + file +
      " --rw=" + (write ? "write" : "read") +
      " --bs=" + std::to_string(block) + " --iodepth=" + std::to_string(depth) +
      " --size=" + std::to_string(bytes) +
      " --ioengine=io_uring --direct=1 --thread --output-format=json 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    throw dsc::rt::Error("cannot run fio");
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;)
    out.append(buffer, n);
  int status = ::pclose(pipe);
  size_t json = out.find('{');
  if (status != 0 || json == std::string::npos)
    throw dsc::rt::Error("fio failed (is it installed?):\n" + out);
  auto report = nlohmann::json::parse(out.substr(json));
  return report["jobs"][0][write ? "write" : "read"]["bw_bytes"].get<double>();
}

} // namespace

int main(int argc, char **argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench-nvme-io DIR [size_mib=1024] [reps=5] "
                         "[depth=8] [block_kib=1024]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const size_t bytes = (argc > 2 ? std::atol(argv[2]) : 1024) << 20;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const unsigned depth = argc > 4 ? std::atoi(argv[4]) : 8;
  const size_t block = (argc > 5 ? std::atol(argv[5]) : 1024) << 10;

  dsc::rt::NvmeOptions options;
  options.path = dir;
  options.mode = dsc::rt::NvmeIoMode::Direct;
  options.queueDepth = depth;
  options.blockBytes = block;
  dsc::rt::NvmeStore store(options);
  store.addState(0, bytes);
  // One page more, for the unaligned rows.
  char *buffer = static_cast<char *>(
      std::aligned_alloc(dsc::rt::kDirectAlignment, bytes + 4096));
  for (size_t i = 0; i < bytes + 4096; ++i)
    buffer[i] = static_cast<char>(i * 131 + 7);

  std::printf("file: %s, %zu MiB, block %zu KiB, queue depth %u, O_DIRECT, "
              "%d repetitions (median)\n",
              store.file().c_str(), bytes >> 20, block >> 10, depth, reps);
  std::vector<double> engineWrite, engineRead, fioWrite, fioRead, bounceWrite,
      bounceRead;
  auto rate = [&](double s) { return double(bytes) / s; };
  // Odd repetitions run fio first, so that neither side always follows
  // the other's writes.
  auto pair = [&](bool fioFirst, const std::function<void()> &engine,
                  const std::function<void()> &fio) {
    if (fioFirst)
      fio();
    engine();
    if (!fioFirst)
      fio();
  };
  for (int r = 0; r < reps; ++r) {
    pair(r % 2, [&] {
      engineWrite.push_back(rate(
          seconds([&] { store.wait(store.write(0, 0, buffer, bytes)); })));
    }, [&] {
      fioWrite.push_back(
          fioBytesPerSecond(store.file(), true, bytes, block, depth));
    });
    pair(r % 2, [&] {
      engineRead.push_back(
          rate(seconds([&] { store.wait(store.read(0, 0, buffer, bytes)); })));
    }, [&] {
      fioRead.push_back(
          fioBytesPerSecond(store.file(), false, bytes, block, depth));
    });
    bounceWrite.push_back(rate(
        seconds([&] { store.wait(store.write(0, 0, buffer + 64, bytes)); })));
    bounceRead.push_back(rate(
        seconds([&] { store.wait(store.read(0, 0, buffer + 64, bytes)); })));
  }
  // The ratio of each repetition's pair, run back to back, as well as the
  // ratio of the medians: on a shared machine the load changes between
  // repetitions more than within a pair.
  std::printf("| direction | engine GB/s | fio GB/s | ratio of medians | "
              "median of pair ratios |\n|---|---|---|---|---|\n");
  auto row = [](const char *name, const std::vector<double> &engine,
                const std::vector<double> &fio) {
    std::vector<double> ratios;
    for (size_t i = 0; i < engine.size(); ++i)
      ratios.push_back(engine[i] / fio[i]);
    std::printf("| %s | %.3f | %.3f | %.3f | %.3f |\n", name,
                median(engine) / 1e9, median(fio) / 1e9,
                median(engine) / median(fio), median(ratios));
  };
  row("write", engineWrite, fioWrite);
  row("read", engineRead, fioRead);
  row("write, unaligned buffer (bounced)", bounceWrite, fioWrite);
  row("read, unaligned buffer (bounced)", bounceRead, fioRead);
  std::free(buffer);
  return 0;
} catch (const std::exception &error) {
  std::fprintf(stderr, "bench-nvme-io: error: %s\n", error.what());
  return 1;
}
