//===- Attention.cuh - flash-style scaled dot-product attention, CUDA -*- C++ -*-===//
//
// The CUDA side of dsc/kernels/Attention.h: the same functions, argument
// lists and semantics (see there: layouts, masks, the causal alignment, the
// row with no visible key), with a cudaStream_t as the queue. Header only:
// the generated step.cu includes it and nvcc instantiates what it calls.
//
// Structure (FlashAttention-2's, with warp-level float arithmetic):
// - forward: a block of kFwdRows warps owns kFwdRows query rows of one
//   (b, h); tiles of 32 keys and their values are staged in shared memory
//   and read by every warp. Lane j scores key j of the tile; a warp max and
//   sum update the row's online softmax; the output accumulator lives in
//   registers, lane l owning dimensions l, l+32, ... The log-sum-exp of each
//   row is written for the backward.
// - backward, two kernels, each recomputing the probabilities per tile from
//   q, k and the log-sum-exp, so that neither needs atomics (results are
//   deterministic) nor scratch memory: dk/dv, where each warp owns a tile of
//   16 keys (accumulators in registers) and walks the query rows, lanes
//   0-15 scoring the keys while lanes 16-31 compute dO.v; and dq, laid out
//   as the forward. Delta = dO.O is recomputed per row with a warp sum
//   (Dv multiply-adds against the D*32 of a tile's scores).
// Head sizes up to 128 (each lane holds up to 4 dimensions); larger ones are
// refused with an exception before any launch.
//
// Compute is float for every element type; 16-bit values are widened where
// read and rounded once where written.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_ATTENTION_CUH
#define DSC_KERNELS_CUDA_ATTENTION_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace dsc::kernels::cuda {

namespace attention_detail {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
/// Query rows (warps) per forward and dq block; keys per shared tile.
constexpr int kFwdRows = 8;
constexpr int kKeyTile = 32;
/// Keys per warp in the dk/dv kernel, and warps per block there.
constexpr int kKvKeys = 16;
constexpr int kKvWarps = 2;
constexpr int64_t kMaxHeadDim = 128;

template <typename T>
__device__ __forceinline__ float load(const T *p, int64_t i) {
  return static_cast<float>(p[i]);
}

__device__ __forceinline__ float warpMax(float x) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1)
    x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
  return x;
}

__device__ __forceinline__ float warpSum(float x) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1)
    x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

/// The exclusive end of the keys query row `t` may see.
__device__ __forceinline__ int64_t keyEnd(int64_t t, int64_t queries,
                                          int64_t keys, bool causal) {
  if (!causal)
    return keys;
  int64_t end = t + 1 + (keys - queries);
  return end < 0 ? 0 : (end > keys ? keys : end);
}

/// The masked, scaled score from q.k: -inf where the mask hides the key.
template <typename M>
__device__ __forceinline__ float score(float dot, float scale, const M *mask,
                                       int64_t m) {
  if constexpr (std::is_same_v<M, uint8_t>) {
    return mask && !mask[m] ? -INFINITY : dot * scale;
  } else {
    float x = dot * scale;
    return mask ? x + static_cast<float>(mask[m]) : x;
  }
}

/// Stages rows [s0, s0 + rows) of a [keys, dim] matrix into `tile` (row
/// stride dim + 1: lanes reading one column of different rows hit different
/// banks); rows past `keys` are zeros. All `threads` threads from `first`
/// take part.
template <typename T>
__device__ __forceinline__ void stageRows(float *tile, const T *src, int64_t s0,
                                          int rows, int64_t keys, int64_t dim,
                                          int first, int threads) {
  for (int64_t i = first; i < rows * dim; i += threads) {
    int64_t j = i / dim, d = i % dim;
    tile[j * (dim + 1) + d] = s0 + j < keys ? load(src, (s0 + j) * dim + d) : 0.0f;
  }
}

