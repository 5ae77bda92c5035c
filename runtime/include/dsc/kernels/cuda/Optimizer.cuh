//===- Optimizer.cuh - multi-tensor optimizer update, CUDA ------*- C++ -*-===//
//
// The CUDA versions of Optimizer.h's kernels, with the same names, tables
// (OptimizerTable.h) and arguments, cudaStream_t first. Header-only: the
// generated step.cu includes it and nvcc compiles it there.
//
// One launch per call, whatever the number of tensors: the grid is the
// table's chunks, each block finds its tensor by a binary search over
// firstChunk (log2 of the tensor count of cached loads) and walks its
// chunk with 128-bit loads when the tensor's arrays are aligned for them
// (the chunk size keeps every chunk as aligned as its tensor), 32-bit or
// 16-bit ones otherwise. The table and every scalar of OptimizerStep live
// in device memory: the call never synchronises with the host, so a CUDA
// graph can capture it (the table is built once, with assignChunks on the
// host, and copied to the device).
//
// Arithmetic: the CPU kernels' operations in the same order, each an
// explicitly rounded intrinsic (__fmul_rn, __fadd_rn, ...) so that nvcc
// contracts nothing into an FMA; given the same bias corrections, every
// element is the CPU's bit for bit. The bias corrections use the device's
// powf, as the pass's emitted CUDA code does; it may differ from the host
// libm's by an ulp for some steps.
//
// The sum of squares is two launches: one block per chunk (double
// accumulators, a fixed shuffle tree), then one block in which a warp per
// tensor sums its chunks' partials in a fixed tree, rounds to float, and
// one thread adds the tensors' floats in table order, the pass's formula.
// Deterministic, and within an ulp of the CPU's per tensor.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_OPTIMIZER_CUH
#define DSC_KERNELS_CUDA_OPTIMIZER_CUH

#include "dsc/kernels/OptimizerTable.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {

namespace detail {

constexpr int kThreads = 256;
/// The most blocks of one launch: larger tables loop over their chunks.
constexpr int64_t kMaxBlocks = 1 << 30;

inline void checkLaunch(const char *what) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": kernel launch failed: " +
                             cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
}

inline void checkArguments(const char *what, const void *table, int64_t count,
                           int64_t chunks) {
  if (count < 0 || chunks < 0 || (chunks > 0 && (!table || count == 0)))
    throw std::invalid_argument(std::string(what) + ": no table of " +
                                std::to_string(count) + " tensors and " +
                                std::to_string(chunks) + " chunks");
}

inline unsigned gridFor(int64_t chunks) {
  return unsigned(chunks < kMaxBlocks ? chunks : kMaxBlocks);
}

__device__ inline float toFloat(float x) { return x; }
__device__ inline float toFloat(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline float toFloat(__half x) { return __half2float(x); }

template <typename T> __device__ T fromFloat(float x);
template <> __device__ inline float fromFloat<float>(float x) { return x; }
template <> __device__ inline __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ inline __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}

/// Four consecutive elements of `p` (aligned to 4 elements) as floats.
template <typename T> __device__ inline void load4(const T *p, float out[4]) {
  if constexpr (sizeof(T) == 4) {
    const float4 v = *reinterpret_cast<const float4 *>(p);
    out[0] = toFloat(v.x), out[1] = toFloat(v.y), out[2] = toFloat(v.z),
    out[3] = toFloat(v.w);
  } else {
    const uint2 raw = *reinterpret_cast<const uint2 *>(p);
    T v[4];
    memcpy(v, &raw, sizeof raw);
    for (int k = 0; k < 4; ++k)
      out[k] = toFloat(v[k]);
  }
}

template <typename T> __device__ inline void store4(T *p, const float in[4]) {
  if constexpr (sizeof(T) == 4) {
    *reinterpret_cast<float4 *>(p) = make_float4(in[0], in[1], in[2], in[3]);
  } else {
    T v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = fromFloat<T>(in[k]);
    uint2 raw;
    memcpy(&raw, v, sizeof raw);
    *reinterpret_cast<uint2 *>(p) = raw;
  }
}

/// Whether `p` (of 4-element groups of T) allows load4/store4; null does.
template <typename T> __device__ inline bool aligned4(const T *p) {
  return (reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T))) == 0;
}

