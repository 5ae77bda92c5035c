//===- ReduceTest.cpp - the reduction kernels against double loops --------===//

#include "dsc/kernels/Reduce.h"

#include "KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;

namespace {

struct Shape {
  int64_t outer, n, inner;
};

/// Odd sizes, rows and columns, one chunk and several (kReduceChunk = 4096
/// elements per row chunk, kReduceChunkRows = 256 rows per column chunk),
/// column tiles of 256 cut in the middle, and an empty reduction.
const Shape kShapes[] = {{1, 1, 1},    {3, 7, 1},    {1, 10007, 1}, {5, 9000, 1},
                         {1, 513, 769}, {3, 300, 5}, {7, 1, 3},     {2, 4096, 1},
                         {1, 257, 1},  {4, 0, 3},    {2, 0, 1},     {1, 77, 2}};

enum class Kind { Sum, Mean, Max, Squares };

const char *kindName(Kind k) {
  switch (k) {
  case Kind::Sum: return "sum";
  case Kind::Mean: return "mean";
  case Kind::Max: return "max";
  case Kind::Squares: return "squares";
  }
  return "?";
}

template <typename T>
void run(Kind kind, const T *in, T *out, const Shape &s) {
  cpu::Queue q;
  switch (kind) {
  case Kind::Sum: cpu::reduceSum(q, in, out, s.outer, s.n, s.inner); break;
  case Kind::Max: cpu::reduceMax(q, in, out, s.outer, s.n, s.inner); break;
  case Kind::Mean:
    if constexpr (!std::is_integral_v<T>)
      cpu::reduceMean(q, in, out, s.outer, s.n, s.inner);
    break;
  case Kind::Squares:
    if constexpr (!std::is_integral_v<T>)
      cpu::sumSquares(q, in, out, s.outer, s.n, s.inner);
    break;
  }
}

/// Checks one kernel on one shape against a double loop: sums within one
/// rounding of T of the exact sum (plus double's rounding over the sum of
/// magnitudes), maxima exact.
template <typename T> void check(Kind kind, const Shape &s, unsigned seed) {
  std::vector<T> in = randomTensor<T>(s.outer * s.n * s.inner, seed);
  std::vector<T> out(s.outer * s.inner, fromDouble<T>(123));
  run(kind, in.data(), out.data(), s);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t q = 0; q < s.inner; ++q) {
      double acc = kind == Kind::Max ? -INFINITY : 0, magnitude = 0;
      for (int64_t j = 0; j < s.n; ++j) {
        double x = asDouble(in[(o * s.n + j) * s.inner + q]);
        if (kind == Kind::Max)
          acc = std::max(acc, x);
        else
          acc += kind == Kind::Squares ? x * x : x;
        magnitude += std::abs(kind == Kind::Squares ? x * x : x);
      }
      if (kind == Kind::Mean)
        acc /= double(s.n), magnitude /= double(s.n);
      double got = asDouble(out[o * s.inner + q]);
      std::string where = typeName<T>() + " " + kindName(kind) + " (" +
                          std::to_string(s.outer) + ", " + std::to_string(s.n) + ", " +
                          std::to_string(s.inner) + ") at " + std::to_string(o) + "," +
                          std::to_string(q);
      if (kind == Kind::Mean && s.n == 0) {
        EXPECT_TRUE(std::isnan(got)) << where;
      } else if (kind == Kind::Max && s.n == 0 && std::is_integral_v<T>) {
        EXPECT_EQ(out[o * s.inner + q], std::numeric_limits<T>::lowest()) << where;
      } else if (kind == Kind::Max || std::is_integral_v<T>) {
        EXPECT_EQ(got, std::is_integral_v<T> ? acc : asDouble(fromDouble<T>(acc))) << where;
      } else {
        double tol = roundingOf<T>() * std::abs(acc) * 1.001 + subnormalRoundingOf<T>() +
                     1e-13 * magnitude;
        EXPECT_NEAR(got, acc, tol) << where;
      }
    }
}

