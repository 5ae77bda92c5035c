//===- Row.h - softmax and normalization over rows on the CPU ---*- C++ -*-===//
//
// The row kernels of the kernel library: softmax and log-softmax, layer norm
// (with a fused residual add) and RMS norm, forward and backward. Each works
// on independent rows, so a row is the unit of OpenMP parallelism and the
// inner loops are SIMD loops over a row's contiguous elements.
//
// Layout: softmax-like kernels take a tensor viewed as (outer, n, inner),
// the reduced dimension in the middle: element (o, j, q) at
// o*n*inner + j*inner + q. inner == 1 (the last dimension, as in attention
// and the classifier) is the fast path; inner > 1 processes blocks of
// neighbouring columns together so that every load is still contiguous.
// Norms normalize the last dimension: `rows` rows of `n` elements.
//
// Numerics: element types float, dsc::rt::BFloat16 and dsc::rt::Half;
// every element is read as float and every result is rounded once, when it
// is written. Sums are accumulated in double, as the compiler's generated
// kernels do: this is what keeps float results within 1e-5 of PyTorch.
// exp is detail::expBounded, a vectorizable exp (a plain exp call blocks the
// SIMD loop). Results do not depend on the number of OpenMP threads: rows
// are independent, and the column reductions of the backward passes
// (dweight, dbias) sum fixed chunks of rows, then combine the chunks'
// partial sums in chunk order.
//
// Argument order, as everywhere in the library: the queue, the inputs, the
// outputs, the sizes, then the attributes. An output may alias the input of
// the same shape it replaces (y == x, dx == dy): every element is read
// before it is written.
//
// The templates are instantiated for the three element types in
// runtime/lib/kernels/Row.cpp and declared `extern` below, so that code
// including this header (a compiled step) does not compile them again.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_ROW_H
#define DSC_KERNELS_ROW_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace dsc::kernels::cpu {
namespace detail {

/// exp(x) in float that compilers vectorize inside `omp simd` loops. Cody-Waite
/// reduction x = k*ln2 + r, |r| <= ln2/2, and Cephes' degree-6 polynomial
/// for e^r: within 1 ulp of the exact value (RowTest checks 1.2e-7).
/// Results that would be float subnormals (x < -87.33) are 0 and results
/// above 2^127.5 (x > 88.376) are +inf; the row kernels call it with
/// x - max(x) <= 0. NaN stays NaN; exp(-inf) is 0 (masked scores).
inline float expBounded(float x) {
  const float lo = -87.3365447505531f, hi = 88.3762626647949f;
  float c = x < lo ? lo : (x > hi ? hi : x);
  // Round c*log2(e) to the nearest integer without a call: adding and
  // removing 1.5*2^23 leaves the rounded value (|c*log2(e)| < 2^22).
  const float shifter = 12582912.0f;
  float k = (c * 1.44269504088896341f + shifter) - shifter;
  float r = c - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * (r * r) + r + 1.0f;
  std::int32_t bits = (static_cast<std::int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  e *= scale;
  e = x < lo ? 0.0f : e;
  e = x > hi ? std::numeric_limits<float>::infinity() : e;
  return x != x ? x : e;
}

/// A float buffer of at least n elements owned by the calling thread, reused
/// across calls (the rows of the 16-bit kernels and of the classifier keep
/// their exponentials there so that each is computed once and rounded once).
float *threadScratch(std::size_t n);

/// A double buffer of at least n elements owned by the calling thread: the
/// per-chunk partial sums of the column reductions.
double *threadPartials(std::size_t n);

/// Chunks of rows whose column partial sums the norm backward passes keep:
/// a function of `rows` only, so the combined sums do not depend on the
/// number of threads.
inline std::int64_t columnChunks(std::int64_t rows) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(rows, 32));
}

/// Columns processed together when the reduced dimension is not the last
/// (inner > 1): each step of a row loop then loads kColumnBlock contiguous
/// elements.
constexpr std::int64_t kColumnBlock = 64;

template <typename T> inline float load(const T &v) { return static_cast<float>(v); }

/// Elements per block of the loops that keep float temporaries on the stack.
constexpr std::int64_t kBlock = 256;

/// e[j] = exp(x[j] - m) for j < n, and their sum in double. Two loops, so
/// that the exps run four floats to a vector (a loop that also adds them
/// into a double runs two).
template <typename T>
double expAndSum(float *e, const T *x, float m, std::int64_t n) {
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j)
    e[j] = expBounded(load(x[j]) - m);
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < n; ++j)
    sum += e[j];
  return sum;
}

