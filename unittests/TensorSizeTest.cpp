#include "dsc/Support/TensorSize.h"

#include <gtest/gtest.h>

#include <limits>

using mlir::dsc::bytesPerElement;
using mlir::dsc::checkedByteSize;
using mlir::dsc::checkedNumElements;

TEST(TensorSize, ScalarHasOneElement) {
  EXPECT_EQ(checkedNumElements({}), 1);
  EXPECT_EQ(checkedByteSize({}, 32), 4);
}

TEST(TensorSize, CountsAndBytes) {
  EXPECT_EQ(checkedNumElements({50257, 768}), 38597376);
  EXPECT_EQ(checkedByteSize({50257, 768}, 32), 154389504);
  EXPECT_EQ(checkedByteSize({50257, 768}, 16), 77194752);
  EXPECT_EQ(checkedNumElements({4, 0, 7}), 0);
}

TEST(TensorSize, SubByteElementsTakeWholeBytes) {
  EXPECT_EQ(bytesPerElement(1), 1);
  EXPECT_EQ(bytesPerElement(8), 1);
  EXPECT_EQ(bytesPerElement(16), 2);
  EXPECT_EQ(bytesPerElement(64), 8);
  EXPECT_EQ(checkedByteSize({3, 5}, 1), 15);
}

TEST(TensorSize, NegativeDimensionsHaveNoSize) {
  EXPECT_FALSE(checkedNumElements({4, -1}));
  EXPECT_FALSE(checkedByteSize({std::numeric_limits<int64_t>::min()}, 32));
}

TEST(TensorSize, ElementCountOverflowIsDetected) {
  // 2^32 * 2^32 = 2^64 does not fit in int64.
  EXPECT_FALSE(checkedNumElements({int64_t(1) << 32, int64_t(1) << 32}));
  // 2^62 elements fit, but not 2^62 * 4 bytes.
  EXPECT_EQ(checkedNumElements({int64_t(1) << 62}), int64_t(1) << 62);
  EXPECT_FALSE(checkedByteSize({int64_t(1) << 62}, 32));
  // The largest count that fits, as bytes of i8.
  int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(checkedByteSize({max}, 8), max);
  EXPECT_FALSE(checkedByteSize({max}, 16));
}
