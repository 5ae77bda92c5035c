//===- PermuteTest.cpp - transpose and permute vs a naive index loop ------===//

#include "dsc/kernels/Permute.h"

#include "KernelTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace dsc::kernels::test;
using dsc::kernels::Dims;
using dsc::kernels::numElements;
namespace cpu = dsc::kernels::cpu;

namespace {

/// out[c] = in[c permuted], decoding every output position.
template <typename T> std::vector<T> naivePermute(const std::vector<T> &in, Dims shape, Dims perm) {
  std::vector<T> out(in.size());
  int r = shape.rank;
  for (int64_t i = 0; i < int64_t(in.size()); ++i) {
    int64_t rest = i, c[6] = {};
    for (int d = r - 1; d >= 0; --d) {
      int64_t size = shape.size[perm.size[d]];
      c[perm.size[d]] = rest % size;
      rest /= size;
    }
    int64_t from = 0;
    for (int d = 0; d < r; ++d)
      from = from * shape.size[d] + c[d];
    out[i] = in[from];
  }
  return out;
}

template <typename T> void checkPermute(Dims shape, Dims perm, unsigned seed) {
  auto in = randomTensor<T>(numElements(shape), seed);
  std::vector<T> out(in.size());
  cpu::permute(cpu::Queue{}, in.data(), out.data(), shape, perm);
  auto want = naivePermute(in, shape, perm);
  std::string name = typeName<T>() + " shape";
  for (int d = 0; d < shape.rank; ++d)
    name += " " + std::to_string(shape.size[d]);
  name += " perm";
  for (int d = 0; d < perm.rank; ++d)
    name += " " + std::to_string(perm.size[d]);
  EXPECT_TRUE(bitwiseEqual(out, want)) << name;
}

/// Every permutation of ranks 1 to 4 on odd shapes with size-1
/// dimensions, some rank 5 and 6 ones, each element width.
template <typename T> void checkAll() {
  const Dims shapes[] = {{1, {37}},         {2, {33, 70}},       {2, {1, 5}},
                         {3, {3, 1, 45}},   {3, {5, 34, 67}},    {4, {2, 3, 35, 33}},
                         {4, {1, 7, 1, 9}}, {4, {4, 12, 13, 64}}};
  unsigned seed = 1;
  for (const Dims &shape : shapes) {
    Dims perm{shape.rank, {}};
    std::iota(perm.size, perm.size + shape.rank, int64_t(0));
    do
      checkPermute<T>(shape, perm, seed++);
    while (std::next_permutation(perm.size, perm.size + shape.rank));
  }
  checkPermute<T>(Dims{5, {2, 3, 5, 7, 11}}, Dims{5, {4, 2, 0, 3, 1}}, seed++);
  checkPermute<T>(Dims{6, {2, 3, 1, 5, 4, 3}}, Dims{6, {5, 0, 4, 1, 3, 2}}, seed++);
  checkPermute<T>(Dims{6, {2, 3, 2, 5, 4, 3}}, Dims{6, {0, 1, 2, 3, 5, 4}}, seed++);
}

TEST(PermuteKernels, Float) { checkAll<float>(); }
TEST(PermuteKernels, Double) { checkAll<double>(); }
TEST(PermuteKernels, BFloat16) { checkAll<BFloat16>(); }
TEST(PermuteKernels, Bytes) { checkAll<uint8_t>(); }

TEST(PermuteKernels, TransposeSwapsTheLastTwoDimensions) {
  for (auto [batch, rows, cols] : {std::tuple<int64_t, int64_t, int64_t>{48, 128, 64},
                                   {3, 33, 65}, {1, 1, 7}, {2, 100, 1}}) {
    auto in = randomTensor<Half>(batch * rows * cols, 3);
    std::vector<Half> out(in.size());
    cpu::transpose(cpu::Queue{}, in.data(), out.data(), batch, rows, cols);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ASSERT_EQ(out[(b * cols + c) * rows + r].bits, in[(b * rows + r) * cols + c].bits)
              << batch << "x" << rows << "x" << cols;
  }
}

TEST(PermuteKernels, SimplifyMergesAndDrops) {
  Dims shape{5, {2, 1, 3, 4, 5}}, perm{5, {2, 3, 1, 0, 4}};
  dsc::kernels::simplifyPermutation(shape, perm);
  // [2, 3*4, 5] with result order (1, 0, 2).
  ASSERT_EQ(shape.rank, 3);
  EXPECT_EQ(shape.size[0], 2);
  EXPECT_EQ(shape.size[1], 12);
  EXPECT_EQ(shape.size[2], 5);
  ASSERT_EQ(perm.rank, 3);
  EXPECT_EQ(perm.size[0], 1);
  EXPECT_EQ(perm.size[1], 0);
  EXPECT_EQ(perm.size[2], 2);
}

} // namespace
