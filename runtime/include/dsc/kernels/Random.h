//===- Random.h - random ops: dropout, random-LTD, uniform ------*- C++ -*-===//
//
// dsc.dropout as one kernel for both targets (cuda/Random.cuh). Element e
// of a dropout's input is element g = key[2] * perSample + e of the
// optimizer step's global batch (key: dsc.step_key's four integers, in
// device memory); a dropout of part r of `parts` parts of each sample (a
// rank's slice) draws its element e of sample j as element
// ((key[2] + j) * parts + r) * perSample + e, where the whole input holds
// it. Its draw is word g % 4 of
//
//   Philox4x32-10(counter = {low, high 32 bits of g / 4, site seed, step},
//                 key = {low, high 32 bits of the run's seed})
//
// (step = key[1], seed = key[0]; the site seed and the step taken modulo
// 2^32). The element is dropped when the word's top 24 bits, as a number u
// in [0, 1) with 24 bits, are below p: u < p. The output is
// x * (dropped ? 0 : scale), with scale = 1 / (1 - p) rounded to float and
// the product in float, rounded once to the element type (so NaN and
// infinities propagate as in PyTorch's x * mask). With key[3] = 0 (not
// training) the output is the input. python/dsc/philox.py computes the
// same masks for the golden runs.
//
// Instantiated for float, bf16 and f16 in the runtime library.
//
// dsc.random_ltd_indices: position t of sample g of the global batch gets
// the priority ltdPriority(...) below, and each sample keeps its K
// positions of least (priority, position), in increasing order.
// python/dsc/philox.py computes the same indices.
//
// dsc.random_uniform: element e of sample j (of `perSample` elements each)
// is element g = (key[2] + j) * perSample + e of the global batch, and its
// value is uniformValue(word) of word g % 4 of
//
//   Philox4x32-10(counter = {low, high 32 bits of g / 4, site seed, step},
//                 key = {low 32 bits of the run's seed,
//                        high 32 bits ^ kUniformKeyTag})
//
// dropout's counter under another key: the tag keeps the two streams
// apart for every site, and random-LTD's key tag (0x4C544400 ^ its site,
// a site below 2^24) differs from it in the top byte. The draws do not
// depend on key[3]: the ops that read them decide what evaluation means.
// python/dsc/philox.py computes the same values.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_RANDOM_H
#define DSC_KERNELS_RANDOM_H

#include "dsc/kernels/Philox.h"
#include "dsc/kernels/Queue.h"
#include "dsc/runtime/Float16.h"

#include <cmath>
#include <cstdint>

