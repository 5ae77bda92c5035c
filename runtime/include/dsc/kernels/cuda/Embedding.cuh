//===- Embedding.cuh - embedding lookup and deterministic gradient on CUDA -*- CUDA -*-===//
//
// The CUDA side of Embedding.h: same functions, plus the IndexFault that
// records a bad id (the element is skipped; see IndexFault.cuh).
//
// The backward adds without atomics, so the table's gradient is the same
// bitwise on every run: the (id, position) pairs are sorted by id with
// CUB's radix sort, which is stable, so each id's positions stay in
// increasing order; then one block per (id's run, 256 columns) sums its
// gradient rows in that order in double and writes the row once. Rows that
// no id names are zeroed first. (llm.c's encoder backward buckets the ids
// the same way, on the host.)
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_EMBEDDING_CUH
#define DSC_KERNELS_CUDA_EMBEDDING_CUH

#include "dsc/kernels/cuda/Elements.cuh"
#include "dsc/kernels/cuda/IndexFault.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <cstdint>

namespace dsc::kernels::cuda {
namespace embedding_detail {

constexpr int kThreads = 256;

/// Block per id (grid stride); 16-byte copies where both rows are aligned.
template <typename T>
__global__ void __launch_bounds__(kThreads)
forward(const T *table, const int64_t *ids, T *out, int64_t count, int64_t rows, int64_t dim,
        IndexFault *fault) {
  for (int64_t i = blockIdx.x; i < count; i += gridDim.x) {
    int64_t id = ids[i];
    if (id < 0 || id >= rows) {
      if (threadIdx.x == 0)
        recordIndexFault(fault, "dsc.embedding", id, rows);
      continue;
    }
    const T *from = table + id * dim;
    T *to = out + i * dim;
    constexpr int kVector = 16 / sizeof(T);
    int64_t head = 0;
    if ((reinterpret_cast<uintptr_t>(from) | reinterpret_cast<uintptr_t>(to)) % 16 == 0) {
      for (int64_t v = threadIdx.x; v < dim / kVector; v += kThreads)
        reinterpret_cast<uint4 *>(to)[v] = reinterpret_cast<const uint4 *>(from)[v];
      head = dim / kVector * kVector;
    }
    for (int64_t d = head + threadIdx.x; d < dim; d += kThreads)
      to[d] = from[d];
  }
}

__global__ void iota(int64_t *positions, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    positions[i] = i;
}

/// Block per (sorted position s, tile of 256 columns): the blocks where s
/// starts a run of equal ids sum the run's rows in order.
template <typename T>
__global__ void __launch_bounds__(kThreads)
sumRuns(const T *dy, const int64_t *sortedIds, const int64_t *positions, T *dtable,
        int64_t count, int64_t rows, int64_t dim, int64_t tiles, IndexFault *fault) {
  for (int64_t item = blockIdx.x; item < count * tiles; item += gridDim.x) {
    int64_t s = item / tiles, t = item % tiles;
    int64_t id = sortedIds[s];
    if (s > 0 && sortedIds[s - 1] == id)
      continue;
    if (id < 0 || id >= rows) {
      if (threadIdx.x == 0 && t == 0)
        recordIndexFault(fault, "dsc.embedding", id, rows);
      continue;
    }
    int64_t d = t * kThreads + threadIdx.x;
    if (d >= dim)
      continue;
    double acc = 0;
    for (int64_t r = s; r < count && sortedIds[r] == id; ++r)
      acc += double(Element<T>::widen(dy[positions[r] * dim + d]));
    dtable[id * dim + d] = Element<T>::narrow(acc);
  }
}

} // namespace embedding_detail

/// out[i, d] = table[ids[i], d] for i < count, d < dim.
template <typename T>
void embeddingForward(cudaStream_t stream, const T *table, const int64_t *ids, T *out,
                      int64_t count, int64_t rows, int64_t dim, IndexFault *fault) {
  if (count == 0 || dim == 0)
    return;
  embedding_detail::forward<T><<<blocksFor(count), embedding_detail::kThreads, 0, stream>>>(
      table, ids, out, count, rows, dim, fault);
  check(cudaGetLastError(), "launching the embedding lookup");
}

/// dtable[v, d] = sum over i with ids[i] == v of dy[i, d], in increasing i,
/// accumulated in double and rounded once; rows no id names are zero.
template <typename T>
void embeddingBackward(cudaStream_t stream, const T *dy, const int64_t *ids, T *dtable,
                       int64_t count, int64_t rows, int64_t dim, IndexFault *fault) {
  using namespace embedding_detail;
  check(cudaMemsetAsync(dtable, 0, size_t(rows) * dim * sizeof(T), stream),
        "zeroing the embedding gradient");
  if (count == 0 || dim == 0)
    return;
  // Scratch: sorted ids, positions in and out, then CUB's temporary space.
  size_t cubBytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, cubBytes, ids, (int64_t *)nullptr,
                                        (const int64_t *)nullptr, (int64_t *)nullptr, count,
                                        0, 64, stream),
        "sizing the embedding gradient's sort");
  size_t listBytes = (size_t(count) * sizeof(int64_t) + 255) / 256 * 256;
  StreamScratch scratch(3 * listBytes + cubBytes, stream);
  int64_t *sortedIds = scratch.as<int64_t>(0);
  int64_t *positions = scratch.as<int64_t>(listBytes);
  int64_t *sortedPositions = scratch.as<int64_t>(2 * listBytes);
  iota<<<blocksFor((count + 255) / 256), 256, 0, stream>>>(positions, count);
  check(cub::DeviceRadixSort::SortPairs(scratch.as<void>(3 * listBytes), cubBytes, ids,
                                        sortedIds, positions, sortedPositions, count, 0, 64,
                                        stream),
        "sorting the ids of the embedding gradient");
  int64_t tiles = (dim + kThreads - 1) / kThreads;
  sumRuns<T><<<blocksFor(count * tiles), kThreads, 0, stream>>>(
      dy, sortedIds, sortedPositions, dtable, count, rows, dim, tiles, fault);
  check(cudaGetLastError(), "launching the embedding gradient");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_EMBEDDING_CUH
