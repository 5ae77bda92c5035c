//===- Embedding.h - embedding lookup and its deterministic gradient -*- C++ -*-===//
//
// An embedding table is [rows, dim], row-major; `ids` holds `count` int64
// row numbers. The forward copies rows; the backward sums the gradient rows
// of each id without atomics, in the order of the ids' positions, so that
// the table's gradient is bitwise the same on any number of threads (a
// scatter-add with atomics would add in arrival order).
//
// An id outside [0, rows) throws std::out_of_range "dsc.embedding: index I
// is outside [0, rows)" after the kernel, naming the bad id at the lowest
// position; its output row is left as it was (forward) or gets nothing
// (backward).
//
// Instantiated for float, double, bf16 and f16 in the runtime library.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_EMBEDDING_H
#define DSC_KERNELS_EMBEDDING_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// out[i, d] = table[ids[i], d] for i < count, d < dim. Rows are copied in
/// parallel over i.
template <typename T>
void embeddingForward(Queue, const T *table, const int64_t *ids, T *out, int64_t count,
                      int64_t rows, int64_t dim);

/// dtable[v, d] = sum over i with ids[i] == v of dy[i, d], in increasing i,
/// accumulated in double and rounded once; rows no id names are zero. The
/// ids are bucketed by a counting sort (O(count + rows), stable), then the
/// table's rows are written in parallel, each from its own bucket.
template <typename T>
void embeddingBackward(Queue, const T *dy, const int64_t *ids, T *dtable, int64_t count,
                       int64_t rows, int64_t dim);

#define DSC_EMBEDDING_DECLARE(T)                                               \
  extern template void embeddingForward<T>(Queue, const T *, const int64_t *, T *, int64_t, \
                                           int64_t, int64_t);                  \
  extern template void embeddingBackward<T>(Queue, const T *, const int64_t *, T *, \
                                            int64_t, int64_t, int64_t);
DSC_EMBEDDING_DECLARE(float)
DSC_EMBEDDING_DECLARE(double)
DSC_EMBEDDING_DECLARE(dsc::rt::BFloat16)
DSC_EMBEDDING_DECLARE(dsc::rt::Half)
#undef DSC_EMBEDDING_DECLARE

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_EMBEDDING_H