/// sum(exp(x - m)) in double, the exps kept only block by block.
template <typename T> double sumExp(const T *x, float m, std::int64_t n) {
  float e[kBlock];
  double sum = 0;
  for (std::int64_t j0 = 0; j0 < n; j0 += kBlock)
    sum += expAndSum(e, x + j0, m, std::min(kBlock, n - j0));
  return sum;
}

template <typename T> float rowMax(const T *x, std::int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < n; ++j)
    m = std::fmax(m, load(x[j])); // a NaN element makes the sum NaN
  return m;
}

template <bool Log, typename T>
void softmaxRow(T *y, const T *x, std::int64_t n) {
  const float m = rowMax(x, n);
  if constexpr (Log) {
    const double lse = std::log(sumExp(x, m, n));
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j)
      y[j] = T(static_cast<float>(double(load(x[j]) - m) - lse));
  } else {
    // A float output holds the exponentials until they are scaled; a 16-bit
    // one would round them twice.
    float *e;
    if constexpr (std::is_same_v<T, float>)
      e = y;
    else
      e = threadScratch(std::size_t(n));
    const double inv = 1.0 / expAndSum(e, x, m, n);
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j)
      y[j] = T(static_cast<float>(double(e[j]) * inv));
  }
}

/// One outer slice of a softmax over (n, inner), columns [q0, q0 + w).
template <bool Log, typename T>
void softmaxColumns(T *y, const T *x, std::int64_t n, std::int64_t inner,
                    std::int64_t q0, std::int64_t w) {
  float m[kColumnBlock];
  double sum[kColumnBlock];
  for (std::int64_t q = 0; q < w; ++q) {
    m[q] = -std::numeric_limits<float>::infinity();
    sum[q] = 0;
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const T *xj = x + j * inner + q0;
#pragma omp simd
    for (std::int64_t q = 0; q < w; ++q)
      m[q] = std::fmax(m[q], load(xj[q]));
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const T *xj = x + j * inner + q0;
#pragma omp simd
    for (std::int64_t q = 0; q < w; ++q)
      sum[q] += expBounded(load(xj[q]) - m[q]);
  }
  for (std::int64_t q = 0; q < w; ++q)
    sum[q] = Log ? std::log(sum[q]) : 1.0 / sum[q];
  for (std::int64_t j = 0; j < n; ++j) {
    const T *xj = x + j * inner + q0;
    T *yj = y + j * inner + q0;
#pragma omp simd
    for (std::int64_t q = 0; q < w; ++q) {
      if constexpr (Log)
        yj[q] = T(static_cast<float>(double(load(xj[q]) - m[q]) - sum[q]));
      else
        yj[q] = T(static_cast<float>(double(expBounded(load(xj[q]) - m[q])) * sum[q]));
    }
  }
}

template <bool Log, typename T>
void softmaxLike(T *y, const T *x, std::int64_t outer, std::int64_t n,
                 std::int64_t inner) {
  if (inner == 1) {
#pragma omp parallel for schedule(static)
    for (std::int64_t o = 0; o < outer; ++o)
      softmaxRow<Log>(y + o * n, x + o * n, n);
    return;
  }
  const std::int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < outer * blocks; ++t) {
    std::int64_t o = t / blocks, q0 = t % blocks * kColumnBlock;
    softmaxColumns<Log>(y + o * n * inner, x + o * n * inner, n, inner, q0,
                        std::min(kColumnBlock, inner - q0));
  }
}

/// dx of softmax (Log = false: (dy - sum(dy*y)) * y) or log-softmax
/// (Log = true: dy - exp(y) * sum(dy)) for one row.
template <bool Log, typename T>
void softmaxBackwardRow(T *dx, const T *y, const T *dy, std::int64_t n) {
  double s = 0;
  if constexpr (Log) {
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < n; ++j)
      s += load(dy[j]);
    float e[kBlock];
    for (std::int64_t j0 = 0; j0 < n; j0 += kBlock) {
      const std::int64_t w = std::min(kBlock, n - j0);
#pragma omp simd
      for (std::int64_t j = 0; j < w; ++j)
        e[j] = expBounded(load(y[j0 + j]));
#pragma omp simd
      for (std::int64_t j = 0; j < w; ++j)
        dx[j0 + j] = T(static_cast<float>(double(load(dy[j0 + j])) - double(e[j]) * s));
    }
  } else {
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = 0; j < n; ++j)
      s += double(load(dy[j])) * double(load(y[j]));
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j)
      dx[j] = T(static_cast<float>((double(load(dy[j])) - s) * double(load(y[j]))));
  }
}

