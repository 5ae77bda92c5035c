//===- Moe.cuh - expert slots, dispatch, combine, route dot on CUDA -*- CUDA -*-===//
//
// The CUDA side of Moe.h: the same functions, with the same results bit for
// bit (products and sums rounded one by one, __fmul_rn/__fadd_rn, in the
// CPU kernels' orders), plus the IndexFault that records a bad expert or
// slot (the route is skipped; IndexFault.cuh).
//
// - moeSlots: deterministic without a serial pass over the routes. The
//   routes, in the order that numbers them ((j, s) without priority,
//   positions with it), are cut into tiles of 1024; a warp walks its tile
//   32 routes at a time, ranking each among the equal experts of its step
//   by __match_any_sync and carrying the count of each expert in the
//   tile's row of a [tiles, E] table. Walked once, the table holds the
//   tiles' counts; a block per expert scans its column into each tile's
//   first number; walked again, every route gets its number. Without
//   priority the number is the location. With priority it places the
//   route in its expert's bucket (positions ascending); a block per expert
//   then finds the C-th best (priority, position) key by an 8-pass radix
//   select and numbers the keys at or above it in bucket order.
// - moeDispatch: the route filling each slot (the highest position naming
//   it, by atomicMax), then a block per slot row copying, scaling or
//   zeroing it.
// - moeCombine: a block per token row, each thread a 16-byte chunk of
//   columns summing the token's routes in order.
// - moeRouteDot: a warp per route; lane l sums the 16-byte chunks
//   c = l, l + 32, ... and the lanes are added by a shuffle tree, the
//   order Moe.h documents.
// Rows are read and written 16 bytes at a time where every row is aligned
// (aligned bases and M a multiple of the chunk), element by element
// otherwise: the same arithmetic either way.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_MOE_CUH
#define DSC_KERNELS_CUDA_MOE_CUH

#include "dsc/kernels/MoeShape.h"
#include "dsc/kernels/cuda/Elements.cuh"
#include "dsc/kernels/cuda/Embedding.cuh"
#include "dsc/kernels/cuda/IndexFault.cuh"

#include <cstdint>
#include <limits>
#include <stdexcept>

namespace dsc::kernels::cuda {
namespace moe_detail {
// Kernels that are not templates are static: every translation unit of a
// split artifact includes this header (docs/lowering.md).

constexpr int kThreads = 256;
constexpr int kTileRoutes = 1024; // routes per warp in moeSlots's walks
constexpr unsigned kFullMask = 0xffffffffu;

/// A 16-byte chunk of a row of T.
template <typename T> struct alignas(16) Chunk {
  static constexpr int kSize = int(kMoeChunk<T>);
  T v[kSize];
};

template <typename T> __device__ __forceinline__ Chunk<T> loadChunk(const T *p) {
  Chunk<T> c;
  *reinterpret_cast<uint4 *>(c.v) = *reinterpret_cast<const uint4 *>(p);
  return c;
}

template <typename T> __device__ __forceinline__ void storeChunk(T *p, const Chunk<T> &c) {
  *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(c.v);
}

/// Whether every row of width M at these bases is 16-byte aligned.
template <typename T>
__host__ __device__ inline bool rowsAligned(const void *a, const void *b, int64_t width) {
  return (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) % 16 == 0 &&
         width % kMoeChunk<T> == 0;
}

template <typename T> __device__ __forceinline__ float widen(T x) {
  return float(Element<T>::widen(x));
}

/// Exclusive prefix sums of `value` in thread order, and the block's
/// total. blockDim.x is a multiple of 32; `scratch` holds 33 values.
/// Synchronizes the block before it returns.
__device__ inline int64_t blockExclusiveScan(int64_t value, int64_t *scratch, int64_t &total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  int64_t inclusive = value;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    int64_t up = __shfl_up_sync(kFullMask, inclusive, d);
    if (lane >= d)
      inclusive += up;
  }
  if (lane == 31)
    scratch[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    int64_t own = lane < warps ? scratch[lane] : 0, sum = own;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      int64_t up = __shfl_up_sync(kFullMask, sum, d);
      if (lane >= d)
        sum += up;
    }
    if (lane < warps)
      scratch[lane] = sum - own;
    if (lane == 31)
      scratch[32] = sum;
  }
  __syncthreads();
  int64_t result = scratch[warp] + inclusive - value;
  total = scratch[32];
  __syncthreads(); // scratch free for the next call
  return result;
}

