//===- Optimizer.h - multi-tensor optimizer update, CPU ---------*- C++ -*-===//
//
// One call updates every parameter tensor of a step (Adam, AdamW or SGD
// with momentum), and two companions compute what the update needs first:
// the sum of squares of all gradients (the global norm for clipping) and
// whether any gradient holds an inf or a NaN (fp16 loss scaling skips such
// a step). The tables and scalars are described in OptimizerTable.h; the
// CUDA versions (cuda/Optimizer.cuh) take the same arguments.
//
// Arithmetic: exactly PyTorch's torch.optim.Adam/AdamW/SGD formulas, in
// the order of fp32 operations that dsc's optimizer pass emits, so that a
// step calling the library updates parameters bit for bit as the emitted
// loops did. Per element, g = float(grad) * unscale * clipCoef (each
// factor only when given, each product rounded), then
//   Adam:   g = g + p * wd                      (only when wd != 0)
//   AdamW:  p = p * decay, decay = 1 - lr * wd  (only when wd != 0)
//   m = m * beta1 + g * (1 - beta1)
//   v = v * beta2 + (g * g) * (1 - beta2)
//   p = p - (m / (sqrt(v) / sqrt(1 - beta2^t) + eps)) * (lr / (1 - beta1^t))
//   SGD:    g = g + p * wd; buf = buf * momentum + g, g = buf (momentum
//           != 0); p = p - g * lr
// and the 16-bit copy, when given, is float -> T rounded to nearest even.
// The bias corrections are computed once per call from the step's float t
// with powf, as the pass's pow(float, float) does.
//
// Every loop is `omp parallel for` over the table's chunks; the update is
// elementwise, so its result does not depend on the thread count. The sum
// of squares accumulates each chunk in double (eight fixed lanes), sums a
// tensor's chunk partials in chunk order in double, rounds the tensor's sum
// to float and adds the tensors' sums in table order in float (what the
// pass computes from one reduce_sum per tensor): fixed chunking and a fixed
// combine order, so the result is bitwise the same on any thread count.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_OPTIMIZER_H
#define DSC_KERNELS_OPTIMIZER_H

#include "dsc/kernels/CpuFeatures.h"
#include "dsc/kernels/OptimizerTable.h"
#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

// The updates do a square root and two divisions per element, which
// SSE2's 4-wide units cannot do at memory speed: on x86-64 each update loop
// is also compiled for AVX2 (the loop inlined into a caller with that
// target) and the call picks it where the CPU has AVX2. The result is the
// same bit for bit: every operation is IEEE (correctly rounded) at any
// vector width, and products are never contracted into FMAs
// (-ffp-contract=off where the runtime compiles them).
#if defined(__x86_64__) && !defined(__CUDACC__) && defined(__GNUC__)
#define DSC_KERNELS_AVX2 1
#define DSC_KERNELS_CPU_LOOP __attribute__((always_inline)) inline
#else
#define DSC_KERNELS_AVX2 0
#define DSC_KERNELS_CPU_LOOP inline
#endif

