//===- Embedding.cpp - embedding lookup and gradient on the CPU -----------===//

#include "dsc/kernels/Embedding.h"
#include "dsc/kernels/IndexCheck.h"

#include "ElementTraits.h"

#include <algorithm>
#include <cstring>
#include <vector>

using namespace dsc::kernels::cpu;
using namespace dsc::kernels::cpu::detail;

namespace {
constexpr const char *kWhat = "dsc.embedding";
constexpr int64_t kParallelElements = 1 << 15;

} // namespace

template <typename T>
void dsc::kernels::cpu::embeddingForward(Queue, const T *table, const int64_t *ids, T *out,
                                         int64_t count, int64_t rows, int64_t dim) {
  IndexCheck check;
#pragma omp parallel for schedule(static) if (count * dim >= kParallelElements)
  for (int64_t i = 0; i < count; ++i) {
    int64_t id = ids[i];
    if (check.bad(id, rows, i))
      continue;
    std::memcpy(out + i * dim, table + id * dim, dim * sizeof(T));
  }
  check.raise(kWhat, rows, [&](int64_t i) { return ids[i]; });
}

template <typename T>
void dsc::kernels::cpu::embeddingBackward(Queue, const T *dy, const int64_t *ids, T *dtable,
                                          int64_t count, int64_t rows, int64_t dim) {
  // Counting sort of the positions by id: bucket v is order[start[v],
  // start[v + 1]), positions ascending. Serial: O(count + rows), small
  // beside the rows * dim table it writes.
  IndexCheck check;
  std::vector<int64_t> start(rows + 1, 0);
  for (int64_t i = 0; i < count; ++i)
    if (!check.bad(ids[i], rows, i))
      ++start[ids[i] + 1];
  for (int64_t v = 0; v < rows; ++v)
    start[v + 1] += start[v];
  std::vector<int64_t> order(start[rows]);
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < count; ++i)
      if (ids[i] >= 0 && ids[i] < rows)
        order[next[ids[i]]++] = i;
  }
#pragma omp parallel if (rows * dim >= kParallelElements)
  {
    std::vector<double> acc(dim);
#pragma omp for schedule(static)
    for (int64_t v = 0; v < rows; ++v) {
      T *row = dtable + v * dim;
      if (start[v] == start[v + 1]) {
        std::fill(row, row + dim, store<T>(0.0));
        continue;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t p = start[v]; p < start[v + 1]; ++p) {
        const T *g = dy + order[p] * dim;
#pragma omp simd
        for (int64_t d = 0; d < dim; ++d)
          acc[d] += double(g[d]);
      }
      for (int64_t d = 0; d < dim; ++d)
        row[d] = store<T>(acc[d]);
    }
  }
  check.raise(kWhat, rows, [&](int64_t i) { return ids[i]; });
}

#define DSC_EMBEDDING_INSTANTIATE(T)                                           \
  template void dsc::kernels::cpu::embeddingForward<T>(Queue, const T *, const int64_t *, \
                                                       T *, int64_t, int64_t, int64_t); \
  template void dsc::kernels::cpu::embeddingBackward<T>(Queue, const T *, const int64_t *, \
                                                        T *, int64_t, int64_t, int64_t);
DSC_EMBEDDING_INSTANTIATE(float)
DSC_EMBEDDING_INSTANTIATE(double)
DSC_EMBEDDING_INSTANTIATE(dsc::rt::BFloat16)
DSC_EMBEDDING_INSTANTIATE(dsc::rt::Half)
