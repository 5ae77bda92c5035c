//===- RandomCudaTest.cu - the CUDA random kernels vs the CPU ones --------===//
//
// Dropout: the same draws and one rounded product per element, bit for
// bit, for any offset of the call in the global batch, in training and
// evaluation, and for a part of each sample. Random-LTD's indices and uniform draws: the CPU kernel's,
// bit for bit, for any offset.

#include "dsc/kernels/Random.h"
#include "dsc/kernels/cuda/Random.cuh"

#include "KernelCudaTestSupport.h"

using namespace dsc::kernels::test;
using dsc::kernels::DropoutSite;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

template <typename T> void checkDropout(int64_t samples, int64_t perSample, double p,
                                        std::vector<int64_t> key) {
  const int64_t n = samples * perSample;
  auto x = randomTensor<T>(n, 6);
  const DropoutSite site{n, perSample, p, 3};
  std::vector<T> want(n);
  cpu::dropout(cpu::Queue{}, x.data(), key.data(), want.data(), site);
  DeviceBuffer<T> din(x), dout(static_cast<size_t>(n));
  DeviceBuffer<int64_t> dkey(key);
  gpu::dropout(nullptr, din.get(), dkey.get(), dout.get(), site);
  EXPECT_TRUE(bitwiseEqual(dout.host(), want))
      << typeName<T>() << " " << samples << "x" << perSample << " p " << p;
}

template <typename T> void checkDropouts() {
  for (double p : {0.0, 0.1, 0.5})
    for (int64_t first : {0, 1, 3})
      for (auto [samples, perSample] : {std::pair{3, 7}, {4, 4096}, {1, 1}}) {
        checkDropout<T>(samples, perSample, p, {1234, 2, first, 1});
        checkDropout<T>(samples, perSample, p, {1234, 2, first, 0});
      }
}

TEST(RandomCudaKernels, DropoutIsTheCpuKernels) {
  DSC_REQUIRE_GPU();
  checkDropouts<float>();
  checkDropouts<BFloat16>();
  checkDropouts<Half>();
}

// A rank's part of each sample (`part r of G`, r in device memory).
TEST(RandomCudaKernels, DropoutOfPartsIsTheCpuKernels) {
  DSC_REQUIRE_GPU();
  const int64_t samples = 3, each = 7, n = samples * each;
  auto x = randomTensor<float>(n, 8);
  for (int64_t first : {0, 5})
    for (int64_t r : {0, 1, 2}) {
      const std::vector<int64_t> key{1234, 2, first, 1}, part{r};
      const DropoutSite site{n, each, 0.3, 3, 3};
      std::vector<float> want(n);
      cpu::dropout(cpu::Queue{}, x.data(), key.data(), want.data(), site, part.data());
      DeviceBuffer<float> din(x), dout(static_cast<size_t>(n));
      DeviceBuffer<int64_t> dkey(key), dpart(part);
      gpu::dropout(nullptr, din.get(), dkey.get(), dout.get(), site, dpart.get());
      EXPECT_TRUE(bitwiseEqual(dout.host(), want)) << "part " << r << ", first " << first;
    }
}

TEST(RandomCudaKernels, RandomLtdIndicesAreTheCpuKernels) {
  DSC_REQUIRE_GPU();
  for (int64_t first : {0, 5})
    for (auto [length, kept] : {std::pair{1, 1}, {16, 8}, {1024, 512}, {4096, 1000}}) {
      const std::vector<int64_t> key{1234, 3, first, 1};
      const dsc::kernels::LtdSite site{3, length, kept, 2};
      std::vector<int64_t> want(size_t(site.samples * kept));
      cpu::randomLtdIndices(cpu::Queue{}, key.data(), want.data(), site);
      DeviceBuffer<int64_t> dkey(key), dout(want.size());
      gpu::randomLtdIndices(nullptr, dkey.get(), dout.get(), site);
      EXPECT_EQ(dout.host(), want) << length << " tokens, " << kept << " kept";
    }
}

TEST(RandomCudaKernels, UniformIsTheCpuKernels) {
  DSC_REQUIRE_GPU();
  for (int64_t first : {0, 1, 3})
    for (auto [samples, perSample] : {std::pair{3, 7}, {4, 4096}, {1, 1}})
      for (auto [low, high] : {std::pair{0.0, 1.0}, {0.99, 1.01}, {-2.5, 3.0}}) {
        const std::vector<int64_t> key{1234, 3, first, 1};
        const dsc::kernels::UniformSite site{samples * perSample, perSample, low, high, 6};
        std::vector<float> want(size_t(site.numel));
        cpu::randomUniform(cpu::Queue{}, key.data(), want.data(), site);
        DeviceBuffer<int64_t> dkey(key);
        DeviceBuffer<float> dout(want.size());
        gpu::randomUniform(nullptr, dkey.get(), dout.get(), site);
        EXPECT_TRUE(bitwiseEqual(dout.host(), want))
            << samples << "x" << perSample << " [" << low << ", " << high << "]";
      }
}

} // namespace
