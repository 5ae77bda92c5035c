#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Error.h"

#include <cblas.h>

#include <string>

namespace dsc::rt::cpu {

void checkGemmShape(const GemmShape &s) {
  check(s.batch >= 0 && s.m >= 0 && s.n >= 0 && s.k >= 0,
        "gemm: negative size " + std::to_string(s.batch) + "x" +
            std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
            std::to_string(s.k));
  check(s.batch <= 1 || s.strideC != 0,
        "gemm: batched product with a zero output stride");
}

void gemmF32(const GemmShape &s, const float *a, const float *b, float *c,
             float alpha, float beta) {
  checkGemmShape(s);
  if (s.m == 0 || s.n == 0)
    return;
  // Leading dimensions of the row-major operands as stored.
  const int64_t lda = s.transA ? s.m : s.k;
  const int64_t ldb = s.transB ? s.k : s.n;
  for (int64_t i = 0; i < s.batch; ++i)
    cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                s.transB ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, alpha,
                a + i * s.strideA, lda, b + i * s.strideB, ldb, beta,
                c + i * s.strideC, s.n);
}

double gemmFlops(const GemmShape &s) {
  return 2.0 * double(s.batch) * double(s.m) * double(s.n) * double(s.k);
}

} // namespace dsc::rt::cpu
