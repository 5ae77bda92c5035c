//===- Attention.h - flash-style scaled dot-product attention, CPU -*- C++ -*-===//
//
// dsc.attention and dsc.attention_grad on the CPU: softmax(scale * q k^T +
// mask) v for q [B, H, T, D], k [B, H, S, D], v [B, H, S, Dv], without the
// [T, S] score matrix. The forward walks the keys in tiles and keeps, per
// query row, the running maximum, the running sum of exponentials and the
// output accumulator (the online softmax of FlashAttention); it saves the
// log-sum-exp of each row, [B, H, T] fp32. The backward recomputes each
// tile's probabilities from q, k and that log-sum-exp instead of reading a
// saved [T, S] matrix. Memory beyond the operands: one tile of scores per
// thread in the forward; in the backward, B*H*T doubles and per thread a
// [T, 64] tile of probabilities and of dS and a [T, D] dq accumulator
// (linear in T).
//
// Masks (optional; `mask == nullptr` is none): an element (b, h, t, s) of
// the mask is mask[b*maskStrideB + h*maskStrideH + t*maskStrideT +
// s*maskStrideS] (stride 0 broadcasts a dimension). M == uint8_t is a
// boolean mask (nonzero: the key takes part, as in PyTorch's
// scaled_dot_product_attention); M == T is added to the scaled scores.
// `causal` hides key s from query t when s > t + (S - T) (the bottom-right
// alignment of dsc.causal_mask; T == S is the usual lower triangle). A query
// row that sees no key gets output 0 and log-sum-exp -inf (its gradients
// are 0), as FlashAttention defines it.
//
// Numerics: scores, exponentials and accumulators are double, for float and
// 16-bit data alike; results are rounded once when written. Work items are
// (b, h, query tile) in the forward and (b, h) in the backward: each writes
// its own rows and sums in a fixed order, so the results do not depend on
// the number of OpenMP threads. The backward walks a head's key tiles in
// order and computes each tile's probabilities and dS once, for dk and dv
// of the tile's keys and for dq of every query row (accumulated across the
// tiles by the one thread that owns the head, not with atomics).
//
// The instantiations for float, dsc::rt::BFloat16 and dsc::rt::Half (each
// with an additive mask of its own type or a uint8_t boolean mask) are
// compiled once into the runtime (runtime/lib/kernels/Attention.cpp); the
// header declares them extern so that generated code does not compile them
// again.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_ATTENTION_H
#define DSC_KERNELS_ATTENTION_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace dsc::kernels::cpu {

namespace attention_detail {

/// Query rows per work item and keys per tile: a tile of scores is
/// kQueryTile * kKeyTile doubles (16 KiB), and the key and value rows of a
/// tile stay in cache while every query row of the work item reads them.
constexpr int64_t kQueryTile = 32;
constexpr int64_t kKeyTile = 64;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// The exclusive end of the keys query row `t` may see.
inline int64_t keyEnd(int64_t t, int64_t queries, int64_t keys, bool causal) {
  if (!causal)
    return keys;
  return std::clamp<int64_t>(t + 1 + (keys - queries), 0, keys);
}

/// sum_d a[d] * b[d] in double.
template <typename T>
inline double dot(const T *a, const T *b, int64_t n) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < n; ++d)
    sum += double(float(a[d])) * double(float(b[d]));
  return sum;
}

/// The masked, scaled score of (q row, k row) at mask offset `m`: -inf where
/// the mask hides the key.
template <typename T, typename M>
inline double score(const T *qRow, const T *kRow, int64_t headDim, double scale,
                    const M *mask, int64_t m) {
  if constexpr (std::is_same_v<M, uint8_t>) {
    if (mask && !mask[m])
      return kNegInf;
    return dot(qRow, kRow, headDim) * scale;
  } else {
    double x = dot(qRow, kRow, headDim) * scale;
    return mask ? x + double(float(mask[m])) : x;
  }
}

} // namespace attention_detail

