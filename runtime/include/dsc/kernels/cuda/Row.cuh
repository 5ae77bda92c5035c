//===- Row.cuh - softmax and normalization over rows on CUDA ----*- C++ -*-===//
//
// The CUDA form of dsc/kernels/Row.h: the same functions, arguments and
// formulas, with a cudaStream_t as the queue. Header-only: a compiled step
// includes it and nvcc instantiates what the step calls.
//
// One thread block per row: the block's threads stride over the row, each
// keeping its own partial result, then combine them with warp shuffles and
// one shared-memory step (blockSum, blockMaxSum). Softmax-like rows keep an
// online (max, sum of exp) pair per thread, so the row is read once to
// reduce and once to write. Rows along the last dimension (inner == 1)
// whose pointers are 16-byte aligned and whose length is a multiple of 16
// bytes are read and written 16 bytes per access (W elements per chunk);
// others one element per access, strided by `inner`.
//
// Numerics: elements read as float, float accumulation (tree-shaped, so
// the error grows with log n), one rounding per written value (CUDA's
// round-to-nearest-even conversions); expf and logf, not the fast
// intrinsics. The norm backward passes sum dweight and dbias per fixed
// chunk of rows into a stream-ordered scratch buffer, then add the chunks
// in order: deterministic, no atomics.
//
// Element types: float, __nv_bfloat16, __half (the emitted code's dsc_bf16 /
// dsc_f16 wrappers have the same layout and are passed by reinterpret_cast).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_ROW_CUH
#define DSC_KERNELS_CUDA_ROW_CUH

#include "dsc/kernels/cuda/Elements.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {
namespace detail {

__device__ __forceinline__ float load(float v) { return v; }
__device__ __forceinline__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float load(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T convert(float v);
template <> __device__ __forceinline__ float convert<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 convert<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half convert<__half>(float v) {
  return __float2half_rn(v);
}

/// Elements in one 16-byte access.
template <typename T> constexpr int kPack = 16 / int(sizeof(T));

/// Chunk c of a row: W contiguous elements read with one 16-byte load when
/// W > 1 (the row is contiguous), element c * stride when W == 1.
template <int W, typename T>
__device__ __forceinline__ void loadChunk(const T *row, std::int64_t c, std::int64_t stride,
                                          float (&v)[W]) {
  if constexpr (W == 1) {
    v[0] = load(row[c * stride]);
  } else {
    static_assert(W == kPack<T>, "a chunk is one 16-byte access");
    int4 raw = *reinterpret_cast<const int4 *>(row + c * W);
    const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
    for (int k = 0; k < W; ++k)
      v[k] = load(e[k]);
  }
}

template <int W, typename T>
__device__ __forceinline__ void storeChunk(T *row, std::int64_t c, std::int64_t stride,
                                           const float (&v)[W]) {
  if constexpr (W == 1) {
    row[c * stride] = convert<T>(v[0]);
  } else {
    int4 raw;
    T *e = reinterpret_cast<T *>(&raw);
#pragma unroll
    for (int k = 0; k < W; ++k)
      e[k] = convert<T>(v[k]);
    *reinterpret_cast<int4 *>(row + c * W) = raw;
  }
}

/// Element index of entry k of chunk c.
template <int W> __device__ __forceinline__ std::int64_t indexOf(std::int64_t c, int k) {
  return c * W + k;
}

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// The sum of v over the block, returned to every thread. blockDim.x is a
/// multiple of 32.
__device__ __forceinline__ float blockSum(float v) {
  __shared__ float partial[32];
  v = warpSum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads(); // the previous reduction of the block may still read `partial`
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  return warpSum(lane < int(blockDim.x >> 5) ? partial[lane] : 0.0f);
}

/// A running softmax denominator: the maximum m of the elements seen and
/// the sum of exp(x - m) over them.
struct MaxSum {
  float m, s;
};

__device__ __forceinline__ void add(MaxSum &a, float v) {
  if (v > a.m) {
    a.s = a.s * expf(a.m - v) + 1.0f;
    a.m = v;
  } else {
    a.s += v == -INFINITY ? 0.0f : expf(v - a.m); // -inf - -inf would be NaN
  }
}

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY)
    return {m, a.s + b.s};
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum warpMaxSum(MaxSum v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = merge(v, {__shfl_xor_sync(0xffffffffu, v.m, offset),
                  __shfl_xor_sync(0xffffffffu, v.s, offset)});
  return v;
}

__device__ __forceinline__ MaxSum blockMaxSum(MaxSum v) {
  __shared__ float pm[32], ps[32];
  v = warpMaxSum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) {
    pm[warp] = v.m;
    ps[warp] = v.s;
  }
  __syncthreads();
  bool live = lane < int(blockDim.x >> 5);
  return warpMaxSum({live ? pm[lane] : -INFINITY, live ? ps[lane] : 0.0f});
}

