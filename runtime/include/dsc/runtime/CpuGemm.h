//===- CpuGemm.h - GEMM on the CPU backend ----------------------*- C++ -*-===//
//
// The CPU backend's matrix product: row-major, optionally transposed
// operands, batched with strides (a stride of 0 broadcasts an operand over
// the batch, which is how dsc.matmul's batch broadcasting lowers). Each
// product is OpenBLAS sgemm on OpenMP's threads. A batch is one call: its
// items run in an OpenMP-parallel loop, or one after the other, each split
// over the threads (see gemmF32). OpenBLAS 0.3.21 has no batched
// call (cblas_sgemm_batch came in 0.3.27), so this is the batch.
//
// The epilogue variants (gemmEpilogue*) apply what cuBLASLt's epilogues
// apply to the product (bias, tanh-GELU, the GELU input kept for the
// backward, GELU's gradient, bias gradients), so that both targets offer
// the same calls; CudaGemm.h maps them onto cuBLASLt's.
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
///
/// Threads: OpenBLAS runs on the calling thread only (one pool of threads,
/// OpenMP's, not two competing for the cores). The items of a batch are
/// spread over OpenMP threads, one sgemm each, when the batch has at least
/// as many items as threads or each item is small (m * n * k <= 262,144);
/// otherwise (few large items) they are issued in order, each split into
/// blocks of C's columns or rows on the threads. Items whose outputs
/// overlap (|strideC| < m * n) always run in order, as a loop of calls
/// would.
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

/// What happens to the product P = alpha * op(A) @ op(B) + beta * C
/// ([m, n], fp32) before it is stored in C, as cuBLASLt's epilogues do.
/// GELU is the tanh approximation (PyTorch's approximate='tanh'); cuBLASLt
/// has no erf form. Every vector and matrix below has C's element type.
enum class GemmEpilogue {
  None,
  Bias,        // C = P + bias[j]                     bias: [n]
  Gelu,        // C = gelu(P)
  GeluBias,    // C = gelu(P + bias[j])
  GeluAux,     // C = gelu(P), aux = P               aux: [m, auxLd]
  GeluAuxBias, // C = gelu(P + bias[j]), aux = P + bias[j]
  DGelu,       // C = P * gelu'(aux)  (the backward through GELU)
  DGeluBGrad,  // as DGelu, and biasGrad[j] = sum_i C[i, j] (fp32 values)
  BGradA,      // C = P, biasGrad[i] = sum_p op(A)[i, p]   biasGrad: [m]
  BGradB,      // C = P, biasGrad[j] = sum_p op(B)[p, j]   biasGrad: [n]
};

/// The vectors an epilogue reads or writes (null where it uses none).
/// aux is row-major [m, n] with leading dimension auxLd (0: n; cuBLASLt
/// wants a multiple of 8). A Linear layer's forward is GeluAuxBias with
/// A = x [tokens, in], B = W [out, in] transposed; its weight gradient
/// dW = dY^T x is BGradA with A = dY transposed, which also yields the
/// bias gradient; the gradient into the GELU, dY @ W2 times gelu'(pre),
/// is DGelu(BGrad) with aux the saved pre-activation.
struct GemmEpilogueArgs {
  GemmEpilogue kind = GemmEpilogue::None;
  const void *bias = nullptr;
  void *aux = nullptr;
  int64_t auxLd = 0;
  void *biasGrad = nullptr;
};

/// Throws dsc::rt::Error unless the epilogue's vectors are given and the
/// shape is one non-empty product (batch 1; m, n, k > 0; cuBLASLt has no
/// epilogue for the others); both targets check with this. None is
/// checked as gemmF32 checks.
void checkGemmEpilogue(const GemmShape &shape, const GemmEpilogueArgs &epilogue);

/// gemmF32 followed by `epilogue`, for one product (shape.batch == 1).
/// The epilogue computes in fp32 and sums (bias gradients) in double, in a
/// fixed order: the result does not depend on the thread count.
void gemmEpilogueF32(const GemmShape &shape, const float *a, const float *b,
                     float *c, const GemmEpilogueArgs &epilogue,
                     float alpha = 1.0f, float beta = 0.0f);

/// gemmEpilogueF32 over bf16 operands, result and vectors: the product and
/// the epilogue in fp32, each stored value rounded once.
void gemmEpilogueBF16(const GemmShape &shape, const BFloat16 *a,
                      const BFloat16 *b, BFloat16 *c,
                      const GemmEpilogueArgs &epilogue, float alpha = 1.0f,
                      float beta = 0.0f);

/// gemmEpilogueF32 over IEEE half operands, result and vectors.
void gemmEpilogueF16(const GemmShape &shape, const Half *a, const Half *b,
                     Half *c, const GemmEpilogueArgs &epilogue,
                     float alpha = 1.0f, float beta = 0.0f);

/// PyTorch's gelu(x, approximate='tanh') and its derivative, in fp32: the
/// epilogues' definitions (tests and the CUDA comparison use them too).
float geluTanh(float x);
float geluTanhGrad(float x);

} // namespace dsc::rt::cpu

#endif // DSC_RUNTIME_CPUGEMM_H
