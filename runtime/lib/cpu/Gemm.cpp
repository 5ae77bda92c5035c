#include "dsc/runtime/CpuGemm.h"
#include "dsc/runtime/Error.h"
#include "dsc/runtime/Float16.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace dsc::rt::cpu {

namespace {

/// A product of at most this m * n * k runs on one thread: a parallel
/// region's fork and join would cost more than the split saves (OpenBLAS's
/// own threading draws the line at the same size, its SMP_THRESHOLD_MIN *
/// GEMM_MULTITHREAD_THRESHOLD). Batches of such items run items in parallel.
constexpr double kSplitMinMnk = 65536.0 * 4;

/// Whether the batch's items run on OpenMP threads (CpuGemm.h says when).
bool itemsInParallel(const GemmShape &s) {
  if (s.batch < 2 || omp_in_parallel())
    return false;
  if (std::llabs(s.strideC) < s.m * s.n) // overlapping outputs: in order
    return false;
  const int threads = omp_get_max_threads();
  if (threads < 2)
    return false;
  return s.batch >= threads ||
         double(s.m) * double(s.n) * double(s.k) <= kSplitMinMnk;
}

/// f(i) for every batch item i, on OpenMP threads or in order.
template <typename F> void forEachItem(const GemmShape &s, F &&f) {
  if (itemsInParallel(s)) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s.batch; ++i)
      f(i);
    return;
  }
  for (int64_t i = 0; i < s.batch; ++i)
    f(i);
}

/// Column (or row) blocks of one product are a multiple of this, so that
/// every thread's block is whole micro-tiles of OpenBLAS's kernels.
constexpr int64_t kSplitAlign = 16;

/// OpenBLAS runs on the calling thread only: its own threads would be a
/// second pool beside OpenMP's, and on a machine with as many cores as
/// threads each pool's idle threads spin (OpenBLAS's with sched_yield,
/// about 12% of GPT-2's CPU step) while the other pool's work waits for
/// the core. A large product is split over OpenMP's threads instead (see
/// sgemmSplit). Called once, before the first product.
void keepOpenBlasOnCallingThread() {
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
}

/// One item, C = alpha op(A) op(B) + beta C, as blocks of C's columns (or
/// rows, when C has more rows than columns) on OpenMP threads, one
/// single-threaded sgemm each. Each element is still one dot product over
/// k, but OpenBLAS may order its terms differently for another block shape
/// (its own threading does too): results move within the product's
/// rounding, and do not depend on anything but the thread count.
void sgemmSplit(const GemmShape &s, const float *a, const float *b, float *c,
                float alpha, float beta) {
  const int64_t lda = s.transA ? s.m : s.k;
  const int64_t ldb = s.transB ? s.k : s.n;
  auto sgemm = [&](int64_t m, int64_t n, const float *ai, const float *bi,
                   float *ci) {
    cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                s.transB ? CblasTrans : CblasNoTrans, m, n, s.k, alpha, ai,
                lda, bi, ldb, beta, ci, s.n);
  };
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool byColumns = s.n >= s.m;
  const int64_t extent = byColumns ? s.n : s.m;
  int64_t block = (extent + threads - 1) / threads;
  block = (block + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  if (threads < 2 || block >= extent ||
      double(s.m) * double(s.n) * double(s.k) <= kSplitMinMnk) {
    sgemm(s.m, s.n, a, b, c);
    return;
  }
  const int64_t blocks = (extent + block - 1) / block;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t first = i * block, size = std::min(block, extent - first);
    if (byColumns) // B's columns: [k, n] offset by column, [n, k] by row
      sgemm(s.m, size, a, b + (s.transB ? first * s.k : first), c + first);
    else // A's rows: [m, k] offset by row, [k, m] by column
      sgemm(size, s.n, a + (s.transA ? first : first * s.k), b, c + first * s.n);
  }
}

} // namespace

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
  keepOpenBlasOnCallingThread();
  forEachItem(s, [&](int64_t i) {
    sgemmSplit(s, a + i * s.strideA, b + i * s.strideB, c + i * s.strideC,
               alpha, beta);
  });
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
/// widened, the fp32 product handed to `store(item, product, ci)`, which
/// rounds it into C (and applies an epilogue, if any).
template <typename T, typename Store>
void gemmThroughF32(const GemmShape &s, const T *a, const T *b, T *c,
                    float alpha, float beta, Store &&store) {
  checkGemmShape(s);
  if (s.m == 0 || s.n == 0)
    return;
  GemmShape item = s;
  item.batch = 1;
  // A broadcast operand (stride 0 in a batch) is widened once, shared by
  // every item; the others per item, in scratch per thread (items and
  // streams run concurrently).
  std::vector<float> sharedA, sharedB;
  const bool broadcastA = s.batch > 1 && s.strideA == 0;
  const bool broadcastB = s.batch > 1 && s.strideB == 0;
  if (broadcastA)
    widen(a, s.m * s.k, sharedA);
  if (broadcastB)
    widen(b, s.k * s.n, sharedB);
  forEachItem(s, [&](int64_t i) {
    thread_local std::vector<float> wa, wb, wc;
    if (!broadcastA)
      widen(a + i * s.strideA, s.m * s.k, wa);
    if (!broadcastB)
      widen(b + i * s.strideB, s.k * s.n, wb);
    T *ci = c + i * s.strideC;
    if (beta != 0.0f)
      widen(ci, s.m * s.n, wc);
    else
      wc.assign(std::size_t(s.m * s.n), 0.0f); // BLAS: C is not read
    gemmF32(item, broadcastA ? sharedA.data() : wa.data(),
            broadcastB ? sharedB.data() : wb.data(), wc.data(), alpha, beta);
    store(item, wc.data(), ci);
  });
}

