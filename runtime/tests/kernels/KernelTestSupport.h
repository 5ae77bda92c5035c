//===- KernelTestSupport.h - shared helpers of the kernel library's tests -===//
//
// Random tensors of any element type, values as double for the references,
// tolerances of one rounding to an element type, and a runner that calls a
// kernel on a given number of OpenMP threads.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_TESTS_KERNELS_KERNELTESTSUPPORT_H
#define DSC_RUNTIME_TESTS_KERNELS_KERNELTESTSUPPORT_H

#include "dsc/runtime/Float16.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace dsc::kernels::test {

using dsc::rt::BFloat16;
using dsc::rt::Half;

template <typename T> std::string typeName() {
  if constexpr (std::is_same_v<T, float>) return "f32";
  if constexpr (std::is_same_v<T, double>) return "f64";
  if constexpr (std::is_same_v<T, BFloat16>) return "bf16";
  if constexpr (std::is_same_v<T, Half>) return "f16";
  if constexpr (std::is_same_v<T, int64_t>) return "i64";
  if constexpr (std::is_same_v<T, int32_t>) return "i32";
  if constexpr (std::is_same_v<T, uint8_t>) return "u8";
  return "?";
}

template <typename T> double asDouble(T x) {
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)
    return double(float(x));
  else
    return double(x);
}

template <typename T> T fromDouble(double x) {
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)
    return T(float(x));
  else
    return static_cast<T>(x);
}

/// Uniform values in [-1, 1) (floats) or [-50, 50] (integers).
template <typename T> std::vector<T> randomTensor(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(count);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<int> d(-50, 50);
    for (T &x : v)
      x = T(d(rng));
  } else {
    std::uniform_real_distribution<double> d(-1, 1);
    for (T &x : v)
      x = fromDouble<T>(d(rng));
  }
  return v;
}

/// Indices uniform in [0, size).
inline std::vector<int64_t> randomIndices(int64_t count, int64_t size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(0, size - 1);
  std::vector<int64_t> v(count);
  for (int64_t &x : v)
    x = d(rng);
  return v;
}

/// Relative error of one rounding to T (half an ulp), 0 for integers.
template <typename T> double roundingOf() {
  if constexpr (std::is_same_v<T, float>) return std::ldexp(1.0, -24);
  if constexpr (std::is_same_v<T, double>) return std::ldexp(1.0, -53);
  if constexpr (std::is_same_v<T, BFloat16>) return std::ldexp(1.0, -8);
  if constexpr (std::is_same_v<T, Half>) return std::ldexp(1.0, -11);
  return 0;
}

/// Absolute error of one rounding to T among its subnormals.
template <typename T> double subnormalRoundingOf() {
  if constexpr (std::is_same_v<T, float>) return std::ldexp(1.0, -150);
  if constexpr (std::is_same_v<T, BFloat16>) return std::ldexp(1.0, -134);
  if constexpr (std::is_same_v<T, Half>) return std::ldexp(1.0, -25);
  return 0;
}

/// Same bytes.
template <typename T> bool bitwiseEqual(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// The message of the std::out_of_range `f` throws ("" if none).
template <typename F> std::string outOfRange(F &&f) {
  try {
    f();
  } catch (const std::out_of_range &e) {
    return e.what();
  }
  return "";
}

/// Runs `f` with `threads` OpenMP threads, then restores the default.
template <typename F> void withThreads(int threads, F &&f) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  f();
  omp_set_num_threads(saved);
}

} // namespace dsc::kernels::test

#endif // DSC_RUNTIME_TESTS_KERNELS_KERNELTESTSUPPORT_H
