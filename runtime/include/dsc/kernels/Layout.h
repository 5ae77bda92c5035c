//===- Layout.h - slice, concat, broadcast and causal mask on the CPU -*- C++ -*-===//
//
// The ops that only place elements (dsc.slice, dsc.concat, dsc.broadcast)
// and the causal mask, which places a fill above the diagonal. Placing
// does no arithmetic, so slice, concat and broadcast are instantiated per
// element width (1, 2, 4, 8 bytes) and every element type uses its width's
// copy, as the permutes do (Permute.h).
//
// Slices and concats work on the (outer, n, inner) view of a tensor around
// the dimension they cut or join: `inner` consecutive elements move
// together, copied whole.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_LAYOUT_H
#define DSC_KERNELS_LAYOUT_H

#include "dsc/kernels/Dims.h"
#include "dsc/kernels/Permute.h"
#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// out[o, outStart + j, q] = in[o, inStart + j * inStep, q] for o < outer,
/// j < count, q < inner, where `in` is [outer, inDim, inner] and `out`
/// [outer, outDim, inner]; inStep >= 1.
template <typename Word>
void copyAlongDimWords(Queue, const Word *in, Word *out, int64_t outer, int64_t inner,
                       int64_t inDim, int64_t inStart, int64_t inStep, int64_t outDim,
                       int64_t outStart, int64_t count);

/// out = in[:, start : start + outDim * step : step, :] for `in`
/// [outer, inDim, inner] and `out` [outer, outDim, inner] (dsc.slice).
template <typename T>
void slice(Queue q, const T *in, T *out, int64_t outer, int64_t inDim, int64_t inner,
           int64_t start, int64_t step, int64_t outDim) {
  copyAlongDimWords(q, reinterpret_cast<const WordOf<T> *>(in),
                    reinterpret_cast<WordOf<T> *>(out), outer, inner, inDim, start, step,
                    outDim, 0, outDim);
}

/// out[:, offset : offset + partDim, :] = part for `part` [outer, partDim,
/// inner] and `out` [outer, outDim, inner]: one input of a dsc.concat.
template <typename T>
void concatPart(Queue q, const T *part, T *out, int64_t outer, int64_t partDim,
                int64_t inner, int64_t outDim, int64_t offset) {
  copyAlongDimWords(q, reinterpret_cast<const WordOf<T> *>(part),
                    reinterpret_cast<WordOf<T> *>(out), outer, inner, partDim, 0, 1, outDim,
                    offset, partDim);
}

/// out = in broadcast to `outShape` (NumPy rules): `inShape` has
/// outShape's rank and each of its sizes is outShape's or 1 (rank <=
/// kMaxRank).
template <typename Word>
void broadcastWords(Queue, const Word *in, Word *out, Dims inShape, Dims outShape);

template <typename T>
void broadcast(Queue q, const T *in, T *out, Dims inShape, Dims outShape) {
  broadcastWords(q, reinterpret_cast<const WordOf<T> *>(in),
                 reinterpret_cast<WordOf<T> *>(out), inShape, outShape);
}

/// out[b, r, c] = c > r + (cols - rows) ? fill : in[b, r, c] for `in`
/// [batch, rows, cols] (dsc.causal_mask: the query row r of the last
/// `rows` of `cols` positions sees the keys up to its own). `fill` is
/// rounded to T through float, as a float literal would be. `in` may be
/// `out`.
template <typename T>
void causalMask(Queue, const T *in, T *out, int64_t batch, int64_t rows, int64_t cols,
                double fill);

#define DSC_LAYOUT_DECLARE_WORD(W)                                             \
  extern template void copyAlongDimWords<W>(Queue, const W *, W *, int64_t, int64_t, \
                                            int64_t, int64_t, int64_t, int64_t, int64_t, \
                                            int64_t);                          \
  extern template void broadcastWords<W>(Queue, const W *, W *, Dims, Dims);
DSC_LAYOUT_DECLARE_WORD(uint8_t)
DSC_LAYOUT_DECLARE_WORD(uint16_t)
DSC_LAYOUT_DECLARE_WORD(uint32_t)
DSC_LAYOUT_DECLARE_WORD(uint64_t)
#undef DSC_LAYOUT_DECLARE_WORD
#define DSC_LAYOUT_DECLARE_MASK(T)                                             \
  extern template void causalMask<T>(Queue, const T *, T *, int64_t, int64_t, int64_t, double);
DSC_LAYOUT_DECLARE_MASK(float)
DSC_LAYOUT_DECLARE_MASK(double)
DSC_LAYOUT_DECLARE_MASK(dsc::rt::BFloat16)
DSC_LAYOUT_DECLARE_MASK(dsc::rt::Half)
#undef DSC_LAYOUT_DECLARE_MASK

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_LAYOUT_H
