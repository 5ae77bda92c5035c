//===- EmbeddingTest.cpp - embedding lookup and gradient vs naive loops ---===//

#include "dsc/kernels/Embedding.h"

#include "KernelTestSupport.h"

#include <gtest/gtest.h>

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;

namespace {

template <typename T> void checkForward(int64_t count, int64_t rows, int64_t dim) {
  auto table = randomTensor<T>(rows * dim, 1);
  auto ids = randomIndices(count, rows, 2);
  std::vector<T> out(count * dim);
  cpu::embeddingForward(cpu::Queue{}, table.data(), ids.data(), out.data(), count, rows, dim);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t d = 0; d < dim; ++d)
      ASSERT_EQ(asDouble(out[i * dim + d]), asDouble(table[ids[i] * dim + d]))
          << typeName<T>() << " i=" << i << " d=" << d;
}

template <typename T> void checkBackward(int64_t count, int64_t rows, int64_t dim) {
  auto dy = randomTensor<T>(count * dim, 3);
  auto ids = randomIndices(count, rows, 4);
  std::vector<T> dtable(rows * dim, fromDouble<T>(7)); // overwritten, rows with no id too
  cpu::embeddingBackward(cpu::Queue{}, dy.data(), ids.data(), dtable.data(), count, rows, dim);
  std::vector<double> want(rows * dim, 0.0), magnitude(rows * dim, 0.0);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t d = 0; d < dim; ++d) {
      want[ids[i] * dim + d] += asDouble(dy[i * dim + d]);
      magnitude[ids[i] * dim + d] += std::abs(asDouble(dy[i * dim + d]));
    }
  for (int64_t k = 0; k < rows * dim; ++k)
    ASSERT_NEAR(asDouble(dtable[k]), want[k],
                roundingOf<T>() * std::abs(want[k]) * 1.001 + subnormalRoundingOf<T>() +
                    1e-13 * magnitude[k])
        << typeName<T>() << " (" << count << " ids, " << rows << "x" << dim << ") at " << k;
}

template <typename T> void checkAll() {
  // Odd sizes; many repeats (7 rows); mostly distinct ids; one id; a
  // GPT-2-like row width.
  for (auto [count, rows, dim] : {std::tuple<int64_t, int64_t, int64_t>{37, 7, 5},
                                  {100, 1000, 13}, {1, 3, 1}, {513, 97, 768}}) {
    checkForward<T>(count, rows, dim);
    checkBackward<T>(count, rows, dim);
  }
}

TEST(EmbeddingKernels, Float) { checkAll<float>(); }
TEST(EmbeddingKernels, Double) { checkAll<double>(); }
TEST(EmbeddingKernels, BFloat16) { checkAll<BFloat16>(); }
TEST(EmbeddingKernels, Half) { checkAll<Half>(); }

TEST(EmbeddingKernels, BackwardDoesNotDependOnTheThreadCount) {
  int64_t count = 4096, rows = 50, dim = 96; // ~80 ids per row
  auto dy = randomTensor<float>(count * dim, 5);
  auto ids = randomIndices(count, rows, 6);
  std::vector<float> one(rows * dim), two(rows * dim);
  withThreads(1, [&] {
    cpu::embeddingBackward(cpu::Queue{}, dy.data(), ids.data(), one.data(), count, rows, dim);
  });
  withThreads(2, [&] {
    cpu::embeddingBackward(cpu::Queue{}, dy.data(), ids.data(), two.data(), count, rows, dim);
  });
  EXPECT_TRUE(bitwiseEqual(one, two));
}

TEST(EmbeddingKernels, BadIdsAreErrorsNamingTheFirstOne) {
  int64_t rows = 10, dim = 4;
  auto table = randomTensor<float>(rows * dim, 7);
  // Several bad ids; the one at the lowest position is named, on any
  // number of threads (the loop is parallel above 2^15 elements).
  int64_t count = 20000;
  std::vector<int64_t> ids = randomIndices(count, rows, 8);
  ids[15000] = -1;
  ids[9000] = 10;
  ids[12000] = 1 << 20;
  std::vector<float> out(count * dim);
  for (int threads : {1, 2})
    withThreads(threads, [&] {
      EXPECT_EQ(outOfRange([&] {
                  cpu::embeddingForward(cpu::Queue{}, table.data(), ids.data(), out.data(),
                                        count, rows, dim);
                }),
                "dsc.embedding: index 10 is outside [0, 10)");
    });
  std::vector<float> dy(count * dim, 1.0f), dtable(rows * dim);
  EXPECT_EQ(outOfRange([&] {
              cpu::embeddingBackward(cpu::Queue{}, dy.data(), ids.data(), dtable.data(),
                                     count, rows, dim);
            }),
            "dsc.embedding: index 10 is outside [0, 10)");
  ids[9000] = 3;
  EXPECT_EQ(outOfRange([&] {
              cpu::embeddingBackward(cpu::Queue{}, dy.data(), ids.data(), dtable.data(),
                                     count, rows, dim);
            }),
            "dsc.embedding: index 1048576 is outside [0, 10)");
}

} // namespace
