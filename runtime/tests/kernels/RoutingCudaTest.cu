//===- RoutingCudaTest.cu - CUDA layout and routing kernels vs the CPU's --===//
//
// Permutes, gathers, one-hots and top-k move or pick elements: exact.
// Scatter-add walks each line in the CPU's order with the same roundings:
// exact. Cumsum scans rows in another order: within one rounding of T each
// way, plus double's over the magnitudes.

#include "dsc/kernels/Permute.h"
#include "dsc/kernels/Routing.h"
#include "dsc/kernels/cuda/Permute.cuh"
#include "dsc/kernels/cuda/Routing.cuh"

#include "KernelCudaTestSupport.h"

#include <algorithm>
#include <numeric>

using namespace dsc::kernels::test;
using dsc::kernels::Dims;
using dsc::kernels::numElements;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

template <typename T> void checkPermute(Dims shape, Dims perm) {
  auto in = randomTensor<T>(numElements(shape), 5);
  std::vector<T> want(in.size());
  cpu::permute(cpu::Queue{}, in.data(), want.data(), shape, perm);
  DeviceBuffer<T> din(in), dout(in.size());
  gpu::permute(nullptr, din.get(), dout.get(), shape, perm);
  EXPECT_TRUE(bitwiseEqual(dout.host(), want)) << typeName<T>() << " rank " << shape.rank;
}

template <typename T> void checkPermutes() {
  const Dims shapes[] = {{2, {33, 70}}, {3, {5, 34, 67}}, {4, {2, 3, 35, 33}},
                         {4, {4, 12, 128, 64}}, {4, {1, 7, 1, 9}}};
  for (const Dims &shape : shapes) {
    Dims perm{shape.rank, {}};
    std::iota(perm.size, perm.size + shape.rank, int64_t(0));
    do
      checkPermute<T>(shape, perm);
    while (std::next_permutation(perm.size, perm.size + shape.rank));
  }
  checkPermute<T>(Dims{6, {2, 3, 1, 5, 4, 3}}, Dims{6, {5, 0, 4, 1, 3, 2}});
}

TEST(PermuteCudaKernels, EveryWidth) {
  DSC_REQUIRE_GPU();
  checkPermutes<float>();
  checkPermutes<BFloat16>();
  checkPermutes<double>();
  checkPermutes<uint8_t>();
}

/// With `rowsAreIds`, every row of the index is one id (the embedding
/// gradient's form, which the CUDA scatter-add buckets).
template <typename T>
void checkGatherScatter(Dims in, Dims index, int dim, bool rowsAreIds = false) {
  auto data = randomTensor<T>(numElements(in), 1);
  auto src = randomTensor<T>(numElements(index), 2);
  auto idx = randomIndices(numElements(index), in.size[dim], 3);
  if (rowsAreIds)
    for (int64_t p = 0; p < numElements(index); ++p)
      idx[p] = idx[p / index.size[1] * index.size[1]];
  std::vector<T> gathered(numElements(index)), scattered(numElements(in));
  cpu::scatterAdd(cpu::Queue{}, data.data(), idx.data(), src.data(), scattered.data(), in,
                  index, index, dim);
  DeviceBuffer<T> dData(data), dSrc(src), dOut(scattered.size());
  DeviceBuffer<int64_t> dIdx(idx);
  DeviceFault fault;
  gpu::scatterAdd(nullptr, dData.get(), dIdx.get(), dSrc.get(), dOut.get(), in, index, index,
                  dim, fault.ptr);
  EXPECT_TRUE(bitwiseEqual(dOut.host(), scattered)) << typeName<T>() << " scatter dim " << dim;
  bool gatherable = true;
  for (int d = 0; d < in.rank; ++d)
    gatherable &= d == dim || index.size[d] <= in.size[d];
  if (gatherable) {
    cpu::gather(cpu::Queue{}, data.data(), idx.data(), gathered.data(), in, index, dim);
    DeviceBuffer<T> dGathered(gathered.size());
    gpu::gather(nullptr, dData.get(), dIdx.get(), dGathered.get(), in, index, dim, fault.ptr);
    EXPECT_TRUE(bitwiseEqual(dGathered.host(), gathered)) << typeName<T>() << " gather";
  }
  EXPECT_NO_THROW(raiseIndexFault(fault.ptr));
}

template <typename T> void checkIndexing() {
  checkGatherScatter<T>(Dims{2, {16, 4}}, Dims{2, {16, 1}}, 1);
  checkGatherScatter<T>(Dims{3, {4, 6, 5}}, Dims{3, {3, 9, 2}}, 1);
  checkGatherScatter<T>(Dims{3, {4, 6, 5}}, Dims{3, {3, 2, 8}}, 2);
  checkGatherScatter<T>(Dims{2, {97, 768}}, Dims{2, {513, 768}}, 0);
  checkGatherScatter<T>(Dims{2, {97, 768}}, Dims{2, {513, 768}}, 0, /*rowsAreIds=*/true);
  checkGatherScatter<T>(Dims{2, {50, 300}}, Dims{2, {4096, 300}}, 0, /*rowsAreIds=*/true);
}

