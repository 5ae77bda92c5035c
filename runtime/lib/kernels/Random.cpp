//===- Random.cpp - random ops on the CPU ----------------------------------===//

#include "dsc/kernels/Random.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace dsc::kernels::cpu {

namespace {
/// Calls draw(e, word) for each element e of a call of `n` elements, the
/// first of which is element `first` of the global batch: word g % 4 of
/// Philox at dropout's counter for `site`, under the key (key0, key1).
template <typename Draw>
void forEachWord(uint64_t first, int64_t n, int64_t site, int64_t step,
                 uint32_t key0, uint32_t key1, Draw draw) {
  // Blocks of four elements of the global batch that this call touches.
  const int64_t blocks = int64_t((first + uint64_t(n) - 1) / 4 - first / 4) + 1;
#pragma omp parallel for schedule(static) if (n >= 65536)
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t block = first / 4 + uint64_t(b);
    const PhiloxWords words = philox4x32(dropoutCounter(block, site, step), key0, key1);
    for (int lane = 0; lane < 4; ++lane)
      if (const int64_t e = dropoutElement(block, lane, first, n); e >= 0)
        draw(e, words.w[lane]);
  }
}
} // namespace

template <typename T>
void dropout(Queue, const T *x, const int64_t *key, T *y, DropoutSite site,
             const int64_t *part) {
  const int64_t n = site.numel;
  if (n <= 0)
    return;
  if (key[3] == 0) { // evaluation: the identity
    if (x != y)
      std::memcpy(y, x, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  const DropoutDraw draw = dropoutDraw(site.p);
  const uint64_t seed = static_cast<uint64_t>(key[0]);
  // Whole samples follow each other in the global batch: the call is one
  // run of n elements. A part of each sample is a run per sample.
  const bool whole = site.parts == 1;
  const int64_t runs = whole ? 1 : n / site.perSample;
  const int64_t length = whole ? n : site.perSample;
  const int64_t r = whole ? 0 : part[0];
  for (int64_t j = 0; j < runs; ++j) {
    const uint64_t first = dropoutFirst(uint64_t(key[2]), j, site.perSample,
                                        site.parts, r);
    const T *xj = x + j * length;
    T *yj = y + j * length;
    forEachWord(first, length, site.seed, key[1], uint32_t(seed),
                uint32_t(seed >> 32), [&](int64_t e, uint32_t word) {
                  yj[e] = T(float(xj[e]) * dropoutMultiplier(word, draw));
                });
  }
}

void randomUniform(Queue, const int64_t *key, float *out, UniformSite site) {
  if (site.numel <= 0)
    return;
  const uint64_t seed = static_cast<uint64_t>(key[0]);
  const uint64_t first = static_cast<uint64_t>(key[2]) *
                         static_cast<uint64_t>(site.perSample);
  forEachWord(first, site.numel, site.seed, key[1], uint32_t(seed),
              uint32_t(seed >> 32) ^ kUniformKeyTag, [&](int64_t e, uint32_t word) {
                out[e] = uniformValue(word, site.low, site.high);
              });
}

void randomLtdIndices(Queue, const int64_t *key, int64_t *indices, LtdSite site) {
  const uint64_t first = static_cast<uint64_t>(key[2]);
#pragma omp parallel for schedule(static) if (site.samples * site.length >= 65536)
  for (int64_t j = 0; j < site.samples; ++j) {
    std::vector<uint64_t> order(static_cast<size_t>(site.length));
    for (int64_t t = 0; t < site.length; ++t)
      order[size_t(t)] = ltdRankKey(
          ltdPriority(first + uint64_t(j), t, key[1], site.seed, uint64_t(key[0])), t);
    std::nth_element(order.begin(), order.begin() + (site.kept - 1), order.end());
    int64_t *row = indices + j * site.kept;
    for (int64_t k = 0; k < site.kept; ++k)
      row[k] = int64_t(uint32_t(order[size_t(k)]));
    std::sort(row, row + site.kept);
  }
}

template void dropout<float>(Queue, const float *, const int64_t *, float *,
                             DropoutSite, const int64_t *);
template void dropout<dsc::rt::BFloat16>(Queue, const dsc::rt::BFloat16 *,
                                         const int64_t *, dsc::rt::BFloat16 *,
                                         DropoutSite, const int64_t *);
template void dropout<dsc::rt::Half>(Queue, const dsc::rt::Half *, const int64_t *,
                                     dsc::rt::Half *, DropoutSite, const int64_t *);

} // namespace dsc::kernels::cpu
