//===- EmbeddingCudaTest.cu - CUDA embedding kernels against the CPU's ----===//
//
// The forward copies, so it is exact. The backward sums each id's rows in
// position order in double on both targets: within one rounding of T each
// way of the CPU's (the same order, so equal in practice), and bitwise the
// same from run to run.

#include "dsc/kernels/Embedding.h"
#include "dsc/kernels/cuda/Embedding.cuh"

#include "KernelCudaTestSupport.h"

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

template <typename T> void check(int64_t count, int64_t rows, int64_t dim) {
  auto table = randomTensor<T>(rows * dim, 1);
  auto dy = randomTensor<T>(count * dim, 2);
  auto ids = randomIndices(count, rows, 3);
  std::vector<T> out(count * dim), dtable(rows * dim);
  cpu::embeddingForward(cpu::Queue{}, table.data(), ids.data(), out.data(), count, rows, dim);
  cpu::embeddingBackward(cpu::Queue{}, dy.data(), ids.data(), dtable.data(), count, rows, dim);
  DeviceBuffer<T> dTable(table), dDy(dy), dOut(out.size()), dGrad(dtable.size(), T(7)),
      again(dtable.size());
  DeviceBuffer<int64_t> dIds(ids);
  DeviceFault fault;
  gpu::embeddingForward(nullptr, dTable.get(), dIds.get(), dOut.get(), count, rows, dim,
                        fault.ptr);
  gpu::embeddingBackward(nullptr, dDy.get(), dIds.get(), dGrad.get(), count, rows, dim,
                         fault.ptr);
  gpu::embeddingBackward(nullptr, dDy.get(), dIds.get(), again.get(), count, rows, dim,
                         fault.ptr);
  EXPECT_NO_THROW(raiseIndexFault(fault.ptr));
  std::string where = typeName<T>() + " " + std::to_string(count) + " ids, " +
                      std::to_string(rows) + "x" + std::to_string(dim);
  EXPECT_TRUE(bitwiseEqual(dOut.host(), out)) << where;
  auto grad = dGrad.host();
  EXPECT_TRUE(bitwiseEqual(grad, again.host())) << where << " run to run";
  for (int64_t k = 0; k < rows * dim; ++k)
    ASSERT_NEAR(asDouble(grad[k]), asDouble(dtable[k]),
                2 * roundingOf<T>() * std::abs(asDouble(dtable[k])) + 2 * subnormalRoundingOf<T>())
        << where << " at " << k;
}

template <typename T> void checkAll() {
  check<T>(37, 7, 5);
  check<T>(100, 1000, 13);
  check<T>(1, 3, 1);
  check<T>(512, 50257, 768); // GPT-2's token embedding
  check<T>(4096, 50, 96);    // long runs of one id
}

TEST(EmbeddingCudaKernels, Float) { DSC_REQUIRE_GPU(); checkAll<float>(); }
TEST(EmbeddingCudaKernels, Double) { DSC_REQUIRE_GPU(); checkAll<double>(); }
TEST(EmbeddingCudaKernels, BFloat16) { DSC_REQUIRE_GPU(); checkAll<BFloat16>(); }
TEST(EmbeddingCudaKernels, Half) { DSC_REQUIRE_GPU(); checkAll<Half>(); }

TEST(EmbeddingCudaKernels, BadIdsAreRecorded) {
  DSC_REQUIRE_GPU();
  int64_t rows = 10, dim = 4, count = 3;
  std::vector<int64_t> ids = {1, 10, 2};
  DeviceBuffer<float> table(rows * dim, 1.0f), out(count * dim), grad(rows * dim);
  DeviceBuffer<int64_t> dIds(ids);
  DeviceFault fault;
  gpu::embeddingForward(nullptr, table.get(), dIds.get(), out.get(), count, rows, dim,
                        fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.embedding: index 10 is outside [0, 10)");
  ids[1] = -4;
  DeviceBuffer<int64_t> dIds2(ids);
  gpu::embeddingBackward(nullptr, out.get(), dIds2.get(), grad.get(), count, rows, dim,
                         fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.embedding: index -4 is outside [0, 10)");
  EXPECT_NO_THROW(raiseIndexFault(fault.ptr)); // cleared
}

} // namespace
