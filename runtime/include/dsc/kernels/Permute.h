//===- Permute.h - tiled transpose and permute on the CPU -------*- C++ -*-===//
//
// Layout changes move bytes and do no arithmetic, so they are instantiated
// per element width (1, 2, 4, 8 bytes) and every element type uses the
// width's copy: `transpose` and `permute` below are inline forwards to
// them.
//
// A permute first drops dimensions of size 1 and merges input dimensions
// that stay adjacent in the result. When the innermost dimension stays
// innermost, rows are copied whole. Otherwise it is a batch of transposes
// between the input's innermost dimension and the one that becomes the
// result's innermost, done in 32 x 32 tiles so that reads and writes both
// stay within a few cache lines.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_PERMUTE_H
#define DSC_KERNELS_PERMUTE_H

#include "dsc/kernels/Dims.h"
#include "dsc/kernels/Queue.h"

#include <cstdint>
#include <type_traits>

namespace dsc::kernels::cpu {

/// The unsigned integer of T's width: the type its bytes are copied as.
template <typename T>
using WordOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t,
                       std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

/// out[dims in permuted order] = in: result dimension d is input dimension
/// perm.size[d]; `shape` is the input's shape (rank <= kMaxRank).
template <typename Word>
void permuteWords(Queue, const Word *in, Word *out, Dims shape, Dims perm);

template <typename T> void permute(Queue q, const T *in, T *out, Dims shape, Dims perm) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
  permuteWords(q, reinterpret_cast<const WordOf<T> *>(in), reinterpret_cast<WordOf<T> *>(out),
               shape, perm);
}

/// out[b, c, r] = in[b, r, c] for in [batch, rows, cols]: the last two
/// dimensions swapped (attention's K^T, a matmul operand's layout).
template <typename T>
void transpose(Queue q, const T *in, T *out, int64_t batch, int64_t rows, int64_t cols) {
  permute(q, in, out, Dims{3, {batch, rows, cols}}, Dims{3, {0, 2, 1}});
}

extern template void permuteWords<uint8_t>(Queue, const uint8_t *, uint8_t *, Dims, Dims);
extern template void permuteWords<uint16_t>(Queue, const uint16_t *, uint16_t *, Dims, Dims);
extern template void permuteWords<uint32_t>(Queue, const uint32_t *, uint32_t *, Dims, Dims);
extern template void permuteWords<uint64_t>(Queue, const uint64_t *, uint64_t *, Dims, Dims);

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_PERMUTE_H
