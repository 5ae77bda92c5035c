//===- Classifier.cuh - the fused softmax cross-entropy on CUDA -*- C++ -*-===//
//
// The CUDA form of dsc/kernels/Classifier.h: per row, loss = logsumexp(x) -
// x[t] and, fused, dlogits = (softmax(x) - onehot(t)) * scale, never
// writing the probabilities. One block per row: the row is read once for
// an online (max, sum of exp) pair per thread, combined over the block,
// and read again to write the gradient (from L2 for GPT-2's 201 KB rows).
// Every thread reads x[t] before the block's first barrier, so dlogits may
// be the logits buffer itself.
//
// A target outside [0, V) that is not ignoreIndex leaves its row untouched
// and is recorded in `fault` (IndexFault.cuh), which the caller reads after
// synchronizing; a null `fault` records nothing.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_CLASSIFIER_CUH
#define DSC_KERNELS_CUDA_CLASSIFIER_CUH

#include "dsc/kernels/cuda/IndexFault.cuh"
#include "dsc/kernels/cuda/Row.cuh"

namespace dsc::kernels::cuda {
namespace detail {

template <int W, typename T, typename Index>
__global__ void classifierKernel(T *dlogits, T *loss, const T *logits, const Index *targets,
                                 const T *scale, std::int64_t scaleStride, std::int64_t rows,
                                 std::int64_t classes, std::int64_t ignoreIndex,
                                 IndexFault *fault) {
  const std::int64_t chunks = classes / W;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t t = static_cast<std::int64_t>(targets[row]);
    T *dr = dlogits ? dlogits + row * classes : nullptr;
    if (t == ignoreIndex) {
      if (loss && threadIdx.x == 0)
        loss[row] = convert<T>(0.0f);
      if (dr)
        for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
          float zero[W] = {};
          storeChunk<W>(dr, c, 1, zero);
        }
      continue;
    }
    if (t < 0 || t >= classes) {
      if (threadIdx.x == 0)
        recordIndexFault(fault, "dsc.cross_entropy", t, classes);
      continue;
    }
    const T *xr = logits + row * classes;
    const float xt = load(xr[t]);
    MaxSum ms{-INFINITY, 0.0f};
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W];
      loadChunk<W>(xr, c, 1, v);
#pragma unroll
      for (int k = 0; k < W; ++k)
        add(ms, v[k]);
    }
    ms = blockMaxSum(ms);
    if (loss && threadIdx.x == 0)
      loss[row] = convert<T>(ms.m + logf(ms.s) - xt);
    if (!dr)
      continue;
    const float s = load(scale[row * scaleStride]), inv = 1.0f / ms.s;
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      float v[W];
      loadChunk<W>(xr, c, 1, v);
#pragma unroll
      for (int k = 0; k < W; ++k)
        v[k] = (expf(v[k] - ms.m) * inv - (indexOf<W>(c, k) == t ? 1.0f : 0.0f)) * s;
      storeChunk<W>(dr, c, 1, v);
    }
  }
}

template <typename T, typename Index>
void launchClassifier(cudaStream_t stream, T *dlogits, T *loss, const T *logits,
                      const Index *targets, const T *scale, std::int64_t scaleStride,
                      std::int64_t rows, std::int64_t classes, std::int64_t ignoreIndex,
                      IndexFault *fault) {
  if (rows == 0 || classes == 0)
    return;
  constexpr int P = kPack<T>;
  if (classes % P == 0 && aligned16(dlogits) && aligned16(logits))
    classifierKernel<P><<<blocksFor(rows), threadsFor(classes / P), 0, stream>>>(
        dlogits, loss, logits, targets, scale, scaleStride, rows, classes, ignoreIndex, fault);
  else
    classifierKernel<1><<<blocksFor(rows), threadsFor(classes), 0, stream>>>(
        dlogits, loss, logits, targets, scale, scaleStride, rows, classes, ignoreIndex, fault);
  check(cudaGetLastError(), "cross_entropy kernel");
}

} // namespace detail

/// loss[r] = logsumexp(logits[r]) - logits[r][targets[r]], 0 for ignored
/// rows (reduction = none).
template <typename T, typename Index>
void crossEntropyForward(cudaStream_t stream, const T *logits, const Index *targets, T *loss,
                         std::int64_t rows, std::int64_t classes, std::int64_t ignoreIndex,
                         IndexFault *fault) {
  detail::launchClassifier<T, Index>(stream, static_cast<T *>(nullptr), loss, logits, targets,
                                     static_cast<const T *>(nullptr), 0, rows, classes,
                                     ignoreIndex, fault);
}

/// The loss (when loss is not null) and dlogits = (softmax - onehot) *
/// scale[r * scaleStride] in one pass per row; dlogits may be logits.
template <typename T, typename Index>
void fusedClassifier(cudaStream_t stream, const T *logits, const Index *targets,
                     const T *scale, T *dlogits, T *loss, std::int64_t scaleStride,
                     std::int64_t rows, std::int64_t classes, std::int64_t ignoreIndex,
                     IndexFault *fault) {
  detail::launchClassifier<T, Index>(stream, dlogits, loss, logits, targets, scale,
                                     scaleStride, rows, classes, ignoreIndex, fault);
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_CLASSIFIER_CUH