/// Forward: out[b,h,t,:] = sum_s softmax_s(scale * q[b,h,t,:].k[b,h,s,:] +
/// mask) * v[b,h,s,:], and lse[b,h,t] = log sum_s exp(scale * q.k + mask)
/// over the visible keys. Layouts are contiguous row-major: q and out
/// [B,H,T,D] / [B,H,T,Dv], k [B,H,S,D], v [B,H,S,Dv], lse [B,H,T].
template <typename T, typename M>
void attentionForward(Queue, const T *q, const T *k, const T *v, const M *mask,
                      int64_t maskStrideB, int64_t maskStrideH,
                      int64_t maskStrideT, int64_t maskStrideS, T *out,
                      float *lse, int64_t batch, int64_t heads, int64_t queries,
                      int64_t keys, int64_t headDim, int64_t valueDim,
                      double scale, bool causal) {
  using namespace attention_detail;
  const int64_t tiles = (queries + kQueryTile - 1) / kQueryTile;
  const int64_t work = batch * heads * tiles;
#pragma omp parallel
  {
    std::vector<double> scores(kQueryTile * kKeyTile);
    std::vector<double> acc(kQueryTile * valueDim);
    double rowMax[kQueryTile], rowSum[kQueryTile];
#pragma omp for schedule(dynamic, 1)
    for (int64_t w = 0; w < work; ++w) {
      const int64_t bh = w / tiles, t0 = (w % tiles) * kQueryTile;
      const int64_t b = bh / heads, h = bh % heads;
      const int64_t rows = std::min(kQueryTile, queries - t0);
      const T *qh = q + bh * queries * headDim;
      const T *kh = k + bh * keys * headDim;
      const T *vh = v + bh * keys * valueDim;
      const int64_t maskBase = b * maskStrideB + h * maskStrideH;
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(rowMax, rowMax + kQueryTile, kNegInf);
      std::fill(rowSum, rowSum + kQueryTile, 0.0);
      const int64_t tileEnd = keyEnd(t0 + rows - 1, queries, keys, causal);
      for (int64_t s0 = 0; s0 < tileEnd; s0 += kKeyTile) {
        const int64_t cols = std::min(kKeyTile, tileEnd - s0);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t t = t0 + r;
          const int64_t end = std::min(cols, keyEnd(t, queries, keys, causal) - s0);
          double *x = &scores[r * kKeyTile];
          double tileMax = kNegInf;
          for (int64_t c = 0; c < end; ++c) {
            const int64_t s = s0 + c;
            x[c] = score(qh + t * headDim, kh + s * headDim, headDim, scale, mask,
                         maskBase + t * maskStrideT + s * maskStrideS);
            tileMax = std::max(tileMax, x[c]);
          }
          if (tileMax == kNegInf)
            continue; // no visible key in this tile
          const double newMax = std::max(rowMax[r], tileMax);
          const double correction = std::exp(rowMax[r] - newMax);
          double *a = &acc[r * valueDim];
          rowSum[r] *= correction;
#pragma omp simd
          for (int64_t d = 0; d < valueDim; ++d)
            a[d] *= correction;
          for (int64_t c = 0; c < end; ++c) {
            const double p = std::exp(x[c] - newMax);
            if (p == 0)
              continue;
            rowSum[r] += p;
            const T *vRow = vh + (s0 + c) * valueDim;
#pragma omp simd
            for (int64_t d = 0; d < valueDim; ++d)
              a[d] += p * double(float(vRow[d]));
          }
          rowMax[r] = newMax;
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t t = t0 + r;
        T *o = out + (bh * queries + t) * valueDim;
        const double *a = &acc[r * valueDim];
        if (rowSum[r] == 0) {
          for (int64_t d = 0; d < valueDim; ++d)
            o[d] = T(0.0f);
          lse[bh * queries + t] = -std::numeric_limits<float>::infinity();
          continue;
        }
        const double inv = 1.0 / rowSum[r];
        for (int64_t d = 0; d < valueDim; ++d)
          o[d] = T(float(a[d] * inv));
        lse[bh * queries + t] = float(rowMax[r] + std::log(rowSum[r]));
      }
    }
  }
}

/// Backward of attentionForward, given its output `out`, the output's
/// cotangent `dOut` and the saved `lse`: with P = exp(scale * q k^T + mask
/// - lse) (recomputed per tile), dP = dOut v^T and Delta_t = sum_d
/// dOut[t,d] * out[t,d],
///   dv = P^T dOut,  dS = P * (dP - Delta),  dq = scale * dS k,
///   dk = scale * dS^T q.
/// The mask gets no cotangent. Layouts as attentionForward's; dq, dk, dv
/// have the shapes of q, k, v.
template <typename T, typename M>
void attentionBackward(Queue, const T *q, const T *k, const T *v, const T *out,
                       const T *dOut, const float *lse, const M *mask,
                       int64_t maskStrideB, int64_t maskStrideH,
                       int64_t maskStrideT, int64_t maskStrideS, T *dq, T *dk,
                       T *dv, int64_t batch, int64_t heads, int64_t queries,
                       int64_t keys, int64_t headDim, int64_t valueDim,
                       double scale, bool causal) {
  using namespace attention_detail;
  const int64_t bhCount = batch * heads;
  // Delta_t = dOut[t] . out[t]: one double per query row.
  std::vector<double> delta(bhCount * queries);
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < bhCount * queries; ++row)
    delta[row] = dot(dOut + row * valueDim, out + row * valueDim, valueDim);

  // One work item per (b, h): its key tiles in order, each tile's
  // probabilities and dS computed once, for every query row that sees the
  // tile, into `g` (scale * dS) and used three times: dv and dk of the
  // tile's keys (sums over t in order) and dq of every row (sums over s in
  // order, tile after tile). Scratch per thread: the tile's [T, kKeyTile]
  // dS and the head's [T, D] dq in double.
