//===- Dims.h - shapes and permutations passed to library kernels -*- C++ -*-===//
//
// Kernels whose index arithmetic needs a whole shape (permutes, gathers,
// scatters) take it by value as Dims: a rank up to kMaxRank and the sizes.
// A plain aggregate, so the emitter writes it as a literal
// (`dsc::kernels::Dims{3, {4, 128, 64}}`) and a CUDA kernel receives it as
// an argument. Shared by the CPU and CUDA kernels.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_DIMS_H
#define DSC_KERNELS_DIMS_H

#include <cstdint>

namespace dsc::kernels {

inline constexpr int kMaxRank = 6;

/// `rank` sizes (or, for a permutation, the input dimension that each
/// result dimension takes).
struct Dims {
  int rank;
  int64_t size[kMaxRank];
};

/// The number of elements of a tensor of shape `d`.
inline int64_t numElements(const Dims &d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank; ++i)
    n *= d.size[i];
  return n;
}

/// Row-major strides of shape `d`, in elements, into `stride[0, d.rank)`.
inline void rowMajorStrides(const Dims &d, int64_t *stride) {
  int64_t s = 1;
  for (int i = d.rank - 1; i >= 0; --i) {
    stride[i] = s;
    s *= d.size[i];
  }
}

/// The same permute over fewer dimensions: input dimensions of size 1 are
/// dropped, and input dimensions that stay adjacent and in order in the
/// result are merged into one. An all-ones shape becomes {1} with {0}.
/// Host code (both targets plan their loops with it).
inline void simplifyPermutation(Dims &shape, Dims &perm) {
  // Drop the size-1 dimensions.
  int newIndex[kMaxRank];
  Dims s{0, {}}, p{0, {}};
  for (int a = 0; a < shape.rank; ++a) {
    newIndex[a] = shape.size[a] == 1 ? -1 : s.rank;
    if (shape.size[a] != 1)
      s.size[s.rank++] = shape.size[a];
  }
  for (int d = 0; d < perm.rank; ++d)
    if (newIndex[perm.size[d]] >= 0)
      p.size[p.rank++] = newIndex[perm.size[d]];
  if (s.rank == 0) {
    shape = Dims{1, {1}};
    perm = Dims{1, {0}};
    return;
  }
  // Runs of result dimensions reading consecutive input dimensions merge.
  // groupOf[a]: the run that input dimension a starts, or -1.
  int groupOf[kMaxRank], runs = 0;
  for (int a = 0; a < s.rank; ++a)
    groupOf[a] = -1;
  for (int d = 0; d < p.rank; ++d) {
    if (d > 0 && p.size[d] == p.size[d - 1] + 1)
      continue;
    groupOf[p.size[d]] = runs++;
  }
  // Merged input dimensions in input order; the run of each.
  Dims merged{0, {}};
  int mergedOf[kMaxRank];
  for (int a = 0; a < s.rank; ++a) {
    if (groupOf[a] < 0) {
      merged.size[merged.rank - 1] *= s.size[a];
      continue;
    }
    mergedOf[groupOf[a]] = merged.rank;
    merged.size[merged.rank++] = s.size[a];
  }
  Dims q{runs, {}};
  for (int r = 0; r < runs; ++r)
    q.size[r] = mergedOf[r];
  shape = merged;
  perm = q;
}

} // namespace dsc::kernels

#endif // DSC_KERNELS_DIMS_H
