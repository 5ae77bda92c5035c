//===- LayoutCudaTest.cu - CUDA slice, concat, broadcast, mask vs the CPU's ===//
//
// The kernels move elements (the mask also writes its fill, rounded alike
// on both targets): the CUDA results are the CPU's bit for bit.

#include "dsc/kernels/Layout.h"
#include "dsc/kernels/cuda/Layout.cuh"

#include "KernelCudaTestSupport.h"

#include <limits>

using namespace dsc::kernels::test;
using dsc::kernels::Dims;
using dsc::kernels::numElements;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

template <typename T> void checkSlice(int64_t outer, int64_t inDim, int64_t inner,
                                      int64_t start, int64_t step, int64_t outDim) {
  auto in = randomTensor<T>(outer * inDim * inner, 3);
  std::vector<T> want(outer * outDim * inner);
  cpu::slice(cpu::Queue{}, in.data(), want.data(), outer, inDim, inner, start, step, outDim);
  DeviceBuffer<T> din(in), dout(want.size());
  gpu::slice(nullptr, din.get(), dout.get(), outer, inDim, inner, start, step, outDim);
  EXPECT_TRUE(bitwiseEqual(dout.host(), want)) << typeName<T>();
}

template <typename T> void checkConcat(int64_t outer, int64_t a, int64_t b, int64_t inner) {
  auto x = randomTensor<T>(outer * a * inner, 1), y = randomTensor<T>(outer * b * inner, 2);
  std::vector<T> want(outer * (a + b) * inner);
  cpu::concatPart(cpu::Queue{}, x.data(), want.data(), outer, a, inner, a + b, 0);
  cpu::concatPart(cpu::Queue{}, y.data(), want.data(), outer, b, inner, a + b, a);
  DeviceBuffer<T> dx(x), dy(y), dout(want.size());
  gpu::concatPart(nullptr, dx.get(), dout.get(), outer, a, inner, a + b, 0);
  gpu::concatPart(nullptr, dy.get(), dout.get(), outer, b, inner, a + b, a);
  EXPECT_TRUE(bitwiseEqual(dout.host(), want)) << typeName<T>();
}

template <typename T> void checkBroadcast(Dims in, Dims out) {
  auto x = randomTensor<T>(numElements(in), 7);
  std::vector<T> want(numElements(out));
  cpu::broadcast(cpu::Queue{}, x.data(), want.data(), in, out);
  DeviceBuffer<T> dx(x), dout(want.size());
  gpu::broadcast(nullptr, dx.get(), dout.get(), in, out);
  EXPECT_TRUE(bitwiseEqual(dout.host(), want)) << typeName<T>();
}

template <typename T> void checkCausalMask(int64_t batch, int64_t rows, int64_t cols,
                                           double fill) {
  auto in = randomTensor<T>(batch * rows * cols, 4);
  std::vector<T> want(in.size());
  cpu::causalMask(cpu::Queue{}, in.data(), want.data(), batch, rows, cols, fill);
  DeviceBuffer<T> din(in), dout(in.size());
  gpu::causalMask(nullptr, din.get(), dout.get(), batch, rows, cols, fill);
  EXPECT_TRUE(bitwiseEqual(dout.host(), want)) << typeName<T>() << " fill " << fill;
}

template <typename T> void checkAll() {
  checkSlice<T>(3, 10, 5, 2, 1, 7);
  checkSlice<T>(64, 96, 33, 5, 2, 40);
  checkConcat<T>(6, 3, 4, 7);
  checkConcat<T>(128, 48, 64, 8);
  checkBroadcast<T>(Dims{2, {5, 1}}, Dims{2, {5, 7}});
  checkBroadcast<T>(Dims{4, {1, 12, 1, 64}}, Dims{4, {8, 12, 64, 64}});
  checkBroadcast<T>(Dims{6, {2, 1, 3, 1, 1, 2}}, Dims{6, {2, 3, 3, 1, 2, 2}});
}

TEST(LayoutCudaKernels, EveryWidth) {
  DSC_REQUIRE_GPU();
  checkAll<float>();
  checkAll<BFloat16>();
  checkAll<double>();
  checkAll<uint8_t>();
}

TEST(LayoutCudaKernels, CausalMaskFloatTypes) {
  DSC_REQUIRE_GPU();
  const double inf = std::numeric_limits<double>::infinity();
  for (double fill : {-inf, -1e4, 0.1}) {
    checkCausalMask<float>(3, 4, 9, fill);
    checkCausalMask<double>(48, 64, 64, fill);
    checkCausalMask<BFloat16>(2, 9, 4, fill);
    checkCausalMask<Half>(2, 7, 7, fill);
  }
}

} // namespace