/// Rounds an fp32 product into C.
template <typename T> struct RoundInto {
  void operator()(const GemmShape &s, const float *product, T *c) const {
    for (int64_t j = 0; j < s.m * s.n; ++j)
      c[j] = T(product[j]);
  }
};

} // namespace

void gemmBF16(const GemmShape &s, const BFloat16 *a, const BFloat16 *b,
              BFloat16 *c, float alpha, float beta) {
  gemmThroughF32(s, a, b, c, alpha, beta, RoundInto<BFloat16>{});
}

void gemmF16(const GemmShape &s, const Half *a, const Half *b, Half *c,
             float alpha, float beta) {
  gemmThroughF32(s, a, b, c, alpha, beta, RoundInto<Half>{});
}

double gemmFlops(const GemmShape &s) {
  return 2.0 * double(s.batch) * double(s.m) * double(s.n) * double(s.k);
}

float geluTanh(float x) {
  const float kBeta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kBeta * (x + kKappa * x * x * x)));
}

float geluTanhGrad(float x) {
  // PyTorch's GeluBackward for approximate='tanh'.
  const float kBeta = float(M_SQRT2 * M_2_SQRTPI * 0.5), kKappa = 0.044715f;
  const float inner = kBeta * (x + kKappa * x * x * x);
  const float t = std::tanh(inner);
  const float left = 0.5f * x, right = 1.0f + t;
  const float rightDerivative =
      left * (1.0f - t * t) * kBeta * (1.0f + 3.0f * kKappa * x * x);
  return 0.5f * right + rightDerivative;
}

void checkGemmEpilogue(const GemmShape &s, const GemmEpilogueArgs &e) {
  checkGemmShape(s);
  if (e.kind == GemmEpilogue::None)
    return;
  check(s.batch == 1, "gemm: an epilogue needs one product, not a batch of " +
                          std::to_string(s.batch));
  check(s.m > 0 && s.n > 0 && s.k > 0,
        "gemm: an epilogue needs a non-empty product, not " +
            std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
            std::to_string(s.k));
  const bool bias = e.kind == GemmEpilogue::Bias ||
                    e.kind == GemmEpilogue::GeluBias ||
                    e.kind == GemmEpilogue::GeluAuxBias;
  const bool aux = e.kind == GemmEpilogue::GeluAux ||
                   e.kind == GemmEpilogue::GeluAuxBias ||
                   e.kind == GemmEpilogue::DGelu ||
                   e.kind == GemmEpilogue::DGeluBGrad;
  const bool grad = e.kind == GemmEpilogue::DGeluBGrad ||
                    e.kind == GemmEpilogue::BGradA ||
                    e.kind == GemmEpilogue::BGradB;
  check(!bias || e.bias, "gemm: the epilogue needs a bias vector");
  check(!aux || e.aux, "gemm: the epilogue needs an aux matrix");
  check(!aux || e.auxLd == 0 || e.auxLd >= s.n,
        "gemm: aux leading dimension " + std::to_string(e.auxLd) +
            " is below n = " + std::to_string(s.n));
  check(!grad || e.biasGrad, "gemm: the epilogue needs a bias-gradient vector");
}