template <typename T, typename M, int DL>
__global__ void __launch_bounds__(kFwdRows *kWarp)
    forwardKernel(const T *q, const T *k, const T *v, const M *mask,
                  int64_t msb, int64_t msh, int64_t mst, int64_t mss, T *out,
                  float *lse, int64_t heads, int64_t queries, int64_t keys,
                  int64_t headDim, int64_t valueDim, float scale, bool causal) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t bh = blockIdx.x, b = bh / heads, h = bh % heads;
  const int64_t t0 = int64_t(blockIdx.y) * kFwdRows, t = t0 + warp;
  float *kTile = smem;
  float *vTile = kTile + kKeyTile * (headDim + 1);
  float *qRow = vTile + kKeyTile * (valueDim + 1) + warp * headDim;
  const T *kh = k + bh * keys * headDim;
  const T *vh = v + bh * keys * valueDim;
  const bool active = t < queries;
  if (active)
    for (int64_t d = lane; d < headDim; d += kWarp)
      qRow[d] = load(q, (bh * queries + t) * headDim + d);
  float acc[DL];
#pragma unroll
  for (int i = 0; i < DL; ++i)
    acc[i] = 0.0f;
  float rowMax = -INFINITY, rowSum = 0.0f;
  const int64_t lastRow = (t0 + kFwdRows < queries ? t0 + kFwdRows : queries) - 1;
  const int64_t blockEnd = keyEnd(lastRow, queries, keys, causal);
  const int64_t rowEnd = active ? keyEnd(t, queries, keys, causal) : 0;
  const int64_t maskRow = b * msb + h * msh + t * mst;
  for (int64_t s0 = 0; s0 < blockEnd; s0 += kKeyTile) {
    __syncthreads(); // the previous tile is consumed
    stageRows(kTile, kh, s0, kKeyTile, keys, headDim, threadIdx.x, blockDim.x);
    stageRows(vTile, vh, s0, kKeyTile, keys, valueDim, threadIdx.x, blockDim.x);
    __syncthreads();
    if (!active || s0 >= rowEnd)
      continue;
    const int64_t s = s0 + lane;
    float x = -INFINITY;
    if (s < rowEnd) {
      const float *kRow = kTile + lane * (headDim + 1);
      float dot = 0.0f;
      for (int64_t d = 0; d < headDim; ++d)
        dot = fmaf(qRow[d], kRow[d], dot);
      x = score(dot, scale, mask, maskRow + s * mss);
    }
    const float tileMax = warpMax(x);
    if (tileMax == -INFINITY)
      continue; // uniform across the warp
    const float newMax = fmaxf(rowMax, tileMax);
    const float correction = expf(rowMax - newMax);
    const float p = x == -INFINITY ? 0.0f : expf(x - newMax);
    rowSum = rowSum * correction + warpSum(p);
#pragma unroll
    for (int i = 0; i < DL; ++i)
      acc[i] *= correction;
    for (int j = 0; j < kKeyTile; ++j) {
      const float pj = __shfl_sync(kFullMask, p, j);
      const float *vRow = vTile + j * (valueDim + 1);
#pragma unroll
      for (int i = 0; i < DL; ++i) {
        const int64_t d = lane + i * kWarp;
        if (d < valueDim)
          acc[i] = fmaf(pj, vRow[d], acc[i]);
      }
    }
    rowMax = newMax;
  }
  if (!active)
    return;
  const float inv = rowSum == 0.0f ? 0.0f : 1.0f / rowSum;
#pragma unroll
  for (int i = 0; i < DL; ++i) {
    const int64_t d = lane + i * kWarp;
    if (d < valueDim)
      out[(bh * queries + t) * valueDim + d] = T(acc[i] * inv);
  }
  if (lane == 0)
    lse[bh * queries + t] = rowSum == 0.0f ? -INFINITY : rowMax + logf(rowSum);
}

/// Delta = dOut[t] . out[t] of one row, by a warp.
template <typename T>
__device__ __forceinline__ float rowDelta(const T *dOut, const T *out,
                                          int64_t row, int64_t valueDim,
                                          int lane) {
  float partial = 0.0f;
  for (int64_t d = lane; d < valueDim; d += kWarp)
    partial = fmaf(load(dOut, row * valueDim + d), load(out, row * valueDim + d),
                   partial);
  return warpSum(partial);
}

