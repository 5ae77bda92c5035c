//===- Routing.cuh - gather, scatter-add, top-k, cumsum, one-hot on CUDA -*- CUDA -*-===//
//
// The CUDA side of Routing.h, with the same semantics; kernels that read
// run-time indices take the IndexFault that records a bad one (the element
// is skipped; IndexFault.cuh).
//
// - gather, one_hot: a thread per result element.
// - scatter_add: a thread per line (the positions that differ only along
//   `dim`, the only ones that can add into one element), walking the line
//   in order: no atomics, the serial loop's sums bitwise. The embedding
//   gradient's form (rank 2, dim 0, every row of the index one id) has
//   few lines and many steps; when the index is found to be of that form
//   (on the device, no synchronization), its ids are bucketed as the
//   embedding gradient's and a block per (row, 256 columns) adds its
//   bucket in position order: the same additions in the same order.
// - top_k: a warp per line of the reduced dimension and k passes; pass r
//   finds, by a shuffle tree, the best element ranked after pick r - 1
//   (value descending, then index ascending): k is small when gating.
// - cumsum: rows by a warp each (32-element shuffle scans carried along
//   the row, in double or int64); along other dimensions a thread per
//   column, adjacent threads on adjacent columns.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_ROUTING_CUH
#define DSC_KERNELS_CUDA_ROUTING_CUH

#include "dsc/kernels/Dims.h"
#include "dsc/kernels/cuda/Elements.cuh"
#include "dsc/kernels/cuda/Embedding.cuh"
#include "dsc/kernels/cuda/IndexFault.cuh"
#include "dsc/kernels/cuda/Permute.cuh"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {
namespace routing_detail {
// Kernels that are not templates are static: every translation unit of a
// split artifact includes this header (docs/lowering.md).

/// Shapes of an indexed op, by value into the kernels.
struct IndexPlan {
  int rank, dim;
  int64_t size; // of the indexed tensor along dim
  int64_t indexSize[kMaxRank], indexStride[kMaxRank];
  int64_t dataStride[kMaxRank], srcStride[kMaxRank];
};

template <typename W>
__global__ void gather(const W *in, const int64_t *index, W *out, int64_t total, IndexPlan p,
                       IndexFault *fault) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t t = index[i];
    if (t < 0 || t >= p.size) {
      recordIndexFault(fault, "dsc.gather", t, p.size);
      continue;
    }
    int64_t rest = i, from = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t c = rest % p.indexSize[d];
      rest /= p.indexSize[d];
      from += (d == p.dim ? t : c) * p.dataStride[d];
    }
    out[i] = in[from];
  }
}

template <typename T>
__global__ void scatterAddLines(const int64_t *index, const T *src, T *out, int64_t lines,
                                IndexPlan p, IndexFault *fault, const int *rowsAreIds) {
  if (rowsAreIds && *rowsAreIds)
    return; // done by the bucketed form
  for (int64_t line = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; line < lines;
       line += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = line, outBase = 0, indexBase = 0, srcBase = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      if (d == p.dim)
        continue;
      int64_t c = rest % p.indexSize[d];
      rest /= p.indexSize[d];
      outBase += c * p.dataStride[d];
      indexBase += c * p.indexStride[d];
      srcBase += c * p.srcStride[d];
    }
    for (int64_t j = 0; j < p.indexSize[p.dim]; ++j) {
      int64_t t = index[indexBase + j * p.indexStride[p.dim]];
      if (t < 0 || t >= p.size) {
        recordIndexFault(fault, "dsc.scatter_add", t, p.size);
        continue;
      }
      T &target = out[outBase + t * p.dataStride[p.dim]];
      target = Element<T>::narrow(Element<T>::widen(target) +
                                  Element<T>::widen(src[srcBase + j * p.srcStride[p.dim]]));
    }
  }
}

