//===- CudaGemmTest.cpp - cuda::gemmF32 against the CPU gemm --------------===//
//
// Argument checks (before any CUDA call, so they run anywhere), the error
// without a GPU, and, on a GPU, every layout against cpu::gemmF32.

#include "dsc/runtime/CudaGemm.h"

#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/CudaDevice.h"
#include "dsc/runtime/Error.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using dsc::rt::Error;
using dsc::rt::cuda::GemmShape;

namespace {

bool haveGpu() { return dsc::rt::cuda::Device::count() > 0; }

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<float> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// A device copy of a host vector, freed at scope exit.
class DeviceVector {
public:
  explicit DeviceVector(const std::vector<float> &host) : size_(host.size()) {
    EXPECT_EQ(cudaMalloc(&data_, bytes()), cudaSuccess);
    // An empty vector has no host data to copy (its data() may be null).
    if (size_ != 0)
      EXPECT_EQ(cudaMemcpy(data_, host.data(), size_ * sizeof(float),
                           cudaMemcpyHostToDevice),
                cudaSuccess);
  }
  ~DeviceVector() { cudaFree(data_); }
  DeviceVector(const DeviceVector &) = delete;
  DeviceVector &operator=(const DeviceVector &) = delete;
  float *data() const { return static_cast<float *>(data_); }
  std::vector<float> toHost() const {
    std::vector<float> host(size_);
    if (size_ != 0)
      EXPECT_EQ(cudaMemcpy(host.data(), data_, size_ * sizeof(float),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
    return host;
  }

private:
  /// At least one element, so that empty operands still get an address.
  std::size_t bytes() const {
    return std::max<std::size_t>(size_, 1) * sizeof(float);
  }
  void *data_ = nullptr;
  std::size_t size_;
};

/// Elements an operand spans: `items` matrices of `elements`, `stride`
/// apart (a negative stride spans backwards from the base).
std::size_t span(int64_t batch, int64_t stride, int64_t elements) {
  return std::size_t((batch - 1) * std::abs(stride) + elements);
}

/// Runs `s` on the GPU and the CPU from the same inputs and compares C
/// everywhere (including the elements between strided output items, which
/// neither may touch).
void expectSameAsCpu(const GemmShape &s, float alpha, float beta,
                     const std::string &what, unsigned seed = 1) {
  auto a = random(span(s.batch, s.strideA, s.m * s.k), seed);
  auto b = random(span(s.batch, s.strideB, s.k * s.n), seed + 1);
  auto c = random(span(s.batch, s.strideC, s.m * s.n), seed + 2);
  // Negative strides start from the last item.
  auto base = [&](int64_t stride) {
    return stride < 0 ? std::size_t((s.batch - 1) * -stride) : std::size_t(0);
  };
  std::vector<float> want = c;
  dsc::rt::cpu::gemmF32(s, a.data() + base(s.strideA),
                        b.data() + base(s.strideB),
                        want.data() + base(s.strideC), alpha, beta);
  DeviceVector da(a), db(b), dc(c);
  dsc::rt::cuda::gemmF32(s, da.data() + base(s.strideA),
                         db.data() + base(s.strideB),
                         dc.data() + base(s.strideC), alpha, beta, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  std::vector<float> got = dc.toHost();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i])))
        << what << " at " << i;
}

} // namespace

TEST(CudaGemm, BadShapesThrowLikeTheCpuVersionBeforeAnyCudaCall) {
  // Without a GPU a CUDA call would fail with a CUDA error instead: these
  // messages show the checks come first.
  GemmShape negative;
  negative.batch = 2, negative.m = 3, negative.n = -1, negative.k = 4;
  std::string cpu = errorOf(
      [&] { dsc::rt::cpu::gemmF32(negative, nullptr, nullptr, nullptr); });
  EXPECT_EQ(cpu, "gemm: negative size 2x3x-1x4");
  EXPECT_EQ(errorOf([&] {
              dsc::rt::cuda::gemmF32(negative, nullptr, nullptr, nullptr);
            }),
            cpu);
  for (int field = 0; field < 4; ++field) {
    GemmShape s;
    s.m = s.n = s.k = 1;
    (field == 0 ? s.batch : field == 1 ? s.m : field == 2 ? s.n : s.k) = -5;
    EXPECT_EQ(
        errorOf([&] { dsc::rt::cuda::gemmF32(s, nullptr, nullptr, nullptr); }),
        errorOf([&] { dsc::rt::cpu::gemmF32(s, nullptr, nullptr, nullptr); }))
        << field;
  }
  GemmShape overwrite;
  overwrite.batch = 2, overwrite.m = overwrite.n = overwrite.k = 1;
  overwrite.strideA = overwrite.strideB = 1, overwrite.strideC = 0;
  float x[2] = {1, 2};
  EXPECT_EQ(errorOf([&] { dsc::rt::cuda::gemmF32(overwrite, x, x, x); }),
            "gemm: batched product with a zero output stride");
  EXPECT_EQ(errorOf([&] { dsc::rt::cpu::gemmF32(overwrite, x, x, x); }),
            "gemm: batched product with a zero output stride");
}

TEST(CudaGemm, EmptyProductsMakeNoCudaCall) {
  // Without a GPU any CUDA call throws; with one these must still be no-ops
  // on null pointers.
  for (int field = 0; field < 3; ++field) {
    GemmShape s;
    s.batch = 2, s.m = s.n = s.k = 4, s.strideC = 16;
    (field == 0 ? s.batch : field == 1 ? s.m : s.n) = 0;
    EXPECT_NO_THROW(dsc::rt::cuda::gemmF32(s, nullptr, nullptr, nullptr, 1, 0))
        << field;
  }
}

