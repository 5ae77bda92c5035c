//===- Layout.cpp - slice, concat, broadcast and causal mask on the CPU ---===//

#include "dsc/kernels/Layout.h"

#include "ElementTraits.h"

#include <algorithm>
#include <cstring>

using namespace dsc::kernels;
using namespace dsc::kernels::cpu;

namespace {
/// Below this many elements a kernel runs on the calling thread.
constexpr int64_t kParallelElements = 1 << 15;

/// The broadcast over fewer dimensions: result dimensions of size 1 are
/// dropped, and adjacent ones that are both broadcast (input size 1) or
/// both kept are merged. An all-ones result becomes {1} from {1}.
void simplifyBroadcast(Dims &in, Dims &out) {
  Dims i{0, {}}, o{0, {}};
  bool lastBroadcast = false;
  for (int d = 0; d < out.rank; ++d) {
    if (out.size[d] == 1)
      continue;
    bool broadcast = in.size[d] == 1;
    if (o.rank > 0 && broadcast == lastBroadcast) {
      o.size[o.rank - 1] *= out.size[d];
      i.size[i.rank - 1] *= in.size[d];
      continue;
    }
    o.size[o.rank] = out.size[d];
    i.size[i.rank] = in.size[d];
    ++o.rank, ++i.rank;
    lastBroadcast = broadcast;
  }
  if (o.rank == 0)
    i = o = Dims{1, {1}};
  in = i;
  out = o;
}
} // namespace

template <typename Word>
void dsc::kernels::cpu::copyAlongDimWords(Queue, const Word *in, Word *out, int64_t outer,
                                          int64_t inner, int64_t inDim, int64_t inStart,
                                          int64_t inStep, int64_t outDim, int64_t outStart,
                                          int64_t count) {
  const int64_t rows = outer * count;
  if (rows == 0 || inner == 0)
    return;
  if (inStep == 1) {
    // An outer index's `count` rows are one contiguous run on both sides:
    // one copy each, not one per row (a slice or concat along the last
    // dim has inner = 1, and its rows are single elements).
    const int64_t run = count * inner;
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelElements)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (o * outDim + outStart) * inner,
                  in + (o * inDim + inStart) * inner, run * sizeof(Word));
    return;
  }
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t o = row / count, j = row % count;
    std::memcpy(out + (o * outDim + outStart + j) * inner,
                in + (o * inDim + inStart + j * inStep) * inner, inner * sizeof(Word));
  }
}

template <typename Word>
void dsc::kernels::cpu::broadcastWords(Queue, const Word *in, Word *out, Dims inShape,
                                       Dims outShape) {
  if (numElements(outShape) == 0)
    return;
  simplifyBroadcast(inShape, outShape);
  const int r = outShape.rank;
  int64_t inStride[kMaxRank];
  rowMajorStrides(inShape, inStride);
  const int64_t width = outShape.size[r - 1], rows = numElements(outShape) / width;
  const bool innerKept = inShape.size[r - 1] != 1;
#pragma omp parallel for schedule(static) if (rows * width >= kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rest = row, from = 0;
    for (int d = r - 2; d >= 0; --d) {
      const int64_t c = rest % outShape.size[d];
      rest /= outShape.size[d];
      if (inShape.size[d] != 1)
        from += c * inStride[d];
    }
    Word *to = out + row * width;
    if (innerKept)
      std::memcpy(to, in + from, width * sizeof(Word));
    else
      std::fill(to, to + width, in[from]);
  }
}

template <typename T>
void dsc::kernels::cpu::causalMask(Queue, const T *in, T *out, int64_t batch, int64_t rows,
                                   int64_t cols, double fill) {
  T filled;
  if constexpr (std::is_same_v<T, double>)
    filled = fill;
  else
    filled = detail::store<T>(static_cast<float>(fill));
  const int64_t shift = cols - rows;
#pragma omp parallel for schedule(static) if (batch * rows * cols >= kParallelElements)
  for (int64_t row = 0; row < batch * rows; ++row) {
    const int64_t r = row % rows;
    // Keys 0 .. r + shift are seen; the rest are filled.
    const int64_t seen = std::clamp<int64_t>(r + shift + 1, 0, cols);
    const T *x = in + row * cols;
    T *y = out + row * cols;
    if (x != y)
      std::memcpy(y, x, seen * sizeof(T));
    std::fill(y + seen, y + cols, filled);
  }
}

#define DSC_LAYOUT_INSTANTIATE_WORD(W)                                         \
  template void dsc::kernels::cpu::copyAlongDimWords<W>(Queue, const W *, W *, int64_t, \
                                                        int64_t, int64_t, int64_t, int64_t, \
                                                        int64_t, int64_t, int64_t); \
  template void dsc::kernels::cpu::broadcastWords<W>(Queue, const W *, W *, Dims, Dims);
DSC_LAYOUT_INSTANTIATE_WORD(uint8_t)
DSC_LAYOUT_INSTANTIATE_WORD(uint16_t)
DSC_LAYOUT_INSTANTIATE_WORD(uint32_t)
DSC_LAYOUT_INSTANTIATE_WORD(uint64_t)
#define DSC_LAYOUT_INSTANTIATE_MASK(T)                                         \
  template void dsc::kernels::cpu::causalMask<T>(Queue, const T *, T *, int64_t, int64_t, \
                                                 int64_t, double);
DSC_LAYOUT_INSTANTIATE_MASK(float)
DSC_LAYOUT_INSTANTIATE_MASK(double)
DSC_LAYOUT_INSTANTIATE_MASK(dsc::rt::BFloat16)
DSC_LAYOUT_INSTANTIATE_MASK(dsc::rt::Half)
