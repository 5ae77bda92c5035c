//===- RowTest.cpp - the row kernels against naive double references ------===//
//
// Each kernel of dsc/kernels/Row.h for float, bf16 and half, on sizes that
// exercise the edges of its loops (one element, sizes that are not a
// multiple of the SIMD width, inner > 1 and more columns than one column
// block), against a reference computed in double from the same rounded
// inputs; and each kernel's result is the same, bit for bit, on one and on
// two OpenMP threads.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Row.h"

#include "RowTestSupport.h"

#include <omp.h>

#include <cstring>
#include <functional>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;
using dsc::rt::BFloat16;
using dsc::rt::Half;

namespace {

struct Shape {
  std::int64_t outer, n, inner;
  std::size_t size() const { return std::size_t(outer * n * inner); }
};

// Rows of one element, odd lengths around the SIMD widths, GPT-2's 768,
// inner > 1 with fewer and with more columns than one block (64).
const Shape kShapes[] = {{1, 1, 1}, {3, 1, 1},  {5, 7, 1},    {4, 33, 1}, {2, 768, 1},
                         {3, 5, 3}, {2, 9, 70}, {1, 130, 65}, {2, 1, 5}};

std::string name(const Shape &s) {
  return "(" + std::to_string(s.outer) + ", " + std::to_string(s.n) + ", " +
         std::to_string(s.inner) + ")";
}

std::size_t at(const Shape &s, std::int64_t o, std::int64_t j, std::int64_t q) {
  return std::size_t(o * s.n * s.inner + j * s.inner + q);
}

std::vector<double> softmaxReference(const std::vector<double> &x, const Shape &s, bool log) {
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t q = 0; q < s.inner; ++q) {
      double m = -INFINITY, sum = 0;
      for (std::int64_t j = 0; j < s.n; ++j)
        m = std::max(m, x[at(s, o, j, q)]);
      for (std::int64_t j = 0; j < s.n; ++j)
        sum += std::exp(x[at(s, o, j, q)] - m);
      for (std::int64_t j = 0; j < s.n; ++j) {
        double v = x[at(s, o, j, q)] - m;
        y[at(s, o, j, q)] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  return y;
}

std::vector<double> softmaxBackwardReference(const std::vector<double> &y,
                                             const std::vector<double> &dy, const Shape &s,
                                             bool log) {
  std::vector<double> dx(y.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t q = 0; q < s.inner; ++q) {
      double sum = 0;
      for (std::int64_t j = 0; j < s.n; ++j) {
        std::size_t i = at(s, o, j, q);
        sum += log ? dy[i] : dy[i] * y[i];
      }
      for (std::int64_t j = 0; j < s.n; ++j) {
        std::size_t i = at(s, o, j, q);
        dx[i] = log ? dy[i] - std::exp(y[i]) * sum : (dy[i] - sum) * y[i];
      }
    }
  return dx;
}

struct NormReference {
  std::vector<double> y, mean, rstd;
};

NormReference normReference(const std::vector<double> &x, const std::vector<double> *w,
                            const std::vector<double> *b, std::int64_t rows, std::int64_t n,
                            double eps, bool rms) {
  NormReference r{std::vector<double>(x.size()), std::vector<double>(rows),
                  std::vector<double>(rows)};
  for (std::int64_t i = 0; i < rows; ++i) {
    const double *xr = x.data() + i * n;
    double mean = 0, var = 0;
    if (!rms) {
      for (std::int64_t j = 0; j < n; ++j)
        mean += xr[j];
      mean /= double(n);
    }
    for (std::int64_t j = 0; j < n; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    double rstd = 1.0 / std::sqrt(var / double(n) + eps);
    for (std::int64_t j = 0; j < n; ++j)
      r.y[i * n + j] = (xr[j] - mean) * rstd * (w ? (*w)[j] : 1.0) + (b ? (*b)[j] : 0.0);
    r.mean[i] = mean;
    r.rstd[i] = rstd;
  }
  return r;
}

struct NormGradients {
  std::vector<double> dx, dweight, dbias;
};

// From the statistics the forward kernel saved (as the backward kernel
// takes them), so that this checks the backward formula alone.
NormGradients normBackwardReference(const std::vector<double> &dy, const std::vector<double> &x,
                                    const std::vector<double> *w, const std::vector<float> &mean,
                                    const std::vector<float> &rstd, std::int64_t rows,
                                    std::int64_t n, bool rms) {
  NormGradients g{std::vector<double>(x.size()), std::vector<double>(n), std::vector<double>(n)};
  for (std::int64_t i = 0; i < rows; ++i) {
    double mu = rms ? 0.0 : mean[i], rs = rstd[i], gm = 0, gx = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      double xhat = (x[i * n + j] - mu) * rs, d = dy[i * n + j] * (w ? (*w)[j] : 1.0);
      gm += d;
      gx += d * xhat;
    }
    gm = rms ? 0.0 : gm / double(n);
    gx /= double(n);
    for (std::int64_t j = 0; j < n; ++j) {
      double xhat = (x[i * n + j] - mu) * rs, d = dy[i * n + j] * (w ? (*w)[j] : 1.0);
      g.dx[i * n + j] = (d - gm - xhat * gx) * rs;
      g.dweight[j] += dy[i * n + j] * xhat;
      g.dbias[j] += dy[i * n + j];
    }
  }
  return g;
}

// Runs `kernel` on one thread and on two and expects the same bytes in
// `out` both times.
template <typename T>
void expectThreadIndependent(const std::function<void()> &kernel, const std::vector<T> &out,
                             const std::string &what) {
  int before = omp_get_max_threads();
  omp_set_num_threads(1);
  kernel();
  std::vector<T> one = out;
  omp_set_num_threads(2);
  kernel();
  omp_set_num_threads(before);
  EXPECT_EQ(0, std::memcmp(one.data(), out.data(), out.size() * sizeof(T)))
      << what << " differs between one and two threads";
}

template <typename T> class RowTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<float, BFloat16, Half>;
TYPED_TEST_SUITE(RowTest, ElementTypes);

// The absolute part of the tolerance: results that come from cancelling
// sums are held to the relative tolerance of the largest result; half also
// allows its subnormal spacing.
template <typename T> double absTolerance(const std::vector<double> &ref) {
  return relTolerance<T>() * maxAbs(ref) + (std::is_same_v<T, Half> ? 6.0e-8 : 0.0);
}

TEST(RowExp, WithinOneUlpAndExactAtTheEdges) {
  double worst = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.0137f) {
    double ref = std::exp(double(x));
    worst = std::max(worst, std::fabs(cpu::detail::expBounded(x) - ref) / ref);
  }
  EXPECT_LE(worst, 1.2e-7);
  EXPECT_EQ(cpu::detail::expBounded(0.0f), 1.0f);
  EXPECT_EQ(cpu::detail::expBounded(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::detail::expBounded(-200.0f), 0.0f);
  EXPECT_EQ(cpu::detail::expBounded(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(cpu::detail::expBounded(NAN)));
}

TYPED_TEST(RowTest, SoftmaxAndLogSoftmaxForward) {
  using T = TypeParam;
  for (const Shape &s : kShapes)
    for (bool log : {false, true}) {
      std::vector<T> x = randomVector<T>(s.size(), 1 + s.size()), y(s.size());
      if (log)
        cpu::logSoftmaxForward(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
      else
        cpu::softmaxForward(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
      std::vector<double> ref = softmaxReference(widen(x), s, log);
      expectClose(y, ref, relTolerance<T>(),
                  log ? absTolerance<T>(ref) : (std::is_same_v<T, Half> ? 6.0e-8 : 1e-30),
                  (log ? "log_softmax " : "softmax ") + name(s));
    }
}

TYPED_TEST(RowTest, SoftmaxInPlaceEqualsOutOfPlace) {
  using T = TypeParam;
  for (const Shape &s : {Shape{3, 100, 1}, Shape{2, 6, 7}})
    for (bool log : {false, true}) {
      std::vector<T> x = randomVector<T>(s.size(), 7), y(s.size());
      auto run = log ? cpu::logSoftmaxForward<T> : cpu::softmaxForward<T>;
      run(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
      run(cpu::Queue{}, x.data(), x.data(), s.outer, s.n, s.inner);
      EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(T))) << name(s);
    }
}

TYPED_TEST(RowTest, SoftmaxOfMaskedScoresIsExactlyZero) {
  using T = TypeParam;
  // A causal attention row: the future keys are -inf.
  std::vector<T> x = randomVector<T>(10, 3), y(10);
  for (int j = 4; j < 10; ++j)
    x[j] = T(-INFINITY);
  cpu::softmaxForward(cpu::Queue{}, x.data(), y.data(), 1, 10, 1);
  for (int j = 4; j < 10; ++j)
    EXPECT_EQ(static_cast<float>(y[j]), 0.0f) << j;
  // A row that is entirely -inf has no softmax: NaN, as in PyTorch.
  std::vector<T> masked(5, T(-INFINITY)), out(5);
  cpu::softmaxForward(cpu::Queue{}, masked.data(), out.data(), 1, 5, 1);
  EXPECT_TRUE(std::isnan(static_cast<float>(out[0])));
}

TYPED_TEST(RowTest, SoftmaxAndLogSoftmaxBackward) {
  using T = TypeParam;
  for (const Shape &s : kShapes)
    for (bool log : {false, true}) {
      std::vector<T> x = randomVector<T>(s.size(), 11), y(s.size()), dx(s.size());
      std::vector<T> dy = randomVector<T>(s.size(), 12, -1.0f, 1.0f);
      if (log) {
        cpu::logSoftmaxForward(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
        cpu::logSoftmaxBackward(cpu::Queue{}, y.data(), dy.data(), dx.data(), s.outer, s.n,
                                s.inner);
      } else {
        cpu::softmaxForward(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
        cpu::softmaxBackward(cpu::Queue{}, y.data(), dy.data(), dx.data(), s.outer, s.n, s.inner);
      }
      std::vector<double> ref = softmaxBackwardReference(widen(y), widen(dy), s, log);
      expectClose(dx, ref, relTolerance<T>(), absTolerance<T>(ref),
                  (log ? "log_softmax backward " : "softmax backward ") + name(s));
    }
}

TYPED_TEST(RowTest, LayerNormForward) {
  using T = TypeParam;
  for (std::int64_t n : {1, 5, 33, 768})
    for (int affine = 0; affine < 4; ++affine) {
      const std::int64_t rows = 6;
      bool hasW = affine & 1, hasB = affine & 2;
      std::vector<T> x = randomVector<T>(rows * n, n, -2.0f, 4.0f), y(rows * n);
      std::vector<T> w = randomVector<T>(n, 2), b = randomVector<T>(n, 3);
      std::vector<float> mean(rows), rstd(rows);
      cpu::layerNormForward(cpu::Queue{}, x.data(), hasW ? w.data() : nullptr,
                            hasB ? b.data() : nullptr, y.data(), mean.data(), rstd.data(), rows, n,
                            1e-5);
      std::vector<double> wd = widen(w), bd = widen(b);
      NormReference ref =
          normReference(widen(x), hasW ? &wd : nullptr, hasB ? &bd : nullptr, rows, n, 1e-5, false);
      std::string what = "layer_norm n=" + std::to_string(n) + " affine=" + std::to_string(affine);
      expectClose(y, ref.y, relTolerance<T>(), absTolerance<T>(ref.y), what);
      // The statistics are rounded to float once.
      expectClose(mean, ref.mean, 6.0e-8, 1e-30, what + " mean");
      expectClose(rstd, ref.rstd, 6.0e-8, 1e-30, what + " rstd");
    }
}

TYPED_TEST(RowTest, ResidualLayerNormIsTheAddThenLayerNorm) {
  using T = TypeParam;
  const std::int64_t rows = 5, n = 37;
  std::vector<T> a = randomVector<T>(rows * n, 1), b = randomVector<T>(rows * n, 2);
  std::vector<T> w = randomVector<T>(n, 3), bias = randomVector<T>(n, 4);
  std::vector<T> residual(rows * n), y(rows * n), expected(rows * n);
  std::vector<float> mean(rows), rstd(rows), mean2(rows), rstd2(rows);
  cpu::residualLayerNormForward(cpu::Queue{}, a.data(), b.data(), w.data(), bias.data(),
                                residual.data(), y.data(), mean.data(), rstd.data(), rows, n, 1e-5);
  for (std::size_t i = 0; i < a.size(); ++i) {
    T sum = T(static_cast<float>(a[i]) + static_cast<float>(b[i]));
    ASSERT_EQ(0, std::memcmp(&sum, &residual[i], sizeof(T))) << i;
  }
  cpu::layerNormForward(cpu::Queue{}, residual.data(), w.data(), bias.data(), expected.data(),
                        mean2.data(), rstd2.data(), rows, n, 1e-5);
  EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), y.size() * sizeof(T)));
  EXPECT_EQ(mean, mean2);
  EXPECT_EQ(rstd, rstd2);
  // The residual may replace one of its operands.
  cpu::residualLayerNormForward(cpu::Queue{}, a.data(), b.data(), w.data(), bias.data(), a.data(),
                                y.data(), nullptr, nullptr, rows, n, 1e-5);
  EXPECT_EQ(0, std::memcmp(a.data(), residual.data(), a.size() * sizeof(T)));
  EXPECT_EQ(0, std::memcmp(y.data(), expected.data(), y.size() * sizeof(T)));
}

TYPED_TEST(RowTest, LayerNormBackward) {
  using T = TypeParam;
  // 1 row, rows that fill fewer chunks than there are (32), rows that
  // leave the last chunk short.
  for (std::int64_t rows : {1, 7, 67})
    for (std::int64_t n : {1, 13, 768})
      for (bool affine : {false, true}) {
        std::vector<T> x = randomVector<T>(rows * n, 5, -2.0f, 2.0f), y(rows * n), dx(rows * n),
                       dw(n), db(n);
        std::vector<T> w = randomVector<T>(n, 6), b = randomVector<T>(n, 7);
        std::vector<T> dy = randomVector<T>(rows * n, 8, -1.0f, 1.0f);
        std::vector<float> mean(rows), rstd(rows);
        const T *wp = affine ? w.data() : nullptr;
        cpu::layerNormForward(cpu::Queue{}, x.data(), wp, affine ? b.data() : nullptr, y.data(),
                              mean.data(), rstd.data(), rows, n, 1e-5);
        cpu::layerNormBackward(cpu::Queue{}, dy.data(), x.data(), wp, mean.data(), rstd.data(),
                               dx.data(), affine ? dw.data() : nullptr,
                               affine ? db.data() : nullptr, rows, n);
        std::vector<double> wd = widen(w);
        NormGradients ref = normBackwardReference(widen(dy), widen(x), affine ? &wd : nullptr, mean,
                                                  rstd, rows, n, false);
        std::string what =
            "layer_norm backward rows=" + std::to_string(rows) + " n=" + std::to_string(n);
        expectClose(dx, ref.dx, relTolerance<T>(), absTolerance<T>(ref.dx), what + " dx");
        if (affine) {
          expectClose(dw, ref.dweight, relTolerance<T>(), absTolerance<T>(ref.dweight),
                      what + " dweight");
          expectClose(db, ref.dbias, relTolerance<T>(), absTolerance<T>(ref.dbias),
                      what + " dbias");
        }
      }
}

TYPED_TEST(RowTest, RmsNormForwardAndBackward) {
  using T = TypeParam;
  for (std::int64_t rows : {1, 9, 40})
    for (std::int64_t n : {1, 6, 129})
      for (bool affine : {false, true}) {
        std::vector<T> x = randomVector<T>(rows * n, 9), y(rows * n), dx(rows * n), dw(n);
        std::vector<T> w = randomVector<T>(n, 10);
        std::vector<T> dy = randomVector<T>(rows * n, 11, -1.0f, 1.0f);
        std::vector<float> rstd(rows);
        const T *wp = affine ? w.data() : nullptr;
        cpu::rmsNormForward(cpu::Queue{}, x.data(), wp, y.data(), rstd.data(), rows, n, 1e-6);
        std::vector<double> wd = widen(w);
        NormReference ref =
            normReference(widen(x), affine ? &wd : nullptr, nullptr, rows, n, 1e-6, true);
        std::string what = "rms_norm rows=" + std::to_string(rows) + " n=" + std::to_string(n);
        expectClose(y, ref.y, relTolerance<T>(), absTolerance<T>(ref.y), what);
        expectClose(rstd, ref.rstd, 6.0e-8, 1e-30, what + " rstd");
        cpu::rmsNormBackward(cpu::Queue{}, dy.data(), x.data(), wp, rstd.data(), dx.data(),
                             affine ? dw.data() : nullptr, rows, n);
        NormGradients g = normBackwardReference(widen(dy), widen(x), affine ? &wd : nullptr, {},
                                                rstd, rows, n, true);
        expectClose(dx, g.dx, relTolerance<T>(), absTolerance<T>(g.dx), what + " dx");
        if (affine)
          expectClose(dw, g.dweight, relTolerance<T>(), absTolerance<T>(g.dweight),
                      what + " dweight");
      }
}

TYPED_TEST(RowTest, ResultsDoNotDependOnTheThreadCount) {
  using T = TypeParam;
  const std::int64_t rows = 67, n = 300;
  cpu::Queue q;
  std::vector<T> x = randomVector<T>(rows * n, 21), dy = randomVector<T>(rows * n, 22);
  std::vector<T> w = randomVector<T>(n, 23), b = randomVector<T>(n, 24);
  std::vector<T> y(rows * n), dx(rows * n), dw(n), db(n), res(rows * n);
  std::vector<float> mean(rows), rstd(rows);
  for (const Shape &s : {Shape{rows, n, 1}, Shape{3, 20, 335}}) {
    expectThreadIndependent(
        [&] { cpu::softmaxForward(q, x.data(), y.data(), s.outer, s.n, s.inner); }, y,
        "softmax " + name(s));
    expectThreadIndependent(
        [&] { cpu::logSoftmaxForward(q, x.data(), y.data(), s.outer, s.n, s.inner); }, y,
        "log_softmax " + name(s));
    expectThreadIndependent(
        [&] { cpu::softmaxBackward(q, x.data(), dy.data(), dx.data(), s.outer, s.n, s.inner); }, dx,
        "softmax backward " + name(s));
    expectThreadIndependent(
        [&] { cpu::logSoftmaxBackward(q, x.data(), dy.data(), dx.data(), s.outer, s.n, s.inner); },
        dx, "log_softmax backward " + name(s));
  }
  expectThreadIndependent(
      [&] {
        cpu::residualLayerNormForward(q, x.data(), dy.data(), w.data(), b.data(), res.data(),
                                      y.data(), mean.data(), rstd.data(), rows, n, 1e-5);
      },
      y, "residual layer_norm");
  expectThreadIndependent(
      [&] {
        cpu::layerNormBackward(q, dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                               dx.data(), dw.data(), db.data(), rows, n);
      },
      dw, "layer_norm dweight");
  expectThreadIndependent(
      [&] {
        cpu::layerNormBackward(q, dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                               dx.data(), dw.data(), db.data(), rows, n);
      },
      db, "layer_norm dbias");
  expectThreadIndependent(
      [&] {
        cpu::rmsNormBackward(q, dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(),
                             rows, n);
      },
      dw, "rms_norm dweight");
}

} // namespace
