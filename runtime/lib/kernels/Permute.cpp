//===- Permute.cpp - tiled transpose and permute on the CPU ---------------===//

#include "dsc/kernels/Permute.h"

#include <algorithm>
#include <cstring>

using namespace dsc::kernels;
using namespace dsc::kernels::cpu;

namespace {
constexpr int64_t kTile = 32;
constexpr int64_t kParallelElements = 1 << 15;

} // namespace

template <typename Word>
void dsc::kernels::cpu::permuteWords(Queue, const Word *in, Word *out, Dims shape,
                                     Dims perm) {
  simplifyPermutation(shape, perm);
  const int r = shape.rank;
  int64_t inStride[kMaxRank], outStride[kMaxRank];
  Dims outShape{r, {}};
  int64_t outStrideOf[kMaxRank]; // by input dimension
  rowMajorStrides(shape, inStride);
  int64_t total = 1;
  for (int d = 0; d < r; ++d) {
    outShape.size[d] = shape.size[perm.size[d]];
    total *= outShape.size[d];
  }
  if (total == 0)
    return;
  rowMajorStrides(outShape, outStride);
  for (int d = 0; d < r; ++d)
    outStrideOf[perm.size[d]] = outStride[d];
  const bool parallel = total >= kParallelElements;

  if (perm.size[r - 1] == r - 1) {
    // The innermost dimension stays: whole rows, copied.
    int64_t inner = shape.size[r - 1], rows = total / inner;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t rest = row, from = 0;
      for (int d = r - 2; d >= 0; --d) {
        from += rest % outShape.size[d] * inStride[perm.size[d]];
        rest /= outShape.size[d];
      }
      std::memcpy(out + row * inner, in + from, inner * sizeof(Word));
    }
    return;
  }

  // Input dimension a (innermost) moves; b becomes the result's innermost.
  // The other dimensions are a batch of a <-> b transposes.
  const int a = r - 1, b = int(perm.size[r - 1]);
  const int64_t na = shape.size[a], nb = shape.size[b];
  const int64_t osa = outStrideOf[a], isb = inStride[b];
  int others[kMaxRank], nothers = 0;
  int64_t batch = 1;
  for (int d = 0; d < r; ++d)
    if (d != a && d != b) {
      others[nothers++] = d;
      batch *= shape.size[d];
    }
  const int64_t tilesA = (na + kTile - 1) / kTile, tilesB = (nb + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < batch * tilesB * tilesA; ++item) {
    int64_t rest = item / (tilesB * tilesA), inBase = 0, outBase = 0;
    for (int k = nothers - 1; k >= 0; --k) {
      int d = others[k];
      int64_t c = rest % shape.size[d];
      rest /= shape.size[d];
      inBase += c * inStride[d];
      outBase += c * outStrideOf[d];
    }
    int64_t b0 = item / tilesA % tilesB * kTile, a0 = item % tilesA * kTile;
    int64_t b1 = std::min(nb, b0 + kTile), a1 = std::min(na, a0 + kTile);
    // Through a local tile: the strides of both sides are often powers of
    // two, whose 32 lines would share one L1 set if read or written in
    // place; here every line is read or written once, contiguously.
    Word tile[kTile][kTile];
    if (b1 - b0 == kTile && a1 - a0 == kTile) { // constant trip counts: vectorized
      for (int64_t j = 0; j < kTile; ++j)
        for (int64_t i = 0; i < kTile; ++i)
          tile[i][j] = in[inBase + (b0 + j) * isb + a0 + i];
      for (int64_t i = 0; i < kTile; ++i)
        for (int64_t j = 0; j < kTile; ++j)
          out[outBase + (a0 + i) * osa + b0 + j] = tile[i][j];
      continue;
    }
    for (int64_t j = b0; j < b1; ++j) {
      const Word *src = in + inBase + j * isb;
      for (int64_t i = a0; i < a1; ++i)
        tile[i - a0][j - b0] = src[i];
    }
    for (int64_t i = a0; i < a1; ++i) {
      Word *dst = out + outBase + i * osa;
      for (int64_t j = b0; j < b1; ++j)
        dst[j] = tile[i - a0][j - b0];
    }
  }
}

template void dsc::kernels::cpu::permuteWords<uint8_t>(Queue, const uint8_t *, uint8_t *,
                                                       Dims, Dims);
template void dsc::kernels::cpu::permuteWords<uint16_t>(Queue, const uint16_t *, uint16_t *,
                                                        Dims, Dims);
template void dsc::kernels::cpu::permuteWords<uint32_t>(Queue, const uint32_t *, uint32_t *,
                                                        Dims, Dims);
template void dsc::kernels::cpu::permuteWords<uint64_t>(Queue, const uint64_t *, uint64_t *,
                                                        Dims, Dims);