/// rowsAreIds stays 1 when index[j, q] == index[j, 0] for every (j, q),
/// and column 0 of the index goes to ids[j].
static __global__ void indexRows(const int64_t *index, int64_t steps, int64_t width, int64_t *ids,
                          int *rowsAreIds) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < steps * width;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t j = i / width;
    if (i % width == 0)
      ids[j] = index[i];
    else if (index[i] != index[j * width])
      *rowsAreIds = 0;
  }
}

/// The bucketed form: block per (row v of out, 256 columns), the bucket's
/// src rows added in position order, rounding each sum as the line walk.
template <typename T>
__global__ void __launch_bounds__(256)
scatterAddBuckets(const T *src, const int64_t *start, const int64_t *order, T *out,
                  int64_t rows, int64_t width, int64_t outWidth, int64_t srcWidth,
                  int64_t tiles, const int *rowsAreIds) {
  if (!*rowsAreIds)
    return; // done by the line walk
  for (int64_t item = blockIdx.x; item < rows * tiles; item += gridDim.x) {
    int64_t v = item / tiles, q = item % tiles * 256 + threadIdx.x;
    if (q >= width || start[v] == start[v + 1])
      continue;
    T target = out[v * outWidth + q];
    for (int64_t p = start[v]; p < start[v + 1]; ++p)
      target = Element<T>::narrow(Element<T>::widen(target) +
                                  Element<T>::widen(src[order[p] * srcWidth + q]));
    out[v * outWidth + q] = target;
  }
}

/// NaN ranks above every number; then the lower index.
template <typename V>
__device__ __forceinline__ bool ranksBefore(V a, int64_t ia, V b, int64_t ib) {
  bool aNan = a != a, bNan = b != b;
  if (aNan != bNan)
    return aNan;
  if (!aNan && a != b)
    return a > b;
  return ia < ib;
}

template <typename T>
__global__ void topKWarps(const T *in, T *values, int64_t *indices, int64_t outer, int64_t n,
                          int64_t inner, int64_t k) {
  using V = typename Element<T>::Wide;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t line = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32;
       line < outer * inner; line += warps) {
    int64_t o = line / inner, q = line % inner;
    const T *x = in + o * n * inner + q;
    V prev = V(0);
    int64_t prevIndex = -1;
    for (int64_t r = 0; r < k; ++r) {
      V best = V(0);
      int64_t bestIndex = -1;
      for (int64_t j = lane; j < n; j += 32) {
        V v = Element<T>::widen(x[j * inner]);
        if (prevIndex >= 0 && !ranksBefore(prev, prevIndex, v, j))
          continue;
        if (bestIndex < 0 || ranksBefore(v, j, best, bestIndex))
          best = v, bestIndex = j;
      }
      for (int offset = 16; offset > 0; offset /= 2) {
        V otherBest = __shfl_down_sync(0xffffffffu, best, offset);
        int64_t otherIndex = __shfl_down_sync(0xffffffffu, bestIndex, offset);
        if (otherIndex >= 0 && (bestIndex < 0 || ranksBefore(otherBest, otherIndex, best, bestIndex)))
          best = otherBest, bestIndex = otherIndex;
      }
      best = __shfl_sync(0xffffffffu, best, 0);
      bestIndex = __shfl_sync(0xffffffffu, bestIndex, 0);
      if (lane == 0) {
        values[(o * k + r) * inner + q] = x[bestIndex * inner];
        indices[(o * k + r) * inner + q] = bestIndex;
      }
      prev = best, prevIndex = bestIndex;
    }
  }
}

template <typename T>
__global__ void cumsumRows(const T *in, T *out, int64_t outer, int64_t n) {
  using Acc = typename Element<T>::Acc;
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t o = blockIdx.x * int64_t(blockDim.x / 32) + threadIdx.x / 32; o < outer;
       o += warps) {
    Acc carry = 0;
    for (int64_t base = 0; base < n; base += 32) {
      int64_t j = base + lane;
      Acc v = j < n ? Acc(Element<T>::widen(in[o * n + j])) : Acc(0);
      for (int offset = 1; offset < 32; offset *= 2) {
        Acc up = __shfl_up_sync(0xffffffffu, v, offset);
        if (lane >= offset)
          v += up;
      }
      v += carry;
      if (j < n)
        out[o * n + j] = Element<T>::narrow(v);
      carry = __shfl_sync(0xffffffffu, v, 31);
    }
  }
}

