//===- Routing.cpp - gather, scatter-add, top-k, cumsum, one-hot on the CPU ===//

#include "dsc/kernels/Routing.h"
#include "dsc/kernels/IndexCheck.h"

#include "ElementTraits.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using namespace dsc::kernels;
using namespace dsc::kernels::cpu;
using namespace dsc::kernels::cpu::detail;

namespace {
constexpr int64_t kParallelElements = 1 << 15;
/// Columns per work item where a loop runs down a dimension other than the
/// last (scatter-add, cumsum): contiguous inner loops, L1-sized state.
constexpr int64_t kColumnTile = 256;

/// The coordinates of the position numbered `linear` (row-major) over the
/// dimensions of `shape` not in the mask `excluded`; excluded ones are 0.
void decode(int64_t linear, const Dims &shape, unsigned excluded, int64_t *c) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    c[d] = 0;
    if (excluded & (1u << d))
      continue;
    c[d] = linear % shape.size[d];
    linear /= shape.size[d];
  }
}

int64_t dot(const int64_t *c, const int64_t *stride, int rank) {
  int64_t o = 0;
  for (int d = 0; d < rank; ++d)
    o += c[d] * stride[d];
  return o;
}

/// NaN ranks above every number (torch.topk).
template <typename V> bool greater(V a, V b) { return a > b || (a != a && b == b); }
} // namespace

template <typename Word>
void dsc::kernels::cpu::gatherWords(Queue, const Word *in, const int64_t *index, Word *out,
                                    Dims inShape, Dims indexShape, int dim) {
  const int r = indexShape.rank, last = r - 1;
  const int64_t size = inShape.size[dim], width = indexShape.size[last];
  const int64_t total = numElements(indexShape);
  if (total == 0)
    return;
  int64_t inStride[kMaxRank], indexStride[kMaxRank];
  rowMajorStrides(inShape, inStride);
  rowMajorStrides(indexShape, indexStride);
  IndexCheck check;
#pragma omp parallel for schedule(static) if (total >= kParallelElements)
  for (int64_t row = 0; row < total / width; ++row) {
    int64_t c[kMaxRank];
    decode(row, indexShape, 1u << last, c);
    c[dim] = 0; // replaced by the index
    int64_t inBase = dot(c, inStride, r);
    for (int64_t j = 0; j < width; ++j) {
      int64_t p = row * width + j, t = index[p];
      if (check.bad(t, size, p))
        continue;
      out[p] = dim == last ? in[inBase + t] : in[inBase + t * inStride[dim] + j];
    }
  }
  check.raise("dsc.gather", size, [&](int64_t p) { return index[p]; });
}

template <typename T>
void dsc::kernels::cpu::scatterAdd(Queue, const T *in, const int64_t *index, const T *src,
                                   T *out, Dims inShape, Dims indexShape, Dims srcShape,
                                   int dim) {
  const int64_t total = numElements(inShape);
  if (in != out) {
#pragma omp parallel for schedule(static) if (total >= kParallelElements)
    for (int64_t i = 0; i < total; i += kColumnTile * 64)
      std::memcpy(out + i, in + i, std::min(kColumnTile * 64, total - i) * sizeof(T));
  }
  if (numElements(indexShape) == 0)
    return;
  const int r = indexShape.rank, last = r - 1;
  const int64_t size = inShape.size[dim], steps = indexShape.size[dim];
  int64_t outStride[kMaxRank], indexStride[kMaxRank], srcStride[kMaxRank];
  rowMajorStrides(inShape, outStride);
  rowMajorStrides(indexShape, indexStride);
  rowMajorStrides(srcShape, srcStride);
  // A line: the positions that differ only along dim. With dim == last a
  // work item is one line; otherwise a tile of adjacent lines along last.
  const int64_t width = dim == last ? 1 : indexShape.size[last];
  const int64_t tiles = (width + kColumnTile - 1) / kColumnTile;
  const int64_t groups = numElements(indexShape) / steps / width;
  IndexCheck check;
#pragma omp parallel for schedule(static) if (numElements(indexShape) >= kParallelElements)
  for (int64_t item = 0; item < groups * tiles; ++item) {
    int64_t c[kMaxRank];
    decode(item / tiles, indexShape, (1u << dim) | (1u << last), c);
    int64_t outBase = dot(c, outStride, r), indexBase = dot(c, indexStride, r);
    int64_t srcBase = dot(c, srcStride, r);
    int64_t q0 = item % tiles * kColumnTile, q1 = std::min(width, q0 + kColumnTile);
    for (int64_t j = 0; j < steps; ++j)
      for (int64_t q = q0; q < q1; ++q) {
        int64_t p = indexBase + j * indexStride[dim] + q, t = index[p];
        if (check.bad(t, size, p))
          continue;
        T &target = out[outBase + t * outStride[dim] + q];
        target = store<T>(Wide<T>(target) + Wide<T>(src[srcBase + j * srcStride[dim] + q]));
      }
  }
  check.raise("dsc.scatter_add", size, [&](int64_t p) { return index[p]; });
}

