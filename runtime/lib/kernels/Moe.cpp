//===- Moe.cpp - expert slots, dispatch, combine, route dot on the CPU ----===//
//
// moeSlots is serial but for the priority selection (parallel over
// experts): it touches S * k integers, little beside the S * k rows of M
// elements that dispatch and combine move. The row kernels run in parallel
// over rows; each row is one thread's, so no result depends on the thread
// count.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Moe.h"
#include "dsc/kernels/IndexCheck.h"

#include "ElementTraits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

using namespace dsc::kernels;
using namespace dsc::kernels::cpu;
using namespace dsc::kernels::cpu::detail;

namespace {
constexpr int64_t kParallelElements = 1 << 15;

/// NaN ranks above every number, as in top-k.
bool greater(float a, float b) { return a > b || (std::isnan(a) && !std::isnan(b)); }

/// Keeps, in each expert's bucket of routes (positions ascending), the C of
/// highest priority and numbers them in position order; the others get -1.
void keepByPriority(const float *priority, const std::vector<int64_t> &start,
                    const std::vector<int64_t> &order, int64_t *slots, MoeShape shape) {
  constexpr int64_t kKept = -2;
  const int64_t capacity = shape.capacity;
#pragma omp parallel if (shape.routeCount() >= kParallelElements)
  {
    std::vector<int64_t> best;
#pragma omp for schedule(dynamic, 1)
    for (int64_t e = 0; e < shape.experts; ++e) {
      const int64_t *bucket = order.data() + start[e];
      const int64_t size = start[e + 1] - start[e];
      for (int64_t i = 0; i < size; ++i)
        slots[bucket[i]] = kKept; // unless not selected below
      if (size > capacity) {
        best.assign(bucket, bucket + size);
        std::nth_element(best.begin(), best.begin() + capacity, best.end(),
                         [&](int64_t a, int64_t b) {
                           float pa = priority[a], pb = priority[b];
                           return greater(pa, pb) || (!greater(pb, pa) && a < b);
                         });
        for (auto it = best.begin() + capacity; it != best.end(); ++it)
          slots[*it] = -1;
      }
      int64_t location = 0;
      for (int64_t i = 0; i < size; ++i)
        if (slots[bucket[i]] == kKept)
          slots[bucket[i]] = e * capacity + location++;
    }
  }
}
} // namespace

void dsc::kernels::cpu::moeSlots(Queue, const int64_t *experts, const float *priority,
                                 int64_t *slots, int64_t *counts, MoeShape shape) {
  const int64_t routes = shape.routeCount(), E = shape.experts;
  IndexCheck check;
  std::fill(counts, counts + E, int64_t(0));
  for (int64_t p = 0; p < routes; ++p) {
    slots[p] = -1;
    if (!check.bad(experts[p], E, p))
      ++counts[experts[p]];
  }
  if (priority) {
    // The routes bucketed by expert, positions ascending (a counting sort).
    std::vector<int64_t> start(E + 1, 0);
    for (int64_t e = 0; e < E; ++e)
      start[e + 1] = start[e] + counts[e];
    std::vector<int64_t> order(start[E]), next(start.begin(), start.end() - 1);
    for (int64_t p = 0; p < routes; ++p)
      if (experts[p] >= 0 && experts[p] < E)
        order[next[experts[p]]++] = p;
    keepByPriority(priority, start, order, slots, shape);
  } else {
    // Choice-major: every first choice queues before any second choice.
    std::vector<int64_t> next(E, 0);
    for (int64_t j = 0; j < shape.choices; ++j)
      for (int64_t s = 0; s < shape.tokens; ++s) {
        int64_t p = s * shape.choices + j, e = experts[p];
        if (e < 0 || e >= E)
          continue;
        int64_t location = next[e]++;
        if (location < shape.capacity)
          slots[p] = e * shape.capacity + location;
      }
  }
  check.raise("dsc.moe_slots", E, [&](int64_t p) { return experts[p]; });
}