/// g = float(grad) * unscale * clipCoef, the factors that are given.
struct GradFactors {
  bool hasUnscale, hasClip;
  float unscale, clipCoef;
  __device__ explicit GradFactors(const OptimizerStep &s)
      : hasUnscale(s.unscale), hasClip(s.clipCoef),
        unscale(s.unscale ? *s.unscale : 1.0f),
        clipCoef(s.clipCoef ? *s.clipCoef : 1.0f) {}
  __device__ float apply(float g) const {
    if (hasUnscale)
      g = __fmul_rn(g, unscale);
    if (hasClip)
      g = __fmul_rn(g, clipCoef);
    return g;
  }
};

/// [begin, end) of `chunk` in its tensor.
__device__ inline void chunkRange(int64_t chunk, int64_t first, int64_t numel,
                                  int64_t &begin, int64_t &end) {
  begin = (chunk - first) * kOptimizerChunk;
  end = begin + kOptimizerChunk < numel ? begin + kOptimizerChunk : numel;
}

/// Adam's per-call scalars, from the step's device values.
struct AdamScalars {
  float stepSize, correction2Sqrt, decayFactor;
  bool decay, l2;
  __device__ AdamScalars(const AdamConfig &c, const OptimizerStep &s) {
    const float lr = *s.lr, t = *s.step;
    stepSize = __fdiv_rn(lr, __fsub_rn(1.0f, powf(c.beta1, t)));
    correction2Sqrt = __fsqrt_rn(__fsub_rn(1.0f, powf(c.beta2, t)));
    decayFactor = c.constantDecay
                      ? c.decayFactor
                      : __fsub_rn(1.0f, __fmul_rn(lr, c.weightDecay));
    decay = c.decoupled && c.weightDecay != 0;
    l2 = !c.decoupled && c.weightDecay != 0;
  }
};

/// One element of Adam/AdamW (Optimizer.h's formulas and order).
__device__ inline void adamElement(const AdamConfig &c, const AdamScalars &k,
                                   float g, float &p, float &m, float &v) {
  if (k.decay)
    p = __fmul_rn(p, k.decayFactor);
  if (k.l2)
    g = __fadd_rn(g, __fmul_rn(p, c.weightDecay));
  m = __fadd_rn(__fmul_rn(m, c.beta1), __fmul_rn(g, c.oneMinusBeta1));
  v = __fadd_rn(__fmul_rn(v, c.beta2),
                __fmul_rn(__fmul_rn(g, g), c.oneMinusBeta2));
  const float denom =
      __fadd_rn(__fdiv_rn(__fsqrt_rn(v), k.correction2Sqrt), c.eps);
  p = __fsub_rn(p, __fmul_rn(__fdiv_rn(m, denom), k.stepSize));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    adamKernel(const AdamTensor<T> *table, int64_t count, int64_t chunks,
               AdamConfig c, OptimizerStep s) {
  if (s.skip && *s.skip)
    return;
  const GradFactors factors(s);
  const AdamScalars k(c, s);
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const AdamTensor<T> e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    int64_t i = begin + 4 * int64_t(threadIdx.x);
    const bool vectors = aligned4(e.param) && aligned4(e.expAvg) &&
                         aligned4(e.expAvgSq) && aligned4(e.grad) &&
                         aligned4(e.copy);
    if (vectors) {
      for (; i + 4 <= end; i += 4 * kThreads) {
        float g[4], p[4], m[4], v[4];
        load4(e.grad + i, g);
        load4(e.param + i, p);
        load4(e.expAvg + i, m);
        load4(e.expAvgSq + i, v);
        for (int q = 0; q < 4; ++q)
          adamElement(c, k, factors.apply(g[q]), p[q], m[q], v[q]);
        store4(e.param + i, p);
        store4(e.expAvg + i, m);
        store4(e.expAvgSq + i, v);
        if (e.copy)
          store4(e.copy + i, p);
      }
      // The tail of fewer than 4 elements: the thread whose group it is.
      if (i >= end)
        continue;
    } else {
      i = begin + threadIdx.x;
    }
    const int64_t stride = vectors ? 1 : kThreads;
    for (; i < end; i += stride) {
      float p = e.param[i], m = e.expAvg[i], v = e.expAvgSq[i];
      adamElement(c, k, factors.apply(toFloat(e.grad[i])), p, m, v);
      e.param[i] = p, e.expAvg[i] = m, e.expAvgSq[i] = v;
      if (e.copy)
        e.copy[i] = fromFloat<T>(p);
    }
  }
}