/// What a walk over the tiles of routes does with each route's number n
/// (its rank among the routes of its expert in walk order).
enum class Walk {
  Count, // only the tile's counts (the table rows start at zero)
  Slot,  // slots[p] = e * C + n if n < C, else -1 (rows hold tile starts)
  Place  // order[start[e] + n] = p (rows hold tile starts)
};

/// A warp per tile of kTileRoutes routes in walk order (choice-major (j, s)
/// or by position), 32 at a time. `table` is [tiles, E]: the tile's row
/// counts on (Count) or its running numbers (Slot, Place).
template <Walk W>
__global__ void __launch_bounds__(kThreads)
walkTiles(const int64_t *experts, MoeShape shape, bool choiceMajor, int64_t tiles, int *table,
          int64_t *slots, const int64_t *start, int64_t *order, IndexFault *fault) {
  const int lane = threadIdx.x & 31;
  const int64_t routes = shape.routeCount(), E = shape.experts;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t tile = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5; tile < tiles;
       tile += warps) {
    int *row = table + tile * E;
    for (int step = 0; step < kTileRoutes / 32; ++step) {
      int64_t q = tile * kTileRoutes + step * 32 + lane, p = -1, e = -1;
      if (q < routes) {
        p = choiceMajor ? q % shape.tokens * shape.choices + q / shape.tokens : q;
        e = experts[p];
        if (e < 0 || e >= E) {
          if (W == Walk::Count)
            recordIndexFault(fault, "dsc.moe_slots", e, E);
          e = -1;
        }
      }
      const unsigned peers = __match_any_sync(kFullMask, (unsigned long long)e);
      const int leader = __ffs(peers) - 1;
      int first = lane == leader && e >= 0 ? row[e] : 0;
      first = __shfl_sync(kFullMask, first, leader);
      if (lane == leader && e >= 0)
        row[e] = first + __popc(peers);
      __syncwarp(); // the row's update seen by the next step's leader
      int64_t n = first + __popc(peers & ((1u << lane) - 1));
      if (W == Walk::Slot && p >= 0)
        slots[p] = e >= 0 && n < shape.capacity ? e * shape.capacity + n : -1;
      if (W == Walk::Place && p >= 0) {
        if (e >= 0)
          order[start[e] + n] = p;
        else
          slots[p] = -1;
      }
    }
  }
}

/// A block per expert: its column of `table` (tile counts) becomes each
/// tile's first number, and counts[e] the total.
static __global__ void __launch_bounds__(1024)
scanTileColumns(int *table, int64_t tiles, int64_t experts, int64_t *counts) {
  __shared__ int64_t scratch[33];
  for (int64_t e = blockIdx.x; e < experts; e += gridDim.x) {
    int64_t running = 0;
    for (int64_t base = 0; base < tiles; base += blockDim.x) {
      int64_t tile = base + threadIdx.x, total;
      int64_t c = tile < tiles ? table[tile * experts + e] : 0;
      int64_t before = blockExclusiveScan(c, scratch, total);
      if (tile < tiles)
        table[tile * experts + e] = int(running + before);
      running += total;
    }
    if (threadIdx.x == 0)
      counts[e] = running;
  }
}

/// Higher priority (NaN above every number, -0 as +0), then lower
/// position, as a larger unsigned key; positions are below 2^31.
__device__ __forceinline__ unsigned long long priorityKey(const float *priority, int64_t p) {
  float f = priority[p];
  unsigned u = __float_as_uint(f);
  unsigned ordered = f != f        ? 0xffffffffu
                     : f == 0.0f   ? 0x80000000u
                     : (u >> 31)   ? ~u
                                   : u | 0x80000000u;
  return (static_cast<unsigned long long>(ordered) << 32) | (0xffffffffu - unsigned(p));
}

