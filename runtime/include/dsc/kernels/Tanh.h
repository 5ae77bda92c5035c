//===- Tanh.h - a float tanh that loops vectorise ---------------*- C++ -*-===//
//
// libm's tanhf is a scalar call, so an elementwise loop containing it (GELU's
// tanh approximation, forward and backward) runs one element at a time: on
// GPT-2's CPU training step those calls took about 7% of the step. This tanh
// is arithmetic and selects only, inline, so the loop around it vectorises
// (under -fno-trapping-math, which artifacts are compiled with: GCC will not
// if-convert a select between two computed values otherwise).
//
// It computes in double and rounds once, so the float result is the exact
// tanh rounded to nearest but where the exact value lies within about 5e-11
// (relative) of a midpoint between two floats, where it may be the other
// neighbour (runtime/tests/kernels/TanhTest.cpp checks both):
//   - |x| < 1/8: the odd Taylor series to x^11; the first term left out,
//     (21844/6081075) x^13, is below 5e-14 of x there;
//   - otherwise tanh |x| = 1 - 2 / (e^{2|x|} + 1), with e^{2|x|} = p^32 and
//     p = e^{y}, y = |x| / 16 in [1/128, 0.625], from its Taylor series to
//     y^12 (the remainder below 3.5e-13 relative); five squarings multiply
//     the relative error by 32 (1.1e-11), and 1 - 2 / (e + 1) multiplies
//     it by at most 1 / (2|x|) <= 4, where tanh is smallest on this branch.
// |x| is clamped at 10, beyond which tanh rounds to 1 in float (1 - tanh 9.1
// is below half an ulp of 1), so e^{2|x|} stays finite; NaN passes through
// every operation and comparison unchanged, and tanh(-0) is -0.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELS_TANH_H
#define DSC_KERNELS_TANH_H

#include <cmath>

namespace dsc::kernels {

inline float tanhF32(float value) {
  const double x = value;
  double a = std::fabs(x);
  a = a > 10.0 ? 10.0 : a; // NaN compares false and stays
  const double s = a * a;
  const double series =
      a + a * s *
              (-1.0 / 3 +
               s * (2.0 / 15 +
                    s * (-17.0 / 315 +
                         s * (62.0 / 2835 + s * (-1382.0 / 155925)))));
  const double y = a * (1.0 / 16);
  double p = 1.0 / 479001600; // 1/12!
  p = p * y + 1.0 / 39916800;
  p = p * y + 1.0 / 3628800;
  p = p * y + 1.0 / 362880;
  p = p * y + 1.0 / 40320;
  p = p * y + 1.0 / 5040;
  p = p * y + 1.0 / 720;
  p = p * y + 1.0 / 120;
  p = p * y + 1.0 / 24;
  p = p * y + 1.0 / 6;
  p = p * y + 1.0 / 2;
  p = p * y + 1.0;
  p = p * y + 1.0; // e^{|x| / 16}
  p *= p;          // e^{|x| / 8}
  p *= p;          // e^{|x| / 4}
  p *= p;          // e^{|x| / 2}
  p *= p;          // e^{|x|}
  p *= p;          // e^{2|x|}
  const double viaExp = 1.0 - 2.0 / (p + 1.0);
  const double t = a < 0.125 ? series : viaExp;
  return static_cast<float>(std::copysign(t, x)); // -0 stays -0
}

} // namespace dsc::kernels

#endif // DSC_KERNELS_TANH_H
