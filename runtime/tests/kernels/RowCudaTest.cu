//===- RowCudaTest.cu - the CUDA row kernels against the CPU ones ---------===//
//
// Every kernel of dsc/kernels/cuda/Row.cuh and Classifier.cuh on the same
// inputs as its CPU form (dsc/kernels/Row.h, Classifier.h, which RowTest and
// ClassifierTest hold to double references), for float, bf16 and half, on
// shapes that take both the 16-byte and the one-element paths. Skips
// without a GPU.
//
// Tolerance: the GPU accumulates in float along a tree (error about
// log2(n) * 2^-24 of the terms' magnitude, n <= 50257) and uses expf (2
// ulp); the CPU is within 4 ulp of exact. float: 1e-5 relative plus 1e-5 of
// the largest result (cancelling sums). 16-bit: two units of the type (each
// side rounds once, and float differences may flip one rounding).
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Classifier.h"
#include "dsc/kernels/cuda/Classifier.cuh"
#include "dsc/kernels/cuda/Row.cuh"

#include "RowTestSupport.h"

#include <cuda_runtime.h>

#include <cstring>
#include <tuple>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

bool haveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU()                                                                              \
  if (!haveGpu())                                                                                  \
  GTEST_SKIP() << "no CUDA device"

void ok(cudaError_t status) { ASSERT_EQ(status, cudaSuccess) << cudaGetErrorString(status); }

