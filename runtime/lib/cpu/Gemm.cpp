#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Float16.h"

#include <cblas.h>

#include <string>
#include <vector>

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

namespace {

/// `count` elements of `from` widened into `to` (resized).
template <typename T>
void widen(const T *from, int64_t count, std::vector<float> &to) {
  to.resize(std::size_t(count));
  for (int64_t i = 0; i < count; ++i)
    to[std::size_t(i)] = float(from[i]);
}

/// Each item in fp32 through sgemm: A, B (and C when beta reads it)
/// widened, C rounded back to T.
template <typename T>
void gemmThroughF32(const GemmShape &s, const T *a, const T *b, T *c,
                    float alpha, float beta) {
  checkGemmShape(s);
  if (s.m == 0 || s.n == 0)
    return;
  // Scratch per thread: streams may run GEMMs concurrently.
  thread_local std::vector<float> wa, wb, wc;
  GemmShape item = s;
  item.batch = 1;
  for (int64_t i = 0; i < s.batch; ++i) {
    widen(a + i * s.strideA, s.m * s.k, wa);
    widen(b + i * s.strideB, s.k * s.n, wb);
    T *ci = c + i * s.strideC;
    if (beta != 0.0f)
      widen(ci, s.m * s.n, wc);
    else
      wc.assign(std::size_t(s.m * s.n), 0.0f); // BLAS: C is not read
    gemmF32(item, wa.data(), wb.data(), wc.data(), alpha, beta);
    for (int64_t j = 0; j < s.m * s.n; ++j)
      ci[j] = T(wc[std::size_t(j)]);
  }
}

} // namespace

void gemmBF16(const GemmShape &s, const BFloat16 *a, const BFloat16 *b,
              BFloat16 *c, float alpha, float beta) {
  gemmThroughF32(s, a, b, c, alpha, beta);
}

void gemmF16(const GemmShape &s, const Half *a, const Half *b, Half *c,
             float alpha, float beta) {
  gemmThroughF32(s, a, b, c, alpha, beta);
}

double gemmFlops(const GemmShape &s) {
  return 2.0 * double(s.batch) * double(s.m) * double(s.n) * double(s.k);
}

} // namespace dsc::rt::cpu
