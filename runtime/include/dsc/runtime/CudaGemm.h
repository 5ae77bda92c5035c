//===- CudaGemm.h - GEMM on the CUDA backend --------------------*- C++ -*-===//
//
// The CUDA backend's matrix product, with exactly the semantics of the CPU
// one (CpuGemm.h: the same GemmShape, row-major, transposes, batched with
// strides, a stride of 0 broadcasting an operand) over cuBLASLt, in fp32
// (CUBLAS_COMPUTE_32F: no TF32 rounding, so that results match the CPU
// target's within fp32 summation-order differences).
//
// How: cuBLASLt is column-major, and a row-major [r, c] matrix is the
// column-major [c, r] one, its transpose. So C = op(A) op(B) row-major is
// computed as the column-major C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our
// B and its "B" our A, with m and n swapped and each keeping its transpose
// flag. A batch is one strided-batch call (CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
// and _STRIDED_BATCH_OFFSET, offset 0 broadcasting), except when the output
// items overlap or a stride is negative, which cuBLASLt's strided batch does
// not define: then the items are issued one by one, in order, on the stream,
// which is what the CPU loop does.
//
// gemmBF16 and gemmF16 are the same product with bf16 or IEEE half
// operands and result (CUDA_R_16BF / CUDA_R_16F, the layouts of
// __nv_bfloat16 and __half), still accumulated in fp32 (CUBLAS_COMPUTE_32F,
// float alpha and beta), as the CPU versions compute.
//
// A cuBLASLt handle per device, a 32 MiB workspace per (device, stream) and
// the chosen algorithm per problem are cached for the life of the process.
//
// gemmEpilogue* are CpuGemm.h's epilogues on cuBLASLt's
// (CUBLASLT_MATMUL_DESC_EPILOGUE): bias, GELU (tanh), GELU with the
// pre-activation kept in aux, GELU's gradient from aux, and bias
// gradients. In the swapped column-major view a per-column bias of our
// row-major C is a per-row bias of cuBLASLt's D, and our op(A)'s sum over
// k is its B's: our BGradA is CUBLASLT_EPILOGUE_BGRADB, our BGradB its
// BGRADA. Vectors and aux have C's element type (cuBLASLt's default).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CUDAGEMM_H
#define DSC_RUNTIME_CUDAGEMM_H

#include "dsc/runtime/CpuGemm.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dsc::rt::cuda {

using GemmShape = cpu::GemmShape;
using cpu::gemmFlops;

/// C = alpha * op(A) @ op(B) + beta * C for every batch item, enqueued on
/// `stream` on the current device; A, B and C are device memory. Throws
/// dsc::rt::Error, before any CUDA call, for the shapes the CPU version
/// rejects, with the same messages ("gemm: negative size ...", "gemm:
/// batched product with a zero output stride"); an empty product (batch,
/// m or n zero) makes no CUDA call at all. With k == 0, C = beta * C (as
/// BLAS: beta == 0 writes zeros without reading C). CUDA and cuBLASLt
/// failures become Error naming the call and the status
/// ("gemm: cublasLtMatmul failed: CUBLAS_STATUS_...: ...").
void gemmF32(const GemmShape &shape, const float *a, const float *b, float *c,
             float alpha = 1.0f, float beta = 0.0f,
             cudaStream_t stream = nullptr);

/// gemmF32 over bf16 elements (2-byte words), computed in fp32.
void gemmBF16(const GemmShape &shape, const std::uint16_t *a,
              const std::uint16_t *b, std::uint16_t *c, float alpha = 1.0f,
              float beta = 0.0f, cudaStream_t stream = nullptr);

/// gemmF32 over IEEE half elements (2-byte words), computed in fp32.
void gemmF16(const GemmShape &shape, const std::uint16_t *a,
             const std::uint16_t *b, std::uint16_t *c, float alpha = 1.0f,
             float beta = 0.0f, cudaStream_t stream = nullptr);

/// gemmF32 followed by `epilogue` (CpuGemm.h), in one cuBLASLt call; bias,
/// aux and biasGrad are device memory. Throws Error, before any CUDA call,
/// where cpu::checkGemmEpilogue does, and "gemm: cuBLASLt has no algorithm
/// ..." where cuBLASLt supports no such epilogue for these layouts (its
/// aux wants auxLd a multiple of 8 and 16-byte aligned vectors).
void gemmEpilogueF32(const GemmShape &shape, const float *a, const float *b,
                     float *c, const cpu::GemmEpilogueArgs &epilogue,
                     float alpha = 1.0f, float beta = 0.0f,
                     cudaStream_t stream = nullptr);

/// gemmEpilogueF32 over bf16 operands, result and vectors.
void gemmEpilogueBF16(const GemmShape &shape, const std::uint16_t *a,
                      const std::uint16_t *b, std::uint16_t *c,
                      const cpu::GemmEpilogueArgs &epilogue, float alpha = 1.0f,
                      float beta = 0.0f, cudaStream_t stream = nullptr);

/// gemmEpilogueF32 over IEEE half operands, result and vectors.
void gemmEpilogueF16(const GemmShape &shape, const std::uint16_t *a,
                     const std::uint16_t *b, std::uint16_t *c,
                     const cpu::GemmEpilogueArgs &epilogue, float alpha = 1.0f,
                     float beta = 0.0f, cudaStream_t stream = nullptr);

/// Frees the cached handles and workspaces (all streams that used them must
/// be idle). Later calls create them again. Optional: at exit the process
/// lets the driver reclaim them.
void releaseGemmResources();

} // namespace dsc::rt::cuda

#endif // DSC_RUNTIME_CUDAGEMM_H
