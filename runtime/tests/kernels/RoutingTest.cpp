//===- RoutingTest.cpp - gather, scatter-add, top-k, cumsum, one-hot ------===//

#include "dsc/kernels/Routing.h"

#include "KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace dsc::kernels::test;
using dsc::kernels::Dims;
using dsc::kernels::numElements;
namespace cpu = dsc::kernels::cpu;

namespace {

/// Row-major offset in `shape` of coordinates c.
int64_t offset(const Dims &shape, const int64_t *c) {
  int64_t o = 0;
  for (int d = 0; d < shape.rank; ++d)
    o = o * shape.size[d] + c[d];
  return o;
}

void coordsOf(int64_t linear, const Dims &shape, int64_t *c) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    c[d] = linear % shape.size[d];
    linear /= shape.size[d];
  }
}

struct IndexCase {
  Dims in, index;
  int dim;
};

/// The index no larger than the input but along dim; along each dimension
/// in turn; ranks 1 to 4; the embedding gradient's [rows, width] at dim 0.
const IndexCase kCases[] = {
    {{1, {17}}, {1, {40}}, 0},
    {{2, {16, 4}}, {2, {16, 1}}, 1},
    {{2, {9, 7}}, {2, {5, 7}}, 0},
    {{3, {4, 6, 5}}, {3, {3, 9, 2}}, 1},
    {{3, {4, 6, 5}}, {3, {3, 2, 8}}, 2},
    {{3, {4, 6, 5}}, {3, {7, 5, 5}}, 0},
    {{4, {2, 3, 4, 5}}, {4, {2, 3, 6, 300}}, 2},
    {{2, {97, 768}}, {2, {513, 768}}, 0},
};

template <typename T> void checkGather(const IndexCase &k, unsigned seed) {
  // The index may be larger than the input along no dim but `dim`; the
  // cases with a larger index elsewhere are scatter sources only.
  for (int d = 0; d < k.in.rank; ++d)
    if (d != k.dim && k.index.size[d] > k.in.size[d])
      return;
  auto data = randomTensor<T>(numElements(k.in), seed);
  auto index = randomIndices(numElements(k.index), k.in.size[k.dim], seed + 1);
  std::vector<T> out(index.size());
  cpu::gather(cpu::Queue{}, data.data(), index.data(), out.data(), k.in, k.index, k.dim);
  for (int64_t p = 0; p < int64_t(index.size()); ++p) {
    int64_t c[6];
    coordsOf(p, k.index, c);
    c[k.dim] = index[p];
    ASSERT_EQ(asDouble(out[p]), asDouble(data[offset(k.in, c)]))
        << typeName<T>() << " p=" << p;
  }
}

/// scatter_add into an input that is the index's shape widened along every
/// dimension where the case's input is larger, with src one larger than
/// the index along the last dimension (its extra column adds nowhere).
template <typename T> void checkScatterAdd(const IndexCase &k, unsigned seed) {
  Dims in = k.in, src = k.index;
  for (int d = 0; d < in.rank; ++d)
    if (d != k.dim)
      in.size[d] = std::max(in.size[d], k.index.size[d]);
  src.size[src.rank - 1] += 1;
  auto base = randomTensor<T>(numElements(in), seed);
  auto values = randomTensor<T>(numElements(src), seed + 1);
  auto index = randomIndices(numElements(k.index), in.size[k.dim], seed + 2);
  std::vector<T> out(base.size());
  cpu::scatterAdd(cpu::Queue{}, base.data(), index.data(), values.data(), out.data(), in,
                  k.index, src, k.dim);
  // The serial loop in index order, each add in T's compute type (float
  // for 16-bit types) and rounded to T.
  std::vector<T> want = base;
  for (int64_t p = 0; p < int64_t(index.size()); ++p) {
    int64_t c[6];
    coordsOf(p, k.index, c);
    T v = values[offset(src, c)];
    c[k.dim] = index[p];
    T &t = want[offset(in, c)];
    if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>)
      t = T(float(t) + float(v));
    else
      t = T(t + v);
  }
  EXPECT_TRUE(bitwiseEqual(out, want)) << typeName<T>() << " scatter_add dim " << k.dim;
}