template <typename T> void checkAll(bool floatKinds) {
  unsigned seed = 1;
  for (const Shape &s : kShapes) {
    check<T>(Kind::Sum, s, seed++);
    check<T>(Kind::Max, s, seed++);
    if (floatKinds) {
      check<T>(Kind::Mean, s, seed++);
      check<T>(Kind::Squares, s, seed++);
    }
  }
}

TEST(ReduceKernels, Float) { checkAll<float>(true); }
TEST(ReduceKernels, Double) { checkAll<double>(true); }
TEST(ReduceKernels, BFloat16) { checkAll<BFloat16>(true); }
TEST(ReduceKernels, Half) { checkAll<Half>(true); }
TEST(ReduceKernels, Int64) { checkAll<int64_t>(false); }
TEST(ReduceKernels, Int32) { checkAll<int32_t>(false); }

TEST(ReduceKernels, FullReductionToAScalar) {
  // 2^20 + 3 elements: 257 row chunks combined in order.
  Shape s{1, (1 << 20) + 3, 1};
  check<float>(Kind::Sum, s, 7);
  check<float>(Kind::Squares, s, 8);
  check<float>(Kind::Max, s, 9);
  check<BFloat16>(Kind::Sum, s, 10);
}

TEST(ReduceKernels, SumsAccumulateInDouble) {
  // 1 followed by 2^25 ones below float's resolution at 1: a float
  // accumulator stays at 1, double reaches 1 + 2^25 * 2^-25 = 2.
  int64_t n = int64_t(1) << 25;
  std::vector<float> in(n + 1, std::ldexp(1.0f, -25));
  in[0] = 1.0f;
  float out = 0;
  cpu::reduceSum(cpu::Queue{}, in.data(), &out, 1, n + 1, 1);
  EXPECT_EQ(out, 2.0f);
}

TEST(ReduceKernels, MaxPropagatesNaN) {
  struct Case { Shape s; int64_t at; };
  // Row 1 in its second chunk; column 0 at row 300, in its second chunk.
  for (Case c : {Case{{2, 9000, 1}, 9000 + 4500}, Case{{1, 600, 3}, 300 * 3}}) {
    Shape s = c.s;
    std::vector<float> in = randomTensor<float>(s.outer * s.n * s.inner, 3);
    in[c.at] = NAN;
    std::vector<float> out(s.outer * s.inner);
    cpu::reduceMax(cpu::Queue{}, in.data(), out.data(), s.outer, s.n, s.inner);
    int nans = 0;
    for (float x : out)
      nans += std::isnan(x);
    EXPECT_EQ(nans, 1);
  }
}

/// Bitwise the same results on one thread and on two, for every path
/// (several row chunks, several column chunks and tiles).
template <typename T> void checkThreadIndependence(Kind kind) {
  for (const Shape &s : {Shape{3, 50000, 1}, Shape{1, 2000, 700}, Shape{1, 1 << 20, 1}}) {
    std::vector<T> in = randomTensor<T>(s.outer * s.n * s.inner, 11);
    std::vector<T> one(s.outer * s.inner), two(s.outer * s.inner);
    withThreads(1, [&] { run(kind, in.data(), one.data(), s); });
    withThreads(2, [&] { run(kind, in.data(), two.data(), s); });
    EXPECT_TRUE(bitwiseEqual(one, two))
        << typeName<T>() << " " << kindName(kind) << " (" << s.outer << ", " << s.n
        << ", " << s.inner << ")";
  }
}

TEST(ReduceKernels, ResultsDoNotDependOnTheThreadCount) {
  for (Kind k : {Kind::Sum, Kind::Mean, Kind::Max, Kind::Squares}) {
    checkThreadIndependence<float>(k);
    checkThreadIndependence<BFloat16>(k);
  }
  checkThreadIndependence<int64_t>(Kind::Sum);
}

} // namespace
