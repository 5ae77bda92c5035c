//===- Gemm.cuh - strided-batched GEMM in the kernel library, CUDA -*- C++ -*-===//
//
// The CUDA side of Gemm.h: the same batchedGemm calls, cudaStream_t first,
// over the runtime's cuBLASLt GEMM (CudaGemm.h: one strided-batch
// cuBLASLt call per batch, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT and
// STRIDED_BATCH_OFFSET, offset 0 broadcasting; epilogues as cuBLASLt's).
// Header-only wrappers: the GEMMs are compiled once, in dsc_runtime_cuda.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_GEMM_CUH
#define DSC_KERNELS_CUDA_GEMM_CUH

#include "dsc/runtime/CudaGemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <string>
#include <stdexcept>

#include <cstdint>

namespace dsc::kernels {
using rt::cpu::GemmEpilogue;
using rt::cpu::GemmEpilogueArgs;
using rt::cpu::GemmShape;
} // namespace dsc::kernels

namespace dsc::kernels::cuda {

// What generated code names as dsc_kernels::GemmShape.
using dsc::kernels::GemmShape;

inline void batchedGemm(cudaStream_t stream, const GemmShape &shape,
                        const float *a, const float *b, float *c,
                        float alpha = 1.0f, float beta = 0.0f,
                        const GemmEpilogueArgs &epilogue = {}) {
  if (epilogue.kind == GemmEpilogue::None)
    rt::cuda::gemmF32(shape, a, b, c, alpha, beta, stream);
  else
    rt::cuda::gemmEpilogueF32(shape, a, b, c, epilogue, alpha, beta, stream);
}

inline void batchedGemm(cudaStream_t stream, const GemmShape &shape,
                        const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                        __nv_bfloat16 *c, float alpha = 1.0f, float beta = 0.0f,
                        const GemmEpilogueArgs &epilogue = {}) {
  auto *wa = reinterpret_cast<const std::uint16_t *>(a);
  auto *wb = reinterpret_cast<const std::uint16_t *>(b);
  auto *wc = reinterpret_cast<std::uint16_t *>(c);
  if (epilogue.kind == GemmEpilogue::None)
    rt::cuda::gemmBF16(shape, wa, wb, wc, alpha, beta, stream);
  else
    rt::cuda::gemmEpilogueBF16(shape, wa, wb, wc, epilogue, alpha, beta, stream);
}

inline void batchedGemm(cudaStream_t stream, const GemmShape &shape,
                        const __half *a, const __half *b, __half *c,
                        float alpha = 1.0f, float beta = 0.0f,
                        const GemmEpilogueArgs &epilogue = {}) {
  auto *wa = reinterpret_cast<const std::uint16_t *>(a);
  auto *wb = reinterpret_cast<const std::uint16_t *>(b);
  auto *wc = reinterpret_cast<std::uint16_t *>(c);
  if (epilogue.kind == GemmEpilogue::None)
    rt::cuda::gemmF16(shape, wa, wb, wc, alpha, beta, stream);
  else
    rt::cuda::gemmEpilogueF16(shape, wa, wb, wc, epilogue, alpha, beta, stream);
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
  batchedGemm(stream, s, x, w, y, 1.0f, beta);
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_GEMM_CUH