TEST(CudaGemm, WithoutAGpuTheErrorSaysSo) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present; the comparisons below cover it";
  GemmShape s;
  s.m = s.n = s.k = 2;
  std::string message =
      errorOf([&] { dsc::rt::cuda::gemmF32(s, nullptr, nullptr, nullptr); });
  EXPECT_EQ(
      message.rfind("gemm needs a GPU, but cudaGetDeviceCount found none", 0),
      0u)
      << message;
  // k == 0 scales C: a CUDA call too.
  s.k = 0;
  EXPECT_NE(errorOf([&] {
              dsc::rt::cuda::gemmF32(s, nullptr, nullptr, nullptr);
            }).find("needs a GPU"),
            std::string::npos);
}

TEST(CudaGemm, AllTransposesAndBroadcastBatchesMatchTheCpu) {
  if (!haveGpu())
    GTEST_SKIP() << "no GPU here";
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t broadcastA : {0, 1})
        for (int64_t broadcastB : {0, 1}) {
          GemmShape s;
          s.batch = 3, s.m = 5, s.n = 7, s.k = 9, s.transA = ta, s.transB = tb;
          s.strideA = broadcastA ? 0 : s.m * s.k;
          s.strideB = broadcastB ? 0 : s.k * s.n;
          s.strideC = s.m * s.n;
          expectSameAsCpu(s, 1.0f, 0.0f,
                          "ta=" + std::to_string(ta) +
                              " tb=" + std::to_string(tb) +
                              " broadcastA=" + std::to_string(broadcastA) +
                              " broadcastB=" + std::to_string(broadcastB));
        }
}

TEST(CudaGemm, AlphaBetaAndOddLayoutsMatchTheCpu) {
  if (!haveGpu())
    GTEST_SKIP() << "no GPU here";
  GemmShape single;
  single.m = 33, single.n = 17, single.k = 65;
  expectSameAsCpu(single, 2.0f, 0.5f, "alpha=2 beta=0.5");
  expectSameAsCpu(single, -1.0f, 1.0f, "alpha=-1 beta=1");
  GemmShape padded = single; // gaps between output items stay untouched
  padded.batch = 4, padded.transA = true;
  padded.strideA = padded.m * padded.k + 3,
  padded.strideB = padded.k * padded.n + 1;
  padded.strideC = padded.m * padded.n + 5;
  expectSameAsCpu(padded, 1.0f, 0.25f, "padded strides");
  GemmShape overlapping = single; // outputs overlap: in order, as on the CPU
  overlapping.batch = 3, overlapping.strideA = overlapping.m * overlapping.k;
  overlapping.strideB = overlapping.k * overlapping.n;
  overlapping.strideC = overlapping.n; // item i+1 starts one row later
  expectSameAsCpu(overlapping, 1.0f, 0.5f, "overlapping outputs");
  GemmShape backwards = single;
  backwards.batch = 3, backwards.strideA = -backwards.m * backwards.k;
  backwards.strideB = 0, backwards.strideC = -backwards.m * backwards.n;
  expectSameAsCpu(backwards, 1.0f, 0.0f, "negative strides");
  GemmShape unaligned = single; // items 4 bytes apart from 256-byte alignment
  unaligned.batch = 2, unaligned.strideA = unaligned.m * unaligned.k + 1;
  unaligned.strideB = unaligned.k * unaligned.n + 1;
  unaligned.strideC = unaligned.m * unaligned.n + 1;
  expectSameAsCpu(unaligned, 1.0f, 0.0f, "unaligned items");
}

TEST(CudaGemm, EmptyContractionScalesC) {
  if (!haveGpu())
    GTEST_SKIP() << "no GPU here";
  GemmShape s;
  s.batch = 2, s.m = 3, s.n = 4, s.k = 0, s.strideC = 12;
  expectSameAsCpu(s, 1.0f, 0.5f, "k=0 beta=0.5");
  expectSameAsCpu(s, 1.0f, 1.0f, "k=0 beta=1");
  s.strideC = 20;
  expectSameAsCpu(s, 1.0f, 0.0f, "k=0 beta=0 strided");
  // beta == 0 overwrites without reading: NaN becomes 0, as in BLAS.
  std::vector<float> nan(24, std::numeric_limits<float>::quiet_NaN());
  s.strideC = 12;
  DeviceVector dc(nan);
  dsc::rt::cuda::gemmF32(s, nullptr, nullptr, dc.data(), 1.0f, 0.0f);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (float value : dc.toHost())
    EXPECT_EQ(value, 0.0f);
}

TEST(CudaGemm, LargeProductOnAStream) {
  if (!haveGpu())
    GTEST_SKIP() << "no GPU here";
  GemmShape s;
  s.m = 256, s.n = 384, s.k = 512, s.transB = true;
  auto a = random(s.m * s.k, 7), b = random(s.k * s.n, 8);
  std::vector<float> want(s.m * s.n, 0.0f);
  dsc::rt::cpu::gemmF32(s, a.data(), b.data(), want.data());
  DeviceVector da(a), db(b), dc(want);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  for (int repeat = 0; repeat < 3; ++repeat) // the cached plan, again
    dsc::rt::cuda::gemmF32(s, da.data(), db.data(), dc.data(), 1.0f, 0.0f,
                           stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> got = dc.toHost();
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-3f) << i;
  dsc::rt::cuda::releaseGemmResources();
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}