namespace dsc::kernels::cpu {

namespace detail {

/// Throws std::invalid_argument unless `table` holds `count` entries whose
/// chunks assignChunks numbered, `chunks` in all (a table built for other
/// sizes would update the wrong elements).
template <typename Entry>
void checkTable(const char *what, const Entry *table, int64_t count,
                int64_t chunks) {
  if (count < 0 || (count > 0 && !table))
    throw std::invalid_argument(std::string(what) + ": no table of " +
                                std::to_string(count) + " tensors");
  int64_t next = 0;
  for (int64_t t = 0; t < count; ++t) {
    if (table[t].numel < 0 || table[t].firstChunk != next)
      throw std::invalid_argument(
          std::string(what) + ": tensor " + std::to_string(t) + " of " +
          std::to_string(table[t].numel) +
          " elements is not numbered by assignChunks");
    next += chunksOf(table[t].numel);
  }
  if (next != chunks)
    throw std::invalid_argument(std::string(what) + ": the table has " +
                                std::to_string(next) + " chunks, not " +
                                std::to_string(chunks));
}

/// [begin, end) of chunk `chunk` within a tensor of `numel` elements whose
/// first chunk is `first`.
inline void chunkRange(int64_t chunk, int64_t first, int64_t numel,
                       int64_t &begin, int64_t &end) {
  begin = (chunk - first) * kOptimizerChunk;
  end = begin + kOptimizerChunk < numel ? begin + kOptimizerChunk : numel;
}

/// The gradient factors of OptimizerStep, read once per call. An absent
/// factor is 1: x * 1.0f is x bit for bit (NaN included), so multiplying
/// by it matches the pass, which multiplies only by the factors it has,
/// and keeps the loops free of branches.
struct GradFactors {
  float unscale, clipCoef;
  explicit GradFactors(const OptimizerStep &s)
      : unscale(s.unscale ? *s.unscale : 1.0f),
        clipCoef(s.clipCoef ? *s.clipCoef : 1.0f) {}
  float apply(float g) const { return (g * unscale) * clipCoef; }
};

/// The correctly rounded square root, as std::sqrt, that never sets errno:
/// the update loops then vectorise whatever -fmath-errno the including file
/// is compiled with (a test or a benchmark need not repeat the library's
/// flags). Other compilers get std::sqrt.
inline float sqrtNoErrno(float x) {
#if defined(__clang__)
  return __builtin_elementwise_sqrt(x);
#else
  return std::sqrt(x);
#endif
}

/// Adam's per-call scalars (Optimizer.h's header: the pass's formulas).
struct AdamScalars {
  float stepSize, correction2Sqrt, decayFactor;
};

/// Adam/AdamW on elements [begin, end) of one tensor. L2 and Copy are
/// template flags so that each instantiation is one branch-free,
/// vectorisable loop.
template <bool L2, bool Copy, typename T>
DSC_KERNELS_CPU_LOOP void adamRange(const AdamTensor<T> &e, int64_t begin, int64_t end,
               const AdamConfig &c, const GradFactors &factors,
               const AdamScalars &k) {
  float *param = e.param, *m = e.expAvg, *v = e.expAvgSq;
  const T *grad = e.grad;
  T *copy = e.copy;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    float g = factors.apply(float(grad[i]));
    float p = param[i] * k.decayFactor;
    if constexpr (L2)
      g = g + p * c.weightDecay;
    const float mi = m[i] * c.beta1 + g * c.oneMinusBeta1;
    const float vi = v[i] * c.beta2 + (g * g) * c.oneMinusBeta2;
    const float denom = sqrtNoErrno(vi) / k.correction2Sqrt + c.eps;
    p = p - (mi / denom) * k.stepSize;
    m[i] = mi;
    v[i] = vi;
    param[i] = p;
    if constexpr (Copy)
      copy[i] = T(p);
  }
}

/// SGD on elements [begin, end) of one tensor, flags as adamRange's.
template <bool L2, bool Momentum, bool Copy, typename T>
DSC_KERNELS_CPU_LOOP void sgdRange(const SgdTensor<T> &e, int64_t begin, int64_t end,
              const SgdConfig &c, const GradFactors &factors, float lr) {
  float *param = e.param, *buf = e.momentumBuffer;
  const T *grad = e.grad;
  T *copy = e.copy;
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    float g = factors.apply(float(grad[i]));
    float p = param[i];
    if constexpr (L2)
      g = g + p * c.weightDecay;
    if constexpr (Momentum) {
      g = buf[i] * c.momentum + g;
      buf[i] = g;
    }
    p = p - g * lr;
    param[i] = p;
    if constexpr (Copy)
      copy[i] = T(p);
  }
}

/// Whether x is an inf or a NaN: its exponent bits all set, tested on the
/// stored bits (no widening; the loops vectorise).
inline bool nonFinite(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return (bits & 0x7F800000u) == 0x7F800000u;
}
inline bool nonFinite(dsc::rt::BFloat16 x) {
  return (x.bits & 0x7F80u) == 0x7F80u;
}
inline bool nonFinite(dsc::rt::Half x) { return (x.bits & 0x7C00u) == 0x7C00u; }