template <bool Log, typename T>
void softmaxBackwardColumns(T *dx, const T *y, const T *dy, std::int64_t n,
                            std::int64_t inner, std::int64_t q0, std::int64_t w) {
  double s[kColumnBlock];
  for (std::int64_t q = 0; q < w; ++q)
    s[q] = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const T *yj = y + j * inner + q0, *dyj = dy + j * inner + q0;
#pragma omp simd
    for (std::int64_t q = 0; q < w; ++q)
      s[q] += Log ? double(load(dyj[q])) : double(load(dyj[q])) * double(load(yj[q]));
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const T *yj = y + j * inner + q0, *dyj = dy + j * inner + q0;
    T *dxj = dx + j * inner + q0;
#pragma omp simd
    for (std::int64_t q = 0; q < w; ++q) {
      if constexpr (Log)
        dxj[q] = T(static_cast<float>(double(load(dyj[q])) -
                                      double(expBounded(load(yj[q]))) * s[q]));
      else
        dxj[q] = T(static_cast<float>((double(load(dyj[q])) - s[q]) * double(load(yj[q]))));
    }
  }
}

template <bool Log, typename T>
void softmaxLikeBackward(T *dx, const T *y, const T *dy, std::int64_t outer,
                         std::int64_t n, std::int64_t inner) {
  if (inner == 1) {
#pragma omp parallel for schedule(static)
    for (std::int64_t o = 0; o < outer; ++o)
      softmaxBackwardRow<Log>(dx + o * n, y + o * n, dy + o * n, n);
    return;
  }
  const std::int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t t = 0; t < outer * blocks; ++t) {
    std::int64_t o = t / blocks, q0 = t % blocks * kColumnBlock, off = o * n * inner;
    softmaxBackwardColumns<Log>(dx + off, y + off, dy + off, n, inner, q0,
                                std::min(kColumnBlock, inner - q0));
  }
}

/// Layer norm of one row; mean and rstd are those of the row, in double.
template <typename T>
void layerNormRow(T *y, float *meanOut, float *rstdOut, const T *x, const T *weight,
                  const T *bias, std::int64_t n, double eps) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t j = 0; j < n; ++j)
    sum += load(x[j]);
  const double mean = sum / double(n);
  double var = 0;
#pragma omp simd reduction(+ : var)
  for (std::int64_t j = 0; j < n; ++j) {
    double d = double(load(x[j])) - mean;
    var += d * d;
  }
  const double rstd = 1.0 / std::sqrt(var / double(n) + eps);
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) {
    double v = (double(load(x[j])) - mean) * rstd;
    if (weight)
      v *= double(load(weight[j]));
    if (bias)
      v += double(load(bias[j]));
    y[j] = T(static_cast<float>(v));
  }
  if (meanOut)
    *meanOut = static_cast<float>(mean);
  if (rstdOut)
    *rstdOut = static_cast<float>(rstd);
}

template <typename T>
void rmsNormRow(T *y, float *rstdOut, const T *x, const T *weight, std::int64_t n,
                double eps) {
  double sq = 0;
#pragma omp simd reduction(+ : sq)
  for (std::int64_t j = 0; j < n; ++j) {
    double v = load(x[j]);
    sq += v * v;
  }
  const double rstd = 1.0 / std::sqrt(sq / double(n) + eps);
#pragma omp simd
  for (std::int64_t j = 0; j < n; ++j) {
    double v = double(load(x[j])) * rstd;
    if (weight)
      v *= double(load(weight[j]));
    y[j] = T(static_cast<float>(v));
  }
  if (rstdOut)
    *rstdOut = static_cast<float>(rstd);
}