namespace {

/// Column sums out[j] = sum_r x(r, j) over `rows` in order, in double, for
/// j in [0, cols): blocks of columns on OpenMP threads, so that each sum
/// has one fixed order whatever the thread count.
template <typename T, typename X>
void columnSums(int64_t rows, int64_t cols, X &&x, T *out) {
  constexpr int64_t kBlock = 64;
#pragma omp parallel for schedule(static)
  for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
    const int64_t width = std::min(kBlock, cols - j0);
    double acc[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < width; ++q)
        acc[q] += double(x(r, j0 + q));
    for (int64_t q = 0; q < width; ++q)
      out[j0 + q] = T(float(acc[q]));
  }
}

/// The epilogue on one fp32 product `p` ([m, n]), stored into C (which may
/// be `p` itself for fp32); a and b are the operands as given.
template <typename T>
void applyEpilogue(const GemmShape &s, const GemmEpilogueArgs &e, const T *a,
                   const T *b, const float *p, T *c) {
  using K = GemmEpilogue;
  const T *bias = static_cast<const T *>(e.bias);
  T *aux = static_cast<T *>(e.aux);
  T *biasGrad = static_cast<T *>(e.biasGrad);
  const int64_t auxLd = e.auxLd ? e.auxLd : s.n;
  const bool addBias =
      e.kind == K::Bias || e.kind == K::GeluBias || e.kind == K::GeluAuxBias;
  const bool gelu = e.kind == K::Gelu || e.kind == K::GeluBias ||
                    e.kind == K::GeluAux || e.kind == K::GeluAuxBias;
  const bool saveAux = e.kind == K::GeluAux || e.kind == K::GeluAuxBias;
  const bool dgelu = e.kind == K::DGelu || e.kind == K::DGeluBGrad;
  if (e.kind == K::DGeluBGrad) // sums of the fp32 results, before rounding
    columnSums(s.m, s.n,
               [&](int64_t i, int64_t j) {
                 return p[i * s.n + j] * geluTanhGrad(float(aux[i * auxLd + j]));
               },
               biasGrad);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      float x = p[i * s.n + j];
      if (addBias)
        x = x + float(bias[j]);
      if (saveAux)
        aux[i * auxLd + j] = T(x);
      if (gelu)
        x = geluTanh(x);
      if (dgelu)
        x = x * geluTanhGrad(float(aux[i * auxLd + j]));
      c[i * s.n + j] = T(x);
    }
  if (e.kind == K::BGradA) // biasGrad[i] = sum_p op(A)[i, p]
    columnSums(s.k, s.m,
               [&](int64_t q, int64_t i) {
                 return float(s.transA ? a[q * s.m + i] : a[i * s.k + q]);
               },
               biasGrad);
  if (e.kind == K::BGradB) // biasGrad[j] = sum_p op(B)[p, j]
    columnSums(s.k, s.n,
               [&](int64_t q, int64_t j) {
                 return float(s.transB ? b[j * s.k + q] : b[q * s.n + j]);
               },
               biasGrad);
}

template <typename T>
void gemmEpilogueThroughF32(const GemmShape &s, const T *a, const T *b, T *c,
                            const GemmEpilogueArgs &e, float alpha, float beta) {
  checkGemmEpilogue(s, e);
  gemmThroughF32(s, a, b, c, alpha, beta,
                 [&](const GemmShape &item, const float *product, T *ci) {
                   applyEpilogue(item, e, a, b, product, ci);
                 });
}

} // namespace

void gemmEpilogueF32(const GemmShape &s, const float *a, const float *b,
                     float *c, const GemmEpilogueArgs &e, float alpha,
                     float beta) {
  checkGemmEpilogue(s, e);
  gemmF32(s, a, b, c, alpha, beta);
  if (e.kind != GemmEpilogue::None)
    applyEpilogue(s, e, a, b, c, c);
}

void gemmEpilogueBF16(const GemmShape &s, const BFloat16 *a, const BFloat16 *b,
                      BFloat16 *c, const GemmEpilogueArgs &e, float alpha,
                      float beta) {
  gemmEpilogueThroughF32(s, a, b, c, e, alpha, beta);
}

void gemmEpilogueF16(const GemmShape &s, const Half *a, const Half *b, Half *c,
                     const GemmEpilogueArgs &e, float alpha, float beta) {
  gemmEpilogueThroughF32(s, a, b, c, e, alpha, beta);
}

} // namespace dsc::rt::cpu