namespace dsc::kernels {

/// One dsc.dropout: `numel` elements, `perSample` of them per sample,
/// probability `p` in [0, 1), the site's `seed`; the input is the part
/// given at run time (`part`) of `parts` equal contiguous parts of each
/// sample of a whole input.
struct DropoutSite {
  int64_t numel;
  int64_t perSample;
  double p;
  int64_t seed;
  int64_t parts = 1;
};

/// The global element of a dropout's first element of sample `j` of a call
/// whose first sample is sample `firstSample` of the global batch, when the
/// call holds part `part` of `parts` parts of each sample, `perSample`
/// elements per part.
DSC_PHILOX_HD inline uint64_t dropoutFirst(uint64_t firstSample, int64_t j,
                                           int64_t perSample, int64_t parts,
                                           int64_t part) {
  return ((firstSample + uint64_t(j)) * uint64_t(parts) + uint64_t(part)) *
         uint64_t(perSample);
}

/// What a site's draws are compared with, and the kept elements' scale.
struct DropoutDraw {
  uint32_t threshold; // u < p  <=>  (word >> 8) < threshold
  float scale;
};

inline DropoutDraw dropoutDraw(double p) {
  // p * 2^24 is exact in double; the top 24 bits of a word are an integer.
  return {static_cast<uint32_t>(std::ceil(p * 16777216.0)),
          static_cast<float>(1.0 / (1.0 - p))};
}

/// The counter of element block `block` (elements 4 * block .. 4 * block + 3
/// of the global batch) at `site` in step `step`.
DSC_PHILOX_HD inline PhiloxWords dropoutCounter(uint64_t block, int64_t site,
                                                int64_t step) {
  return {{uint32_t(block), uint32_t(block >> 32), uint32_t(uint64_t(site)),
           uint32_t(uint64_t(step))}};
}

/// The element of a call, whose first element is element `first` of the
/// global batch and which holds `n`, that lane `lane` of block `block`
/// draws for; -1 when that element is not the call's.
DSC_PHILOX_HD inline int64_t dropoutElement(uint64_t block, int lane, uint64_t first,
                                            int64_t n) {
  const uint64_t g = block * 4 + uint64_t(lane);
  return g < first || g - first >= uint64_t(n) ? -1 : int64_t(g - first);
}

/// What the element a draw `word` is for is multiplied by.
DSC_PHILOX_HD inline float dropoutMultiplier(uint32_t word, DropoutDraw draw) {
  return (word >> 8) < draw.threshold ? 0.0f : draw.scale;
}

/// The priority of position `t` of sample `sample` of the global batch in
/// optimizer step `step`, at random-LTD site `site` under the run's `seed`.
DSC_PHILOX_HD inline uint32_t ltdPriority(uint64_t sample, int64_t t,
                                          int64_t step, int64_t site,
                                          uint64_t seed) {
  const PhiloxWords words = philox4x32(
      {{uint32_t(uint64_t(t) / 4), uint32_t(sample), uint32_t(sample >> 32),
        uint32_t(uint64_t(step))}},
      uint32_t(seed), uint32_t(seed >> 32) ^ 0x4C544400u ^ uint32_t(uint64_t(site)));
  return words.w[t % 4];
}

/// The sort key of position `t`: its priority, then the position.
DSC_PHILOX_HD inline uint64_t ltdRankKey(uint32_t priority, int64_t t) {
  return (uint64_t(priority) << 32) | uint64_t(uint32_t(t));
}

/// What sets the key of dsc.random_uniform's draws apart from dropout's
/// ('UNI' in the high word's top bytes).
constexpr uint32_t kUniformKeyTag = 0x554E4900u;

/// A word as a float32 in (0, 1): (2 * (word >> 9) + 1) / 2^24, 2^23 values
/// spaced 2^-23, each exact in float32 and symmetric about 1/2 (neither 0
/// nor 1, so log(u) and log(1 - u) are finite).
DSC_PHILOX_HD inline float unitUniform(uint32_t word) {
  return float(2u * (word >> 9) + 1u) * 0x1p-24f;
}

/// low + (high - low) * u in double, rounded once to float; the two
/// operations are kept apart (no fused multiply-add) so that every target
/// and python/dsc/philox.py round alike.
DSC_PHILOX_HD inline float uniformValue(uint32_t word, double low, double high) {
  const double u = double(unitUniform(word));
#ifdef __CUDA_ARCH__
  return float(__dadd_rn(low, __dmul_rn(high - low, u)));
#else
  volatile double scaled = (high - low) * u;
  return float(low + scaled);
#endif
}

/// One dsc.random_uniform: `numel` values in [low, high], `perSample` of
/// them per sample, the site's `seed`.
struct UniformSite {
  int64_t numel;
  int64_t perSample;
  double low;
  double high;
  int64_t seed;
};

/// One dsc.random_ltd_indices: `samples` rows of `kept` of `length`.
struct LtdSite {
  int64_t samples;
  int64_t length;
  int64_t kept;
  int64_t seed;
};

namespace cpu {

/// indices[j][0..kept) = the kept positions of sample key[2] + j.
void randomLtdIndices(Queue, const int64_t *key, int64_t *indices, LtdSite site);

/// out = dsc.random_uniform (see above): `site.numel` floats.
void randomUniform(Queue, const int64_t *key, float *out, UniformSite site);

/// y = dsc.dropout(x) (see above); x and y may be the same buffer. With
/// site.parts > 1, part[0] (device memory) is the part x is, and element e
/// of sample j is element dropoutFirst(key[2], j, ...) + e of the global
/// batch; `part` may be null when site.parts is 1.
template <typename T>
void dropout(Queue, const T *x, const int64_t *key, T *y, DropoutSite site,
             const int64_t *part = nullptr);

#define DSC_RANDOM_DECLARE(T)                                                  \
  extern template void dropout<T>(Queue, const T *, const int64_t *, T *,      \
                                  DropoutSite, const int64_t *);
DSC_RANDOM_DECLARE(float)
DSC_RANDOM_DECLARE(dsc::rt::BFloat16)
DSC_RANDOM_DECLARE(dsc::rt::Half)
#undef DSC_RANDOM_DECLARE

} // namespace cpu
} // namespace dsc::kernels

#endif // DSC_KERNELS_RANDOM_H
