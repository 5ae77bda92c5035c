//===- Routing.h - gather, scatter-add, top-k, cumsum, one-hot --*- C++ -*-===//
//
// The indexing and routing ops of mixture-of-experts gating and of the
// gradients of lookups (dsc.gather, dsc.scatter_add, dsc.top_k, dsc.cumsum,
// dsc.one_hot), with the dialect's semantics. Index tensors are int64.
//
// Determinism without atomics: a scatter-add's positions that can add into
// one element are those that differ only along `dim`; each such line is
// one thread's, walked in increasing index position, so the sums are the
// serial loop's on any number of threads.
//
// Bad indices (gather, scatter-add) throw std::out_of_range "<op>: index I
// is outside [0, N)" after the kernel, for the lowest bad position; the
// element is skipped. one_hot defines indices outside [0, classes) as a row
// of zeros (cross-entropy's ignored targets rely on it): no error.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_ROUTING_H
#define DSC_KERNELS_ROUTING_H

#include "dsc/kernels/Dims.h"
#include "dsc/kernels/Permute.h"
#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// out[p] = in[p with coordinate `dim` replaced by index[p]] for every
/// position p of `index` (shape `indexShape`, the result's shape too);
/// `inShape` has the same rank and is no smaller than `indexShape` in any
/// dimension but `dim`. A copy: instantiated per element width.
template <typename Word>
void gatherWords(Queue, const Word *in, const int64_t *index, Word *out, Dims inShape,
                 Dims indexShape, int dim);

template <typename T>
void gather(Queue q, const T *in, const int64_t *index, T *out, Dims inShape, Dims indexShape,
            int dim) {
  gatherWords(q, reinterpret_cast<const WordOf<T> *>(in), index,
              reinterpret_cast<WordOf<T> *>(out), inShape, indexShape, dim);
}

/// out = in, then out[p with coordinate `dim` replaced by index[p]] +=
/// src[p] for every position p of `index`, in increasing p among the
/// positions that reach one element. Each addition is done in T's compute
/// type (float for 16-bit types) and rounded, as PyTorch's scatter_add.
/// `in` may be `out` (then nothing is copied).
template <typename T>
void scatterAdd(Queue, const T *in, const int64_t *index, const T *src, T *out, Dims inShape,
                Dims indexShape, Dims srcShape, int dim);

/// For each (o, q) of in[outer, n, inner]: the k largest elements over j,
/// in descending order, into values[o, r, q] and their j into
/// indices[o, r, q] (r < k). Equal elements keep the lower j first; NaN
/// ranks above every number (torch.topk). k outside [0, n] throws
/// std::invalid_argument.
template <typename T>
void topK(Queue, const T *in, T *values, int64_t *indices, int64_t outer, int64_t n,
          int64_t inner, int64_t k);

/// out[o, j, q] = sum_{i <= j} in[o, i, q], accumulated in double (float
/// data) or int64 and rounded at every position, as PyTorch's CPU cumsum.
template <typename T>
void cumsum(Queue, const T *in, T *out, int64_t outer, int64_t n, int64_t inner);

/// out[i, c] = (indices[i] == c) for i < count, c < classes.
template <typename T>
void oneHot(Queue, const int64_t *indices, T *out, int64_t count, int64_t classes);

#define DSC_ROUTING_DECLARE(T)                                                 \
  extern template void scatterAdd<T>(Queue, const T *, const int64_t *, const T *, T *, \
                                     Dims, Dims, Dims, int);                   \
  extern template void topK<T>(Queue, const T *, T *, int64_t *, int64_t, int64_t, \
                               int64_t, int64_t);                              \
  extern template void cumsum<T>(Queue, const T *, T *, int64_t, int64_t, int64_t); \
  extern template void oneHot<T>(Queue, const int64_t *, T *, int64_t, int64_t);
DSC_ROUTING_DECLARE(float)
DSC_ROUTING_DECLARE(double)
DSC_ROUTING_DECLARE(dsc::rt::BFloat16)
DSC_ROUTING_DECLARE(dsc::rt::Half)
DSC_ROUTING_DECLARE(int64_t)
DSC_ROUTING_DECLARE(int32_t)
#undef DSC_ROUTING_DECLARE
extern template void gatherWords<uint8_t>(Queue, const uint8_t *, const int64_t *, uint8_t *,
                                          Dims, Dims, int);
extern template void gatherWords<uint16_t>(Queue, const uint16_t *, const int64_t *,
                                           uint16_t *, Dims, Dims, int);
extern template void gatherWords<uint32_t>(Queue, const uint32_t *, const int64_t *,
                                           uint32_t *, Dims, Dims, int);
extern template void gatherWords<uint64_t>(Queue, const uint64_t *, const int64_t *,
                                           uint64_t *, Dims, Dims, int);

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_ROUTING_H
