//===- BatchedGemmCudaTest.cu - CUDA batchedGemm and epilogues vs the CPU -===//
//
// The kernel library's CUDA batchedGemm (cuBLASLt strided batch and
// epilogues) against the CPU one on the same inputs: 16-bit strided and
// broadcast batches, and every epilogue. Tolerances: fp32 accumulation in
// another order (as CudaGemmTest's), plus one rounding of the stored value
// for 16-bit results. Skips without a GPU.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Gemm.h"
#include "dsc/kernels/cuda/Gemm.cuh"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace dsc::kernels;
using dsc::rt::BFloat16;

namespace {

bool haveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

template <typename T> std::vector<T> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(d(rng));
  return v;
}

/// A device copy of `host` (at least 16 bytes), freed at scope exit.
struct Device {
  void *p = nullptr;
  std::size_t bytes;
  template <typename T>
  explicit Device(const std::vector<T> &host) : bytes(host.size() * sizeof(T)) {
    EXPECT_EQ(cudaMalloc(&p, bytes < 16 ? 16 : bytes), cudaSuccess);
    if (bytes)
      cudaMemcpy(p, host.data(), bytes, cudaMemcpyHostToDevice);
  }
  ~Device() { cudaFree(p); }
  Device(const Device &) = delete;
  template <typename T> T *as() const { return static_cast<T *>(p); }
  template <typename T> std::vector<T> host() const {
    std::vector<T> h(bytes / sizeof(T));
    cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost);
    return h;
  }
};

template <typename T>
void expectNear(const std::vector<T> &gpu, const std::vector<T> &cpu,
                const std::string &what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  const double rounding = sizeof(T) == 2 ? std::ldexp(1.0, -7) : 0.0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const double want = float(cpu[i]);
    ASSERT_NEAR(float(gpu[i]), want, 1e-4 * (1 + std::fabs(want)) +
                                         rounding * std::fabs(want))
        << what << " at " << i;
  }
}

} // namespace

TEST(KernelsBatchedGemmCuda, Bf16StridedAndBroadcastBatches) {
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device";
  for (int broadcast : {0, 1, 2})
    for (bool ta : {false, true}) {
      GemmShape s;
      s.batch = 6, s.m = 24, s.n = 40, s.k = 32, s.transA = ta, s.transB = !ta;
      s.strideA = broadcast == 1 ? 0 : s.m * s.k;
      s.strideB = broadcast == 2 ? 0 : s.k * s.n;
      s.strideC = s.m * s.n;
      auto a = random<BFloat16>(std::size_t(s.batch * s.m * s.k), 1);
      auto b = random<BFloat16>(std::size_t(s.batch * s.k * s.n), 2);
      std::vector<BFloat16> c(std::size_t(s.batch * s.strideC), BFloat16(0.0f));
      Device da(a), db(b), dc(c);
      cpu::batchedGemm(cpu::Queue{}, s, a.data(), b.data(), c.data());
      cuda::batchedGemm(nullptr, s, da.as<__nv_bfloat16>(),
                        db.as<__nv_bfloat16>(), dc.as<__nv_bfloat16>());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      expectNear(dc.host<BFloat16>(), c,
                 "broadcast " + std::to_string(broadcast) + " ta " +
                     std::to_string(ta));
    }
}

namespace {

/// One epilogue on the GPU and the CPU from the same inputs: C, aux and
/// the bias gradient compared.
template <typename T, typename D>
void epilogueAgainstCpu(GemmEpilogue kind, bool ta, bool tb) {
  GemmShape s;
  s.m = 40, s.n = 64, s.k = 48, s.transA = ta, s.transB = tb;
  const int64_t auxLd = 72; // cuBLASLt: a multiple of 8
  auto a = random<T>(std::size_t(s.m * s.k), 3), b = random<T>(std::size_t(s.k * s.n), 4);
  auto bias = random<T>(std::size_t(s.n), 5);
  auto aux = random<T>(std::size_t(s.m * auxLd), 6);
  std::vector<T> c(std::size_t(s.m * s.n), T(0.0f));
  std::vector<T> grad(std::size_t(s.n > s.m ? s.n : s.m), T(0.0f));
  Device da(a), db(b), dbias(bias), daux(aux), dc(c), dgrad(grad);

  GemmEpilogueArgs host, device;
  host.kind = device.kind = kind;
  host.auxLd = device.auxLd = auxLd;
  host.bias = bias.data(), host.aux = aux.data(), host.biasGrad = grad.data();
  device.bias = dbias.p, device.aux = daux.p, device.biasGrad = dgrad.p;
  cpu::batchedGemm(cpu::Queue{}, s, a.data(), b.data(), c.data(), 1.0f, 0.0f,
                   host);
  cuda::batchedGemm(nullptr, s, da.as<D>(), db.as<D>(), dc.as<D>(), 1.0f, 0.0f,
                    device);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expectNear(dc.host<T>(), c, "C");
  expectNear(daux.host<T>(), aux, "aux");
  const int64_t gradSize = kind == GemmEpilogue::BGradA ? s.m : s.n;
  if (kind == GemmEpilogue::BGradA || kind == GemmEpilogue::BGradB ||
      kind == GemmEpilogue::DGeluBGrad) {
    auto got = dgrad.host<T>();
    got.resize(std::size_t(gradSize)), grad.resize(std::size_t(gradSize));
    expectNear(got, grad, "bias gradient");
  }
}

} // namespace

TEST(KernelsBatchedGemmCuda, EpiloguesFp32) {
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device";
  using K = GemmEpilogue;
  // The layouts of a Linear layer: forward x W^T (tb), weight gradient
  // dY^T x (ta) with the bias gradient from dY, input gradient dY W.
  for (K kind : {K::Bias, K::Gelu, K::GeluBias, K::GeluAux, K::GeluAuxBias,
                 K::DGelu, K::DGeluBGrad}) {
    SCOPED_TRACE("epilogue " + std::to_string(int(kind)));
    epilogueAgainstCpu<float, float>(kind, false, true);
    epilogueAgainstCpu<float, float>(kind, false, false);
  }
  SCOPED_TRACE("BGradA");
  epilogueAgainstCpu<float, float>(K::BGradA, true, false);
  SCOPED_TRACE("BGradB");
  epilogueAgainstCpu<float, float>(K::BGradB, false, true);
}

TEST(KernelsBatchedGemmCuda, EpiloguesBf16) {
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device";
  using K = GemmEpilogue;
  for (K kind : {K::GeluAuxBias, K::DGeluBGrad}) {
    SCOPED_TRACE("epilogue " + std::to_string(int(kind)));
    epilogueAgainstCpu<BFloat16, __nv_bfloat16>(kind, false, true);
  }
  epilogueAgainstCpu<BFloat16, __nv_bfloat16>(K::BGradA, true, false);
}

// The CPU's argument checks, before any CUDA call (so: also without a GPU).
TEST(KernelsBatchedGemmCuda, BadEpiloguesFailBeforeAnyCudaCall) {
  GemmShape s;
  s.m = 2, s.n = 3, s.k = 4;
  GemmEpilogueArgs e;
  e.kind = GemmEpilogue::GeluBias;
  float *none = nullptr;
  try {
    cuda::batchedGemm(nullptr, s, none, none, none, 1.0f, 0.0f, e);
    FAIL() << "no error";
  } catch (const dsc::rt::Error &error) {
    EXPECT_STREQ(error.what(), "gemm: the epilogue needs a bias vector");
  }
}