template <typename T>
void dsc::kernels::cpu::moeDispatch(Queue, const T *x, const int64_t *slots, const T *weights,
                                    T *out, MoeShape shape) {
  const int64_t rows = shape.slotCount(), M = shape.width;
  // The route filling each slot (the highest position naming it), or -1.
  std::vector<int64_t> source(rows, -1);
  IndexCheck check;
  for (int64_t p = 0; p < shape.routeCount(); ++p)
    if (slots[p] >= 0 && !check.bad(slots[p], rows, p))
      source[slots[p]] = p;
#pragma omp parallel for schedule(static) if (rows * M >= kParallelElements)
  for (int64_t row = 0; row < rows; ++row) {
    T *to = out + row * M;
    int64_t p = source[row];
    if (p < 0) {
      std::memset(static_cast<void *>(to), 0, M * sizeof(T));
      continue;
    }
    const T *from = x + p / shape.choices * M;
    if (!weights) {
      std::memcpy(static_cast<void *>(to), from, M * sizeof(T));
      continue;
    }
    const float w = Wide<T>(weights[p]);
    for (int64_t m = 0; m < M; ++m)
      to[m] = store<T>(w * float(Wide<T>(from[m])));
  }
  check.raise("dsc.moe_dispatch", rows, [&](int64_t p) { return slots[p]; });
}

template <typename T>
void dsc::kernels::cpu::moeCombine(Queue, const T *in, const int64_t *slots, const T *weights,
                                   T *out, MoeShape shape) {
  const int64_t rows = shape.slotCount(), M = shape.width, k = shape.choices;
  IndexCheck check;
#pragma omp parallel if (shape.routeCount() * M >= kParallelElements)
  {
    std::vector<float> acc(M);
#pragma omp for schedule(static)
    for (int64_t s = 0; s < shape.tokens; ++s) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        int64_t p = s * k + j, slot = slots[p];
        if (slot < 0 || check.bad(slot, rows, p))
          continue;
        const T *from = in + slot * M;
        if (weights) {
          const float w = Wide<T>(weights[p]);
          for (int64_t m = 0; m < M; ++m)
            acc[m] += w * float(Wide<T>(from[m]));
        } else {
          for (int64_t m = 0; m < M; ++m)
            acc[m] += float(Wide<T>(from[m]));
        }
      }
      T *to = out + s * M;
      for (int64_t m = 0; m < M; ++m)
        to[m] = store<T>(acc[m]);
    }
  }
  check.raise("dsc.moe_combine", rows, [&](int64_t p) { return slots[p]; });
}

template <typename T>
void dsc::kernels::cpu::moeRouteDot(Queue, const T *rows, const T *slotted,
                                    const int64_t *slots, T *out, MoeShape shape) {
  const int64_t slotCount = shape.slotCount(), M = shape.width, k = shape.choices;
  constexpr int64_t V = kMoeChunk<T>;
  IndexCheck check;
#pragma omp parallel for schedule(static) if (shape.routeCount() * M >= kParallelElements)
  for (int64_t s = 0; s < shape.tokens; ++s) {
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = s * k + j, slot = slots[p];
      if (slot < 0) {
        out[p] = store<T>(0.0f);
        continue;
      }
      if (check.bad(slot, slotCount, p))
        continue;
      const T *a = rows + s * M, *b = slotted + slot * M;
      float partial[kMoeLanes] = {};
      for (int64_t m0 = 0, c = 0; m0 < M; m0 += V, ++c) {
        float &lane = partial[c % kMoeLanes];
        for (int64_t m = m0; m < std::min(M, m0 + V); ++m)
          lane += float(Wide<T>(a[m])) * float(Wide<T>(b[m]));
      }
      for (int h = kMoeLanes / 2; h > 0; h /= 2)
        for (int l = 0; l < h; ++l)
          partial[l] += partial[l + h];
      out[p] = store<T>(partial[0]);
    }
  }
  check.raise("dsc.moe_route_dot", slotCount, [&](int64_t p) { return slots[p]; });
}

#define DSC_MOE_INSTANTIATE(T)                                                 \
  template void dsc::kernels::cpu::moeDispatch<T>(Queue, const T *, const int64_t *, \
                                                  const T *, T *, MoeShape);   \
  template void dsc::kernels::cpu::moeCombine<T>(Queue, const T *, const int64_t *, \
                                                 const T *, T *, MoeShape);    \
  template void dsc::kernels::cpu::moeRouteDot<T>(Queue, const T *, const T *, \
                                                  const int64_t *, T *, MoeShape);
DSC_MOE_INSTANTIATE(float)
DSC_MOE_INSTANTIATE(dsc::rt::BFloat16)
DSC_MOE_INSTANTIATE(dsc::rt::Half)
