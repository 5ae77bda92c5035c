//===- Gemm.cuh - matrix products for generated code, on CUDA ---*- C++ -*-===//
//
// The CUDA counterpart of dsc/kernels/Gemm.h, over the runtime's cuBLASLt
// products (dsc/runtime/CudaGemm.h): one strided-batched call per
// dsc.matmul, and dsc.linear with its bias.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_GEMM_CUH
#define DSC_KERNELS_CUDA_GEMM_CUH

#include "dsc/runtime/CudaGemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {

using GemmShape = dsc::rt::cuda::GemmShape;

/// C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i] for every batch item i
/// of `shape` (its strides place the items), on `stream`.
inline void gemm(cudaStream_t stream, const GemmShape &shape, const float *a,
                 const float *b, float *c, float alpha, float beta) {
  dsc::rt::cuda::gemmF32(shape, a, b, c, alpha, beta, stream);
}
inline void gemm(cudaStream_t stream, const GemmShape &shape, const __nv_bfloat16 *a,
                 const __nv_bfloat16 *b, __nv_bfloat16 *c, float alpha, float beta) {
  dsc::rt::cuda::gemmBF16(shape, reinterpret_cast<const std::uint16_t *>(a),
                          reinterpret_cast<const std::uint16_t *>(b),
                          reinterpret_cast<std::uint16_t *>(c), alpha, beta, stream);
}
inline void gemm(cudaStream_t stream, const GemmShape &shape, const __half *a,
                 const __half *b, __half *c, float alpha, float beta) {
  dsc::rt::cuda::gemmF16(shape, reinterpret_cast<const std::uint16_t *>(a),
                         reinterpret_cast<const std::uint16_t *>(b),
                         reinterpret_cast<std::uint16_t *>(c), alpha, beta, stream);
}

namespace detail {
template <typename T>
__global__ void broadcastRows(const T *__restrict bias, T *__restrict y,
                              int64_t m, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m * n;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = bias[i % n];
}
} // namespace detail

/// y = x @ w^T (+ bias): x is [m, k], w [n, k], bias [n] or null, y [m, n];
/// the bias is written into y and the product accumulated onto it, as on
/// the CPU (dsc/kernels/Gemm.h).
template <typename T>
void linear(cudaStream_t stream, const T *x, const T *w, const T *bias, T *y,
            int64_t m, int64_t n, int64_t k) {
  float beta = 0.0f;
  if (bias) {
    int64_t blocks = (m * n + 255) / 256;
    detail::broadcastRows<<<unsigned(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks)),
                            256, 0, stream>>>(bias, y, m, n);
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
      throw std::runtime_error(std::string("linear: bias kernel launch failed: ") +
                               cudaGetErrorString(status));
    beta = 1.0f;
  }
  GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.transB = true;
  gemm(stream, s, x, w, y, 1.0f, beta);
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_GEMM_CUH
