#include "dsc/Target/Cpp.h"

#include <gtest/gtest.h>

using mlir::dsc::splitIntoUnits;

static std::vector<int64_t> split(std::vector<int64_t> sizes, int64_t partBytes) {
  auto units = splitIntoUnits(sizes, partBytes);
  return std::vector<int64_t>(units.begin(), units.end());
}

TEST(SplitIntoUnits, EqualKernelsEvenly) {
  EXPECT_EQ(split({10, 10, 10, 10}, 20), (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(split({10, 10, 10, 10, 10, 10}, 20), (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
}

TEST(SplitIntoUnits, AtLeastOneUnit) {
  EXPECT_EQ(split({10, 10, 10}, 1000), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(split({}, 10).empty());
}

TEST(SplitIntoUnits, AtMostOneUnitPerKernel) {
  // 1 byte per unit would be 300 units: one per kernel instead.
  EXPECT_EQ(split({100, 100, 100}, 1), (std::vector<int64_t>{0, 1, 2}));
}

TEST(SplitIntoUnits, NoUnitIsEmpty) {
  // Four units of 25 bytes: the big kernel spans the second and third, its
  // midpoint in the second; no midpoint falls in the third, which is
  // skipped.
  EXPECT_EQ(split({10, 70, 10, 10}, 25), (std::vector<int64_t>{0, 1, 2, 2}));
}

TEST(SplitIntoUnits, ConsecutiveAndOrdered) {
  std::vector<int64_t> sizes;
  for (int i = 0; i < 1000; ++i)
    sizes.push_back(100 + (i * 7919) % 3000);
  std::vector<int64_t> units = split(sizes, 100000);
  EXPECT_EQ(units.front(), 0);
  for (size_t i = 1; i < units.size(); ++i)
    EXPECT_TRUE(units[i] == units[i - 1] || units[i] == units[i - 1] + 1) << i;
  // About 1.6 MB in units of 100 KB.
  EXPECT_GE(units.back() + 1, 15);
  EXPECT_LE(units.back() + 1, 17);
}
