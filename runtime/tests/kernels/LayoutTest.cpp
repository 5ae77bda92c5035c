//===- LayoutTest.cpp - slice, concat, broadcast, causal mask vs naive loops ===//
//
// Each kernel against a loop that decodes every result position, as the
// compiler's generated loops did: exact (elements are moved, not computed),
// for every element width, on shapes large enough to run in parallel.

#include "dsc/kernels/Layout.h"

#include "KernelTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace dsc::kernels::test;
using dsc::kernels::Dims;
using dsc::kernels::numElements;
namespace cpu = dsc::kernels::cpu;

namespace {

template <typename T> void checkSlice(int64_t outer, int64_t inDim, int64_t inner,
                                      int64_t start, int64_t step, int64_t outDim) {
  auto in = randomTensor<T>(outer * inDim * inner, 3);
  std::vector<T> out(outer * outDim * inner), want(out.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < outDim; ++j)
      for (int64_t q = 0; q < inner; ++q)
        want[(o * outDim + j) * inner + q] = in[(o * inDim + start + j * step) * inner + q];
  cpu::slice(cpu::Queue{}, in.data(), out.data(), outer, inDim, inner, start, step, outDim);
  EXPECT_TRUE(bitwiseEqual(out, want)) << typeName<T>() << " " << outer << "x" << inDim
                                       << "x" << inner << " [" << start << "::" << step << "]";
}

template <typename T> void checkSlices() {
  checkSlice<T>(1, 10, 1, 0, 1, 10);      // the whole tensor
  checkSlice<T>(3, 10, 5, 2, 1, 7);       // a middle dimension
  checkSlice<T>(4, 17, 1, 1, 3, 6);       // the last, strided
  checkSlice<T>(64, 96, 33, 5, 2, 40);    // parallel
  checkSlice<T>(2, 5, 3, 4, 1, 0);        // empty
}

TEST(LayoutKernels, SliceEveryWidth) {
  checkSlices<float>();
  checkSlices<double>();
  checkSlices<BFloat16>();
  checkSlices<int32_t>();
  checkSlices<uint8_t>();
}

template <typename T> void checkConcat(int64_t outer, std::vector<int64_t> parts, int64_t inner) {
  int64_t total = 0;
  for (int64_t p : parts)
    total += p;
  std::vector<T> out(outer * total * inner), want(out.size());
  int64_t offset = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    auto part = randomTensor<T>(outer * parts[k] * inner, 10 + unsigned(k));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < parts[k]; ++j)
        for (int64_t q = 0; q < inner; ++q)
          want[(o * total + offset + j) * inner + q] = part[(o * parts[k] + j) * inner + q];
    cpu::concatPart(cpu::Queue{}, part.data(), out.data(), outer, parts[k], inner, total,
                    offset);
    offset += parts[k];
  }
  EXPECT_TRUE(bitwiseEqual(out, want)) << typeName<T>() << " outer " << outer << " inner "
                                       << inner;
}

TEST(LayoutKernels, ConcatEveryWidth) {
  checkConcat<float>(1, {3, 5}, 1);
  checkConcat<float>(6, {3, 1, 4}, 7);
  checkConcat<BFloat16>(128, {48, 64}, 8);
  checkConcat<double>(3, {2, 0, 2}, 5);
  checkConcat<int64_t>(5, {1, 1}, 1);
  checkConcat<uint8_t>(9, {4, 7}, 3);
}

template <typename T> void checkBroadcast(Dims in, Dims out) {
  auto x = randomTensor<T>(numElements(in), 7);
  std::vector<T> got(numElements(out)), want(got.size());
  for (int64_t i = 0; i < int64_t(want.size()); ++i) {
    int64_t rest = i, from = 0, stride = 1;
    for (int d = out.rank - 1; d >= 0; --d) {
      int64_t c = rest % out.size[d];
      rest /= out.size[d];
      from += (in.size[d] == 1 ? 0 : c) * stride;
      stride *= in.size[d];
    }
    want[i] = x[from];
  }
  cpu::broadcast(cpu::Queue{}, x.data(), got.data(), in, out);
  std::string name = typeName<T>();
  for (int d = 0; d < out.rank; ++d)
    name += " " + std::to_string(in.size[d]) + "->" + std::to_string(out.size[d]);
  EXPECT_TRUE(bitwiseEqual(got, want)) << name;
}

template <typename T> void checkBroadcasts() {
  checkBroadcast<T>(Dims{1, {1}}, Dims{1, {9}});                       // a scalar
  checkBroadcast<T>(Dims{2, {1, 7}}, Dims{2, {5, 7}});                 // rows copied
  checkBroadcast<T>(Dims{2, {5, 1}}, Dims{2, {5, 7}});                 // values repeated
  checkBroadcast<T>(Dims{4, {3, 1, 4, 1}}, Dims{4, {3, 2, 4, 5}});     // alternating
  checkBroadcast<T>(Dims{3, {1, 1, 1}}, Dims{3, {1, 1, 1}});           // all ones
  checkBroadcast<T>(Dims{4, {1, 12, 1, 64}}, Dims{4, {8, 12, 64, 64}}); // parallel
  checkBroadcast<T>(Dims{6, {2, 1, 3, 1, 1, 2}}, Dims{6, {2, 3, 3, 1, 2, 2}});
}

TEST(LayoutKernels, BroadcastEveryWidth) {
  checkBroadcasts<float>();
  checkBroadcasts<Half>();
  checkBroadcasts<int64_t>();
  checkBroadcasts<uint8_t>();
}

template <typename T> void checkCausalMask(int64_t batch, int64_t rows, int64_t cols,
                                           double fill, bool inPlace) {
  auto in = randomTensor<T>(batch * rows * cols, 4);
  std::vector<T> want(in.size());
  const T filled = std::is_same_v<T, double> ? T(fill) : fromDouble<T>(float(fill));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        int64_t i = (b * rows + r) * cols + c;
        want[i] = c > r + (cols - rows) ? filled : in[i];
      }
  std::vector<T> out = inPlace ? in : std::vector<T>(in.size());
  cpu::causalMask(cpu::Queue{}, inPlace ? out.data() : in.data(), out.data(), batch, rows,
                  cols, fill);
  EXPECT_TRUE(bitwiseEqual(out, want)) << typeName<T>() << " " << batch << "x" << rows << "x"
                                       << cols << " fill " << fill;
}

template <typename T> void checkCausalMasks() {
  const double inf = std::numeric_limits<double>::infinity();
  checkCausalMask<T>(2, 5, 5, -inf, false);   // square
  checkCausalMask<T>(3, 4, 9, -inf, false);   // the last 4 queries of 9 keys
  checkCausalMask<T>(1, 9, 4, -1e4, false);   // more queries than keys
  checkCausalMask<T>(4, 7, 7, 0.1, true);     // a fill that rounds, in place
  checkCausalMask<T>(48, 64, 64, -inf, false); // parallel
}

TEST(LayoutKernels, CausalMaskFloatTypes) {
  checkCausalMasks<float>();
  checkCausalMasks<double>();
  checkCausalMasks<BFloat16>();
  checkCausalMasks<Half>();
}

} // namespace
