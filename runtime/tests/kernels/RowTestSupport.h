//===- RowTestSupport.h - shared pieces of the row kernel tests -*- C++ -*-===//
//
// Random inputs, tolerances per element type and an element-wise comparison
// that names the first element out of tolerance, for the GoogleTests of the
// kernel library.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_KERNELS_ROWTESTSUPPORT_H
#define DSC_RUNTIME_TESTS_KERNELS_ROWTESTSUPPORT_H

#include "dsc/runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace dsc::kernels::test {

/// Values uniform in [lo, hi), rounded to T.
template <typename T>
std::vector<T> randomVector(std::size_t n, std::uint32_t seed, float lo = -3.0f,
                            float hi = 3.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(d(rng));
  return v;
}

template <typename T> std::vector<double> widen(const std::vector<T> &v) {
  std::vector<double> w(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    w[i] = static_cast<float>(v[i]);
  return w;
}

/// The relative error allowed in a result of type T against an exact
/// reference computed from the same (already rounded) inputs. 16-bit: one
/// ulp, the one rounding of the result (half an ulp) plus a rounding
/// decision that the float computation before it may flip. float: 4 ulp:
/// a softmax value carries the error of its exp (1 ulp), that of the row's
/// sum of exps (1 ulp) and the final rounding (half an ulp).
template <typename T> double relTolerance() {
  if constexpr (std::is_same_v<T, dsc::rt::BFloat16>)
    return 1.0 / 128; // 2^-7: bf16 keeps 8 significant bits
  else if constexpr (std::is_same_v<T, dsc::rt::Half>)
    return 1.0 / 1024; // 2^-10: half keeps 11
  else
    return 4.8e-7; // 4 * 2^-23
}

/// Expects |got - ref| <= rel * |ref| + abs for every element; reports the
/// first element that is not.
template <typename T>
void expectClose(const std::vector<T> &got, const std::vector<double> &ref, double rel,
                 double abs, const std::string &what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    double g = static_cast<float>(got[i]);
    if (std::isnan(ref[i]) && std::isnan(g))
      continue;
    if (!(std::fabs(g - ref[i]) <= rel * std::fabs(ref[i]) + abs)) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << ref[i]
                    << " (rel " << rel << ", abs " << abs << ")";
      return;
    }
  }
}

/// The largest magnitude in v: the scale of the absolute tolerance of
/// results that come from cancelling sums.
inline double maxAbs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

} // namespace dsc::kernels::test

#endif // DSC_RUNTIME_TESTS_KERNELS_ROWTESTSUPPORT_H
