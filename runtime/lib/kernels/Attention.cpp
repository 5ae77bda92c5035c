//===- Attention.cpp - the CPU attention kernels, compiled once ------------===//
//
// The flash-style kernels of dsc/kernels/Attention.h (the contract is
// there) and their explicit instantiations for the element types artifacts
// use; generated code links against these instead of compiling them.
//
// Speed: a work item first widens its tiles to double, in the layouts its
// inner loops read contiguously. Keys (and, in the backward, values) are
// transposed to [D][64], so that a query row's 64 scores are 64
// independent sums over d, vectorised across the keys: no horizontal sum
// per score. Sums over rows (the output, dq, dk, dv) add four weighted
// rows per pass over the accumulator. Exponentials are expDouble, which
// vectorises where libm's exp is a call per score. The bodies are compiled
// twice, for AVX2 with FMA and for any x86-64, and the CPU picks one at
// run time (as Reduce.cpp's loops).
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Attention.h"
#include "dsc/kernels/CpuFeatures.h"
#include "dsc/kernels/ExpDouble.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

namespace dsc::kernels::cpu {
namespace {

/// Query rows per forward work item and keys per tile: a tile of keys and
/// values in double is 2 * 64 * D * 8 bytes (64 KiB at D = 64) and stays in
/// L2 while every query row of the work item reads it.
constexpr int64_t kQueryTile = 32;
constexpr int64_t kKeyTile = 64;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DSC_AVX2 __attribute__((target("avx2,fma")))
#else
#define DSC_AVX2
#endif
#define DSC_INLINE [[gnu::always_inline]] inline

/// The exclusive end of the keys query row `t` may see.
int64_t keyEnd(int64_t t, int64_t queries, int64_t keys, bool causal) {
  if (!causal)
    return keys;
  return std::clamp<int64_t>(t + 1 + (keys - queries), 0, keys);
}

template <typename T> DSC_INLINE double wide(T x) { return double(float(x)); }

/// dst[i] = src[i] in double, for rows * width contiguous elements.
template <typename T>
DSC_INLINE void widenRows(double *dst, const T *src, int64_t rows, int64_t width) {
#pragma omp simd
  for (int64_t i = 0; i < rows * width; ++i)
    dst[i] = wide(src[i]);
}

/// dstT[d][c] = src[c][d] in double for the tile's `rows` rows of `width`,
/// and 0 in the columns c >= rows up to kKeyTile.
template <typename T>
DSC_INLINE void widenTransposed(double *dstT, const T *src, int64_t rows,
                                int64_t width) {
  for (int64_t d = 0; d < width; ++d) {
    double *column = dstT + d * kKeyTile;
    for (int64_t c = 0; c < rows; ++c)
      column[c] = wide(src[c * width + d]);
    std::fill(column + rows, column + kKeyTile, 0.0);
  }
}

/// x[c] = sum_d a[d] * bT[d][c] for the kKeyTile columns of a transposed
/// tile, four d per pass over x.
DSC_INLINE void rowTimesTile(const double *a, const double *bT, int64_t depth,
                             double *x) {
  std::fill(x, x + kKeyTile, 0.0);
  int64_t d = 0;
  for (; d + 4 <= depth; d += 4) {
    const double a0 = a[d], a1 = a[d + 1], a2 = a[d + 2], a3 = a[d + 3];
    const double *b0 = bT + d * kKeyTile, *b1 = b0 + kKeyTile,
                 *b2 = b1 + kKeyTile, *b3 = b2 + kKeyTile;
#pragma omp simd
    for (int64_t c = 0; c < kKeyTile; ++c)
      x[c] += (a0 * b0[c] + a1 * b1[c]) + (a2 * b2[c] + a3 * b3[c]);
  }
  for (; d < depth; ++d) {
    const double a0 = a[d];
    const double *b0 = bT + d * kKeyTile;
#pragma omp simd
    for (int64_t c = 0; c < kKeyTile; ++c)
      x[c] += a0 * b0[c];
  }
}

/// acc[:] += sum_{j < n} w[j * wStride] * rows[j][:] for rows of `width`,
/// four rows per pass over acc.
DSC_INLINE void addWeightedRows(double *acc, const double *w, int64_t wStride,
                                const double *rows, int64_t n, int64_t width) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const double w0 = w[j * wStride], w1 = w[(j + 1) * wStride],
                 w2 = w[(j + 2) * wStride], w3 = w[(j + 3) * wStride];
    const double *r0 = rows + j * width, *r1 = r0 + width, *r2 = r1 + width,
                 *r3 = r2 + width;
#pragma omp simd
    for (int64_t d = 0; d < width; ++d)
      acc[d] += (w0 * r0[d] + w1 * r1[d]) + (w2 * r2[d] + w3 * r3[d]);
  }
  for (; j < n; ++j) {
    const double w0 = w[j * wStride];
    const double *r0 = rows + j * width;
#pragma omp simd
    for (int64_t d = 0; d < width; ++d)
      acc[d] += w0 * r0[d];
  }
}

