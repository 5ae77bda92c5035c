//===- Gemm.cpp - matrix products for generated code, on the CPU -----------===//

#include "dsc/kernels/Gemm.h"

namespace {
template <typename T>
void linearImpl(const T *x, const T *w, const T *bias, T *y, int64_t m,
                int64_t n, int64_t k) {
  float beta = 0.0f;
  if (bias) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < n; ++j)
        y[r * n + j] = bias[j];
    beta = 1.0f;
  }
  dsc::rt::cpu::GemmShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.transB = true;
  dsc::kernels::cpu::batchedGemm({}, s, x, w, y, 1.0f, beta);
}
} // namespace

namespace dsc::kernels::cpu {
void linear(Queue, const float *x, const float *w, const float *bias, float *y,
            int64_t m, int64_t n, int64_t k) {
  linearImpl(x, w, bias, y, m, n, k);
}
void linear(Queue, const dsc::rt::BFloat16 *x, const dsc::rt::BFloat16 *w,
            const dsc::rt::BFloat16 *bias, dsc::rt::BFloat16 *y, int64_t m,
            int64_t n, int64_t k) {
  linearImpl(x, w, bias, y, m, n, k);
}
void linear(Queue, const dsc::rt::Half *x, const dsc::rt::Half *w,
            const dsc::rt::Half *bias, dsc::rt::Half *y, int64_t m, int64_t n,
            int64_t k) {
  linearImpl(x, w, bias, y, m, n, k);
}
} // namespace dsc::kernels::cpu
