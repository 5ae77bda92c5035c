//===- MoeCudaTest.cu - CUDA routing kernels against the CPU's ------------===//
//
// Both targets round every product and sum in the same order, so the CUDA
// results must be the CPU's bit for bit: slots and counts (with and
// without priority, many tiles, many ties), dispatched, combined and dotted
// rows (aligned and unaligned rows, with and without weights). Bad experts
// and slots are recorded in the index-fault record.
//
//===----------------------------------------------------------------------===//

#include "dsc/kernels/Moe.h"
#include "dsc/kernels/cuda/Moe.cuh"

#include "KernelCudaTestSupport.h"
#include "MoeTestSupport.h"

using namespace dsc::kernels::test;
namespace cpu = dsc::kernels::cpu;
namespace gpu = dsc::kernels::cuda;

namespace {

std::string describe(const MoeShape &s) {
  return std::to_string(s.tokens) + "x" + std::to_string(s.choices) + " width " +
         std::to_string(s.width) + " over " + std::to_string(s.experts) + "x" +
         std::to_string(s.capacity);
}

void checkSlots(const MoeShape &shape, bool withPriority, unsigned seed) {
  auto experts = randomExperts(shape, seed);
  std::vector<float> priority;
  if (withPriority)
    priority = randomPriorities(shape.routeCount(), seed + 1);
  std::vector<int64_t> slots(shape.routeCount()), counts(shape.experts);
  cpu::moeSlots(cpu::Queue{}, experts.data(), withPriority ? priority.data() : nullptr,
                slots.data(), counts.data(), shape);
  DeviceBuffer<int64_t> dExperts(experts), dSlots(slots.size(), 99), dCounts(counts.size(), 99);
  DeviceBuffer<float> dPriority(withPriority ? priority : std::vector<float>(1));
  DeviceFault fault;
  gpu::moeSlots(nullptr, dExperts.get(), withPriority ? dPriority.get() : nullptr, dSlots.get(),
                dCounts.get(), shape, fault.ptr);
  EXPECT_NO_THROW(raiseIndexFault(fault.ptr));
  EXPECT_EQ(dSlots.host(), slots) << describe(shape) << " priority " << withPriority;
  EXPECT_EQ(dCounts.host(), counts) << describe(shape) << " priority " << withPriority;
}

TEST(MoeCudaKernels, SlotsAreTheCpuSlots) {
  DSC_REQUIRE_GPU();
  const MoeShape shapes[] = {{1, 1, 1, 1, 1},       {37, 2, 1, 5, 9},
                             {30, 3, 1, 4, 10},     {5000, 2, 1, 8, 1100},
                             {100000, 2, 1, 64, 3000}, {1 << 20, 1, 1, 128, 8192},
                             {4096, 4, 1, 1000, 20}};
  unsigned seed = 1;
  for (const MoeShape &shape : shapes)
    for (bool withPriority : {false, true})
      checkSlots(shape, withPriority, seed += 2);
}

template <typename T> void checkRows(const MoeShape &shape, unsigned seed) {
  auto x = randomTensor<T>(shape.tokens * shape.width, seed);
  auto y = randomTensor<T>(shape.slotCount() * shape.width, seed + 1);
  auto w = randomTensor<T>(shape.routeCount(), seed + 2);
  auto slots = randomSlots(shape, seed + 3);
  DeviceBuffer<T> dX(x), dY(y), dW(w);
  DeviceBuffer<int64_t> dSlots(slots);
  DeviceFault fault;
  for (bool weighted : {false, true}) {
    const T *cw = weighted ? w.data() : nullptr;
    const CudaType<T> *gw = weighted ? dW.get() : nullptr;
    std::vector<T> dispatched(y.size()), combined(x.size());
    cpu::moeDispatch(cpu::Queue{}, x.data(), slots.data(), cw, dispatched.data(), shape);
    cpu::moeCombine(cpu::Queue{}, y.data(), slots.data(), cw, combined.data(), shape);
    DeviceBuffer<T> gDispatched(y.size(), fromDouble<T>(7)), gCombined(x.size(), fromDouble<T>(7));
    gpu::moeDispatch(nullptr, dX.get(), dSlots.get(), gw, gDispatched.get(), shape, fault.ptr);
    gpu::moeCombine(nullptr, dY.get(), dSlots.get(), gw, gCombined.get(), shape, fault.ptr);
    std::string where = typeName<T>() + " " + describe(shape) + " weighted " +
                        std::to_string(weighted);
    EXPECT_TRUE(bitwiseEqual(gDispatched.host(), dispatched)) << "dispatch " << where;
    EXPECT_TRUE(bitwiseEqual(gCombined.host(), combined)) << "combine " << where;
  }
  std::vector<T> dots(shape.routeCount());
  cpu::moeRouteDot(cpu::Queue{}, x.data(), y.data(), slots.data(), dots.data(), shape);
  DeviceBuffer<T> gDots(dots.size(), fromDouble<T>(7));
  gpu::moeRouteDot(nullptr, dX.get(), dY.get(), dSlots.get(), gDots.get(), shape, fault.ptr);
  EXPECT_TRUE(bitwiseEqual(gDots.host(), dots)) << "route dot " << typeName<T>() << " "
                                                << describe(shape);
  EXPECT_NO_THROW(raiseIndexFault(fault.ptr));
}

template <typename T> void checkAllRows() {
  const MoeShape shapes[] = {{37, 2, 13, 5, 9},       // unaligned rows
                             {64, 2, 64, 4, 20},      // drops
                             {25, 3, 24, 6, 30},      // empty slots
                             {2048, 2, 768, 16, 160}, // GPT-2 width
                             {512, 1, 1000, 8, 80}};
  unsigned seed = 100;
  for (const MoeShape &shape : shapes)
    checkRows<T>(shape, seed += 4);
}

TEST(MoeCudaKernels, RowsFloat) { DSC_REQUIRE_GPU(); checkAllRows<float>(); }
TEST(MoeCudaKernels, RowsBFloat16) { DSC_REQUIRE_GPU(); checkAllRows<BFloat16>(); }
TEST(MoeCudaKernels, RowsHalf) { DSC_REQUIRE_GPU(); checkAllRows<Half>(); }

TEST(MoeCudaKernels, BadIndicesAreRecorded) {
  DSC_REQUIRE_GPU();
  MoeShape shape{3, 1, 2, 2, 2};
  DeviceBuffer<int64_t> experts(std::vector<int64_t>{0, 5, 1}), slots(3), counts(2);
  DeviceFault fault;
  gpu::moeSlots(nullptr, experts.get(), nullptr, slots.get(), counts.get(), shape, fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.moe_slots: index 5 is outside [0, 2)");
  EXPECT_EQ(slots.host(), (std::vector<int64_t>{0, -1, 2}));
  EXPECT_EQ(counts.host(), (std::vector<int64_t>{1, 1}));
  DeviceBuffer<int64_t> bad(std::vector<int64_t>{0, 9, 3});
  DeviceBuffer<float> x(6, 1.0f), e(8), y(6), g(3);
  const float *none = nullptr;
  gpu::moeDispatch(nullptr, x.get(), bad.get(), none, e.get(), shape, fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.moe_dispatch: index 9 is outside [0, 4)");
  gpu::moeCombine(nullptr, e.get(), bad.get(), none, y.get(), shape, fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.moe_combine: index 9 is outside [0, 4)");
  gpu::moeRouteDot(nullptr, x.get(), e.get(), bad.get(), g.get(), shape, fault.ptr);
  EXPECT_EQ(outOfRange([&] { raiseIndexFault(fault.ptr); }),
            "dsc.moe_route_dot: index 9 is outside [0, 4)");
}

} // namespace
