//===- Reduce.h - deterministic sum, mean, max over one dimension -*- C++ -*-===//
//
// Reductions over the middle dimension of an (outer, n, inner) view: element
// (o, j, q) is at o*n*inner + j*inner + q and result (o, q) at o*inner + q.
// inner == 1 reduces rows (softmax statistics, a loss over tokens, a full
// reduction when outer == 1 too); outer == 1 reduces columns (bias
// gradients: [tokens, features] -> [features]). Reducing several adjacent
// dimensions is the same call with their product as n.
//
// Deterministic two-stage: n is cut into chunks of a fixed length (kChunk
// elements for rows, kChunkRows rows for columns, constants independent of
// the number of threads); each chunk's partial is computed in one fixed
// order, and the partials of a result are combined in chunk order. Threads
// only decide who computes which partial, so the result is bitwise the same
// on 1 or 64 threads, run after run. (The loops are compiled for AVX2 and
// for any x86-64, picked at load time: a row's partial takes its SIMD
// width's order, so machines with and without AVX2 may differ in the last
// bit of a row sum; column sums run in row order on both.)
//
// Precision: float data (f32, bf16, f16, f64) accumulates in double and is
// rounded once to the element type, as the compiler's generated reductions
// did and PyTorch's CPU sums (which accumulate float in double) do; integer
// data accumulates in int64. A maximum propagates NaN (torch.amax).
//
// Definitions and instantiations (float, bf16, f16, double, int64, int32;
// mean for the float types only) are in the runtime library, so generated
// code includes only these declarations.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_REDUCE_H
#define DSC_KERNELS_REDUCE_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// Elements per partial of a row reduction (inner == 1).
inline constexpr int64_t kReduceChunk = 4096;
/// Rows per partial of a column reduction (inner > 1).
inline constexpr int64_t kReduceChunkRows = 256;

/// out[o, q] = sum_j in[o, j, q].
template <typename T>
void reduceSum(Queue, const T *in, T *out, int64_t outer, int64_t n, int64_t inner);

/// out[o, q] = (sum_j in[o, j, q]) / n, the division in double.
template <typename T>
void reduceMean(Queue, const T *in, T *out, int64_t outer, int64_t n, int64_t inner);

/// out[o, q] = max_j in[o, j, q]; NaN if any element is NaN. n == 0 gives
/// -inf (float types) or the lowest value (integers).
template <typename T>
void reduceMax(Queue, const T *in, T *out, int64_t outer, int64_t n, int64_t inner);

/// out[o, q] = sum_j in[o, j, q]^2, each square formed in the accumulator
/// type: the squared norm behind gradient norms and clipping.
template <typename T>
void sumSquares(Queue, const T *in, T *out, int64_t outer, int64_t n, int64_t inner);

#define DSC_REDUCE_DECLARE(T)                                                  \
  extern template void reduceSum<T>(Queue, const T *, T *, int64_t, int64_t, int64_t); \
  extern template void reduceMax<T>(Queue, const T *, T *, int64_t, int64_t, int64_t);
#define DSC_REDUCE_DECLARE_FLOAT(T)                                            \
  DSC_REDUCE_DECLARE(T)                                                        \
  extern template void reduceMean<T>(Queue, const T *, T *, int64_t, int64_t, int64_t); \
  extern template void sumSquares<T>(Queue, const T *, T *, int64_t, int64_t, int64_t);
DSC_REDUCE_DECLARE_FLOAT(float)
DSC_REDUCE_DECLARE_FLOAT(double)
DSC_REDUCE_DECLARE_FLOAT(dsc::rt::BFloat16)
DSC_REDUCE_DECLARE_FLOAT(dsc::rt::Half)
DSC_REDUCE_DECLARE(int64_t)
DSC_REDUCE_DECLARE(int32_t)
#undef DSC_REDUCE_DECLARE_FLOAT
#undef DSC_REDUCE_DECLARE

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_REDUCE_H
