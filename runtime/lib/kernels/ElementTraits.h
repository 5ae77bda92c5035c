//===- ElementTraits.h - how the CPU kernels read and round elements ------===//
//
// Shared by the CPU kernel sources (not installed): 16-bit floats are read
// as float; sums accumulate in double (float data) or int64 (integers); a
// result is rounded once to its element type.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_KERNELS_ELEMENTTRAITS_H
#define DSC_RUNTIME_LIB_KERNELS_ELEMENTTRAITS_H

#include "dsc/runtime/Float16.h"

#include <cstdint>
#include <type_traits>

namespace dsc::kernels::cpu::detail {

/// The types that compute as themselves (16-bit floats compute as float).
template <typename T>
inline constexpr bool kComputesAsItself =
    std::is_integral_v<T> || std::is_same_v<T, double> || std::is_same_v<T, float>;

/// What an element is read as.
template <typename T> using Wide = std::conditional_t<kComputesAsItself<T>, T, float>;

/// What sums of T accumulate in.
template <typename T>
using SumAcc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

/// `value` rounded once to T (16-bit types through float, which holds
/// every value they can round to).
template <typename T, typename A> T store(A value) {
  if constexpr (kComputesAsItself<T>)
    return static_cast<T>(value);
  else
    return T(static_cast<float>(value));
}

} // namespace dsc::kernels::cpu::detail

#endif // DSC_RUNTIME_LIB_KERNELS_ELEMENTTRAITS_H