template <typename T, typename M, int DL>
__global__ void __launch_bounds__(kKvWarps *kWarp)
    keyValueGradKernel(const T *q, const T *k, const T *v, const T *out,
                       const T *dOut, const float *lse, const M *mask,
                       int64_t msb, int64_t msh, int64_t mst, int64_t mss,
                       T *dk, T *dv, int64_t heads, int64_t queries,
                       int64_t keys, int64_t headDim, int64_t valueDim,
                       float scale, bool causal) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t bh = blockIdx.x, b = bh / heads, h = bh % heads;
  const int64_t s0 = (int64_t(blockIdx.y) * kKvWarps + warp) * kKvKeys;
  if (s0 >= keys)
    return; // no block-wide barrier below: warps are independent
  const int64_t perWarp = kKvKeys * (headDim + 1) + kKvKeys * (valueDim + 1) +
                          headDim + valueDim;
  float *kTile = smem + warp * perWarp;
  float *vTile = kTile + kKvKeys * (headDim + 1);
  float *qRow = vTile + kKvKeys * (valueDim + 1);
  float *dORow = qRow + headDim;
  stageRows(kTile, k + bh * keys * headDim, s0, kKvKeys, keys, headDim, lane, kWarp);
  stageRows(vTile, v + bh * keys * valueDim, s0, kKvKeys, keys, valueDim, lane, kWarp);
  float dkAcc[kKvKeys][DL], dvAcc[kKvKeys][DL];
#pragma unroll
  for (int j = 0; j < kKvKeys; ++j)