/// Threads per row block: enough for one chunk each, a multiple of 32, at
/// most 512.
inline unsigned threadsFor(std::int64_t chunks) {
  std::int64_t t = (chunks + 31) / 32 * 32;
  return unsigned(t < 32 ? 32 : (t > 512 ? 512 : t));
}

/// Blocks for `rows` rows: one each, up to the grid limit (kernels loop).
inline unsigned blocksFor(std::int64_t rows) {
  return unsigned(rows < 1 ? 1 : (rows > 0x7fffffff ? 0x7fffffff : rows));
}

inline bool aligned16(const void *p) {
  return p == nullptr || reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

template <bool Log, int W, typename T>
__global__ void softmaxKernel(T *y, const T *x, std::int64_t rows, std::int64_t n,
                              std::int64_t inner) {
  const std::int64_t chunks = n / W;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row / inner * n * inner + row % inner;
    const T *xr = x + base;
    T *yr = y + base;
    MaxSum ms{-INFINITY, 0.0f};
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W];
      loadChunk<W>(xr, c, inner, v);
#pragma unroll
      for (int k = 0; k < W; ++k)
        add(ms, v[k]);
    }
    ms = blockMaxSum(ms);
    const float inv = 1.0f / ms.s, lse = logf(ms.s);
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W];
      loadChunk<W>(xr, c, inner, v);
#pragma unroll
      for (int k = 0; k < W; ++k)
        v[k] = Log ? v[k] - ms.m - lse : expf(v[k] - ms.m) * inv;
      storeChunk<W>(yr, c, inner, v);
    }
  }
}

template <bool Log, int W, typename T>
__global__ void softmaxBackwardKernel(T *dx, const T *y, const T *dy, std::int64_t rows,
                                      std::int64_t n, std::int64_t inner) {
  const std::int64_t chunks = n / W;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row / inner * n * inner + row % inner;
    float s = 0;
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float yv[W], dv[W];
      loadChunk<W>(y + base, c, inner, yv);
      loadChunk<W>(dy + base, c, inner, dv);
#pragma unroll
      for (int k = 0; k < W; ++k)
        s += Log ? dv[k] : dv[k] * yv[k];
    }
    s = blockSum(s);
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float yv[W], dv[W];
      loadChunk<W>(y + base, c, inner, yv);
      loadChunk<W>(dy + base, c, inner, dv);
#pragma unroll
      for (int k = 0; k < W; ++k)
        dv[k] = Log ? dv[k] - expf(yv[k]) * s : (dv[k] - s) * yv[k];
      storeChunk<W>(dx + base, c, inner, dv);
    }
  }
}

template <bool Log, typename T>
void launchSoftmax(cudaStream_t stream, T *y, const T *x, std::int64_t outer, std::int64_t n,
                   std::int64_t inner) {
  const std::int64_t rows = outer * inner;
  if (rows == 0 || n == 0)
    return;
  constexpr int P = kPack<T>;
  if (inner == 1 && n % P == 0 && aligned16(x) && aligned16(y))
    softmaxKernel<Log, P><<<blocksFor(rows), threadsFor(n / P), 0, stream>>>(y, x, rows, n,
                                                                            inner);
  else
    softmaxKernel<Log, 1><<<blocksFor(rows), threadsFor(n), 0, stream>>>(y, x, rows, n, inner);
  check(cudaGetLastError(), Log ? "log_softmax kernel" : "softmax kernel");
}