/// Scales the scores x[c] of one query row (c < end) and applies the mask
/// row `mask` (element c at c * stride): a boolean mask hides keys (-inf),
/// an additive one is added.
template <typename M>
DSC_INLINE void scaleAndMask(double *x, int64_t end, double scale, const M *mask,
                             int64_t stride) {
#pragma omp simd
  for (int64_t c = 0; c < end; ++c)
    x[c] *= scale;
  if (!mask)
    return;
  for (int64_t c = 0; c < end; ++c) {
    if constexpr (std::is_same_v<M, uint8_t>) {
      if (!mask[c * stride])
        x[c] = kNegInf;
    } else {
      x[c] += wide(mask[c * stride]);
    }
  }
}

/// max_c x[c] for c < n (-inf for n = 0), in four lanes that vectorise (a
/// max reduction does not, NaN being unordered).
DSC_INLINE double maximum(const double *x, int64_t n) {
  double m[4] = {kNegInf, kNegInf, kNegInf, kNegInf};
  int64_t c = 0;
  for (; c + 4 <= n; c += 4)
    for (int j = 0; j < 4; ++j)
      m[j] = x[c + j] > m[j] ? x[c + j] : m[j];
  for (; c < n; ++c)
    m[0] = x[c] > m[0] ? x[c] : m[0];
  return std::max(std::max(m[0], m[1]), std::max(m[2], m[3]));
}

/// The arguments of one call, shared by its work items.
template <typename T, typename M> struct Problem {
  const T *q, *k, *v, *out, *dOut;
  const M *mask;
  int64_t maskStrideB, maskStrideH, maskStrideT, maskStrideS;
  int64_t batch, heads, queries, keys, headDim, valueDim;
  double scale;
  bool causal;

  int64_t maskBase(int64_t bh) const {
    return bh / heads * maskStrideB + bh % heads * maskStrideH;
  }
  int64_t queryTiles() const { return (queries + kQueryTile - 1) / kQueryTile; }
};

/// One thread's forward buffers, kept between calls (thread_local in the
/// OpenMP threads, which persist): a call only grows them. Every element a
/// work item reads it has written first.
struct ForwardScratch {
  std::vector<double> q, kT, v, acc;
  double x[kKeyTile], rowMax[kQueryTile], rowSum[kQueryTile];
  void resize(int64_t headDim, int64_t valueDim) {
    q.resize(kQueryTile * headDim);
    kT.resize(headDim * kKeyTile);
    v.resize(kKeyTile * valueDim);
    acc.resize(kQueryTile * valueDim);
  }
};