template <typename T> void checkIndexing() {
  unsigned seed = 1;
  for (const IndexCase &k : kCases) {
    checkGather<T>(k, seed += 3);
    checkScatterAdd<T>(k, seed += 3);
  }
}

TEST(RoutingKernels, GatherAndScatterAddFloat) { checkIndexing<float>(); }
TEST(RoutingKernels, GatherAndScatterAddDouble) { checkIndexing<double>(); }
TEST(RoutingKernels, GatherAndScatterAddBFloat16) { checkIndexing<BFloat16>(); }
TEST(RoutingKernels, GatherAndScatterAddHalf) { checkIndexing<Half>(); }
TEST(RoutingKernels, GatherAndScatterAddInt64) { checkIndexing<int64_t>(); }
TEST(RoutingKernels, GatherAndScatterAddInt32) { checkIndexing<int32_t>(); }

TEST(RoutingKernels, ScatterAddDoesNotDependOnTheThreadCount) {
  // The embedding gradient's shape: many positions add into few rows.
  Dims in{2, {50, 256}}, index{2, {4096, 256}};
  auto base = randomTensor<float>(numElements(in), 1);
  auto values = randomTensor<float>(numElements(index), 2);
  auto rows = randomIndices(4096, 50, 3);
  std::vector<int64_t> idx(numElements(index));
  for (int64_t p = 0; p < numElements(index); ++p)
    idx[p] = rows[p / 256];
  std::vector<float> one(base.size()), two(base.size());
  withThreads(1, [&] {
    cpu::scatterAdd(cpu::Queue{}, base.data(), idx.data(), values.data(), one.data(), in,
                    index, index, 0);
  });
  withThreads(2, [&] {
    cpu::scatterAdd(cpu::Queue{}, base.data(), idx.data(), values.data(), two.data(), in,
                    index, index, 0);
  });
  EXPECT_TRUE(bitwiseEqual(one, two));
}

TEST(RoutingKernels, BadIndicesAreErrors) {
  Dims in{2, {6, 300}}, index{2, {200, 300}};
  auto data = randomTensor<float>(numElements(in), 1);
  auto src = randomTensor<float>(numElements(index), 2);
  auto idx = randomIndices(numElements(index), 6, 3);
  idx[50000] = 6;
  idx[40000] = -2;
  std::vector<float> out(numElements(index)), acc(numElements(in));
  for (int threads : {1, 2})
    withThreads(threads, [&] {
      EXPECT_EQ(outOfRange([&] {
                  cpu::gather(cpu::Queue{}, data.data(), idx.data(), out.data(), in, index, 0);
                }),
                "dsc.gather: index -2 is outside [0, 6)");
      EXPECT_EQ(outOfRange([&] {
                  cpu::scatterAdd(cpu::Queue{}, data.data(), idx.data(), src.data(),
                                  acc.data(), in, index, index, 0);
                }),
                "dsc.scatter_add: index -2 is outside [0, 6)");
    });
}

template <typename T> void checkTopK(int64_t outer, int64_t n, int64_t inner, int64_t k) {
  auto in = randomTensor<T>(outer * n * inner, unsigned(n * 31 + k));
  std::vector<T> values(outer * k * inner);
  std::vector<int64_t> indices(values.size());
  cpu::topK(cpu::Queue{}, in.data(), values.data(), indices.data(), outer, n, inner, k);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q) {
      // Stable sort by value descending: ties keep the lower index first.
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), int64_t(0));
      auto x = [&](int64_t j) { return asDouble(in[(o * n + j) * inner + q]); };
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return x(a) > x(b); });
      for (int64_t r = 0; r < k; ++r) {
        ASSERT_EQ(indices[(o * k + r) * inner + q], order[r])
            << typeName<T>() << " (" << outer << ", " << n << ", " << inner << ") k=" << k
            << " at " << o << "," << q << " rank " << r;
        ASSERT_EQ(asDouble(values[(o * k + r) * inner + q]), x(order[r]));
      }
    }
}

