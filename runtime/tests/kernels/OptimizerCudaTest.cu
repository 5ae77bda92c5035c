//===- OptimizerCudaTest.cu - the CUDA optimizer kernels vs the CPU ones --===//
//
// Each CUDA kernel of the optimizer family against the CPU library kernel
// (itself tested against references in OptimizerTest.cpp) on the same
// tables: bit for bit where both compute the same bias corrections (betas
// whose powers are exact in float, and SGD, which has none), within the
// error of powf otherwise (betas whose powers are exact, 1/2 and 1/4, make
// the bias corrections identical). Skips without a GPU.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Optimizer.h"
#include "dsc/kernels/cuda/Optimizer.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <type_traits>
#include <vector>

using namespace dsc::kernels;
using dsc::rt::BFloat16;
using dsc::rt::Half;

namespace {

bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_DEVICE()                                                       \
  if (!haveDevice())                                                           \
  GTEST_SKIP() << "no CUDA device"

void ok(cudaError_t status) {
  ASSERT_EQ(status, cudaSuccess) << cudaGetErrorString(status);
}

/// The CUDA element type of a CPU one.
template <typename T> struct DeviceType { using type = float; };
template <> struct DeviceType<BFloat16> { using type = __nv_bfloat16; };
template <> struct DeviceType<Half> { using type = __half; };

uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// Device memory of `bytes`, freed at the end of the scope.
struct DeviceBuffer {
  void *p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) {
    if (cudaMalloc(&p, bytes ? bytes : 16) != cudaSuccess)
      p = nullptr;
  }
  ~DeviceBuffer() { cudaFree(p); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  template <typename T> T *as(std::size_t byteOffset = 0) const {
    return reinterpret_cast<T *>(static_cast<char *>(p) + byteOffset);
  }
};

const std::vector<int64_t> kSizes = {0, 1, 3, kOptimizerChunk + 7, 0,
                                     2 * kOptimizerChunk, 70001, 5, 0};

/// The arrays of every tensor, on the host (CPU library) and on the device,
/// the device ones at `misalign` elements past an aligned address (1:
/// no 128-bit access is possible).
template <typename T> struct Tensors {
  using D = typename DeviceType<T>::type;
  std::vector<std::vector<float>> param, m, v, buf;
  std::vector<std::vector<T>> grad, copy;
  std::vector<std::unique_ptr<DeviceBuffer>> memory;
  std::vector<float *> dParam, dM, dV, dBuf;
  std::vector<const D *> dGrad;
  std::vector<D *> dCopy;

  Tensors(unsigned seed, float gradScale, int misalign) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t n : kSizes) {
      std::vector<float> p, mm, vv, b;
      std::vector<T> g, c(std::size_t(n), T(0.0f));
      for (int64_t i = 0; i < n; ++i) {
        p.push_back(normal(rng));
        g.push_back(T(normal(rng) * gradScale));
        mm.push_back(0.1f * normal(rng));
        vv.push_back(0.01f * std::fabs(normal(rng)));
        b.push_back(0.1f * normal(rng));
      }
      param.push_back(p), m.push_back(mm), v.push_back(vv), buf.push_back(b);
      grad.push_back(g), copy.push_back(c);
      dParam.push_back(upload(p, misalign));
      dM.push_back(upload(mm, misalign));
      dV.push_back(upload(vv, misalign));
      dBuf.push_back(upload(b, misalign));
      dGrad.push_back(reinterpret_cast<const D *>(upload(g, misalign)));
      dCopy.push_back(reinterpret_cast<D *>(upload(c, misalign)));
    }
  }

  template <typename E> E *upload(const std::vector<E> &h, int misalign) {
    memory.push_back(
        std::make_unique<DeviceBuffer>((h.size() + misalign) * sizeof(E)));
    E *d = memory.back()->template as<E>(misalign * sizeof(E));
    cudaMemcpy(d, h.data(), h.size() * sizeof(E), cudaMemcpyHostToDevice);
    return d;
  }
  template <typename E> static std::vector<E> download(const E *d, std::size_t n) {
    std::vector<E> h(n);
    cudaMemcpy(h.data(), d, n * sizeof(E), cudaMemcpyDeviceToHost);
    return h;
  }
};