/// Work item w of the forward: query tile w % tiles of head w / tiles.
template <typename T, typename M>
DSC_INLINE void forwardItemBody(const Problem<T, M> &p, T *out, float *lse,
                                ForwardScratch &s, int64_t w) {
  const int64_t D = p.headDim, Dv = p.valueDim;
  const int64_t bh = w / p.queryTiles(), t0 = w % p.queryTiles() * kQueryTile;
  const int64_t rows = std::min(kQueryTile, p.queries - t0);
  const T *kh = p.k + bh * p.keys * D;
  const T *vh = p.v + bh * p.keys * Dv;
  widenRows(s.q.data(), p.q + (bh * p.queries + t0) * D, rows, D);
  std::fill(s.acc.begin(), s.acc.end(), 0.0);
  std::fill(s.rowMax, s.rowMax + kQueryTile, kNegInf);
  std::fill(s.rowSum, s.rowSum + kQueryTile, 0.0);
  const int64_t tileEnd = keyEnd(t0 + rows - 1, p.queries, p.keys, p.causal);
  for (int64_t s0 = 0; s0 < tileEnd; s0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, tileEnd - s0);
    widenTransposed(s.kT.data(), kh + s0 * D, cols, D);
    widenRows(s.v.data(), vh + s0 * Dv, cols, Dv);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = t0 + r;
      const int64_t end =
          std::min(cols, keyEnd(t, p.queries, p.keys, p.causal) - s0);
      if (end <= 0)
        continue;
      double *x = s.x;
      rowTimesTile(&s.q[r * D], s.kT.data(), D, x);
      scaleAndMask(x, end, p.scale,
                   p.mask ? p.mask + p.maskBase(bh) + t * p.maskStrideT +
                                s0 * p.maskStrideS
                          : nullptr,
                   p.maskStrideS);
      const double tileMax = maximum(x, end);
      if (tileMax == kNegInf)
        continue; // no visible key in this tile
      const double newMax = std::max(s.rowMax[r], tileMax);
      const double correction = expDouble(s.rowMax[r] - newMax);
      double sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < end; ++c) {
        x[c] = expDouble(x[c] - newMax);
        sum += x[c];
      }
      s.rowSum[r] = s.rowSum[r] * correction + sum;
      double *a = &s.acc[r * Dv];
#pragma omp simd
      for (int64_t d = 0; d < Dv; ++d)
        a[d] *= correction;
      addWeightedRows(a, x, 1, s.v.data(), end, Dv);
      s.rowMax[r] = newMax;
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = bh * p.queries + t0 + r;
    T *o = out + row * Dv;
    const double *a = &s.acc[r * Dv];
    if (s.rowSum[r] == 0) {
      std::fill(o, o + Dv, T(0.0f));
      lse[row] = -std::numeric_limits<float>::infinity();
      continue;
    }
    const double inv = 1.0 / s.rowSum[r];
    for (int64_t d = 0; d < Dv; ++d)
      o[d] = T(float(a[d] * inv));
    lse[row] = float(s.rowMax[r] + std::log(s.rowSum[r]));
  }
}

template <typename T, typename M>
DSC_AVX2 void forwardItemAvx2(const Problem<T, M> &p, T *out, float *lse,
                              ForwardScratch &s, int64_t w) {
  forwardItemBody(p, out, lse, s, w);
}
template <typename T, typename M>
void forwardItemBase(const Problem<T, M> &p, T *out, float *lse,
                     ForwardScratch &s, int64_t w) {
  forwardItemBody(p, out, lse, s, w);
}

/// One thread's backward buffers: the head's rows and dq, and one key
/// tile's; kept between calls as ForwardScratch is.
struct BackwardScratch {
  std::vector<double> q, dOut, delta, dq, kT, vT, k, prob, g, dk, dv;
  double x[kKeyTile], dp[kKeyTile];
  void resize(int64_t queries, int64_t headDim, int64_t valueDim) {
    q.resize(queries * headDim);
    dOut.resize(queries * valueDim);
    delta.resize(queries);
    dq.resize(queries * headDim);
    kT.resize(headDim * kKeyTile);
    vT.resize(valueDim * kKeyTile);
    k.resize(kKeyTile * headDim);
    prob.resize(queries * kKeyTile);
    g.resize(queries * kKeyTile);
    dk.resize(kKeyTile * headDim);
    dv.resize(kKeyTile * valueDim);
  }
};

