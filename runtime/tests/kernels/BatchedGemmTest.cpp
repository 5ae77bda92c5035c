//===- BatchedGemmTest.cpp - strided-batched GEMM and epilogues, CPU ------===//
//
// batchedGemm against a triple loop in double: every transpose, broadcast
// operands (stride 0), batches whose items run on OpenMP threads and
// batches that run in order (large items, overlapping outputs), 16-bit
// operands, and each epilogue against its formula.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Gemm.h"
#include "dsc/runtime/Error.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <type_traits>
#include <string>
#include <vector>

using namespace dsc::kernels;
using dsc::kernels::cpu::Queue;
using dsc::rt::BFloat16;
using dsc::rt::Half;

namespace {

template <typename T> std::vector<T> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(d(rng));
  return v;
}

/// op(A) @ op(B) of batch item t, in double, from the operands as stored.
template <typename T>
std::vector<double> product(const GemmShape &s, const T *a, const T *b,
                            int64_t t) {
  std::vector<double> p(std::size_t(s.m * s.n));
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < s.k; ++q) {
        const double x = float(s.transA ? a[t * s.strideA + q * s.m + i]
                                        : a[t * s.strideA + i * s.k + q]);
        const double y = float(s.transB ? b[t * s.strideB + j * s.k + q]
                                        : b[t * s.strideB + q * s.n + j]);
        sum += x * y;
      }
      p[std::size_t(i * s.n + j)] = sum;
    }
  return p;
}

/// fp32 sums of k products of values in [-1, 1]: OpenBLAS's order against
/// exact, k * 2^-24 * k at worst; 16-bit results add their rounding.
template <typename T> double tolerance(const GemmShape &s, double want) {
  const double f32 = 1e-6 * double(s.k) + 1e-5;
  if constexpr (std::is_same_v<T, float>)
    return f32 * (1 + std::fabs(want));
  else if constexpr (std::is_same_v<T, BFloat16>)
    return std::ldexp(std::fabs(want), -8) + f32;
  else
    return std::ldexp(std::fabs(want), -11) + f32;
}

template <typename T>
void expectBatchMatches(GemmShape s, float alpha, float beta,
                        const std::string &what) {
  const int64_t spanA = (s.batch - 1) * s.strideA + s.m * s.k;
  const int64_t spanB = (s.batch - 1) * s.strideB + s.k * s.n;
  const int64_t spanC = (s.batch - 1) * s.strideC + s.m * s.n;
  auto a = random<T>(std::size_t(spanA), 1), b = random<T>(std::size_t(spanB), 2);
  auto c = random<T>(std::size_t(spanC), 3);
  const auto c0 = c;
  cpu::batchedGemm(Queue{}, s, a.data(), b.data(), c.data(), alpha, beta);
  for (int64_t t = 0; t < s.batch; ++t) {
    auto p = product(s, a.data(), b.data(), t);
    for (int64_t e = 0; e < s.m * s.n; ++e) {
      const double want =
          alpha * p[std::size_t(e)] +
          (beta != 0 ? beta * double(float(c0[std::size_t(t * s.strideC + e)])) : 0);
      ASSERT_NEAR(float(c[std::size_t(t * s.strideC + e)]), want,
                  tolerance<T>(s, want))
          << what << " item " << t << " element " << e;
    }
  }
}

/// Shapes: items that run on threads (small), in order (large, few),
/// on threads again (large, as many as threads).
std::vector<GemmShape> shapes() {
  std::vector<GemmShape> out;
  for (auto [batch, m, n, k] : {std::array<int64_t, 4>{7, 5, 7, 9},
                                std::array<int64_t, 4>{2, 70, 66, 64},
                                std::array<int64_t, 4>{9, 70, 66, 64},
                                std::array<int64_t, 4>{1, 3, 4, 5}}) {
    GemmShape s;
    s.batch = batch, s.m = m, s.n = n, s.k = k;
    out.push_back(s);
  }
  return out;
}

template <typename T> void everyLayout() {
  for (GemmShape s : shapes())
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (int broadcast : {0, 1, 2}) { // none, A, B
          s.transA = ta, s.transB = tb;
          s.strideA = broadcast == 1 ? 0 : s.m * s.k;
          s.strideB = broadcast == 2 ? 0 : s.k * s.n;
          s.strideC = s.m * s.n + 3; // gaps between output items
          expectBatchMatches<T>(s, 1.0f, 0.0f,
                                "batch " + std::to_string(s.batch) + " m " +
                                    std::to_string(s.m) + " ta " +
                                    std::to_string(ta) + " tb " +
                                    std::to_string(tb) + " broadcast " +
                                    std::to_string(broadcast));
        }
}

} // namespace

TEST(KernelsBatchedGemm, Fp32EveryLayout) { everyLayout<float>(); }
TEST(KernelsBatchedGemm, Bf16EveryLayout) { everyLayout<BFloat16>(); }
TEST(KernelsBatchedGemm, HalfEveryLayout) { everyLayout<Half>(); }