/// A host table copied to the device.
template <typename Entry> struct DeviceTable {
  DeviceBuffer memory;
  Entry *table;
  explicit DeviceTable(const std::vector<Entry> &host)
      : memory(host.size() * sizeof(Entry)), table(memory.as<Entry>()) {
    cudaMemcpy(table, host.data(), host.size() * sizeof(Entry),
               cudaMemcpyHostToDevice);
  }
};

/// The step's scalars on the host and on the device.
struct Scalars {
  float lr = 1e-2f, step = 1, unscale = 1.0f / 1024, clip = 0.37f;
  uint8_t skip = 0;
  DeviceBuffer device{5 * sizeof(float)};
  OptimizerStep host() const { return {&lr, &step, &unscale, &clip, &skip}; }
  OptimizerStep onDevice() {
    float values[4] = {lr, step, unscale, clip};
    cudaMemcpy(device.as<float>(), values, sizeof values, cudaMemcpyHostToDevice);
    cudaMemcpy(device.as<uint8_t>(4 * sizeof(float)), &skip, 1,
               cudaMemcpyHostToDevice);
    const float *f = device.as<float>();
    return {f, f + 1, f + 2, f + 3, device.as<uint8_t>(4 * sizeof(float))};
  }
};

/// How far apart the CPU's and the GPU's floats may be: 0 for bitwise.
void expectClose(const std::vector<float> &cpu, const std::vector<float> &gpu,
                 double rtol, double atol, const char *what, std::size_t k) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    if (rtol == 0 && atol == 0)
      ASSERT_EQ(bitsOf(cpu[i]), bitsOf(gpu[i]))
          << what << " of tensor " << k << " element " << i << ": " << cpu[i]
          << " vs " << gpu[i];
    else
      ASSERT_NEAR(cpu[i], gpu[i], atol + rtol * std::fabs(cpu[i]))
          << what << " of tensor " << k << " element " << i;
  }
}

template <typename T>
void adamAgainstCpu(double beta1, double beta2, bool decoupled, int misalign,
                    std::initializer_list<int> steps, double rtol, double atol) {
  using D = typename DeviceType<T>::type;
  Tensors<T> ts(11, 100.0f, misalign);
  std::vector<AdamTensor<T>> hostTable;
  std::vector<AdamTensor<D>> devTable;
  for (std::size_t k = 0; k < kSizes.size(); ++k) {
    hostTable.push_back({ts.param[k].data(), ts.grad[k].data(), ts.m[k].data(),
                         ts.v[k].data(), ts.copy[k].data(), kSizes[k], 0});
    devTable.push_back({ts.dParam[k], ts.dGrad[k], ts.dM[k], ts.dV[k],
                        ts.dCopy[k], kSizes[k], 0});
  }
  const int64_t count = int64_t(hostTable.size());
  const int64_t chunks = assignChunks(hostTable.data(), count);
  ASSERT_EQ(assignChunks(devTable.data(), count), chunks);
  DeviceTable<AdamTensor<D>> table(devTable);
  const AdamConfig c = adamConfig(beta1, beta2, 1e-8, 0.1, decoupled, -1);
  Scalars s;
  for (int step : steps) {
    s.step = float(step);
    cpu::adamUpdate(cpu::Queue{}, hostTable.data(), count, chunks, c, s.host());
    cuda::adamUpdate<D>(nullptr, table.table, count, chunks, c, s.onDevice());
    ok(cudaDeviceSynchronize());
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      const std::size_t n = std::size_t(kSizes[k]);
      expectClose(ts.param[k], Tensors<T>::download(ts.dParam[k], n), rtol,
                  atol, "param", k);
      expectClose(ts.m[k], Tensors<T>::download(ts.dM[k], n), 0, 0, "exp_avg", k);
      expectClose(ts.v[k], Tensors<T>::download(ts.dV[k], n), 0, 0,
                  "exp_avg_sq", k);
      if (rtol == 0) {
        auto copy = Tensors<T>::download(
            reinterpret_cast<const T *>(ts.dCopy[k]), n);
        for (std::size_t i = 0; i < n; ++i)
          ASSERT_EQ(bitsOf(float(copy[i])), bitsOf(float(ts.copy[k][i])))
              << "copy of tensor " << k << " element " << i;
      }
    }
  }
}

} // namespace

