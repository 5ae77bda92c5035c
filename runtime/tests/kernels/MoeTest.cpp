//===- MoeTest.cpp - expert slots, dispatch, combine, route dot -----------===//
//
// Against MoeTestSupport.h's definitions: slots exactly (hand-made cases
// for the numbering rules, random ones against the route-by-route
// definition); rows within the rounding their float sums allow; the same
// bits on 1 and 4 threads; bad experts and slots as errors; and dispatch
// and combine as each other's adjoints.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Moe.h"

#include "MoeTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;

namespace {

struct Slots {
  std::vector<int64_t> slots, counts;
};

Slots runSlots(const std::vector<int64_t> &experts, const std::vector<float> &priority,
               const MoeShape &shape) {
  Slots r{std::vector<int64_t>(shape.routeCount(), 99), std::vector<int64_t>(shape.experts, 99)};
  cpu::moeSlots(cpu::Queue{}, experts.data(), priority.empty() ? nullptr : priority.data(),
                r.slots.data(), r.counts.data(), shape);
  return r;
}

// Top-2 over 2 experts of capacity 3: expert 0's first choices (tokens 0,
// 1, 3) take its 3 places, so token 2's second choice is dropped though it
// is token 2; expert 1's second choices queue behind its only first choice
// (token 2), and token 3's, the fourth, is dropped. Counts are before
// dropping.
TEST(MoeKernels, SecondChoicesQueueBehindEveryFirstChoice) {
  MoeShape shape{4, 2, 1, 2, 3};
  Slots r = runSlots({0, 1, 0, 1, 1, 0, 0, 1}, {}, shape);
  EXPECT_EQ(r.slots, (std::vector<int64_t>{0, 4, 1, 5, 3, -1, 2, -1}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{4, 4}));
}

// Top-1, capacity 2: the first two tokens of each expert are kept.
TEST(MoeKernels, TopOneKeepsTheFirstTokens) {
  MoeShape shape{6, 1, 1, 3, 2};
  Slots r = runSlots({2, 2, 0, 2, 0, 0}, {}, shape);
  EXPECT_EQ(r.slots, (std::vector<int64_t>{4, 5, 0, -1, 1, -1}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{3, 0, 3}));
}

// With priority, capacity 2: expert 0 keeps its two highest (0.9 at
// position 3 and 0.5 at 0 beating the 0.5 at 4: ties go to the earlier
// position) and numbers them by position; expert 1 keeps both of its
// routes. NaN ranks above every number.
TEST(MoeKernels, PriorityKeepsTheBestAndTiesGoToTheEarlierRoute) {
  MoeShape shape{3, 2, 1, 2, 2};
  Slots r = runSlots({0, 1, 1, 0, 0, 0}, {0.5f, 0.1f, -1.0f, 0.9f, 0.5f, 0.2f}, shape);
  EXPECT_EQ(r.slots, (std::vector<int64_t>{0, 2, 3, 1, -1, -1}));
  EXPECT_EQ(r.counts, (std::vector<int64_t>{4, 2}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r = runSlots({0, 1, 1, 0, 0, 0}, {0.5f, 0.1f, -1.0f, 0.9f, 0.5f, nan}, shape);
  EXPECT_EQ(r.slots, (std::vector<int64_t>{-1, 2, 3, 0, -1, 1}));
}

TEST(MoeKernels, SlotsFollowTheDefinition) {
  const MoeShape shapes[] = {{1, 1, 1, 1, 1},  {40, 1, 1, 4, 7},   {37, 2, 1, 5, 9},
                             {50, 2, 1, 8, 20}, {30, 3, 1, 4, 10}, {64, 2, 1, 3, 100},
                             {20, 4, 1, 2, 5}};
  unsigned seed = 1;
  for (const MoeShape &shape : shapes)
    for (bool withPriority : {false, true}) {
      auto experts = randomExperts(shape, seed++);
      std::vector<float> priority;
      if (withPriority)
        priority = randomPriorities(shape.routeCount(), seed++);
      Slots want;
      referenceSlots(experts, priority, shape, want.slots, want.counts);
      for (int threads : {1, 4}) {
        Slots got;
        withThreads(threads, [&] { got = runSlots(experts, priority, shape); });
        EXPECT_EQ(got.slots, want.slots) << shape.tokens << "x" << shape.choices << " over "
                                         << shape.experts << " priority " << withPriority;
        EXPECT_EQ(got.counts, want.counts);
      }
    }
}

TEST(MoeKernels, BadExpertsAreErrors) {
  MoeShape shape{3, 2, 1, 4, 2};
  std::vector<int64_t> experts = {0, 1, 4, 2, -1, 3};
  std::vector<int64_t> slots(6), counts(4);
  EXPECT_EQ(outOfRange([&] {
              cpu::moeSlots(cpu::Queue{}, experts.data(), nullptr, slots.data(), counts.data(),
                            shape);
            }),
            "dsc.moe_slots: index 4 is outside [0, 4)");
  // The bad routes are dropped and not counted; the others are placed.
  EXPECT_EQ(slots, (std::vector<int64_t>{0, 2, -1, 4, -1, 6}));
  EXPECT_EQ(counts, (std::vector<int64_t>{1, 1, 1, 1}));
  std::vector<float> priority(6, 1.0f);
  EXPECT_EQ(outOfRange([&] {
              cpu::moeSlots(cpu::Queue{}, experts.data(), priority.data(), slots.data(),
                            counts.data(), shape);
            }),
            "dsc.moe_slots: index 4 is outside [0, 4)");
}

const MoeShape kRowShapes[] = {
    {37, 2, 13, 5, 9},   // odd width: no 16-byte rows
    {64, 2, 64, 4, 20},  // drops
    {16, 1, 40, 4, 8},   // top-1
    {25, 3, 24, 6, 30},  // more room than routes: empty slots
    {300, 2, 136, 8, 70} // parallel loops
};

/// `run(out)`'s result on 1 thread, checked to be the same bits on 4;
/// out starts as 7s, which no result keeps.
template <typename T, typename Run> std::vector<T> onOneAndFourThreads(size_t count, Run run) {
  std::vector<T> one(count, fromDouble<T>(7.0)), four = one;
  withThreads(1, [&] { run(one.data()); });
  withThreads(4, [&] { run(four.data()); });
  EXPECT_TRUE(bitwiseEqual(one, four)) << typeName<T>() << " thread count";
  return one;
}

/// Dispatch: each kept route's row copied or scaled (one rounding to T,
/// twice for 16-bit types scaled: through float), zeros in empty slots.
template <typename T> void checkDispatch(const MoeShape &shape, bool weighted, unsigned seed) {
  auto x = randomTensor<T>(shape.tokens * shape.width, seed);
  auto w = randomTensor<T>(shape.routeCount(), seed + 1);
  auto slots = randomSlots(shape, seed + 2);
  auto want = referenceDispatch(x, slots, weighted ? &w : nullptr, shape);
  auto one = onOneAndFourThreads<T>(want.size(), [&](T *out) {
    cpu::moeDispatch(cpu::Queue{}, x.data(), slots.data(), weighted ? w.data() : nullptr, out,
                     shape);
  });
  const double rounding = weighted ? roundingOf<T>() + roundingOf<float>() : 0.0;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(asDouble(one[i]), want[i],
                2 * rounding * std::abs(want[i]) + 2 * subnormalRoundingOf<T>())
        << typeName<T>() << " weighted " << weighted << " at " << i;
}

/// Combine: k float roundings of sums and products, then one to T.
template <typename T> void checkCombine(const MoeShape &shape, bool weighted, unsigned seed) {
  auto in = randomTensor<T>(shape.slotCount() * shape.width, seed);
  auto w = randomTensor<T>(shape.routeCount(), seed + 1);
  auto slots = randomSlots(shape, seed + 2);
  std::vector<double> magnitude;
  auto want = referenceCombine(in, slots, weighted ? &w : nullptr, shape, magnitude);
  auto one = onOneAndFourThreads<T>(want.size(), [&](T *out) {
    cpu::moeCombine(cpu::Queue{}, in.data(), slots.data(), weighted ? w.data() : nullptr, out,
                    shape);
  });
  const double floatRoundings = 2.0 * double(shape.choices);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(asDouble(one[i]), want[i],
                floatRoundings * roundingOf<float>() * magnitude[i] +
                    roundingOf<T>() * std::abs(want[i]) + subnormalRoundingOf<T>())
        << typeName<T>() << " weighted " << weighted << " at " << i;
}

/// Route dot: each lane's float sum (its chunks' elements, one product and
/// one sum rounding each), five tree levels, then one rounding to T.
template <typename T> void checkRouteDot(const MoeShape &shape, unsigned seed) {
  auto rows = randomTensor<T>(shape.tokens * shape.width, seed);
  auto slotted = randomTensor<T>(shape.slotCount() * shape.width, seed + 1);
  auto slots = randomSlots(shape, seed + 2);
  std::vector<double> magnitude;
  auto want = referenceRouteDot(rows, slotted, slots, shape, magnitude);
  auto one = onOneAndFourThreads<T>(want.size(), [&](T *out) {
    cpu::moeRouteDot(cpu::Queue{}, rows.data(), slotted.data(), slots.data(), out, shape);
  });
  const int64_t V = dsc::kernels::kMoeChunk<T>;
  const int64_t chunks = (shape.width + V - 1) / V;
  const double depth = double((chunks + 31) / 32 * V + 5 + 1);
  for (size_t p = 0; p < want.size(); ++p)
    ASSERT_NEAR(asDouble(one[p]), want[p],
                depth * roundingOf<float>() * magnitude[p] + roundingOf<T>() * std::abs(want[p]) +
                    subnormalRoundingOf<T>())
        << typeName<T>() << " route " << p;
}

template <typename T> void checkRows() {
  unsigned seed = 10;
  for (const MoeShape &shape : kRowShapes) {
    for (bool weighted : {false, true}) {
      checkDispatch<T>(shape, weighted, seed += 3);
      checkCombine<T>(shape, weighted, seed += 3);
    }
    checkRouteDot<T>(shape, seed += 3);
  }
}

TEST(MoeKernels, RowsFloat) { checkRows<float>(); }
TEST(MoeKernels, RowsBFloat16) { checkRows<BFloat16>(); }
TEST(MoeKernels, RowsHalf) { checkRows<Half>(); }

// bf16 sums rounded at every step would give 1 + 2^-6: (1 + 5 * 2^-10)
// rounds up to 1 + 2^-7, and adding 5 * 2^-10 again rounds up to
// 1 + 2^-6. Summed in float and rounded once, it is 1 + 2^-7.
TEST(MoeKernels, CombineSumsSixteenBitRowsInFloat) {
  MoeShape shape{1, 3, 1, 3, 1};
  std::vector<int64_t> slots = {0, 1, 2};
  const double small = 5.0 / 1024;
  std::vector<BFloat16> in = {BFloat16(1.0f), BFloat16(float(small)), BFloat16(float(small))};
  std::vector<BFloat16> out(1);
  cpu::moeCombine(cpu::Queue{}, in.data(), slots.data(), static_cast<const BFloat16 *>(nullptr),
                  out.data(), shape);
  EXPECT_EQ(float(out[0]), 1.0f + 1.0f / 128);
}

// <combine(y), x> == <y, dispatch(x)> for the same slots and weights: the
// two are each other's transposes, dropped routes included.
TEST(MoeKernels, DispatchAndCombineAreAdjoint) {
  for (const MoeShape &shape : kRowShapes) {
    auto x = randomTensor<float>(shape.tokens * shape.width, 1);
    auto y = randomTensor<float>(shape.slotCount() * shape.width, 2);
    auto w = randomTensor<float>(shape.routeCount(), 3);
    auto slots = randomSlots(shape, 4);
    std::vector<float> dispatched(y.size()), combined(x.size());
    cpu::moeDispatch(cpu::Queue{}, x.data(), slots.data(), w.data(), dispatched.data(), shape);
    cpu::moeCombine(cpu::Queue{}, y.data(), slots.data(), w.data(), combined.data(), shape);
    double left = 0, right = 0, magnitude = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      left += double(combined[i]) * x[i];
      magnitude += std::abs(double(combined[i]) * x[i]);
    }
    for (size_t i = 0; i < y.size(); ++i)
      right += double(y[i]) * dispatched[i];
    // Each side's float results carry k + 1 roundings per element.
    EXPECT_NEAR(left, right,
                2.0 * double(shape.choices + 1) * roundingOf<float>() * magnitude + 1e-12)
        << shape.tokens << "x" << shape.choices;
  }
}

TEST(MoeKernels, DroppedRoutesMoveNothing) {
  MoeShape shape{2, 2, 3, 2, 1};
  std::vector<int64_t> slots = {-1, 1, -1, -1}; // token 1 has no kept route
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, e(6, 7.0f), y(6, 7.0f), g(4, 7.0f);
  cpu::moeDispatch(cpu::Queue{}, x.data(), slots.data(), static_cast<const float *>(nullptr),
                   e.data(), shape);
  EXPECT_EQ(e, (std::vector<float>{0, 0, 0, 1, 2, 3}));
  cpu::moeCombine(cpu::Queue{}, e.data(), slots.data(), static_cast<const float *>(nullptr),
                  y.data(), shape);
  EXPECT_EQ(y, (std::vector<float>{1, 2, 3, 0, 0, 0}));
  cpu::moeRouteDot(cpu::Queue{}, x.data(), e.data(), slots.data(), g.data(), shape);
  EXPECT_EQ(g, (std::vector<float>{0, 14, 0, 0}));
}

TEST(MoeKernels, SlotsBeyondTheExpertsAreErrors) {
  MoeShape shape{3, 1, 2, 2, 2};
  std::vector<int64_t> slots = {0, 9, 4};
  std::vector<float> x(6, 1.0f), e(8), y(6), g(3);
  const float *none = nullptr;
  EXPECT_EQ(outOfRange([&] {
              cpu::moeDispatch(cpu::Queue{}, x.data(), slots.data(), none, e.data(), shape);
            }),
            "dsc.moe_dispatch: index 9 is outside [0, 4)");
  EXPECT_EQ(outOfRange([&] {
              cpu::moeCombine(cpu::Queue{}, e.data(), slots.data(), none, y.data(), shape);
            }),
            "dsc.moe_combine: index 9 is outside [0, 4)");
  EXPECT_EQ(outOfRange([&] {
              cpu::moeRouteDot(cpu::Queue{}, x.data(), e.data(), slots.data(), g.data(), shape);
            }),
            "dsc.moe_route_dot: index 9 is outside [0, 4)");
}

} // namespace
