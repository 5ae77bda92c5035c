// The library's copy and linear kernels against plain references.
#include "dsc/kernels/Copy.h"
#include "dsc/kernels/Gemm.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <cstring>
#include <random>
#include <vector>

using namespace dsc::kernels::cpu;

TEST(KernelCopy, EverySizeAroundTheChunksIsCopiedExactly) {
  // Below, at and across the 1 MiB chunks the parallel copy uses, and an
  // odd tail.
  for (int64_t bytes : {int64_t(0), int64_t(1), int64_t(1) << 20, (int64_t(2) << 20) - 1,
                        int64_t(2) << 20, (int64_t(5) << 20) + 7}) {
    std::vector<unsigned char> src(bytes), dst(bytes + 1, 0xAB);
    for (int64_t i = 0; i < bytes; ++i)
      src[i] = static_cast<unsigned char>(i * 131 + 7);
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      std::fill(dst.begin(), dst.end(), 0xAB);
      copy(Queue{}, src.data(), dst.data(), bytes);
      EXPECT_EQ(0, std::memcmp(src.data(), dst.data(), bytes)) << bytes;
      EXPECT_EQ(0xAB, dst[bytes]) << "wrote past " << bytes << " bytes";
    }
  }
}

static std::vector<float> random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(rng);
  return v;
}

/// y = x @ w^T + bias in double.
static std::vector<double> naiveLinear(const std::vector<float> &x,
                                       const std::vector<float> &w,
                                       const float *bias, int64_t m, int64_t n,
                                       int64_t k) {
  std::vector<double> y(m * n);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias ? bias[j] : 0.0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(x[r * k + p]) * double(w[j * k + p]);
      y[r * n + j] = sum;
    }
  return y;
}

TEST(KernelLinear, MatchesTheReferenceWithAndWithoutBias) {
  const int64_t m = 7, n = 13, k = 33;
  std::vector<float> x = random(m * k, 1), w = random(n * k, 2), b = random(n, 3);
  for (const float *bias : {static_cast<const float *>(nullptr),
                            static_cast<const float *>(b.data())}) {
    std::vector<float> y(m * n, 123.0f); // overwritten, never read
    linear(Queue{}, x.data(), w.data(), bias, y.data(), m, n, k);
    std::vector<double> ref = naiveLinear(x, w, bias, m, n, k);
    for (int64_t i = 0; i < m * n; ++i)
      // fp32 GEMM: k products of |x|,|w| <= 1, each rounded once.
      EXPECT_NEAR(ref[i], y[i], 1e-6 * k) << i;
  }
}

TEST(KernelLinear, Bf16RoundsTheResultOnce) {
  const int64_t m = 3, n = 5, k = 16;
  std::vector<float> xf = random(m * k, 4), wf = random(n * k, 5), bf = random(n, 6);
  std::vector<dsc::rt::BFloat16> x(xf.begin(), xf.end()), w(wf.begin(), wf.end()),
      b(bf.begin(), bf.end()), y(m * n);
  linear(Queue{}, x.data(), w.data(), b.data(), y.data(), m, n, k);
  // The reference sees the operands as bf16 holds them.
  std::vector<float> xr(x.begin(), x.end()), wr(w.begin(), w.end()), br(b.begin(), b.end());
  std::vector<double> ref = naiveLinear(xr, wr, br.data(), m, n, k);
  for (int64_t i = 0; i < m * n; ++i)
    // One rounding to bf16 (8 bits of mantissa): half an ulp, 2^-9 relative.
    EXPECT_NEAR(ref[i], float(y[i]), std::abs(ref[i]) * 0x1p-8 + 1e-6 * k) << i;
}

TEST(KernelGemm, OneCallCoversABroadcastBatch) {
  // Three items of A times one B (stride 0): each item is its own product.
  GemmShape s;
  s.batch = 3;
  s.m = 4;
  s.n = 6;
  s.k = 5;
  s.strideA = s.m * s.k;
  s.strideB = 0;
  s.strideC = s.m * s.n;
  std::vector<float> a = random(s.batch * s.m * s.k, 7), b = random(s.k * s.n, 8);
  std::vector<float> c(s.batch * s.m * s.n);
  batchedGemm(Queue{}, s, a.data(), b.data(), c.data(), 1.0f, 0.0f);
  for (int64_t t = 0; t < s.batch; ++t)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < s.k; ++p)
          sum += double(a[t * s.strideA + i * s.k + p]) * double(b[p * s.n + j]);
        EXPECT_NEAR(sum, c[t * s.strideC + i * s.n + j], 1e-6 * s.k);
      }
}
