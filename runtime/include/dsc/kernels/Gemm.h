//===- Gemm.h - matrix products for generated code, on the CPU --*- C++ -*-===//
//
// dsc.matmul and dsc.linear become one call each: a batched matmul is one
// strided-batched product (a batch stride of 0 broadcasts an operand), never
// a loop of products issued by generated code. The products are the
// runtime's (dsc/runtime/CpuGemm.h: OpenBLAS, fp32 accumulation for 16-bit
// operands).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_GEMM_H
#define DSC_KERNELS_GEMM_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels::cpu {

using GemmShape = dsc::rt::cpu::GemmShape;

/// C[i] = alpha * op(A[i]) @ op(B[i]) + beta * C[i] for every batch item i
/// of `shape` (its strides place the items).
inline void gemm(Queue, const GemmShape &shape, const float *a, const float *b,
                 float *c, float alpha, float beta) {
  dsc::rt::cpu::gemmF32(shape, a, b, c, alpha, beta);
}
inline void gemm(Queue, const GemmShape &shape, const dsc::rt::BFloat16 *a,
                 const dsc::rt::BFloat16 *b, dsc::rt::BFloat16 *c, float alpha,
                 float beta) {
  dsc::rt::cpu::gemmBF16(shape, a, b, c, alpha, beta);
}
inline void gemm(Queue, const GemmShape &shape, const dsc::rt::Half *a,
                 const dsc::rt::Half *b, dsc::rt::Half *c, float alpha, float beta) {
  dsc::rt::cpu::gemmF16(shape, a, b, c, alpha, beta);
}

/// y = x @ w^T (+ bias): x is [m, k], w [n, k], bias [n] or null, y [m, n]
/// (torch.nn.functional.linear). The bias is written into y first and the
/// product accumulated onto it, so y is rounded once from fp32 in 16-bit
/// types, as PyTorch's addmm.
void linear(Queue, const float *x, const float *w, const float *bias, float *y,
            int64_t m, int64_t n, int64_t k);
void linear(Queue, const dsc::rt::BFloat16 *x, const dsc::rt::BFloat16 *w,
            const dsc::rt::BFloat16 *bias, dsc::rt::BFloat16 *y, int64_t m,
            int64_t n, int64_t k);
void linear(Queue, const dsc::rt::Half *x, const dsc::rt::Half *w,
            const dsc::rt::Half *bias, dsc::rt::Half *y, int64_t m, int64_t n,
            int64_t k);

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_GEMM_H