template <bool Log, typename T>
void launchSoftmaxBackward(cudaStream_t stream, T *dx, const T *y, const T *dy,
                           std::int64_t outer, std::int64_t n, std::int64_t inner) {
  const std::int64_t rows = outer * inner;
  if (rows == 0 || n == 0)
    return;
  constexpr int P = kPack<T>;
  if (inner == 1 && n % P == 0 && aligned16(dx) && aligned16(y) && aligned16(dy))
    softmaxBackwardKernel<Log, P><<<blocksFor(rows), threadsFor(n / P), 0, stream>>>(
        dx, y, dy, rows, n, inner);
  else
    softmaxBackwardKernel<Log, 1><<<blocksFor(rows), threadsFor(n), 0, stream>>>(
        dx, y, dy, rows, n, inner);
  check(cudaGetLastError(), "softmax backward kernel");
}

/// Layer norm (RMS = false) or RMS norm (RMS = true) of each row; with a
/// residual input b, the row is first residual = x + b (rounded to T).
template <bool RMS, int W, typename T>
__global__ void normKernel(T *y, float *meanOut, float *rstdOut, T *residual, const T *x,
                           const T *b, const T *weight, const T *bias, std::int64_t rows,
                           std::int64_t n, float eps) {
  const std::int64_t chunks = n / W;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * n;
    if (residual) {
      // Each thread reads back only the chunks it wrote: no barrier needed.
      T *rr = residual + row * n;
      for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        float a[W], bv[W];
        loadChunk<W>(xr, c, 1, a);
        loadChunk<W>(b + row * n, c, 1, bv);
#pragma unroll
        for (int k = 0; k < W; ++k)
          a[k] += bv[k];
        storeChunk<W>(rr, c, 1, a);
      }
      xr = rr;
    }
    float mean = 0;
    if (!RMS) {
      float s = 0;
      for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
        float v[W];
        loadChunk<W>(xr, c, 1, v);
#pragma unroll
        for (int k = 0; k < W; ++k)
          s += v[k];
      }
      mean = blockSum(s) / float(n);
    }
    float sq = 0;
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W];
      loadChunk<W>(xr, c, 1, v);
#pragma unroll
      for (int k = 0; k < W; ++k)
        sq += (v[k] - mean) * (v[k] - mean);
    }
    const float rstd = rsqrtf(blockSum(sq) / float(n) + eps);
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W], w[W], bb[W];
      loadChunk<W>(xr, c, 1, v);
      if (weight)
        loadChunk<W>(weight, c, 1, w);
      if (bias)
        loadChunk<W>(bias, c, 1, bb);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        v[k] = (v[k] - mean) * rstd;
        if (weight)
          v[k] *= w[k];
        if (bias)
          v[k] += bb[k];
      }
      storeChunk<W>(y + row * n, c, 1, v);
    }
    if (threadIdx.x == 0) {
      if (meanOut)
        meanOut[row] = mean;
      if (rstdOut)
        rstdOut[row] = rstd;
    }
  }
}

/// Chunks of rows whose dweight/dbias partial sums the backward kernels keep
/// (fixed by `rows`, so the sums do not depend on the launch).
inline std::int64_t columnChunks(std::int64_t rows) {
  return rows < 1 ? 1 : (rows > 256 ? 256 : rows);
}

/// dx of each row and, per chunk of rows, partial column sums of dy * xhat
/// (partials[chunk][0][j]) and dy (partials[chunk][1][j]).
template <bool RMS, int W, typename T>
__global__ void normBackwardKernel(T *dx, float *partials, const T *dy, const T *x,
                                   const T *weight, const float *mean, const float *rstd,
                                   std::int64_t rows, std::int64_t n, std::int64_t perChunk) {
  const std::int64_t chunks = n / W, chunk = blockIdx.x;
  float *pw = partials ? partials + chunk * 2 * n : nullptr;
  float *pb = partials ? pw + n : nullptr;
  if (partials) {
    for (std::int64_t j = threadIdx.x; j < 2 * n; j += blockDim.x)
      pw[j] = 0.0f;
    __syncthreads(); // the rows below update the columns chunk by chunk
  }
  const std::int64_t end = min(rows, (chunk + 1) * perChunk);
  for (std::int64_t row = chunk * perChunk; row < end; ++row) {
    const T *xr = x + row * n, *dyr = dy + row * n;
    const float mu = RMS ? 0.0f : mean[row], rs = rstd[row];
    float gm = 0, gx = 0;
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W], d[W], w[W];
      loadChunk<W>(xr, c, 1, v);
      loadChunk<W>(dyr, c, 1, d);
      if (weight)
        loadChunk<W>(weight, c, 1, w);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        float g = weight ? d[k] * w[k] : d[k];
        gm += g;
        gx += g * (v[k] - mu) * rs;
      }
    }
    gm = RMS ? 0.0f : blockSum(gm) / float(n);
    gx = blockSum(gx) / float(n);
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W], d[W], w[W], out[W];
      loadChunk<W>(xr, c, 1, v);
      loadChunk<W>(dyr, c, 1, d);
      if (weight)
        loadChunk<W>(weight, c, 1, w);
