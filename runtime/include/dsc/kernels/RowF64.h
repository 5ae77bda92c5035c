//===- RowF64.h - softmax, layer norm and cross-entropy of f64 rows -*- C++ -*-===//
//
// The row kernels of Row.h and the classifier's per-row loss of
// Classifier.h for double data. Those compute in float (their exp is a
// float polynomial), which would throw away what f64 data asks for, so
// double has its own functions, with the same names and arguments as the
// templates: generated code calls them alike, and overload resolution
// picks these for double pointers. Everything is computed in double with
// std::exp / std::log; each row's sums run in index order, so results do
// not depend on the number of threads. Rows are the unit of OpenMP
// parallelism; f64 models are for checking gradients, not for speed, so
// there is no SIMD blocking.
//
// Layout and semantics as Row.h (softmax over the middle dimension of
// (outer, n, inner); layer norm over the last `n` elements of each row)
// and Classifier.h (per-row loss, ignoreIndex rows 0, a target outside
// [0, classes) throws std::out_of_range after the loop).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_ROWF64_H
#define DSC_KERNELS_ROWF64_H

#include "dsc/kernels/Queue.h"

#include <cstdint>

namespace dsc::kernels::cpu {

/// y = softmax(x) along the middle dimension of (outer, n, inner).
void softmaxForward(Queue, const double *x, double *y, std::int64_t outer, std::int64_t n,
                    std::int64_t inner);

/// y = x - max - log(sum(exp(x - max))) along the middle dimension.
void logSoftmaxForward(Queue, const double *x, double *y, std::int64_t outer,
                       std::int64_t n, std::int64_t inner);

/// Layer norm of each row of x [rows, n] (biased variance); weight and
/// bias may be null; mean and rstd, when not null, receive each row's
/// statistics rounded to float (the type layerNormBackward reads).
void layerNormForward(Queue, const double *x, const double *weight, const double *bias,
                      double *y, float *mean, float *rstd, std::int64_t rows, std::int64_t n,
                      double eps);

/// loss[r] = logsumexp(logits[r]) - logits[r][targets[r]], 0 where the
/// target is ignoreIndex.
void crossEntropyForward(Queue, const double *logits, const std::int64_t *targets,
                         double *loss, std::int64_t rows, std::int64_t classes,
                         std::int64_t ignoreIndex);

} // namespace dsc::kernels::cpu

#endif // DSC_KERNELS_ROWF64_H