TEST(RoutingCudaKernels, GatherAndScatterAdd) {
  DSC_REQUIRE_GPU();
  checkIndexing<float>();
  checkIndexing<BFloat16>();
  checkIndexing<Half>();
  checkIndexing<double>();
  checkIndexing<int64_t>();
  checkIndexing<int32_t>();
}

TEST(RoutingCudaKernels, BadIndicesAreRecorded) {
  DSC_REQUIRE_GPU();
  Dims in{1, {6}}, index{1, {3}};
  std::vector<int64_t> idx = {0, 6, 1};
  DeviceBuffer<float> data(6, 1.0f), out(6), gathered(3);
  DeviceBuffer<int64_t> dIdx(idx);
  DeviceFault fault;
  gpu::gather(nullptr, data.get(), dIdx.get(), gathered.get(), in, index, 0, fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.gather: index 6 is outside [0, 6)");
  gpu::scatterAdd(nullptr, data.get(), dIdx.get(), data.get(), out.get(), in, index, index, 0,
                  fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.scatter_add: index 6 is outside [0, 6)");
  // The embedding gradient's form (bucketed): 100 rows of 2, one bad id.
  Dims table{2, {6, 2}}, rows{2, {100, 2}};
  std::vector<int64_t> ids(200, 1);
  ids[140] = ids[141] = 9;
  DeviceBuffer<float> acc(12, 0.0f), ones(200, 1.0f), sums(12);
  DeviceBuffer<int64_t> dIds(ids);
  gpu::scatterAdd(nullptr, acc.get(), dIds.get(), ones.get(), sums.get(), table, rows, rows, 0,
                  fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.scatter_add: index 9 is outside [0, 6)");
  std::vector<float> got = sums.host();
  EXPECT_EQ(got[2], 99.0f); // row 1: every valid id
  EXPECT_EQ(got[3], 99.0f);
  EXPECT_EQ(got[0], 0.0f);
}

template <typename T> void checkTopK(int64_t outer, int64_t n, int64_t inner, int64_t k) {
  auto in = randomTensor<T>(outer * n * inner, unsigned(n + k));
  std::vector<T> values(outer * k * inner);
  std::vector<int64_t> indices(values.size());
  cpu::topK(cpu::Queue{}, in.data(), values.data(), indices.data(), outer, n, inner, k);
  DeviceBuffer<T> din(in), dValues(values.size());
  DeviceBuffer<int64_t> dIndices(indices.size());
  gpu::topK(nullptr, din.get(), dValues.get(), dIndices.get(), outer, n, inner, k);
  EXPECT_EQ(dIndices.host(), indices) << typeName<T>() << " k=" << k;
  EXPECT_TRUE(bitwiseEqual(dValues.host(), values)) << typeName<T>() << " k=" << k;
}

template <typename T> void checkTopKs() {
  checkTopK<T>(16, 4, 1, 2);
  checkTopK<T>(37, 129, 1, 1);
  checkTopK<T>(3, 300, 1, 70);
  checkTopK<T>(3, 40, 5, 7);
  checkTopK<T>(4096, 64, 1, 2);
}

TEST(RoutingCudaKernels, TopK) {
  DSC_REQUIRE_GPU();
  checkTopKs<float>();
  checkTopKs<BFloat16>(); // ties
  checkTopKs<int64_t>();  // ties
  checkTopKs<int32_t>();
}

template <typename T> void checkCumsum(int64_t outer, int64_t n, int64_t inner) {
  auto in = randomTensor<T>(outer * n * inner, 9);
  std::vector<T> want(in.size());
  cpu::cumsum(cpu::Queue{}, in.data(), want.data(), outer, n, inner);
  DeviceBuffer<T> din(in), dout(in.size());
  gpu::cumsum(nullptr, din.get(), dout.get(), outer, n, inner);
  auto got = dout.host();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t q = 0; q < inner; ++q) {
      double magnitude = 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t at = (o * n + j) * inner + q;
        magnitude += std::abs(asDouble(in[at]));
        ASSERT_NEAR(asDouble(got[at]), asDouble(want[at]),
                    2 * roundingOf<T>() * std::abs(asDouble(want[at])) +
                        2 * subnormalRoundingOf<T>() + 1e-12 * magnitude)
            << typeName<T>() << " (" << outer << ", " << n << ", " << inner << ") at " << at;
      }
    }
}

TEST(RoutingCudaKernels, CumsumAndOneHot) {
  DSC_REQUIRE_GPU();
  checkCumsum<float>(16, 4, 1);
  checkCumsum<float>(3, 1000, 1);
  checkCumsum<float>(3, 77, 300);
  checkCumsum<BFloat16>(5, 333, 1);
  checkCumsum<int64_t>(7, 100, 3);
  checkCumsum<int64_t>(7, 100, 1);
  std::vector<int64_t> idx = {0, 3, -1, 4, 2, 7};
  std::vector<float> want(24);
  cpu::oneHot(cpu::Queue{}, idx.data(), want.data(), 6, 4);
  DeviceBuffer<int64_t> dIdx(idx);
  DeviceBuffer<float> dout(24, 9.0f);
  gpu::oneHot(nullptr, dIdx.get(), dout.get(), 6, 4);
  EXPECT_EQ(dout.host(), want);
}

} // namespace