#pragma unroll
      for (int k = 0; k < W; ++k) {
        float xhat = (v[k] - mu) * rs, g = weight ? d[k] * w[k] : d[k];
        out[k] = (g - gm - xhat * gx) * rs;
        if (partials) {
          // A thread's columns are the same for every row: it alone
          // updates them.
          std::int64_t j = indexOf<W>(c, k);
          pw[j] += d[k] * xhat;
          pb[j] += d[k];
        }
      }
      storeChunk<W>(dx + row * n, c, 1, out);
    }
  }
}

/// dweight[j] and dbias[j]: the chunks' partial sums added in chunk order.
template <typename T>
__global__ void combineColumnsKernel(T *dweight, T *dbias, const float *partials,
                                     std::int64_t chunks, std::int64_t n) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; j < n;
       j += std::int64_t(gridDim.x) * blockDim.x) {
    float w = 0, b = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      w += partials[c * 2 * n + j];
      b += partials[c * 2 * n + n + j];
    }
    if (dweight)
      dweight[j] = convert<T>(w);
    if (dbias)
      dbias[j] = convert<T>(b);
  }
}

template <bool RMS, typename T>
void launchNorm(cudaStream_t stream, T *y, float *mean, float *rstd, T *residual, const T *x,
                const T *b, const T *weight, const T *bias, std::int64_t rows, std::int64_t n,
                double eps) {
  if (rows == 0 || n == 0)
    return;
  constexpr int P = kPack<T>;
  if (n % P == 0 && aligned16(y) && aligned16(residual) && aligned16(x) && aligned16(b) &&
      aligned16(weight) && aligned16(bias))
    normKernel<RMS, P><<<blocksFor(rows), threadsFor(n / P), 0, stream>>>(
        y, mean, rstd, residual, x, b, weight, bias, rows, n, float(eps));
  else
    normKernel<RMS, 1><<<blocksFor(rows), threadsFor(n), 0, stream>>>(
        y, mean, rstd, residual, x, b, weight, bias, rows, n, float(eps));
  check(cudaGetLastError(), RMS ? "rms_norm kernel" : "layer_norm kernel");
}

template <bool RMS, typename T>
void launchNormBackward(cudaStream_t stream, T *dx, T *dweight, T *dbias, const T *dy,
                        const T *x, const T *weight, const float *mean, const float *rstd,
                        std::int64_t rows, std::int64_t n) {
  if (n == 0)
    return;
  const std::int64_t chunks = columnChunks(rows), perChunk = (rows + chunks - 1) / chunks;
  float *partials = nullptr;
  if (dweight || dbias)
    check(cudaMallocAsync(reinterpret_cast<void **>(&partials),
                          sizeof(float) * std::size_t(2 * chunks * n), stream),
          "norm backward scratch");
  constexpr int P = kPack<T>;
  if (n % P == 0 && aligned16(dx) && aligned16(dy) && aligned16(x) && aligned16(weight))
    normBackwardKernel<RMS, P><<<unsigned(chunks), threadsFor(n / P), 0, stream>>>(
        dx, partials, dy, x, weight, mean, rstd, rows, n, perChunk);
  else
    normBackwardKernel<RMS, 1><<<unsigned(chunks), threadsFor(n), 0, stream>>>(
        dx, partials, dy, x, weight, mean, rstd, rows, n, perChunk);
  check(cudaGetLastError(), "norm backward kernel");
  if (partials) {
    combineColumnsKernel<T><<<unsigned((n + 255) / 256), 256, 0, stream>>>(
        dweight, dbias, partials, chunks, n);
    check(cudaGetLastError(), "norm backward column kernel");
    check(cudaFreeAsync(partials, stream), "norm backward scratch");
  }
}

} // namespace detail