/// The backward of head bh: its key tiles in order, each tile's
/// probabilities and dS computed once, for every query row that sees the
/// tile, into `prob` and `g` (scale * dS), then used for dq of every row
/// (sums over s in order, tile after tile) and dk, dv of the tile's keys
/// (sums over t in order).
template <typename T, typename M>
DSC_INLINE void backwardHeadBody(const Problem<T, M> &p, const float *lse,
                                 T *dq, T *dk, T *dv, BackwardScratch &s,
                                 int64_t bh) {
  const int64_t D = p.headDim, Dv = p.valueDim, Tq = p.queries;
  const T *kh = p.k + bh * p.keys * D;
  const T *vh = p.v + bh * p.keys * Dv;
  const T *outh = p.out + bh * Tq * Dv;
  widenRows(s.q.data(), p.q + bh * Tq * D, Tq, D);
  widenRows(s.dOut.data(), p.dOut + bh * Tq * Dv, Tq, Dv);
  // Delta_t = dOut[t] . out[t].
  for (int64_t t = 0; t < Tq; ++t) {
    const double *dO = &s.dOut[t * Dv];
    const T *o = outh + t * Dv;
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t d = 0; d < Dv; ++d)
      sum += dO[d] * wide(o[d]);
    s.delta[t] = sum;
  }
  std::fill(s.dq.begin(), s.dq.end(), 0.0);
  for (int64_t s0 = 0; s0 < p.keys; s0 += kKeyTile) {
    const int64_t cols = std::min(kKeyTile, p.keys - s0);
    // The first query row that sees a key of this tile.
    const int64_t first =
        p.causal ? std::clamp<int64_t>(s0 - (p.keys - Tq), 0, Tq) : 0;
    widenTransposed(s.kT.data(), kh + s0 * D, cols, D);
    widenTransposed(s.vT.data(), vh + s0 * Dv, cols, Dv);
    widenRows(s.k.data(), kh + s0 * D, cols, D);
    for (int64_t t = first; t < Tq; ++t) {
      const int64_t end =
          std::min(cols, keyEnd(t, Tq, p.keys, p.causal) - s0);
      const double rowLse = lse[bh * Tq + t];
      double *prob = &s.prob[t * kKeyTile], *g = &s.g[t * kKeyTile];
      if (end <= 0 || rowLse == kNegInf) {
        std::fill(prob, prob + kKeyTile, 0.0);
        std::fill(g, g + kKeyTile, 0.0);
        continue;
      }
      double *x = s.x, *dp = s.dp;
      rowTimesTile(&s.q[t * D], s.kT.data(), D, x);
      rowTimesTile(&s.dOut[t * Dv], s.vT.data(), Dv, dp);
      scaleAndMask(x, end, p.scale,
                   p.mask ? p.mask + p.maskBase(bh) + t * p.maskStrideT +
                                s0 * p.maskStrideS
                          : nullptr,
                   p.maskStrideS);
      const double delta = s.delta[t], scale = p.scale;
#pragma omp simd
      for (int64_t c = 0; c < kKeyTile; ++c) {
        const double pc = c < end ? expDouble(x[c] - rowLse) : 0.0;
        prob[c] = pc;
        g[c] = pc == 0 ? 0.0 : pc * (dp[c] - delta) * scale;
      }
      addWeightedRows(&s.dq[t * D], g, 1, s.k.data(), end, D);
    }
    std::fill(s.dk.begin(), s.dk.end(), 0.0);
    std::fill(s.dv.begin(), s.dv.end(), 0.0);
    for (int64_t c = 0; c < cols; ++c) {
      addWeightedRows(&s.dv[c * Dv], &s.prob[first * kKeyTile + c], kKeyTile,
                      &s.dOut[first * Dv], Tq - first, Dv);
      addWeightedRows(&s.dk[c * D], &s.g[first * kKeyTile + c], kKeyTile,
                      &s.q[first * D], Tq - first, D);
    }
    for (int64_t c = 0; c < cols; ++c) {
      T *dkOut = dk + (bh * p.keys + s0 + c) * D;
      T *dvOut = dv + (bh * p.keys + s0 + c) * Dv;
      for (int64_t d = 0; d < D; ++d)
        dkOut[d] = T(float(s.dk[c * D + d]));
      for (int64_t d = 0; d < Dv; ++d)
        dvOut[d] = T(float(s.dv[c * Dv + d]));
    }
  }
  for (int64_t i = 0; i < Tq * D; ++i)
    dq[bh * Tq * D + i] = T(float(s.dq[i]));
}