/// A device copy of a host vector (the bytes: CPU and CUDA 16-bit types
/// share their layout), with one spare element so that `offset` can
/// misalign it by one element.
template <typename T> struct DeviceBuffer {
  void *ptr = nullptr;
  std::size_t n;
  std::size_t offset;
  DeviceBuffer(std::size_t n, std::size_t offset = 0) : n(n), offset(offset) {
    ok(cudaMalloc(&ptr, (n + 1) * sizeof(T) + 16));
    ok(cudaMemset(ptr, 0, (n + 1) * sizeof(T) + 16));
  }
  template <typename H>
  DeviceBuffer(const std::vector<H> &host, std::size_t offset = 0)
      : DeviceBuffer(host.size(), offset) {
    static_assert(sizeof(H) == sizeof(T), "same layout");
    ok(cudaMemcpy(get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  T *get() const { return reinterpret_cast<T *>(ptr) + offset; }
  template <typename H> std::vector<H> download() const {
    std::vector<H> host(n);
    ok(cudaDeviceSynchronize());
    ok(cudaMemcpy(host.data(), get(), n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
};

template <typename H, typename D> struct Pair {
  using Host = H;
  using Device = D;
};
using Pairs = ::testing::Types<Pair<float, float>, Pair<dsc::rt::BFloat16, __nv_bfloat16>,
                               Pair<dsc::rt::Half, __half>>;

template <typename H> double gpuRel() {
  return std::is_same_v<H, float> ? 1e-5 : 2 * relTolerance<H>();
}

/// Compares the GPU result with the CPU one.
template <typename H>
void expectMatches(const std::vector<H> &gpuOut, const std::vector<H> &cpuOut,
                   const std::string &what) {
  std::vector<double> ref = widen(cpuOut);
  double abs = gpuRel<H>() * maxAbs(ref) + (std::is_same_v<H, dsc::rt::Half> ? 6e-8 : 0.0);
  expectClose(gpuOut, ref, gpuRel<H>(), abs, what);
}

template <typename P> class RowCudaTest : public ::testing::Test {};
TYPED_TEST_SUITE(RowCudaTest, Pairs);

struct Shape {
  std::int64_t outer, n, inner;
  std::size_t offset; // misaligns the buffers by elements
};

TYPED_TEST(RowCudaTest, SoftmaxLikeForwardAndBackward) {
  REQUIRE_GPU();
  using H = typename TypeParam::Host;
  using D = typename TypeParam::Device;
  for (Shape s : {Shape{1, 1, 1, 0}, Shape{5, 7, 1, 0}, Shape{512, 768, 1, 0}, Shape{3, 768, 1, 1},
                  Shape{2, 5000, 1, 0}, Shape{3, 9, 70, 0}})
    for (bool log : {false, true}) {
      std::size_t size = std::size_t(s.outer * s.n * s.inner);
      std::vector<H> x = randomVector<H>(size, 1), dy = randomVector<H>(size, 2, -1, 1);
      std::vector<H> y(size), dx(size);
      auto fwd = log ? cpu::logSoftmaxForward<H> : cpu::softmaxForward<H>;
      auto bwd = log ? cpu::logSoftmaxBackward<H> : cpu::softmaxBackward<H>;
      fwd(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
      bwd(cpu::Queue{}, y.data(), dy.data(), dx.data(), s.outer, s.n, s.inner);

      DeviceBuffer<D> dX(x, s.offset), dY(size, s.offset), dDy(dy, s.offset), dDx(size, s.offset),
          dYc(y, s.offset);
      if (log) {
        gpu::logSoftmaxForward<D>(0, dX.get(), dY.get(), s.outer, s.n, s.inner);
        gpu::logSoftmaxBackward<D>(0, dYc.get(), dDy.get(), dDx.get(), s.outer, s.n, s.inner);
      } else {
        gpu::softmaxForward<D>(0, dX.get(), dY.get(), s.outer, s.n, s.inner);
        gpu::softmaxBackward<D>(0, dYc.get(), dDy.get(), dDx.get(), s.outer, s.n, s.inner);
      }
      std::string what = std::string(log ? "log_softmax" : "softmax") +
                         " n=" + std::to_string(s.n) + " inner=" + std::to_string(s.inner) +
                         " offset=" + std::to_string(s.offset);
      expectMatches(dY.template download<H>(), y, what);
      expectMatches(dDx.template download<H>(), dx, what + " backward");
    }
}

TYPED_TEST(RowCudaTest, NormsForwardAndBackward) {
  REQUIRE_GPU();
  using H = typename TypeParam::Host;
  using D = typename TypeParam::Device;
  for (auto [rows, n, offset] : {std::tuple<std::int64_t, std::int64_t, std::size_t>{1, 1, 0},
                                 {7, 33, 0},
                                 {512, 768, 0},
                                 {300, 768, 1}})
    for (bool rms : {false, true}) {
      std::size_t size = std::size_t(rows * n);
      std::vector<H> x = randomVector<H>(size, 3), b2 = randomVector<H>(size, 4);
      std::vector<H> dy = randomVector<H>(size, 5, -1, 1);
      std::vector<H> w = randomVector<H>(n, 6), bias = randomVector<H>(n, 7);
      std::vector<H> y(size), res(size), dx(size), dw(n), db(n);
      std::vector<float> mean(rows), rstd(rows);
      if (rms) {
        cpu::rmsNormForward(cpu::Queue{}, x.data(), w.data(), y.data(), rstd.data(), rows, n, 1e-6);
        cpu::rmsNormBackward(cpu::Queue{}, dy.data(), x.data(), w.data(), rstd.data(), dx.data(),
                             dw.data(), rows, n);
      } else {
        cpu::residualLayerNormForward(cpu::Queue{}, x.data(), b2.data(), w.data(), bias.data(),
                                      res.data(), y.data(), mean.data(), rstd.data(), rows, n,
                                      1e-5);
        cpu::layerNormBackward(cpu::Queue{}, dy.data(), res.data(), w.data(), mean.data(),
                               rstd.data(), dx.data(), dw.data(), db.data(), rows, n);
      }
      DeviceBuffer<D> dX(x, offset), dB2(b2, offset), dDy(dy, offset), dW(w), dBias(bias);
      DeviceBuffer<D> dY(size, offset), dRes(size, offset), dDx(size, offset), dDw(n), dDb(n);
      DeviceBuffer<float> dMean(mean), dRstd(rstd);
      if (rms) {
        gpu::rmsNormForward<D>(0, dX.get(), dW.get(), dY.get(), dRstd.get(), rows, n, 1e-6);
        // The backward from the CPU's statistics: it checks the formula alone.
        DeviceBuffer<float> cpuRstd(rstd);
        gpu::rmsNormBackward<D>(0, dDy.get(), dX.get(), dW.get(), cpuRstd.get(), dDx.get(),
                                dDw.get(), rows, n);
      } else {
        gpu::residualLayerNormForward<D>(0, dX.get(), dB2.get(), dW.get(), dBias.get(), dRes.get(),
                                         dY.get(), dMean.get(), dRstd.get(), rows, n, 1e-5);
        DeviceBuffer<D> cpuRes(res, offset);
        DeviceBuffer<float> cpuMean(mean), cpuRstd(rstd);
        gpu::layerNormBackward<D>(0, dDy.get(), cpuRes.get(), dW.get(), cpuMean.get(),
                                  cpuRstd.get(), dDx.get(), dDw.get(), dDb.get(), rows, n);
      }
      std::string what = std::string(rms ? "rms_norm" : "residual layer_norm") +
                         " rows=" + std::to_string(rows) + " n=" + std::to_string(n);
      if (!rms) {
        std::vector<H> gotRes = dRes.template download<H>();
        EXPECT_EQ(0, std::memcmp(gotRes.data(), res.data(), size * sizeof(H))) << what;
      }
      expectMatches(dY.template download<H>(), y, what);
      expectMatches(dRstd.template download<float>(), rstd, what + " rstd");
      expectMatches(dDx.template download<H>(), dx, what + " dx");
      expectMatches(dDw.template download<H>(), dw, what + " dweight");
      if (!rms)
        expectMatches(dDb.template download<H>(), db, what + " dbias");
    }
}

TYPED_TEST(RowCudaTest, NormBackwardIsDeterministic) {
  REQUIRE_GPU();
  using H = typename TypeParam::Host;
  using D = typename TypeParam::Device;
  const std::int64_t rows = 1000, n = 768;
  std::vector<H> x = randomVector<H>(rows * n, 8), dy = randomVector<H>(rows * n, 9);
  std::vector<H> w = randomVector<H>(n, 10);
  std::vector<float> mean(rows, 0.1f), rstd(rows, 1.3f);
  DeviceBuffer<D> dX(x), dDy(dy), dW(w), dDx(rows * n), dDw(n), dDb(n);
  DeviceBuffer<float> dMean(mean), dRstd(rstd);
  std::vector<H> first;
  for (int run = 0; run < 3; ++run) {
    gpu::layerNormBackward<D>(0, dDy.get(), dX.get(), dW.get(), dMean.get(), dRstd.get(), dDx.get(),
                              dDw.get(), dDb.get(), rows, n);
    std::vector<H> got = dDw.template download<H>();
    if (run == 0)
      first = got;
    else
      EXPECT_EQ(0, std::memcmp(first.data(), got.data(), n * sizeof(H))) << "run " << run;
  }
}

TYPED_TEST(RowCudaTest, FusedClassifier) {
  REQUIRE_GPU();
  using H = typename TypeParam::Host;
  using D = typename TypeParam::Device;
  for (auto [rows, classes] :
       {std::pair<std::int64_t, std::int64_t>{3, 1}, {5, 64}, {64, 50257}, {16, 50304}}) {
    std::size_t size = std::size_t(rows * classes);
    std::vector<H> logits = randomVector<H>(size, 11, -4, 4), dlogits(size), loss(rows);
    std::vector<std::int64_t> targets(rows);
    for (std::int64_t r = 0; r < rows; ++r)
      targets[r] = (r * 7919) % classes;
    targets[rows - 1] = -100;
    std::vector<H> scale = randomVector<H>(rows, 12, 0.1f, 2.0f);
    cpu::fusedClassifier(cpu::Queue{}, logits.data(), targets.data(), scale.data(), dlogits.data(),
                         loss.data(), 1, rows, classes, -100);
    DeviceBuffer<D> dLogits(logits), dLoss(rows), dLossOnly(rows), dScale(scale);
    DeviceBuffer<std::int64_t> dTargets(targets);
    DeviceBuffer<gpu::IndexFault> fault(1);
    gpu::crossEntropyForward<D, std::int64_t>(0, dLogits.get(), dTargets.get(), dLossOnly.get(),
                                              rows, classes, -100, fault.get());
    // In place, over the logits.
    gpu::fusedClassifier<D, std::int64_t>(0, dLogits.get(), dTargets.get(), dScale.get(),
                                          dLogits.get(), dLoss.get(), 1, rows, classes, -100,
                                          fault.get());
    std::string what = "classifier V=" + std::to_string(classes);
    expectMatches(dLoss.template download<H>(), loss, what + " loss");
    expectMatches(dLossOnly.template download<H>(), loss, what + " loss only");
    expectMatches(dLogits.template download<H>(), dlogits, what + " dlogits");
    EXPECT_EQ(fault.template download<gpu::IndexFault>()[0].state, 0);
  }
}

TYPED_TEST(RowCudaTest, ClassifierRecordsABadTarget) {
  REQUIRE_GPU();
  using H = typename TypeParam::Host;
  using D = typename TypeParam::Device;
  const std::int64_t rows = 4, classes = 16;
  std::vector<H> logits = randomVector<H>(rows * classes, 13);
  std::vector<std::int64_t> targets = {1, 40000, 2, 3};
  DeviceBuffer<D> dLogits(logits), dLoss(rows);
  DeviceBuffer<std::int64_t> dTargets(targets);
  DeviceBuffer<gpu::IndexFault> fault(1);
  gpu::crossEntropyForward<D, std::int64_t>(0, dLogits.get(), dTargets.get(), dLoss.get(), rows,
                                            classes, -100, fault.get());
  gpu::IndexFault f = fault.template download<gpu::IndexFault>()[0];
  EXPECT_EQ(f.state, 1);
  EXPECT_EQ(f.index, 40000);
  EXPECT_EQ(f.size, 16);
  EXPECT_STREQ(f.op, "dsc.cross_entropy");
}

} // namespace
