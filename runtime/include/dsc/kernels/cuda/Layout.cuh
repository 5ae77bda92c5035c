//===- Layout.cuh - slice, concat, broadcast and causal mask on CUDA -*- CUDA -*-===//
//
// The CUDA side of Layout.h, with the same arguments. One thread per
// result element, adjacent threads on adjacent elements of the result (and,
// wherever the source has them, of the source): the accesses coalesce.
// Slice, concat and broadcast move words of the element's width.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_LAYOUT_CUH
#define DSC_KERNELS_CUDA_LAYOUT_CUH

#include "dsc/kernels/Dims.h"
#include "dsc/kernels/cuda/Elements.cuh"
#include "dsc/kernels/cuda/Permute.cuh"

#include <cstdint>
#include <type_traits>

namespace dsc::kernels::cuda {
namespace layout_detail {

template <typename Word>
__global__ void copyAlongDim(const Word *in, Word *out, int64_t total, int64_t inner,
                             int64_t inDim, int64_t inStart, int64_t inStep, int64_t outDim,
                             int64_t outStart, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t q = i % inner, j = i / inner % count, o = i / inner / count;
    out[(o * outDim + outStart + j) * inner + q] =
        in[(o * inDim + inStart + j * inStep) * inner + q];
  }
}

template <typename Word>
__global__ void broadcastTo(const Word *in, Word *out, int64_t total, Dims inShape,
                            Dims outShape) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, from = 0, stride = 1;
    for (int d = outShape.rank - 1; d >= 0; --d) {
      const int64_t c = rest % outShape.size[d];
      rest /= outShape.size[d];
      if (inShape.size[d] != 1)
        from += c * stride;
      stride *= inShape.size[d];
    }
    out[i] = in[from];
  }
}

template <typename T>
__global__ void causalMask(const T *in, T *out, int64_t total, int64_t rows, int64_t cols,
                           T fill) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % cols, r = i / cols % rows;
    out[i] = c > r + (cols - rows) ? fill : in[i];
  }
}

/// `fill` as T, rounded through float as the CPU kernel does.
template <typename T> T fillValue(double fill) {
  if constexpr (std::is_same_v<T, double>)
    return fill;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16(static_cast<float>(fill));
  else if constexpr (std::is_same_v<T, __half>)
    return __float2half(static_cast<float>(fill));
  else
    return static_cast<T>(static_cast<float>(fill));
}

inline unsigned blocksOf(int64_t total) {
  return blocksFor((total + 255) / 256);
}

} // namespace layout_detail

/// out = in[:, start : start + outDim * step : step, :] (Layout.h).
template <typename T>
void slice(cudaStream_t stream, const T *in, T *out, int64_t outer, int64_t inDim,
           int64_t inner, int64_t start, int64_t step, int64_t outDim) {
  using W = permute_detail::WordOf<T>;
  const int64_t total = outer * outDim * inner;
  if (total == 0)
    return;
  layout_detail::copyAlongDim<W><<<layout_detail::blocksOf(total), 256, 0, stream>>>(
      reinterpret_cast<const W *>(in), reinterpret_cast<W *>(out), total, inner, inDim, start,
      step, outDim, 0, outDim);
  check(cudaGetLastError(), "launching a slice");
}

/// out[:, offset : offset + partDim, :] = part (Layout.h).
template <typename T>
void concatPart(cudaStream_t stream, const T *part, T *out, int64_t outer, int64_t partDim,
                int64_t inner, int64_t outDim, int64_t offset) {
  using W = permute_detail::WordOf<T>;
  const int64_t total = outer * partDim * inner;
  if (total == 0)
    return;
  layout_detail::copyAlongDim<W><<<layout_detail::blocksOf(total), 256, 0, stream>>>(
      reinterpret_cast<const W *>(part), reinterpret_cast<W *>(out), total, inner, partDim, 0,
      1, outDim, offset, partDim);
  check(cudaGetLastError(), "launching a concat");
}

/// out = in broadcast to `outShape`; `inShape` has its rank (Layout.h).
template <typename T>
void broadcast(cudaStream_t stream, const T *in, T *out, Dims inShape, Dims outShape) {
  using W = permute_detail::WordOf<T>;
  const int64_t total = numElements(outShape);
  if (total == 0)
    return;
  layout_detail::broadcastTo<W><<<layout_detail::blocksOf(total), 256, 0, stream>>>(
      reinterpret_cast<const W *>(in), reinterpret_cast<W *>(out), total, inShape, outShape);
  check(cudaGetLastError(), "launching a broadcast");
}

/// out[b, r, c] = c > r + (cols - rows) ? fill : in[b, r, c] (Layout.h).
template <typename T>
void causalMask(cudaStream_t stream, const T *in, T *out, int64_t batch, int64_t rows,
                int64_t cols, double fill) {
  const int64_t total = batch * rows * cols;
  if (total == 0)
    return;
  layout_detail::causalMask<T><<<layout_detail::blocksOf(total), 256, 0, stream>>>(
      in, out, total, rows, cols, layout_detail::fillValue<T>(fill));
  check(cudaGetLastError(), "launching a causal mask");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_LAYOUT_CUH
