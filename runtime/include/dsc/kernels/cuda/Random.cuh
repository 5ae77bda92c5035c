//===- Random.cuh - random ops on CUDA --------------------------*- CUDA -*-===//
//
// The CUDA side of Random.h: the same draws and products bit for bit. A
// thread takes a block of four elements of the global batch (one Philox
// call); the step key is read in the kernel, from device memory, so the
// launch needs nothing from the host but the site's constants.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_RANDOM_CUH
#define DSC_KERNELS_CUDA_RANDOM_CUH

#include "dsc/kernels/Random.h"
#include "dsc/kernels/cuda/Elements.cuh"

#include <cstdint>

namespace dsc::kernels::cuda {
namespace random_detail {

constexpr int kThreads = 256;

template <typename T>
__global__ void dropoutKernel(const T *x, const int64_t *key, T *y, int64_t n,
                              int64_t perSample, int64_t site, DropoutDraw draw,
                              int64_t blocksBound) {
  const bool training = key[3] != 0;
  const uint64_t seed = uint64_t(key[0]);
  const uint64_t first = uint64_t(key[2]) * uint64_t(perSample);
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocksBound;
       b += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t block = first / 4 + uint64_t(b);
    PhiloxWords words{};
    if (training)
      words = philox4x32(dropoutCounter(block, site, key[1]), uint32_t(seed),
                         uint32_t(seed >> 32));
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t e = dropoutElement(block, lane, first, n);
      if (e < 0)
        continue;
      y[e] = training ? Element<T>::narrow(__fmul_rn(float(Element<T>::widen(x[e])),
                                                     dropoutMultiplier(words.w[lane], draw)))
                      : x[e];
    }
  }
}

} // namespace random_detail

/// y = dsc.dropout(x) (Random.h); `key` in device memory.
template <typename T>
void dropout(cudaStream_t stream, const T *x, const int64_t *key, T *y,
             DropoutSite site) {
  if (site.numel <= 0)
    return;
  // The blocks of four a tensor of n elements touches: at most n / 4 + 2,
  // whatever its offset (the kernel skips the elements outside it).
  const int64_t blocks = site.numel / 4 + 2;
  const int64_t grid =
      (blocks + random_detail::kThreads - 1) / random_detail::kThreads;
  random_detail::dropoutKernel<T><<<blocksFor(grid), random_detail::kThreads, 0,
                                    stream>>>(x, key, y, site.numel, site.perSample,
                                              site.seed, dropoutDraw(site.p), blocks);
  check(cudaGetLastError(), "dropout: launching the kernel");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_RANDOM_CUH
