//===- Embedding.cuh - embedding lookup and deterministic gradient on CUDA -*- CUDA -*-===//
//
// The CUDA side of Embedding.h: same functions, plus the IndexFault that
// records a bad id (the element is skipped; see IndexFault.cuh).
//
// The backward adds without atomics, so the table's gradient is the same
// bitwise on every run: a stable counting sort buckets the positions by id
// (counts, a scan, then one block placing the positions chunk by chunk in
// increasing order, each id's next slot advanced after every chunk); then
// a block per (table row, 256 columns) sums its bucket's gradient rows in
// position order in double and writes the row once, zeros for an empty
// bucket. (llm.c's encoder backward buckets the ids the same way, on the
// host.) No CUB: the sort is small beside the table it writes, and
// generated code that includes this header compiles faster without it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_EMBEDDING_CUH
#define DSC_KERNELS_CUDA_EMBEDDING_CUH

#include "dsc/kernels/cuda/Elements.cuh"
#include "dsc/kernels/cuda/IndexFault.cuh"

#include <cstdint>

namespace dsc::kernels::cuda {
namespace embedding_detail {
// Kernels that are not templates are static: every translation unit of a
// split artifact includes this header (docs/lowering.md).

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

/// counts[v] = the number of valid ids equal to v (atomic increments of
/// integers: the same counts in any order). A bad id is recorded as the
/// embedding's, or as the scatter-add's whose embedding-gradient form
/// (Routing.cuh) buckets its indices the same way.
template <bool ForScatter = false>
__global__ void countIds(const int64_t *ids, int64_t count, int64_t rows,
                         unsigned long long *counts, IndexFault *fault) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t id = ids[i];
    if (id < 0 || id >= rows) {
      recordIndexFault(fault, ForScatter ? "dsc.scatter_add" : "dsc.embedding", id, rows);
      continue;
    }
    atomicAdd(&counts[id], 1ull);
  }
}

/// One block: start[v] = sum of counts[u < v] for v <= rows, and next[v] =
/// start[v] (each bucket's next free slot).
static __global__ void __launch_bounds__(1024)
scanCounts(const unsigned long long *counts, int64_t rows, int64_t *start, int64_t *next) {
  __shared__ int64_t sums[1024];
  const int t = threadIdx.x;
  const int64_t per = (rows + 1023) / 1024, lo = t * per;
  const int64_t hi = lo + per < rows ? lo + per : rows;
  int64_t own = 0;
  for (int64_t v = lo; v < hi; ++v)
    own += int64_t(counts[v]);
  sums[t] = own;
  __syncthreads();
  if (t == 0) { // 1024 partial sums, in order
    int64_t running = 0;
    for (int k = 0; k < 1024; ++k) {
      int64_t c = sums[k];
      sums[k] = running;
      running += c;
    }
    start[rows] = running;
  }
  __syncthreads();
  int64_t running = sums[t];
  for (int64_t v = lo; v < hi; ++v) {
    start[v] = next[v] = running;
    running += int64_t(counts[v]);
  }
}

/// One block: order[next[id]++] = i for the valid ids in increasing i,
/// 1024 positions at a time; within a chunk an id's rank is the number of
/// equal ids before it, and the last of them advances next[id].
static __global__ void __launch_bounds__(1024)
placePositions(const int64_t *ids, int64_t count, int64_t rows, int64_t *next,
               int64_t *order) {
  __shared__ int64_t chunk[1024];
  const int t = threadIdx.x;
  for (int64_t base = 0; base < count; base += 1024) {
    int64_t i = base + t;
    int64_t id = i < count ? ids[i] : -1;
    bool valid = id >= 0 && id < rows;
    chunk[t] = valid ? id : -1;
    __syncthreads();
    int64_t rank = 0;
    bool last = true;
    int len = count - base < 1024 ? int(count - base) : 1024;
    for (int j = 0; j < len; ++j)
      if (chunk[j] == id) {
        rank += j < t;
        last = last && j <= t;
      }
    if (valid)
      order[next[id] + rank] = i;
    __syncthreads(); // every slot read before any is advanced
    if (valid && last)
      next[id] += rank + 1;
    __syncthreads();
  }
}

/// Block per (table row v, tile of 256 columns): the bucket's gradient
/// rows summed in position order; zeros when no id names v.
template <typename T>
__global__ void __launch_bounds__(kThreads)
sumBuckets(const T *dy, const int64_t *start, const int64_t *order, T *dtable, int64_t rows,
           int64_t dim, int64_t tiles) {
  for (int64_t item = blockIdx.x; item < rows * tiles; item += gridDim.x) {
    int64_t v = item / tiles, d = item % tiles * kThreads + threadIdx.x;
    if (d >= dim)
      continue;
    double acc = 0;
    for (int64_t p = start[v]; p < start[v + 1]; ++p)
      acc += double(Element<T>::widen(dy[order[p] * dim + d]));
    dtable[v * dim + d] = Element<T>::narrow(acc);
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
  if (rows == 0 || dim == 0)
    return;
  // Scratch: counts[rows], start[rows + 1], next[rows], order[count].
  size_t rowBytes = (size_t(rows + 1) * sizeof(int64_t) + 255) / 256 * 256;
  StreamScratch scratch(3 * rowBytes + size_t(count) * sizeof(int64_t), stream);
  auto *counts = scratch.as<unsigned long long>(0);
  int64_t *start = scratch.as<int64_t>(rowBytes), *next = scratch.as<int64_t>(2 * rowBytes);
  int64_t *order = scratch.as<int64_t>(3 * rowBytes);
  check(cudaMemsetAsync(counts, 0, size_t(rows) * sizeof(unsigned long long), stream),
        "zeroing the embedding gradient's counts");
  if (count > 0)
    countIds<<<blocksFor((count + 255) / 256), 256, 0, stream>>>(ids, count, rows, counts,
                                                                  fault);
  scanCounts<<<1, 1024, 0, stream>>>(counts, rows, start, next);
  if (count > 0)
    placePositions<<<1, 1024, 0, stream>>>(ids, count, rows, next, order);
  int64_t tiles = (dim + kThreads - 1) / kThreads;
  sumBuckets<T><<<blocksFor(rows * tiles), kThreads, 0, stream>>>(dy, start, order, dtable,
                                                                  rows, dim, tiles);
  check(cudaGetLastError(), "launching the embedding gradient");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_EMBEDDING_CUH
