#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using dsc::rt::cpu::GemmShape;
using dsc::rt::cpu::gemmF32;

/// Plain triple loop in double: the reference.
static std::vector<float> naive(const GemmShape &s, const std::vector<float> &a,
                                const std::vector<float> &b) {
  std::vector<float> c(s.batch * s.m * s.n);
  for (int64_t t = 0; t < s.batch; ++t)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          float x = s.transA ? a[t * s.strideA + p * s.m + i] : a[t * s.strideA + i * s.k + p];
          float y = s.transB ? b[t * s.strideB + j * s.k + p] : b[t * s.strideB + p * s.n + j];
          sum += double(x) * double(y);
        }
        c[t * s.m * s.n + i * s.n + j] = float(sum);
      }
  return c;
}

static std::vector<float> random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

TEST(CpuGemm, AllTransposesAndBroadcastBatches) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t strideB : {0, 1}) {
        GemmShape s;
        s.batch = 3, s.m = 5, s.n = 7, s.k = 9, s.transA = ta, s.transB = tb;
        s.strideA = s.m * s.k, s.strideB = strideB * s.k * s.n, s.strideC = s.m * s.n;
        auto a = random(s.batch * s.m * s.k, 1), b = random(s.batch * s.k * s.n, 2);
        std::vector<float> c(s.batch * s.m * s.n, 42.0f);
        gemmF32(s, a.data(), b.data(), c.data());
        auto want = naive(s, a, b);
        for (size_t i = 0; i < c.size(); ++i)
          ASSERT_NEAR(c[i], want[i], 1e-5) << "ta=" << ta << " tb=" << tb << " i=" << i;
      }
}

TEST(CpuGemm, AlphaAndBetaAccumulate) {
  GemmShape s;
  s.m = 2, s.n = 2, s.k = 1;
  std::vector<float> a = {1, 2}, b = {3, 4}, c = {1, 1, 1, 1};
  gemmF32(s, a.data(), b.data(), c.data(), 2.0f, 1.0f);
  EXPECT_EQ(c, (std::vector<float>{7, 9, 13, 17}));
}

TEST(CpuGemm, BadShapesAreErrors) {
  GemmShape s;
  s.m = -1;
  EXPECT_THROW(gemmF32(s, nullptr, nullptr, nullptr), dsc::rt::Error);
  GemmShape t;
  t.batch = 2, t.m = t.n = t.k = 1;
  float x = 0;
  EXPECT_THROW(gemmF32(t, &x, &x, &x), dsc::rt::Error);
}

/// A and B of the test rounded to T, the product of the rounded operands in
/// double, and gemm's T result: within one rounding of T (half an ulp,
/// relative `eps`) of that product, i.e. computed in fp32, not in T.
template <typename T, typename Gemm>
static void checkSixteenBit(Gemm gemm, double eps) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      GemmShape s;
      s.batch = 2, s.m = 5, s.n = 7, s.k = 64, s.transA = ta, s.transB = tb;
      s.strideA = s.m * s.k, s.strideB = 0, s.strideC = s.m * s.n;
      auto a32 = random(s.batch * s.m * s.k, 3), b32 = random(s.k * s.n, 4);
      std::vector<T> a(a32.begin(), a32.end()), b(b32.begin(), b32.end());
      std::vector<float> aw(a.begin(), a.end()), bw(b.begin(), b.end());
      auto want = naive(s, aw, bw);
      std::vector<T> c(s.batch * s.m * s.n, T(42.0f));
      gemm(s, a.data(), b.data(), c.data(), 1.0f, 0.0f);
      for (size_t i = 0; i < c.size(); ++i)
        ASSERT_NEAR(float(c[i]), want[i], std::abs(want[i]) * eps + 1e-6)
            << "ta=" << ta << " tb=" << tb << " i=" << i;
    }
  // beta reads C: C = 2 * a * b + 1 * C, rounded once.
  GemmShape s;
  s.m = 1, s.n = 2, s.k = 1;
  std::vector<T> a = {T(1.0f)}, b = {T(3.0f), T(4.0f)}, c = {T(1.0f), T(-1.0f)};
  gemm(s, a.data(), b.data(), c.data(), 2.0f, 1.0f);
  EXPECT_EQ(float(c[0]), 7.0f);
  EXPECT_EQ(float(c[1]), 7.0f);
}

TEST(CpuGemm, BFloat16ComputesInF32) {
  checkSixteenBit<dsc::rt::BFloat16>(dsc::rt::cpu::gemmBF16, 0x1p-8);
}

TEST(CpuGemm, HalfComputesInF32) {
  checkSixteenBit<dsc::rt::Half>(dsc::rt::cpu::gemmF16, 0x1p-11);
}