TEST(KernelsBatchedGemm, AlphaBetaOnThreads) {
  GemmShape s;
  s.batch = 16, s.m = 8, s.n = 8, s.k = 8;
  s.strideA = 64, s.strideB = 0, s.strideC = 64;
  expectBatchMatches<float>(s, 0.5f, -2.0f, "alpha 0.5 beta -2");
  expectBatchMatches<BFloat16>(s, 2.0f, 1.0f, "bf16 alpha 2 beta 1");
}

// Items whose outputs overlap run in order: the later item's values win,
// as in a loop of calls.
TEST(KernelsBatchedGemm, OverlappingOutputsRunInOrder) {
  GemmShape s;
  s.batch = 6, s.m = 2, s.n = 2, s.k = 3;
  s.strideA = 6, s.strideB = 6, s.strideC = 2; // item t+1 overwrites row 2 of t
  auto a = random<float>(36, 4), b = random<float>(36, 5);
  std::vector<float> c(2 * 5 + 4, 0.0f), loop = c;
  cpu::batchedGemm(Queue{}, s, a.data(), b.data(), c.data());
  GemmShape one = s;
  one.batch = 1;
  for (int64_t t = 0; t < s.batch; ++t)
    dsc::rt::cpu::gemmF32(one, a.data() + t * 6, b.data() + t * 6,
                          loop.data() + t * 2);
  EXPECT_EQ(c, loop);
}

// The same result on 1 and 2 threads (each item is the same sgemm).
TEST(KernelsBatchedGemm, ThreadCountDoesNotChangeTheResult) {
  GemmShape s;
  s.batch = 12, s.m = 16, s.n = 24, s.k = 32;
  s.strideA = s.m * s.k, s.strideB = s.k * s.n, s.strideC = s.m * s.n;
  auto a = random<float>(std::size_t(s.batch * s.strideA), 6);
  auto b = random<float>(std::size_t(s.batch * s.strideB), 7);
  std::vector<float> one(std::size_t(s.batch * s.strideC)), two = one;
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  cpu::batchedGemm(Queue{}, s, a.data(), b.data(), one.data());
  omp_set_num_threads(2);
  cpu::batchedGemm(Queue{}, s, a.data(), b.data(), two.data());
  omp_set_num_threads(before);
  EXPECT_EQ(one, two);
}

namespace {

/// Each epilogue of one [m, n] product against its formula on the double
/// product (rounded to fp32, as the library computes the epilogue on the
/// fp32 product).
template <typename T> void epilogueMatches(GemmEpilogue kind, bool ta, bool tb) {
  GemmShape s;
  s.m = 37, s.n = 70, s.k = 45, s.transA = ta, s.transB = tb;
  const int64_t auxLd = 72;
  auto a = random<T>(std::size_t(s.m * s.k), 8), b = random<T>(std::size_t(s.k * s.n), 9);
  auto bias = random<T>(std::size_t(s.n), 10);
  auto auxIn = random<T>(std::size_t(s.m * auxLd), 11);
  std::vector<T> c(std::size_t(s.m * s.n), T(0.0f)), aux = auxIn;
  std::vector<T> biasGrad(std::size_t(std::max(s.m, s.n)), T(-9.0f));
  GemmEpilogueArgs e;
  e.kind = kind, e.bias = bias.data(), e.aux = aux.data(), e.auxLd = auxLd;
  e.biasGrad = biasGrad.data();
  cpu::batchedGemm(Queue{}, s, a.data(), b.data(), c.data(), 1.0f, 0.0f, e);

  using K = GemmEpilogue;
  auto p = product(s, a.data(), b.data(), 0);
  std::vector<double> columnSum(std::size_t(s.n), 0.0);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double x = float(p[std::size_t(i * s.n + j)]);
      const double productTol = tolerance<float>(s, x);
      if (kind == K::Bias || kind == K::GeluBias || kind == K::GeluAuxBias)
        x += float(bias[std::size_t(j)]);
      if (kind == K::GeluAux || kind == K::GeluAuxBias)
        ASSERT_NEAR(float(aux[std::size_t(i * auxLd + j)]), x, tolerance<T>(s, x))
            << "aux " << i << "," << j;
      if (kind == K::Gelu || kind == K::GeluBias || kind == K::GeluAux ||
          kind == K::GeluAuxBias)
        x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      if (kind == K::DGelu || kind == K::DGeluBGrad) {
        const double z = float(auxIn[std::size_t(i * auxLd + j)]);
        const double t = std::tanh(std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z));
        x *= 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * std::sqrt(2 / M_PI) *
                                 (1 + 3 * 0.044715 * z * z);
      }
      columnSum[std::size_t(j)] += x;
      // gelu and its derivative are at most ~1.13 in slope: the fp32
      // product's error carries over, plus fp32 tanh's few ulps, plus the
      // rounding of the stored value (16-bit: at its own magnitude).
      ASSERT_NEAR(float(c[std::size_t(i * s.n + j)]), x,
                  1.2 * productTol + (tolerance<T>(s, x) - tolerance<float>(s, 0)) + 1e-6)
          << "C " << i << "," << j;
    }
  // aux outside the [m, n] part of each row is untouched.
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = s.n; j < auxLd; ++j)
      ASSERT_EQ(float(aux[std::size_t(i * auxLd + j)]),
                float(auxIn[std::size_t(i * auxLd + j)]));
  auto sumTolerance = [&](double want, int64_t terms) {
    return tolerance<T>(s, want) + 2e-6 * double(terms);
  };
  if (kind == K::DGeluBGrad)
    for (int64_t j = 0; j < s.n; ++j)
      ASSERT_NEAR(float(biasGrad[std::size_t(j)]), columnSum[std::size_t(j)],
                  sumTolerance(columnSum[std::size_t(j)], s.m))
          << "bias grad " << j;
  if (kind == K::BGradA)
    for (int64_t i = 0; i < s.m; ++i) {
      double want = 0;
      for (int64_t q = 0; q < s.k; ++q)
        want += float(ta ? a[std::size_t(q * s.m + i)] : a[std::size_t(i * s.k + q)]);
      ASSERT_NEAR(float(biasGrad[std::size_t(i)]), want, sumTolerance(want, 0))
          << "bias grad " << i;
    }
  if (kind == K::BGradB)
    for (int64_t j = 0; j < s.n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < s.k; ++q)
        want += float(tb ? b[std::size_t(j * s.k + q)] : b[std::size_t(q * s.n + j)]);
      ASSERT_NEAR(float(biasGrad[std::size_t(j)]), want, sumTolerance(want, 0))
          << "bias grad " << j;
    }
}

