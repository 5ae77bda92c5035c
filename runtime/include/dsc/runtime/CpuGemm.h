//===- CpuGemm.h - GEMM on the CPU backend ----------------------*- C++ -*-===//
//
// The CPU backend's matrix product: row-major, optionally transposed
// operands, batched with strides (a stride of 0 broadcasts an operand over
// the batch, which is how dsc.matmul's batch broadcasting lowers). Each
// product is one OpenBLAS sgemm; OpenBLAS threads inside it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_CPUGEMM_H
#define DSC_RUNTIME_CPUGEMM_H

#include <cstdint>

namespace dsc::rt {
struct BFloat16; // Float16.h
struct Half;
} // namespace dsc::rt

namespace dsc::rt::cpu {

struct GemmShape {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  /// A is [m, k] row-major, or [k, m] when transA; B is [k, n], or [n, k]
  /// when transB; C is [m, n].
  bool transA = false, transB = false;
  /// Elements between consecutive batch items; 0 repeats the same matrix.
  int64_t strideA = 0, strideB = 0, strideC = 0;
};

/// Throws dsc::rt::Error for negative sizes, or a zero C stride with
/// batch > 1 (the items would overwrite each other). Every backend's GEMM
/// checks its shape with this, before touching memory.
void checkGemmShape(const GemmShape &shape);

/// C = alpha * op(A) @ op(B) + beta * C for every batch item. Throws
/// dsc::rt::Error for negative sizes, or a zero C stride with batch > 1
/// (the items would overwrite each other).
void gemmF32(const GemmShape &shape, const float *a, const float *b, float *c,
             float alpha = 1.0f, float beta = 0.0f);

/// gemmF32 for bf16 operands and result, computed in fp32 (see above).
void gemmBF16(const GemmShape &shape, const BFloat16 *a, const BFloat16 *b,
              BFloat16 *c, float alpha = 1.0f, float beta = 0.0f);

/// gemmF32 for IEEE half operands and result, computed in fp32.
void gemmF16(const GemmShape &shape, const Half *a, const Half *b, Half *c,
             float alpha = 1.0f, float beta = 0.0f);

/// 2 * batch * m * n * k: the flop count of gemmF32, for throughput figures.
double gemmFlops(const GemmShape &shape);

} // namespace dsc::rt::cpu

#endif // DSC_RUNTIME_CPUGEMM_H
