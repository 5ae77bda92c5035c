//===- Permute.cuh - tiled transpose and permute on CUDA --------*- CUDA -*-===//
//
// The CUDA side of Permute.h, for elements of any type of 1, 2, 4 or 8
// bytes. The permute is simplified as on the CPU (Dims.h). When the
// innermost dimension stays, each thread copies one element and adjacent
// threads touch adjacent elements on both sides. When it moves, a 32 x 8
// block moves a 32 x 32 tile through shared memory (padded to 33 columns
// against bank conflicts): reads along the input's innermost dimension,
// writes along the result's, both coalesced.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_CUDA_PERMUTE_CUH
#define DSC_KERNELS_CUDA_PERMUTE_CUH

#include "dsc/kernels/Dims.h"
#include "dsc/kernels/cuda/Elements.cuh"

#include <cstdint>
#include <type_traits>

namespace dsc::kernels::cuda {
namespace permute_detail {

/// A permute's loop plan, by value into the kernels.
struct Plan {
  int rank;
  int64_t inStride[kMaxRank];
  int64_t outSize[kMaxRank];    // result shape
  int64_t inStrideOut[kMaxRank]; // input stride of result dimension d
  // Tiled case: input dims a (innermost) and b (the result's innermost),
  // and the other dims as a batch.
  int64_t na, nb, osa, isb;
  int others;
  int64_t otherSize[kMaxRank], otherIn[kMaxRank], otherOut[kMaxRank];
};

template <typename T>
__global__ void copyRows(const T *in, T *out, int64_t total, Plan p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rest = i, from = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      from += rest % p.outSize[d] * p.inStrideOut[d];
      rest /= p.outSize[d];
    }
    out[i] = in[from];
  }
}

template <typename T>
__global__ void __launch_bounds__(256)
tiles(const T *in, T *out, int64_t batch, int64_t tilesA, int64_t tilesB, Plan p) {
  __shared__ T tile[32][33];
  const int x = threadIdx.x, y = threadIdx.y;
  for (int64_t item = blockIdx.x; item < batch * tilesB * tilesA; item += gridDim.x) {
    int64_t rest = item / (tilesB * tilesA), inBase = 0, outBase = 0;
    for (int k = p.others - 1; k >= 0; --k) {
      int64_t c = rest % p.otherSize[k];
      rest /= p.otherSize[k];
      inBase += c * p.otherIn[k];
      outBase += c * p.otherOut[k];
    }
    int64_t b0 = item / tilesA % tilesB * 32, a0 = item % tilesA * 32;
    for (int k = y; k < 32; k += 8) {
      int64_t b = b0 + k, a = a0 + x;
      if (b < p.nb && a < p.na)
        tile[k][x] = in[inBase + b * p.isb + a];
    }
    __syncthreads();
    for (int k = y; k < 32; k += 8) {
      int64_t a = a0 + k, b = b0 + x;
      if (b < p.nb && a < p.na)
        out[outBase + b + a * p.osa] = tile[x][k];
    }
    __syncthreads();
  }
}

template <typename Word>
void permuteWords(cudaStream_t stream, const Word *in, Word *out, Dims shape, Dims perm) {
  simplifyPermutation(shape, perm);
  Plan p{};
  p.rank = shape.rank;
  int64_t outStride[kMaxRank], outStrideOf[kMaxRank], total = 1;
  for (int d = p.rank - 1; d >= 0; --d)
    p.inStride[d] = d == p.rank - 1 ? 1 : p.inStride[d + 1] * shape.size[d + 1];
  for (int d = 0; d < p.rank; ++d) {
    p.outSize[d] = shape.size[perm.size[d]];
    p.inStrideOut[d] = p.inStride[perm.size[d]];
    total *= p.outSize[d];
  }
  for (int d = p.rank - 1; d >= 0; --d)
    outStride[d] = d == p.rank - 1 ? 1 : outStride[d + 1] * p.outSize[d + 1];
  for (int d = 0; d < p.rank; ++d)
    outStrideOf[perm.size[d]] = outStride[d];
  if (total == 0)
    return;
  if (perm.size[p.rank - 1] == p.rank - 1) {
    copyRows<Word><<<blocksFor((total + 255) / 256), 256, 0, stream>>>(in, out, total, p);
    check(cudaGetLastError(), "launching a permute");
    return;
  }
  const int a = p.rank - 1, b = int(perm.size[p.rank - 1]);
  p.na = shape.size[a], p.nb = shape.size[b];
  p.osa = outStrideOf[a], p.isb = p.inStride[b];
  int64_t batch = 1;
  for (int d = 0; d < p.rank; ++d)
    if (d != a && d != b) {
      p.otherSize[p.others] = shape.size[d];
      p.otherIn[p.others] = p.inStride[d];
      p.otherOut[p.others++] = outStrideOf[d];
      batch *= shape.size[d];
    }
  int64_t tilesA = (p.na + 31) / 32, tilesB = (p.nb + 31) / 32;
  tiles<Word><<<blocksFor(batch * tilesA * tilesB), dim3(32, 8), 0, stream>>>(
      in, out, batch, tilesA, tilesB, p);
  check(cudaGetLastError(), "launching a tiled permute");
}

template <typename T>
using WordOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t,
                       std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

} // namespace permute_detail

/// out = in with result dimension d being input dimension perm.size[d];
/// `shape` is the input's (rank <= kMaxRank).
template <typename T>
void permute(cudaStream_t stream, const T *in, T *out, Dims shape, Dims perm) {
  using W = permute_detail::WordOf<T>;
  static_assert(sizeof(T) == sizeof(W), "elements of 1, 2, 4 or 8 bytes");
  permute_detail::permuteWords(stream, reinterpret_cast<const W *>(in),
                               reinterpret_cast<W *>(out), shape, perm);
}

/// out[b, c, r] = in[b, r, c] for in [batch, rows, cols].
template <typename T>
void transpose(cudaStream_t stream, const T *in, T *out, int64_t batch, int64_t rows,
               int64_t cols) {
  permute(stream, in, out, Dims{3, {batch, rows, cols}}, Dims{3, {0, 2, 1}});
}

} // namespace dsc::kernels::cuda

#endif // DSC_KERNELS_CUDA_PERMUTE_CUH