template <typename T>
void dsc::kernels::cpu::topK(Queue, const T *in, T *values, int64_t *indices, int64_t outer,
                             int64_t n, int64_t inner, int64_t k) {
  if (k < 0 || k > n)
    throw std::invalid_argument("topK: k = " + std::to_string(k) + " is outside [0, " +
                                std::to_string(n) + "]");
  constexpr int64_t kInsertion = 64; // k up to this: a sorted insertion buffer
  using V = Wide<T>;
#pragma omp parallel for schedule(static) if (outer * n * inner >= kParallelElements)
  for (int64_t line = 0; line < outer * inner; ++line) {
    int64_t o = line / inner, q = line % inner;
    const T *x = in + o * n * inner + q;
    auto at = [&](int64_t j) { return V(x[j * inner]); };
    int64_t pickedBuffer[kInsertion];
    std::vector<int64_t> order;
    int64_t *picked = pickedBuffer;
    if (k <= kInsertion) {
      // Scanning j upwards, an element equal to one kept ranks after it.
      int64_t count = 0;
      for (int64_t j = 0; j < n; ++j) {
        V v = at(j);
        if (count == k && !greater(v, at(picked[k - 1])))
          continue;
        int64_t pos = count < k ? count++ : k - 1;
        for (; pos > 0 && greater(v, at(picked[pos - 1])); --pos)
          picked[pos] = picked[pos - 1];
        picked[pos] = j;
      }
    } else {
      order.resize(n);
      std::iota(order.begin(), order.end(), int64_t(0));
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t i, int64_t j) {
                          V a = at(i), b = at(j);
                          return greater(a, b) || (!greater(b, a) && i < j);
                        });
      picked = order.data();
    }
    for (int64_t r = 0; r < k; ++r) {
      values[(o * k + r) * inner + q] = x[picked[r] * inner];
      indices[(o * k + r) * inner + q] = picked[r];
    }
  }
}

template <typename T>
void dsc::kernels::cpu::cumsum(Queue, const T *in, T *out, int64_t outer, int64_t n,
                               int64_t inner) {
  const bool parallel = outer * n * inner >= kParallelElements;
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < outer; ++o) {
      SumAcc<T> acc = 0;
      for (int64_t j = 0; j < n; ++j) {
        acc += SumAcc<T>(Wide<T>(in[o * n + j]));
        out[o * n + j] = store<T>(acc);
      }
    }
    return;
  }
  const int64_t tiles = (inner + kColumnTile - 1) / kColumnTile;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t item = 0; item < outer * tiles; ++item) {
    int64_t o = item / tiles, q0 = item % tiles * kColumnTile;
    int64_t width = std::min(kColumnTile, inner - q0);
    SumAcc<T> acc[kColumnTile] = {};
    for (int64_t j = 0; j < n; ++j) {
      const T *x = in + (o * n + j) * inner + q0;
      T *y = out + (o * n + j) * inner + q0;
      for (int64_t q = 0; q < width; ++q) {
        acc[q] += SumAcc<T>(Wide<T>(x[q]));
        y[q] = store<T>(acc[q]);
      }
    }
  }
}

template <typename T>
void dsc::kernels::cpu::oneHot(Queue, const int64_t *indices, T *out, int64_t count,
                               int64_t classes) {
  const T zero = store<T>(0), one = store<T>(1);
#pragma omp parallel for schedule(static) if (count * classes >= kParallelElements)
  for (int64_t i = 0; i < count; ++i) {
    T *row = out + i * classes;
    std::fill(row, row + classes, zero);
    if (indices[i] >= 0 && indices[i] < classes)
      row[indices[i]] = one;
  }
}

#define DSC_ROUTING_INSTANTIATE(T)                                             \
  template void dsc::kernels::cpu::scatterAdd<T>(Queue, const T *, const int64_t *, \
                                                 const T *, T *, Dims, Dims, Dims, int); \
  template void dsc::kernels::cpu::topK<T>(Queue, const T *, T *, int64_t *, int64_t, \
                                           int64_t, int64_t, int64_t);         \
  template void dsc::kernels::cpu::cumsum<T>(Queue, const T *, T *, int64_t, int64_t, \
                                             int64_t);                         \
  template void dsc::kernels::cpu::oneHot<T>(Queue, const int64_t *, T *, int64_t, int64_t);
DSC_ROUTING_INSTANTIATE(float)
DSC_ROUTING_INSTANTIATE(double)
DSC_ROUTING_INSTANTIATE(dsc::rt::BFloat16)
DSC_ROUTING_INSTANTIATE(dsc::rt::Half)
DSC_ROUTING_INSTANTIATE(int64_t)
DSC_ROUTING_INSTANTIATE(int32_t)
#define DSC_GATHER_INSTANTIATE(W)                                              \
  template void dsc::kernels::cpu::gatherWords<W>(Queue, const W *, const int64_t *, W *, \
                                                  Dims, Dims, int);
DSC_GATHER_INSTANTIATE(uint8_t)
DSC_GATHER_INSTANTIATE(uint16_t)
DSC_GATHER_INSTANTIATE(uint32_t)
DSC_GATHER_INSTANTIATE(uint64_t)