// Betas that are powers of two: powf of them is exact on the host and on
// the device (log2 exact), so both compute the same bias corrections and
// every bit agrees.
TEST(KernelsOptimizerCuda, AdamWFp32Bitwise) {
  REQUIRE_DEVICE();
  adamAgainstCpu<float>(0.5, 0.25, true, 0, {1, 2, 3}, 0, 0);
}
TEST(KernelsOptimizerCuda, AdamBf16Bitwise) {
  REQUIRE_DEVICE();
  adamAgainstCpu<BFloat16>(0.5, 0.25, false, 0, {1, 2}, 0, 0);
}
TEST(KernelsOptimizerCuda, AdamWHalfMisalignedBitwise) {
  REQUIRE_DEVICE();
  adamAgainstCpu<Half>(0.5, 0.25, true, 1, {1, 2}, 0, 0);
}
// Usual betas: the device's powf may differ from the host's by an ulp of
// beta2^t, which 1 - beta2^t (~1e-2 here) amplifies to ~1e-5 relative in
// the update (lr 1e-2): 1e-7 absolute on the parameter, plus its ulp.
TEST(KernelsOptimizerCuda, AdamWFp32UsualBetas) {
  REQUIRE_DEVICE();
  adamAgainstCpu<float>(0.9, 0.999, true, 0, {1, 5, 10}, 2e-7, 1e-7);
}

TEST(KernelsOptimizerCuda, SgdMomentumBitwiseAndSkip) {
  REQUIRE_DEVICE();
  for (int misalign : {0, 1}) {
    Tensors<BFloat16> ts(12, 1.0f, misalign);
    std::vector<SgdTensor<BFloat16>> hostTable;
    std::vector<SgdTensor<__nv_bfloat16>> devTable;
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      hostTable.push_back({ts.param[k].data(), ts.grad[k].data(),
                           ts.buf[k].data(), ts.copy[k].data(), kSizes[k], 0});
      devTable.push_back({ts.dParam[k], ts.dGrad[k], ts.dBuf[k], ts.dCopy[k],
                          kSizes[k], 0});
    }
    const int64_t count = int64_t(hostTable.size());
    const int64_t chunks = assignChunks(hostTable.data(), count);
    assignChunks(devTable.data(), count);
    DeviceTable<SgdTensor<__nv_bfloat16>> table(devTable);
    const SgdConfig c = sgdConfig(0.9, 1e-2);
    Scalars s;
    for (uint8_t skip : {0, 1, 0}) {
      s.skip = skip;
      cpu::sgdUpdate(cpu::Queue{}, hostTable.data(), count, chunks, c, s.host());
      cuda::sgdUpdate(nullptr, table.table, count, chunks, c, s.onDevice());
      ok(cudaDeviceSynchronize());
      for (std::size_t k = 0; k < kSizes.size(); ++k) {
        const std::size_t n = std::size_t(kSizes[k]);
        expectClose(ts.param[k], Tensors<BFloat16>::download(ts.dParam[k], n),
                    0, 0, "param", k);
        expectClose(ts.buf[k], Tensors<BFloat16>::download(ts.dBuf[k], n), 0,
                    0, "momentum_buffer", k);
      }
    }
  }
}