/// y = softmax(x) along the middle dimension of (outer, n, inner).
template <typename T>
void softmaxForward(cudaStream_t stream, const T *x, T *y, std::int64_t outer, std::int64_t n,
                    std::int64_t inner) {
  detail::launchSoftmax<false>(stream, y, x, outer, n, inner);
}

/// y = x - max - log(sum(exp(x - max))) along the middle dimension.
template <typename T>
void logSoftmaxForward(cudaStream_t stream, const T *x, T *y, std::int64_t outer,
                       std::int64_t n, std::int64_t inner) {
  detail::launchSoftmax<true>(stream, y, x, outer, n, inner);
}

/// dx = (dy - sum(dy * y)) * y from the softmax output y.
template <typename T>
void softmaxBackward(cudaStream_t stream, const T *y, const T *dy, T *dx, std::int64_t outer,
                     std::int64_t n, std::int64_t inner) {
  detail::launchSoftmaxBackward<false>(stream, dx, y, dy, outer, n, inner);
}

/// dx = dy - exp(y) * sum(dy) from the log-softmax output y.
template <typename T>
void logSoftmaxBackward(cudaStream_t stream, const T *y, const T *dy, T *dx,
                        std::int64_t outer, std::int64_t n, std::int64_t inner) {
  detail::launchSoftmaxBackward<true>(stream, dx, y, dy, outer, n, inner);
}

/// Layer norm of each row of x [rows, n]; weight, bias, mean, rstd may be
/// null (see the CPU form in dsc/kernels/Row.h).
template <typename T>
void layerNormForward(cudaStream_t stream, const T *x, const T *weight, const T *bias, T *y,
                      float *mean, float *rstd, std::int64_t rows, std::int64_t n,
                      double eps) {
  detail::launchNorm<false>(stream, y, mean, rstd, static_cast<T *>(nullptr), x,
                            static_cast<const T *>(nullptr), weight, bias, rows, n, eps);
}

/// residual = a + b (rounded to T), y = layerNorm(residual).
template <typename T>
void residualLayerNormForward(cudaStream_t stream, const T *a, const T *b, const T *weight,
                              const T *bias, T *residual, T *y, float *mean, float *rstd,
                              std::int64_t rows, std::int64_t n, double eps) {
  detail::launchNorm<false>(stream, y, mean, rstd, residual, a, b, weight, bias, rows, n, eps);
}

/// dx, dweight, dbias of layer norm from the saved mean and rstd.
template <typename T>
void layerNormBackward(cudaStream_t stream, const T *dy, const T *x, const T *weight,
                       const float *mean, const float *rstd, T *dx, T *dweight, T *dbias,
                       std::int64_t rows, std::int64_t n) {
  detail::launchNormBackward<false>(stream, dx, dweight, dbias, dy, x, weight, mean, rstd,
                                    rows, n);
}

/// y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps).
template <typename T>
void rmsNormForward(cudaStream_t stream, const T *x, const T *weight, T *y, float *rstd,
                    std::int64_t rows, std::int64_t n, double eps) {
  detail::launchNorm<true>(stream, y, static_cast<float *>(nullptr), rstd,
                           static_cast<T *>(nullptr), x, static_cast<const T *>(nullptr),
                           weight, static_cast<const T *>(nullptr), rows, n, eps);
}

/// dx and dweight of RMS norm from the saved rstd.
template <typename T>
void rmsNormBackward(cudaStream_t stream, const T *dy, const T *x, const T *weight,
                     const float *rstd, T *dx, T *dweight, std::int64_t rows, std::int64_t n) {
  detail::launchNormBackward<true>(stream, dx, dweight, static_cast<T *>(nullptr), dy, x,
                                   weight, static_cast<const float *>(nullptr), rstd, rows, n);
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_ROW_CUH
