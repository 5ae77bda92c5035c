//===- ReduceCudaTest.cu - CUDA reductions against the CPU library --------===//
//
// Both accumulate in double (integers in int64) in different orders, so a
// result may differ from the CPU's by one rounding of the element type
// each way, plus double's rounding over the sum of magnitudes; maxima and
// integer sums are exact. Runs repeat bitwise.

#include "dsc/kernels/Reduce.h"
#include "dsc/kernels/cuda/Reduce.cuh"

#include "KernelCudaTestSupport.h"

#include <cmath>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

enum class Kind { Sum, Mean, Max, Squares };

struct Shape {
  int64_t outer, n, inner;
};

template <typename T> void runCpu(Kind k, const T *in, T *out, Shape s) {
  cpu::Queue q;
  if (k == Kind::Sum) cpu::reduceSum(q, in, out, s.outer, s.n, s.inner);
  if (k == Kind::Max) cpu::reduceMax(q, in, out, s.outer, s.n, s.inner);
  if constexpr (!std::is_integral_v<T>) {
    if (k == Kind::Mean) cpu::reduceMean(q, in, out, s.outer, s.n, s.inner);
    if (k == Kind::Squares) cpu::sumSquares(q, in, out, s.outer, s.n, s.inner);
  }
}

template <typename C> void runGpu(Kind k, const C *in, C *out, Shape s) {
  cudaStream_t q = nullptr;
  if (k == Kind::Sum) gpu::reduceSum(q, in, out, s.outer, s.n, s.inner);
  if (k == Kind::Max) gpu::reduceMax(q, in, out, s.outer, s.n, s.inner);
  if constexpr (!std::is_integral_v<C>) {
    if (k == Kind::Mean) gpu::reduceMean(q, in, out, s.outer, s.n, s.inner);
    if (k == Kind::Squares) gpu::sumSquares(q, in, out, s.outer, s.n, s.inner);
  }
}

template <typename T> void check(Kind kind, Shape s, unsigned seed) {
  auto in = randomTensor<T>(s.outer * s.n * s.inner, seed);
  std::vector<T> want(s.outer * s.inner);
  runCpu(kind, in.data(), want.data(), s);
  DeviceBuffer<T> din(in), dout(want.size()), again(want.size());
  runGpu(kind, din.get(), dout.get(), s);
  runGpu(kind, din.get(), again.get(), s);
  std::vector<T> got = dout.host();
  EXPECT_TRUE(bitwiseEqual(got, again.host())) << "run to run";
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t q = 0; q < s.inner; ++q) {
      double magnitude = 0;
      for (int64_t j = 0; j < s.n; ++j) {
        double x = asDouble(in[(o * s.n + j) * s.inner + q]);
        magnitude += kind == Kind::Squares ? x * x : std::abs(x);
      }
      double g = asDouble(got[o * s.inner + q]), w = asDouble(want[o * s.inner + q]);
      std::string where = typeName<T>() + " kind " + std::to_string(int(kind)) + " (" +
                          std::to_string(s.outer) + ", " + std::to_string(s.n) + ", " +
                          std::to_string(s.inner) + ") at " + std::to_string(o) + "," +
                          std::to_string(q);
      if (kind == Kind::Max || std::is_integral_v<T> || std::isnan(w))
        EXPECT_TRUE(g == w || (std::isnan(g) && std::isnan(w))) << where << ": " << g << " vs " << w;
      else
        EXPECT_NEAR(g, w, 2 * roundingOf<T>() * std::abs(w) + 2 * subnormalRoundingOf<T>() +
                              1e-12 * magnitude)
            << where;
    }
}

const Shape kShapes[] = {{1, 1, 1},       {3, 7, 1},     {1, 100003, 1}, {5, 40000, 1},
                         {1, 513, 769},   {3, 300, 5},   {7, 1, 3},      {4, 0, 3},
                         {1, 512, 768},   {1, 512, 3072}, {4096, 768, 1}, {1, (1 << 22) + 1, 1}};

template <typename T> void checkAll(bool floatKinds) {
  unsigned seed = 1;
  for (Shape s : kShapes) {
    check<T>(Kind::Sum, s, seed++);
    check<T>(Kind::Max, s, seed++);
    if (floatKinds) {
      check<T>(Kind::Mean, s, seed++);
      check<T>(Kind::Squares, s, seed++);
    }
  }
}

TEST(ReduceCudaKernels, Float) { DSC_REQUIRE_GPU(); checkAll<float>(true); }
TEST(ReduceCudaKernels, Double) { DSC_REQUIRE_GPU(); checkAll<double>(true); }
TEST(ReduceCudaKernels, BFloat16) { DSC_REQUIRE_GPU(); checkAll<BFloat16>(true); }
TEST(ReduceCudaKernels, Half) { DSC_REQUIRE_GPU(); checkAll<Half>(true); }
TEST(ReduceCudaKernels, Int64) { DSC_REQUIRE_GPU(); checkAll<int64_t>(false); }
TEST(ReduceCudaKernels, Int32) { DSC_REQUIRE_GPU(); checkAll<int32_t>(false); }

TEST(ReduceCudaKernels, MaxPropagatesNaN) {
  DSC_REQUIRE_GPU();
  Shape s{2, 40000, 1};
  auto in = randomTensor<float>(s.outer * s.n, 3);
  in[40000 + 20000] = NAN;
  DeviceBuffer<float> din(in), dout(2);
  gpu::reduceMax(nullptr, din.get(), dout.get(), s.outer, s.n, s.inner);
  auto got = dout.host();
  EXPECT_FALSE(std::isnan(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
}

} // namespace