template <typename T>
__global__ void cumsumColumns(const T *in, T *out, int64_t outer, int64_t n, int64_t inner) {
  using Acc = typename Element<T>::Acc;
  for (int64_t line = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; line < outer * inner;
       line += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = line / inner, q = line % inner;
    Acc acc = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t at = (o * n + j) * inner + q;
      acc += Acc(Element<T>::widen(in[at]));
      out[at] = Element<T>::narrow(acc);
    }
  }
}

template <typename T>
__global__ void oneHot(const int64_t *indices, T *out, int64_t count, int64_t classes) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count * classes;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = Element<T>::narrow(indices[i / classes] == i % classes ? 1 : 0);
}

/// Steps along dim 0 from which a rank-2 scatter-add checks for the
/// embedding gradient's form (below, the line walk is short anyway).
constexpr int64_t kBucketedSteps = 64;

inline IndexPlan planOf(Dims data, Dims index, Dims src, int dim) {
  IndexPlan p{};
  p.rank = index.rank;
  p.dim = dim;
  p.size = data.size[dim];
  for (int d = 0; d < index.rank; ++d)
    p.indexSize[d] = index.size[d];
  rowMajorStrides(index, p.indexStride);
  rowMajorStrides(data, p.dataStride);
  rowMajorStrides(src, p.srcStride);
  return p;
}

} // namespace routing_detail

