//===- RowF64.cuh - softmax, layer norm and cross-entropy of f64 rows -*- C++ -*-===//
//
// The CUDA form of dsc/kernels/RowF64.h: the same functions and arguments
// (the cross-entropy takes the IndexFault record that generated code adds),
// with a cudaStream_t as the queue. One thread block of kThreads threads per
// row; each thread strides over the row keeping its own partial, and the
// partials combine with warp shuffles and one shared-memory step, a fixed
// tree: deterministic. Everything in double (exp, log), as on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_ROWF64_CUH
#define DSC_KERNELS_CUDA_ROWF64_CUH

#include "dsc/kernels/cuda/Elements.cuh"
#include "dsc/kernels/cuda/IndexFault.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace dsc::kernels::cuda {
namespace rowf64 {

constexpr int kThreads = 256;

/// The sum (Max = false) or maximum (Max = true) of every thread's `v`,
/// returned to all threads of the block.
template <bool Max> __device__ double blockReduce(double v) {
  __shared__ double partial[kThreads / 32];
  __shared__ double result;
  auto combine = [](double a, double b) { return Max ? fmax(a, b) : a + b; };
  for (int offset = 16; offset > 0; offset >>= 1)
    v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? partial[lane] : (Max ? -INFINITY : 0.0);
    for (int offset = 16; offset > 0; offset >>= 1)
      v = combine(v, __shfl_down_sync(0xffffffffu, v, offset));
    if (lane == 0)
      result = v;
  }
  __syncthreads();
  const double total = result;
  __syncthreads(); // the shared words are reused by the next call
  return total;
}

/// Rows (o, q) of (outer, n, inner), element j at o*n*inner + j*inner + q.
template <bool Log>
__global__ void softmaxKernel(double *y, const double *x, std::int64_t lines, std::int64_t n,
                              std::int64_t inner) {
  for (std::int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
    const std::int64_t offset = line / inner * n * inner + line % inner;
    const double *xl = x + offset;
    double *yl = y + offset;
    double m = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
      m = fmax(m, xl[j * inner]);
    m = blockReduce<true>(m);
    double s = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s += exp(xl[j * inner] - m);
    s = blockReduce<false>(s);
    const double lse = log(s);
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
      yl[j * inner] = Log ? xl[j * inner] - m - lse : exp(xl[j * inner] - m) / s;
  }
}

// Templates (instantiated for double only), so that a step split into
// several units can include this header in each.
template <typename T>
__global__ void layerNormKernel(T *y, float *mean, float *rstd, const T *x, const T *weight,
                                const T *bias, std::int64_t rows, std::int64_t n, double eps) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const double *xr = x + r * n;
    double s = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
      s += xr[j];
    const double mu = blockReduce<false>(s) / double(n);
    double v = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
      v += (xr[j] - mu) * (xr[j] - mu);
    const double rs = 1.0 / sqrt(blockReduce<false>(v) / double(n) + eps);
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double out = (xr[j] - mu) * rs;
      if (weight)
        out *= weight[j];
      if (bias)
        out += bias[j];
      y[r * n + j] = out;
    }
    if (threadIdx.x == 0 && mean)
      mean[r] = float(mu);
    if (threadIdx.x == 0 && rstd)
      rstd[r] = float(rs);
  }
}

template <typename T>
__global__ void crossEntropyKernel(T *loss, const T *logits,
                                   const std::int64_t *targets, std::int64_t rows,
                                   std::int64_t classes, std::int64_t ignoreIndex,
                                   IndexFault *fault) {
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t t = targets[r];
    if (t == ignoreIndex) {
      if (threadIdx.x == 0)
        loss[r] = 0;
      continue;
    }
    if (t < 0 || t >= classes) {
      if (threadIdx.x == 0)
        recordIndexFault(fault, "dsc.cross_entropy", t, classes);
      continue;
    }
    const double *xr = logits + r * classes;
    double m = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      m = fmax(m, xr[j]);
    m = blockReduce<true>(m);
    double s = 0;
    for (std::int64_t j = threadIdx.x; j < classes; j += blockDim.x)
      s += exp(xr[j] - m);
    s = blockReduce<false>(s);
    if (threadIdx.x == 0)
      loss[r] = m + log(s) - xr[t];
  }
}

} // namespace rowf64

inline void softmaxForward(cudaStream_t stream, const double *x, double *y, std::int64_t outer,
                           std::int64_t n, std::int64_t inner) {
  if (outer * inner == 0 || n == 0)
    return;
  rowf64::softmaxKernel<false><<<blocksFor(outer * inner), rowf64::kThreads, 0, stream>>>(
      y, x, outer * inner, n, inner);
  check(cudaGetLastError(), "f64 softmax kernel");
}

inline void logSoftmaxForward(cudaStream_t stream, const double *x, double *y,
                              std::int64_t outer, std::int64_t n, std::int64_t inner) {
  if (outer * inner == 0 || n == 0)
    return;
  rowf64::softmaxKernel<true><<<blocksFor(outer * inner), rowf64::kThreads, 0, stream>>>(
      y, x, outer * inner, n, inner);
  check(cudaGetLastError(), "f64 log_softmax kernel");
}

inline void layerNormForward(cudaStream_t stream, const double *x, const double *weight,
                             const double *bias, double *y, float *mean, float *rstd,
                             std::int64_t rows, std::int64_t n, double eps) {
  if (rows == 0 || n == 0)
    return;
  rowf64::layerNormKernel<double><<<blocksFor(rows), rowf64::kThreads, 0, stream>>>(
      y, mean, rstd, x, weight, bias, rows, n, eps);
  check(cudaGetLastError(), "f64 layer_norm kernel");
}

inline void crossEntropyForward(cudaStream_t stream, const double *logits,
                                const std::int64_t *targets, double *loss, std::int64_t rows,
                                std::int64_t classes, std::int64_t ignoreIndex,
                                IndexFault *fault) {
  if (rows == 0)
    return;
  rowf64::crossEntropyKernel<double><<<blocksFor(rows), rowf64::kThreads, 0, stream>>>(
      loss, logits, targets, rows, classes, ignoreIndex, fault);
  check(cudaGetLastError(), "f64 cross_entropy kernel");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_ROWF64_CUH