/// Whether the update loops may run their AVX2 versions.
inline bool haveAvx2() { return DSC_KERNELS_AVX2 && cpuHasAvx2(); }

/// adamRange and sgdRange compiled for AVX2 (the loop inlined here, so it
/// is vectorised 8 floats wide); the plain ones where the CPU lacks it.
template <bool L2, bool Copy, typename T>
#if DSC_KERNELS_AVX2
__attribute__((target("avx2")))
#endif
void adamRangeAvx2(const AdamTensor<T> &e, int64_t begin, int64_t end,
                   const AdamConfig &c, const GradFactors &factors,
                   const AdamScalars &k) {
  adamRange<L2, Copy, T>(e, begin, end, c, factors, k);
}

template <bool L2, bool Momentum, bool Copy, typename T>
#if DSC_KERNELS_AVX2
__attribute__((target("avx2")))
#endif
void sgdRangeAvx2(const SgdTensor<T> &e, int64_t begin, int64_t end,
                  const SgdConfig &c, const GradFactors &factors, float lr) {
  sgdRange<L2, Momentum, Copy, T>(e, begin, end, c, factors, lr);
}

} // namespace detail

/// Adam (config.decoupled false) or AdamW over every tensor of `table`
/// (`count` entries numbered by assignChunks, `chunks` chunks): updates
/// param, expAvg, expAvgSq and writes copy, with the formulas above. With
/// *step.skip nonzero nothing is written. step.lr and step.step are
/// required. Throws std::invalid_argument for a table that assignChunks did
/// not number for these sizes.
template <typename T>
void adamUpdate(Queue queue, const AdamTensor<T> *table, int64_t count,
                int64_t chunks, const AdamConfig &config,
                const OptimizerStep &step);

/// SGD with momentum (dampening 0, no Nesterov; PyTorch's first-step
/// buf = g is buf * momentum + g with the zero-initialised buffer).
template <typename T>
void sgdUpdate(Queue queue, const SgdTensor<T> *table, int64_t count,
               int64_t chunks, const SgdConfig &config,
               const OptimizerStep &step);

/// *total = the sum over all gradients of x * x, x = float(grad) * *scale
/// (scale may be null: 1), accumulated as the file header says; perTensor,
/// when not null, receives each tensor's sum (count floats). `workspace`
/// holds sumSquaresWorkspaceBytes(count, chunks) bytes. Entry is any of
/// AdamTensor<T>, SgdTensor<T>, GradTensor<T>.
template <typename Entry>
void multiTensorSumSquares(Queue queue, const Entry *table, int64_t count,
                           int64_t chunks, const float *scale, float *total,
                           float *perTensor, void *workspace);

/// *found = 1 when some gradient of the table holds an inf or a NaN, else 0.
template <typename Entry>
void multiTensorNonFinite(Queue queue, const Entry *table, int64_t count,
                          int64_t chunks, std::uint8_t *found);

//===----------------------------------------------------------------------===//
// Definitions (instantiated in the runtime for float, BFloat16 and Half).
//===----------------------------------------------------------------------===//