#pragma omp parallel
  {
    std::vector<double> dkAcc(kKeyTile * headDim), dvAcc(kKeyTile * valueDim);
    std::vector<double> g(queries * kKeyTile), prob(queries * kKeyTile);
    std::vector<double> dqAcc(queries * headDim);
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < bhCount; ++bh) {
      const int64_t b = bh / heads, h = bh % heads;
      const int64_t maskBase = b * maskStrideB + h * maskStrideH;
      std::fill(dqAcc.begin(), dqAcc.end(), 0.0);
      for (int64_t s0 = 0; s0 < keys; s0 += kKeyTile) {
        const int64_t cols = std::min(kKeyTile, keys - s0);
        // The first query row that sees a key of this tile.
        const int64_t first =
            causal ? std::clamp<int64_t>(s0 - (keys - queries), 0, queries) : 0;
        for (int64_t t = first; t < queries; ++t) {
          const int64_t end = std::min(cols, keyEnd(t, queries, keys, causal) - s0);
          const double rowLse = lse[bh * queries + t];
          const T *qRow = q + (bh * queries + t) * headDim;
          const T *dORow = dOut + (bh * queries + t) * valueDim;
          for (int64_t c = 0; c < end; ++c) {
            double p = 0, ds = 0;
            if (rowLse != kNegInf) {
              const int64_t s = s0 + c;
              const double x = score(qRow, k + (bh * keys + s) * headDim, headDim,
                                     scale, mask,
                                     maskBase + t * maskStrideT + s * maskStrideS);
              p = std::exp(x - rowLse);
              if (p != 0)
                ds = p * (dot(dORow, v + (bh * keys + s) * valueDim, valueDim) -
                          delta[bh * queries + t]);
            }
            prob[t * kKeyTile + c] = p;
            g[t * kKeyTile + c] = ds * scale;
          }
        }
        std::fill(dkAcc.begin(), dkAcc.end(), 0.0);
        std::fill(dvAcc.begin(), dvAcc.end(), 0.0);
        for (int64_t t = first; t < queries; ++t) {
          const int64_t end = std::min(cols, keyEnd(t, queries, keys, causal) - s0);
          const T *qRow = q + (bh * queries + t) * headDim;
          const T *dORow = dOut + (bh * queries + t) * valueDim;
          double *dqRow = &dqAcc[t * headDim];
          for (int64_t c = 0; c < end; ++c) {
            const double p = prob[t * kKeyTile + c], gs = g[t * kKeyTile + c];
            if (p == 0)
              continue;
            double *dvRow = &dvAcc[c * valueDim];
#pragma omp simd
            for (int64_t d = 0; d < valueDim; ++d)
              dvRow[d] += p * double(float(dORow[d]));
            double *dkRow = &dkAcc[c * headDim];
#pragma omp simd
            for (int64_t d = 0; d < headDim; ++d)
              dkRow[d] += gs * double(float(qRow[d]));
            const T *kRow = k + (bh * keys + s0 + c) * headDim;
#pragma omp simd
            for (int64_t d = 0; d < headDim; ++d)
              dqRow[d] += gs * double(float(kRow[d]));
          }
        }
        for (int64_t c = 0; c < cols; ++c) {
          T *dkOut = dk + (bh * keys + s0 + c) * headDim;
          T *dvOut = dv + (bh * keys + s0 + c) * valueDim;
          for (int64_t d = 0; d < headDim; ++d)
            dkOut[d] = T(float(dkAcc[c * headDim + d]));
          for (int64_t d = 0; d < valueDim; ++d)
            dvOut[d] = T(float(dvAcc[c * valueDim + d]));
        }
      }
      for (int64_t t = 0; t < queries; ++t) {
        T *dqOut = dq + (bh * queries + t) * headDim;
        for (int64_t d = 0; d < headDim; ++d)
          dqOut[d] = T(float(dqAcc[t * headDim + d]));
      }
    }
  }
}

// Compiled once in the runtime (runtime/lib/kernels/Attention.cpp).
#define DSC_KERNELS_ATTENTION_INSTANCES(X)                                     \
  X(float, float)                                                              \
  X(float, uint8_t)                                                            \
  X(::dsc::rt::BFloat16, ::dsc::rt::BFloat16)                                  \
  X(::dsc::rt::BFloat16, uint8_t)                                              \
  X(::dsc::rt::Half, ::dsc::rt::Half)                                          \
  X(::dsc::rt::Half, uint8_t)

#define DSC_KERNELS_ATTENTION_DECLARE(PREFIX, T, M)                            \
  PREFIX template void attentionForward<T, M>(                                 \
      Queue, const T *, const T *, const T *, const M *, int64_t, int64_t,     \
      int64_t, int64_t, T *, float *, int64_t, int64_t, int64_t, int64_t,      \
      int64_t, int64_t, double, bool);                                         \
  PREFIX template void attentionBackward<T, M>(                                \
      Queue, const T *, const T *, const T *, const T *, const T *,            \
      const float *, const M *, int64_t, int64_t, int64_t, int64_t, T *, T *,  \
      T *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, double, bool);

#define DSC_KERNELS_ATTENTION_EXTERN(T, M)                                     \
  DSC_KERNELS_ATTENTION_DECLARE(extern, T, M)
DSC_KERNELS_ATTENTION_INSTANCES(DSC_KERNELS_ATTENTION_EXTERN)
#undef DSC_KERNELS_ATTENTION_EXTERN

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_ATTENTION_H
