//===- Float16.h - bf16 and IEEE half storage types on the CPU --*- C++ -*-===//
//
// Mixed-precision artifacts store 16-bit tensors as 2-byte words and compute
// in float: each value is widened to float where it is read and rounded
// back where it is written. BFloat16 and Half are those words with the two
// conversions as implicit constructor and conversion operator, so emitted
// kernels written for float compile unchanged for 16-bit tensors (the
// arithmetic happens on float after the implicit widening; the types define
// no operators of their own, so mixed float/16-bit expressions are never
// ambiguous).
//
// Rounding: float -> bf16 rounds to nearest, ties to even, as PyTorch's
// c10::BFloat16 and CUDA's __float2bfloat16 do; NaN stays a quiet NaN,
// overflow goes to infinity, float subnormals keep their top bits. Half
// uses the compiler's IEEE binary16 type (_Float16: GCC >= 12 and clang on
// x86-64, F16C instructions where enabled, libgcc otherwise), so rounding,
// subnormals, infinities and NaN are the standard's. The CUDA target uses
// the same layout with CUDA's own conversions (dsc/runtime/GeneratedCode.cuh).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RUNTIME_FLOAT16_H
#define DSC_RUNTIME_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace dsc::rt {

inline float bf16ToFloat(std::uint16_t bits) {
  std::uint32_t wide = std::uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

inline std::uint16_t floatToBf16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  // Rounding could carry a NaN's payload into infinity: keep it a quiet NaN.
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u)
    return std::uint16_t((bits >> 16) | 0x0040);
  // Round to nearest, ties to even: add just under half an ulp of the
  // result, plus one when the kept part is odd.
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return std::uint16_t(bits >> 16);
}

inline float f16ToFloat(std::uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, sizeof half);
  return static_cast<float>(half);
}

inline std::uint16_t floatToF16(float value) {
  _Float16 half = static_cast<_Float16>(value);
  std::uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}

/// A bf16 element: 2 bytes, widened to float when read.
struct BFloat16 {
  std::uint16_t bits;
  BFloat16() = default;
  BFloat16(float value) : bits(floatToBf16(value)) {}
  operator float() const { return bf16ToFloat(bits); }
};

/// An IEEE binary16 element: 2 bytes, widened to float when read.
struct Half {
  std::uint16_t bits;
  Half() = default;
  Half(float value) : bits(floatToF16(value)) {}
  operator float() const { return f16ToFloat(bits); }
};

static_assert(sizeof(BFloat16) == 2 && sizeof(Half) == 2,
              "16-bit tensors are arrays of 2-byte words");

} // namespace dsc::rt

#endif // DSC_RUNTIME_FLOAT16_H
