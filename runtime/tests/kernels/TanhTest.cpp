//===- TanhTest.cpp - the vectorisable float tanh against long double -----===//
//
// dsc/kernels/Tanh.h computes tanh in double with a relative error below
// about 5e-11 (its header derives the bound) and rounds once, so its float
// is the exact tanh rounded to nearest but where the exact value lies within
// that distance of the midpoint between two floats: there it may be the
// other neighbour, one ulp away. The reference is tanhl rounded to float
// (long double: 64-bit mantissa, far below the bound). Checked on a sweep of
// every 127th bit pattern of float (33.8 million values, both signs, every
// exponent, subnormals, infinities and NaNs) and on the special values.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Tanh.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using dsc::kernels::tanhF32;

namespace {

float floatOf(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::int64_t bitsOf(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float reference(float x) { return static_cast<float>(std::tanh(static_cast<long double>(x))); }

TEST(TanhF32, SpecialValues) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tanhF32(inf), 1.0f);
  EXPECT_EQ(tanhF32(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(tanhF32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(tanhF32(0.0f), 0.0f);
  EXPECT_FALSE(std::signbit(tanhF32(0.0f)));
  EXPECT_TRUE(std::signbit(tanhF32(-0.0f)));
  // tanh x = x in float below 2^-12, subnormals included.
  EXPECT_EQ(tanhF32(std::numeric_limits<float>::denorm_min()),
            std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(tanhF32(-1e-30f), -1e-30f);
  // The branch boundary and the clamp.
  EXPECT_EQ(tanhF32(0.125f), reference(0.125f));
  EXPECT_EQ(tanhF32(std::nextafter(0.125f, 0.0f)), reference(std::nextafter(0.125f, 0.0f)));
  EXPECT_EQ(tanhF32(9.0f), reference(9.0f));
  EXPECT_EQ(tanhF32(10.0f), 1.0f);
  EXPECT_EQ(tanhF32(-3e38f), -1.0f);
}

TEST(TanhF32, WithinOneUlpOfTheRoundedExactValue) {
  std::int64_t checked = 0, oneUlp = 0;
  for (std::uint64_t bits = 0; bits < (std::uint64_t(1) << 32); bits += 127) {
    const float x = floatOf(static_cast<std::uint32_t>(bits));
    const float got = tanhF32(x), want = reference(x);
    ++checked;
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << "x = " << x;
      continue;
    }
    const std::int64_t distance = std::llabs(bitsOf(got) - bitsOf(want));
    ASSERT_LE(distance, 1) << "x = " << x << ": " << got << " vs " << want;
    oneUlp += distance;
  }
  EXPECT_EQ(checked, 33818641);
  // Only values within ~5e-11 (relative) of a midpoint may round the other
  // way: a fraction of about 2 * 5e-11 / 2^-24 = 2e-3 at the very most.
  EXPECT_LT(oneUlp, checked / 500) << oneUlp << " of " << checked;
}

} // namespace