/// out[p] = in[p with coordinate `dim` replaced by index[p]] over the
/// positions p of `index` (Routing.h).
template <typename T>
void gather(cudaStream_t stream, const T *in, const int64_t *index, T *out, Dims inShape,
            Dims indexShape, int dim, IndexFault *fault) {
  using namespace routing_detail;
  using W = permute_detail::WordOf<T>;
  int64_t total = numElements(indexShape);
  if (total == 0)
    return;
  routing_detail::gather<W><<<blocksFor((total + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const W *>(in), index, reinterpret_cast<W *>(out), total,
      planOf(inShape, indexShape, indexShape, dim), fault);
  check(cudaGetLastError(), "launching a gather");
}

/// out = in, then out[p with coordinate `dim` replaced by index[p]] +=
/// src[p], in increasing p per element (Routing.h). `in` may be `out`.
template <typename T>
void scatterAdd(cudaStream_t stream, const T *in, const int64_t *index, const T *src, T *out,
                Dims inShape, Dims indexShape, Dims srcShape, int dim, IndexFault *fault) {
  using namespace routing_detail;
  if (in != out)
    check(cudaMemcpyAsync(out, in, numElements(inShape) * sizeof(T), cudaMemcpyDeviceToDevice,
                          stream),
          "copying a scatter-add's input");
  int64_t positions = numElements(indexShape);
  if (positions == 0)
    return;
  int64_t lines = positions / indexShape.size[dim];
  IndexPlan plan = planOf(inShape, indexShape, srcShape, dim);
  const int64_t steps = indexShape.size[0], width = indexShape.size[indexShape.rank - 1];
  if (indexShape.rank != 2 || dim != 0 || steps < kBucketedSteps) {
    scatterAddLines<T><<<blocksFor((lines + 255) / 256), 256, 0, stream>>>(
        index, src, out, lines, plan, fault, nullptr);
    check(cudaGetLastError(), "launching a scatter-add");
    return;
  }
  // Maybe the embedding gradient's form: both ways are launched, each
  // kernel checks the flag the first one set and one of them returns.
  using namespace embedding_detail;
  const int64_t rows = inShape.size[0];
  size_t rowBytes = (size_t(rows + 1) * sizeof(int64_t) + 255) / 256 * 256;
  size_t stepBytes = (size_t(steps) * sizeof(int64_t) + 255) / 256 * 256;
  StreamScratch scratch(256 + 3 * rowBytes + 2 * stepBytes, stream);
  int *rowsAreIds = scratch.as<int>(0);
  auto *counts = scratch.as<unsigned long long>(256);
  int64_t *start = scratch.as<int64_t>(256 + rowBytes);
  int64_t *next = scratch.as<int64_t>(256 + 2 * rowBytes);
  int64_t *ids = scratch.as<int64_t>(256 + 3 * rowBytes);
  int64_t *order = scratch.as<int64_t>(256 + 3 * rowBytes + stepBytes);
  check(cudaMemsetAsync(rowsAreIds, 1, sizeof(int), stream), // nonzero: "yes"
        "setting a scatter-add's form flag");
  check(cudaMemsetAsync(counts, 0, size_t(rows) * sizeof(unsigned long long), stream),
        "zeroing a scatter-add's counts");
  indexRows<<<blocksFor((positions + 255) / 256), 256, 0, stream>>>(index, steps, width, ids,
                                                                    rowsAreIds);
  countIds<true><<<blocksFor((steps + 255) / 256), 256, 0, stream>>>(ids, steps, rows, counts,
                                                                     fault);
  scanCounts<<<1, 1024, 0, stream>>>(counts, rows, start, next);
  placePositions<<<1, 1024, 0, stream>>>(ids, steps, rows, next, order);
  int64_t tiles = (width + 255) / 256;
  scatterAddBuckets<T><<<blocksFor(rows * tiles), 256, 0, stream>>>(
      src, start, order, out, rows, width, inShape.size[1], srcShape.size[1], tiles,
      rowsAreIds);
  scatterAddLines<T><<<blocksFor((lines + 255) / 256), 256, 0, stream>>>(
      index, src, out, lines, plan, fault, rowsAreIds);
  check(cudaGetLastError(), "launching a scatter-add");
}

/// The k largest of in[o, :, q] in descending order, ties by lower index,
/// NaN first: values[o, r, q] and indices[o, r, q] (Routing.h).
template <typename T>
void topK(cudaStream_t stream, const T *in, T *values, int64_t *indices, int64_t outer,
          int64_t n, int64_t inner, int64_t k) {
  if (k < 0 || k > n)
    throw std::invalid_argument("topK: k = " + std::to_string(k) + " is outside [0, " +
                                std::to_string(n) + "]");
  int64_t lines = outer * inner;
  if (lines == 0 || k == 0)
    return;
  routing_detail::topKWarps<T><<<blocksFor((lines + 7) / 8), 256, 0, stream>>>(
      in, values, indices, outer, n, inner, k);
  check(cudaGetLastError(), "launching a top-k");
}

/// out[o, j, q] = sum_{i <= j} in[o, i, q], in double (float data) or int64.
template <typename T>
void cumsum(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t n,
            int64_t inner) {
  if (outer * n * inner == 0)
    return;
  if (inner == 1)
    routing_detail::cumsumRows<T><<<blocksFor((outer + 7) / 8), 256, 0, stream>>>(in, out,
                                                                                 outer, n);
  else
    routing_detail::cumsumColumns<T><<<blocksFor((outer * inner + 255) / 256), 256, 0,
                                       stream>>>(in, out, outer, n, inner);
  check(cudaGetLastError(), "launching a cumsum");
}

/// out[i, c] = (indices[i] == c); indices outside [0, classes) give zeros.
template <typename T>
void oneHot(cudaStream_t stream, const int64_t *indices, T *out, int64_t count,
            int64_t classes) {
  if (count * classes == 0)
    return;
  routing_detail::oneHot<T><<<blocksFor((count * classes + 255) / 256), 256, 0, stream>>>(
      indices, out, count, classes);
  check(cudaGetLastError(), "launching a one-hot");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_ROUTING_CUH