/// The backward passes of both norms: RMS = false for layer norm (xhat =
/// (x - mean) * rstd, dx = (g - mean(g) - xhat * mean(g * xhat)) * rstd with
/// g = dy * weight), RMS = true for RMS norm (xhat = x * rstd, dx = (g - xhat
/// * mean(g * xhat)) * rstd). dweight = sum over rows of dy * xhat, dbias =
/// sum of dy: each chunk of rows sums into its own partials, then the
/// chunks are added in order.
template <bool RMS, typename T>
void normBackward(T *dx, T *dweight, T *dbias, const T *dy, const T *x,
                  const T *weight, const float *mean, const float *rstd,
                  std::int64_t rows, std::int64_t n) {
  const std::int64_t chunks = columnChunks(rows);
  const std::int64_t perChunk = (rows + chunks - 1) / chunks;
  const bool columns = dweight || dbias;
  double *partials = columns ? threadPartials(std::size_t(2 * chunks * n)) : nullptr;
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    double *pw = columns ? partials + 2 * c * n : nullptr;
    double *pb = columns ? pw + n : nullptr;
    if (columns)
      std::fill(pw, pw + 2 * n, 0.0);
    const std::int64_t end = std::min(rows, (c + 1) * perChunk);
    for (std::int64_t r = c * perChunk; r < end; ++r) {
      const T *xr = x + r * n, *dyr = dy + r * n;
      T *dxr = dx + r * n;
      const double mu = RMS ? 0.0 : double(mean[r]), rs = rstd[r];
      double gMean = 0, gxMean = 0;
#pragma omp simd reduction(+ : gMean, gxMean)
      for (std::int64_t j = 0; j < n; ++j) {
        double xhat = (double(load(xr[j])) - mu) * rs;
        double g = load(dyr[j]);
        if (weight)
          g *= double(load(weight[j]));
        gMean += g;
        gxMean += g * xhat;
      }
      gMean = RMS ? 0.0 : gMean / double(n);
      gxMean /= double(n);
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) {
        double xhat = (double(load(xr[j])) - mu) * rs;
        double d = load(dyr[j]);
        double g = weight ? d * double(load(weight[j])) : d;
        if (columns) {
          pw[j] += d * xhat;
          pb[j] += d;
        }
        dxr[j] = T(static_cast<float>((g - gMean - xhat * gxMean) * rs));
      }
    }
  }
  if (!columns)
    return;
#pragma omp parallel for schedule(static)
  for (std::int64_t j = 0; j < n; ++j) {
    double w = 0, b = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      w += partials[2 * c * n + j];
      b += partials[2 * c * n + n + j];
    }
    if (dweight)
      dweight[j] = T(static_cast<float>(w));
    if (dbias)
      dbias[j] = T(static_cast<float>(b));
  }
}

} // namespace detail

/// y = softmax(x) along the middle dimension of (outer, n, inner):
/// y = exp(x - max) / sum(exp(x - max)). A row of -inf gives NaN, as in
/// PyTorch.
template <typename T>
void softmaxForward(Queue, const T *x, T *y, std::int64_t outer, std::int64_t n,
                    std::int64_t inner) {
  detail::softmaxLike<false>(y, x, outer, n, inner);
}

/// y = log_softmax(x) = x - max - log(sum(exp(x - max))) along the middle
/// dimension of (outer, n, inner).
template <typename T>
void logSoftmaxForward(Queue, const T *x, T *y, std::int64_t outer, std::int64_t n,
                       std::int64_t inner) {
  detail::softmaxLike<true>(y, x, outer, n, inner);
}

/// The gradient of softmax from its output y: dx = (dy - sum(dy * y)) * y,
/// the sum along the middle dimension of (outer, n, inner).
template <typename T>
void softmaxBackward(Queue, const T *y, const T *dy, T *dx, std::int64_t outer,
                     std::int64_t n, std::int64_t inner) {
  detail::softmaxLikeBackward<false>(dx, y, dy, outer, n, inner);
}

/// The gradient of log-softmax from its output y: dx = dy - exp(y) * sum(dy).
template <typename T>
void logSoftmaxBackward(Queue, const T *y, const T *dy, T *dx, std::int64_t outer,
                        std::int64_t n, std::int64_t inner) {
  detail::softmaxLikeBackward<true>(dx, y, dy, outer, n, inner);
}

/// Layer norm of each row of x [rows, n]: y = (x - mean) * rstd * weight +
/// bias, rstd = 1 / sqrt(var + eps) with the biased variance (as
/// torch.nn.functional.layer_norm). weight and bias ([n]) may be null. When
/// mean and rstd ([rows]) are not null they receive each row's statistics,
/// which layerNormBackward takes instead of recomputing them.
template <typename T>
void layerNormForward(Queue, const T *x, const T *weight, const T *bias, T *y, float *mean,
                      float *rstd, std::int64_t rows, std::int64_t n, double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r)
    detail::layerNormRow(y + r * n, mean ? mean + r : nullptr, rstd ? rstd + r : nullptr,
                         x + r * n, weight, bias, n, eps);
}

