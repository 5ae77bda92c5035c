// The 16-bit storage types of mixed-precision artifacts (Float16.h): exact
// round trips, round-to-nearest-even at ties, overflow to infinity, NaN,
// signed zeros and subnormals, for bf16 and IEEE half.

#include "dsc/runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using namespace dsc::rt;

namespace {

float fromBits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint32_t bitsOf(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

} // namespace

TEST(BFloat16, EveryFiniteValueRoundTrips) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    float f = bf16ToFloat(std::uint16_t(b));
    if (std::isnan(f))
      continue;
    EXPECT_EQ(floatToBf16(f), b) << std::hex << b;
  }
}

TEST(BFloat16, RoundsToNearestTiesToEven) {
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even 1.
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3F80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up.
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3F82);
  // Just above and below the halfway point go to the nearer neighbour.
  EXPECT_EQ(floatToBf16(fromBits(0x3F808001)), 0x3F81);
  EXPECT_EQ(floatToBf16(fromBits(0x3F807FFF)), 0x3F80);
  // Negative values round by magnitude.
  EXPECT_EQ(floatToBf16(-(1.0f + 3 * 0x1p-8f)), 0xBF82);
  // pi: 0x40490FDB -> 0x4049 (the dropped part 0x0FDB is below half).
  EXPECT_EQ(floatToBf16(3.14159265f), 0x4049);
}

TEST(BFloat16, OverflowInfinityAndNan) {
  // The largest float rounds up past bf16's largest finite value.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBf16(kInf), 0x7F80);
  EXPECT_EQ(floatToBf16(-kInf), 0xFF80);
  EXPECT_EQ(bf16ToFloat(0x7F7F), fromBits(0x7F7F0000)); // largest finite
  // A NaN whose payload lies only in the dropped bits stays a NaN.
  std::uint16_t nan = floatToBf16(fromBits(0x7F800001));
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(float(BFloat16(-std::nanf("")))));
}

TEST(BFloat16, SignedZerosAndSubnormals) {
  EXPECT_EQ(floatToBf16(0.0f), 0x0000);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  // bf16 keeps float's exponent range: the smallest float subnormal with a
  // bit in the kept half survives, one below half of it flushes to zero.
  EXPECT_EQ(floatToBf16(fromBits(0x00010000)), 0x0001);
  EXPECT_EQ(bf16ToFloat(0x0001), fromBits(0x00010000));
  EXPECT_EQ(floatToBf16(fromBits(0x00007FFF)), 0x0000);
  // Halfway to the smallest subnormal: ties to even (zero).
  EXPECT_EQ(floatToBf16(fromBits(0x00008000)), 0x0000);
  EXPECT_EQ(floatToBf16(fromBits(0x00018000)), 0x0002);
}

TEST(Half, EveryFiniteValueRoundTrips) {
  for (std::uint32_t b = 0; b <= 0xFFFF; ++b) {
    float f = f16ToFloat(std::uint16_t(b));
    if (std::isnan(f))
      continue;
    EXPECT_EQ(floatToF16(f), b) << std::hex << b;
  }
}

TEST(Half, KnownValuesAndRounding) {
  EXPECT_EQ(floatToF16(1.0f), 0x3C00);
  EXPECT_EQ(floatToF16(-2.0f), 0xC000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7BFF); // largest finite
  EXPECT_EQ(f16ToFloat(0x3555), 0.333251953125f);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3C00);
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3C02);
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
}

TEST(Half, OverflowInfinityAndNan) {
  // 65520 is halfway between 65504 and the next binade's 65536: it rounds
  // to even, which is infinity; anything below stays finite.
  EXPECT_EQ(floatToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToF16(65520.0f), 0x7C00);
  EXPECT_EQ(floatToF16(1e10f), 0x7C00);
  EXPECT_EQ(floatToF16(-kInf), 0xFC00);
  EXPECT_EQ(f16ToFloat(0x7C00), kInf);
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7E00)));
}

TEST(Half, SignedZerosAndSubnormals) {
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001); // smallest subnormal
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(floatToF16(0x1p-14f), 0x0400); // smallest normal
  EXPECT_EQ(f16ToFloat(0x03FF), 0x1p-14f - 0x1p-24f); // largest subnormal
  // Half of the smallest subnormal ties to even (zero); a bit more rounds
  // up; well below flushes to zero with the sign kept.
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToF16(0x1p-25f + 0x1p-35f), 0x0001);
  EXPECT_EQ(floatToF16(-0x1p-30f), 0x8000);
  // 3 * 2^-25 is halfway between subnormals 1 and 2: ties to even (2).
  EXPECT_EQ(floatToF16(3 * 0x1p-25f), 0x0002);
}

TEST(Float16, StorageTypesConvertImplicitly) {
  BFloat16 b = 1.5f;
  Half h = 0.1f;
  EXPECT_EQ(b.bits, 0x3FC0);
  EXPECT_EQ(h.bits, 0x2E66);
  // Arithmetic happens on float after the implicit widening.
  float sum = b + h;
  EXPECT_EQ(sum, 1.5f + f16ToFloat(0x2E66));
  EXPECT_EQ(bitsOf(float(BFloat16(-0.0f))), 0x80000000u);
}