/// A block per expert: keeps the C best keys of its bucket (order[start[e],
/// start[e + 1]), positions ascending) and numbers them in bucket order.
static __global__ void __launch_bounds__(kThreads)
keepByPriority(const float *priority, const int64_t *start, const int64_t *order,
               int64_t *slots, MoeShape shape) {
  __shared__ unsigned histogram[256];
  __shared__ unsigned long long chosen[2]; // key prefix, rank still wanted
  __shared__ int64_t scratch[33];
  const int t = threadIdx.x;
  for (int64_t e = blockIdx.x; e < shape.experts; e += gridDim.x) {
    const int64_t lo = start[e], size = start[e + 1] - lo;
    unsigned long long threshold = 0; // keeps every key
    if (size > shape.capacity) {
      // The C-th largest key, 8 bits at a time from the top: keys are
      // unique, so exactly C keys are at or above it.
      unsigned long long prefix = 0, mask = 0, want = shape.capacity;
      for (int shift = 56; shift >= 0; shift -= 8) {
        for (int b = t; b < 256; b += blockDim.x)
          histogram[b] = 0;
        __syncthreads();
        for (int64_t i = t; i < size; i += blockDim.x) {
          unsigned long long key = priorityKey(priority, order[lo + i]);
          if ((key & mask) == prefix)
            atomicAdd(&histogram[(key >> shift) & 255], 1u);
        }
        __syncthreads();
        if (t == 0) {
          unsigned long long above = 0;
          int b = 255;
          for (; b > 0 && above + histogram[b] < want; --b)
            above += histogram[b];
          chosen[0] = prefix | (static_cast<unsigned long long>(b) << shift);
          chosen[1] = want - above;
        }
        __syncthreads();
        prefix = chosen[0];
        want = chosen[1];
        mask |= 0xffull << shift;
      }
      threshold = prefix;
    }
    int64_t running = 0;
    for (int64_t base = 0; base < size; base += blockDim.x) {
      int64_t i = base + t, p = i < size ? order[lo + i] : -1, total;
      bool kept = p >= 0 && priorityKey(priority, p) >= threshold;
      int64_t before = blockExclusiveScan(kept ? 1 : 0, scratch, total);
      if (p >= 0)
        slots[p] = kept ? e * shape.capacity + running + before : -1;
      running += total;
    }
  }
}

/// source[slot] = the highest position of a route naming the slot (source
/// starts at -1 everywhere).
static __global__ void findSources(const int64_t *slots, int64_t routes, int64_t slotCount,
                            long long *source, IndexFault *fault) {
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < routes;
       p += int64_t(gridDim.x) * blockDim.x) {
    int64_t slot = slots[p];
    if (slot < 0)
      continue;
    if (slot >= slotCount) {
      recordIndexFault(fault, "dsc.moe_dispatch", slot, slotCount);
      continue;
    }
    atomicMax(&source[slot], static_cast<long long>(p));
  }
}

/// to = from * w (a copy when not scaled), or zeros when from is null.
template <typename T, bool Aligned>
__device__ __forceinline__ void fillRow(T *to, const T *from, const T *w, int64_t width) {
  if constexpr (Aligned) {
    const int64_t chunks = width / Chunk<T>::kSize;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      Chunk<T> v;
      if (!from) {
        *reinterpret_cast<uint4 *>(v.v) = make_uint4(0, 0, 0, 0);
      } else {
        v = loadChunk(from + c * Chunk<T>::kSize);
        if (w) {
          const float scale = widen(*w);
#pragma unroll
          for (int i = 0; i < Chunk<T>::kSize; ++i)
            v.v[i] = Element<T>::narrow(__fmul_rn(scale, widen(v.v[i])));
        }
      }
      storeChunk(to + c * Chunk<T>::kSize, v);
    }
  } else {
    for (int64_t m = threadIdx.x; m < width; m += blockDim.x)
      to[m] = !from ? Element<T>::narrow(0.0f)
              : w   ? Element<T>::narrow(__fmul_rn(widen(*w), widen(from[m])))
                    : from[m];
  }
}

template <typename T, bool Aligned>
__global__ void __launch_bounds__(kThreads)
dispatchRows(const T *x, const long long *source, const T *weights, T *out, MoeShape shape) {
  for (int64_t row = blockIdx.x; row < shape.slotCount(); row += gridDim.x) {
    const long long p = source[row];
    const T *from = p < 0 ? nullptr : x + p / shape.choices * shape.width;
    const T *w = p < 0 || !weights ? nullptr : weights + p;
    fillRow<T, Aligned>(out + row * shape.width, from, w, shape.width);
  }
}