const GemmEpilogue kEpilogues[] = {
    GemmEpilogue::Bias,    GemmEpilogue::Gelu,       GemmEpilogue::GeluBias,
    GemmEpilogue::GeluAux, GemmEpilogue::GeluAuxBias, GemmEpilogue::DGelu,
    GemmEpilogue::DGeluBGrad, GemmEpilogue::BGradA,  GemmEpilogue::BGradB};

} // namespace

TEST(KernelsBatchedGemm, EpiloguesFp32) {
  for (GemmEpilogue kind : kEpilogues)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE("epilogue " + std::to_string(int(kind)) + " ta " +
                     std::to_string(ta) + " tb " + std::to_string(tb));
        epilogueMatches<float>(kind, ta, tb);
      }
}

TEST(KernelsBatchedGemm, EpiloguesBf16) {
  for (GemmEpilogue kind : kEpilogues) {
    SCOPED_TRACE("epilogue " + std::to_string(int(kind)));
    epilogueMatches<BFloat16>(kind, false, true);
  }
}

TEST(KernelsBatchedGemm, EpiloguesHalf) {
  for (GemmEpilogue kind : kEpilogues) {
    SCOPED_TRACE("epilogue " + std::to_string(int(kind)));
    epilogueMatches<Half>(kind, true, false);
  }
}

TEST(KernelsBatchedGemm, BadEpilogueArgumentsAreErrors) {
  GemmShape s;
  s.m = 2, s.n = 3, s.k = 4;
  std::vector<float> a(8), b(12), c(6), v(16);
  auto message = [&](GemmShape shape, GemmEpilogueArgs e) -> std::string {
    try {
      cpu::batchedGemm(Queue{}, shape, a.data(), b.data(), c.data(), 1, 0, e);
    } catch (const dsc::rt::Error &error) {
      return error.what();
    }
    return "(no error)";
  };
  GemmEpilogueArgs e;
  e.kind = GemmEpilogue::Bias;
  EXPECT_EQ(message(s, e), "gemm: the epilogue needs a bias vector");
  e.kind = GemmEpilogue::GeluAux;
  EXPECT_EQ(message(s, e), "gemm: the epilogue needs an aux matrix");
  e.aux = v.data(), e.auxLd = 2;
  EXPECT_EQ(message(s, e), "gemm: aux leading dimension 2 is below n = 3");
  e.kind = GemmEpilogue::BGradA;
  EXPECT_EQ(message(s, e), "gemm: the epilogue needs a bias-gradient vector");
  e.biasGrad = v.data();
  GemmShape batched = s;
  batched.batch = 2, batched.strideC = 6;
  EXPECT_EQ(message(batched, e),
            "gemm: an epilogue needs one product, not a batch of 2");
  GemmShape empty = s;
  empty.k = 0;
  EXPECT_EQ(message(empty, e),
            "gemm: an epilogue needs a non-empty product, not 2x3x0");
  GemmShape negative = s;
  negative.m = -1;
  EXPECT_EQ(message(negative, e), "gemm: negative size 1x-1x3x4");
}