template <typename T> void sumSquaresAgainstCpu(int misalign) {
  using D = typename DeviceType<T>::type;
  Tensors<T> ts(13, 3.0f, misalign);
  std::vector<GradTensor<T>> hostTable;
  std::vector<GradTensor<D>> devTable;
  for (std::size_t k = 0; k < kSizes.size(); ++k) {
    hostTable.push_back({ts.grad[k].data(), kSizes[k], 0});
    devTable.push_back({ts.dGrad[k], kSizes[k], 0});
  }
  const int64_t count = int64_t(hostTable.size());
  const int64_t chunks = assignChunks(hostTable.data(), count);
  assignChunks(devTable.data(), count);
  DeviceTable<GradTensor<D>> table(devTable);
  const std::size_t bytes = sumSquaresWorkspaceBytes(count, chunks);
  std::vector<char> hostWork(bytes);
  DeviceBuffer work(bytes), out((count + 1) * sizeof(float));
  Scalars s;
  float cpuTotal;
  std::vector<float> cpuPer(static_cast<std::size_t>(count));
  cpu::multiTensorSumSquares(cpu::Queue{}, hostTable.data(), count, chunks,
                             &s.unscale, &cpuTotal, cpuPer.data(),
                             hostWork.data());
  OptimizerStep d = s.onDevice();
  cuda::multiTensorSumSquares(nullptr, table.table, count, chunks, d.unscale,
                              out.as<float>(), out.as<float>(sizeof(float)),
                              work.p);
  ok(cudaDeviceSynchronize());
  std::vector<float> got = Tensors<T>::download(out.as<float>(), count + 1);
  float inOrder = 0;
  for (int64_t k = 0; k < count; ++k) {
    // Both sum in double, in different orders: the same float, or the
    // neighbouring one where the exact sum lies near a rounding boundary.
    EXPECT_LE(std::fabs(got[k + 1] - cpuPer[k]),
              std::ldexp(std::fabs(cpuPer[k]), -23))
        << "tensor " << k;
    inOrder = k == 0 ? got[k + 1] : inOrder + got[k + 1];
  }
  EXPECT_EQ(bitsOf(got[0]), bitsOf(inOrder));
  EXPECT_NEAR(got[0], cpuTotal, 4e-7 * cpuTotal);
}

TEST(KernelsOptimizerCuda, SumSquaresFp32) {
  REQUIRE_DEVICE();
  sumSquaresAgainstCpu<float>(0);
}
TEST(KernelsOptimizerCuda, SumSquaresBf16Misaligned) {
  REQUIRE_DEVICE();
  sumSquaresAgainstCpu<BFloat16>(1);
}

TEST(KernelsOptimizerCuda, SumSquaresDeterministic) {
  REQUIRE_DEVICE();
  Tensors<Half> ts(14, 1.0f, 0);
  std::vector<GradTensor<__half>> devTable;
  for (std::size_t k = 0; k < kSizes.size(); ++k)
    devTable.push_back({ts.dGrad[k], kSizes[k], 0});
  const int64_t count = int64_t(devTable.size());
  const int64_t chunks = assignChunks(devTable.data(), count);
  DeviceTable<GradTensor<__half>> table(devTable);
  DeviceBuffer work(sumSquaresWorkspaceBytes(count, chunks)), out(sizeof(float));
  uint32_t first = 0;
  for (int run = 0; run < 5; ++run) {
    cuda::multiTensorSumSquares(nullptr, table.table, count, chunks, nullptr,
                                out.as<float>(), nullptr, work.p);
    float total;
    ok(cudaMemcpy(&total, out.p, sizeof total, cudaMemcpyDeviceToHost));
    if (run == 0)
      first = bitsOf(total);
    EXPECT_EQ(bitsOf(total), first) << "run " << run;
  }
}

TEST(KernelsOptimizerCuda, NonFinite) {
  REQUIRE_DEVICE();
  Tensors<float> ts(15, 1.0f, 0);
  std::vector<GradTensor<float>> devTable;
  for (std::size_t k = 0; k < kSizes.size(); ++k)
    devTable.push_back({ts.dGrad[k], kSizes[k], 0});
  const int64_t count = int64_t(devTable.size());
  const int64_t chunks = assignChunks(devTable.data(), count);
  DeviceTable<GradTensor<float>> table(devTable);
  DeviceBuffer flag(1);
  auto run = [&] {
    cuda::multiTensorNonFinite(nullptr, table.table, count, chunks,
                               flag.as<uint8_t>());
    uint8_t found = 7;
    cudaMemcpy(&found, flag.p, 1, cudaMemcpyDeviceToHost);
    return found;
  };
  EXPECT_EQ(run(), 0);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float *where = const_cast<float *>(ts.dGrad[5]) + 2 * kOptimizerChunk - 1;
  ok(cudaMemcpy(where, &nan, sizeof nan, cudaMemcpyHostToDevice));
  EXPECT_EQ(run(), 1);
  const float zero = 0;
  ok(cudaMemcpy(where, &zero, sizeof zero, cudaMemcpyHostToDevice));
  EXPECT_EQ(run(), 0);
}