template <typename T, bool Aligned>
__global__ void __launch_bounds__(kThreads)
combineRows(const T *in, const int64_t *slots, const T *weights, T *out, MoeShape shape,
            IndexFault *fault) {
  const int64_t M = shape.width, k = shape.choices, slotCount = shape.slotCount();
  for (int64_t s = blockIdx.x; s < shape.tokens; s += gridDim.x) {
    if (threadIdx.x == 0)
      for (int64_t j = 0; j < k; ++j)
        if (slots[s * k + j] >= slotCount)
          recordIndexFault(fault, "dsc.moe_combine", slots[s * k + j], slotCount);
    constexpr int V = Aligned ? Chunk<T>::kSize : 1;
    for (int64_t c = threadIdx.x; c * V < M; c += blockDim.x) {
      float acc[V];
#pragma unroll
      for (int i = 0; i < V; ++i)
        acc[i] = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t slot = slots[s * k + j];
        if (slot < 0 || slot >= slotCount)
          continue;
        const T *from = in + slot * M + c * V;
        Chunk<T> v;
        if constexpr (Aligned)
          v = loadChunk(from);
        else
          v.v[0] = *from;
        const float w = weights ? widen(weights[s * k + j]) : 1.0f;
#pragma unroll
        for (int i = 0; i < V; ++i)
          acc[i] = __fadd_rn(acc[i], weights ? __fmul_rn(w, widen(v.v[i])) : widen(v.v[i]));
      }
      T *to = out + s * M + c * V;
      if constexpr (Aligned) {
        Chunk<T> r;
#pragma unroll
        for (int i = 0; i < V; ++i)
          r.v[i] = Element<T>::narrow(acc[i]);
        storeChunk(to, r);
      } else {
        *to = Element<T>::narrow(acc[0]);
      }
    }
  }
}

template <typename T, bool Aligned>
__global__ void __launch_bounds__(kThreads)
routeDots(const T *rows, const T *slotted, const int64_t *slots, T *out, MoeShape shape,
          IndexFault *fault) {
  const int lane = threadIdx.x & 31;
  const int64_t M = shape.width, slotCount = shape.slotCount();
  constexpr int64_t V = kMoeChunk<T>;
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) >> 5;
  for (int64_t p = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
       p < shape.routeCount(); p += warps) {
    const int64_t slot = slots[p];
    if (slot < 0) {
      if (lane == 0)
        out[p] = Element<T>::narrow(0.0f);
      continue;
    }
    if (slot >= slotCount) {
      if (lane == 0)
        recordIndexFault(fault, "dsc.moe_route_dot", slot, slotCount);
      continue;
    }
    const T *a = rows + p / shape.choices * M, *b = slotted + slot * M;
    float partial = 0.0f;
    for (int64_t m0 = lane * V; m0 < M; m0 += kMoeLanes * V) {
      if constexpr (Aligned) {
        Chunk<T> x = loadChunk(a + m0), y = loadChunk(b + m0);
#pragma unroll
        for (int i = 0; i < Chunk<T>::kSize; ++i)
          partial = __fadd_rn(partial, __fmul_rn(widen(x.v[i]), widen(y.v[i])));
      } else {
        for (int64_t m = m0; m < M && m < m0 + V; ++m)
          partial = __fadd_rn(partial, __fmul_rn(widen(a[m]), widen(b[m])));
      }
    }
#pragma unroll
    for (int h = kMoeLanes / 2; h > 0; h >>= 1)
      partial = __fadd_rn(partial, __shfl_down_sync(kFullMask, partial, h));
    if (lane == 0)
      out[p] = Element<T>::narrow(partial);
  }
}

} // namespace moe_detail

/// counts[e] and slots[s, j] as Moe.h's moeSlots; a bad expert is recorded
/// in `fault`.
inline void moeSlots(cudaStream_t stream, const int64_t *experts, const float *priority,
                     int64_t *slots, int64_t *counts, MoeShape shape, IndexFault *fault) {
  using namespace moe_detail;
  const int64_t routes = shape.routeCount(), E = shape.experts;
  if (routes > int64_t(std::numeric_limits<int>::max()))
    throw std::invalid_argument("moeSlots: more than 2^31 - 1 routes");
  if (routes == 0) {
    check(cudaMemsetAsync(counts, 0, size_t(E) * sizeof(int64_t), stream),
          "zeroing the expert counts");
    return;
  }
  const int64_t tiles = (routes + kTileRoutes - 1) / kTileRoutes;
  const bool choiceMajor = !priority;
  // Scratch: the [tiles, E] table, then for priority start[E + 1],
  // next[E] and the buckets order[routes].
  const size_t tableBytes = (size_t(tiles * E) * sizeof(int) + 255) / 256 * 256;
  const size_t expertBytes = (size_t(E + 1) * sizeof(int64_t) + 255) / 256 * 256;
  StreamScratch scratch(tableBytes + (priority ? 2 * expertBytes + routes * sizeof(int64_t) : 0),
                        stream);
  int *table = scratch.as<int>();
  check(cudaMemsetAsync(table, 0, size_t(tiles * E) * sizeof(int), stream),
        "zeroing the expert slot table");
  const unsigned walkBlocks = blocksFor((tiles + kThreads / 32 - 1) / (kThreads / 32));
  walkTiles<Walk::Count><<<walkBlocks, kThreads, 0, stream>>>(
      experts, shape, choiceMajor, tiles, table, slots, nullptr, nullptr, fault);
  scanTileColumns<<<blocksFor(E), 1024, 0, stream>>>(table, tiles, E, counts);
  if (!priority) {
    walkTiles<Walk::Slot><<<walkBlocks, kThreads, 0, stream>>>(
        experts, shape, true, tiles, table, slots, nullptr, nullptr, fault);
    check(cudaGetLastError(), "launching the expert slot assignment");
    return;
  }
  int64_t *start = scratch.as<int64_t>(tableBytes);
  int64_t *next = scratch.as<int64_t>(tableBytes + expertBytes);
  int64_t *order = scratch.as<int64_t>(tableBytes + 2 * expertBytes);
  embedding_detail::scanCounts<<<1, 1024, 0, stream>>>(
      reinterpret_cast<const unsigned long long *>(counts), E, start, next);
  walkTiles<Walk::Place><<<walkBlocks, kThreads, 0, stream>>>(
      experts, shape, false, tiles, table, slots, start, order, fault);
  keepByPriority<<<blocksFor(E), kThreads, 0, stream>>>(priority, start, order, slots, shape);
  check(cudaGetLastError(), "launching the expert slot assignment by priority");
}

