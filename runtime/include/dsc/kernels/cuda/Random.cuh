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
#include <stdexcept>
#include <string>

namespace dsc::kernels::cuda {
namespace random_detail {

constexpr int kThreads = 256;

/// The blocks of four that a call of n elements touches, at most n / 4 + 2
/// whatever its offset in the batch (the kernels skip the elements outside
/// it), and the grid whose threads take one each.
struct FourBlocks {
  int64_t blocks;
  unsigned grid;
};
inline FourBlocks fourBlocks(int64_t n) {
  const int64_t blocks = n / 4 + 2;
  return {blocks, blocksFor((blocks + kThreads - 1) / kThreads)};
}

/// The call is `segments` runs of `n` elements each contiguous in the
/// global batch: one run of all elements when the samples are (parts = 1),
/// else one per sample. A thread takes one block of four of one run.
template <typename T>
__global__ void dropoutKernel(const T *x, const int64_t *key, T *y, int64_t n,
                              int64_t perSample, int64_t segments, int64_t parts,
                              const int64_t *part,
                              int64_t site, DropoutDraw draw, int64_t blocksBound) {
  const bool training = key[3] != 0;
  const uint64_t seed = uint64_t(key[0]);
  const int64_t r = parts == 1 ? 0 : part[0];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       i < segments * blocksBound; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i / blocksBound, b = i % blocksBound;
    const uint64_t first = dropoutFirst(uint64_t(key[2]), j, perSample, parts, r);
    const uint64_t block = first / 4 + uint64_t(b);
    PhiloxWords words{};
    if (training)
      words = philox4x32(dropoutCounter(block, site, key[1]), uint32_t(seed),
                         uint32_t(seed >> 32));
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t e = dropoutElement(block, lane, first, n);
      if (e < 0)
        continue;
      const int64_t at = j * n + e;
      y[at] = training ? Element<T>::narrow(__fmul_rn(float(Element<T>::widen(x[at])),
                                                      dropoutMultiplier(words.w[lane], draw)))
                       : x[at];
    }
  }
}

static __global__ void uniformKernel(const int64_t *key, float *out, UniformSite site,
                                     int64_t blocksBound) {
  const uint64_t seed = uint64_t(key[0]);
  const uint64_t first = uint64_t(key[2]) * uint64_t(site.perSample);
  for (int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocksBound;
       b += int64_t(gridDim.x) * blockDim.x) {
    const uint64_t block = first / 4 + uint64_t(b);
    const PhiloxWords words =
        philox4x32(dropoutCounter(block, site.seed, key[1]), uint32_t(seed),
                   uint32_t(seed >> 32) ^ kUniformKeyTag);
    for (int lane = 0; lane < 4; ++lane)
      if (const int64_t e = dropoutElement(block, lane, first, site.numel); e >= 0)
        out[e] = uniformValue(words.w[lane], site.low, site.high);
  }
}

/// One block per sample: thread t ranks position t among all positions
/// (the count of smaller keys), then a kept position's slot is the count of
/// kept positions before it. The keys and ranks live in shared memory.
static __global__ void randomLtdKernel(const int64_t *key, int64_t *indices, LtdSite site) {
  extern __shared__ uint64_t keys[];
  int32_t *ranks = reinterpret_cast<int32_t *>(keys + site.length);
  const int64_t j = blockIdx.x;
  const uint64_t sample = uint64_t(key[2]) + uint64_t(j);
  for (int64_t t = threadIdx.x; t < site.length; t += blockDim.x)
    keys[t] = ltdRankKey(ltdPriority(sample, t, key[1], site.seed, uint64_t(key[0])), t);
  __syncthreads();
  for (int64_t t = threadIdx.x; t < site.length; t += blockDim.x) {
    int32_t rank = 0;
    for (int64_t u = 0; u < site.length; ++u)
      rank += keys[u] < keys[t];
    ranks[t] = rank;
  }
  __syncthreads();
  for (int64_t t = threadIdx.x; t < site.length; t += blockDim.x) {
    if (ranks[t] >= site.kept)
      continue;
    int64_t slot = 0;
    for (int64_t u = 0; u < t; ++u)
      slot += ranks[u] < site.kept;
    indices[j * site.kept + slot] = t;
  }
}

} // namespace random_detail

/// dsc.random_ltd_indices (Random.h); `key` in device memory. Sequences of
/// up to 4096 tokens (their keys and ranks fit in 48 KiB of shared memory).
inline void randomLtdIndices(cudaStream_t stream, const int64_t *key, int64_t *indices,
                             LtdSite site) {
  if (site.samples <= 0)
    return;
  if (site.length > 4096)
    throw std::invalid_argument("random_ltd_indices: sequences longer than 4096 "
                                "tokens are not supported on CUDA, got " +
                                std::to_string(site.length));
  const size_t shared = size_t(site.length) * (sizeof(uint64_t) + sizeof(int32_t));
  random_detail::randomLtdKernel<<<unsigned(site.samples), random_detail::kThreads,
                                   shared, stream>>>(key, indices, site);
  check(cudaGetLastError(), "random_ltd_indices: launching the kernel");
}

/// out = dsc.random_uniform (Random.h); `key` in device memory.
inline void randomUniform(cudaStream_t stream, const int64_t *key, float *out,
                          UniformSite site) {
  if (site.numel <= 0)
    return;
  const auto [blocks, grid] = random_detail::fourBlocks(site.numel);
  random_detail::uniformKernel<<<grid, random_detail::kThreads, 0, stream>>>(
      key, out, site, blocks);
  check(cudaGetLastError(), "random_uniform: launching the kernel");
}

/// y = dsc.dropout(x) (Random.h); `key` and `part` in device memory.
template <typename T>
void dropout(cudaStream_t stream, const T *x, const int64_t *key, T *y,
             DropoutSite site, const int64_t *part = nullptr) {
  if (site.numel <= 0)
    return;
  // Whole: the samples follow each other in the global batch, the call is
  // one run from element key[2] * perSample.
  const bool whole = site.parts == 1;
  const int64_t n = whole ? site.numel : site.perSample;
  const int64_t segments = whole ? 1 : site.numel / site.perSample;
  const int64_t blocks = n / 4 + 2;
  const unsigned grid = blocksFor((segments * blocks + random_detail::kThreads - 1) /
                                  random_detail::kThreads);
  random_detail::dropoutKernel<T><<<grid, random_detail::kThreads, 0, stream>>>(
      x, key, y, n, site.perSample, segments, site.parts, part, site.seed, dropoutDraw(site.p), blocks);
  check(cudaGetLastError(), "dropout: launching the kernel");
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_RANDOM_CUH
