//===- RowF64.cpp - softmax, layer norm and cross-entropy of f64 rows -----===//

#include "dsc/kernels/RowF64.h"

#include "dsc/kernels/IndexCheck.h"

#include <cmath>
#include <limits>

namespace dsc::kernels::cpu {
namespace {

/// Softmax (Log = false) or log-softmax of the n elements x[j * stride].
template <bool Log>
void softmaxLine(double *y, const double *x, std::int64_t n, std::int64_t stride) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j)
    m = std::fmax(m, x[j * stride]);
  double sum = 0;
  for (std::int64_t j = 0; j < n; ++j)
    sum += std::exp(x[j * stride] - m);
  // A NaN element makes the sum NaN, and so every output: torch's result.
  const double lse = std::log(sum);
  for (std::int64_t j = 0; j < n; ++j)
    y[j * stride] = Log ? x[j * stride] - m - lse : std::exp(x[j * stride] - m) / sum;
}

template <bool Log>
void softmaxLike(const double *x, double *y, std::int64_t outer, std::int64_t n,
                 std::int64_t inner) {
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < outer * inner; ++t) {
    const std::int64_t offset = t / inner * n * inner + t % inner;
    softmaxLine<Log>(y + offset, x + offset, n, inner);
  }
}

} // namespace

void softmaxForward(Queue, const double *x, double *y, std::int64_t outer, std::int64_t n,
                    std::int64_t inner) {
  softmaxLike<false>(x, y, outer, n, inner);
}

void logSoftmaxForward(Queue, const double *x, double *y, std::int64_t outer,
                       std::int64_t n, std::int64_t inner) {
  softmaxLike<true>(x, y, outer, n, inner);
}

void layerNormForward(Queue, const double *x, const double *weight, const double *bias,
                      double *y, float *mean, float *rstd, std::int64_t rows, std::int64_t n,
                      double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const double *xr = x + r * n;
    double sum = 0;
    for (std::int64_t j = 0; j < n; ++j)
      sum += xr[j];
    const double mu = sum / double(n);
    double var = 0;
    for (std::int64_t j = 0; j < n; ++j)
      var += (xr[j] - mu) * (xr[j] - mu);
    const double rs = 1.0 / std::sqrt(var / double(n) + eps);
    for (std::int64_t j = 0; j < n; ++j) {
      double v = (xr[j] - mu) * rs;
      if (weight)
        v *= weight[j];
      if (bias)
        v += bias[j];
      y[r * n + j] = v;
    }
    if (mean)
      mean[r] = static_cast<float>(mu);
    if (rstd)
      rstd[r] = static_cast<float>(rs);
  }
}

void crossEntropyForward(Queue, const double *logits, const std::int64_t *targets,
                         double *loss, std::int64_t rows, std::int64_t classes,
                         std::int64_t ignoreIndex) {
  IndexCheck check;
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t t = targets[r];
    if (t == ignoreIndex) {
      loss[r] = 0;
      continue;
    }
    if (check.bad(t, classes, r))
      continue;
    const double *xr = logits + r * classes;
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < classes; ++j)
      m = std::fmax(m, xr[j]);
    double sum = 0;
    for (std::int64_t j = 0; j < classes; ++j)
      sum += std::exp(xr[j] - m);
    loss[r] = m + std::log(sum) - xr[t];
  }
  check.raise("dsc.cross_entropy", classes, [&](std::int64_t row) { return targets[row]; });
}

} // namespace dsc::kernels::cpu
