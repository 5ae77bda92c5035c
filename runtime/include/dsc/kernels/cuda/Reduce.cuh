//===- Reduce.cuh - deterministic two-stage reductions on CUDA --*- CUDA -*-===//
//
// The CUDA side of Reduce.h: the same functions and arguments, the queue a
// cudaStream_t, T one of float, double, __nv_bfloat16, __half, int64_t,
// int32_t. (outer, n, inner) as on the CPU: element (o, j, q) at
// o*n*inner + j*inner + q, result (o, q) at o*inner + q.
//
// Deterministic two-stage, as on the CPU: n is cut into fixed chunks
// (kRowChunk elements of a row, kColumnChunk rows of columns); a block
// computes a chunk's partial in a fixed order (each thread a fixed strided
// subset, then a fixed shuffle tree); partials of one result are combined
// in chunk order by a second kernel. The launch shapes depend on the
// tensor shape only, so results are bitwise stable from run to run. They
// differ from the CPU's in the last bits (another summation order).
//
// Rows: one block per (row, chunk), 128-bit loads where the row is 16-byte
// aligned. Columns: a 32 x 8 block per (32 columns, chunk of rows), 32
// adjacent columns read as one 128-byte line per row. Partials live in
// stream-ordered scratch memory (cudaMallocAsync), none when n fits in one
// chunk.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_REDUCE_CUH
#define DSC_KERNELS_CUDA_REDUCE_CUH

#include "dsc/kernels/cuda/Elements.cuh"

#include <cstdint>

