//===- RowF64Test.cpp - the f64 row kernels against long double loops -----===//
//
// softmax, log-softmax, layer norm and the per-row cross-entropy of
// dsc/kernels/RowF64.h against the formulas evaluated naively in long
// double. Tolerance: each kernel sums n terms in double (relative error
// about n * 2^-53 of the terms' magnitude) and calls exp/log (1 ulp):
// 1e-13 relative plus 1e-13 absolute for n <= 1000.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/RowF64.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace cpu = dsc::kernels::cpu;

namespace {

constexpr double kTol = 1e-13;

std::vector<double> randomValues(std::size_t n, unsigned seed, double scale = 4.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

void expectNear(const std::vector<double> &got, const std::vector<long double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], double(want[i]), kTol + kTol * std::fabs(double(want[i])))
        << "at " << i;
}

struct Shape {
  std::int64_t outer, n, inner;
};

/// The last dimension, a middle one, a single element, an odd long row.
const Shape kShapes[] = {{4, 8, 1}, {3, 5, 7}, {1, 1, 1}, {2, 1000, 1}, {2, 9, 3}};

std::vector<long double> referenceSoftmax(const std::vector<double> &x, Shape s, bool log) {
  std::vector<long double> y(x.size());
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t q = 0; q < s.inner; ++q) {
      auto at = [&](std::int64_t j) { return (o * s.n + j) * s.inner + q; };
      long double m = -std::numeric_limits<long double>::infinity(), sum = 0;
      for (std::int64_t j = 0; j < s.n; ++j)
        m = std::max(m, (long double)x[at(j)]);
      for (std::int64_t j = 0; j < s.n; ++j)
        sum += std::exp((long double)x[at(j)] - m);
      for (std::int64_t j = 0; j < s.n; ++j)
        y[at(j)] = log ? x[at(j)] - m - std::log(sum) : std::exp(x[at(j)] - m) / sum;
    }
  return y;
}

TEST(RowF64Test, SoftmaxAndLogSoftmaxAlongAnyDimension) {
  for (Shape s : kShapes) {
    std::vector<double> x = randomValues(std::size_t(s.outer * s.n * s.inner), 7);
    std::vector<double> y(x.size()), l(x.size());
    cpu::softmaxForward(cpu::Queue{}, x.data(), y.data(), s.outer, s.n, s.inner);
    cpu::logSoftmaxForward(cpu::Queue{}, x.data(), l.data(), s.outer, s.n, s.inner);
    SCOPED_TRACE(::testing::Message() << s.outer << "x" << s.n << "x" << s.inner);
    expectNear(y, referenceSoftmax(x, s, false));
    expectNear(l, referenceSoftmax(x, s, true));
  }
}

TEST(RowF64Test, SoftmaxInPlaceAndLargeValues) {
  // Values near the top of double's exp range: only max subtraction keeps
  // them finite.
  std::vector<double> x = {700, 701, 702, -5};
  std::vector<long double> want = referenceSoftmax(x, {1, 4, 1}, false);
  cpu::softmaxForward(cpu::Queue{}, x.data(), x.data(), 1, 4, 1);
  expectNear(x, want);
}

TEST(RowF64Test, LayerNormWithAndWithoutAffine) {
  const std::int64_t rows = 5, n = 37;
  std::vector<double> x = randomValues(std::size_t(rows * n), 3, 10.0);
  std::vector<double> w = randomValues(std::size_t(n), 4), b = randomValues(std::size_t(n), 5);
  for (bool affine : {false, true}) {
    std::vector<double> y(x.size());
    std::vector<float> mean(rows), rstd(rows);
    cpu::layerNormForward(cpu::Queue{}, x.data(), affine ? w.data() : nullptr,
                          affine ? b.data() : nullptr, y.data(), mean.data(), rstd.data(),
                          rows, n, 1e-5);
    std::vector<long double> want(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      long double mu = 0, var = 0;
      for (std::int64_t j = 0; j < n; ++j)
        mu += x[r * n + j];
      mu /= n;
      for (std::int64_t j = 0; j < n; ++j)
        var += (x[r * n + j] - mu) * (x[r * n + j] - mu);
      long double rs = 1 / std::sqrt(var / n + 1e-5L);
      EXPECT_FLOAT_EQ(mean[r], float(mu));
      EXPECT_FLOAT_EQ(rstd[r], float(rs));
      for (std::int64_t j = 0; j < n; ++j)
        want[r * n + j] = (x[r * n + j] - mu) * rs * (affine ? w[j] : 1) + (affine ? b[j] : 0);
    }
    SCOPED_TRACE(affine ? "affine" : "plain");
    expectNear(y, want);
  }
}

TEST(RowF64Test, CrossEntropyIgnoresRowsAndRejectsBadTargets) {
  const std::int64_t rows = 4, classes = 11;
  std::vector<double> logits = randomValues(std::size_t(rows * classes), 9);
  std::vector<std::int64_t> targets = {3, -100, 10, 0};
  std::vector<double> loss(rows, 42.0);
  cpu::crossEntropyForward(cpu::Queue{}, logits.data(), targets.data(), loss.data(), rows,
                           classes, -100);
  std::vector<long double> want(rows, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (targets[r] == -100)
      continue;
    long double m = -INFINITY, sum = 0;
    for (std::int64_t j = 0; j < classes; ++j)
      m = std::max(m, (long double)logits[r * classes + j]);
    for (std::int64_t j = 0; j < classes; ++j)
      sum += std::exp(logits[r * classes + j] - m);
    want[r] = m + std::log(sum) - logits[r * classes + targets[r]];
  }
  expectNear(loss, want);

  targets = {3, 11, -1, 0};
  try {
    cpu::crossEntropyForward(cpu::Queue{}, logits.data(), targets.data(), loss.data(), rows,
                             classes, -100);
    FAIL() << "a target outside the classes must throw";
  } catch (const std::out_of_range &e) {
    EXPECT_STREQ(e.what(), "dsc.cross_entropy: index 11 is outside [0, 11)");
  }
}

} // namespace
