//===- ExpDouble.h - a double exp that loops vectorise ----------*- C++ -*-===//
//
// libm's exp is a scalar call: in the attention kernels, one per score
// forward and backward, those calls took about a fifth of attention's time
// on GPT-2's CPU step. This exp is arithmetic, bit casts and selects only,
// inline, so an `omp simd` loop around it vectorises.
//
// Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2, with ln2 split so
// that k * ln2_hi is exact for |k| < 2^21; e^r from its Taylor series to
// r^12 (the remainder, r^13 / 13! e^|r|, is below 2.5e-16 relative); 2^k
// built in the exponent bits. With Horner's rounding the result is within
// 1e-15 relative of the exact value (AttentionTest checks it), far below
// the float and 16-bit roundings the attention kernels' results get.
// Domain: x <= 709 (the kernels call it with differences from a maximum or
// from a log-sum-exp, <= 0); below -708 it returns 0 (the exact value is
// below the smallest normal double), above 709 +inf. NaN stays NaN and
// exp(-inf) is 0.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_EXPDOUBLE_H
#define DSC_KERNELS_EXPDOUBLE_H

#include <cstdint>
#include <cstring>
#include <limits>

namespace dsc::kernels {

[[gnu::always_inline]] inline double expDouble(double x) {
  const double lo = -708.0, hi = 709.0;
  const double c = x < lo ? lo : (x > hi ? hi : x);
  // t = c * log2(e) rounded to an integer k, kept in t's low mantissa bits:
  // adding 1.5 * 2^52 leaves no bits below the units (|k| < 2^11).
  const double shifter = 6755399441055744.0;
  const double t = c * 1.4426950408889634 + shifter;
  const double k = t - shifter;
  double r = c - k * 6.93147180369123816490e-01; // ln2_hi: 32 bits
  r = r - k * 1.90821492927058770002e-10;        // ln2_lo
  double p = 1.0 / 479001600;                    // 1/12!
  p = p * r + 1.0 / 39916800;
  p = p * r + 1.0 / 3628800;
  p = p * r + 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // 2^k: the low 12 bits of t's bit pattern plus the bias are k + 1023 (the
  // mantissa is 2^51 + k); shifted into the exponent, the bits above them
  // shift out.
  std::uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  bits = (bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  double e = p * scale;
  e = x < lo ? 0.0 : e;
  e = x > hi ? std::numeric_limits<double>::infinity() : e;
  return x != x ? x : e;
}

} // namespace dsc::kernels

#endif // DSC_KERNELS_EXPDOUBLE_H