template <typename T>
void adamUpdate(Queue, const AdamTensor<T> *table, int64_t count,
                int64_t chunks, const AdamConfig &c, const OptimizerStep &s) {
  detail::checkTable("adamUpdate", table, count, chunks);
  if (!s.lr || !s.step)
    throw std::invalid_argument("adamUpdate: the step needs lr and step");
  if (s.skip && *s.skip)
    return;
  const detail::GradFactors factors(s);
  const float lr = *s.lr, t = *s.step;
  const float stepSize = lr / (1.0f - std::pow(c.beta1, t));
  const float correction2Sqrt = std::sqrt(1.0f - std::pow(c.beta2, t));
  // AdamW without decay multiplies by 1 (exact); Adam's L2 term is added
  // only when there is one (g + p * 0 could turn -0 into +0).
  const float decayFactor = !c.decoupled || c.weightDecay == 0 ? 1.0f
                            : c.constantDecay ? c.decayFactor
                                              : 1.0f - lr * c.weightDecay;
  const bool l2 = !c.decoupled && c.weightDecay != 0;
  const detail::AdamScalars k{stepSize, correction2Sqrt, decayFactor};
  using Range = void (*)(const AdamTensor<T> &, int64_t, int64_t,
                         const AdamConfig &, const detail::GradFactors &,
                         const detail::AdamScalars &);
  const Range plain[4] = {
      detail::adamRange<false, false, T>, detail::adamRange<false, true, T>,
      detail::adamRange<true, false, T>, detail::adamRange<true, true, T>};
  const Range avx2[4] = {detail::adamRangeAvx2<false, false, T>,
                         detail::adamRangeAvx2<false, true, T>,
                         detail::adamRangeAvx2<true, false, T>,
                         detail::adamRangeAvx2<true, true, T>};
  const Range *ranges = detail::haveAvx2() ? avx2 : plain;
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const AdamTensor<T> &e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    detail::chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    ranges[2 * l2 + (e.copy != nullptr)](e, begin, end, c, factors, k);
  }
}

template <typename T>
void sgdUpdate(Queue, const SgdTensor<T> *table, int64_t count, int64_t chunks,
               const SgdConfig &c, const OptimizerStep &s) {
  detail::checkTable("sgdUpdate", table, count, chunks);
  if (!s.lr)
    throw std::invalid_argument("sgdUpdate: the step needs lr");
  const bool momentum = c.momentum != 0;
  for (int64_t t = 0; t < count; ++t)
    if (momentum && table[t].numel > 0 && !table[t].momentumBuffer)
      throw std::invalid_argument("sgdUpdate: tensor " + std::to_string(t) +
                                  " has no momentum buffer");
  if (s.skip && *s.skip)
    return;
  const detail::GradFactors factors(s);
  const float lr = *s.lr;
  const bool l2 = c.weightDecay != 0;
  using Range = void (*)(const SgdTensor<T> &, int64_t, int64_t,
                         const SgdConfig &, const detail::GradFactors &, float);
  const Range plain[8] = {detail::sgdRange<false, false, false, T>,
                          detail::sgdRange<false, false, true, T>,
                          detail::sgdRange<false, true, false, T>,
                          detail::sgdRange<false, true, true, T>,
                          detail::sgdRange<true, false, false, T>,
                          detail::sgdRange<true, false, true, T>,
                          detail::sgdRange<true, true, false, T>,
                          detail::sgdRange<true, true, true, T>};
  const Range avx2[8] = {detail::sgdRangeAvx2<false, false, false, T>,
                         detail::sgdRangeAvx2<false, false, true, T>,
                         detail::sgdRangeAvx2<false, true, false, T>,
                         detail::sgdRangeAvx2<false, true, true, T>,
                         detail::sgdRangeAvx2<true, false, false, T>,
                         detail::sgdRangeAvx2<true, false, true, T>,
                         detail::sgdRangeAvx2<true, true, false, T>,
                         detail::sgdRangeAvx2<true, true, true, T>};
  const Range *ranges = detail::haveAvx2() ? avx2 : plain;
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const SgdTensor<T> &e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    detail::chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    ranges[4 * l2 + 2 * momentum + (e.copy != nullptr)](e, begin, end, c,
                                                         factors, lr);
  }
}