/// One element of SGD (Optimizer.h's formulas and order).
__device__ inline void sgdElement(const SgdConfig &c, float lr, float g,
                                  float &p, float *buf) {
  if (c.weightDecay != 0)
    g = __fadd_rn(g, __fmul_rn(p, c.weightDecay));
  if (c.momentum != 0) {
    g = __fadd_rn(__fmul_rn(*buf, c.momentum), g);
    *buf = g;
  }
  p = __fsub_rn(p, __fmul_rn(g, lr));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    sgdKernel(const SgdTensor<T> *table, int64_t count, int64_t chunks,
              SgdConfig c, OptimizerStep s) {
  if (s.skip && *s.skip)
    return;
  const GradFactors factors(s);
  const float lr = *s.lr;
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const SgdTensor<T> e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    const bool vectors = aligned4(e.param) && aligned4(e.grad) &&
                         aligned4(e.copy) &&
                         (c.momentum == 0 || aligned4(e.momentumBuffer));
    int64_t i = begin + 4 * int64_t(threadIdx.x);
    if (vectors) {
      for (; i + 4 <= end; i += 4 * kThreads) {
        float g[4], p[4], b[4];
        load4(e.grad + i, g);
        load4(e.param + i, p);
        if (c.momentum != 0)
          load4(e.momentumBuffer + i, b);
        for (int q = 0; q < 4; ++q)
          sgdElement(c, lr, factors.apply(g[q]), p[q], &b[q]);
        store4(e.param + i, p);
        if (c.momentum != 0)
          store4(e.momentumBuffer + i, b);
        if (e.copy)
          store4(e.copy + i, p);
      }
      if (i >= end)
        continue;
    } else {
      i = begin + threadIdx.x;
    }
    const int64_t stride = vectors ? 1 : kThreads;
    for (; i < end; i += stride) {
      float p = e.param[i];
      sgdElement(c, lr, factors.apply(toFloat(e.grad[i])), p,
                 c.momentum != 0 ? e.momentumBuffer + i : nullptr);
      e.param[i] = p;
      if (e.copy)
        e.copy[i] = fromFloat<T>(p);
    }
  }
}

/// The sum over the block of each thread's `x`, in a fixed order: a
/// shuffle tree per warp, then warp 0 over the warps' sums. Thread 0 has
/// the result.
__device__ inline double blockSum(double x) {
  __shared__ double warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    x += __shfl_down_sync(0xFFFFFFFFu, x, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    warps[warp] = x;
  __syncthreads();
  x = threadIdx.x < kThreads / 32 ? warps[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int offset = kThreads / 64; offset > 0; offset /= 2)
      x += __shfl_down_sync(0xFFFFFFFFu, x, offset);
  __syncthreads(); // `warps` is reused by the next call
  return x;
}

template <typename Entry>
__global__ void __launch_bounds__(kThreads)
    sumSquaresChunks(const Entry *table, int64_t count, int64_t chunks,
                     const float *scale, double *partial) {
  const bool scaled = scale;
  const float factor = scale ? *scale : 1.0f;
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const Entry e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    double acc = 0;
    int64_t i = begin + threadIdx.x;
    int64_t stride = kThreads;
    if (aligned4(e.grad)) {
      for (i = begin + 4 * int64_t(threadIdx.x); i + 4 <= end;
           i += 4 * kThreads) {
        float x[4];
        load4(e.grad + i, x);
        for (int q = 0; q < 4; ++q) {
          const float y = scaled ? __fmul_rn(x[q], factor) : x[q];
          acc += double(__fmul_rn(y, y));
        }
      }
      stride = 1; // the tail, if any, belongs to this thread's group
      if (i > end)
        i = end;
    }
    for (; i < end; i += stride) {
      float y = toFloat(e.grad[i]);
      if (scaled)
        y = __fmul_rn(y, factor);
      acc += double(__fmul_rn(y, y));
    }
    acc = blockSum(acc);
    if (threadIdx.x == 0)
      partial[chunk] = acc;
  }
}

constexpr int kCombineThreads = 1024;

template <typename Entry>
__global__ void __launch_bounds__(kCombineThreads)
    sumSquaresTensors(const Entry *table, int64_t count, const double *partial,
                      float *tensorSums, float *perTensor, float *total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t t = warp; t < count; t += kCombineThreads / 32) {
    const int64_t first = table[t].firstChunk, n = chunksOf(table[t].numel);
    double acc = 0;
    for (int64_t k = lane; k < n; k += 32)
      acc += partial[first + k];
    for (int offset = 16; offset > 0; offset /= 2)
      acc += __shfl_down_sync(0xFFFFFFFFu, acc, offset);
    if (lane == 0) {
      tensorSums[t] = float(acc);
      if (perTensor)
        perTensor[t] = float(acc);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // The pass's formula: the tensors' float sums added in table order.
    float sum = 0.0f;
    for (int64_t t = 0; t < count; ++t)
      sum = t == 0 ? tensorSums[t] : __fadd_rn(sum, tensorSums[t]);
    *total = sum;
  }
}