namespace dsc::kernels::cuda {
namespace reduce_detail {

constexpr int64_t kRowChunk = 16384;
constexpr int64_t kColumnChunk = 64;
constexpr int kRowThreads = 256;

template <typename T, bool Squares> struct SumOp {
  using Acc = typename Element<T>::Acc;
  static __device__ __forceinline__ Acc identity() { return Acc(0); }
  static __device__ __forceinline__ Acc load(T x) {
    Acc v = Acc(Element<T>::widen(x));
    return Squares ? v * v : v;
  }
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) { return a + b; }
};

template <typename T> struct MaxOp {
  using Acc = typename Element<T>::Wide;
  static __device__ __forceinline__ Acc identity() { return Element<T>::lowest(); }
  static __device__ __forceinline__ Acc load(T x) { return Element<T>::widen(x); }
  /// NaN-propagating, as torch.amax.
  static __device__ __forceinline__ Acc combine(Acc a, Acc b) {
    return b > a || b != b ? b : a;
  }
};

/// The result's rounding: the mean divides by n first.
template <typename T> struct Finish {
  double divisor; // 0: no division
  template <typename A> __device__ __forceinline__ T operator()(A a) const {
    if (divisor != 0)
      return Element<T>::narrow(double(a) / divisor);
    return Element<T>::narrow(a);
  }
};

/// The block's threads' values combined by a fixed tree; valid in thread 0.
template <class Op, int Threads>
__device__ __forceinline__ typename Op::Acc blockCombine(typename Op::Acc v) {
  using Acc = typename Op::Acc;
  __shared__ Acc warpResults[Threads / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    warpResults[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < Threads / 32 ? warpResults[lane] : Op::identity();
    for (int offset = 16; offset > 0; offset /= 2)
      v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  __syncthreads(); // warpResults is reused by the next item
  return v;
}

/// Rows: item = (row o, chunk c). With one chunk it writes the result.
template <class Op, typename T>
__global__ void __launch_bounds__(kRowThreads)
rowPartials(const T *in, T *out, typename Op::Acc *partial, int64_t outer, int64_t n,
            int64_t chunks, Finish<T> finish) {
  using Acc = typename Op::Acc;
  constexpr int kVector = 16 / sizeof(T);
  for (int64_t item = blockIdx.x; item < outer * chunks; item += gridDim.x) {
    int64_t o = item / chunks, start = (item % chunks) * kRowChunk;
    int64_t len = n - start < kRowChunk ? n - start : kRowChunk;
    const T *x = in + o * n + start;
    Acc acc = Op::identity();
    int64_t head = 0;
    if (kVector > 1 && reinterpret_cast<uintptr_t>(x) % 16 == 0) {
      const uint4 *v = reinterpret_cast<const uint4 *>(x);
      for (int64_t i = threadIdx.x; i < len / kVector; i += kRowThreads) {
        uint4 word = v[i];
        const T *e = reinterpret_cast<const T *>(&word);
#pragma unroll
        for (int k = 0; k < kVector; ++k)
          acc = Op::combine(acc, Op::load(e[k]));
      }
      head = len / kVector * kVector;
    }
    for (int64_t i = head + threadIdx.x; i < len; i += kRowThreads)
      acc = Op::combine(acc, Op::load(x[i]));
    acc = blockCombine<Op, kRowThreads>(acc);
    if (threadIdx.x == 0) {
      if (chunks == 1)
        out[o] = finish(Op::combine(Op::identity(), acc));
      else
        partial[item] = acc;
    }
  }
}

/// Rows, second stage: row o's chunk partials in chunk order.
template <class Op, typename T>
__global__ void __launch_bounds__(kRowThreads)
rowCombine(const typename Op::Acc *partial, T *out, int64_t outer, int64_t chunks,
           Finish<T> finish) {
  using Acc = typename Op::Acc;
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    // Thread t folds chunks t, t + 256, ... in order; the tree combines the
    // threads in a fixed order: a fixed order overall.
    Acc acc = Op::identity();
    for (int64_t c = threadIdx.x; c < chunks; c += kRowThreads)
      acc = Op::combine(acc, partial[o * chunks + c]);
    acc = blockCombine<Op, kRowThreads>(acc);
    if (threadIdx.x == 0)
      out[o] = finish(Op::combine(Op::identity(), acc));
  }
}

/// Columns: item = (o, chunk c, 32-column tile t); thread (x, y) folds rows
/// y, y + 8, ... of the chunk of column x, then the 8 partials combine in
/// order of y.
template <class Op, typename T>
__global__ void __launch_bounds__(256)
columnPartials(const T *in, T *out, typename Op::Acc *partial, int64_t outer, int64_t n,
               int64_t inner, int64_t chunks, int64_t tiles, Finish<T> finish) {
  using Acc = typename Op::Acc;
  __shared__ Acc rows[8][32];
  const int x = threadIdx.x, y = threadIdx.y;
  for (int64_t item = blockIdx.x; item < outer * chunks * tiles; item += gridDim.x) {
    int64_t o = item / (chunks * tiles), c = item / tiles % chunks, t = item % tiles;
    int64_t q = t * 32 + x, j0 = c * kColumnChunk;
    int64_t j1 = j0 + kColumnChunk < n ? j0 + kColumnChunk : n;
    Acc acc = Op::identity();
    if (q < inner)
      for (int64_t j = j0 + y; j < j1; j += 8)
        acc = Op::combine(acc, Op::load(in[(o * n + j) * inner + q]));
    rows[y][x] = acc;
    __syncthreads();
    if (y == 0 && q < inner) {
      Acc total = Op::identity();
      for (int k = 0; k < 8; ++k)
        total = Op::combine(total, rows[k][x]);
      if (chunks == 1)
        out[o * inner + q] = finish(Op::combine(Op::identity(), total));
      else
        partial[(o * chunks + c) * inner + q] = total;
    }
    __syncthreads();
  }
}

/// Columns, second stage: thread per result, chunks in order (adjacent
/// threads read adjacent columns).
template <class Op, typename T>
__global__ void columnCombine(const typename Op::Acc *partial, T *out, int64_t outer,
                              int64_t inner, int64_t chunks, Finish<T> finish) {
  for (int64_t item = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; item < outer * inner;
       item += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = item / inner, q = item % inner;
    typename Op::Acc acc = Op::identity();
    for (int64_t c = 0; c < chunks; ++c)
      acc = Op::combine(acc, partial[(o * chunks + c) * inner + q]);
    out[item] = finish(acc);
  }
}

template <class Op, typename T>
void reduce(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t n, int64_t inner,
            Finish<T> finish) {
  using Acc = typename Op::Acc;
  if (outer == 0 || inner == 0)
    return;
  if (inner == 1) {
    int64_t chunks = n > kRowChunk ? (n + kRowChunk - 1) / kRowChunk : 1;
    StreamScratch scratch(chunks > 1 ? outer * chunks * sizeof(Acc) : 0, stream);
    rowPartials<Op, T><<<blocksFor(outer * chunks), kRowThreads, 0, stream>>>(
        in, out, scratch.as<Acc>(), outer, n, chunks, finish);
    if (chunks > 1)
      rowCombine<Op, T><<<blocksFor(outer), kRowThreads, 0, stream>>>(scratch.as<Acc>(), out,
                                                                     outer, chunks, finish);
    check(cudaGetLastError(), "launching a row reduction");
    return;
  }
  int64_t chunks = n > kColumnChunk ? (n + kColumnChunk - 1) / kColumnChunk : 1;
  int64_t tiles = (inner + 31) / 32;
  StreamScratch scratch(chunks > 1 ? outer * chunks * inner * sizeof(Acc) : 0, stream);
  columnPartials<Op, T><<<blocksFor(outer * chunks * tiles), dim3(32, 8), 0, stream>>>(
      in, out, scratch.as<Acc>(), outer, n, inner, chunks, tiles, finish);
  if (chunks > 1)
    columnCombine<Op, T><<<blocksFor((outer * inner + 255) / 256), 256, 0, stream>>>(
        scratch.as<Acc>(), out, outer, inner, chunks, finish);
  check(cudaGetLastError(), "launching a column reduction");
}

} // namespace reduce_detail

/// out[o, q] = sum_j in[o, j, q], accumulated in double (float data) or
/// int64, rounded once.
template <typename T>
void reduceSum(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t n,
               int64_t inner) {
  reduce_detail::reduce<reduce_detail::SumOp<T, false>>(stream, in, out, outer, n, inner,
                                                         reduce_detail::Finish<T>{0});
}

/// out[o, q] = (sum_j in[o, j, q]) / n, the division in double.
template <typename T>
void reduceMean(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t n,
                int64_t inner) {
  reduce_detail::reduce<reduce_detail::SumOp<T, false>>(
      stream, in, out, outer, n, inner, reduce_detail::Finish<T>{n == 0 ? NAN : double(n)});
}

/// out[o, q] = max_j in[o, j, q], NaN if any is NaN (n == 0: -inf or the
/// lowest integer).
template <typename T>
void reduceMax(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t n,
               int64_t inner) {
  reduce_detail::reduce<reduce_detail::MaxOp<T>>(stream, in, out, outer, n, inner,
                                                  reduce_detail::Finish<T>{0});
}

/// out[o, q] = sum_j in[o, j, q]^2, squares in the accumulator type.
template <typename T>
void sumSquares(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t n,
                int64_t inner) {
  reduce_detail::reduce<reduce_detail::SumOp<T, true>>(stream, in, out, outer, n, inner,
                                                        reduce_detail::Finish<T>{0});
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_REDUCE_CUH
