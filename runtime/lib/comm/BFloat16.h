//===- BFloat16.h - bf16 <-> float for reductions ---------------*- C++ -*-===//
//
// MPI has no bf16 type, so bf16 reductions are MPI user operations that
// widen to float, reduce, and round back to nearest even (what PyTorch and
// NCCL do for each partial result). Private to the comm component.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_LIB_COMM_BFLOAT16_H
#define DSC_RUNTIME_LIB_COMM_BFLOAT16_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace dsc::rt {

inline float bf16ToFloat(std::uint16_t value) {
  std::uint32_t bits = std::uint32_t(value) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

inline std::uint16_t floatToBf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  // Rounding could carry a NaN's payload into infinity: keep it a quiet NaN.
  if (std::isnan(value))
    return std::uint16_t((bits >> 16) | 0x0040);
  // Round to nearest, ties to even: add just under half an ulp of the
  // result, plus one when the kept part is odd.
  bits += 0x7FFF + ((bits >> 16) & 1);
  return std::uint16_t(bits >> 16);
}

} // namespace dsc::rt

#endif // DSC_RUNTIME_LIB_COMM_BFLOAT16_H
