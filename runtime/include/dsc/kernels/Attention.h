//===- Attention.h - flash-style scaled dot-product attention, CPU -*- C++ -*-===//
//
// dsc.attention and dsc.attention_grad on the CPU: softmax(scale * q k^T +
// mask) v for q [B, H, T, D], k [B, H, S, D], v [B, H, S, Dv], without the
// [T, S] score matrix. The forward walks the keys in tiles and keeps, per
// query row, the running maximum, the running sum of exponentials and the
// output accumulator (the online softmax of FlashAttention); it saves the
// log-sum-exp of each row, [B, H, T] fp32. The backward recomputes each
// tile's probabilities from q, k and that log-sum-exp instead of reading a
// saved [T, S] matrix. Memory beyond the operands, per thread: in the
// forward, a tile of keys and values and one of query rows and their
// accumulators; in the backward, the head's query and output-gradient
// rows, its dq accumulator and a [T, 64] tile of probabilities and of dS,
// all in double (linear in T), kept by each thread for its next call.
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
// tiles by the one thread that owns the head, not with atomics). Where the
// CPU has AVX2 and FMA (runtime/lib/kernels/Attention.cpp picks at run
// time) products are fused into the sums, which changes only the last bits
// of a double.
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

#include <cstdint>

namespace dsc::kernels::cpu {

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
                      double scale, bool causal);

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
                       double scale, bool causal);

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
