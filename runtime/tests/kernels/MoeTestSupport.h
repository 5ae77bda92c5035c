//===- MoeTestSupport.h - routing inputs and naive references for Moe.h ---===//
//
// Random routings (experts, priorities with ties, slots with drops) and
// the definitions of the four routing ops written as directly as they are
// specified: each route's number found by counting the routes before it,
// sums in double. Shared by the CPU suite and the CUDA one.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_KERNELS_MOETESTSUPPORT_H
#define DSC_RUNTIME_TESTS_KERNELS_MOETESTSUPPORT_H

#include "dsc/kernels/MoeShape.h"

#include "KernelTestSupport.h"

#include <cmath>
#include <random>
#include <vector>

namespace dsc::kernels::test {

using dsc::kernels::MoeShape;

/// Experts for every route; a token's choices are distinct when k <= E.
inline std::vector<int64_t> randomExperts(const MoeShape &shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> experts(shape.routeCount());
  for (int64_t s = 0; s < shape.tokens; ++s)
    for (int64_t j = 0; j < shape.choices; ++j) {
      int64_t e;
      bool repeated;
      do {
        e = int64_t(rng() % uint64_t(shape.experts));
        repeated = false;
        for (int64_t i = 0; i < j && shape.choices <= shape.experts; ++i)
          repeated = repeated || experts[s * shape.choices + i] == e;
      } while (repeated);
      experts[s * shape.choices + j] = e;
    }
  return experts;
}

/// Priorities drawn from a few values, so that ties are common.
inline std::vector<float> randomPriorities(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> p(count);
  for (float &x : p)
    x = float(rng() % 7) * 0.25f - 0.5f;
  return p;
}

/// Priority order of routes a and b: higher priority (NaN highest), then
/// lower position.
inline bool ranksBefore(const std::vector<float> &priority, int64_t a, int64_t b) {
  float pa = priority[a], pb = priority[b];
  bool aAbove = pa > pb || (std::isnan(pa) && !std::isnan(pb));
  bool bAbove = pb > pa || (std::isnan(pb) && !std::isnan(pa));
  return aAbove || (!bAbove && a < b);
}

/// dsc.moe_slots by its definition, route by route. `priority` empty: no
/// priority.
inline void referenceSlots(const std::vector<int64_t> &experts,
                           const std::vector<float> &priority, const MoeShape &shape,
                           std::vector<int64_t> &slots, std::vector<int64_t> &counts) {
  const int64_t routes = shape.routeCount(), k = shape.choices;
  slots.assign(routes, -1);
  counts.assign(shape.experts, 0);
  auto valid = [&](int64_t p) { return experts[p] >= 0 && experts[p] < shape.experts; };
  for (int64_t p = 0; p < routes; ++p)
    if (valid(p))
      ++counts[experts[p]];
  // With priority: kept when fewer than C routes of its expert rank before it.
  std::vector<bool> kept(routes, priority.empty());
  for (int64_t p = 0; p < routes && !priority.empty(); ++p) {
    int64_t better = 0;
    for (int64_t q = 0; q < routes; ++q)
      better += valid(p) && q != p && experts[q] == experts[p] && ranksBefore(priority, q, p);
    kept[p] = better < shape.capacity;
  }
  for (int64_t p = 0; p < routes; ++p) {
    if (!valid(p) || !kept[p])
      continue;
    int64_t e = experts[p], s = p / k, j = p % k, number = 0;
    for (int64_t q = 0; q < routes; ++q) {
      if (experts[q] != e || !kept[q])
        continue;
      // Before (s, j): in (j, s) order without priority, by position with it.
      number += priority.empty() ? (q % k < j || (q % k == j && q / k < s)) : q < p;
    }
    if (number < shape.capacity)
      slots[p] = e * shape.capacity + number;
  }
}

/// Slots of a routing with drops: moe_slots's definition on random experts.
inline std::vector<int64_t> randomSlots(const MoeShape &shape, unsigned seed) {
  std::vector<int64_t> slots, counts;
  referenceSlots(randomExperts(shape, seed), {}, shape, slots, counts);
  return slots;
}

/// dsc.moe_dispatch in double.
template <typename T>
std::vector<double> referenceDispatch(const std::vector<T> &x, const std::vector<int64_t> &slots,
                                      const std::vector<T> *weights, const MoeShape &shape) {
  std::vector<double> out(shape.slotCount() * shape.width, 0.0);
  for (int64_t p = 0; p < shape.routeCount(); ++p) {
    if (slots[p] < 0)
      continue;
    double w = weights ? asDouble((*weights)[p]) : 1.0;
    for (int64_t m = 0; m < shape.width; ++m)
      out[slots[p] * shape.width + m] = asDouble(x[p / shape.choices * shape.width + m]) * w;
  }
  return out;
}

/// dsc.moe_combine in double; `magnitude` gets the sum of the terms'
/// absolute values per element (what float rounding scales with).
template <typename T>
std::vector<double> referenceCombine(const std::vector<T> &in, const std::vector<int64_t> &slots,
                                     const std::vector<T> *weights, const MoeShape &shape,
                                     std::vector<double> &magnitude) {
  std::vector<double> out(shape.tokens * shape.width, 0.0);
  magnitude.assign(out.size(), 0.0);
  for (int64_t p = 0; p < shape.routeCount(); ++p) {
    if (slots[p] < 0)
      continue;
    double w = weights ? asDouble((*weights)[p]) : 1.0;
    for (int64_t m = 0; m < shape.width; ++m) {
      double term = asDouble(in[slots[p] * shape.width + m]) * w;
      out[p / shape.choices * shape.width + m] += term;
      magnitude[p / shape.choices * shape.width + m] += std::abs(term);
    }
  }
  return out;
}

/// dsc.moe_route_dot in double, with the sums of |products| per route.
template <typename T>
std::vector<double> referenceRouteDot(const std::vector<T> &rows, const std::vector<T> &slotted,
                                      const std::vector<int64_t> &slots, const MoeShape &shape,
                                      std::vector<double> &magnitude) {
  std::vector<double> out(shape.routeCount(), 0.0);
  magnitude.assign(out.size(), 0.0);
  for (int64_t p = 0; p < shape.routeCount(); ++p) {
    if (slots[p] < 0)
      continue;
    for (int64_t m = 0; m < shape.width; ++m) {
      double term = asDouble(rows[p / shape.choices * shape.width + m]) *
                    asDouble(slotted[slots[p] * shape.width + m]);
      out[p] += term;
      magnitude[p] += std::abs(term);
    }
  }
  return out;
}

} // namespace dsc::kernels::test

#endif // DSC_RUNTIME_TESTS_KERNELS_MOETESTSUPPORT_H