template <typename T> void checkTopKAll() {
  checkTopK<T>(16, 4, 1, 2);     // top-2 gating over 4 experts
  checkTopK<T>(37, 129, 1, 1);   // argmax
  checkTopK<T>(3, 300, 1, 64);   // the insertion buffer's largest k
  checkTopK<T>(2, 500, 1, 100);  // a partial sort
  checkTopK<T>(3, 40, 5, 7);     // along a middle dimension
  checkTopK<T>(1, 9, 1, 9);      // k = n
}

TEST(RoutingKernels, TopKFloat) { checkTopKAll<float>(); }
TEST(RoutingKernels, TopKBFloat16) { checkTopKAll<BFloat16>(); } // many ties
TEST(RoutingKernels, TopKHalf) { checkTopKAll<Half>(); }
TEST(RoutingKernels, TopKInt64) { checkTopKAll<int64_t>(); }     // many ties
TEST(RoutingKernels, TopKInt32) { checkTopKAll<int32_t>(); }

TEST(RoutingKernels, TopKOfMoreThanTheLineIsAnError) {
  std::vector<float> in(4), v(5);
  std::vector<int64_t> i(5);
  EXPECT_THROW(cpu::topK(cpu::Queue{}, in.data(), v.data(), i.data(), 1, 4, 1, 5),
               std::invalid_argument);
}

TEST(RoutingKernels, TopKRanksNaNFirst) {
  std::vector<float> in = {1, NAN, 3, 2};
  std::vector<float> v(2);
  std::vector<int64_t> i(2);
  cpu::topK(cpu::Queue{}, in.data(), v.data(), i.data(), 1, 4, 1, 2);
  EXPECT_EQ(i[0], 1);
  EXPECT_EQ(i[1], 2);
}

template <typename T> void checkCumsum(int64_t outer, int64_t n, int64_t inner) {
  auto in = randomTensor<T>(outer * n * inner, unsigned(outer + n + inner));
  std::vector<T> out(in.size());
  cpu::cumsum(cpu::Queue{}, in.data(), out.data(), outer, n, inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q) {
      double acc = 0, magnitude = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = (o * n + j) * inner + q;
        acc += asDouble(in[at]);
        magnitude += std::abs(asDouble(in[at]));
        ASSERT_NEAR(asDouble(out[at]), acc,
                    roundingOf<T>() * std::abs(acc) * 1.001 + subnormalRoundingOf<T>() +
                        1e-13 * magnitude)
            << typeName<T>() << " (" << outer << ", " << n << ", " << inner << ") at " << at;
      }
    }
}

template <typename T> void checkCumsumAll() {
  checkCumsum<T>(16, 4, 1);
  checkCumsum<T>(1, 1000, 1);
  checkCumsum<T>(3, 77, 300); // column tiles of 256 and a remainder
  checkCumsum<T>(2, 1, 5);
}

TEST(RoutingKernels, CumsumFloat) { checkCumsumAll<float>(); }
TEST(RoutingKernels, CumsumDouble) { checkCumsumAll<double>(); }
TEST(RoutingKernels, CumsumBFloat16) { checkCumsumAll<BFloat16>(); }
TEST(RoutingKernels, CumsumHalf) { checkCumsumAll<Half>(); }
TEST(RoutingKernels, CumsumInt64) { checkCumsumAll<int64_t>(); }
TEST(RoutingKernels, CumsumInt32) { checkCumsumAll<int32_t>(); }

template <typename T> void checkOneHot() {
  std::vector<int64_t> idx = {0, 3, -1, 4, 2, 7};
  std::vector<T> out(idx.size() * 4, fromDouble<T>(9));
  cpu::oneHot(cpu::Queue{}, idx.data(), out.data(), int64_t(idx.size()), 4);
  for (size_t i = 0; i < idx.size(); ++i)
    for (int64_t c = 0; c < 4; ++c)
      EXPECT_EQ(asDouble(out[i * 4 + c]), idx[i] == c ? 1.0 : 0.0)
          << typeName<T>() << " " << i << "," << c;
}

TEST(RoutingKernels, OneHotOutsideTheClassesIsARowOfZeros) {
  checkOneHot<float>();
  checkOneHot<double>();
  checkOneHot<BFloat16>();
  checkOneHot<Half>();
  checkOneHot<int64_t>();
  checkOneHot<int32_t>();
}

} // namespace