/// The residual stream of a pre-norm transformer in one pass: residual = a +
/// b (rounded to T), y = layerNorm(residual) as layerNormForward. residual
/// may alias a or b.
template <typename T>
void residualLayerNormForward(Queue, const T *a, const T *b, const T *weight, const T *bias,
                              T *residual, T *y, float *mean, float *rstd, std::int64_t rows,
                              std::int64_t n, double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    T *res = residual + r * n;
    const T *ar = a + r * n, *br = b + r * n;
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j)
      res[j] = T(detail::load(ar[j]) + detail::load(br[j]));
    detail::layerNormRow(y + r * n, mean ? mean + r : nullptr, rstd ? rstd + r : nullptr,
                         res, weight, bias, n, eps);
  }
}

/// The gradients of layerNormForward from the statistics it saved: for each
/// row, xhat = (x - mean) * rstd, g = dy * weight (dy without weight),
/// dx = (g - mean(g) - xhat * mean(g * xhat)) * rstd; dweight = sum over rows
/// of dy * xhat and dbias = sum of dy, deterministically (see the file
/// comment). dweight and dbias may be null (not computed).
template <typename T>
void layerNormBackward(Queue, const T *dy, const T *x, const T *weight, const float *mean,
                       const float *rstd, T *dx, T *dweight, T *dbias, std::int64_t rows,
                       std::int64_t n) {
  detail::normBackward<false>(dx, dweight, dbias, dy, x, weight, mean, rstd, rows, n);
}

/// RMS norm of each row of x [rows, n]: y = x * rstd * weight, rstd = 1 /
/// sqrt(mean(x^2) + eps) (as torch.nn.RMSNorm). weight may be null; rstd
/// ([rows]) receives each row's rstd when not null.
template <typename T>
void rmsNormForward(Queue, const T *x, const T *weight, T *y, float *rstd, std::int64_t rows,
                    std::int64_t n, double eps) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r)
    detail::rmsNormRow(y + r * n, rstd ? rstd + r : nullptr, x + r * n, weight, n, eps);
}

/// The gradients of rmsNormForward: xhat = x * rstd, g = dy * weight,
/// dx = (g - xhat * mean(g * xhat)) * rstd, dweight = sum over rows of
/// dy * xhat (deterministic; may be null).
template <typename T>
void rmsNormBackward(Queue, const T *dy, const T *x, const T *weight, const float *rstd,
                     T *dx, T *dweight, std::int64_t rows, std::int64_t n) {
  detail::normBackward<true>(dx, dweight, static_cast<T *>(nullptr), dy, x, weight,
                             nullptr, rstd, rows, n);
}

// Compiled once, in the runtime (Row.cpp).
#define DSC_KERNELS_ROW_DECLARE(Extern, T)                                                \
  Extern template void softmaxForward<T>(Queue, const T *, T *, std::int64_t,            \
                                         std::int64_t, std::int64_t);                     \
  Extern template void logSoftmaxForward<T>(Queue, const T *, T *, std::int64_t,         \
                                            std::int64_t, std::int64_t);                  \
  Extern template void softmaxBackward<T>(Queue, const T *, const T *, T *,              \
                                          std::int64_t, std::int64_t, std::int64_t);      \
  Extern template void logSoftmaxBackward<T>(Queue, const T *, const T *, T *,           \
                                             std::int64_t, std::int64_t, std::int64_t);   \
  Extern template void layerNormForward<T>(Queue, const T *, const T *, const T *, T *,  \
                                           float *, float *, std::int64_t, std::int64_t, \
                                           double);                                      \
  Extern template void residualLayerNormForward<T>(                                      \
      Queue, const T *, const T *, const T *, const T *, T *, T *, float *, float *,     \
      std::int64_t, std::int64_t, double);                                               \
  Extern template void layerNormBackward<T>(Queue, const T *, const T *, const T *,      \
                                            const float *, const float *, T *, T *, T *, \
                                            std::int64_t, std::int64_t);                 \
  Extern template void rmsNormForward<T>(Queue, const T *, const T *, T *, float *,      \
                                         std::int64_t, std::int64_t, double);            \
  Extern template void rmsNormBackward<T>(Queue, const T *, const T *, const T *,        \
                                          const float *, T *, T *, std::int64_t,         \
                                          std::int64_t);

DSC_KERNELS_ROW_DECLARE(extern, float)
DSC_KERNELS_ROW_DECLARE(extern, dsc::rt::BFloat16)
DSC_KERNELS_ROW_DECLARE(extern, dsc::rt::Half)

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_ROW_H