template <typename T, typename M>
DSC_AVX2 void backwardHeadAvx2(const Problem<T, M> &p, const float *lse, T *dq,
                               T *dk, T *dv, BackwardScratch &s, int64_t bh) {
  backwardHeadBody(p, lse, dq, dk, dv, s, bh);
}
template <typename T, typename M>
void backwardHeadBase(const Problem<T, M> &p, const float *lse, T *dq, T *dk,
                      T *dv, BackwardScratch &s, int64_t bh) {
  backwardHeadBody(p, lse, dq, dk, dv, s, bh);
}

} // namespace

template <typename T, typename M>
void attentionForward(Queue, const T *q, const T *k, const T *v, const M *mask,
                      int64_t maskStrideB, int64_t maskStrideH,
                      int64_t maskStrideT, int64_t maskStrideS, T *out,
                      float *lse, int64_t batch, int64_t heads, int64_t queries,
                      int64_t keys, int64_t headDim, int64_t valueDim,
                      double scale, bool causal) {
  const Problem<T, M> p{q,           k,           v,           nullptr,
                        nullptr,     mask,        maskStrideB, maskStrideH,
                        maskStrideT, maskStrideS, batch,       heads,
                        queries,     keys,        headDim,     valueDim,
                        scale,       causal};
  const int64_t work = batch * heads * p.queryTiles();
  const auto item = cpuHasAvx2Fma() ? forwardItemAvx2<T, M> : forwardItemBase<T, M>;
#pragma omp parallel
  {
    thread_local ForwardScratch s;
    s.resize(headDim, valueDim);
#pragma omp for schedule(dynamic, 1)
    for (int64_t w = 0; w < work; ++w)
      item(p, out, lse, s, w);
  }
}

template <typename T, typename M>
void attentionBackward(Queue, const T *q, const T *k, const T *v, const T *out,
                       const T *dOut, const float *lse, const M *mask,
                       int64_t maskStrideB, int64_t maskStrideH,
                       int64_t maskStrideT, int64_t maskStrideS, T *dq, T *dk,
                       T *dv, int64_t batch, int64_t heads, int64_t queries,
                       int64_t keys, int64_t headDim, int64_t valueDim,
                       double scale, bool causal) {
  const Problem<T, M> p{q,           k,           v,           out,
                        dOut,        mask,        maskStrideB, maskStrideH,
                        maskStrideT, maskStrideS, batch,       heads,
                        queries,     keys,        headDim,     valueDim,
                        scale,       causal};
  const auto head = cpuHasAvx2Fma() ? backwardHeadAvx2<T, M> : backwardHeadBase<T, M>;
#pragma omp parallel
  {
    thread_local BackwardScratch s;
    s.resize(queries, headDim, valueDim);
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < batch * heads; ++bh)
      head(p, lse, dq, dk, dv, s, bh);
  }
}

#define DSC_KERNELS_ATTENTION_DEFINE(T, M) DSC_KERNELS_ATTENTION_DECLARE(, T, M)
DSC_KERNELS_ATTENTION_INSTANCES(DSC_KERNELS_ATTENTION_DEFINE)

} // namespace dsc::kernels::cpu