/// out[slot / C, slot % C, :] = x[s, :] * weights[s, j] as Moe.h's
/// moeDispatch; a slot at or above E * C is recorded in `fault`.
template <typename T>
void moeDispatch(cudaStream_t stream, const T *x, const int64_t *slots, const T *weights, T *out,
                 MoeShape shape, IndexFault *fault) {
  using namespace moe_detail;
  const int64_t rows = shape.slotCount();
  if (rows == 0 || shape.width == 0)
    return;
  StreamScratch scratch(size_t(rows) * sizeof(long long), stream);
  long long *source = scratch.as<long long>();
  check(cudaMemsetAsync(source, 0xff, size_t(rows) * sizeof(long long), stream),
        "clearing the dispatch's slot sources"); // -1 everywhere
  if (shape.routeCount() > 0)
    findSources<<<blocksFor((shape.routeCount() + kThreads - 1) / kThreads), kThreads, 0,
                  stream>>>(slots, shape.routeCount(), rows, source, fault);
  if (rowsAligned<T>(x, out, shape.width))
    dispatchRows<T, true><<<blocksFor(rows), kThreads, 0, stream>>>(x, source, weights, out,
                                                                    shape);
  else
    dispatchRows<T, false><<<blocksFor(rows), kThreads, 0, stream>>>(x, source, weights, out,
                                                                     shape);
  check(cudaGetLastError(), "launching the expert dispatch");
}

/// out[s, :] = the sum of the token's kept routes as Moe.h's moeCombine; a
/// slot at or above E * C is recorded in `fault`.
template <typename T>
void moeCombine(cudaStream_t stream, const T *in, const int64_t *slots, const T *weights, T *out,
                MoeShape shape, IndexFault *fault) {
  using namespace moe_detail;
  if (shape.tokens == 0 || shape.width == 0)
    return;
  if (rowsAligned<T>(in, out, shape.width))
    combineRows<T, true><<<blocksFor(shape.tokens), kThreads, 0, stream>>>(in, slots, weights,
                                                                           out, shape, fault);
  else
    combineRows<T, false><<<blocksFor(shape.tokens), kThreads, 0, stream>>>(in, slots, weights,
                                                                            out, shape, fault);
  check(cudaGetLastError(), "launching the expert combine");
}

/// out[s, j] = the dot product of the token's row and its slot's row as
/// Moe.h's moeRouteDot (the same bits); a slot at or above E * C is
/// recorded in `fault`.
template <typename T>
void moeRouteDot(cudaStream_t stream, const T *rows, const T *slotted, const int64_t *slots,
                 T *out, MoeShape shape, IndexFault *fault) {
  using namespace moe_detail;
  const int64_t routes = shape.routeCount();
  if (routes == 0)
    return;
  const unsigned blocks = blocksFor((routes + kThreads / 32 - 1) / (kThreads / 32));
  if (rowsAligned<T>(rows, slotted, shape.width))
    routeDots<T, true><<<blocks, kThreads, 0, stream>>>(rows, slotted, slots, out, shape, fault);
  else
    routeDots<T, false><<<blocks, kThreads, 0, stream>>>(rows, slotted, slots, out, shape,
                                                         fault);
  check(cudaGetLastError(), "launching the route dot products");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_MOE_CUH
