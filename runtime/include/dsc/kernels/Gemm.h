//===- Gemm.h - strided-batched GEMM in the kernel library, CPU --*- C++ -*-===//
//
// The kernel library's GEMM family: the runtime's GEMM (CpuGemm.h: row-major,
// transposes, batch strides with 0 broadcasting, 16-bit operands computed
// in fp32, cuBLASLt-style epilogues) under the library's calling
// convention (queue first, one name for every element type), so that the
// emitter writes the same call on both targets (cuda/Gemm.cuh). Not
// templates: the runtime compiles the GEMMs once.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_GEMM_H
#define DSC_KERNELS_GEMM_H

#include "dsc/kernels/Queue.h"
#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Float16.h"

#include <cstdint>

namespace dsc::kernels {
using rt::cpu::GemmEpilogue;
using rt::cpu::GemmEpilogueArgs;
using rt::cpu::GemmShape;
} // namespace dsc::kernels

namespace dsc::kernels::cpu {

using dsc::kernels::GemmShape;

/// C = epilogue(alpha * op(A) @ op(B) + beta * C) for every item of the
/// strided batch, in one call (CpuGemm.h says how a batch is spread over
/// threads). An epilogue other than None needs shape.batch == 1.
inline void batchedGemm(Queue, const GemmShape &shape, const float *a,
                        const float *b, float *c, float alpha = 1.0f,
                        float beta = 0.0f, const GemmEpilogueArgs &epilogue = {}) {
  if (epilogue.kind == GemmEpilogue::None)
    rt::cpu::gemmF32(shape, a, b, c, alpha, beta);
  else
    rt::cpu::gemmEpilogueF32(shape, a, b, c, epilogue, alpha, beta);
}

inline void batchedGemm(Queue, const GemmShape &shape, const rt::BFloat16 *a,
                        const rt::BFloat16 *b, rt::BFloat16 *c,
                        float alpha = 1.0f, float beta = 0.0f,
                        const GemmEpilogueArgs &epilogue = {}) {
  if (epilogue.kind == GemmEpilogue::None)
    rt::cpu::gemmBF16(shape, a, b, c, alpha, beta);
  else
    rt::cpu::gemmEpilogueBF16(shape, a, b, c, epilogue, alpha, beta);
}

inline void batchedGemm(Queue, const GemmShape &shape, const rt::Half *a,
                        const rt::Half *b, rt::Half *c, float alpha = 1.0f,
                        float beta = 0.0f, const GemmEpilogueArgs &epilogue = {}) {
  if (epilogue.kind == GemmEpilogue::None)
    rt::cpu::gemmF16(shape, a, b, c, alpha, beta);
  else
    rt::cpu::gemmEpilogueF16(shape, a, b, c, epilogue, alpha, beta);
}

/// y = x @ w^T (+ bias): x is [m, k], w [n, k], bias [n] or null, y [m, n]
/// (torch.nn.functional.linear), what generated code calls for dsc.linear.
/// The bias is written into y first and the product accumulated onto it
/// (beta = 1), so y is rounded once from fp32 in 16-bit types, as
/// PyTorch's addmm.
void linear(Queue, const float *x, const float *w, const float *bias, float *y,
            int64_t m, int64_t n, int64_t k);
void linear(Queue, const rt::BFloat16 *x, const rt::BFloat16 *w,
            const rt::BFloat16 *bias, rt::BFloat16 *y, int64_t m, int64_t n,
            int64_t k);
void linear(Queue, const rt::Half *x, const rt::Half *w, const rt::Half *bias,
            rt::Half *y, int64_t m, int64_t n, int64_t k);

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_GEMM_H