template <typename Entry>
__global__ void __launch_bounds__(kThreads)
    nonFiniteKernel(const Entry *table, int64_t count, int64_t chunks,
                    std::uint8_t *found) {
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const Entry e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    int bad = 0;
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads)
      bad |= int(!isfinite(toFloat(e.grad[i])));
    if (__syncthreads_or(bad) && threadIdx.x == 0)
      *found = 1; // every writer writes 1: no race on the value
  }
}

} // namespace detail

/// Adam/AdamW over every tensor of `table` (device memory, numbered by
/// assignChunks, `chunks` chunks), as the CPU adamUpdate; T is float,
/// __nv_bfloat16 or __half. Scalars of `step` are device pointers.
template <typename T>
void adamUpdate(cudaStream_t stream, const AdamTensor<T> *table, int64_t count,
                int64_t chunks, const AdamConfig &config,
                const OptimizerStep &step) {
  detail::checkArguments("adamUpdate", table, count, chunks);
  if (!step.lr || !step.step)
    throw std::invalid_argument("adamUpdate: the step needs lr and step");
  if (chunks == 0)
    return;
  detail::adamKernel<T><<<detail::gridFor(chunks), detail::kThreads, 0,
                          stream>>>(table, count, chunks, config, step);
  detail::checkLaunch("adamUpdate");
}

/// SGD with momentum, as the CPU sgdUpdate.
template <typename T>
void sgdUpdate(cudaStream_t stream, const SgdTensor<T> *table, int64_t count,
               int64_t chunks, const SgdConfig &config,
               const OptimizerStep &step) {
  detail::checkArguments("sgdUpdate", table, count, chunks);
  if (!step.lr)
    throw std::invalid_argument("sgdUpdate: the step needs lr");
  if (chunks == 0)
    return;
  detail::sgdKernel<T><<<detail::gridFor(chunks), detail::kThreads, 0,
                         stream>>>(table, count, chunks, config, step);
  detail::checkLaunch("sgdUpdate");
}

/// The sum of squares of every gradient, as the CPU
/// multiTensorSumSquares; total, perTensor (optional), scale (optional)
/// and workspace (sumSquaresWorkspaceBytes(count, chunks) bytes, 16-byte
/// aligned) are device memory.
template <typename Entry>
void multiTensorSumSquares(cudaStream_t stream, const Entry *table,
                           int64_t count, int64_t chunks, const float *scale,
                           float *total, float *perTensor, void *workspace) {
  detail::checkArguments("multiTensorSumSquares", table, count, chunks);
  if (!total || !workspace)
    throw std::invalid_argument(
        "multiTensorSumSquares: no total or no workspace");
  double *partial = static_cast<double *>(workspace);
  float *tensorSums = reinterpret_cast<float *>(
      static_cast<char *>(workspace) +
      (std::size_t(chunks) * sizeof(double) + 15) / 16 * 16);
  if (chunks > 0) {
    detail::sumSquaresChunks<Entry><<<detail::gridFor(chunks), detail::kThreads,
                                      0, stream>>>(table, count, chunks, scale,
                                                   partial);
    detail::checkLaunch("multiTensorSumSquares");
  }
  detail::sumSquaresTensors<Entry><<<1, detail::kCombineThreads, 0, stream>>>(
      table, count, partial, tensorSums, perTensor, total);
  detail::checkLaunch("multiTensorSumSquares");
}

/// *found (device) = 1 when some gradient holds an inf or a NaN, else 0.
template <typename Entry>
void multiTensorNonFinite(cudaStream_t stream, const Entry *table,
                          int64_t count, int64_t chunks, std::uint8_t *found) {
  detail::checkArguments("multiTensorNonFinite", table, count, chunks);
  if (!found)
    throw std::invalid_argument("multiTensorNonFinite: no result");
  cudaError_t status = cudaMemsetAsync(found, 0, 1, stream);
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("multiTensorNonFinite: ") +
                             cudaGetErrorString(status));
  if (chunks == 0)
    return;
  detail::nonFiniteKernel<Entry><<<detail::gridFor(chunks), detail::kThreads,
                                   0, stream>>>(table, count, chunks, found);
  detail::checkLaunch("multiTensorNonFinite");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_OPTIMIZER_CUH
