//===- Classifier.h - the fused softmax cross-entropy on the CPU -*- C++ -*-===//
//
// The classifier of a language model ends in a softmax over the vocabulary
// (50,257 classes for GPT-2), a cross-entropy against the target class, and
// in training the gradient of that loss with respect to the logits. Done as
// separate kernels it writes the probabilities ([rows, V], the largest
// activation of the model) and reads them back; fused, each row is read,
// its loss computed, and its gradient written in place of the logits, so the
// probabilities never reach memory.
//
// Per row with target t (not ignoreIndex): m = max(x), s = sum(exp(x - m)),
// loss = m + log(s) - x[t], dlogits = (exp(x - m) / s - onehot(t)) * scale.
// Rows whose target is ignoreIndex have loss 0 and dlogits 0. A target
// outside [0, V) that is not ignoreIndex is skipped (its row is left as it
// was) and, after the row loop, reported as std::out_of_range
// "dsc.cross_entropy: index I is outside [0, V)" for the lowest such row.
//
// Numerics as the row kernels (Row.h): float exp, sums in double, one
// rounding per written value; the exponentials of a row are kept in a
// per-thread float buffer between the sum and the write, so each is
// computed once. Rows are independent, so results do not depend on the
// number of threads.
//
// Argument order: the queue, the inputs, the outputs, the sizes, then the
// attributes. Targets are int64_t or int32_t (the dsc dialect's index
// tensors); the templates are instantiated for float, bf16 and half logits
// with both in runtime/lib/kernels/Classifier.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CLASSIFIER_H
#define DSC_KERNELS_CLASSIFIER_H

#include "dsc/kernels/CpuFeatures.h"
#include "dsc/kernels/IndexCheck.h"
#include "dsc/kernels/Row.h"

#include <cstdint>

namespace dsc::kernels::cpu {
namespace detail {

/// One row of the classifier: returns the loss and, when dlogits is not
/// null, writes (softmax - onehot(t)) * scale into it. t is in [0, V).
template <typename T>
[[gnu::always_inline]] inline double classifierRowBody(T *dlogits, const T *x,
                                                       std::int64_t t, double scale,
                                                       std::int64_t classes) {
  const float m = rowMax(x, classes);
  const float xt = load(x[t]);
  if (!dlogits)
    return double(m) + std::log(sumExp(x, m, classes)) - double(xt);
  float *e = threadScratch(std::size_t(classes));
  const double sum = expAndSum(e, x, m, classes);
  const double inv = 1.0 / sum;
#pragma omp simd
  for (std::int64_t j = 0; j < classes; ++j)
    dlogits[j] = T(static_cast<float>(double(e[j]) * inv * scale));
  dlogits[t] = T(static_cast<float>((double(e[t]) * inv - 1.0) * scale));
  return double(m) + std::log(sum) - double(xt);
}

/// The row compiled for AVX2 (twice the lanes of x86-64's SSE2 in its
/// exps and double sums; no FMA, so every value is rounded as before: only
/// the order of the double sums' lanes differs) and for any x86-64; the
/// CPU picks one (CpuFeatures.h). The runtime is compiled without -march.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
template <typename T>
__attribute__((target("avx2"))) double classifierRowAvx2(T *dlogits, const T *x,
                                                         std::int64_t t, double scale,
                                                         std::int64_t classes) {
  return classifierRowBody(dlogits, x, t, scale, classes);
}
#endif
template <typename T>
double classifierRowBase(T *dlogits, const T *x, std::int64_t t, double scale,
                         std::int64_t classes) {
  return classifierRowBody(dlogits, x, t, scale, classes);
}

template <typename T, typename Index>
void classifier(T *dlogits, T *loss, const T *logits, const Index *targets,
                const T *scale, std::int64_t scaleStride, std::int64_t rows,
                std::int64_t classes, std::int64_t ignoreIndex) {
  IndexCheck check;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const auto classifierRow = cpuHasAvx2() ? classifierRowAvx2<T> : classifierRowBase<T>;
#else
  const auto classifierRow = classifierRowBase<T>;
#endif
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t t = static_cast<std::int64_t>(targets[r]);
    T *dr = dlogits ? dlogits + r * classes : nullptr;
    if (t == ignoreIndex) {
      if (loss)
        loss[r] = T(0.0f);
      if (dr)
        std::fill(dr, dr + classes, T(0.0f));
      continue;
    }
    if (check.bad(t, classes, r))
      continue;
    const double s = dr ? double(load(scale[r * scaleStride])) : 0.0;
    const double l = classifierRow(dr, logits + r * classes, t, s, classes);
    if (loss)
      loss[r] = T(static_cast<float>(l));
  }
  check.raise("dsc.cross_entropy", classes, [&](std::int64_t row) {
    return static_cast<std::int64_t>(targets[row]);
  });
}

} // namespace detail

/// Per-row cross-entropy of logits [rows, classes] against targets [rows]:
/// loss[r] = logsumexp(logits[r]) - logits[r][targets[r]], 0 where the
/// target is ignoreIndex (F.cross_entropy with reduction = none).
template <typename T, typename Index>
void crossEntropyForward(Queue, const T *logits, const Index *targets, T *loss,
                         std::int64_t rows, std::int64_t classes, std::int64_t ignoreIndex) {
  detail::classifier<T, Index>(nullptr, loss, logits, targets, nullptr, 0, rows, classes,
                               ignoreIndex);
}

/// The fused classifier: the loss of each row as crossEntropyForward (when
/// loss is not null) and, in the same pass over the row, the gradient
/// dlogits[r] = (softmax(logits[r]) - onehot(targets[r])) * scale[r *
/// scaleStride], 0 for ignored rows. scale is the loss's incoming gradient
/// per row: dy with scaleStride 1 for reduction = none, a one-element dy
/// (sum) or dy / count (mean) with scaleStride 0. dlogits may be logits
/// itself (the logits are dead once their gradient exists).
template <typename T, typename Index>
void fusedClassifier(Queue, const T *logits, const Index *targets, const T *scale,
                     T *dlogits, T *loss, std::int64_t scaleStride, std::int64_t rows,
                     std::int64_t classes, std::int64_t ignoreIndex) {
  detail::classifier<T, Index>(dlogits, loss, logits, targets, scale, scaleStride, rows,
                               classes, ignoreIndex);
}

// Compiled once, in the runtime (Classifier.cpp).
#define DSC_KERNELS_CLASSIFIER_DECLARE(Extern, T, Index)                                  \
  Extern template void crossEntropyForward<T, Index>(Queue, const T *, const Index *, T *, \
                                                     std::int64_t, std::int64_t,           \
                                                     std::int64_t);                        \
  Extern template void fusedClassifier<T, Index>(Queue, const T *, const Index *,          \
                                                 const T *, T *, T *, std::int64_t,        \
                                                 std::int64_t, std::int64_t, std::int64_t);

DSC_KERNELS_CLASSIFIER_DECLARE(extern, float, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(extern, dsc::rt::BFloat16, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(extern, dsc::rt::Half, std::int64_t)
DSC_KERNELS_CLASSIFIER_DECLARE(extern, float, std::int32_t)
DSC_KERNELS_CLASSIFIER_DECLARE(extern, dsc::rt::BFloat16, std::int32_t)
DSC_KERNELS_CLASSIFIER_DECLARE(extern, dsc::rt::Half, std::int32_t)

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_CLASSIFIER_H