#pragma unroll
    for (int i = 0; i < DL; ++i)
      dkAcc[j][i] = dvAcc[j][i] = 0.0f;
  // The first query row that sees key s0 (causal: s0 <= t + S - T).
  int64_t first = causal ? s0 - (keys - queries) : 0;
  first = first < 0 ? 0 : first;
  const int key = lane % kKvKeys; // lanes 0-15 score, 16-31 take dO.v
  const int64_t s = s0 + key;
  for (int64_t t = first; t < queries; ++t) {
    const int64_t row = bh * queries + t;
    const float rowLse = lse[row];
    if (rowLse == -INFINITY)
      continue; // the row saw no key: no gradient
    __syncwarp();
    for (int64_t d = lane; d < headDim; d += kWarp)
      qRow[d] = load(q, row * headDim + d);
    for (int64_t d = lane; d < valueDim; d += kWarp)
      dORow[d] = load(dOut, row * valueDim + d);
    const float delta = rowDelta(dOut, out, row, valueDim, lane);
    __syncwarp();
    const bool visible = s < keyEnd(t, queries, keys, causal);
    float mine = 0.0f;
    if (visible) {
      float dot = 0.0f;
      if (lane < kKvKeys) {
        const float *kRow = kTile + key * (headDim + 1);
        for (int64_t d = 0; d < headDim; ++d)
          dot = fmaf(qRow[d], kRow[d], dot);
        const float x = score(dot, scale, mask, b * msb + h * msh + t * mst + s * mss);
        mine = x == -INFINITY ? 0.0f : expf(x - rowLse);
      } else {
        const float *vRow = vTile + key * (valueDim + 1);
        for (int64_t d = 0; d < valueDim; ++d)
          dot = fmaf(dORow[d], vRow[d], dot);
        mine = dot;
      }
    }
    const float dp = __shfl_down_sync(kFullMask, mine, kKvKeys);
    const float ds = lane < kKvKeys ? mine * (dp - delta) * scale : 0.0f;
#pragma unroll
    for (int j = 0; j < kKvKeys; ++j) {
      const float pj = __shfl_sync(kFullMask, mine, j);
      const float dsj = __shfl_sync(kFullMask, ds, j);
#pragma unroll
      for (int i = 0; i < DL; ++i) {
        const int64_t d = lane + i * kWarp;
        if (d < valueDim)
          dvAcc[j][i] = fmaf(pj, dORow[d], dvAcc[j][i]);
        if (d < headDim)
          dkAcc[j][i] = fmaf(dsj, qRow[d], dkAcc[j][i]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kKvKeys; ++j) {
    if (s0 + j >= keys)
      break;
#pragma unroll
    for (int i = 0; i < DL; ++i) {
      const int64_t d = lane + i * kWarp;
      if (d < headDim)
        dk[(bh * keys + s0 + j) * headDim + d] = T(dkAcc[j][i]);
      if (d < valueDim)
        dv[(bh * keys + s0 + j) * valueDim + d] = T(dvAcc[j][i]);
    }
  }
}

template <typename T, typename M, int DL>
__global__ void __launch_bounds__(kFwdRows *kWarp)
    queryGradKernel(const T *q, const T *k, const T *v, const T *out,
                    const T *dOut, const float *lse, const M *mask, int64_t msb,
                    int64_t msh, int64_t mst, int64_t mss, T *dq, int64_t heads,
                    int64_t queries, int64_t keys, int64_t headDim,
                    int64_t valueDim, float scale, bool causal) {
  extern __shared__ float smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t bh = blockIdx.x, b = bh / heads, h = bh % heads;
  const int64_t t0 = int64_t(blockIdx.y) * kFwdRows, t = t0 + warp;
  const int64_t row = bh * queries + t;
  float *kTile = smem;
  float *vTile = kTile + kKeyTile * (headDim + 1);
  float *qRow = vTile + kKeyTile * (valueDim + 1) + warp * (headDim + valueDim);
  float *dORow = qRow + headDim;
  const float rowLse = t < queries ? lse[row] : -INFINITY;
  const bool active = rowLse != -INFINITY; // a row that saw no key: dq = 0
  float delta = 0.0f;
  if (t < queries) {
    for (int64_t d = lane; d < headDim; d += kWarp)
      qRow[d] = load(q, row * headDim + d);
    for (int64_t d = lane; d < valueDim; d += kWarp)
      dORow[d] = load(dOut, row * valueDim + d);
    delta = rowDelta(dOut, out, row, valueDim, lane);
  }
  float acc[DL];
#pragma unroll
  for (int i = 0; i < DL; ++i)
    acc[i] = 0.0f;
  const int64_t lastRow = (t0 + kFwdRows < queries ? t0 + kFwdRows : queries) - 1;
  const int64_t blockEnd = keyEnd(lastRow, queries, keys, causal);
  const int64_t rowEnd = active ? keyEnd(t, queries, keys, causal) : 0;
  const int64_t maskRow = b * msb + h * msh + t * mst;
  for (int64_t s0 = 0; s0 < blockEnd; s0 += kKeyTile) {
    __syncthreads();
    stageRows(kTile, k + bh * keys * headDim, s0, kKeyTile, keys, headDim,
              threadIdx.x, blockDim.x);
    stageRows(vTile, v + bh * keys * valueDim, s0, kKeyTile, keys, valueDim,
              threadIdx.x, blockDim.x);
    __syncthreads();
    if (!active || s0 >= rowEnd)
      continue;
    const int64_t s = s0 + lane;
    float ds = 0.0f;
    if (s < rowEnd) {
      const float *kRow = kTile + lane * (headDim + 1);
      const float *vRow = vTile + lane * (valueDim + 1);
      float dot = 0.0f, dp = 0.0f;
      for (int64_t d = 0; d < headDim; ++d)
        dot = fmaf(qRow[d], kRow[d], dot);
      for (int64_t d = 0; d < valueDim; ++d)
        dp = fmaf(dORow[d], vRow[d], dp);
      const float x = score(dot, scale, mask, maskRow + s * mss);
      const float p = x == -INFINITY ? 0.0f : expf(x - rowLse);
      ds = p * (dp - delta) * scale;
    }
    for (int j = 0; j < kKeyTile; ++j) {
      const float dsj = __shfl_sync(kFullMask, ds, j);
      const float *kRow = kTile + j * (headDim + 1);
#pragma unroll
      for (int i = 0; i < DL; ++i) {
        const int64_t d = lane + i * kWarp;
        if (d < headDim)
          acc[i] = fmaf(dsj, kRow[d], acc[i]);
      }
    }
  }
  if (t >= queries)
    return;
#pragma unroll
  for (int i = 0; i < DL; ++i) {
    const int64_t d = lane + i * kWarp;
    if (d < headDim)
      dq[row * headDim + d] = T(acc[i]);
  }
}

inline void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// Lanes hold ceil(max(D, Dv) / 32) dimensions each (1 to 4).
inline int dimsPerLane(const char *what, int64_t headDim, int64_t valueDim) {
  if (headDim < 1 || valueDim < 1 || headDim > kMaxHeadDim || valueDim > kMaxHeadDim)
    throw std::invalid_argument(std::string(what) + ": head sizes " +
                                std::to_string(headDim) + " and " +
                                std::to_string(valueDim) +
                                " must be in [1, 128] on CUDA");
  int64_t widest = headDim > valueDim ? headDim : valueDim;
  return int((widest + kWarp - 1) / kWarp);
}

/// Calls `launch(std::integral_constant<int, DL>{})` for DL in 1..4.
template <typename F> inline void withDimsPerLane(int dl, F &&launch) {
  switch (dl) {
  case 1: launch(std::integral_constant<int, 1>{}); break;
  case 2: launch(std::integral_constant<int, 2>{}); break;
  case 3: launch(std::integral_constant<int, 3>{}); break;
  default: launch(std::integral_constant<int, 4>{}); break;
  }
}

} // namespace attention_detail

/// Forward: out = softmax(scale * q k^T + mask) v, lse = the rows'
/// log-sum-exp (dsc/kernels/Attention.h has the full contract).
template <typename T, typename M>
void attentionForward(cudaStream_t stream, const T *q, const T *k, const T *v,
                      const M *mask, int64_t maskStrideB, int64_t maskStrideH,
                      int64_t maskStrideT, int64_t maskStrideS, T *out,
                      float *lse, int64_t batch, int64_t heads, int64_t queries,
                      int64_t keys, int64_t headDim, int64_t valueDim,
                      double scale, bool causal) {
  using namespace attention_detail;
  int dl = dimsPerLane("dsc attention forward", headDim, valueDim);
  if (batch * heads == 0 || queries == 0)
    return;
  size_t shared = sizeof(float) * (kKeyTile * (headDim + 1) +
                                   kKeyTile * (valueDim + 1) + kFwdRows * headDim);
  dim3 grid(unsigned(batch * heads), unsigned((queries + kFwdRows - 1) / kFwdRows));
  withDimsPerLane(dl, [&](auto DL) {
    forwardKernel<T, M, decltype(DL)::value><<<grid, kFwdRows * kWarp, shared, stream>>>(
        q, k, v, mask, maskStrideB, maskStrideH, maskStrideT, maskStrideS, out,
        lse, heads, queries, keys, headDim, valueDim, float(scale), causal);
  });
  check(cudaGetLastError(), "dsc attention forward");
}

/// Backward: dq, dk, dv of attentionForward from its output, the output's
/// cotangent and the saved log-sum-exp.
template <typename T, typename M>
void attentionBackward(cudaStream_t stream, const T *q, const T *k, const T *v,
                       const T *out, const T *dOut, const float *lse,
                       const M *mask, int64_t maskStrideB, int64_t maskStrideH,
                       int64_t maskStrideT, int64_t maskStrideS, T *dq, T *dk,
                       T *dv, int64_t batch, int64_t heads, int64_t queries,
                       int64_t keys, int64_t headDim, int64_t valueDim,
                       double scale, bool causal) {
  using namespace attention_detail;
  int dl = dimsPerLane("dsc attention backward", headDim, valueDim);
  if (batch * heads == 0)
    return;
  if (keys > 0) {
    size_t shared = sizeof(float) * kKvWarps *
                    (kKvKeys * (headDim + 1) + kKvKeys * (valueDim + 1) +
                     headDim + valueDim);
    const int64_t perBlock = kKvKeys * kKvWarps;
    dim3 grid(unsigned(batch * heads), unsigned((keys + perBlock - 1) / perBlock));
    withDimsPerLane(dl, [&](auto DL) {
      keyValueGradKernel<T, M, decltype(DL)::value>
          <<<grid, kKvWarps * kWarp, shared, stream>>>(
              q, k, v, out, dOut, lse, mask, maskStrideB, maskStrideH,
              maskStrideT, maskStrideS, dk, dv, heads, queries, keys, headDim,
              valueDim, float(scale), causal);
    });
    check(cudaGetLastError(), "dsc attention backward (dk, dv)");
  }
  if (queries > 0) {
    size_t shared = sizeof(float) * (kKeyTile * (headDim + 1) +
                                     kKeyTile * (valueDim + 1) +
                                     kFwdRows * (headDim + valueDim));
    dim3 grid(unsigned(batch * heads), unsigned((queries + kFwdRows - 1) / kFwdRows));
    withDimsPerLane(dl, [&](auto DL) {
      queryGradKernel<T, M, decltype(DL)::value>
          <<<grid, kFwdRows * kWarp, shared, stream>>>(
              q, k, v, out, dOut, lse, mask, maskStrideB, maskStrideH,
              maskStrideT, maskStrideS, dq, heads, queries, keys, headDim,
              valueDim, float(scale), causal);
    });
    check(cudaGetLastError(), "dsc attention backward (dq)");
  }
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_ATTENTION_CUH