template <typename Entry>
void multiTensorSumSquares(Queue, const Entry *table, int64_t count,
                           int64_t chunks, const float *scale, float *total,
                           float *perTensor, void *workspace) {
  detail::checkTable("multiTensorSumSquares", table, count, chunks);
  if (!total || (chunks > 0 && !workspace))
    throw std::invalid_argument(
        "multiTensorSumSquares: no total or no workspace");
  double *partial = static_cast<double *>(workspace);
  using T = std::remove_cv_t<std::remove_pointer_t<decltype(table->grad)>>;
  const float factor = scale ? *scale : 1.0f;
#pragma omp parallel for schedule(static)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const Entry &e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    detail::chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    // Eight lanes, element i in lane (i - begin) % 8: a fixed order that
    // the compiler vectorises without reassociating. x * 1.0f is x, so an
    // absent scale costs no branch.
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const T *grad = e.grad;
    int64_t i = begin;
    for (; i + 8 <= end; i += 8)
      for (int k = 0; k < 8; ++k) {
        const float x = float(grad[i + k]) * factor;
        lane[k] += double(x * x);
      }
    for (int k = 0; i < end; ++i, ++k) {
      const float x = float(grad[i]) * factor;
      lane[k] += double(x * x);
    }
    partial[chunk] = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                     ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  }
  float sum = 0.0f;
  for (int64_t t = 0; t < count; ++t) {
    double tensor = 0;
    for (int64_t k = 0; k < chunksOf(table[t].numel); ++k)
      tensor += partial[table[t].firstChunk + k];
    const float rounded = float(tensor);
    if (perTensor)
      perTensor[t] = rounded;
    sum = t == 0 ? rounded : sum + rounded;
  }
  *total = sum;
}

template <typename Entry>
void multiTensorNonFinite(Queue, const Entry *table, int64_t count,
                          int64_t chunks, std::uint8_t *found) {
  detail::checkTable("multiTensorNonFinite", table, count, chunks);
  if (!found)
    throw std::invalid_argument("multiTensorNonFinite: no result");
  int any = 0;
#pragma omp parallel for schedule(static) reduction(| : any)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const Entry &e = table[findChunkOwner(table, count, chunk)];
    int64_t begin, end;
    detail::chunkRange(chunk, e.firstChunk, e.numel, begin, end);
    int bad = 0;
#pragma omp simd reduction(| : bad)
    for (int64_t i = begin; i < end; ++i)
      bad |= int(detail::nonFinite(e.grad[i]));
    any |= bad;
  }
  *found = any ? 1 : 0;
}

#define DSC_KERNELS_OPTIMIZER_INSTANCES(EXTERN, T)                             \
  EXTERN template void adamUpdate<T>(Queue, const AdamTensor<T> *, int64_t,    \
                                     int64_t, const AdamConfig &,              \
                                     const OptimizerStep &);                   \
  EXTERN template void sgdUpdate<T>(Queue, const SgdTensor<T> *, int64_t,      \
                                    int64_t, const SgdConfig &,                \
                                    const OptimizerStep &);                    \
  EXTERN template void multiTensorSumSquares<AdamTensor<T>>(                   \
      Queue, const AdamTensor<T> *, int64_t, int64_t, const float *, float *,  \
      float *, void *);                                                        \
  EXTERN template void multiTensorSumSquares<SgdTensor<T>>(                    \
      Queue, const SgdTensor<T> *, int64_t, int64_t, const float *, float *,   \
      float *, void *);                                                        \
  EXTERN template void multiTensorSumSquares<GradTensor<T>>(                   \
      Queue, const GradTensor<T> *, int64_t, int64_t, const float *, float *,  \
      float *, void *);                                                        \
  EXTERN template void multiTensorNonFinite<AdamTensor<T>>(                    \
      Queue, const AdamTensor<T> *, int64_t, int64_t, std::uint8_t *);         \
  EXTERN template void multiTensorNonFinite<SgdTensor<T>>(                     \
      Queue, const SgdTensor<T> *, int64_t, int64_t, std::uint8_t *);          \
  EXTERN template void multiTensorNonFinite<GradTensor<T>>(                    \
      Queue, const GradTensor<T> *, int64_t, int64_t, std::uint8_t *);

// Generated code links these from the runtime instead of compiling them.
DSC_KERNELS_OPTIMIZER_INSTANCES(extern, float)
DSC_KERNELS_OPTIMIZER_INSTANCES(extern, dsc::rt::BFloat16)
DSC_KERNELS_OPTIMIZER_INSTANCES(extern, dsc::rt::Half)

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_OPTIMIZER_H
